"""``Pareto(scale, alpha)``: ``scale * exp(E)`` for ``E ~ Exponential(alpha)``; support ``[scale, inf)``.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.pareto import Pareto
    >>> d = Pareto(fg.tensor([1.0, 2.0]), 3.0)
    >>> d.rsample((3,), key=jax.random.key(0)).shape
    (3, 2)
    >>> d.mean.tolist()
    [1.5, 3.0]
"""
from __future__ import annotations

from typing import Any, Optional

from fgraph.distributions import constraints
from fgraph.distributions.exponential import Exponential
from fgraph.distributions.transformed_distribution import TransformedDistribution
from fgraph.distributions.transforms import AffineTransform, ExpTransform
from fgraph.distributions.utils import broadcast_all
from fgraph.tensor import Tensor

__all__ = ["Pareto"]


class Pareto(TransformedDistribution):
    """The Pareto (type I) distribution with minimum ``scale`` and tail index ``alpha``."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale: Any, alpha: Any, validate_args: Optional[bool] = None) -> None:
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base_dist = Exponential(self.alpha, validate_args=validate_args)
        transforms = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["Pareto"] = None) -> "Pareto":
        new = self._get_checked_instance(Pareto, _instance)
        new.scale = self.scale.expand(tuple(batch_shape))
        new.alpha = self.alpha.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self) -> Tensor:
        a = self.alpha.clamp(min=1)  # infinite for alpha <= 1
        return a * self.scale / (a - 1)

    @property
    def mode(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        a = self.alpha.clamp(min=2)  # infinite for alpha <= 2
        return self.scale.square() * a / ((a - 1).square() * (a - 2))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.greater_than_eq(self.scale)

    def entropy(self) -> Tensor:
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())
