"""``Kumaraswamy(concentration1, concentration0)``: ``x = (1 - u ** (1 / b)) ** (1 / a)`` for uniform ``u``.

torch builds it as a ``TransformedDistribution`` of ``Uniform(0, 1)``; this class computes the
same quantities in closed form (density ``a b x^(a-1) (1 - x^a)^(b-1)``, cdf ``1 - (1 - x^a)^b``).
One deviation: torch's ``mode`` evaluates ``log1p(-b)`` and is NaN for every ``b > 1``; here it
is the true mode ``((a - 1) / (a b - 1)) ** (1 / a)`` (NaN where ``a < 1`` or ``b < 1``, as torch).

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.kumaraswamy import Kumaraswamy
    >>> d = Kumaraswamy(fg.tensor([2.0]), fg.tensor([3.0]))
    >>> d.rsample((4,), key=jax.random.key(0)).shape, [round(v, 4) for v in d.cdf(fg.tensor([0.5])).tolist()]
    ((4, 1), [0.5781])
"""
from __future__ import annotations

import math
from typing import Any, Optional

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions.distribution import Distribution
from fgraph.distributions.utils import broadcast_all, euler_constant
from fgraph.tensor import Tensor

__all__ = ["Kumaraswamy"]


def _moments(a: Tensor, b: Tensor, n: int) -> Tensor:
    """``E[x**n] = b B(1 + n / a, b)``."""
    arg1 = 1 + n / a
    log_value = fg.lgamma(arg1) + fg.lgamma(b) - fg.lgamma(arg1 + b)
    return b * fg.exp(log_value)


class Kumaraswamy(Distribution):
    """The Kumaraswamy distribution on ``(0, 1)`` with ``concentration1`` (a) and ``concentration0`` (b)."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Any, concentration0: Any, validate_args: Optional[bool] = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        super().__init__(self.concentration0.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["Kumaraswamy"] = None) -> "Kumaraswamy":
        return self._expand_params(Kumaraswamy, batch_shape, _instance, ("concentration1", "concentration0"))

    @property
    def mean(self) -> Tensor:
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        invalid = (b < 1) | (a < 1)
        safe_a = fg.where(invalid, fg.full_like(a, 2.0), a)
        safe_b = fg.where(invalid, fg.full_like(b, 2.0), b)
        mode = ((safe_a - 1) / (safe_a * safe_b - 1)).pow(safe_a.reciprocal())
        return fg.where(invalid, fg.full_like(mode, math.nan), mode)

    @property
    def variance(self) -> Tensor:
        return _moments(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def rsample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = fg.rand(shape, dtype=self.concentration0.dtype, key=key, generator=generator)
        return (1 - u.pow(self.concentration0.reciprocal())).pow(self.concentration1.reciprocal())

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration1, self.concentration0
        return a.log() + b.log() + fg.xlogy(a - 1, value) + fg.xlogy(b - 1, 1 - value.pow(a))

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 1 - (1 - value.pow(self.concentration1)).pow(self.concentration0)

    def icdf(self, value: Tensor) -> Tensor:
        return (1 - (1 - value).pow(self.concentration0.reciprocal())).pow(self.concentration1.reciprocal())

    def entropy(self) -> Tensor:
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        h0 = fg.digamma(self.concentration0 + 1) + euler_constant
        return t0 + t1 * h0 - fg.log(self.concentration1) - fg.log(self.concentration0)
