"""``OneHotCategorical`` and ``OneHotCategoricalStraightThrough``: a categorical draw as a one-hot vector.

``OneHotCategoricalStraightThrough.rsample`` is the straight-through estimator
(Bengio et al., 2013): the forward value is the one-hot sample, and the gradient is
that of ``probs`` (``sample + probs - probs.detach()``).

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
    >>> d = OneHotCategorical(probs=fg.tensor([0.0, 1.0, 0.0]))
    >>> d.event_shape, d.sample(key=jax.random.key(0)).tolist()
    ((3,), [0.0, 1.0, 0.0])
    >>> logits = fg.zeros(3, requires_grad=True)
    >>> x = OneHotCategoricalStraightThrough(logits=logits).rsample(key=jax.random.key(0))
    >>> [round(g, 4) for g in fg.grad((x * fg.tensor([1.0, 0.0, 0.0])).sum(), [logits])[0].tolist()]
    [0.2222, -0.1111, -0.1111]
"""
from __future__ import annotations

from typing import Any, Optional

import fgraph as fg
import fgraph.nn.functional as F
from fgraph.distributions import constraints
from fgraph.distributions.categorical import Categorical
from fgraph.distributions.distribution import Distribution
from fgraph.tensor import Tensor

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]


class OneHotCategorical(Distribution):
    """A categorical distribution whose samples are one-hot vectors over the last dim of ``probs``/``logits``."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs: Optional[Tensor] = None, logits: Optional[Tensor] = None,
                 validate_args: Optional[bool] = None) -> None:
        self._categorical = Categorical(probs, logits)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["OneHotCategorical"] = None) -> "OneHotCategorical":
        new = self._get_checked_instance(OneHotCategorical, _instance)
        batch_shape = tuple(batch_shape)
        new._categorical = self._categorical.expand(batch_shape)
        super(OneHotCategorical, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def _param(self) -> Tensor:
        return self._categorical._param

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def param_shape(self) -> tuple:
        return self._categorical.param_shape

    @property
    def mean(self) -> Tensor:
        return self._categorical.probs

    @property
    def mode(self) -> Tensor:
        probs = self._categorical.probs
        return F.one_hot(probs.argmax(dim=-1), num_classes=probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self) -> Tensor:
        return self._categorical.probs * (1 - self._categorical.probs)

    def sample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        indices = self._categorical.sample(sample_shape, key=key, generator=generator)
        return F.one_hot(indices, self._categorical._num_events).to(self._categorical.probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        indices = value.max(-1)[1]
        return self._categorical.log_prob(indices)

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        n = self.event_shape[0]
        values = fg.eye(n, dtype=self._param.dtype)
        values = values.reshape((n,) + (1,) * len(self.batch_shape) + (n,))
        if expand:
            values = values.expand((n,) + self.batch_shape + (n,))
        return values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """:class:`OneHotCategorical` with a straight-through ``rsample`` (biased, but low-variance, gradients)."""

    has_rsample = True

    def rsample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        samples = self.sample(sample_shape, key=key, generator=generator)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())
