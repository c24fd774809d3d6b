"""Inverses and determinants: inv, solve, solve_triangular, det, slogdet, logdet, pinv.

Every derivative rule is written with fgraph ops (matmul, these very solves, the
saved results), so second and higher derivatives work:

* ``inv``:  ``gA = -X^T g X^T`` with ``X = inv(A)``;
* ``solve``: ``gB = solve(A^T, g)``, ``gA = -gB X^T``;
* ``solve_triangular``: the same with triangular solves, ``gA`` masked to the triangle read;
* ``det``: ``gA = g det(A) inv(A)^T``; ``slogdet``: ``gA = g_logabsdet inv(A)^T`` (the
  sign is piecewise constant: no gradient, as in PyTorch);
* ``pinv``: PyTorch's ``pinv_backward`` (valid where the rank is locally constant).

Deviations from PyTorch: a singular input does not raise (that would need a host
round trip); ``inv``/``solve`` give inf/nan like JAX, and the gradient of ``det`` at
a singular matrix is nan (PyTorch's is finite for rank n-1). Real dtypes only.

Example:
    >>> import fgraph as fg
    >>> A = fg.tensor([[2.0, 0.0], [0.0, 4.0]], requires_grad=True)
    >>> fg.linalg.inv(A).tolist(), fg.linalg.det(A).item()
    ([[0.5, 0.0], [0.0, 0.25]], 8.0)
    >>> fg.grad(fg.linalg.det(A), [A])[0].tolist()
    [[4.0, 0.0], [0.0, 2.0]]
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import jax.numpy as jnp
from jax import lax

from fgraph.errors import OpError
from fgraph.ops._declare import apply_op, apply_unary, declare
from fgraph.ops._linalg_util import broadcast_batch, check_matrix, check_same_dtype, check_tensor, tril_mask
from fgraph.ops.elementwise import lt, where
from fgraph.ops.linalg import matmul
from fgraph.tensor import Tensor


def _broadcast_pair(a, b):
    batch = jnp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return jnp.broadcast_to(a, batch + a.shape[-2:]), jnp.broadcast_to(b, batch + b.shape[-2:])


# -- inv ---------------------------------------------------------------------------------------------
def _inv_rule(ctx, g):
    xt = ctx.result.mT
    return (-matmul(matmul(xt, g), xt),)


INV = declare("linalg_inv", jnp.linalg.inv, _inv_rule, save_result=True, node_name="LinalgInvExBackward0")


def inv(A: Tensor) -> Tensor:
    """Inverse of a (batch of) square matrices. A singular matrix gives inf/nan (no error is raised).

    Example:
        >>> import fgraph as fg
        >>> fg.linalg.inv(fg.tensor([[2.0, 0.0], [0.0, 4.0]])).tolist()
        [[0.5, 0.0], [0.0, 0.25]]
    """
    check_matrix(A, "linalg.inv", "A", square=True, complex_ok=True)
    return apply_unary(INV, A)


# -- solve -------------------------------------------------------------------------------------------
def _solve_forward(a, b):
    a, b = _broadcast_pair(a, b)
    return jnp.linalg.solve(a, b)


def _solve_rule(ctx, g):
    a = ctx.inputs[0]
    gb = apply_op(SOLVE, (a.mT, g))
    ga = -matmul(gb, ctx.result.mT) if ctx.needs[0] else None
    return ga, gb


SOLVE = declare("linalg_solve", _solve_forward, _solve_rule, save_inputs=True, save_result=True,
                node_name="LinalgSolveExBackward0")


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """Solve ``A X = B`` (or ``X A = B`` with ``left=False``) for square ``A``, with broadcast batches.

    ``B`` is a batch of vectors when it is 1-D or has shape ``A.shape[:-1]`` (as in
    PyTorch); otherwise a batch of matrices ``(*, n, k)``.

    Example:
        >>> import fgraph as fg
        >>> A = fg.tensor([[2.0, 0.0], [0.0, 4.0]])
        >>> fg.linalg.solve(A, fg.tensor([2.0, 2.0])).tolist()
        [1.0, 0.5]
        >>> fg.linalg.solve(fg.ones(5, 2, 2) + fg.tensor([[1.0, 0.0], [0.0, 2.0]]), fg.ones(2, 3)).shape
        (5, 2, 3)
    """
    op = "linalg.solve"
    check_matrix(A, op, "A", square=True, complex_ok=True)
    check_tensor(B, op, "B")
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])
    if B.ndim < 1 or (not vector and B.ndim < 2):
        raise OpError(f"{op}: B must have at least 1 dimension, got shape {B.shape}.")
    check_same_dtype(A, B, op, ("A", "B"))
    b = B.unsqueeze(-1) if vector else B
    n = A.shape[-1]
    rows = b.shape[-2] if left else b.shape[-1]
    if rows != n:
        eq = "AX = B" if left else "XA = B"
        raise OpError(
            f"{op}: incompatible shapes of A {A.shape} and B {B.shape} for the equation {eq} "
            f"({n}x{n} and {b.shape[-2]}x{b.shape[-1]}); B's {'rows' if left else 'columns'} must number {n}"
            + (" (a 1-D B is a column vector)." if vector else ".")
        )
    broadcast_batch(A.shape[:-2], b.shape[:-2], op)
    if left:
        x = apply_op(SOLVE, (A, b))
    else:
        x = apply_op(SOLVE, (A.mT, b.mT)).mT
    return x.squeeze(-1) if vector else x


# -- solve_triangular ---------------------------------------------------------------------------------
def _solve_triangular_forward(a, b, *, upper, left, unitriangular):
    a, b = _broadcast_pair(a, b)
    return lax.linalg.triangular_solve(a, b, left_side=left, lower=not upper, unit_diagonal=unitriangular)


def _solve_triangular_rule(ctx, g):
    a = ctx.inputs[0]
    p = ctx.params
    gb = apply_op(SOLVE_TRIANGULAR, (a.mT, g), SOLVE_TRIANGULAR.Params(not p.upper, p.left, p.unitriangular))
    ga = None
    if ctx.needs[0]:
        x = ctx.result
        ga = -matmul(gb, x.mT) if p.left else -matmul(x.mT, gb)
        n = a.shape[-1]
        ga = ga * tril_mask(ga, n, diagonal=0.0 if p.unitriangular else 1.0, upper=p.upper)
    return ga, gb


SOLVE_TRIANGULAR = declare("linalg_solve_triangular", _solve_triangular_forward, _solve_triangular_rule,
                           params=("upper", "left", "unitriangular"), save_inputs=True, save_result=True)


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False) -> Tensor:
    """Solve ``A X = B`` (``X A = B`` with ``left=False``) for triangular ``A``, reading only its
    upper or lower triangle (and taking its diagonal as ones with ``unitriangular``).

    Example:
        >>> import fgraph as fg
        >>> L = fg.tensor([[2.0, 0.0], [1.0, 1.0]])
        >>> fg.linalg.solve_triangular(L, fg.tensor([[2.0], [2.0]]), upper=False).tolist()
        [[1.0], [1.0]]
    """
    op = "linalg.solve_triangular"
    check_matrix(A, op, "A", square=True, complex_ok=True)
    check_matrix(B, op, "B", complex_ok=True)
    check_same_dtype(A, B, op, ("A", "B"))
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise OpError(
            f"{op}: incompatible shapes of A {A.shape} and B {B.shape} for the equation {eq}; "
            f"B's {'rows' if left else 'columns'} must number {n}."
        )
    broadcast_batch(A.shape[:-2], B.shape[:-2], op)
    params = SOLVE_TRIANGULAR.Params(bool(upper), bool(left), bool(unitriangular))
    return apply_op(SOLVE_TRIANGULAR, (A, B), params)


# -- det / slogdet --------------------------------------------------------------------------------------
def _det_rule(ctx, g):
    (a,) = ctx.inputs
    return ((g * ctx.result).unsqueeze(-1).unsqueeze(-1) * inv(a).mT,)


def _slogdet_forward(a):
    sign, logabsdet = jnp.linalg.slogdet(a)
    return sign, logabsdet


def _slogdet_rule(ctx, g):
    (a,) = ctx.inputs
    return (g[1].unsqueeze(-1).unsqueeze(-1) * inv(a).mT,)  # the sign has no gradient


DET = declare("linalg_det", jnp.linalg.det, _det_rule, save_inputs=True, save_result=True)
SLOGDET = declare("linalg_slogdet", _slogdet_forward, _slogdet_rule, save_inputs=True, num_outputs=2, real_only=True)


def det(A: Tensor) -> Tensor:
    """Determinant of a (batch of) square matrices.

    Example:
        >>> import fgraph as fg
        >>> round(fg.linalg.det(fg.tensor([[1.0, 2.0], [3.0, 4.0]])).item(), 4)
        -2.0
    """
    check_matrix(A, "linalg.det", "A", square=True, complex_ok=True)
    return apply_unary(DET, A)


class SlogdetResult(NamedTuple):
    """``(sign, logabsdet)``, like ``torch.return_types.linalg_slogdet``."""

    sign: Tensor
    logabsdet: Tensor


def slogdet(A: Tensor) -> SlogdetResult:
    """Sign and log of the absolute value of the determinant; only ``logabsdet`` has a gradient.

    Example:
        >>> import fgraph as fg
        >>> sign, logabsdet = fg.linalg.slogdet(fg.tensor([[0.0, 2.0], [1.0, 0.0]]))
        >>> sign.item(), round(logabsdet.item(), 4)
        (-1.0, 0.6931)
    """
    check_matrix(A, "linalg.slogdet", "A", square=True)
    sign, logabsdet = apply_op(SLOGDET, (A,))
    return SlogdetResult(sign, logabsdet)


def logdet(input: Tensor) -> Tensor:
    """``log(det(input))``: nan for a negative determinant, -inf for zero (as ``torch.logdet``).

    Example:
        >>> import fgraph as fg
        >>> round(fg.logdet(fg.tensor([[2.0, 0.0], [0.0, 2.0]])).item(), 4)
        1.3863
    """
    check_matrix(input, "logdet", "input", square=True)
    sign, logabsdet = apply_op(SLOGDET, (input,))
    return where(lt(sign, 0), float("nan"), logabsdet)


# -- pinv ----------------------------------------------------------------------------------------------------
def _pinv_forward(a, *, atol, rtol, hermitian):
    m, n = a.shape[-2:]
    if rtol is None:
        rtol = jnp.finfo(a.dtype).eps * max(m, n) if atol is None or atol <= 0 else 0.0
    atol = 0.0 if atol is None else atol
    if hermitian:
        w, v = jnp.linalg.eigh(a, UPLO="L", symmetrize_input=False)
        s = jnp.abs(w)
    else:
        u, s, vh = jnp.linalg.svd(a, full_matrices=False)
    cutoff = jnp.maximum(atol, rtol * jnp.max(s, axis=-1, keepdims=True, initial=0.0))
    keep = s > cutoff
    if hermitian:
        winv = jnp.where(keep, 1.0 / jnp.where(keep, w, 1.0), 0.0)
        return jnp.matmul(v * winv[..., None, :], jnp.swapaxes(v, -1, -2))
    sinv = jnp.where(keep, 1.0 / jnp.where(keep, s, 1.0), 0.0)
    return jnp.matmul(jnp.swapaxes(vh, -1, -2) * sinv[..., None, :], jnp.swapaxes(u, -1, -2))


def _pinv_rule(ctx, g):
    """PyTorch's ``pinv_backward`` (its ``m <= n`` form; a tall ``A`` goes through ``pinv(A^T) = pinv(A)^T``)."""
    (a,) = ctx.inputs
    p = ctx.result
    if a.shape[-2] > a.shape[-1]:
        return (_pinv_grad(g.mT, p.mT, a.mT).mT,)
    return (_pinv_grad(g, p, a),)


