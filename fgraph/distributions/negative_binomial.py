"""``NegativeBinomial(total_count, probs=... | logits=...)``: successes before ``total_count`` failures.

``P(X = k) = Gamma(r + k) / (k! Gamma(r)) p^k (1 - p)^r`` with ``r = total_count`` (any
non-negative real) and ``p = probs``, the probability of a success. Sampling is
gamma-Poisson: ``Poisson(Gamma(r, 1) * p / (1 - p))``.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.negative_binomial import NegativeBinomial
    >>> d = NegativeBinomial(3.0, probs=fg.tensor([0.5, 0.25]))
    >>> [round(v, 4) for v in d.mean.tolist()], d.sample((4,), key=jax.random.key(0)).shape
    ([3.0, 1.0], (4, 2))
    >>> [round(v, 4) for v in d.log_prob(fg.tensor([0.0, 1.0])).tolist()]
    [-2.0794, -1.1507]
"""
from __future__ import annotations

from typing import Any, Optional

import fgraph as fg
import fgraph.nn.functional as F
from fgraph.distributions import constraints
from fgraph.distributions.bernoulli import expand_binary_parameter
from fgraph.distributions.distribution import Distribution
from fgraph.distributions._ops_discrete import gamma_poisson_sample
from fgraph.distributions.utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits
from fgraph.tensor import Tensor

__all__ = ["NegativeBinomial"]


class NegativeBinomial(Distribution):
    """The negative binomial distribution on ``{0, 1, ...}``; ``probs`` lies in ``[0, 1)``."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count: Any, probs: Any = None, logits: Any = None,
                 validate_args: Optional[bool] = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("NegativeBinomial: either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.to(self.probs.dtype)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.to(self.logits.dtype)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["NegativeBinomial"] = None) -> "NegativeBinomial":
        new = self._get_checked_instance(NegativeBinomial, _instance)
        batch_shape = tuple(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        expand_binary_parameter(self, new, batch_shape)
        super(NegativeBinomial, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> tuple:
        return tuple(self._param.shape)

    @property
    def mean(self) -> Tensor:
        return self.total_count * fg.exp(self.logits)

    @property
    def mode(self) -> Tensor:
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self) -> Tensor:
        return self.mean / fg.sigmoid(-self.logits)

    def sample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        shape = self._extended_shape(sample_shape)
        odds = fg.exp(self.logits.detach())  # the Gamma's scale: p / (1 - p)
        return gamma_poisson_sample(self.total_count.detach().expand(shape), odds.expand(shape),
                                    key=key, generator=generator)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = self.total_count * F.logsigmoid(-self.logits) + value * F.logsigmoid(self.logits)
        log_normalization = -fg.lgamma(self.total_count + value) + fg.lgamma(1.0 + value) + \
            fg.lgamma(self.total_count)
        # r = 0 and k = 0: the point mass at 0, whose Gamma terms cancel
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0, 0.0)
        return log_unnormalized_prob - log_normalization
