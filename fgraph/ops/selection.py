"""Quantiles, binning and counting: quantile, nanquantile, searchsorted, bucketize, histc, count_nonzero.

``quantile``/``nanquantile`` are composites, written as PyTorch writes them: sort,
ranks ``q * (n - 1)`` (from the count of numbers for ``nanquantile``), a ``gather``
of the values below and above each rank and a ``lerp`` between them. The gradient of
the input flows through the sort to the selected elements; a tensor ``q`` gets a
gradient too (through the interpolation weight, for ``linear``). ``searchsorted``,
``bucketize``, ``histc`` and ``count_nonzero`` are not differentiable: their outputs
never require grad. Everything here is traceable (``jax.jit``, ``fg.compile``);
only the check that ``q`` lies in ``[0, 1]`` is skipped under tracing.

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([[1.0, 4.0, 2.0, 8.0], [0.0, 1.0, 1.0, 3.0]])
    >>> fg.quantile(x, 0.5, dim=1).tolist()
    [3.0, 1.0]
    >>> fg.searchsorted(fg.tensor([1.0, 3.0, 5.0]), fg.tensor([3.0, 4.0])).tolist()
    [1, 2]
"""
from __future__ import annotations

import math
from typing import Any, Optional, Union

import jax
import jax.numpy as jnp

from fgraph.errors import OpError
from fgraph.ops._declare import apply_op, declare
from fgraph.ops._index_checks import index_array, is_traced
from fgraph.ops.reduction import Dim, check_tensor, normalize_dims
from fgraph.ops.reduction_minmax import _index_dtype
from fgraph.ops.sorting import _dim, sort
from fgraph.tensor import Tensor, _wrap, type_name

__all__ = ["quantile", "nanquantile", "searchsorted", "bucketize", "histc", "count_nonzero"]

INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


# -- quantile ----------------------------------------------------------------------------------------------
def _nan_stats_forward(s, *, ignore_nan):
    """Per slice (last dim): the count of numbers (``ignore_nan``) or whether a NaN is present."""
    nan = jnp.isnan(s)
    if ignore_nan:
        return jnp.sum(~nan, axis=-1, keepdims=True).astype(s.dtype)
    return jnp.any(nan, axis=-1, keepdims=True)


NAN_STATS = declare("quantile_nan_stats", _nan_stats_forward, None, params=("ignore_nan",), differentiable=False,
                    real_only=True)


def _check_q(q: Any, input: Tensor, op: str) -> Tensor:
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise OpError(f"{op}: q must be a scalar or a 1-D tensor, got q of shape {tuple(q.shape)}.")
        if q.dtype != input.dtype:
            raise OpError(
                f"{op}: q tensor must have the input's dtype {input.dtype}, got {q.dtype}; "
                f"convert it with q.to({input.dtype})."
            )
        if not is_traced(q) and q.numel() and not bool(jnp.all((q._array >= 0) & (q._array <= 1))):
            raise OpError(f"{op}: q values must be in the range [0, 1], got {q.tolist()}.")
        return q
    if isinstance(q, bool) or not isinstance(q, (int, float)):
        raise OpError(f"{op}: q must be a float or a Tensor, got {type_name(q)}.")
    if not 0 <= q <= 1:
        raise OpError(f"{op}: q must be in the range [0, 1], got {q}.")
    return _wrap(jnp.asarray(q, input.dtype))


