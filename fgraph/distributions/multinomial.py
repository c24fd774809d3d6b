"""``Multinomial(total_count, probs=... | logits=...)``: counts of ``K`` categories over ``total_count`` draws.

``total_count`` is one Python int for the whole batch (as torch's ``sample`` requires);
``log_prob`` takes its ``n`` from each value's sum, so it scores counts of any total.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.multinomial import Multinomial
    >>> d = Multinomial(10, probs=fg.tensor([0.2, 0.3, 0.5]))
    >>> x = d.sample((4,), key=jax.random.key(0))
    >>> x.shape, x.sum(-1).tolist()
    ((4, 3), [10.0, 10.0, 10.0, 10.0])
    >>> round(d.log_prob(fg.tensor([2.0, 3.0, 5.0])).item(), 4)
    -2.4645
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions.binomial import Binomial
from fgraph.distributions.categorical import Categorical
from fgraph.distributions.distribution import Distribution
from fgraph.distributions.utils import broadcast_all
from fgraph.tensor import Tensor

__all__ = ["Multinomial"]


class Multinomial(Distribution):
    """The multinomial distribution: ``total_count`` categorical draws, counted per category (last dim)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count: int = 1, probs: Optional[Tensor] = None, logits: Optional[Tensor] = None,
                 validate_args: Optional[bool] = None) -> None:
        if not isinstance(total_count, (int, np.integer)) or isinstance(total_count, bool):
            raise NotImplementedError(f"Multinomial: inhomogeneous total_count is not supported; total_count must "
                                      f"be a Python int, got {type(total_count).__name__}.")
        self.total_count = int(total_count)
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=self.total_count, probs=self.probs)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["Multinomial"] = None) -> "Multinomial":
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = tuple(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = Binomial(total_count=self.total_count, probs=new.probs, validate_args=False)
        super(Multinomial, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self) -> constraints.Constraint:
        return constraints.multinomial(self.total_count)

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def param_shape(self) -> tuple:
        return self._categorical.param_shape

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        sample_shape = (sample_shape,) if isinstance(sample_shape, int) else tuple(sample_shape)
        shape = self._extended_shape(sample_shape)
        if self.total_count == 0:
            return fg.zeros(shape, dtype=self.probs.dtype)
        draws = self._categorical.sample((self.total_count,) + sample_shape, key=key, generator=generator)
        draws = draws.movedim(0, -1)  # (sample, batch, total_count): the draws of one count along the last dim
        counts = fg.zeros(shape, dtype=self.probs.dtype)
        return counts.scatter_add(-1, draws, fg.ones(draws.shape, dtype=self.probs.dtype))

    def entropy(self) -> Tensor:
        n = float(self.total_count)
        term1 = n * self._categorical.entropy() - fg.lgamma(fg.tensor(n + 1, dtype=self.probs.dtype))
        # E[sum_k log x_k!] with x_k ~ Binomial(n, p_k): a sum over the (static) support 1..n
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = fg.exp(self._binomial.log_prob(support))
        weights = fg.lgamma(support + 1)
        term2 = (binomial_probs * weights).sum(0).sum(-1)
        return term1 + term2

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = fg.lgamma(value.sum(-1) + 1)
        log_factorial_xs = fg.lgamma(value + 1).sum(-1)
        # a category of probability zero that was never drawn contributes 0, not 0 * -inf
        logits = fg.where((value == 0) & (logits == float("-inf")), fg.zeros_like(logits), logits)
        log_powers = (logits * value).sum(-1)
        return log_factorial_n - log_factorial_xs + log_powers