def _pinv_grad(g: Tensor, p: Tensor, a: Tensor) -> Tensor:
    ph, gh = p.mT, g.mT
    k = matmul(gh, p)
    kph = matmul(k, ph)
    return -matmul(p, k).mT + kph - matmul(matmul(a, p), kph) + matmul(matmul(ph, p), gh - matmul(k, a))


PINV = declare("linalg_pinv", _pinv_forward, _pinv_rule, params=("atol", "rtol", "hermitian"),
               save_inputs=True, save_result=True, real_only=True)


def _tolerance(value: Optional[float], name: str) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, Tensor) or not isinstance(value, (int, float)):
        raise OpError(f"linalg.pinv: {name} must be a Python float or None, got {type(value).__name__}.")
    return float(value)


def pinv(A: Tensor, *, atol: Optional[float] = None, rtol: Optional[float] = None, hermitian: bool = False) -> Tensor:
    """Moore-Penrose pseudo-inverse through the SVD (the eigendecomposition with ``hermitian=True``,
    reading the lower triangle). Singular values ``<= max(atol, rtol * largest)`` count as zero; by
    default ``atol = 0`` and ``rtol = eps * max(m, n)`` (0 when ``atol > 0``), as in PyTorch.

    Example:
        >>> import fgraph as fg
        >>> fg.linalg.pinv(fg.tensor([[1.0, 0.0], [0.0, 0.0]])).tolist()
        [[1.0, 0.0], [0.0, 0.0]]
        >>> fg.linalg.pinv(fg.ones(3, 2)).shape
        (2, 3)
    """
    check_matrix(A, "linalg.pinv", "A", square=bool(hermitian))
    params = PINV.Params(_tolerance(atol, "atol"), _tolerance(rtol, "rtol"), bool(hermitian))
    return apply_unary(PINV, A, params)


__all__ = ["inv", "solve", "solve_triangular", "det", "slogdet", "logdet", "pinv", "SlogdetResult"]
