"""Norms: ``fgraph.linalg.vector_norm``, ``matrix_norm`` and ``norm`` (PyTorch's ``torch.linalg`` semantics).

``vector_norm`` is one primitive whose rule is PyTorch's ``norm_backward`` written
in fgraph ops (0 where the norm is 0 for ``ord = 2``; ties of the inf-norms share
the gradient evenly). ``matrix_norm`` is composed from it and ``svdvals``:
``'fro'`` is the 2-norm of the entries, ``'nuc'``/``2``/``-2`` the sum/max/min of the
singular values, ``1``/``-1`` the max/min column sum of ``|A|``, ``inf``/``-inf`` the
max/min row sum. (``fgraph.norm``, the older ``torch.norm``, belongs to the reductions.)
A complex input's norm is the norm of ``|z|`` (real, as in PyTorch); its gradient goes through
``abs``, so it follows PyTorch's complex convention.

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([[3.0, 4.0], [0.0, 0.0]])
    >>> fg.linalg.vector_norm(x, dim=1).tolist(), fg.linalg.matrix_norm(x, 1).item()
    ([5.0, 0.0], 4.0)
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

import jax.numpy as jnp

from fgraph.errors import OpError
from fgraph.ops._declare import apply_unary, declare
from fgraph.ops._linalg_util import check_floating, check_tensor
from fgraph.ops.decompositions import svdvals
from fgraph.ops.elementwise import abs as fg_abs
from fgraph.ops.elementwise import eq, logical_or, ne, pow, sign, to_dtype, where
from fgraph.ops.reduction import expand_reduced, normalize_dims
from fgraph.tensor import Tensor

Ord = Union[int, float, str]
INF = math.inf


def _vector_norm_forward(x, *, ord, dims, keepdim):
    a = jnp.abs(x)
    if ord == INF:
        return jnp.max(a, axis=dims, keepdims=keepdim)
    if ord == -INF:
        return jnp.min(a, axis=dims, keepdims=keepdim)
    if ord == 0:
        return jnp.sum(x != 0, axis=dims, keepdims=keepdim).astype(x.dtype)
    if ord == 1:
        return jnp.sum(a, axis=dims, keepdims=keepdim)
    if ord == 2:
        return jnp.sqrt(jnp.sum(x * x, axis=dims, keepdims=keepdim))
    return jnp.sum(a ** ord, axis=dims, keepdims=keepdim) ** (1.0 / ord)


def _vector_norm_rule(ctx, g):
    """PyTorch's ``norm_backward`` (real inputs)."""
    (x,) = ctx.inputs
    p = ctx.params
    shape = ctx.shapes[0]
    if p.ord == 0:
        return (x * 0.0,)
    g = expand_reduced(g, shape, p.dims, p.keepdim)
    if p.ord == 1:
        return (sign(x) * g,)
    norm = expand_reduced(ctx.result, shape, p.dims, p.keepdim)
    zero_norm = eq(norm, 0)
    if p.ord == 2:
        return (where(zero_norm, 0.0, x * (g / where(zero_norm, 1.0, norm))),)
    if math.isinf(p.ord):  # shared evenly by the elements that attain the max (min); NaNs count as attaining
        ax = fg_abs(x)
        hit = to_dtype(logical_or(eq(ax, norm), ne(ax, ax)), x.dtype)
        count = expand_reduced(hit.sum(p.dims, keepdim=p.keepdim), shape, p.dims, p.keepdim)
        return (sign(x) * hit * (g / count),)
    safe_norm = pow(where(zero_norm, 1.0, norm), p.ord - 1)
    if p.ord < 1:  # |x|^(p-1) blows up at x == 0: 0 there, as PyTorch
        zero_x = eq(x, 0)
        ax = where(zero_x, 1.0, fg_abs(x))
        return (where(zero_x, 0.0, sign(x) * pow(ax, p.ord - 1) * g / safe_norm),)
    if p.ord < 2:
        grad = sign(x) * pow(fg_abs(x), p.ord - 1) * g / safe_norm
    else:
        grad = x * pow(fg_abs(x), p.ord - 2) * g / safe_norm
    return (where(zero_norm, 0.0, grad),)


VECTOR_NORM = declare("linalg_vector_norm", _vector_norm_forward, _vector_norm_rule,
                      params=("ord", "dims", "keepdim"), save_inputs=True, save_result=True, real_only=True)


def _number(ord: Any, op: str) -> float:
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise OpError(f"{op}: ord must be a number (int, float, inf or -inf), got {ord!r}.")
    return float(ord)


def _cast(x: Tensor, dtype: Any, op: str) -> Tensor:
    if dtype is not None:
        x = to_dtype(x, dtype)
    if x.dtype.kind != "c":
        check_floating(x, op, "input")
    return x


def vector_norm(x: Tensor, ord: Ord = 2, dim: Union[int, Sequence[int], None] = None, keepdim: bool = False, *,
                dtype: Any = None) -> Tensor:
    """``(sum |x|^ord)^(1/ord)`` over ``dim`` (all of ``x`` by default); ``ord`` may be ``inf``
    (max ``|x|``), ``-inf`` (min), ``0`` (number of nonzeros) or any other number.

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([3.0, -4.0])
        >>> fg.linalg.vector_norm(x).item(), fg.linalg.vector_norm(x, 1).item(), fg.linalg.vector_norm(x, float("inf")).item()
        (5.0, 7.0, 4.0)
    """
    op = "linalg.vector_norm"
    check_tensor(x, op, "x")
    x = _cast(x, dtype, op)
    p = _number(ord, op)
    dims = normalize_dims(dim, x.ndim, op)
    if p < 0 and any(x.shape[d] == 0 for d in dims):
        raise OpError(f"{op}: a norm of order {ord} over an empty dimension is undefined (shape {x.shape}, dim {dim}).")
    if math.isinf(p) and any(x.shape[d] == 0 for d in dims):
        raise OpError(f"{op}: the inf-norm over an empty dimension is undefined (shape {x.shape}, dim {dim}).")
    return vector_norm_of(x, p, dims, keepdim)


def vector_norm_of(x: Tensor, p: float, dims: tuple[int, ...], keepdim: bool) -> Tensor:
    """The vector-norm primitive on checked arguments: ``dims`` normalized, ``p`` a number.

    ``fg.norm``, ``F.normalize``, ``F.cosine_similarity`` and ``F.pairwise_distance`` share it.
    """
    p = int(p) if float(p).is_integer() else float(p)
    if x.dtype.kind == "c":
        x = fg_abs(x)
    return apply_unary(VECTOR_NORM, x, VECTOR_NORM.Params(p, tuple(dims), bool(keepdim)))


def _matrix_dims(dim: Sequence[int], ndim: int, op: str) -> tuple[int, int]:
    try:
        d0, d1 = dim
    except (TypeError, ValueError):
        raise OpError(f"{op}: dim must be a pair of dimensions, got {dim!r}.") from None
    if ndim < 2:
        raise OpError(f"{op}: the input must have at least 2 dimensions (a matrix), got {ndim}.")
    out = []
    for d in (d0, d1):
        if not isinstance(d, int) or not -ndim <= d < ndim:
            raise IndexError(f"{op}: dim {d} is out of range for a tensor with {ndim} dimensions.")
        out.append(d % ndim)
    if out[0] == out[1]:
        raise OpError(f"{op}: dims must be different, got {dim!r}.")
    return out[0], out[1]


def matrix_norm(A: Tensor, ord: Ord = "fro", dim: tuple[int, int] = (-2, -1), keepdim: bool = False, *,
                dtype: Any = None) -> Tensor:
    """Matrix norm over the two dims ``dim``: ``ord`` in ``'fro'``, ``'nuc'``, ``inf``, ``-inf``, ``1``,
    ``-1``, ``2``, ``-2`` (as ``torch.linalg.matrix_norm``).

    Example:
        >>> import fgraph as fg
        >>> A = fg.tensor([[1.0, -2.0], [3.0, 4.0]])
        >>> fg.linalg.matrix_norm(A, float("inf")).item(), fg.linalg.matrix_norm(A, -1).item()
        (7.0, 4.0)
    """
    op = "linalg.matrix_norm"
    check_tensor(A, op, "A")
    A = _cast(A, dtype, op)
    d0, d1 = _matrix_dims(dim, A.ndim, op)
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord == "nuc" or ord in (2, -2):
        rest = [d for d in range(A.ndim) if d not in (d0, d1)]
        s = svdvals(A.permute(*rest, d0, d1))
        if ord == "nuc":
            out = s.sum(-1)
        else:
            if A.shape[d0] == 0 or A.shape[d1] == 0:
                raise OpError(f"{op}: the {ord}-norm of an empty matrix (shape {A.shape}) is undefined.")
            out = vector_norm(s, INF if ord == 2 else -INF, -1)
    elif ord in (1, -1, INF, -INF):
        summed, other = (d0, d1) if ord in (1, -1) else (d1, d0)  # 1: column sums; inf: row sums
        if A.shape[other] == 0:
            raise OpError(f"{op}: the {ord}-norm of an empty matrix (shape {A.shape}) is undefined.")
        sums = fg_abs(A).sum(summed, keepdim=True)
        out = vector_norm(sums, INF if ord > 0 else -INF, other, keepdim=True)
        out = out.squeeze((d0, d1))
    else:
        raise OpError(f"{op}: ord must be 'fro', 'nuc', inf, -inf, 1, -1, 2 or -2, got {ord!r}.")
    if keepdim:
        out = out.unsqueeze(min(d0, d1)).unsqueeze(max(d0, d1))
    return out


def norm(A: Tensor, ord: Optional[Ord] = None, dim: Union[int, Sequence[int], None] = None, keepdim: bool = False, *,
         dtype: Any = None) -> Tensor:
    """``torch.linalg.norm``: a vector norm when ``dim`` is an int (or one dim), a matrix norm when it
    is a pair; with ``dim=None``, the 2-norm of the flattened input if ``ord`` is None, else the
    vector norm of a 1-D or the matrix norm of a 2-D input.

    Example:
        >>> import fgraph as fg
        >>> A = fg.tensor([[3.0, 0.0], [0.0, 4.0]])
        >>> fg.linalg.norm(A).item(), fg.linalg.norm(A, "nuc").item(), fg.linalg.norm(A, 1, dim=1).tolist()
        (5.0, 7.0, [3.0, 4.0])
    """
    op = "linalg.norm"
    check_tensor(A, op, "A")
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None:
        dim = tuple(dim)
        if len(dim) == 1:
            return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
        if len(dim) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
        raise OpError(f"{op}: dim must be an int or a tuple of 1 or 2 ints, got {dim!r}.")
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    if A.ndim == 2:
        return matrix_norm(A, ord, (0, 1), keepdim, dtype=dtype)
    raise OpError(
        f"{op}: with ord={ord!r} and dim=None the input must be 1-D or 2-D, got shape {A.shape}; pass dim."
    )


__all__ = ["vector_norm", "matrix_norm", "norm"]
