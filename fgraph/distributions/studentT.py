"""``StudentT(df, loc=0, scale=1)``: Student's t, reparameterised as ``loc + scale * X / sqrt(Z / df)``.

``X`` is standard normal and ``Z`` a :class:`Chi2` draw, so ``rsample`` is differentiable in
``loc`` and ``scale`` and (once, by the gamma sampler's implicit gradient) in ``df``.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.studentT import StudentT
    >>> d = StudentT(fg.tensor([1.0, 3.0]), 0.5, 2.0)
    >>> d.rsample((4,), key=jax.random.key(0)).shape
    (4, 2)
    >>> d.mean.tolist(), d.variance.tolist()
    ([nan, 0.5], [nan, 12.0])
"""
from __future__ import annotations

import math
from typing import Any, Optional

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions.chi2 import Chi2
from fgraph.distributions.distribution import Distribution
from fgraph.distributions.utils import broadcast_all, split_key, standard_normal
from fgraph.tensor import Tensor

__all__ = ["StudentT"]

_HALF_LOG_PI = 0.5 * math.log(math.pi)


class StudentT(Distribution):
    """Student's t-distribution with ``df`` degrees of freedom, location ``loc`` and scale ``scale``."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df: Any, loc: Any = 0.0, scale: Any = 1.0, validate_args: Optional[bool] = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df, validate_args=False)
        super().__init__(self.df.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["StudentT"] = None) -> "StudentT":
        return self._expand_params(StudentT, batch_shape, _instance, ("df", "loc", "scale", "_chi2"))

    @property
    def mean(self) -> Tensor:
        """``loc``; NaN where ``df <= 1`` (no mean)."""
        return fg.where(self.df <= 1, fg.full_like(self.loc, math.nan), self.loc)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        """``scale**2 * df / (df - 2)`` for ``df > 2``; ``inf`` for ``1 < df <= 2``; NaN for ``df <= 1``."""
        finite = self.df > 2
        safe_df = fg.where(finite, self.df, fg.full_like(self.df, 3.0))  # keeps the other branches' gradient 0
        value = self.scale.pow(2) * safe_df / (safe_df - 2)
        undefined = fg.where(self.df > 1, fg.full_like(self.df, math.inf), fg.full_like(self.df, math.nan))
        return fg.where(finite, value, undefined)

    def rsample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        shape = self._extended_shape(sample_shape)
        normal_key, chi2_key = split_key(key, 2)
        x = standard_normal(shape, self.df.dtype, normal_key, generator)
        z = self._chi2.rsample(sample_shape, key=chi2_key, generator=generator)
        y = x * fg.rsqrt(z / self.df)
        return self.loc + self.scale * y

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + _HALF_LOG_PI + fg.lgamma(0.5 * self.df)
             - fg.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * fg.log1p(y ** 2.0 / self.df) - z

    def entropy(self) -> Tensor:
        lbeta = fg.lgamma(0.5 * self.df) + math.lgamma(0.5) - fg.lgamma(0.5 * (self.df + 1))
        return (self.scale.log()
                + 0.5 * (self.df + 1) * (fg.digamma(0.5 * (self.df + 1)) - fg.digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)
