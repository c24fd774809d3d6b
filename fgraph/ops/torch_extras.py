"""PyTorch's remaining top-level names: aliases (``absolute``, ``multiply``, ``negative``, ``subtract``,
``ravel``, ``mvlgamma``), ``fmax``/``fmin``, ``trapezoid``/``cumulative_trapezoid``, ``histogram``,
``dropout``, ``is_tensor``, ``numel``, and the ``Tensor.type`` / ``Tensor.where`` methods.

All differentiable ones are composites of existing ops. ``fmax``/``fmin`` send the gradient
to ``input`` where it is chosen (ties included) and to ``other`` elsewhere, as PyTorch does.
``histogram`` is not differentiable (counts).

``Tensor.type()`` names the tensor type PyTorch-style under fgraph's name:
``'fgraph.FloatTensor'`` for float32, ``'fgraph.LongTensor'`` for int64 and so on (there is no
per-device type: JAX arrays carry their device separately); ``x.type(dtype)`` casts, and
also accepts those names (with either ``fgraph.`` or ``torch.`` in front).

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([1.0, float("nan")])
    >>> fg.fmax(x, fg.tensor([2.0, 0.5])).tolist(), x.type()
    ([2.0, 0.5], 'fgraph.FloatTensor')
    >>> fg.trapezoid(fg.tensor([1.0, 2.0, 3.0])).item()
    4.0
"""
from __future__ import annotations

from typing import Any, NamedTuple, Optional, Union

import jax.numpy as jnp
import numpy as np

from fgraph._dtypes import canonical_dtype
from fgraph.errors import OpError
from fgraph.ops._declare import apply_op, declare
from fgraph.ops.elementwise import abs as absolute
from fgraph.ops.elementwise import ge, le, logical_or, mul, neg, sub, to_dtype, where
from fgraph.ops.grids import diff
from fgraph.ops.rounding import isnan
from fgraph.ops.scan import cumsum
from fgraph.ops.selection import _linspace
from fgraph.ops.shape import _dim, reshape
from fgraph.ops.special_more import multigammaln
from fgraph.tensor import Tensor, _wrap, type_name

Number = Union[Tensor, float, int]

multiply = mul
negative = neg


def subtract(input: Number, other: Number, *, alpha: Number = 1) -> Tensor:
    """``input - alpha * other`` (``torch.subtract``, an alias of :func:`fgraph.sub`).

    Example:
        >>> import fgraph as fg
        >>> fg.subtract(fg.tensor([5.0]), fg.tensor([1.0]), alpha=2).tolist()
        [3.0]
    """
    return sub(input, other, alpha=alpha)


def ravel(input: Tensor) -> Tensor:
    """The elements as a 1-D tensor (``reshape(-1)``).

    Example:
        >>> import fgraph as fg
        >>> fg.ravel(fg.ones(2, 3)).shape
        (6,)
    """
    _check_tensor(input, "ravel")
    return reshape(input, -1)


def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma function (``torch.mvlgamma``, :func:`fgraph.special.multigammaln`).

    Example:
        >>> import fgraph as fg
        >>> round(fg.mvlgamma(fg.tensor([2.0]), 1).item(), 6)
        0.0
    """
    return multigammaln(input, p)


def _check_tensor(input: Any, op: str, name: str = "input") -> None:
    if not isinstance(input, Tensor):
        raise OpError(f"{op}: expected a Tensor as {name}, got {type_name(input)}; wrap it with fgraph.tensor(...).")


def fmax(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise maximum, ignoring NaN: where one operand is NaN the other is taken (NaN only if both are).

    Example:
        >>> import fgraph as fg
        >>> fg.fmax(fg.tensor([1.0, float("nan"), 3.0]), fg.tensor([2.0, 0.0, float("nan")])).tolist()
        [2.0, 0.0, 3.0]
    """
    _check_tensor(input, "fmax")
    _check_tensor(other, "fmax", "other")
    return where(logical_or(ge(input, other), isnan(other)), input, other)


