"""PyTorch's older top-level linear algebra: ``lu``, ``triangular_solve``, ``cholesky_solve``,
``cholesky_inverse``, composites of :mod:`fgraph.linalg`'s ops (so differentiable to any order).

``torch.lu`` and ``torch.triangular_solve`` are deprecated in PyTorch in favour of
``linalg.lu_factor`` and ``linalg.solve_triangular``; they are here, with PyTorch's
argument order and return values, so code that calls them runs unchanged.

``cholesky_solve(B, L)`` reads only the lower (``upper=True``: upper) triangle of ``L``, so
its gradient for ``L`` lives on that triangle. PyTorch's formula differentiates ``L L^T`` as
if ``L`` were full and puts nonzero values on the other triangle too, which does not change
the result; the two agree on the triangle that is read.

Example:
    >>> import fgraph as fg
    >>> L = fg.tensor([[2.0, 0.0], [1.0, 1.0]])
    >>> fg.cholesky_solve(fg.tensor([[4.0], [3.0]]), L).tolist()   # (L L^T) x = b
    [[0.5], [1.0]]
"""
from __future__ import annotations

from typing import NamedTuple, Union

from fgraph.errors import OpError
from fgraph.ops._linalg_util import check_matrix, eye_like
from fgraph.ops.linalg_lu import LUFactorExResult, LUFactorResult, lu_factor, lu_factor_ex
from fgraph.ops.linalg_solve import solve_triangular
from fgraph.tensor import Tensor


class TriangularSolveResult(NamedTuple):
    """``(solution, cloned_coefficient)``, like ``torch.return_types.triangular_solve``."""

    solution: Tensor
    cloned_coefficient: Tensor


def lu(A: Tensor, pivot: bool = True, get_infos: bool = False) -> Union[LUFactorResult, LUFactorExResult]:
    """``torch.lu``: the packed LU factors and 1-based pivots of ``A`` (``linalg.lu_factor``), and with
    ``get_infos=True`` also ``info`` (``linalg.lu_factor_ex``). Unpack them with ``fg.lu_unpack``.

    Example:
        >>> import fgraph as fg
        >>> LU, pivots = fg.lu(fg.tensor([[0.0, 1.0], [2.0, 0.0]]))
        >>> pivots.tolist(), len(fg.tensor([[1.0]]).lu(get_infos=True))
        ([2, 2], 3)
    """
    if get_infos:
        return lu_factor_ex(A, pivot=pivot)
    return lu_factor(A, pivot=pivot)


def triangular_solve(b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False) -> TriangularSolveResult:
    """``torch.triangular_solve``: solve ``A X = b`` (``A^T X = b`` with ``transpose``) for a (batch of)
    upper (``upper=False``: lower) triangular ``A``; returns ``(solution, cloned_coefficient)``, the second a
    copy of ``A``. Prefer ``fg.linalg.solve_triangular(A, b, upper=...)``.

    Example:
        >>> import fgraph as fg
        >>> A = fg.tensor([[2.0, 1.0], [0.0, 1.0]])
        >>> fg.triangular_solve(fg.tensor([[3.0], [1.0]]), A).solution.tolist()
        [[1.0], [1.0]]
    """
    check_matrix(b, "triangular_solve", "b", complex_ok=True)
    check_matrix(A, "triangular_solve", "A", square=True, complex_ok=True)
    if transpose:  # A^T is triangular on the other side
        x = solve_triangular(A.mT, b, upper=not upper, unitriangular=unitriangular)
    else:
        x = solve_triangular(A, b, upper=upper, unitriangular=unitriangular)
    return TriangularSolveResult(x, A.clone())


def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:
    """Solve ``A X = B`` given the Cholesky factor of ``A``: ``A = L L^T`` (``upper=True``: ``A = U^T U``),
    as ``torch.cholesky_solve`` (note the order: right-hand side first).

    Example:
        >>> import fgraph as fg
        >>> U = fg.tensor([[2.0, 1.0], [0.0, 1.0]])
        >>> fg.cholesky_solve(fg.tensor([[4.0], [3.0]]), U, upper=True).tolist()   # (U^T U) x = b
        [[0.5], [1.0]]
    """
    check_matrix(B, "cholesky_solve", "B")
    check_matrix(L, "cholesky_solve", "L", square=True)
    if B.shape[-2] != L.shape[-1]:
        raise OpError(f"cholesky_solve: B {tuple(B.shape)} must have as many rows as L {tuple(L.shape)} has; "
                      "note the order: cholesky_solve(B, L).")
    if upper:
        y = solve_triangular(L.mT, B, upper=False)
        return solve_triangular(L, y, upper=True)
    y = solve_triangular(L, B, upper=False)
    return solve_triangular(L.mT, y, upper=True)


def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:
    """The inverse of ``A`` from its Cholesky factor (``A = L L^T``; ``upper=True``: ``A = U^T U``), as
    ``torch.cholesky_inverse``.

    Example:
        >>> import fgraph as fg
        >>> fg.cholesky_inverse(fg.tensor([[2.0, 0.0], [0.0, 1.0]])).tolist()
        [[0.25, 0.0], [0.0, 1.0]]
    """
    check_matrix(L, "cholesky_inverse", "L", square=True)
    eye = eye_like(L, L.shape[-1])
    return cholesky_solve(eye.expand(*L.shape), L, upper=upper)


__all__ = ["lu", "triangular_solve", "cholesky_solve", "cholesky_inverse"]
#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {"lu": lu, "triangular_solve": triangular_solve, "cholesky_solve": cholesky_solve,
                  "cholesky_inverse": cholesky_inverse}
