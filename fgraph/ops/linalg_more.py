"""More of ``torch.linalg``: matrix_exp, lstsq, matrix_rank, cond, householder_product, tensorinv,
tensorsolve, vander, diagonal and the ``_ex`` variants (``inv_ex``, ``cholesky_ex``, ``solve_ex``).

``matrix_exp`` is a primitive; its derivative is PyTorch's (and Mathias's) block-triangular
identity ``gA = exp([[A^T, G], [0, A^T]])[:n, n:]``, computed with ``matrix_exp`` itself, so
every order of derivative works. The others are composites of differentiable fgraph ops
(``pinv``, ``inv``, ``solve``, ``svdvals``, matmul...), so they need no rule:

* ``lstsq``'s solution is ``pinv(A) B`` with ``rcond`` as pinv's ``rtol``: the minimum-norm
  least-squares solution of every driver on full-rank input (``gelsy``, PyTorch's CPU default,
  and ``gels`` agree with it there), and its gradient is PyTorch's (``pinv``'s backward).
  ``residuals`` and ``singular_values`` carry no gradient, as in PyTorch. Deviation: PyTorch
  returns empty ``residuals`` when some matrix is rank deficient; deciding that would need a
  host round trip, so here they are computed whenever ``m > n`` and the driver is not ``gelsy``.
* ``matrix_rank`` and the ``info`` of the ``_ex`` variants are integer tensors (no gradient).
  The ``_ex`` variants never raise unless ``check_errors=True`` (which reads ``info`` on the
  host, so it cannot be used under ``jax.jit``).

Example:
    >>> import fgraph as fg
    >>> fg.matrix_exp(fg.zeros(2, 2)).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    >>> fg.linalg.matrix_rank(fg.ones(3, 3)).item()
    1
"""
from __future__ import annotations

import math
from typing import NamedTuple, Optional, Sequence

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np

from fgraph.errors import OpError
from fgraph.ops._declare import apply_unary, declare
from fgraph.ops._linalg_util import broadcast_batch, check_matrix, check_same_dtype, check_tensor
from fgraph.ops.decompositions import cholesky, svdvals
from fgraph.ops.linalg import matmul
from fgraph.ops.linalg_norms import matrix_norm
from fgraph.ops.linalg_solve import inv, pinv, solve
from fgraph.ops.shape import cat, reshape, stack
from fgraph.ops.triangular import diagonal as _diagonal
from fgraph.tensor import Tensor, _wrap


# -- matrix_exp ------------------------------------------------------------------------------------------------
def _matrix_exp_forward(a):
    return jsl.expm(a)


def _matrix_exp_rule(ctx, g):
    (a,) = ctx.inputs
    n = a.shape[-1]
    at = a.mT
    zeros = _wrap(jnp.zeros(g.shape, g.dtype))
    block = cat([cat([at, g], -1), cat([zeros, at], -1)], -2)
    return (apply_unary(MATRIX_EXP, block)[..., :n, n:],)


MATRIX_EXP = declare("linalg_matrix_exp", _matrix_exp_forward, _matrix_exp_rule, save_inputs=True)


def matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential ``sum_k A^k / k!`` of a (batch of) square matrices (``torch.matrix_exp``).

    Example:
        >>> import fgraph as fg
        >>> E = fg.linalg.matrix_exp(fg.tensor([[0.0, 1.0], [0.0, 0.0]]))
        >>> E.tolist()
        [[1.0, 1.0], [0.0, 1.0]]
    """
    check_matrix(A, "linalg.matrix_exp", "A", square=True, complex_ok=True)
    return apply_unary(MATRIX_EXP, A)


# -- lstsq -----------------------------------------------------------------------------------------------------
class LstsqResult(NamedTuple):
    """``(solution, residuals, rank, singular_values)``, like ``torch.return_types.linalg_lstsq``."""

    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor


_DRIVERS = (None, "gels", "gelsy", "gelsd", "gelss")


def _float_or_none(value, op: str, name: str) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise OpError(f"{op}: {name} must be a Python float or None, got {type(value).__name__}.")
    return float(value)


def lstsq(A: Tensor, B: Tensor, rcond: Optional[float] = None, *, driver: Optional[str] = None) -> LstsqResult:
    """Least-squares solution of ``A X = B`` (minimum norm when ``A`` is rank deficient), with broadcast
    batches. ``rcond`` cuts singular values below ``rcond * largest`` (default ``eps * max(m, n)``).
    ``driver`` (``'gels'``, ``'gelsy'`` (default), ``'gelsd'``, ``'gelss'``) decides, as in PyTorch,
    which of ``residuals`` (``m > n``, not gelsy), ``rank`` (not gels) and ``singular_values``
    (gelsd, gelss) are filled; the others are empty. Only ``solution`` has a gradient.

    Example:
        >>> import fgraph as fg
        >>> A = fg.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
        >>> r = fg.linalg.lstsq(A, fg.tensor([[1.0], [2.0], [3.0]]), driver="gelsd")
        >>> r.solution.round(decimals=4).tolist(), r.residuals.round(decimals=4).tolist(), r.rank.item()
        ([[1.0], [2.0]], [9.0], 2)
    """
    op = "linalg.lstsq"
    check_matrix(A, op, "A")
    check_tensor(B, op, "B")
    if driver not in _DRIVERS:
        raise OpError(f"{op}: driver must be one of 'gels', 'gelsy', 'gelsd', 'gelss' or None, got {driver!r}.")
    rcond = _float_or_none(rcond, op, "rcond")
    check_same_dtype(A, B, op, ("A", "B"))
    m, n = A.shape[-2:]
    if B.ndim < 1 or not 0 <= A.ndim - B.ndim <= 1:
        raise OpError(f"{op}: B must have as many dimensions as A {A.shape} (a batch of matrices) or one fewer (a "
                      f"batch of vectors), got shape {B.shape}; add or remove batch dimensions to match.")
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])
    b = B.unsqueeze(-1) if vector else B
    if b.ndim < 2 or b.shape[-2] != m:
        raise OpError(f"{op}: A {A.shape} and B {B.shape} must have the same number of rows ({m}); B is "
                      "(*, m, k), or (*, m) for a single right-hand side.")
    batch = broadcast_batch(A.shape[:-2], b.shape[:-2], op)
    x = matmul(pinv(A, rtol=rcond), b)
    driver = driver or "gelsy"
    empty = _wrap(jnp.zeros((0,), A.dtype))
    a = A.detach()
    residuals = empty
    if m > n and driver != "gelsy":
        r = matmul(a, x.detach()) - b.detach()
        residuals = (r * r).sum(-2)  # (*, k); (*, 1) for a vector B, as in PyTorch
    rank = _wrap(jnp.zeros((0,), jnp.int64 if jax.config.jax_enable_x64 else jnp.int32))
    if driver != "gels":
        rank = matrix_rank(a, rtol=rcond).expand(*batch) if batch else matrix_rank(a, rtol=rcond)
    singular_values = svdvals(a) if driver in ("gelsd", "gelss") else empty
    return LstsqResult(x.squeeze(-1) if vector else x, residuals, rank, singular_values)


# -- matrix_rank / cond ----------------------------------------------------------------------------------------
def _matrix_rank_forward(a, *, atol, rtol, hermitian):
    m, n = a.shape[-2:]
    s = jnp.abs(jnp.linalg.eigvalsh(a)) if hermitian else jnp.linalg.svd(a, compute_uv=False)
    if rtol is None:
        rtol = jnp.finfo(a.dtype).eps * max(m, n) if atol is None or atol <= 0 else 0.0
    cutoff = jnp.maximum(0.0 if atol is None else atol, rtol * jnp.max(s, axis=-1, keepdims=True, initial=0.0))
    return jnp.sum(s > cutoff, axis=-1).astype(jnp.int64 if jax.config.jax_enable_x64 else jnp.int32)


MATRIX_RANK = declare("linalg_matrix_rank", _matrix_rank_forward, None, params=("atol", "rtol", "hermitian"),
                      differentiable=False, real_only=True)


def matrix_rank(A: Tensor, *, atol: Optional[float] = None, rtol: Optional[float] = None,
                hermitian: bool = False) -> Tensor:
    """The number of singular values (absolute eigenvalues with ``hermitian=True``, reading the lower
    triangle) above ``max(atol, rtol * largest)``; by default ``atol = 0`` and ``rtol = eps * max(m, n)``
    (0 when ``atol > 0``), as in PyTorch. An int64 tensor with no gradient.

    Example:
        >>> import fgraph as fg
        >>> fg.linalg.matrix_rank(fg.tensor([[1.0, 2.0], [2.0, 4.0]])).item()
        1
        >>> fg.linalg.matrix_rank(fg.eye(3), atol=2.0).item()
        0
    """
    op = "linalg.matrix_rank"
    check_matrix(A, op, "A", square=bool(hermitian))
    params = MATRIX_RANK.Params(_float_or_none(atol, op, "atol"), _float_or_none(rtol, op, "rtol"), bool(hermitian))
    return apply_unary(MATRIX_RANK, A, params)


def cond(A: Tensor, p=None) -> Tensor:
    """The condition number of ``A`` in the norm ``p``: for ``None``/``2``/``-2`` the ratio of the
    largest to the smallest singular value (or its inverse; any ``m x n``), otherwise
    ``matrix_norm(A, p) * matrix_norm(inv(A), p)`` for ``p`` in ``'fro'``, ``'nuc'``, ``inf``, ``-inf``,
    ``1``, ``-1`` (square ``A``). Differentiable where the norms are.

    Example:
        >>> import fgraph as fg
        >>> fg.linalg.cond(fg.tensor([[2.0, 0.0], [0.0, 0.5]])).item()
        4.0
    """
    op = "linalg.cond"
    if p is None or (not isinstance(p, str) and p in (2, -2)):
        check_matrix(A, op, "A")
        s = svdvals(A)
        big, small = s[..., 0], s[..., -1]
        return small / big if p == -2 else big / small
    if p not in ("fro", "nuc", math.inf, -math.inf, 1, -1):
        raise OpError(f"{op}: p must be None, 2, -2, 'fro', 'nuc', inf, -inf, 1 or -1, got {p!r}.")
    check_matrix(A, op, "A", square=True)
    return matrix_norm(A, p) * matrix_norm(inv(A), p)


# -- householder_product ---------------------------------------------------------------------------------------
def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first ``n`` columns of ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^T``, where ``v_i`` is column
    ``i`` of ``A`` below the diagonal with a 1 on it (LAPACK's ``orgqr``, as ``torch.linalg.householder_product``).
    ``A`` is ``(*, m, n)`` with ``m >= n``, ``tau`` is ``(*, k)`` with ``k <= n``.

    Example:
        >>> import fgraph as fg
        >>> fg.linalg.householder_product(fg.tensor([[1.0], [1.0]]), fg.tensor([1.0])).tolist()
        [[0.0], [-1.0]]
    """
    op = "linalg.householder_product"
    check_matrix(A, op, "A")
    check_tensor(tau, op, "tau")
    check_same_dtype(A, tau, op, ("A", "tau"))
    m, n = A.shape[-2:]
    k = tau.shape[-1] if tau.ndim else -1
    if m < n or tau.ndim != A.ndim - 1 or k > n or tau.shape[:-1] != A.shape[:-2]:
        raise OpError(f"{op}: expected A of shape (*, m, n) with m >= n and tau of shape (*, k) with k <= n and "
                      f"the same batch dimensions, got A {A.shape} and tau {tau.shape}.")
    below = np.tril(np.ones((m, n)), -1)
    v = A * _wrap(jnp.asarray(below, A.dtype)) + _wrap(jnp.eye(m, n, dtype=A.dtype))
    q = _wrap(jnp.broadcast_to(jnp.eye(m, dtype=A.dtype), A.shape[:-2] + (m, m)))
    for i in range(k):
        vi = v[..., :, i : i + 1]
        q = q - matmul(matmul(q, vi) * tau[..., i : i + 1].unsqueeze(-1), vi.mT)
    return q[..., :, :n]