def fmin(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise minimum, ignoring NaN: where one operand is NaN the other is taken (NaN only if both are).

    Example:
        >>> import fgraph as fg
        >>> fg.fmin(fg.tensor([1.0, float("nan"), 3.0]), fg.tensor([2.0, 0.0, float("nan")])).tolist()
        [1.0, 0.0, 3.0]
    """
    _check_tensor(input, "fmin")
    _check_tensor(other, "fmin", "other")
    return where(logical_or(le(input, other), isnan(other)), input, other)


def is_tensor(obj: Any) -> bool:
    """Whether ``obj`` is an fgraph Tensor.

    Example:
        >>> import fgraph as fg
        >>> fg.is_tensor(fg.ones(1)), fg.is_tensor([1.0])
        (True, False)
    """
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> int:
    """The number of elements of ``input``.

    Example:
        >>> import fgraph as fg
        >>> fg.numel(fg.ones(2, 3))
        6
    """
    _check_tensor(input, "numel")
    return input.numel()


def dropout(input: Tensor, p: float, train: bool, *, key: Any = None, generator: Any = None) -> Tensor:
    """``torch.dropout(input, p, train)``: :func:`fgraph.nn.functional.dropout` with ``training=train``
    (``key=``/``generator=`` choose the mask, see :mod:`fgraph.random`).

    Example:
        >>> import fgraph as fg
        >>> fg.dropout(fg.ones(3), 0.5, False).tolist()
        [1.0, 1.0, 1.0]
    """
    from fgraph.nn.functional import dropout as _dropout

    return _dropout(input, p, train, key=key, generator=generator)


# -- trapezoid -------------------------------------------------------------------------------------------------------
def _spacings(y: Tensor, x: Optional[Tensor], dx: Optional[float], d: int, op: str) -> Any:
    """The interval widths along ``d``: a number, or a tensor broadcastable against ``y``'s ``n - 1`` intervals."""
    if x is not None and dx is not None:
        raise OpError(f"{op}: pass either x or dx, not both.")
    if x is None:
        return 1.0 if dx is None else dx
    _check_tensor(x, op, "x")
    n = y.shape[d]
    if x.ndim == 1:
        if x.shape[0] != n:
            raise OpError(f"{op}: x of shape {tuple(x.shape)} must have as many elements as y {tuple(y.shape)} "
                          f"has along dim {d} ({n}).")
        shape = [1] * y.ndim
        shape[d] = n - 1
        return reshape(diff(x), *shape)
    xd = _dim(d - y.ndim, x.ndim, op)
    if x.shape[xd] != n:
        raise OpError(f"{op}: x {tuple(x.shape)} and y {tuple(y.shape)} must have the same size along dim {d}.")
    return diff(x, dim=xd)


def _pairs(y: Tensor, d: int) -> Tensor:
    n = y.shape[d]
    return y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)


def trapezoid(y: Tensor, x: Optional[Tensor] = None, *, dx: Optional[float] = None, dim: int = -1) -> Tensor:
    """The trapezoidal rule along ``dim``: ``sum((y[i+1] + y[i]) / 2 * (x[i+1] - x[i]))``, with sample points ``x``
    (1-D, or broadcasting with ``y``) or a constant spacing ``dx`` (default 1).

    Example:
        >>> import fgraph as fg
        >>> fg.trapezoid(fg.tensor([1.0, 2.0, 3.0]), fg.tensor([0.0, 1.0, 3.0])).item()
        6.5
    """
    _check_tensor(y, "trapezoid", "y")
    d = _dim(dim, y.ndim, "trapezoid")
    h = _spacings(y, x, dx, d, "trapezoid")
    if y.shape[d] == 0:
        return y.sum(d)
    return (_pairs(y, d) * h).sum(d) * 0.5


