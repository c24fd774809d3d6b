"""``Independent(base_distribution, reinterpreted_batch_ndims)``: batch dims read as event dims.

The rightmost ``reinterpreted_batch_ndims`` batch dims of the base distribution become
event dims: ``log_prob`` and ``entropy`` sum over them, while samples are the base's
unchanged. A diagonal Gaussian then has the shapes of a ``MultivariateNormal``.

Example:
    >>> import fgraph as fg
    >>> from fgraph.distributions import Normal
    >>> from fgraph.distributions.independent import Independent
    >>> d = Independent(Normal(fg.zeros(2, 3), 1.0), 1)
    >>> d.batch_shape, d.event_shape, d.log_prob(fg.zeros(2, 3)).shape
    ((2,), (3,), (2,))
    >>> round(d.entropy()[0].item(), 4)
    4.2568
"""
from __future__ import annotations

from typing import Any, Optional

from fgraph.distributions import constraints
from fgraph.distributions.distribution import Distribution
from fgraph.distributions.utils import sum_rightmost
from fgraph.tensor import Tensor

__all__ = ["Independent"]


class Independent(Distribution):
    """Reinterpret the rightmost ``reinterpreted_batch_ndims`` batch dims of ``base_distribution`` as event dims."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution: Distribution, reinterpreted_batch_ndims: int,
                 validate_args: Optional[bool] = None) -> None:
        if not isinstance(base_distribution, Distribution):
            raise TypeError("Independent: base_distribution must be a Distribution, got "
                            f"{type(base_distribution).__name__}.")
        if not isinstance(reinterpreted_batch_ndims, int) or reinterpreted_batch_ndims < 0:
            raise ValueError("Independent: reinterpreted_batch_ndims must be a non-negative int, got "
                             f"{reinterpreted_batch_ndims!r}.")
        if reinterpreted_batch_ndims > len(base_distribution.batch_shape):
            raise ValueError("Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                             f"actual {reinterpreted_batch_ndims} vs {len(base_distribution.batch_shape)}")
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        event_dim = reinterpreted_batch_ndims + len(base_distribution.event_shape)
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__(shape[: len(shape) - event_dim], shape[len(shape) - event_dim:],
                         validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["Independent"] = None) -> "Independent":
        new = self._get_checked_instance(Independent, _instance)
        batch_shape = tuple(batch_shape)
        new.base_dist = self.base_dist.expand(batch_shape + self._event_shape[: self.reinterpreted_batch_ndims])
        new.reinterpreted_batch_ndims = self.reinterpreted_batch_ndims
        super(Independent, new).__init__(batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self) -> bool:  # type: ignore[override]
        if self.reinterpreted_batch_ndims > 0:
            return False
        return self.base_dist.has_enumerate_support

    @constraints.dependent_property
    def support(self) -> constraints.Constraint:
        result = self.base_dist.support
        if self.reinterpreted_batch_ndims:
            result = constraints.independent(result, self.reinterpreted_batch_ndims)
        return result

    @property
    def mean(self) -> Tensor:
        return self.base_dist.mean

    @property
    def mode(self) -> Tensor:
        return self.base_dist.mode

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance

    def sample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        return self.base_dist.sample(sample_shape, key=key, generator=generator)

    def rsample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        return self.base_dist.rsample(sample_shape, key=key, generator=generator)

    def log_prob(self, value: Tensor) -> Tensor:
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> Tensor:
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.base_dist!r}, {self.reinterpreted_batch_ndims})"
