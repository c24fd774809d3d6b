"""Tensors assembled from pieces: meshgrid, cartesian_prod, combinations, block_diag, vander, diff,
and the index sets triu_indices / tril_indices.

All differentiable ones are composites of fgraph ops (reshape/expand, index_select, cat,
integer powers, slicing and subtraction), so they differentiate to any order with the
gradients PyTorch gives. ``triu_indices``/``tril_indices`` are integer Tensors computed
from their static sizes; they never require grad.

Example:
    >>> import fgraph as fg
    >>> xs, ys = fg.meshgrid(fg.tensor([1.0, 2.0]), fg.tensor([3.0, 4.0, 5.0]), indexing="ij")
    >>> xs.shape, fg.triu_indices(2, 3).tolist()
    ((2, 3), [[0, 0, 0, 1, 1], [0, 1, 2, 1, 2]])
    >>> fg.diff(fg.tensor([1.0, 4.0, 9.0, 16.0])).tolist()
    [3.0, 5.0, 7.0]
"""
from __future__ import annotations

import itertools
import warnings
from typing import Any, Optional

import jax.numpy as jnp
import numpy as np

from fgraph._dtypes import canonical_dtype, x64_enabled
from fgraph.errors import OpError
from fgraph.ops._linalg_util import check_tensor
from fgraph.ops.elementwise import ne, to_dtype
from fgraph.ops.indexing import index_select
from fgraph.ops.movement import flip
from fgraph.ops.shape import cat, expand, narrow, reshape, stack
from fgraph.tensor import Tensor, _place, _wrap


