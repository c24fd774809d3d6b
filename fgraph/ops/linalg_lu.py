"""LU decomposition with partial pivoting: ``linalg.lu_factor``, ``linalg.lu``, ``linalg.lu_solve``,
``lu_unpack`` (also ``fgraph.lu_unpack``, as ``torch.lu_unpack``) and ``linalg.lu_factor_ex``.

``A = P L U`` with ``P`` a permutation, ``L`` unit lower triangular (``m x k``) and ``U`` upper
(``k x n``), ``k = min(m, n)``. ``lu_factor`` returns them packed (``LU = L - I + U``) with
LAPACK's 1-based int32 ``pivots`` (row ``i`` was swapped with row ``pivots[i] - 1``), as PyTorch.

``lu_factor`` is the one primitive. Its derivative is PyTorch's ``linalg_lu_backward`` written
with fgraph's triangular solves (square, wide and tall cases), so second derivatives work; for
square ``A``::

    gA = P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T

``lu`` and ``lu_unpack`` are masks of the packed factors and a permutation matrix built from
``pivots`` (no gradient); ``lu_solve`` is two triangular solves and that permutation, so it is
differentiable in ``LU`` and ``B``.

Example:
    >>> import fgraph as fg
    >>> A = fg.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> P, L, U = fg.linalg.lu(A)
    >>> (P @ L @ U - A).abs().max().item() < 1e-6, fg.linalg.lu_factor(A).pivots.tolist()
    (True, [2, 2])
"""
from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
from jax import lax

from fgraph.errors import OpError
from fgraph.ops._declare import apply_op, apply_unary, declare
from fgraph.ops._linalg_util import broadcast_batch, check_matrix, check_same_dtype, check_tensor, tril_mask
from fgraph.ops.linalg import matmul
from fgraph.ops.linalg_solve import solve_triangular
from fgraph.ops.shape import cat
from fgraph.tensor import Tensor, _wrap


def _lu_forward(a):
    lu, pivots, _ = lax.linalg.lu(a)
    return lu, (pivots + 1).astype(jnp.int32)


def _permutation_forward(pivots, *, m, dtype):
    """``P`` (``m x m``) with ``A = P L U`` from 1-based ``pivots``."""
    perm = lax.linalg.lu_pivots_to_permutation(pivots - 1, m)
    return (jnp.arange(m)[:, None] == perm[..., None, :]).astype(dtype)


PERMUTATION = declare("linalg_lu_permutation", _permutation_forward, None, params=("m", "dtype"),
                      differentiable=False)


def _permutation(pivots: Tensor, m: int, dtype) -> Tensor:
    return apply_unary(PERMUTATION, pivots, PERMUTATION.Params(m, jnp.dtype(dtype)))


