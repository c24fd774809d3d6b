"""Matrix decompositions: cholesky, qr, eigh, eigvalsh, svd, svdvals (``fgraph.linalg.*``).

Each is one primitive whose derivative rule is PyTorch's backward formula written
in fgraph ops (matmul, triangular solves, the saved factors), so second
derivatives work wherever PyTorch's do:

* ``cholesky``: ``gA = sym(L^-T Phi(L^T gL) L^-1)``, ``Phi`` = lower triangle with the
  diagonal halved;
* ``qr`` (reduced, or complete with ``m <= n``): ``gA = (gQ + Q copyltu(M)) R^-T``,
  ``M = R gR^T - gQ^T Q``; wide inputs (``m < n``) split ``A = [X | Y]`` as PyTorch does.
  ``mode='complete'`` with ``m > n`` and ``mode='r'`` are not differentiable (errors at backward);
* ``eigh``: ``gA = V (diag(gL) + skew(V^T gV) / E) V^T``, ``E_ij = L_j - L_i``;
* ``svd``: PyTorch's ``svd_backward`` (with ``full_matrices=True`` the extra columns of
  ``U``/rows of ``Vh`` get no gradient, as in PyTorch).

The eigenvector/singular-vector terms need distinct eigenvalues/singular values.
Deviation from PyTorch: where two of them coincide, those terms are taken as 0
instead of inf/nan, so gradients through eigenvalues or singular values alone
(the only ones that exist there) stay finite even though unused outputs get zero
gradients here rather than "undefined". A non-positive-definite input to
``cholesky`` gives nan instead of raising (raising would need a host round trip).
Real dtypes only.

Example:
    >>> import fgraph as fg
    >>> A = fg.tensor([[4.0, 2.0], [2.0, 3.0]], requires_grad=True)
    >>> fg.linalg.cholesky(A).tolist()
    [[2.0, 0.0], [1.0, 1.4142135381698608]]
    >>> fg.linalg.eigvalsh(fg.tensor([[2.0, 0.0], [0.0, 1.0]])).tolist()
    [1.0, 2.0]
"""
from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
from jax import lax

from fgraph.errors import GradError, OpError
from fgraph.ops._declare import apply_op, apply_unary, declare
from fgraph.ops._linalg_util import check_matrix, diag_embed, tril_mask
from fgraph.ops.elementwise import eq, where
from fgraph.ops.linalg import matmul
from fgraph.ops.linalg_solve import solve_triangular
from fgraph.ops.shape import cat
from fgraph.tensor import Tensor, _wrap


def _safe_div(x: Tensor, d: Tensor) -> Tensor:
    """``x / d`` with 0 where ``d == 0`` (and a finite derivative there)."""
    zero = eq(d, 0)
    return where(zero, 0.0, x / where(zero, 1.0, d))


# -- cholesky ------------------------------------------------------------------------------------------------
def _cholesky_forward(a):
    return jnp.tril(lax.linalg.cholesky(a, symmetrize_input=False))


def _cholesky_rule(ctx, g):
    low = ctx.result
    n = low.shape[-1]
    phi = matmul(low.mT, g) * tril_mask(g, n, diagonal=0.5)
    x = solve_triangular(low.mT, phi, upper=True)  # L^-T Phi
    x = solve_triangular(low, x, upper=False, left=False)  # ... L^-1
    return (0.5 * (x + x.mT),)


CHOLESKY = declare("linalg_cholesky", _cholesky_forward, _cholesky_rule, save_result=True,
                   node_name="LinalgCholeskyExBackward0", real_only=True)


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """Cholesky factor of a symmetric positive-definite ``A``: lower ``L`` with ``A = L L^T``, or
    upper ``U = L^T`` with ``upper=True``. Only the lower (upper) triangle of ``A`` is read; a
    matrix that is not positive definite gives nan.

    Example:
        >>> import fgraph as fg
        >>> fg.linalg.cholesky(fg.tensor([[4.0, 2.0], [2.0, 2.0]]), upper=True).tolist()
        [[2.0, 1.0], [0.0, 1.0]]
    """
    check_matrix(A, "linalg.cholesky", "A", square=True)
    if upper:
        return apply_unary(CHOLESKY, A.mT).mT
    return apply_unary(CHOLESKY, A)


# -- qr --------------------------------------------------------------------------------------------------------
def _qr_forward(a, *, mode):
    if mode == "r":
        return jnp.zeros((0,), a.dtype), jnp.linalg.qr(a, mode="r")
    q, r = jnp.linalg.qr(a, mode=mode)
    return q, r


