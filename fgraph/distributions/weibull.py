"""``Weibull(scale, concentration)``: ``scale * E ** (1 / concentration)`` for ``E ~ Exponential(1)``.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.weibull import Weibull
    >>> d = Weibull(fg.tensor([1.0, 2.0]), 1.5)
    >>> d.rsample((3,), key=jax.random.key(0)).shape
    (3, 2)
    >>> [round(v, 4) for v in d.mean.tolist()]
    [0.9027, 1.8055]
"""
from __future__ import annotations

from typing import Any, Optional

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions.exponential import Exponential
from fgraph.distributions.transformed_distribution import TransformedDistribution
from fgraph.distributions.transforms import AffineTransform, PowerTransform
from fgraph.distributions.utils import broadcast_all, euler_constant
from fgraph.tensor import Tensor

__all__ = ["Weibull"]


class Weibull(TransformedDistribution):
    """The two-parameter Weibull distribution."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale: Any, concentration: Any, validate_args: Optional[bool] = None) -> None:
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base_dist = Exponential(fg.ones_like(self.scale), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration_reciprocal), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["Weibull"] = None) -> "Weibull":
        new = self._get_checked_instance(Weibull, _instance)
        batch_shape = tuple(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        base_dist = self.base_dist.expand(batch_shape)
        transforms = [PowerTransform(exponent=new.concentration_reciprocal), AffineTransform(loc=0, scale=new.scale)]
        super(Weibull, new).__init__(base_dist, transforms, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.scale * fg.exp(fg.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self) -> Tensor:
        return self.scale * ((self.concentration - 1) / self.concentration) ** self.concentration.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.scale.square() * (fg.exp(fg.lgamma(1 + 2 * self.concentration_reciprocal))
                                      - fg.exp(2 * fg.lgamma(1 + self.concentration_reciprocal)))

    def entropy(self) -> Tensor:
        return (euler_constant * (1 - self.concentration_reciprocal)
                + fg.log(self.scale * self.concentration_reciprocal) + 1)
