"""Ops whose output shape depends on the values: unique, unique_consecutive, nonzero, argwhere, bincount.

They run eagerly only: the values are read on the host to size the result. Under
tracing (``jax.jit``, ``vmap``, ``fg.compile``) they raise an :class:`OpError` that
says so; a traced program can use fixed-size alternatives (``sort``, ``searchsorted``,
``count_nonzero``, ``scatter_add`` into a tensor of known length, ``where``). None of
them is differentiable: their outputs never require grad (PyTorch records ``unique``'s
values in the graph but has no derivative for it).

Example:
    >>> import fgraph as fg
    >>> values, counts = fg.unique(fg.tensor([3, 1, 3, 2]), return_counts=True)
    >>> values.tolist(), counts.tolist()
    ([1, 2, 3], [1, 1, 2])
    >>> fg.nonzero(fg.tensor([[0.0, 1.0], [2.0, 0.0]])).tolist()
    [[0, 1], [1, 0]]
"""
from __future__ import annotations

from typing import Any, Optional, Union

import jax.numpy as jnp
import numpy as np

from fgraph.errors import OpError
from fgraph.ops._index_checks import is_traced
from fgraph.ops.reduction import check_tensor
from fgraph.ops.reduction_minmax import _index_dtype
from fgraph.ops.sorting import _dim
from fgraph.tensor import Tensor, _wrap

__all__ = ["unique", "unique_consecutive", "nonzero", "argwhere", "bincount"]


def _host(input: Tensor, op: str, fix: str) -> np.ndarray:
    """``input``'s values as a NumPy array, or a clear error under tracing."""
    check_tensor(input, op)
    if is_traced(input):
        raise OpError(
            f"{op}: the size of the result depends on the values of the input (shape {tuple(input.shape)}), "
            f"so {op} runs eagerly only, not under tracing (jax.jit, vmap, fg.compile). Call it outside the "
            f"traced function, or {fix}."
        )
    return np.asarray(input._array)


def _index(a: Any) -> Tensor:
    return _wrap(jnp.asarray(np.asarray(a, dtype=np.int64), _index_dtype()))


def _results(values: np.ndarray, dtype: Any, inverse: Optional[np.ndarray], counts: Optional[np.ndarray]) -> Any:
    out = _wrap(jnp.asarray(values, dtype))
    if inverse is None and counts is None:
        return out
    return (out,) + tuple(_index(a) for a in (inverse, counts) if a is not None)


def _runs(flat: np.ndarray) -> np.ndarray:
    """Where a new run of equal rows starts (``flat`` has one row per element along the dim)."""
    starts = np.ones(len(flat), bool)
    if len(flat) > 1:
        starts[1:] = np.any(flat[1:] != flat[:-1], axis=tuple(range(1, flat.ndim)))
    return starts


def _grouped(a: np.ndarray, d: Optional[int], order: np.ndarray) -> tuple:
    """Rows of ``a`` along ``d`` (every element when ``d`` is None), permuted by ``order``, as a 2-D array."""
    rows = a.reshape(-1, 1) if d is None else np.moveaxis(a, d, 0).reshape(a.shape[d], -1)
    return rows[order]


def _unique(op: str, input: Tensor, consecutive: bool, return_inverse: bool, return_counts: bool,
            dim: Optional[int]) -> Any:
    a = _host(input, op, "use sort and compare neighbours")
    d = None if dim is None else _dim(input, dim, op)
    if d is not None and a.ndim == 0:
        d = None
    n = a.size if d is None else a.shape[d]
    if consecutive:
        order = np.arange(n)
    elif d is None:
        order = np.argsort(a.reshape(-1), kind="stable")
    else:  # rows ordered lexicographically, as PyTorch does
        rows = np.moveaxis(a, d, 0).reshape(n, -1)
        order = np.lexsort(rows.T[::-1]) if rows.shape[1] else np.arange(n)
    rows = _grouped(a, d, order)
    starts = _runs(rows)
    run_id = np.cumsum(starts) - 1
    picked = rows[starts]
    if d is None:
        values = picked.reshape(-1)
    else:
        rest = np.moveaxis(a, d, 0).shape[1:]
        values = np.moveaxis(picked.reshape((len(picked),) + rest), 0, d)
    inverse = counts = None
    if return_inverse:
        inverse = np.empty(n, np.int64)
        inverse[order] = run_id
        if d is None:
            inverse = inverse.reshape(a.shape)
    if return_counts:
        counts = np.diff(np.append(np.flatnonzero(starts), n))
    return _results(values, input.dtype, inverse, counts)


