"""The ``torch.*`` spellings of the linear-algebra functions, and their Tensor methods.

``fgraph.det``, ``logdet``, ``slogdet``, ``inverse``, ``pinverse``, ``cholesky(input, upper)``,
``qr(input, some)`` and ``svd(input, some, compute_uv)`` behave as PyTorch's
top-level functions (``svd`` returns ``V``, not ``Vh``; ``qr``/``svd`` default to
the reduced forms). They are thin wrappers over ``fgraph.linalg``; the primitives
and their derivative rules live in :mod:`fgraph.ops.linalg_solve` and
:mod:`fgraph.ops.decompositions`.

Example:
    >>> import fgraph as fg
    >>> A = fg.tensor([[2.0, 0.0], [0.0, 4.0]])
    >>> A.det().item(), A.inverse().tolist(), fg.svd(A).V.shape
    (8.0, [[0.5, 0.0], [0.0, 0.25]], (2, 2))
"""
from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

from fgraph.ops import decompositions as _dec
from fgraph.ops import linalg_solve as _solve
from fgraph.ops._linalg_util import check_matrix
from fgraph.ops.linalg_solve import SlogdetResult, det, logdet
from fgraph.tensor import Tensor, _wrap


def slogdet(input: Tensor) -> SlogdetResult:
    """``(sign, logabsdet)`` of the determinant (as ``torch.slogdet``); see ``fgraph.linalg.slogdet``.

    Example:
        >>> import fgraph as fg
        >>> fg.slogdet(fg.tensor([[2.0, 0.0], [0.0, -1.0]])).sign.item()
        -1.0
    """
    return _solve.slogdet(input)


def inverse(input: Tensor) -> Tensor:
    """Matrix inverse (as ``torch.inverse``); see ``fgraph.linalg.inv``.

    Example:
        >>> import fgraph as fg
        >>> fg.inverse(fg.tensor([[4.0]])).item()
        0.25
    """
    return _solve.inv(input)


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """Pseudo-inverse with relative cutoff ``rcond`` (as ``torch.pinverse``); see ``fgraph.linalg.pinv``.

    Example:
        >>> import fgraph as fg
        >>> fg.pinverse(fg.tensor([[2.0, 0.0]])).tolist()
        [[0.5], [0.0]]
    """
    return _solve.pinv(input, rtol=rcond)


def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """Cholesky factor (as the older ``torch.cholesky``); see ``fgraph.linalg.cholesky``.

    Example:
        >>> import fgraph as fg
        >>> fg.cholesky(fg.tensor([[4.0, 2.0], [2.0, 2.0]])).tolist()
        [[2.0, 0.0], [1.0, 1.0]]
    """
    return _dec.cholesky(input, upper=upper)


def qr(input: Tensor, some: bool = True) -> _dec.QRResult:
    """QR decomposition (as the older ``torch.qr``): reduced with ``some=True``, else complete.

    Example:
        >>> import fgraph as fg
        >>> fg.qr(fg.ones(3, 2)).Q.shape, fg.qr(fg.ones(3, 2), some=False).Q.shape
        ((3, 2), (3, 3))
    """
    return _dec.qr(input, "reduced" if some else "complete")


class SVDResultV(NamedTuple):
    """``(U, S, V)``, like ``torch.return_types.svd``."""

    U: Tensor
    S: Tensor
    V: Tensor


def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> SVDResultV:
    """SVD as the older ``torch.svd``: ``input = U diag(S) V^T`` (note ``V``, not ``Vh``), reduced with
    ``some=True``; with ``compute_uv=False``, ``U`` and ``V`` are zero matrices of shapes ``(m, m)`` and
    ``(n, n)`` and only ``S`` is computed (as PyTorch).

    Example:
        >>> import fgraph as fg
        >>> U, S, V = fg.svd(fg.ones(3, 2))
        >>> U.shape, S.shape, V.shape
        ((3, 2), (2,), (2, 2))
    """
    if not compute_uv:
        check_matrix(input, "svd", "input")
        m, n = input.shape[-2:]
        batch = input.shape[:-2]
        u = _wrap(jnp.zeros(batch + (m, m), input.dtype))
        v = _wrap(jnp.zeros(batch + (n, n), input.dtype))
        return SVDResultV(u, _dec.svdvals(input), v)
    u, s, vh = _dec.svd(input, full_matrices=not some)
    return SVDResultV(u, s, vh.mT)


#: Exported as ``fgraph.<name>``.
__all__ = ["det", "logdet", "slogdet", "inverse", "pinverse", "cholesky", "qr", "svd"]
#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {"det": det, "logdet": logdet, "slogdet": slogdet, "inverse": inverse, "pinverse": pinverse,
                  "cholesky": cholesky, "qr": qr, "svd": svd}
