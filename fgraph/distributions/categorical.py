"""``Categorical(probs=... | logits=...)``: one of ``K`` classes, given by the last dim of its parameter.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions import Categorical
    >>> logits = fg.zeros(2, 3, requires_grad=True)
    >>> d = Categorical(logits=logits)
    >>> d.batch_shape, d.sample((4,), key=jax.random.key(0)).shape
    ((2,), (4, 2))
    >>> [round(v, 4) for v in d.log_prob(fg.tensor([0, 2])).tolist()]
    [-1.0986, -1.0986]
"""
from __future__ import annotations

from typing import Any, Optional

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions.distribution import Distribution
from fgraph.distributions.utils import lazy_property, logits_to_probs, long_dtype, probs_to_logits
from fgraph.tensor import Tensor

__all__ = ["Categorical"]


def one_parameter(probs: Any, logits: Any, name: str) -> None:
    if (probs is None) == (logits is None):
        raise ValueError(f"{name}: either `probs` or `logits` must be specified, but not both.")


class Categorical(Distribution):
    """A categorical distribution over ``{0, ..., K - 1}``; ``probs`` are normalised over the last dim."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs: Optional[Tensor] = None, logits: Optional[Tensor] = None,
                 validate_args: Optional[bool] = None) -> None:
        one_parameter(probs, logits, "Categorical")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        batch_shape = self._param.shape[:-1] if self._param.dim() > 1 else ()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["Categorical"] = None) -> "Categorical":
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = tuple(batch_shape)
        param_shape = batch_shape + (self._num_events,)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(param_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(param_shape)
            new._param = new.logits
        new._num_events = self._num_events
        super(Categorical, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> tuple:
        return tuple(self._param.shape)

    @property
    def mean(self) -> Tensor:
        return fg.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(dim=-1)

    @property
    def variance(self) -> Tensor:
        return fg.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    def sample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        sample_shape = tuple(sample_shape) if not isinstance(sample_shape, int) else (sample_shape,)
        n = 1
        for s in sample_shape:
            n *= s
        probs_2d = self.probs.detach().reshape(-1, self._num_events)
        draws = fg.multinomial(probs_2d, n, True, key=key, generator=generator).T  # (n, batch)
        return draws.reshape(self._extended_shape(sample_shape)).to(long_dtype())

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = value.to(long_dtype()).unsqueeze(-1)
        value, log_pmf = fg.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self) -> Tensor:
        min_real = float(fg.finfo(self.logits.dtype).min)
        logits = self.logits.clamp(min=min_real)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = fg.arange(self._num_events, dtype=long_dtype())
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + self._batch_shape)
        return values
