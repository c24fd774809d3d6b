"""``Geometric(probs=... | logits=...)``: the number of failures before the first success.

``P(X = k) = (1 - p)^k p`` for ``k = 0, 1, ...`` (torch's convention: the first trial
may already succeed, so the support starts at 0).

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.geometric import Geometric
    >>> d = Geometric(probs=fg.tensor([0.5, 0.25]))
    >>> d.mean.tolist(), d.sample((4,), key=jax.random.key(0)).shape
    ([1.0, 3.0], (4, 2))
    >>> [round(v, 4) for v in d.log_prob(fg.tensor([0.0, 2.0])).tolist()]
    [-0.6931, -1.9617]
"""
from __future__ import annotations

from typing import Any, Optional

import fgraph as fg
import fgraph.nn.functional as F
from fgraph.distributions import constraints
from fgraph.distributions.bernoulli import binary_parameter
from fgraph.distributions.distribution import Distribution, _format, all_true
from fgraph.distributions.utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits, uniform_open
from fgraph.tensor import Tensor

__all__ = ["Geometric"]


class Geometric(Distribution):
    """The geometric distribution on ``{0, 1, 2, ...}`` with success probability ``probs`` in ``(0, 1]``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: Optional[bool] = None) -> None:
        param = binary_parameter(self, probs, logits)
        super().__init__(param.shape, validate_args=validate_args)
        if self._validate_args and probs is not None and all_true(self.probs > 0) is False:
            raise ValueError(f"Expected parameter probs ({type(self.probs).__name__} of shape "
                             f"{tuple(self.probs.shape)}) of distribution {self!r} to be positive but found invalid "
                             f"values:\n{_format(self.probs)}")

    def expand(self, batch_shape: Any, _instance: Optional["Geometric"] = None) -> "Geometric":
        new = self._get_checked_instance(Geometric, _instance)
        batch_shape = tuple(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
        super(Geometric, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return fg.zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        shape = self._extended_shape(sample_shape)
        probs = self.probs.detach()
        u = uniform_open(shape, probs.dtype, key, generator)
        # inversion: the number of failures is floor(log U / log(1 - p))
        return (u.log() / (-probs).log1p()).floor()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # p = 1 and k = 0: the 0 * log(0) term is 0, not NaN
        probs = fg.where((probs == 1) & (value == 0), fg.zeros_like(probs), probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs
