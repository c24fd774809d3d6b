"""``InverseGamma(concentration, rate)``: ``1 / X`` for ``X ~ Gamma(concentration, rate)``.

torch builds it as a ``TransformedDistribution`` of its ``base_dist`` (a :class:`Gamma`) by
``PowerTransform(-1)``; this class computes the same quantities directly (same ``base_dist``,
``log_prob``, ``cdf``, ``rsample``, moments and entropy), without the transform machinery.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.inverse_gamma import InverseGamma
    >>> d = InverseGamma(fg.tensor([3.0]), fg.tensor([2.0]))
    >>> d.rsample((4,), key=jax.random.key(0)).shape, d.mean.tolist(), d.variance.tolist()
    ((4, 1), [1.0], [1.0])
"""
from __future__ import annotations

import math
from typing import Any, Optional

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions.distribution import Distribution
from fgraph.distributions.gamma import Gamma
from fgraph.tensor import Tensor

__all__ = ["InverseGamma"]


class InverseGamma(Distribution):
    """The inverse gamma distribution with shape ``concentration`` and ``rate`` (its scale)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration: Any, rate: Any, validate_args: Optional[bool] = None) -> None:
        self.base_dist = Gamma(concentration, rate, validate_args=validate_args)
        super().__init__(self.base_dist.batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["InverseGamma"] = None) -> "InverseGamma":
        return self._expand_params(InverseGamma, batch_shape, _instance, ("base_dist",))

    @property
    def concentration(self) -> Tensor:
        return self.base_dist.concentration

    @property
    def rate(self) -> Tensor:
        return self.base_dist.rate

    @property
    def mean(self) -> Tensor:
        """``rate / (concentration - 1)``; ``inf`` where ``concentration <= 1``."""
        result = self.rate / (self.concentration - 1)
        return fg.where(self.concentration > 1, result, fg.full_like(result, math.inf))

    @property
    def mode(self) -> Tensor:
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> Tensor:
        """``inf`` where ``concentration <= 2``."""
        result = self.rate.square() / ((self.concentration - 1).square() * (self.concentration - 2))
        return fg.where(self.concentration > 2, result, fg.full_like(result, math.inf))

    def rsample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        return self.base_dist.rsample(sample_shape, key=key, generator=generator).reciprocal()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        x = value.reciprocal()
        log_abs_det_jacobian = (value / x).abs().log()  # of y = x ** -1, at x
        return self.base_dist.log_prob(x) - log_abs_det_jacobian

    def cdf(self, value: Tensor) -> Tensor:
        """``1 - GammaCDF(1 / value)`` (a decreasing transform)."""
        if self._validate_args:
            self._validate_sample(value)
        return 1 - self.base_dist.cdf(value.reciprocal())

    def entropy(self) -> Tensor:
        return (self.concentration + self.rate.log() + self.concentration.lgamma()
                - (1 + self.concentration) * self.concentration.digamma())
