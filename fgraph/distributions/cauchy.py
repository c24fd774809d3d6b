"""``Cauchy(loc, scale)``: the Lorentz distribution (no mean, infinite variance).

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.cauchy import Cauchy
    >>> d = Cauchy(fg.tensor([0.0, 1.0]), 1.0)
    >>> d.rsample((3,), key=jax.random.key(0)).shape
    (3, 2)
    >>> [round(v, 4) for v in d.cdf(fg.tensor([0.0, 2.0])).tolist()]
    [0.5, 0.75]
"""
from __future__ import annotations

import math
from typing import Any, Optional

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions.distribution import Distribution
from fgraph.distributions.utils import broadcast_all
from fgraph.tensor import Tensor

__all__ = ["Cauchy"]


class Cauchy(Distribution):
    """The Cauchy distribution; reparameterised as ``loc + scale * tan(pi (u - 1/2))``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: Optional[bool] = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["Cauchy"] = None) -> "Cauchy":
        return self._expand_params(Cauchy, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self) -> Tensor:
        return fg.full(self._extended_shape(), math.nan, dtype=self.loc.dtype)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return fg.full(self._extended_shape(), math.inf, dtype=self.loc.dtype)

    def rsample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = fg.rand(shape, dtype=self.loc.dtype, key=key, generator=generator)
        return self.loc + fg.tan(math.pi * (u - 0.5)) * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - ((value - self.loc) / self.scale).square().log1p()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return fg.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        return fg.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + self.scale.log()