def _quantile(op: str, input: Tensor, q: Any, dim: Optional[int], keepdim: bool, interpolation: str,
              ignore_nan: bool) -> Tensor:
    from fgraph.ops.elementwise import lt, mul, sub, to_dtype, where
    from fgraph.ops.elementwise_math import lerp
    from fgraph.ops.gather_scatter import _gather
    from fgraph.ops.movement import movedim
    from fgraph.ops.rounding import ceil, floor, round
    from fgraph.ops.shape import expand, reshape, squeeze, unsqueeze

    check_tensor(input, op)
    if not jnp.issubdtype(input.dtype, jnp.floating):
        raise OpError(f"{op}: input must be a floating tensor, got dtype {input.dtype}; convert it with x.double().")
    if interpolation not in INTERPOLATIONS:
        raise OpError(f"{op}: interpolation must be one of {INTERPOLATIONS}, got {interpolation!r}.")
    q = _check_q(q, input, op)
    if input.numel() == 0:
        raise OpError(f"{op}: input tensor must be non-empty, got shape {tuple(input.shape)}.")
    if dim is None or input.ndim == 0:
        d = None if dim is None else _dim(input, dim, op)
        x = reshape(input, (-1,))
    else:
        d = _dim(input, dim, op)
        x = movedim(input, d, -1)
    s = sort(x, -1).values
    rest, n = s.shape[:-1], s.shape[-1]
    lead = tuple(q.shape)  # () or (len(q),)
    qb = reshape(q, lead + (1,) * (len(rest) + 1))
    if ignore_nan:  # ranks among the numbers; all-NaN slices read the first (NaN) element
        ranks = mul(qb, sub(apply_op(NAN_STATS, (s,), NAN_STATS.Params(True)), 1.0))
        ranks = where(lt(ranks, 0.0), 0.0, ranks)
    else:  # a slice with a NaN reads its last element, a NaN
        ranks = where(apply_op(NAN_STATS, (s,), NAN_STATS.Params(False)), float(n - 1), mul(qb, float(n - 1)))
    ranks = expand(ranks, lead + rest + (1,))
    if interpolation in ("lower", "higher", "nearest"):
        ranks = {"lower": floor, "higher": ceil, "nearest": round}[interpolation](ranks)
    values = expand(s, lead + s.shape) if lead else s
    last = values.ndim - 1
    below = to_dtype(ranks, _index_dtype())
    out = _gather(values, last, below)
    if interpolation in ("linear", "midpoint"):
        above = _gather(values, last, to_dtype(ceil(ranks), _index_dtype()))
        weight = sub(ranks, to_dtype(below, ranks.dtype)) if interpolation == "linear" else 0.5
        out = lerp(out, above, weight)
    out = squeeze(out, -1)
    if keepdim:
        if d is None:
            out = reshape(out, lead + (1,) * input.ndim)
        elif input.ndim:
            out = unsqueeze(out, len(lead) + d)
    return out


