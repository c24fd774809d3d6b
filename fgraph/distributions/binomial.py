"""``Binomial(total_count, probs=... | logits=...)``: successes in ``total_count`` independent trials.

``total_count`` is an int or a Tensor broadcastable with the probabilities. Given as an
int it stays known on the host, and then :meth:`Binomial.enumerate_support` and
:meth:`Binomial.entropy` (a sum over the support) are traceable too.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.binomial import Binomial
    >>> d = Binomial(4, probs=fg.tensor([0.5, 0.25]))
    >>> d.mean.tolist(), d.sample((3,), key=jax.random.key(0)).shape
    ([2.0, 1.0], (3, 2))
    >>> [round(v, 4) for v in d.log_prob(fg.tensor([2.0, 0.0])).tolist()]
    [-0.9808, -1.1507]
    >>> d.enumerate_support(expand=False).shape
    (5, 1)
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions.bernoulli import expand_binary_parameter
from fgraph.distributions.distribution import Distribution
from fgraph.distributions._ops_discrete import binomial_sample
from fgraph.distributions.utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits
from fgraph.ops._index_checks import is_traced
from fgraph.tensor import Tensor

__all__ = ["Binomial"]


def _clamp_by_zero(x: Tensor) -> Tensor:
    """``max(x, 0)`` with gradient 1/2 at 0 (torch's choice, kept for equal gradients)."""
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(Distribution):
    """The binomial distribution: ``total_count`` trials, each a success with probability ``probs``."""

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count: Any = 1, probs: Any = None, logits: Any = None,
                 validate_args: Optional[bool] = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Binomial: either `probs` or `logits` must be specified, but not both.")
        # an int total_count is kept on the host: the support's size is then static
        self._static_total_count = total_count if isinstance(total_count, (int, np.integer)) and \
            not isinstance(total_count, bool) else None
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.to(self.probs.dtype)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.to(self.logits.dtype)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["Binomial"] = None) -> "Binomial":
        new = self._get_checked_instance(Binomial, _instance)
        batch_shape = tuple(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        new._static_total_count = self._static_total_count
        expand_binary_parameter(self, new, batch_shape)
        super(Binomial, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self.total_count)

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
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        mode = ((self.total_count + 1) * self.probs).floor()
        # min(mode, n) with torch's clamp gradient: to n only where mode > n, never split at a tie
        return fg.where(mode > self.total_count, self.total_count, mode)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return binomial_sample(self.total_count.detach().expand(shape), self.probs.detach().expand(shape),
                               key=key, generator=generator)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        log_factorial_n = fg.lgamma(n + 1)
        log_factorial_k = fg.lgamma(value + 1)
        log_factorial_nmk = fg.lgamma(n - value + 1)
        # n * log(1 + e^logits), written to stay finite for large |logits|
        normalize_term = n * _clamp_by_zero(logits) + n * fg.log1p(fg.exp(-logits.abs())) - log_factorial_n
        return value * logits - log_factorial_k - log_factorial_nmk - normalize_term

    def entropy(self) -> Tensor:
        """``-sum_k p(k) log p(k)`` over the support: needs one ``total_count`` for the whole batch."""
        log_prob = self.log_prob(self._support_values("entropy"))
        return -(fg.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """``0, ..., total_count`` along a new leading dim; needs one ``total_count`` for the whole batch.

        With ``total_count`` given as a Tensor this reads it on the host (as torch does),
        so it cannot run while traced (``fg.compile``, ``jax.jit``, ``vmap``); construct the
        distribution with an int ``total_count`` there.
        """
        values = self._support_values("enumerate_support")
        if expand:
            values = values.expand((-1,) + self._batch_shape)
        return values

    def _support_values(self, method: str) -> Tensor:
        total = self._static_total_count
        if total is None:
            if is_traced(self.total_count):
                raise NotImplementedError(f"Binomial.{method}: total_count is a traced Tensor, so the size of the "
                                          "support is unknown; pass total_count as a Python int.")
            total = int(self.total_count.max())  # the one host read: the support's size
            if int(self.total_count.min()) != total:
                raise NotImplementedError(f"Inhomogeneous total count not supported by `{method}`.")
        values = fg.arange(1 + int(total), dtype=self._param.dtype)
        return values.reshape((-1,) + (1,) * len(self._batch_shape))
