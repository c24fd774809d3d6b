"""``Bernoulli(probs=... | logits=...)``: 1 with probability ``probs``, else 0.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.bernoulli import Bernoulli
    >>> d = Bernoulli(logits=fg.tensor([0.0, 2.0]))
    >>> d.batch_shape, d.sample((3,), key=jax.random.key(0)).shape
    ((2,), (3, 2))
    >>> [round(v, 4) for v in d.log_prob(fg.tensor([1.0, 0.0])).tolist()]
    [-0.6931, -2.1269]
    >>> d.enumerate_support().tolist()
    [[0.0, 0.0], [1.0, 1.0]]
"""
from __future__ import annotations

from typing import Any, Optional

import fgraph as fg
import fgraph.nn.functional as F
from fgraph.distributions import constraints
from fgraph.distributions.exp_family import ExponentialFamily
from fgraph.distributions.utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits
from fgraph.tensor import Tensor

__all__ = ["Bernoulli"]


def binary_parameter(dist: Any, probs: Any, logits: Any) -> Tensor:
    """Store exactly one of ``probs``/``logits`` on ``dist`` (as a Tensor) and return it.

    The shared constructor step of the distributions parameterised by a success
    probability or its log-odds (Bernoulli, Geometric, ContinuousBernoulli, ...).
    """
    if (probs is None) == (logits is None):
        raise ValueError(f"{type(dist).__name__}: either `probs` or `logits` must be specified, but not both.")
    if probs is not None:
        (dist.probs,) = broadcast_all(probs)
        return dist.probs
    (dist.logits,) = broadcast_all(logits)
    return dist.logits


def expand_binary_parameter(source: Any, new: Any, batch_shape: tuple) -> None:
    """Copy whichever of ``probs``/``logits`` ``source`` holds onto ``new``, expanded to ``batch_shape``."""
    if "probs" in source.__dict__:
        new.probs = source.probs.expand(batch_shape)
        new._param = new.probs
    if "logits" in source.__dict__:
        new.logits = source.logits.expand(batch_shape)
        new._param = new.logits


class Bernoulli(ExponentialFamily):
    """The Bernoulli distribution on ``{0, 1}`` (samples are floating, like ``probs``)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: Optional[bool] = None) -> None:
        self._param = binary_parameter(self, probs, logits)
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["Bernoulli"] = None) -> "Bernoulli":
        new = self._get_checked_instance(Bernoulli, _instance)
        batch_shape = tuple(batch_shape)
        expand_binary_parameter(self, new, batch_shape)
        super(Bernoulli, new).__init__(batch_shape, validate_args=False)
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
        return self.probs

    @property
    def mode(self) -> Tensor:
        """1 where ``probs > 1/2``, 0 where below, NaN at exactly 1/2 (no unique mode)."""
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return fg.where(self.probs == 0.5, fg.full_like(mode, float("nan")), mode)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return fg.bernoulli(self.probs.detach().expand(shape), key=key, generator=generator)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value.to(logits.dtype), reduction="none")

    def entropy(self) -> Tensor:
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = fg.arange(2, dtype=self._param.dtype)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + self._batch_shape)
        return values

    @property
    def _natural_params(self) -> tuple:
        return (fg.logit(self.probs),)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return fg.log1p(fg.exp(x))