def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,
           dim: Optional[int] = None) -> Any:
    """The distinct elements of ``input`` (or distinct slices along ``dim``), sorted.

    With ``return_inverse``/``return_counts`` a tuple ``(output, inverse_indices,
    counts)`` (the requested ones): ``output[inverse_indices]`` rebuilds ``input`` (along
    ``dim``). The result is always sorted (``sorted=False`` leaves the order open in
    PyTorch); NaNs are all distinct. Eager only; not differentiable.

    Example:
        >>> import fgraph as fg
        >>> out, inverse = fg.unique(fg.tensor([[3, 1], [1, 2]]), return_inverse=True)
        >>> out.tolist(), inverse.tolist()
        ([1, 2, 3], [[2, 0], [0, 1]])
        >>> fg.tensor([[1, 2], [1, 2], [0, 5]]).unique(dim=0).tolist()
        [[0, 5], [1, 2]]
    """
    return _unique("unique", input, False, return_inverse, return_counts, dim)


def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: Optional[int] = None) -> Any:
    """Collapse each run of equal consecutive elements (or slices along ``dim``) to one. Eager only.

    Example:
        >>> import fgraph as fg
        >>> out, counts = fg.unique_consecutive(fg.tensor([1, 1, 2, 2, 3, 1, 1]), return_counts=True)
        >>> out.tolist(), counts.tolist()
        ([1, 2, 3, 1], [2, 2, 1, 2])
    """
    return _unique("unique_consecutive", input, True, return_inverse, return_counts, dim)


def nonzero(input: Tensor, *, as_tuple: bool = False) -> Union[Tensor, tuple]:
    """Indices of the non-zero elements: an ``(n, input.ndim)`` int64 tensor, or with ``as_tuple`` one
    1-D tensor per dimension (a 0-d input counts as 1-D there). Eager only.

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([[0, 3], [4, 0]])
        >>> fg.nonzero(x).tolist(), [t.tolist() for t in x.nonzero(as_tuple=True)]
        ([[0, 1], [1, 0]], [[0, 1], [1, 0]])
    """
    a = _host(input, "nonzero", "use a mask with where(), or count_nonzero")
    if as_tuple:
        return tuple(_index(i) for i in np.nonzero(np.atleast_1d(a)))
    return _argwhere(a)


def _argwhere(a: np.ndarray) -> Tensor:
    return _index(np.argwhere(a) if a.ndim else np.zeros((int(a != 0), 0), np.int64))


def argwhere(input: Tensor) -> Tensor:
    """Indices of the non-zero elements, one row per element: ``nonzero(input)``. Eager only.

    Example:
        >>> import fgraph as fg
        >>> fg.argwhere(fg.tensor([0.0, 2.0, 5.0])).tolist()
        [[1], [2]]
    """
    a = _host(input, "argwhere", "use a mask with where(), or count_nonzero")
    return _argwhere(a)


def bincount(input: Tensor, weights: Optional[Tensor] = None, minlength: int = 0) -> Tensor:
    """How often each value ``0..max(input)`` occurs in the 1-D non-negative integer ``input``
    (at least ``minlength`` bins), or with ``weights`` the sum of the weights per value.

    int64 counts; with weights their dtype (float32 stays float32, anything else gives
    float64, as in PyTorch). Eager only; not differentiable.

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([0, 2, 2, 5])
        >>> fg.bincount(x).tolist(), x.bincount(fg.tensor([1.0, 0.5, 0.5, 2.0]), minlength=7).tolist()
        ([1, 0, 2, 0, 0, 1], [1.0, 0.0, 1.0, 0.0, 0.0, 2.0, 0.0])
    """
    op = "bincount"
    a = _host(input, op, "use scatter_add into a tensor of known length")
    if a.ndim != 1 or not np.issubdtype(a.dtype, np.integer) or (a.size and a.min() < 0):
        raise OpError(
            f"{op}: input must be a 1-D tensor of non-negative integers, got shape {tuple(a.shape)} and dtype "
            f"{a.dtype}" + (f" with minimum {a.min()}" if a.size and np.issubdtype(a.dtype, np.integer) else "") + "."
        )
    if isinstance(minlength, bool) or not isinstance(minlength, int) or minlength < 0:
        raise OpError(f"{op}: minlength must be a non-negative int, got {minlength!r}.")
    if weights is None:
        return _index(np.bincount(a, minlength=minlength))
    w = _host(weights, op, "use scatter_add into a tensor of known length")
    if not isinstance(weights, Tensor) or tuple(w.shape) != tuple(a.shape):
        raise OpError(f"{op}: weights must have the input's shape {tuple(a.shape)}, got {tuple(w.shape)}.")
    dtype = np.float32 if w.dtype == np.float32 else np.float64
    counts = np.bincount(a, weights=w.astype(np.float64), minlength=minlength).astype(dtype)
    return _wrap(jnp.asarray(counts))


#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {
    "unique": unique, "unique_consecutive": unique_consecutive, "nonzero": nonzero, "argwhere": argwhere,
    "bincount": bincount,
}
