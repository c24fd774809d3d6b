"""Sorting and order statistics: sort, argsort, msort, topk, kthvalue, median, nanmedian, mode.

Each op that selects elements along ``dim`` is one primitive whose forward kernel
returns ``(values, indices)`` (a named tuple, like ``torch.return_types.sort``);
``indices`` is an integer tensor that never requires grad. The gradient of
``values`` is scattered back to the selected positions (``scatter_add`` of the
incoming gradient at ``indices``, written in fgraph ops, so it differentiates
again: the second derivative is a ``gather``).

Ties, as PyTorch documents or (where it leaves them open) deterministically:

* ``sort``/``argsort`` are always stable: equal elements keep their order, in
  ascending and descending sorts alike (``stable=False`` is accepted; PyTorch's CPU
  sort gives the same order). NaN sorts above every number (last ascending, first
  descending); ``-0.0`` and ``0.0`` are equal.
* ``topk``, ``kthvalue`` and ``median(dim)``/``nanmedian(dim)`` pick by the stable
  sort's order: the ``k``-th element of the stable sort (PyTorch leaves tied indices
  to its selection algorithm and warns that they may differ between devices).
* ``mode`` returns the smallest of the most frequent values and the index of its
  last occurrence, as PyTorch does.
* ``median()``/``nanmedian()`` without ``dim`` return the lower median and, as in
  PyTorch, split the gradient evenly among the elements equal to it.
* ``median`` (any form) is NaN where the slice holds a NaN; ``nanmedian`` ignores NaNs.

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([3.0, 1.0, 2.0, 1.0], requires_grad=True)
    >>> values, indices = fg.sort(x)
    >>> values.tolist(), indices.tolist()
    ([1.0, 1.0, 2.0, 3.0], [1, 3, 2, 0])
    >>> (gx,) = fg.grad((values * fg.tensor([1.0, 2.0, 3.0, 4.0])).sum(), [x])
    >>> gx.tolist()
    [4.0, 1.0, 3.0, 2.0]
"""
from __future__ import annotations

from collections import namedtuple
from typing import Any, Optional

import jax.numpy as jnp
from jax import lax

from fgraph.errors import OpError
from fgraph.ops._declare import apply_op, declare
from fgraph.ops.reduction import check_tensor
from fgraph.ops.reduction_minmax import _evenly_rule, _index_dtype
from fgraph.tensor import Tensor, _wrap

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "mode"]

#: ``sort``'s result, like ``torch.return_types.sort``: ``(values, indices)``.
SortResult = namedtuple("sort", ("values", "indices"))
#: ``topk``'s result, like ``torch.return_types.topk``.
TopkResult = namedtuple("topk", ("values", "indices"))
#: ``kthvalue``'s result, like ``torch.return_types.kthvalue``.
KthvalueResult = namedtuple("kthvalue", ("values", "indices"))
#: ``median(input, dim)``'s result, like ``torch.return_types.median``.
MedianResult = namedtuple("median", ("values", "indices"))
#: ``nanmedian(input, dim)``'s result, like ``torch.return_types.nanmedian``.
NanmedianResult = namedtuple("nanmedian", ("values", "indices"))
#: ``mode``'s result, like ``torch.return_types.mode``.
ModeResult = namedtuple("mode", ("values", "indices"))


# -- kernels ---------------------------------------------------------------------------------------------
def _order(x, dim, descending):
    """The stable sorting permutation along ``dim`` (NaN above every number, ``-0.0 == 0.0``)."""
    return jnp.argsort(x, axis=dim, stable=True, descending=descending).astype(_index_dtype())


def _pick(x, indices, dim):
    return jnp.take_along_axis(x, indices, axis=dim)


def _sort_forward(x, *, dim, descending):
    if x.ndim == 0:
        return x, jnp.zeros((), _index_dtype())
    indices = _order(x, dim, descending)
    return _pick(x, indices, dim), indices


def _topk_forward(x, *, k, dim, largest):
    if x.ndim == 0:
        return x, jnp.zeros((), _index_dtype())
    indices = lax.slice_in_dim(_order(x, dim, largest), 0, k, axis=dim)
    return _pick(x, indices, dim), indices