def _copyltu(m: Tensor) -> Tensor:
    """The symmetric matrix whose lower triangle is ``m``'s."""
    n = m.shape[-1]
    return m * tril_mask(m, n) + (m * tril_mask(m, n, diagonal=0.0)).mT


def _qr_grad_tall(q: Tensor, r: Tensor, gq: Tensor, gr: Tensor) -> Tensor:
    """``m >= n``: ``gA = (gQ + Q copyltu(R gR^T - gQ^T Q)) R^-T``."""
    m = matmul(r, gr.mT) - matmul(gq.mT, q)
    b = gq + matmul(q, _copyltu(m))
    return solve_triangular(r.mT, b, upper=False, left=False)


def _qr_rule(ctx, g):
    gq, gr = g
    q, r = ctx.result
    mode = ctx.params.mode
    if mode == "r":
        raise GradError(
            "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use "
            "linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr."
        )
    m, n = q.shape[-2], r.shape[-1]
    if mode == "complete" and m > n:
        raise GradError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    if m >= n:
        return (_qr_grad_tall(q, r, gq, gr),)
    # Wide A = [X | Y] with X = Q R1 square and R = [R1 | R2], Y = Q R2.
    r1, r2 = r[..., :, :m], r[..., :, m:]
    gr1, gr2 = gr[..., :, :m], gr[..., :, m:]
    y = matmul(q, r2)
    gx = _qr_grad_tall(q, r1, gq + matmul(y, gr2.mT), gr1)
    return (cat([gx, matmul(q, gr2)], dim=-1),)


QR = declare("linalg_qr", _qr_forward, _qr_rule, params=("mode",), save_result=True, num_outputs=2, real_only=True)


class QRResult(NamedTuple):
    """``(Q, R)``, like ``torch.return_types.linalg_qr``."""

    Q: Tensor
    R: Tensor


def qr(A: Tensor, mode: str = "reduced") -> QRResult:
    """QR decomposition ``A = Q R``: ``mode`` is ``'reduced'`` (``Q`` is ``m x k``, ``k = min(m, n)``),
    ``'complete'`` (``Q`` is ``m x m``) or ``'r'`` (``Q`` is empty). Differentiable for ``'reduced'``
    and for ``'complete'`` when ``m <= n``, as in PyTorch.

    Example:
        >>> import fgraph as fg
        >>> Q, R = fg.linalg.qr(fg.ones(4, 3))
        >>> Q.shape, R.shape, fg.linalg.qr(fg.ones(4, 3), mode="complete").Q.shape
        ((4, 3), (3, 3), (4, 4))
    """
    if mode not in ("reduced", "complete", "r"):
        raise OpError(f"linalg.qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}.")
    check_matrix(A, "linalg.qr", "A")
    q, r = apply_op(QR, (A,), QR.Params(mode))
    return QRResult(q, r)


# -- eigh --------------------------------------------------------------------------------------------------------
def _eigh_forward(a, *, lower):
    v, w = lax.linalg.eigh(a, lower=lower, symmetrize_input=False)
    return w, v


def _eigh_rule(ctx, g):
    gl, gv = g
    w, v = ctx.result
    vgv = matmul(v.mT, gv)
    skew = 0.5 * (vgv - vgv.mT)
    e = w.unsqueeze(-2) - w.unsqueeze(-1)  # e[i, j] = w[j] - w[i]
    inner = _safe_div(skew, e) + diag_embed(gl)
    return (matmul(matmul(v, inner), v.mT),)


EIGH = declare("linalg_eigh", _eigh_forward, _eigh_rule, params=("lower",), save_result=True, num_outputs=2,
               real_only=True)


class EighResult(NamedTuple):
    """``(eigenvalues, eigenvectors)``, like ``torch.return_types.linalg_eigh``."""

    eigenvalues: Tensor
    eigenvectors: Tensor


def _uplo(UPLO: str, op: str) -> bool:
    if UPLO not in ("L", "U"):
        raise OpError(f"{op}: UPLO must be 'L' or 'U', got {UPLO!r}.")
    return UPLO == "L"


