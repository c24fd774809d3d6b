"""``Laplace(loc, scale)``: the double exponential, density ``exp(-|x - loc| / scale) / (2 scale)``.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.laplace import Laplace
    >>> d = Laplace(fg.tensor([0.0, 1.0]), 2.0)
    >>> d.rsample((3,), key=jax.random.key(0)).shape
    (3, 2)
    >>> [round(v, 4) for v in d.log_prob(fg.tensor([0.0, 0.0])).tolist()]
    [-1.3863, -1.8863]
"""
from __future__ import annotations

from typing import Any, Optional

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions.distribution import Distribution
from fgraph.distributions.utils import broadcast_all
from fgraph.tensor import Tensor

__all__ = ["Laplace"]


class Laplace(Distribution):
    """The Laplace distribution; reparameterised by its inverse CDF of a uniform draw."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: Optional[bool] = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["Laplace"] = None) -> "Laplace":
        return self._expand_params(Laplace, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale.square()

    @property
    def stddev(self) -> Tensor:
        return 2 ** 0.5 * self.scale

    def rsample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = float(fg.finfo(self.loc.dtype).eps)
        # u uniform on (eps - 1, 1): |u| < 1, so log1p(-|u|) is finite
        u = (fg.rand(shape, dtype=self.loc.dtype, key=key, generator=generator) * 2 - 1).clamp(min=eps - 1)
        return self.loc - self.scale * u.sign() * fg.log1p(-u.abs())

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -fg.log(2 * self.scale) - (value - self.loc).abs() / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        return 0.5 - 0.5 * diff.sign() * fg.expm1(-diff.abs() / self.scale)

    def icdf(self, value: Tensor) -> Tensor:
        term = value - 0.5
        return self.loc - self.scale * term.sign() * fg.log1p(-2 * term.abs())

    def entropy(self) -> Tensor:
        return 1 + fg.log(2 * self.scale)
