"""``Beta(concentration1, concentration0)``: the beta distribution, as a two-category :class:`Dirichlet`.

``rsample`` is the first coordinate of a Dirichlet draw: reparameterised through two gamma draws,
differentiable (once) in both concentrations by the implicit gradient.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.beta import Beta
    >>> d = Beta(fg.tensor([2.0, 0.5]), fg.tensor([3.0, 0.5]))
    >>> d.rsample((5,), key=jax.random.key(0)).shape
    (5, 2)
    >>> [round(v, 4) for v in d.mean.tolist()], [round(v, 4) for v in d.log_prob(fg.tensor([0.5, 0.5])).tolist()]
    ([0.4, 0.5], [0.4055, -0.4516])
"""
from __future__ import annotations

from numbers import Number
from typing import Any, Optional

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions.dirichlet import Dirichlet
from fgraph.distributions.exp_family import ExponentialFamily
from fgraph.distributions.utils import broadcast_all
from fgraph.tensor import Tensor

__all__ = ["Beta"]


class Beta(ExponentialFamily):
    """The beta distribution on ``[0, 1]`` with ``concentration1`` (alpha) and ``concentration0`` (beta)."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Any, concentration0: Any, validate_args: Optional[bool] = None) -> None:
        if isinstance(concentration1, Number) and isinstance(concentration0, Number):
            both = fg.tensor([float(concentration1), float(concentration0)], dtype=fg.get_default_dtype())
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            both = fg.stack([concentration1, concentration0], -1)
        # validated here rather than by the Dirichlet, so an error names concentration1 / concentration0
        self._dirichlet = Dirichlet(both, validate_args=False)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)
        self._dirichlet._validate_args = self._validate_args

    def expand(self, batch_shape: Any, _instance: Optional["Beta"] = None) -> "Beta":
        return self._expand_params(Beta, batch_shape, _instance, ("_dirichlet",))

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self) -> Tensor:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        return self._dirichlet.rsample(sample_shape, key=key, generator=generator).select(-1, 0)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        heads_tails = fg.stack([value, 1.0 - value], -1)
        return self._dirichlet.log_prob(heads_tails)

    def entropy(self) -> Tensor:
        return self._dirichlet.entropy()

    @property
    def concentration1(self) -> Tensor:
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self) -> Tensor:
        return self._dirichlet.concentration[..., 1]

    @property
    def _natural_params(self) -> tuple:
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return fg.lgamma(x) + fg.lgamma(y) - fg.lgamma(x + y)