def cumulative_trapezoid(y: Tensor, x: Optional[Tensor] = None, *, dx: Optional[float] = None,
                         dim: int = -1) -> Tensor:
    """The running trapezoidal rule along ``dim`` (one element fewer than ``y`` there); see :func:`trapezoid`.

    Example:
        >>> import fgraph as fg
        >>> fg.cumulative_trapezoid(fg.tensor([1.0, 2.0, 3.0])).tolist()
        [1.5, 4.0]
    """
    _check_tensor(y, "cumulative_trapezoid", "y")
    d = _dim(dim, y.ndim, "cumulative_trapezoid")
    h = _spacings(y, x, dx, d, "cumulative_trapezoid")
    if y.shape[d] == 0:
        return y
    return cumsum(_pairs(y, d) * h, d) * 0.5


# -- histogram -------------------------------------------------------------------------------------------------------
class HistogramResult(NamedTuple):
    """``(hist, bin_edges)``, like ``torch.return_types.histogram``."""

    hist: Tensor
    bin_edges: Tensor


def _histogram_edges_forward(x, *, bins, lo, hi):
    if lo is None:  # the data's range, widened by 1/2 on each side when it is a single value
        lo, hi = (jnp.min(x), jnp.max(x)) if x.size else (jnp.zeros((), x.dtype), jnp.zeros((), x.dtype))
        same = lo == hi
        lo, hi = jnp.where(same, lo - 0.5, lo), jnp.where(same, hi + 0.5, hi)
    lo, hi = jnp.asarray(lo, x.dtype), jnp.asarray(hi, x.dtype)
    return _linspace(lo, hi, bins)


def _histogram_forward(x, edges, weight, *, density):
    x, weight = x.reshape(-1), weight.reshape(-1)
    nbins = edges.shape[0] - 1
    pos = jnp.searchsorted(edges, x, side="right") - 1
    pos = jnp.where(x == edges[-1], nbins - 1, pos)  # the last bin is closed on the right
    inside = (x >= edges[0]) & (x <= edges[-1])
    hist = jnp.zeros(nbins, x.dtype).at[jnp.where(inside, pos, 0)].add(jnp.where(inside, weight, 0))
    if density:
        hist = hist / (hist.sum() * jnp.diff(edges))
    return hist


HISTOGRAM_EDGES = declare("histogram_edges", _histogram_edges_forward, None, params=("bins", "lo", "hi"),
                          differentiable=False, real_only=True)
HISTOGRAM = declare("histogram", _histogram_forward, None, params=("density",), differentiable=False, real_only=True)


def histogram(input: Tensor, bins: Union[int, Tensor], *, range: Optional[tuple] = None,
              weight: Optional[Tensor] = None, density: bool = False) -> HistogramResult:
    """A histogram of ``input``'s values: ``bins`` equal bins over ``range`` (default: the data's range), or the
    bins between the increasing edges of a 1-D tensor ``bins``. Each bin is closed on the left, the last on both
    sides; ``weight`` (``input``'s shape) weights the counts, ``density`` normalizes them to integrate to 1.
    Returns ``(hist, bin_edges)``, not differentiable.

    Example:
        >>> import fgraph as fg
        >>> h, edges = fg.histogram(fg.tensor([1.0, 2.0, 1.0]), 4, range=(0.0, 4.0))
        >>> h.tolist(), edges.tolist()
        ([0.0, 2.0, 1.0, 0.0], [0.0, 1.0, 2.0, 3.0, 4.0])
    """
    _check_tensor(input, "histogram")
    if input.dtype not in (jnp.float32, jnp.float64):
        raise OpError(f"histogram: input must be float32 or float64, got {input.dtype}; convert it with x.float().")
    if isinstance(bins, Tensor):
        if range is not None:
            raise OpError("histogram: range applies only when bins is a number of bins; pass the edges only.")
        if bins.ndim != 1 or bins.shape[0] < 2 or bins.dtype != input.dtype:
            raise OpError(f"histogram: bins must be a 1-D tensor of at least 2 edges in input's dtype {input.dtype}, "
                          f"got shape {tuple(bins.shape)} and dtype {bins.dtype}.")
        edges = bins.detach()
    else:
        if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins <= 0:
            raise OpError(f"histogram: bins must be a positive int or a 1-D tensor of edges, got {bins!r}.")
        lo = hi = None
        if range is not None:
            lo, hi = (float(v) for v in range)
            if not lo <= hi:
                raise OpError(f"histogram: range must be (min, max) with min <= max, got {range!r}.")
        edges = apply_op(HISTOGRAM_EDGES, (input.detach(),), HISTOGRAM_EDGES.Params(int(bins), lo, hi))
    if weight is None:
        weight = _wrap(jnp.ones((), input.dtype))
    else:
        _check_tensor(weight, "histogram", "weight")
        if weight.shape != input.shape or weight.dtype != input.dtype:
            raise OpError(f"histogram: weight must have input's shape {tuple(input.shape)} and dtype {input.dtype}, "
                          f"got {tuple(weight.shape)} and {weight.dtype}.")
    weight = _wrap(jnp.broadcast_to(weight._array, input.shape))
    hist = apply_op(HISTOGRAM, (input.detach(), edges, weight), HISTOGRAM.Params(bool(density)))
    return HistogramResult(hist, edges)