def _tensors(tensors: tuple, op: str) -> tuple:
    """Varargs or one list of Tensors."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for i, t in enumerate(tensors):
        check_tensor(t, op, f"tensor {i}")
    return tensors


def _long() -> np.dtype:
    return np.dtype("int64" if x64_enabled() else "int32")


# -- grids ---------------------------------------------------------------------------------------------------
def meshgrid(*tensors: Tensor, indexing: Optional[str] = None) -> tuple:
    """Coordinate grids of 0-D/1-D tensors: with ``indexing="ij"`` output ``i`` varies along dim ``i``;
    ``"xy"`` swaps the first two dims (Cartesian, NumPy's default). Without ``indexing`` it is ``"ij"``
    and, as PyTorch, a warning asks to pass it.

    Example:
        >>> import fgraph as fg
        >>> x, y = fg.meshgrid(fg.tensor([1.0, 2.0]), fg.tensor([3.0, 4.0, 5.0]), indexing="xy")
        >>> x.shape, x.tolist()[0]
        ((3, 2), [1.0, 2.0])
    """
    tensors = _tensors(tensors, "meshgrid")
    if indexing is None:
        warnings.warn("meshgrid: in an upcoming release, it will be required to pass the indexing argument "
                      "(as torch.meshgrid); using indexing='ij'.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise OpError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}.")
    if not tensors:
        raise OpError("meshgrid: expects a non-empty list of tensors.")
    for i, t in enumerate(tensors):
        if t.ndim > 1:
            raise OpError(f"meshgrid: expected 0-D or 1-D tensors, but tensor {i} has shape {t.shape}.")
        if t.dtype != tensors[0].dtype:
            raise OpError(f"meshgrid: expects all tensors to have the same dtype, got {tensors[0].dtype} and "
                          f"{t.dtype} (tensor {i}).")
    sizes = [int(np.prod(t.shape, dtype=np.int64)) for t in tensors]
    order = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) > 1:
        order[0], order[1] = 1, 0
    shape = tuple(sizes[k] for k in order)
    out = []
    for i, t in enumerate(tensors):
        pos = order.index(i)
        view = tuple(sizes[i] if d == pos else 1 for d in range(len(shape)))
        out.append(expand(reshape(t, view), shape))
    return tuple(out)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """All tuples of one element from each 1-D tensor, as rows ``(n_1 * ... * n_k, k)`` in
    lexicographic order; one tensor is returned as it is.

    Example:
        >>> import fgraph as fg
        >>> fg.cartesian_prod(fg.tensor([1, 2]), fg.tensor([3, 4])).tolist()
        [[1, 3], [1, 4], [2, 3], [2, 4]]
    """
    tensors = _tensors(tensors, "cartesian_prod")
    for i, t in enumerate(tensors):
        if t.ndim != 1:
            raise OpError(f"cartesian_prod: expected 1-D tensors, but tensor {i} has shape {t.shape}.")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([reshape(g, (-1,)) for g in grids], 1)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The length-``r`` combinations of the elements of a 1-D tensor, as rows (``itertools.combinations``
    order; ``with_replacement`` as ``itertools.combinations_with_replacement``).

    Example:
        >>> import fgraph as fg
        >>> fg.combinations(fg.tensor([1.0, 2.0, 3.0])).tolist()
        [[1.0, 2.0], [1.0, 3.0], [2.0, 3.0]]
    """
    check_tensor(input, "combinations", "input")
    if input.ndim != 1:
        raise OpError(f"combinations: expect a 1-D vector, but got shape {input.shape}.")
    if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or r < 0:
        raise OpError(f"combinations: r must be a non-negative int, got {r!r}.")
    r = int(r)
    if r == 0:  # PyTorch returns an empty vector
        return index_select(input, 0, _wrap(jnp.zeros((0,), jnp.int32)))
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = np.array(list(pick(range(input.shape[0]), r)), dtype=np.int32).reshape(-1)
    return reshape(index_select(input, 0, _wrap(jnp.asarray(idx))), (-1, r))


def block_diag(*tensors: Tensor) -> Tensor:
    """A block-diagonal matrix of 0-D, 1-D (one row) and 2-D tensors; the dtype is their promoted dtype.

    Example:
        >>> import fgraph as fg
        >>> fg.block_diag(fg.tensor([[1.0, 2.0]]), fg.tensor(3.0)).tolist()
        [[1.0, 2.0, 0.0], [0.0, 0.0, 3.0]]
    """
    tensors = _tensors(tensors, "block_diag")
    mats = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise OpError(f"block_diag: input tensors must have 2 or fewer dimensions, but tensor {i} has shape "
                          f"{t.shape}.")
        mats.append(reshape(t, (1, -1) if t.ndim == 1 else (1, 1)) if t.ndim < 2 else t)
    dtype = jnp.result_type(*[t.dtype for t in tensors]) if tensors else jnp.float32
    if not mats:
        return _wrap(jnp.zeros((1, 0), dtype))
    cols = sum(m.shape[1] for m in mats)
    rows, start = [], 0
    for m in mats:
        m = m if m.dtype == dtype else to_dtype(m, dtype)
        pieces = [_wrap(jnp.zeros((m.shape[0], start), dtype)), m,
                  _wrap(jnp.zeros((m.shape[0], cols - start - m.shape[1]), dtype))]
        rows.append(cat(pieces, 1))
        start += m.shape[1]
    return cat(rows, 0)


def vander(x: Tensor, N: Optional[int] = None, increasing: bool = False) -> Tensor:
    """Vandermonde matrix of a 1-D tensor: columns ``x**(N-1), ..., x, 1`` (``increasing``: ``1, x, ...``);
    ``N`` defaults to ``len(x)``. Integer inputs give int64 (as PyTorch).

    Example:
        >>> import fgraph as fg
        >>> fg.vander(fg.tensor([1.0, 2.0, 3.0])).tolist()
        [[1.0, 1.0, 1.0], [4.0, 2.0, 1.0], [9.0, 3.0, 1.0]]
    """
    check_tensor(x, "vander", "x")
    if x.ndim != 1:
        raise OpError(f"vander: x must be a one-dimensional tensor, got shape {x.shape}.")
    n = x.shape[0] if N is None else N
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise OpError(f"vander: N must be a non-negative int, got {N!r}.")
    if jnp.issubdtype(x.dtype, jnp.integer) or x.dtype == jnp.bool_:
        x = to_dtype(x, _long())
    if n == 0:
        return _wrap(jnp.zeros((x.shape[0], 0), x.dtype))
    cols = [_wrap(jnp.ones(x.shape, x.dtype))] + [x if k == 1 else x ** k for k in range(1, int(n))]
    out = stack(cols, 1)
    return out if increasing else flip(out, (1,))


def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Optional[Tensor] = None,
         append: Optional[Tensor] = None) -> Tensor:
    """The ``n``-th forward difference along ``dim``, after concatenating ``prepend`` and ``append`` there
    (booleans: ``!=``); ``n = 0`` returns ``input`` as it is (without them), as PyTorch.

    Example:
        >>> import fgraph as fg
        >>> fg.diff(fg.tensor([1.0, 4.0, 9.0]), n=2, prepend=fg.tensor([0.0])).tolist()
        [2.0, 2.0]
    """
    check_tensor(input, "diff", "input")
    if input.ndim == 0:
        raise OpError("diff: expects input to be at least one-dimensional, got a 0-D tensor.")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise OpError(f"diff: order must be a non-negative int, got n={n!r}.")
    if not isinstance(dim, (int, np.integer)) or not -input.ndim <= dim < input.ndim:
        raise IndexError(f"diff: dim {dim} is out of range for shape {input.shape} "
                         f"(expected a value in [{-input.ndim}, {input.ndim - 1}]).")
    d = int(dim) % input.ndim
    if n == 0:  # PyTorch returns the input itself, without prepend/append
        return input
    parts = []
    for t, name in ((prepend, "prepend"), (input, None), (append, "append")):
        if t is None:
            continue
        if name is not None:
            check_tensor(t, "diff", name)
            other = tuple(s for i, s in enumerate(t.shape) if i != d)
            if t.ndim != input.ndim or other != tuple(s for i, s in enumerate(input.shape) if i != d):
                raise OpError(f"diff: {name} of shape {t.shape} must have the same number of dimensions as input "
                              f"{input.shape} and the same sizes except in dim {dim}.")
        parts.append(t)
    x = cat(parts, d) if len(parts) > 1 else input
    for _ in range(min(int(n), x.shape[d])):
        length = x.shape[d] - 1
        hi, lo = narrow(x, d, 1, length), narrow(x, d, 0, length)
        x = ne(hi, lo) if x.dtype == jnp.bool_ else hi - lo
    return x