# -- tensorinv / tensorsolve -----------------------------------------------------------------------------------
def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The inverse of ``A`` for ``tensordot`` over ``ind`` dims: ``A.shape[:ind]`` and ``A.shape[ind:]`` must
    have the same number of elements; the result has shape ``A.shape[ind:] + A.shape[:ind]``.

    Example:
        >>> import fgraph as fg
        >>> A = fg.eye(6).reshape(6, 2, 3) * 2.0
        >>> fg.linalg.tensorinv(A, ind=1).shape
        (2, 3, 6)
    """
    op = "linalg.tensorinv"
    check_tensor(A, op, "A")
    if not isinstance(ind, int) or isinstance(ind, bool) or ind <= 0:
        raise OpError(f"{op}: expected a strictly positive integer for 'ind', but got {ind!r}.")
    out_shape, in_shape = A.shape[:ind], A.shape[ind:]
    rows, cols = math.prod(out_shape), math.prod(in_shape)
    if rows != cols:
        raise OpError(f"{op}: expected prod(A.shape[:ind]) == prod(A.shape[ind:]), got {rows} and {cols} for "
                      f"A of shape {A.shape} and ind={ind}.")
    return reshape(inv(reshape(A, (rows, cols))), in_shape + out_shape)


def tensorsolve(A: Tensor, B: Tensor, dims: Optional[Sequence[int]] = None) -> Tensor:
    """The ``X`` with ``tensordot(A, X, X.ndim) == B``; ``A.shape == B.shape + X.shape`` after moving the
    dims listed in ``dims`` to the end of ``A``.

    Example:
        >>> import fgraph as fg
        >>> A = (fg.eye(6) * 2.0).reshape(2, 3, 6)
        >>> fg.linalg.tensorsolve(A, fg.ones(2, 3)).tolist()
        [0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    """
    op = "linalg.tensorsolve"
    check_tensor(A, op, "A")
    check_tensor(B, op, "B")
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        keep = [d for d in range(A.ndim) if d not in dims]
        A = A.permute(*keep, *dims)
    if A.shape[: B.ndim] != B.shape:
        raise OpError(f"{op}: A's leading dimensions {A.shape[:B.ndim]} must equal B's shape {B.shape} "
                      f"(A {A.shape}).")
    x_shape = A.shape[B.ndim:]
    rows, cols = math.prod(B.shape), math.prod(x_shape)
    if rows != cols:
        raise OpError(f"{op}: expected prod(B.shape) == prod of A's trailing dims, got {rows} and {cols} "
                      f"(A {A.shape}, B {B.shape}).")
    check_same_dtype(A, B, op, ("A", "B"))
    return reshape(solve(reshape(A, (rows, cols)), reshape(B, (rows,))), x_shape)


# -- vander / diagonal -----------------------------------------------------------------------------------------
def vander(x: Tensor, *, N: Optional[int] = None) -> Tensor:
    """The Vandermonde matrix ``[1, x, x^2, ..., x^(N-1)]`` of each vector of ``x`` (``(*, n)`` to
    ``(*, n, N)``, increasing powers, ``N`` defaulting to ``n``), as ``torch.linalg.vander``.

    Example:
        >>> import fgraph as fg
        >>> fg.linalg.vander(fg.tensor([1.0, 2.0, 3.0])).tolist()
        [[1.0, 1.0, 1.0], [1.0, 2.0, 4.0], [1.0, 3.0, 9.0]]
    """
    op = "linalg.vander"
    check_tensor(x, op, "x")
    if x.ndim < 1:
        raise OpError(f"{op}: x must have at least one dimension, got a 0-d tensor.")
    N = x.shape[-1] if N is None else N
    if not isinstance(N, int) or isinstance(N, bool) or N <= 1:
        raise OpError(f"{op}: N must be greater than 1, got {N!r}.")
    cols = [x * 0 + 1]
    for _ in range(N - 1):
        cols.append(cols[-1] * x)
    return stack(cols, -1)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """``fg.diagonal`` with the last two dims as defaults (``torch.linalg.diagonal``).

    Example:
        >>> import fgraph as fg
        >>> fg.linalg.diagonal(fg.eye(3).expand(2, 3, 3)).tolist()
        [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """
    return _diagonal(A, offset, dim1, dim2)


# -- the _ex variants ------------------------------------------------------------------------------------------
def _int32(x):
    return x.astype(jnp.int32)


def _lu_info_forward(a):
    """LAPACK's getrf info: 1 + the index of the first zero pivot of U, 0 if there is none."""
    lu, _, _ = jax.lax.linalg.lu(a)
    zero = jnp.diagonal(lu, axis1=-2, axis2=-1) == 0
    return _int32(jnp.where(jnp.any(zero, -1), jnp.argmax(zero, -1) + 1, 0))


def _cholesky_info_forward(a):
    """potrf's info: the order of the first leading minor (of the lower triangle) that is not positive definite."""
    n = a.shape[-1]
    low = jnp.tril(a)
    sym = low + jnp.swapaxes(jnp.tril(a, -1), -1, -2)
    keep = np.arange(n)[:, None, None]
    idx = np.arange(n)
    mask = (idx[None, :, None] <= keep) & (idx[None, None, :] <= keep)  # mask[k]: the leading (k+1)x(k+1) block
    minors = jnp.where(mask, sym[..., None, :, :], jnp.eye(n, dtype=a.dtype))
    sign, logdet = jnp.linalg.slogdet(minors)
    bad = (sign <= 0) | ~jnp.isfinite(logdet)
    return _int32(jnp.where(jnp.any(bad, -1), jnp.argmax(bad, -1) + 1, 0))


LU_INFO = declare("linalg_lu_info", _lu_info_forward, None, differentiable=False)
CHOLESKY_INFO = declare("linalg_cholesky_info", _cholesky_info_forward, None, differentiable=False)


class InvExResult(NamedTuple):
    """``(inverse, info)``, like ``torch.return_types.linalg_inv_ex``."""

    inverse: Tensor
    info: Tensor


class CholeskyExResult(NamedTuple):
    """``(L, info)``, like ``torch.return_types.linalg_cholesky_ex``."""

    L: Tensor
    info: Tensor


class SolveExResult(NamedTuple):
    """``(result, info)``, like ``torch.return_types.linalg_solve_ex``."""

    result: Tensor
    info: Tensor


def _checked(info: Tensor, op: str, what: str) -> Tensor:
    if isinstance(info._array, jax.core.Tracer):
        raise OpError(f"{op}: check_errors=True reads info on the host, which is impossible while tracing "
                      "(jax.jit, fg.compile); use check_errors=False and test info yourself.")
    bad = np.asarray(info._array)
    if bad.any():
        raise OpError(f"{op}: {what} (info = {bad.tolist()}).")
    return info


def inv_ex(A: Tensor, *, check_errors: bool = False) -> InvExResult:
    """``(inv(A), info)``: ``info`` (int32, one per matrix) is 0, or ``i`` when the ``i``-th pivot of the
    LU factorization is exactly zero (the matrix is singular).

    Example:
        >>> import fgraph as fg
        >>> fg.linalg.inv_ex(fg.tensor([[1.0, 2.0], [2.0, 4.0]])).info.item()
        2
    """
    check_matrix(A, "linalg.inv_ex", "A", square=True, complex_ok=True)
    info = apply_unary(LU_INFO, A)
    if check_errors:
        _checked(info, "linalg.inv_ex", "the matrix is singular")
    return InvExResult(inv(A), info)


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> CholeskyExResult:
    """``(cholesky(A, upper=upper), info)``: ``info`` (int32) is 0, or the order of the first leading
    minor that is not positive definite.

    Example:
        >>> import fgraph as fg
        >>> fg.linalg.cholesky_ex(fg.tensor([[1.0, 0.0], [0.0, -1.0]])).info.item()
        2
    """
    check_matrix(A, "linalg.cholesky_ex", "A", square=True)
    info = apply_unary(CHOLESKY_INFO, A.mT if upper else A)
    if check_errors:
        _checked(info, "linalg.cholesky_ex", "the matrix is not positive definite")
    return CholeskyExResult(cholesky(A, upper=upper), info)


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False) -> SolveExResult:
    """``(solve(A, B, left=left), info)`` with :func:`inv_ex`'s ``info``.

    Example:
        >>> import fgraph as fg
        >>> r = fg.linalg.solve_ex(fg.eye(2) * 2.0, fg.ones(2))
        >>> r.result.tolist(), r.info.item()
        ([0.5, 0.5], 0)
    """
    x = solve(A, B, left=left)
    info = apply_unary(LU_INFO, A)
    if check_errors:
        _checked(info, "linalg.solve_ex", "the matrix A is singular")
    return SolveExResult(x, info)


__all__ = ["matrix_exp"]
#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {"matrix_exp": matrix_exp}
