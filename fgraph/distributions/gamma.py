"""``Gamma(concentration, rate)``: the gamma distribution, reparameterised by implicit differentiation.

``rsample`` draws ``standard_gamma(concentration) / rate``: differentiable in ``rate`` by the
division and (once) in ``concentration`` by the implicit reparameterisation gradient of the
gamma CDF (torch's ``_standard_gamma_grad``; see :mod:`fgraph.distributions._ops_gamma`).

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.gamma import Gamma
    >>> alpha = fg.tensor([1.0, 4.0], requires_grad=True)
    >>> d = Gamma(alpha, 2.0)
    >>> x = d.rsample((3,), key=jax.random.key(0))
    >>> x.shape, [round(v, 4) for v in d.mean.tolist()]
    ((3, 2), [0.5, 2.0])
    >>> [round(v, 4) for v in d.log_prob(fg.tensor([1.0, 1.0])).tolist()]
    [-1.3069, -1.0192]
"""
from __future__ import annotations

from numbers import Number
from typing import Any, Optional

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions._ops_gamma import gammainc, standard_gamma
from fgraph.distributions.exp_family import ExponentialFamily
from fgraph.distributions.utils import broadcast_all
from fgraph.tensor import Tensor

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    """The gamma distribution with shape ``concentration`` (alpha) and ``rate`` (beta = 1 / scale)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration: Any, rate: Any, validate_args: Optional[bool] = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        if isinstance(concentration, Number) and isinstance(rate, Number):
            batch_shape = ()
        else:
            batch_shape = self.concentration.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["Gamma"] = None) -> "Gamma":
        return self._expand_params(Gamma, batch_shape, _instance, ("concentration", "rate"))

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        shape = self._extended_shape(sample_shape)
        x = standard_gamma(self.concentration.expand(shape), key=key, generator=generator)
        value = x / self.rate.expand(shape)
        # torch clamps the quotient's values (not its graph) at the smallest normal number
        tiny = float(fg.finfo(value.dtype).tiny)
        return value + (value.detach().clamp(min=tiny) - value.detach())

    def log_prob(self, value: Tensor) -> Tensor:
        value = value if isinstance(value, Tensor) else fg.tensor(value, dtype=self.rate.dtype)
        if self._validate_args:
            self._validate_sample(value)
        return (fg.xlogy(self.concentration, self.rate) + fg.xlogy(self.concentration - 1, value)
                - self.rate * value - fg.lgamma(self.concentration))

    def entropy(self) -> Tensor:
        return (self.concentration - fg.log(self.rate) + fg.lgamma(self.concentration)
                + (1.0 - self.concentration) * fg.digamma(self.concentration))

    @property
    def _natural_params(self) -> tuple:
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return fg.lgamma(x + 1) + (x + 1) * fg.log(-y.reciprocal())

    def cdf(self, value: Tensor) -> Tensor:
        """``P(concentration, rate * value)``; differentiable in ``rate`` and ``value`` to any order, in
        ``concentration`` once (torch: not at all)."""
        if self._validate_args:
            self._validate_sample(value)
        return gammainc(self.concentration, self.rate * value)