def _at_rank(x, rank, dim, keepdim):
    """The element of the stable ascending sort at position ``rank`` (broadcast over the other dims)."""
    indices = _order(x, dim, False)
    rank = jnp.broadcast_to(rank, x.shape[:dim] + (1,) + x.shape[dim + 1:]).astype(indices.dtype)
    index = _pick(indices, rank, dim)
    values = _pick(x, index, dim)
    if not keepdim:
        values, index = jnp.squeeze(values, dim), jnp.squeeze(index, dim)
    return values, index


def _kthvalue_forward(x, *, k, dim, keepdim):
    if x.ndim == 0:
        return x, jnp.zeros((), _index_dtype())
    return _at_rank(x, k - 1, dim, keepdim)


def _nan_count(x, dim):
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        return jnp.zeros(x.shape[:dim] + (1,) + x.shape[dim + 1:], jnp.int32)
    return jnp.sum(jnp.isnan(x), axis=dim, keepdims=True)


def _median_forward(x, *, dim, keepdim, ignore_nan):
    if x.ndim == 0:
        return x, jnp.zeros((), _index_dtype())
    n = x.shape[dim]
    nans = _nan_count(x, dim)
    if ignore_nan:  # the lower median of the numbers; the first NaN when there are none
        rank = jnp.maximum((n - nans - 1) // 2, 0)
    else:  # NaN sorts last: the first NaN when there is one
        rank = jnp.where(nans > 0, n - nans, (n - 1) // 2)
    return _at_rank(x, rank, dim, keepdim)


def _median_all_forward(x, *, dims, keepdim, ignore_nan=False):
    flat = x.reshape(-1)
    if flat.size == 0:
        return jnp.full((), jnp.nan, x.dtype)
    return _median_forward(flat, dim=0, keepdim=False, ignore_nan=ignore_nan)[0]


def _nanmedian_all_forward(x, *, dims, keepdim):
    return _median_all_forward(x, dims=dims, keepdim=keepdim, ignore_nan=True)


def _mode_forward(x, *, dim, keepdim):
    if x.ndim == 0:
        return x, jnp.zeros((), _index_dtype())
    x = jnp.moveaxis(x, dim, -1)
    n = x.shape[-1]
    order = _order(x, -1, False)
    s = _pick(x, order, -1)
    pos = lax.broadcasted_iota(jnp.int32, s.shape, s.ndim - 1)
    edge = s[..., 1:] != s[..., :-1]  # a new run of equal values starts after each edge
    first = jnp.concatenate([jnp.ones(s.shape[:-1] + (1,), bool), edge], -1)
    last = jnp.concatenate([edge, jnp.ones(s.shape[:-1] + (1,), bool)], -1)
    start = lax.cummax(jnp.where(first, pos, 0), axis=s.ndim - 1)
    end = lax.cummin(jnp.where(last, pos, n - 1), axis=s.ndim - 1, reverse=True)
    # The first longest run is the smallest most frequent value; a stable sort keeps its
    # original indices increasing, so the run's end holds the value's last occurrence.
    best = jnp.argmax(end - start, axis=-1, keepdims=True)
    at_end = _pick(end, best, -1)
    values, indices = _pick(s, best, -1), _pick(order, at_end, -1)
    if keepdim:
        return jnp.moveaxis(values, -1, dim), jnp.moveaxis(indices, -1, dim)
    return values[..., 0], indices[..., 0]


# -- the gradient: scatter to the selected positions ----------------------------------------------------
def _scatter_back_rule(ctx, g):
    from fgraph.ops.gather_scatter import _scatter_add
    from fgraph.ops.shape import unsqueeze

    shape = ctx.shapes[0]
    g_values = g[0]
    if not shape:
        return (g_values,)
    dim = ctx.params.dim
    indices = ctx.result[1]
    if not getattr(ctx.params, "keepdim", True):
        g_values, indices = unsqueeze(g_values, dim), unsqueeze(indices, dim)
    return (_scatter_add(_wrap(jnp.zeros(shape, g_values.dtype)), dim, indices, g_values),)


def _selection(name: str, forward: Any, params: tuple, node_name: Optional[str] = None) -> Any:
    return declare(name, forward, _scatter_back_rule, params=params, save_result=True, num_outputs=2,
                   node_name=node_name, real_only=True, tangent="rule")  # ties: the selected element's tangent


SORT = _selection("sort", _sort_forward, ("dim", "descending"))
TOPK = _selection("topk", _topk_forward, ("k", "dim", "largest"))
KTHVALUE = _selection("kthvalue", _kthvalue_forward, ("k", "dim", "keepdim"))
MEDIAN_DIM = _selection("median_dim", _median_forward, ("dim", "keepdim", "ignore_nan"), "MedianBackward1")
MODE = _selection("mode", _mode_forward, ("dim", "keepdim"))
# Without dim: ties share the gradient evenly (_evenly_rule reads the params (dims, keepdim)).
MEDIAN_ALL = declare("median", _median_all_forward, _evenly_rule, params=("dims", "keepdim"), save_inputs=True,
                     save_result=True, real_only=True, tangent="rule")
NANMEDIAN_ALL = declare("nanmedian", _nanmedian_all_forward, _evenly_rule, params=("dims", "keepdim"),
                        save_inputs=True, save_result=True, real_only=True, tangent="rule")
NANMEDIAN_DIM = _selection("nanmedian_dim", _median_forward, ("dim", "keepdim", "ignore_nan"), "NanmedianBackward1")


# -- argument checks ---------------------------------------------------------------------------------------
def _dim(input: Tensor, dim: Any, op: str) -> int:
    """``dim`` as a non-negative axis (0 for a 0-d tensor, which takes 0 and -1)."""
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise OpError(f"{op}: dim must be an int, got {type(dim).__name__} {dim!r}.")
    n = max(input.ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"{op}: dim {dim} is out of range for a tensor of shape {tuple(input.shape)} "
            f"(expected a value in [{-n}, {n - 1}])."
        )
    return dim % n if input.ndim else 0


def _size(input: Tensor, d: int) -> int:
    return input.shape[d] if input.ndim else 1


def _k(k: Any, input: Tensor, d: int, op: str, low: int) -> int:
    if isinstance(k, Tensor) and k.ndim == 0 and not jnp.issubdtype(k.dtype, jnp.inexact):
        k = k.item()
    if isinstance(k, bool) or not isinstance(k, int):
        raise OpError(f"{op}: k must be an int, got {type(k).__name__} {k!r}.")
    size = _size(input, d)
    if not low <= k <= size:
        raise IndexError(
            f"{op}: k={k} is out of range for dimension {d} of size {size} of the input of shape "
            f"{tuple(input.shape)} (expected {low} <= k <= {size})."
        )
    return k


def _nonempty(input: Tensor, d: int, op: str) -> None:
    if _size(input, d) == 0:
        raise IndexError(
            f"{op}: dimension {d} of the input of shape {tuple(input.shape)} is empty, so {op} along it is "
            f"undefined; reduce over a non-empty dimension."
        )


# -- public functions ------------------------------------------------------------------------------------------
def sort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False) -> SortResult:
    """Sort along ``dim``: a named tuple ``(values, indices)`` with ``values == input.gather(dim, indices)``.

    The sort is always stable (ties keep their order, also when ``descending``); NaN
    sorts above every number. The gradient of ``values`` goes back to the element each
    came from.

    Example:
        >>> import fgraph as fg
        >>> values, indices = fg.sort(fg.tensor([[2.0, 9.0, 2.0], [5.0, 4.0, 6.0]]), dim=1, descending=True)
        >>> values.tolist(), indices.tolist()
        ([[9.0, 2.0, 2.0], [6.0, 5.0, 4.0]], [[1, 0, 2], [2, 0, 1]])
    """
    check_tensor(input, "sort")
    d = _dim(input, dim, "sort")
    values, indices = apply_op(SORT, (input,), SORT.Params(d, bool(descending)))
    return SortResult(values, indices)


def argsort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor:
    """The indices that sort ``input`` along ``dim`` (stable; an integer tensor).

    Example:
        >>> import fgraph as fg
        >>> fg.argsort(fg.tensor([3.0, 1.0, 3.0, 0.0]), descending=True).tolist()
        [0, 2, 1, 3]
    """
    return sort(input, dim, descending, stable=stable).indices


def msort(input: Tensor) -> Tensor:
    """The values of ``input`` sorted along its first dimension: ``sort(input, dim=0).values``.

    Example:
        >>> import fgraph as fg
        >>> fg.msort(fg.tensor([[3.0, 1.0], [1.0, 2.0]])).tolist()
        [[1.0, 1.0], [3.0, 2.0]]
    """
    return sort(input, 0).values


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> TopkResult:
    """The ``k`` largest (or, with ``largest=False``, smallest) elements along ``dim``: ``(values, indices)``.

    Results are always sorted (largest first, or smallest first), ties in the stable
    sort's order; ``sorted=False`` is accepted (PyTorch then leaves the order open).

    Example:
        >>> import fgraph as fg
        >>> values, indices = fg.topk(fg.tensor([1.0, 5.0, 3.0, 4.0]), 2)
        >>> values.tolist(), indices.tolist()
        ([5.0, 4.0], [1, 3])
        >>> fg.tensor([1.0, 5.0, 3.0]).topk(1, largest=False).indices.tolist()
        [0]
    """
    check_tensor(input, "topk")
    d = _dim(input, dim, "topk")
    k = _k(k, input, d, "topk", 0)
    values, indices = apply_op(TOPK, (input,), TOPK.Params(k, d, bool(largest)))
    return TopkResult(values, indices)


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> KthvalueResult:
    """The ``k``-th smallest element (``k`` from 1) along ``dim`` and its index: ``(values, indices)``.

    Example:
        >>> import fgraph as fg
        >>> values, indices = fg.kthvalue(fg.tensor([[4.0, 1.0, 3.0], [0.0, 9.0, 8.0]]), 2, dim=1)
        >>> values.tolist(), indices.tolist()
        ([3.0, 8.0], [2, 2])
    """
    check_tensor(input, "kthvalue")
    d = _dim(input, dim, "kthvalue")
    k = _k(k, input, d, "kthvalue", 1)
    values, indices = apply_op(KTHVALUE, (input,), KTHVALUE.Params(k, d, bool(keepdim)))
    return KthvalueResult(values, indices)


def _median(name: str, ops: tuple, result: Any, input: Tensor, dim: Optional[int], keepdim: bool) -> Any:
    check_tensor(input, name)
    ignore_nan = name == "nanmedian"
    if dim is None:
        if keepdim:
            raise OpError(f"{name}: keepdim needs dim; use {name}(x, dim, keepdim=True).")
        op = ops[0]
        return apply_op(op, (input,), op.Params(tuple(range(input.ndim)), False))
    d = _dim(input, dim, name)
    _nonempty(input, d, name)
    op = ops[1]
    values, indices = apply_op(op, (input,), op.Params(d, bool(keepdim), ignore_nan))
    return result(values, indices)


def median(input: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Any:
    """The lower median: of all elements (a 0-d tensor), or ``(values, indices)`` along ``dim``.

    For an even count it is the lower of the two middle values (no averaging). A slice
    holding a NaN has median NaN (see :func:`nanmedian`). Without ``dim``, elements tied
    with the median share its gradient evenly; with ``dim`` the gradient goes to ``indices``.

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([[4.0, 1.0, 3.0, 2.0], [0.0, 9.0, 8.0, 7.0]])
        >>> fg.median(x).item(), x.median(dim=1).values.tolist(), x.median(1).indices.tolist()
        (3.0, [2.0, 7.0], [3, 3])
    """
    return _median("median", (MEDIAN_ALL, MEDIAN_DIM), MedianResult, input, dim, keepdim)


def nanmedian(input: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Any:
    """:func:`median` ignoring NaNs: the lower median of the numbers (NaN where a slice has none).

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([[2.0, float("nan"), 1.0], [float("nan")] * 3])
        >>> fg.nanmedian(x).item(), fg.nanmedian(x, 1).values.tolist()
        (1.0, [1.0, nan])
    """
    return _median("nanmedian", (NANMEDIAN_ALL, NANMEDIAN_DIM), NanmedianResult, input, dim, keepdim)


def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> ModeResult:
    """The most frequent value along ``dim`` and the index of its last occurrence: ``(values, indices)``.

    Among equally frequent values the smallest wins, as in PyTorch. The gradient goes to ``indices``.

    Example:
        >>> import fgraph as fg
        >>> values, indices = fg.mode(fg.tensor([[2.0, 1.0, 2.0, 1.0, 3.0], [5.0, 5.0, 0.0, 1.0, 5.0]]))
        >>> values.tolist(), indices.tolist()
        ([1.0, 5.0], [3, 4])
    """
    check_tensor(input, "mode")
    d = _dim(input, dim, "mode")
    _nonempty(input, d, "mode")
    values, indices = apply_op(MODE, (input,), MODE.Params(d, bool(keepdim)))
    return ModeResult(values, indices)


#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {
    "sort": sort, "argsort": argsort, "msort": msort, "topk": topk, "kthvalue": kthvalue, "median": median,
    "nanmedian": nanmedian, "mode": mode,
}