# -- index sets ----------------------------------------------------------------------------------------------
def _indices(op: str, row: int, col: int, offset: int, dtype: Any, upper: bool, device: Any = None) -> Tensor:
    for v, name in ((row, "row"), (col, "col"), (offset, "offset")):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{op}: {name} must be an int, got {type(v).__name__}.")
    if row < 0 or col < 0:
        raise OpError(f"{op}: row and col must be non-negative, got row={row}, col={col}.")
    dt = canonical_dtype(dtype, op) or _long()
    if dt not in (np.dtype("int32"), np.dtype("int64")):
        raise OpError(f"{op}: dtype must be int32 or int64 (fgraph.long), got {dt}.")
    pick = np.triu_indices if upper else np.tril_indices
    rows, cols = pick(int(row), int(offset), int(col))
    out = _wrap(jnp.asarray(np.stack([rows, cols]).astype(dt)))
    return out if device is None else _place(out, device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Tensor:
    """The ``(2, K)`` row and column indices of the upper triangle of a ``row x col`` matrix (on and above
    diagonal ``offset``), row by row. Not differentiable.

    Example:
        >>> import fgraph as fg
        >>> fg.triu_indices(3, 3, 1).tolist()
        [[0, 0, 1], [1, 2, 2]]
    """
    return _indices("triu_indices", row, col, offset, dtype, upper=True, device=device)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Tensor:
    """The ``(2, K)`` row and column indices of the lower triangle of a ``row x col`` matrix (on and below
    diagonal ``offset``), row by row. Not differentiable.

    Example:
        >>> import fgraph as fg
        >>> fg.tril_indices(3, 3, -1).tolist()
        [[1, 2, 2], [0, 0, 1]]
    """
    return _indices("tril_indices", row, col, offset, dtype, upper=False, device=device)


#: Exported as ``fgraph.<name>``.
__all__ = ["meshgrid", "cartesian_prod", "combinations", "block_diag", "vander", "diff", "triu_indices",
           "tril_indices"]
#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {"diff": diff}