# -- Tensor.type, Tensor.where -----------------------------------------------------------------------------------------
_TYPE_NAMES = {
    "float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor", "bfloat16": "BFloat16Tensor",
    "int8": "CharTensor", "uint8": "ByteTensor", "int16": "ShortTensor", "int32": "IntTensor",
    "int64": "LongTensor", "bool": "BoolTensor", "complex64": "ComplexFloatTensor",
    "complex128": "ComplexDoubleTensor",
}
_TYPE_DTYPES = {name: dtype for dtype, name in _TYPE_NAMES.items()}


def _type_dtype(dtype: Any) -> Any:
    if isinstance(dtype, str):
        prefix, _, name = dtype.rpartition(".")
        if name in _TYPE_DTYPES and prefix in ("fgraph", "torch"):
            return _TYPE_DTYPES[name]
        if prefix:
            raise OpError(f"type: unknown tensor type {dtype!r}; use a dtype (fg.float32) or one of "
                          f"{sorted('fgraph.' + n for n in _TYPE_DTYPES)} (devices: x.to('gpu')).")
    return canonical_dtype(dtype, "type")


def type(self: Tensor, dtype: Any = None, non_blocking: bool = False) -> Union[str, Tensor]:
    """Without ``dtype``: the type name (``'fgraph.FloatTensor'`` for float32, ``'fgraph.LongTensor'`` for
    int64...); with one (a dtype, or such a name): the tensor cast to it, as ``Tensor.type`` does.

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([1, 2])
        >>> x.type(), x.type(fg.float64).dtype, x.type("torch.FloatTensor").type()
        ('fgraph.LongTensor', dtype('float64'), 'fgraph.FloatTensor')
    """
    if dtype is None:
        return "fgraph." + _TYPE_NAMES.get(str(self.dtype), str(self.dtype))
    return to_dtype(self, _type_dtype(dtype))


def _where_method(self: Tensor, condition: Tensor, y: Number) -> Tensor:
    """``self.where(condition, y)``: ``self`` where ``condition`` holds, else ``y`` (``fg.where(condition, self, y)``).

    Example:
        >>> import fgraph as fg
        >>> fg.tensor([1.0, 2.0]).where(fg.tensor([True, False]), 0.0).tolist()
        [1.0, 0.0]
    """
    return where(condition, self, y)


_where_method.__name__ = _where_method.__qualname__ = "where"

__all__ = ["absolute", "multiply", "negative", "subtract", "ravel", "mvlgamma", "fmax", "fmin", "is_tensor",
           "numel", "dropout", "trapezoid", "cumulative_trapezoid", "histogram"]
#: Installed as ``Tensor.<name>`` methods (PyTorch has no ``Tensor.trapezoid``).
TENSOR_METHODS = {
    "absolute": absolute, "multiply": multiply, "negative": negative, "subtract": subtract, "ravel": ravel,
    "mvlgamma": mvlgamma, "fmax": fmax, "fmin": fmin, "histogram": histogram, "type": type,
    "where": _where_method,
}