def quantile(input: Tensor, q: Union[float, Tensor], dim: Optional[int] = None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Tensor:
    """The ``q``-th quantiles of ``input`` (all elements, or along ``dim``).

    ``q`` is a float or a 0-/1-D tensor of ``input``'s dtype, in ``[0, 1]``; a 1-D ``q``
    adds a leading dimension of ``len(q)``. Between two elements the quantile is found by
    ``interpolation``: ``linear``, ``lower``, ``higher``, ``midpoint`` or ``nearest``
    (ties to even). A slice holding a NaN has quantile NaN (see :func:`nanquantile`).

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([0.0, 1.0, 2.0, 3.0])
        >>> fg.quantile(x, fg.tensor([0.25, 0.5])).tolist(), x.quantile(0.5, interpolation="lower").item()
        ([0.75, 1.5], 1.0)
    """
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


def nanquantile(input: Tensor, q: Union[float, Tensor], dim: Optional[int] = None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Tensor:
    """:func:`quantile` ignoring NaNs (NaN where a slice holds no number).

    Example:
        >>> import fgraph as fg
        >>> fg.nanquantile(fg.tensor([4.0, float("nan"), 1.0, 2.0]), 0.5).item()
        2.0
    """
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


# -- searchsorted / bucketize ----------------------------------------------------------------------------
def _row_search(seq, values, side):
    return jnp.searchsorted(seq, values, side=side)


def _searchsorted_forward(seq, values, *sorter, side, out_int32):
    if sorter:
        seq = jnp.take_along_axis(seq, sorter[0], axis=-1)
    dtype = jnp.result_type(seq, values)
    seq, values = seq.astype(dtype), values.astype(dtype)
    out_dtype = jnp.int32 if out_int32 else _index_dtype()
    if seq.ndim == 1:
        return jnp.searchsorted(seq, values, side=side).astype(out_dtype)
    rows = math.prod(seq.shape[:-1])
    flat = jax.vmap(_row_search, in_axes=(0, 0, None))(seq.reshape(rows, -1), values.reshape(rows, -1), side)
    return flat.reshape(values.shape).astype(out_dtype)


SEARCHSORTED = declare("searchsorted", _searchsorted_forward, None, params=("side", "out_int32"),
                       differentiable=False, real_only=True)


def searchsorted(sorted_sequence: Tensor, input: Union[Tensor, float], *, out_int32: bool = False,
                 right: bool = False, side: Optional[str] = None, sorter: Optional[Tensor] = None) -> Tensor:
    """For each value, the index where inserting it would keep ``sorted_sequence`` (its last dim) sorted.

    With ``right=False`` (``side='left'``) the first such index, ``seq[i-1] < v <= seq[i]``;
    with ``right=True`` (``side='right'``) the last, ``seq[i-1] <= v < seq[i]``.
    ``sorted_sequence`` is 1-D, or has ``input``'s leading dimensions (one sorted row per
    row of values); ``sorter`` are indices that sort an unsorted ``sorted_sequence``
    along its last dim. Returns int64 (int32 with ``out_int32``); not differentiable.

    Example:
        >>> import fgraph as fg
        >>> seq = fg.tensor([1, 3, 5, 7, 9])
        >>> fg.searchsorted(seq, fg.tensor([3, 6, 9]), right=True).tolist()
        [2, 3, 5]
        >>> fg.searchsorted(fg.tensor([[1, 3], [2, 4]]), fg.tensor([[3], [3]])).tolist()
        [[1], [1]]
    """
    op = "searchsorted"
    check_tensor(sorted_sequence, op)
    if side not in (None, "left", "right"):
        raise OpError(f"{op}: side must be 'left' or 'right', got {side!r}.")
    if side == "left" and right:
        raise OpError(f"{op}: side='left' contradicts right=True; pass only one of them.")
    side = side or ("right" if right else "left")
    scalar = not isinstance(input, Tensor)
    if scalar:
        if isinstance(input, bool) or not isinstance(input, (int, float)):
            raise OpError(f"{op}: input must be a Tensor or a number, got {type_name(input)}.")
        if sorted_sequence.ndim != 1:
            raise OpError(
                f"{op}: a scalar input needs a 1-D sorted_sequence, got shape {tuple(sorted_sequence.shape)}."
            )
        input = _wrap(jnp.asarray(input))
    seq_shape, shape = tuple(sorted_sequence.shape), tuple(input.shape)
    if sorted_sequence.ndim == 0:
        raise OpError(f"{op}: sorted_sequence must have at least one dimension, got a 0-d tensor.")
    if sorted_sequence.ndim > 1 and (len(shape) != len(seq_shape) or shape[:-1] != seq_shape[:-1]):
        raise OpError(
            f"{op}: sorted_sequence of shape {seq_shape} and input of shape {shape} must share every dimension "
            f"but the last (or sorted_sequence must be 1-D)."
        )
    args: tuple = (sorted_sequence, input)
    if sorter is not None:
        sort_index = index_array(sorter, op, "sorter")
        if tuple(sort_index.shape) != seq_shape:
            raise OpError(f"{op}: sorter of shape {tuple(sort_index.shape)} must have sorted_sequence's shape {seq_shape}.")
        args += (sort_index,)
    return apply_op(SEARCHSORTED, args, SEARCHSORTED.Params(side, bool(out_int32)))


def bucketize(input: Union[Tensor, float], boundaries: Tensor, *, out_int32: bool = False,
              right: bool = False) -> Tensor:
    """The bucket of each element of ``input`` among the sorted 1-D ``boundaries``.

    ``right=False``: ``boundaries[i-1] < x <= boundaries[i]``; ``right=True``:
    ``boundaries[i-1] <= x < boundaries[i]``. Same as ``searchsorted(boundaries, input, right=right)``.

    Example:
        >>> import fgraph as fg
        >>> fg.bucketize(fg.tensor([1.0, 3.0, 5.5]), fg.tensor([1.0, 3.0, 5.0])).tolist()
        [0, 1, 3]
    """
    check_tensor(boundaries, "bucketize")
    if boundaries.ndim != 1:
        raise OpError(f"bucketize: boundaries must be 1-D, got shape {tuple(boundaries.shape)}.")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


# -- histc / count_nonzero -----------------------------------------------------------------------------------
def _histc_forward(x, *, bins, min, max):
    x = x.reshape(-1)
    if min == max and x.size:  # the data's range
        lo, hi = jnp.min(jnp.where(jnp.isnan(x), jnp.inf, x)), jnp.max(jnp.where(jnp.isnan(x), -jnp.inf, x))
    else:
        lo, hi = jnp.asarray(min, x.dtype), jnp.asarray(max, x.dtype)
    lo, hi = jnp.where(lo == hi, lo - 1, lo), jnp.where(lo == hi, hi + 1, hi)
    inside = (x >= lo) & (x <= hi)
    pos = jnp.clip(jnp.floor((x - lo) * bins / (hi - lo)), 0, bins - 1).astype(jnp.int32)
    # PyTorch's local search: an element on the wrong side of a bin edge moves one bin.
    edges = _linspace(lo, hi, bins)
    pos = jnp.where(x < edges[pos], pos - 1, jnp.where((x >= edges[pos + 1]) & (pos < bins - 1), pos + 1, pos))
    return jnp.zeros(bins, x.dtype).at[jnp.where(inside, pos, 0)].add(inside.astype(x.dtype))


def _linspace(lo, hi, bins):
    """``bins + 1`` edges from ``lo`` to ``hi`` rounded as PyTorch's ``linspace`` rounds them (from both ends)."""
    step = (hi - lo) / bins
    i = jnp.arange(bins + 1)
    return jnp.where(i < (bins + 1) // 2, lo + step * i, hi - step * (bins - i)).astype(lo.dtype)


HISTC = declare("histc", _histc_forward, None, params=("bins", "min", "max"), differentiable=False, real_only=True)


def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
    """Histogram of ``input`` in ``bins`` equal bins over ``[min, max]`` (the data's range when ``min == max``).

    Elements outside the range (and NaNs) are ignored; ``max`` falls in the last bin.
    The counts have ``input``'s floating dtype and are not differentiable.

    Example:
        >>> import fgraph as fg
        >>> fg.histc(fg.tensor([1.0, 2.0, 1.0]), bins=4, min=0, max=3).tolist()
        [0.0, 2.0, 1.0, 0.0]
    """
    check_tensor(input, "histc")
    if not jnp.issubdtype(input.dtype, jnp.floating):
        raise OpError(f"histc: input must be a floating tensor, got dtype {input.dtype}; convert it with x.float().")
    if isinstance(bins, bool) or not isinstance(bins, int) or bins <= 0:
        raise OpError(f"histc: bins must be a positive int, got {bins!r}.")
    for name, v in (("min", min), ("max", max)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise OpError(f"histc: {name} must be a finite number, got {v!r}.")
    if min > max:
        raise OpError(f"histc: max must be larger than min, got min={min}, max={max}.")
    return apply_op(HISTC, (input,), HISTC.Params(bins, float(min), float(max)))


def _count_nonzero_forward(x, *, dims):
    return jnp.sum(x != 0, axis=dims).astype(_index_dtype())


COUNT_NONZERO = declare("count_nonzero", _count_nonzero_forward, None, params=("dims",), differentiable=False)


def count_nonzero(input: Tensor, dim: Dim = None) -> Tensor:
    """The number of non-zero elements over ``dim`` (int or tuple; all by default), as int64.

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([[0.0, 1.0], [2.0, 3.0]])
        >>> fg.count_nonzero(x).item(), x.count_nonzero(dim=1).tolist()
        (3, [1, 2])
    """
    check_tensor(input, "count_nonzero")
    dims = normalize_dims(dim, input.ndim, "count_nonzero")
    return apply_op(COUNT_NONZERO, (input,), COUNT_NONZERO.Params(dims))


#: Installed as ``Tensor.<name>`` methods (PyTorch has no ``Tensor.searchsorted``/``bucketize``).
TENSOR_METHODS = {
    "quantile": quantile, "nanquantile": nanquantile, "histc": histc, "count_nonzero": count_nonzero,
}
