"""``Normal(loc, scale)``: the Gaussian, reparameterised as ``loc + scale * eps``.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions import Normal
    >>> loc = fg.tensor([0.0, 1.0], requires_grad=True)
    >>> d = Normal(loc, 2.0)
    >>> x = d.rsample((5,), key=jax.random.key(0))           # differentiable in loc and scale
    >>> x.shape, d.log_prob(x).shape
    ((5, 2), (5, 2))
    >>> [round(v, 4) for v in d.entropy().tolist()]
    [2.1121, 2.1121]
"""
from __future__ import annotations

import math
from numbers import Real
from typing import Any, Optional

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions.exp_family import ExponentialFamily
from fgraph.distributions.utils import broadcast_all, standard_normal
from fgraph.tensor import Tensor

__all__ = ["Normal"]

_HALF_LOG_TWO_PI = 0.5 * math.log(2 * math.pi)


class Normal(ExponentialFamily):
    """The normal distribution with mean ``loc`` and standard deviation ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, loc: Any, scale: Any, validate_args: Optional[bool] = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["Normal"] = None) -> "Normal":
        return self._expand_params(Normal, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.scale.square()

    def rsample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = standard_normal(shape, self.loc.dtype, key, generator)
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_scale = math.log(self.scale) if isinstance(self.scale, Real) else self.scale.log()
        return -((value - self.loc) ** 2) / (2 * self.variance) - log_scale - _HALF_LOG_TWO_PI

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + fg.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc + self.scale * fg.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> Tensor:
        return 0.5 + _HALF_LOG_TWO_PI + fg.log(self.scale)

    @property
    def _natural_params(self) -> tuple:
        return (self.loc / self.scale.square(), -0.5 * self.scale.square().reciprocal())

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return -0.25 * x.square() / y + 0.5 * fg.log(-math.pi / y)
