"""``LogisticNormal(loc, scale)``: a point of the simplex, the stick-breaking image of a normal vector.

``loc``/``scale`` have ``K - 1`` entries in their last dim for a ``K``-simplex.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.logistic_normal import LogisticNormal
    >>> d = LogisticNormal(fg.zeros(3), 1.0)
    >>> d.batch_shape, d.event_shape
    ((), (4,))
    >>> round(d.sample(key=jax.random.key(0)).sum().item(), 5)
    1.0
"""
from __future__ import annotations

from typing import Any, Optional

from fgraph.distributions import constraints
from fgraph.distributions.normal import Normal
from fgraph.distributions.transformed_distribution import TransformedDistribution
from fgraph.distributions.transforms import StickBreakingTransform
from fgraph.tensor import Tensor

__all__ = ["LogisticNormal"]


class LogisticNormal(TransformedDistribution):
    """``TransformedDistribution(Normal(loc, scale) over the last dim, StickBreakingTransform())``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: Optional[bool] = None) -> None:
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:
            base_dist = base_dist.expand([1])
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["LogisticNormal"] = None) -> "LogisticNormal":
        new = self._get_checked_instance(LogisticNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self) -> Tensor:
        return self.base_dist.base_dist.loc

    @property
    def scale(self) -> Tensor:
        return self.base_dist.base_dist.scale