def _unpack(lu: Tensor) -> tuple[Tensor, Tensor]:
    """``(L, U)`` from packed factors, differentiably (masks)."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    low = lu[..., :, :k] * tril_mask(lu, m, k, diagonal=0.0) + _wrap(jnp.eye(m, k, dtype=lu.dtype))
    up = lu[..., :k, :] * tril_mask(lu, k, n, upper=True)
    return low, up


def _lu_rule(ctx, g):
    glu, _ = g
    lu, pivots = ctx.result
    m, n = lu.shape[-2:]
    k = min(m, n)
    low, up = _unpack(lu)
    gl = glu[..., :, :k] * tril_mask(glu, m, k, diagonal=0.0)  # the strictly lower part of L is stored
    gu = glu[..., :k, :] * tril_mask(glu, k, n, upper=True)
    triu_kk = tril_mask(glu, k, k, upper=True)
    strict_kk = tril_mask(glu, k, k, diagonal=0.0)
    if m == n:
        ga = matmul(low.mT, gl) * strict_kk + matmul(gu, up.mT) * triu_kk
        ga = solve_triangular(up.mT, ga, upper=False, left=False)
        ga = solve_triangular(low.mT, ga, upper=True, unitriangular=True)
    elif m < n:  # wide: U = [U1 | U2]
        u1 = up[..., :, :k]
        ga = (matmul(low.mT, gl) - matmul(gu, up.mT)) * strict_kk
        ga = solve_triangular(u1.mT, ga, upper=False, left=False)
        ga = cat([ga + gu[..., :, :k], gu[..., :, k:]], -1)
        ga = solve_triangular(low.mT, ga, upper=True, unitriangular=True)
    else:  # tall: L = [L1; L2]
        l1 = low[..., :k, :]
        ga = (matmul(gu, up.mT) - matmul(low.mT, gl)) * triu_kk
        ga = solve_triangular(l1.mT, ga, upper=True, unitriangular=True)
        ga = cat([ga + gl[..., :k, :], gl[..., k:, :]], -2)
        ga = solve_triangular(up.mT, ga, upper=False, left=False)
    return (matmul(_permutation(pivots, m, ga.dtype), ga),)


LU_FACTOR = declare("linalg_lu_factor", _lu_forward, _lu_rule, save_result=True, num_outputs=2,
                    node_name="LinalgLuFactorExBackward0", real_only=True)


class LUFactorResult(NamedTuple):
    """``(LU, pivots)``, like ``torch.return_types.linalg_lu_factor``."""

    LU: Tensor
    pivots: Tensor


class LUFactorExResult(NamedTuple):
    """``(LU, pivots, info)``, like ``torch.return_types.linalg_lu_factor_ex``."""

    LU: Tensor
    pivots: Tensor
    info: Tensor


class LUResult(NamedTuple):
    """``(P, L, U)``, like ``torch.return_types.linalg_lu`` and ``lu_unpack``."""

    P: Tensor
    L: Tensor
    U: Tensor


def _check_pivot(pivot: bool, op: str) -> None:
    if not pivot:
        raise OpError(f"{op}: LU without pivoting (pivot=False) is not implemented (PyTorch has it on CUDA only); "
                      "use pivot=True.")


def lu_factor(A: Tensor, *, pivot: bool = True) -> LUFactorResult:
    """Packed LU factors and 1-based int32 pivots of a (batch of) ``m x n`` matrices, as
    ``torch.linalg.lu_factor``; differentiable in ``A`` (see the module docstring).

    Example:
        >>> import fgraph as fg
        >>> LU, pivots = fg.linalg.lu_factor(fg.tensor([[0.0, 1.0], [2.0, 0.0]]))
        >>> LU.tolist(), pivots.tolist()
        ([[2.0, 0.0], [0.0, 1.0]], [2, 2])
    """
    check_matrix(A, "linalg.lu_factor", "A")
    _check_pivot(pivot, "linalg.lu_factor")
    lu, pivots = apply_op(LU_FACTOR, (A,))
    return LUFactorResult(lu, pivots)


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False) -> LUFactorExResult:
    """:func:`lu_factor` plus ``info`` (int32): 0, or ``i`` when ``U[i-1, i-1]`` is exactly zero.

    Example:
        >>> import fgraph as fg
        >>> fg.linalg.lu_factor_ex(fg.tensor([[1.0, 1.0], [1.0, 1.0]])).info.item()
        2
    """
    lu, pivots = lu_factor(A, pivot=pivot)
    k = min(A.shape[-2:])
    zero = (lu.detach()[..., :k, :k] * _wrap(jnp.eye(k, dtype=lu.dtype))).sum(-1) == 0
    first = zero.int().argmax(-1) + 1
    info = (first * zero.any(-1).int()).int()
    if check_errors:
        from fgraph.ops.linalg_more import _checked

        _checked(info, "linalg.lu_factor_ex", "U has a zero pivot (the matrix is singular)")
    return LUFactorExResult(lu, pivots, info)


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True, unpack_pivots: bool = True) -> LUResult:
    """``(P, L, U)`` from :func:`lu_factor`'s packed output (as ``torch.lu_unpack``); ``L`` and ``U`` are
    differentiable in ``LU_data``. An output not asked for is an empty tensor.

    Example:
        >>> import fgraph as fg
        >>> P, L, U = fg.lu_unpack(*fg.linalg.lu_factor(fg.tensor([[0.0, 1.0], [2.0, 0.0]])))
        >>> P.tolist(), L.tolist()
        ([[0.0, 1.0], [1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]])
    """
    op = "lu_unpack"
    check_matrix(LU_data, op, "LU_data")
    check_tensor(LU_pivots, op, "LU_pivots")
    m, n = LU_data.shape[-2:]
    if LU_pivots.shape != LU_data.shape[:-2] + (min(m, n),) or jnp.issubdtype(LU_pivots.dtype, jnp.floating):
        raise OpError(f"{op}: LU_pivots must be an integer tensor of shape {LU_data.shape[:-2] + (min(m, n),)} "
                      f"(LU_data {LU_data.shape}), got {LU_pivots.dtype} of shape {LU_pivots.shape}.")
    empty = _wrap(jnp.zeros((0,), LU_data.dtype))
    low, up = _unpack(LU_data) if unpack_data else (empty, empty)
    perm = _permutation(LU_pivots, m, LU_data.dtype) if unpack_pivots else empty
    return LUResult(perm, low, up)


def lu(A: Tensor, *, pivot: bool = True) -> LUResult:
    """``(P, L, U)`` with ``A = P L U``, as ``torch.linalg.lu``; ``L`` and ``U`` are differentiable.

    Example:
        >>> import fgraph as fg
        >>> P, L, U = fg.linalg.lu(fg.ones(3, 2))
        >>> P.shape, L.shape, U.shape
        ((3, 3), (3, 2), (2, 2))
    """
    check_matrix(A, "linalg.lu", "A")
    _check_pivot(pivot, "linalg.lu")
    lu_data, pivots = apply_op(LU_FACTOR, (A,))
    return lu_unpack(lu_data, pivots)


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False) -> Tensor:
    """Solve ``A X = B`` from :func:`lu_factor`'s output (``A^H X = B`` with ``adjoint``, ``X A = B`` with
    ``left=False``), as ``torch.linalg.lu_solve``; differentiable in ``LU`` and ``B``.

    Example:
        >>> import fgraph as fg
        >>> A = fg.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> X = fg.linalg.lu_solve(*fg.linalg.lu_factor(A), fg.tensor([[5.0], [11.0]]))
        >>> [round(v, 4) for v in X.flatten().tolist()]
        [1.0, 2.0]
    """
    op = "linalg.lu_solve"
    check_matrix(LU, op, "LU", square=True)
    check_matrix(B, op, "B")
    check_same_dtype(LU, B, op, ("LU", "B"))
    n = LU.shape[-1]
    if pivots.shape != LU.shape[:-1]:
        raise OpError(f"{op}: pivots must have shape {LU.shape[:-1]} (LU {LU.shape}), got {pivots.shape}.")
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise OpError(f"{op}: incompatible shapes of LU {LU.shape} and B {B.shape}: B's "
                      f"{'rows' if left else 'columns'} must number {n}.")
    broadcast_batch(LU.shape[:-2], B.shape[:-2], op, ("LU", "B"))
    perm = _permutation(pivots, n, LU.dtype)
    if not left:  # X A = B  <=>  A^H X^H = B^H
        return lu_solve(LU, pivots, B.mT, adjoint=not adjoint).mT
    if adjoint:  # A^T = U^T L^T P^T:  X = P L^-T U^-T B
        y = solve_triangular(LU.mT, B, upper=False)
        y = solve_triangular(LU.mT, y, upper=True, unitriangular=True)
        return matmul(perm, y)
    y = solve_triangular(LU, matmul(perm.mT, B), upper=False, unitriangular=True)
    return solve_triangular(LU, y, upper=True)


__all__ = ["lu_unpack"]
