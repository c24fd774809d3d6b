"""``Gumbel(loc, scale)``: the type-I extreme value distribution, ``loc - scale * log(-log U)``.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.gumbel import Gumbel
    >>> d = Gumbel(fg.tensor([0.0, 1.0]), 2.0)
    >>> d.rsample((3,), key=jax.random.key(0)).shape
    (3, 2)
    >>> [round(v, 4) for v in d.log_prob(fg.tensor([0.0, 0.0])).tolist()]
    [-1.6931, -1.8419]
"""
from __future__ import annotations

import math
from typing import Any, Optional

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions.transformed_distribution import TransformedDistribution
from fgraph.distributions.transforms import AffineTransform, ExpTransform
from fgraph.distributions.uniform import Uniform
from fgraph.distributions.utils import broadcast_all, euler_constant
from fgraph.tensor import Tensor

__all__ = ["Gumbel"]


class Gumbel(TransformedDistribution):
    """Uniform noise on ``[tiny, 1 - eps)`` pushed through ``x -> loc - scale * log(-log x)``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc: Any, scale: Any, validate_args: Optional[bool] = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        finfo = fg.finfo(self.loc.dtype)
        low, high = float(finfo.tiny), 1 - float(finfo.eps)
        base_dist = Uniform(fg.full_like(self.loc, low), fg.full_like(self.loc, high), validate_args=validate_args)
        transforms = [ExpTransform().inv, AffineTransform(loc=0, scale=-fg.ones_like(self.scale)),
                      ExpTransform().inv, AffineTransform(loc=loc, scale=-self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["Gumbel"] = None) -> "Gumbel":
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc = self.loc.expand(tuple(batch_shape))
        new.scale = self.scale.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    @property
    def mean(self) -> Tensor:
        return self.loc + self.scale * euler_constant

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.square()

    def entropy(self) -> Tensor:
        return self.scale.log() + (1 + euler_constant)