def eigh(A: Tensor, UPLO: str = "L") -> EighResult:
    """Eigenvalues (ascending) and orthonormal eigenvectors (columns) of a symmetric ``A``, reading its
    lower (``UPLO='L'``) or upper (``'U'``) triangle. Eigenvector gradients need distinct eigenvalues;
    eigenvectors are defined up to sign, so differentiate sign-invariant quantities.

    Example:
        >>> import fgraph as fg
        >>> L, V = fg.linalg.eigh(fg.tensor([[2.0, 1.0], [1.0, 2.0]]))
        >>> [round(x, 4) for x in L.tolist()], V.shape
        ([1.0, 3.0], (2, 2))
    """
    check_matrix(A, "linalg.eigh", "A", square=True)
    w, v = apply_op(EIGH, (A,), EIGH.Params(_uplo(UPLO, "linalg.eigh")))
    return EighResult(w, v)


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """The eigenvalues of a symmetric ``A`` (ascending); see :func:`eigh`.

    Example:
        >>> import fgraph as fg
        >>> fg.linalg.eigvalsh(fg.tensor([[3.0, 0.0], [0.0, -1.0]])).tolist()
        [-1.0, 3.0]
    """
    check_matrix(A, "linalg.eigvalsh", "A", square=True)
    return apply_op(EIGH, (A,), EIGH.Params(_uplo(UPLO, "linalg.eigvalsh")))[0]


# -- svd ----------------------------------------------------------------------------------------------------------
def _svd_forward(a, *, full_matrices):
    u, s, vh = jnp.linalg.svd(a, full_matrices=full_matrices)
    return u, s, vh


def _svd_rule(ctx, g):
    """PyTorch's ``svd_backward`` for real inputs."""
    gu, gs, gvh = g
    u, s, vh = ctx.result
    m, n, k = u.shape[-2], vh.shape[-1], s.shape[-1]
    if u.shape[-1] != k:  # full_matrices: only the first k columns of U / rows of Vh matter
        u, gu = u[..., :, :k], gu[..., :, :k]
    if vh.shape[-2] != k:
        vh, gvh = vh[..., :k, :], gvh[..., :k, :]
    ugu = matmul(u.mT, gu)
    vgv = matmul(vh, gvh.mT)
    s2 = s * s
    e = s2.unsqueeze(-2) - s2.unsqueeze(-1)  # e[i, j] = s[j]^2 - s[i]^2
    e = where(_wrap(jnp.eye(k, dtype=bool)), 0.0, e)  # exactly 0 on the diagonal: XLA's FMAs leave ~1e-16 there
    ga = _safe_div((ugu - ugu.mT) * s.unsqueeze(-2) + s.unsqueeze(-1) * (vgv - vgv.mT), e) + diag_embed(gs)
    if m > n:
        gu_sinv = _safe_div(gu, s.unsqueeze(-2))
        ga = matmul(matmul(u, ga) + gu_sinv - matmul(u, matmul(u.mT, gu_sinv)), vh)
    elif m < n:
        sinv_gvh = _safe_div(gvh, s.unsqueeze(-1))
        ga = matmul(u, matmul(ga, vh) + sinv_gvh - matmul(matmul(sinv_gvh, vh.mT), vh))
    else:
        ga = matmul(matmul(u, ga), vh)
    return (ga,)


SVD = declare("linalg_svd", _svd_forward, _svd_rule, params=("full_matrices",), save_result=True, num_outputs=3,
              real_only=True, tangent="rule")


class SVDResult(NamedTuple):
    """``(U, S, Vh)``, like ``torch.return_types.linalg_svd``."""

    U: Tensor
    S: Tensor
    Vh: Tensor


def svd(A: Tensor, full_matrices: bool = True) -> SVDResult:
    """Singular value decomposition ``A = U diag(S) Vh`` (``S`` descending). With ``full_matrices=True``
    ``U`` is ``m x m`` and ``Vh`` ``n x n``; their extra columns/rows get no gradient. Singular-vector
    gradients need distinct nonzero singular values; ``U``/``Vh`` are defined up to sign.

    Example:
        >>> import fgraph as fg
        >>> U, S, Vh = fg.linalg.svd(fg.ones(3, 2), full_matrices=False)
        >>> U.shape, [round(x, 4) for x in S.tolist()], Vh.shape
        ((3, 2), [2.4495, 0.0], (2, 2))
    """
    check_matrix(A, "linalg.svd", "A")
    u, s, vh = apply_op(SVD, (A,), SVD.Params(bool(full_matrices)))
    return SVDResult(u, s, vh)


def svdvals(A: Tensor) -> Tensor:
    """The singular values of ``A``, descending. Their gradient ``U diag(gS) Vh`` is finite even for
    repeated singular values.

    Example:
        >>> import fgraph as fg
        >>> fg.linalg.svdvals(fg.tensor([[3.0, 0.0], [0.0, -4.0]])).tolist()
        [4.0, 3.0]
    """
    check_matrix(A, "linalg.svdvals", "A")
    return apply_op(SVD, (A,), SVD.Params(False))[1]


__all__ = ["cholesky", "qr", "eigh", "eigvalsh", "svd", "svdvals", "QRResult", "EighResult", "SVDResult"]
