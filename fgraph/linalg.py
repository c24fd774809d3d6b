"""``fgraph.linalg``: the ``torch.linalg`` namespace.

Norms (``norm``, ``vector_norm``, ``matrix_norm``), inverses and solves (``inv``,
``solve``, ``solve_triangular``, ``pinv``), determinants (``det``, ``slogdet``),
decompositions (``cholesky``, ``qr``, ``eigh``, ``eigvalsh``, ``svd``, ``svdvals``) and
products (``matmul``, ``vecdot``, ``multi_dot``), and (see :mod:`fgraph.ops.linalg_more`,
:mod:`fgraph.ops.linalg_lu`, :mod:`fgraph.ops.linalg_eig`) ``matrix_exp``, ``lstsq``, ``eig``, ``eigvals``,
``lu``, ``lu_factor``, ``lu_solve``, ``matrix_rank``, ``cond``, ``householder_product``, ``tensorinv``,
``tensorsolve``, ``vander``, ``diagonal`` and the ``_ex`` variants, all differentiable to second order
with PyTorch's backward formulas (see :mod:`fgraph.ops.decompositions` for the
conditions, such as distinct eigenvalues for eigenvector gradients).

Example:
    >>> import fgraph as fg
    >>> A = fg.tensor([[4.0, 1.0], [1.0, 3.0]], requires_grad=True)
    >>> L = fg.linalg.cholesky(A)
    >>> (L @ L.mT - A).abs().sum().item() < 1e-6
    True
    >>> fg.linalg.norm(fg.tensor([3.0, 4.0])).item()
    5.0
"""
from __future__ import annotations

from typing import Sequence

from fgraph.ops.complex_parts import conj
from fgraph.ops.decompositions import EighResult, QRResult, SVDResult, cholesky, eigh, eigvalsh, qr, svd, svdvals
from fgraph.ops.linalg import matmul
from fgraph.ops.linalg_norms import matrix_norm, norm, vector_norm
from fgraph.ops.products import linalg_cross as cross, matrix_power
from fgraph.ops.linalg_solve import SlogdetResult, det, inv, pinv, slogdet, solve, solve_triangular
from fgraph.ops.linalg_eig import EigResult, eig, eigvals
from fgraph.ops.linalg_lu import LUFactorExResult, LUFactorResult, LUResult, lu, lu_factor, lu_factor_ex, lu_solve
from fgraph.ops.linalg_more import (CholeskyExResult, InvExResult, LstsqResult, SolveExResult, cholesky_ex, cond,
                                    diagonal, householder_product, inv_ex, lstsq, matrix_exp, matrix_rank, solve_ex,
                                    tensorinv, tensorsolve, vander)
from fgraph.tensor import Tensor


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """Dot products ``sum(conj(x) * y)`` of vectors along ``dim``, broadcasting the other dims.

    Example:
        >>> import fgraph as fg
        >>> fg.linalg.vecdot(fg.ones(2, 3), fg.tensor([1.0, 2.0, 3.0])).tolist()
        [6.0, 6.0]
    """
    return (conj(x) * y).sum(dim)


def multi_dot(tensors: Sequence[Tensor]) -> Tensor:
    """The product of a chain of matrices (the first and last may be vectors), left to right.

    Example:
        >>> import fgraph as fg
        >>> fg.linalg.multi_dot([fg.ones(2, 3), fg.ones(3, 4), fg.ones(4)]).tolist()
        [12.0, 12.0]
    """
    from fgraph.errors import OpError

    tensors = list(tensors)
    if len(tensors) < 2:
        raise OpError(f"linalg.multi_dot: expected at least 2 tensors, got {len(tensors)}.")
    for i, t in enumerate(tensors):
        allowed = (1, 2) if i in (0, len(tensors) - 1) else (2,)
        if not isinstance(t, Tensor) or t.ndim not in allowed:
            what = "1-D or 2-D" if allowed == (1, 2) else "2-D"
            shape = getattr(t, "shape", type(t).__name__)
            raise OpError(f"linalg.multi_dot: tensor {i} must be {what}, got {shape}.")
    out = tensors[0]
    for t in tensors[1:]:
        out = matmul(out, t)
    return out


__all__ = [
    "norm", "vector_norm", "matrix_norm",
    "inv", "solve", "solve_triangular", "pinv", "det", "slogdet",
    "cholesky", "qr", "eigh", "eigvalsh", "svd", "svdvals",
    "matmul", "vecdot", "multi_dot", "cross", "matrix_power",
    "SlogdetResult", "QRResult", "EighResult", "SVDResult",
    "eig", "eigvals", "lu", "lu_factor", "lu_factor_ex", "lu_solve", "matrix_exp", "lstsq", "matrix_rank", "cond",
    "householder_product", "tensorinv", "tensorsolve", "vander", "diagonal", "inv_ex", "cholesky_ex", "solve_ex",
    "EigResult", "LUResult", "LUFactorResult", "LUFactorExResult", "LstsqResult", "InvExResult", "CholeskyExResult",
    "SolveExResult",
]
