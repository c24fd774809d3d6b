"""``FisherSnedecor(df1, df2)``: the F distribution, reparameterised as a ratio of two gamma draws.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.fishersnedecor import FisherSnedecor
    >>> d = FisherSnedecor(fg.tensor([3.0, 6.0]), fg.tensor([2.0, 10.0]))
    >>> d.rsample((4,), key=jax.random.key(0)).shape
    (4, 2)
    >>> d.mean.tolist()
    [nan, 1.25]
"""
from __future__ import annotations

import math
from numbers import Number
from typing import Any, Optional

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions.distribution import Distribution
from fgraph.distributions.gamma import Gamma
from fgraph.distributions.utils import broadcast_all, split_key
from fgraph.tensor import Tensor

__all__ = ["FisherSnedecor"]


def _nan_where(mask: Tensor, value: Tensor) -> Tensor:
    return fg.where(mask, fg.full_like(value, math.nan), value)


class FisherSnedecor(Distribution):
    """The Fisher-Snedecor (F) distribution with ``df1`` and ``df2`` degrees of freedom."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1: Any, df2: Any, validate_args: Optional[bool] = None) -> None:
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1, validate_args=False)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2, validate_args=False)
        batch_shape = () if isinstance(df1, Number) and isinstance(df2, Number) else self.df1.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["FisherSnedecor"] = None) -> "FisherSnedecor":
        return self._expand_params(FisherSnedecor, batch_shape, _instance, ("df1", "df2", "_gamma1", "_gamma2"))

    @property
    def mean(self) -> Tensor:
        """``df2 / (df2 - 2)``; NaN where ``df2 <= 2``."""
        df2 = _nan_where(self.df2 <= 2, self.df2)
        return df2 / (df2 - 2)

    @property
    def mode(self) -> Tensor:
        """``(df1 - 2) / df1 * df2 / (df2 + 2)``; NaN where ``df1 <= 2``."""
        return _nan_where(self.df1 <= 2, (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2))

    @property
    def variance(self) -> Tensor:
        """NaN where ``df2 <= 4``."""
        df2 = _nan_where(self.df2 <= 4, self.df2)
        return 2 * df2.pow(2) * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        shape = self._extended_shape(sample_shape)
        key1, key2 = split_key(key, 2)
        x1 = self._gamma1.rsample(sample_shape, key=key1, generator=generator).reshape(shape)
        x2 = self._gamma2.rsample(sample_shape, key=key2, generator=generator).reshape(shape)
        tiny = float(fg.finfo(x2.dtype).tiny)
        return (x1 / x2.clamp(min=tiny)).clamp(min=tiny)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        ct1 = self.df1 * 0.5
        ct2 = self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * fg.log(value)
        t3 = (ct1 + ct2) * fg.log1p(ct3 * value)
        return t1 + t2 - t3

