"""``LogNormal(loc, scale)``: ``exp(X)`` for ``X ~ Normal(loc, scale)``.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.log_normal import LogNormal
    >>> d = LogNormal(fg.tensor([0.0, 1.0]), 0.5)
    >>> d.rsample((3,), key=jax.random.key(0)).shape
    (3, 2)
    >>> [round(v, 4) for v in d.mean.tolist()]
    [1.1331, 3.0802]
"""
from __future__ import annotations

from typing import Any, Optional

from fgraph.distributions import constraints
from fgraph.distributions.normal import Normal
from fgraph.distributions.transformed_distribution import TransformedDistribution
from fgraph.distributions.transforms import ExpTransform
from fgraph.tensor import Tensor

__all__ = ["LogNormal"]


class LogNormal(TransformedDistribution):
    """``TransformedDistribution(Normal(loc, scale), ExpTransform())`` with closed-form moments."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: Optional[bool] = None) -> None:
        base_dist = Normal(loc, scale, validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["LogNormal"] = None) -> "LogNormal":
        new = self._get_checked_instance(LogNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self) -> Tensor:
        return self.base_dist.loc

    @property
    def scale(self) -> Tensor:
        return self.base_dist.scale

    @property
    def mean(self) -> Tensor:
        return (self.loc + self.scale.square() / 2).exp()

    @property
    def mode(self) -> Tensor:
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self) -> Tensor:
        scale_sq = self.scale.square()
        return scale_sq.expm1() * (2 * self.loc + scale_sq).exp()

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() + self.loc
