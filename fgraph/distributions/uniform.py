"""``Uniform(low, high)``: the uniform distribution on the half-open interval ``[low, high)``.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.uniform import Uniform
    >>> d = Uniform(fg.tensor([0.0, 1.0]), 3.0)
    >>> d.rsample((4,), key=jax.random.key(0)).shape
    (4, 2)
    >>> [round(v, 4) for v in d.log_prob(fg.tensor([1.0, 2.0])).tolist()]
    [-1.0986, -0.6931]
    >>> d.cdf(fg.tensor([1.5, 2.0])).tolist()
    [0.5, 0.5]
"""
from __future__ import annotations

import math
from typing import Any, Optional

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions.distribution import Distribution
from fgraph.distributions.utils import broadcast_all
from fgraph.tensor import Tensor

__all__ = ["Uniform"]


class Uniform(Distribution):
    """Uniform on ``[low, high)``; reparameterised as ``low + u * (high - low)``."""

    has_rsample = True

    def __init__(self, low: Any, high: Any, validate_args: Optional[bool] = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.shape, validate_args=validate_args)

    @property
    def arg_constraints(self) -> dict:
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    def expand(self, batch_shape: Any, _instance: Optional["Uniform"] = None) -> "Uniform":
        return self._expand_params(Uniform, batch_shape, _instance, ("low", "high"))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.interval(self.low, self.high)

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        return math.nan * self.high

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low).square() / 12

    def rsample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = fg.rand(shape, dtype=self.low.dtype, key=key, generator=generator)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        inside = ((self.low <= value) & (self.high > value)).to(self.low.dtype)
        return fg.log(inside) - fg.log(self.high - self.low)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value: Tensor) -> Tensor:
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        return fg.log(self.high - self.low)
