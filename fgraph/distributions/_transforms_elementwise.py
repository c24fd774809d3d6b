"""Elementwise transforms: ``Abs``, ``Affine``, ``Exp``, ``Power``, ``Sigmoid``, ``Softplus``, ``Tanh``,
and ``CumulativeDistributionTransform`` (a distribution's CDF).

Re-exported from :mod:`fgraph.distributions.transforms`.

Example:
    >>> import fgraph as fg
    >>> from fgraph.distributions.transforms import TanhTransform
    >>> t = TanhTransform()
    >>> x = fg.tensor([0.0, 30.0], dtype=fg.float64)
    >>> [round(v, 6) for v in t.log_abs_det_jacobian(x, t(x)).tolist()]   # finite far in the tails
    [0.0, -58.613706]
"""
from __future__ import annotations

import math
from numbers import Number
from typing import Any, Sequence

import numpy as np

import fgraph as fg
import fgraph.nn.functional as F
from fgraph.distributions import constraints
from fgraph.distributions.distribution import all_true
from fgraph.distributions.utils import broadcast_all, lazy_property
from fgraph.distributions._transform_base import Transform
from fgraph.tensor import Tensor

__all__ = ["AbsTransform", "AffineTransform", "CumulativeDistributionTransform", "ExpTransform", "PowerTransform",
           "SigmoidTransform", "SoftplusTransform", "TanhTransform", "clipped_sigmoid"]


def _is_number(v: Any) -> bool:
    return isinstance(v, (Number, np.number)) and not isinstance(v, bool)


def _same_values(a: Any, b: Any) -> bool:
    """Whether two parameters are equal everywhere (identity when their values are traced)."""
    if _is_number(a) and _is_number(b):
        return a == b
    if a is b:
        return True
    if not isinstance(a, Tensor):
        a = fg.tensor(a)
    return all_true((a == b).all()) is True


class ExpTransform(Transform):
    """``y = exp(x)``."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ExpTransform)

    def _call(self, x: Tensor) -> Tensor:
        return x.exp()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x


class PowerTransform(Transform):
    """``y = x ** exponent`` on the positive reals."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @lazy_property
    def sign(self) -> Tensor:  # type: ignore[override]
        return self.exponent.sign()

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, PowerTransform) and _same_values(self.exponent, other.exponent)

    def _call(self, x: Tensor) -> Tensor:
        return x.pow(self.exponent)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape: Sequence[int]) -> tuple:
        return fg.broadcast_shapes(tuple(shape), tuple(self.exponent.shape))

    def inverse_shape(self, shape: Sequence[int]) -> tuple:
        return fg.broadcast_shapes(tuple(shape), tuple(self.exponent.shape))


def clipped_sigmoid(x: Tensor) -> Tensor:
    """``sigmoid(x)`` clamped into ``[tiny, 1 - eps]``: never exactly 0 or 1."""
    finfo = fg.finfo(x.dtype)
    return fg.sigmoid(x).clamp(min=float(finfo.tiny), max=1.0 - float(finfo.eps))


class SigmoidTransform(Transform):
    """``y = 1 / (1 + exp(-x))``, ``x = logit(y)``."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, SigmoidTransform)

    def _call(self, x: Tensor) -> Tensor:
        return clipped_sigmoid(x)

    def _inverse(self, y: Tensor) -> Tensor:
        finfo = fg.finfo(y.dtype)
        y = y.clamp(min=float(finfo.tiny), max=1.0 - float(finfo.eps))
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -F.softplus(-x) - F.softplus(x)


class SoftplusTransform(Transform):
    """``y = log(1 + exp(x))`` (linear for ``x > 20``, as ``softplus``)."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, SoftplusTransform)

    def _call(self, x: Tensor) -> Tensor:
        return F.softplus(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -F.softplus(-x)


class TanhTransform(Transform):
    """``y = tanh(x)``; the log-det ``log(1 - tanh(x)^2)`` is computed stably from ``x``."""

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, TanhTransform)

    def _call(self, x: Tensor) -> Tensor:
        return x.tanh()

    def _inverse(self, y: Tensor) -> Tensor:
        return fg.atanh(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        # 1 - tanh(x)^2 = 4 exp(-2x) / (1 + exp(-2x))^2
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))


class AbsTransform(Transform):
    """``y = |x|`` (not bijective: the inverse picks the non-negative root)."""

    domain = constraints.real
    codomain = constraints.positive

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, AbsTransform)

    def _call(self, x: Tensor) -> Tensor:
        return x.abs()

    def _inverse(self, y: Tensor) -> Tensor:
        return y


class AffineTransform(Transform):
    """``y = loc + scale * x``; ``event_dim`` rightmost dims form one event (summed in the log-det)."""

    bijective = True

    def __init__(self, loc: Any, scale: Any, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> constraints.Constraint:
        if self.event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self.event_dim)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> constraints.Constraint:
        if self.event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self.event_dim)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self.event_dim, cache_size=cache_size)

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, AffineTransform) and _same_values(self.loc, other.loc)
                and _same_values(self.scale, other.scale))

    @property
    def sign(self) -> Any:
        if _is_number(self.scale):
            return 1 if self.scale > 0 else -1 if self.scale < 0 else 0
        return self.scale.sign()

    def _call(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        shape = tuple(x.shape)
        if _is_number(self.scale):
            result = fg.full_like(x, math.log(abs(self.scale)))
        else:
            result = self.scale.abs().log()
        if self.event_dim:
            result = result.reshape(tuple(result.shape[: result.dim() - self.event_dim]) + (-1,)).sum(-1)
            shape = shape[: len(shape) - self.event_dim]
        return result.expand(shape)

    def _broadcast(self, shape: Sequence[int]) -> tuple:
        return fg.broadcast_shapes(tuple(shape), tuple(getattr(self.loc, "shape", ())),
                                   tuple(getattr(self.scale, "shape", ())))

    def forward_shape(self, shape: Sequence[int]) -> tuple:
        return self._broadcast(shape)

    def inverse_shape(self, shape: Sequence[int]) -> tuple:
        return self._broadcast(shape)


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)``: to the unit interval (a copula's marginal)."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return self.distribution.support

    def _call(self, x: Tensor) -> Tensor:
        return self.distribution.cdf(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)
