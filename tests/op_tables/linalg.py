"""Linear algebra (fgraph/ops/linalg.py, einsum.py, linalg_solve.py, decompositions.py, linalg_norms.py)
against pure JAX: forward, first derivative, Hessian-vector product.

Decomposition inputs are built inside ``fg_fn``/``ref_fn`` from free inputs (drawn from
small domains) so that they are well conditioned whatever hypothesis draws:

* :func:`well` ``x + 2 I``, ``|x| <= 0.5``: strictly diagonally dominant, positive determinant;
* :func:`spd` ``x x^T + n I``: symmetric positive definite (cholesky);
* :func:`sym` ``x + x^T + diag(0, 2, 4)``, ``|x| <= 0.1``: eigenvalues at least 0.8 apart (Weyl);
* :func:`rect` ``x + D``, ``|x| <= 0.1``, ``D`` diagonal ``1.5 (k, ..., 1)``: singular values at
  least 0.8 apart and above 1 (qr, svd, pinv, matrix norms).

Every case costs kernel compilations (forward, rules, double-backward rules, in float64 and
float32), so the pool is small: one case per code path, with shapes shared across entries.

Eigenvectors, singular vectors and QR factors are defined up to sign, so their
entries compare through sign-invariant outputs: ``L + V * V`` for eigh,
``(U * U * S) @ (Vh * Vh)`` for svd and ``(Q * Q) @ (R * R)`` for qr.

Every op here has a second derivative (as in PyTorch): ``FIRST_ORDER_ONLY`` is empty.
"""
import math

import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np

import fgraph as fg
from hypothesis import strategies as st

from op_harness import NONZERO, REAL, Case, OpEntry, cases, norm_input, shape_cases

#: No linear-algebra op lacks a second derivative.
FIRST_ORDER_ONLY: dict = {}

INF = math.inf
WELL = st.floats(-0.5, 0.5)  # for well()
SMALL = st.floats(-0.1, 0.1)  # for sym() and rect()
SMALL_NONZERO = st.one_of(st.floats(0.02, 0.1), st.floats(-0.1, -0.02))  # rect() under abs (matrix norms)


# -- building well-conditioned inputs, the same way in fgraph, JAX and torch ------------------------------------
def _const(like, array):
    """``array`` as a constant of ``like``'s library and dtype."""
    if isinstance(like, fg.Tensor):
        return fg.tensor(np.asarray(array), dtype=like.dtype)
    if type(like).__module__.startswith("torch"):
        import torch

        return torch.tensor(np.asarray(array), dtype=like.dtype)
    return jnp.asarray(array, dtype=like.dtype)


def _diag(m, n, values):
    d = np.zeros((m, n))
    k = min(m, n)
    d[np.arange(k), np.arange(k)] = values[:k]
    return d


def well(x):
    return x + _const(x, 2.0 * np.eye(x.shape[-1]))


def spd(x):
    n = x.shape[-1]
    return x @ x.mT + _const(x, n * np.eye(n))


def sym(x):
    n = x.shape[-1]
    return x + x.mT + _const(x, np.diag(2.0 * np.arange(n)))


def sym_nonsingular(x):
    return x + x.mT + _const(x, np.diag([-2.0, 1.0, 3.0][: x.shape[-1]]))


def rect(x):
    m, n = x.shape[-2:]
    k = min(m, n)
    return x + _const(x, _diag(m, n, 1.5 * np.arange(k, 0, -1)))


def flip_last(x):
    """``x`` with its last column negated: a negative determinant."""
    return x * _const(x, np.array([1.0] * (x.shape[-1] - 1) + [-1.0]))


# -- products ------------------------------------------------------------------------------------------------------
EINSUM_CASES = cases(*(Case(shapes, dict(eq=eq)) for eq, shapes in [
    ("ij,jk->ik", ((2, 3), (3, 3))),
    ("...ij,...jk->...ik", ((2, 2, 3), (1, 3, 3))),  # ellipsis dims broadcast
    ("iij->j", ((3, 3, 2),)),  # partial trace: the gradient lands on the diagonal
    ("ab,ab->a", ((2, 1), (2, 3))),  # a size-1 label broadcast
    ("ij,jk->ik", ((2, 0), (0, 3))),  # empty contraction
    ("bn,anm,bm->ba", ((2, 3), (2, 3, 3), (2, 3))),  # bilinear form, three operands
]))

TENSORDOT_CASES = cases(*(Case(shapes, dict(dims=dims)) for shapes, dims in [
    (((2, 3, 3), (3, 3, 2)), ((0, 2), (2, 0))),
]))


# -- inverses and determinants --------------------------------------------------------------------------------------
def _solve_ref(a, b, *, left):
    """Through the inverse, with PyTorch's rule for when B is a batch of vectors."""
    A = well(a)
    vector = b.ndim == 1 or (b.ndim == A.ndim - 1 and b.shape == A.shape[:-1])
    bb = b[..., None] if vector else b
    x = jnp.linalg.inv(A) @ bb if left else bb @ jnp.linalg.inv(A)
    return x[..., 0] if vector else x


SOLVE_CASES = cases(*(Case(shapes, dict(left=left)) for shapes, left in [
    (((2, 3, 3), (3,)), True),  # a vector, broadcast over A's batch
    (((2, 3, 3), (2, 2, 3)), False),  # X A = B
]))


def _solve_triangular_ref(a, b, *, upper, left, unitriangular):
    A = well(a)
    if left:
        return jsl.solve_triangular(A, b, lower=not upper, unit_diagonal=unitriangular)
    return jsl.solve_triangular(A.mT, b.mT, lower=upper, unit_diagonal=unitriangular).mT


TRIANGULAR_CASES = cases(*(Case(shapes, dict(upper=u, left=l, unitriangular=t)) for shapes, u, l, t in [
    (((2, 3, 3), (3, 2)), True, True, False),
    (((2, 3, 3), (2, 2, 3)), False, False, True),  # X A = B, unit diagonal
]))

SQUARE = shape_cases([((2, 3, 3),), ((0, 3, 3),)])

PINV_CASES = cases(Case(((4, 3),), dict(hermitian=False)))  # hermitian=True: only the forward differs (semantics)


def _pinv_fg(x, *, hermitian):
    return fg.linalg.pinv(sym_nonsingular(x) if hermitian else rect(x), hermitian=hermitian)


def _pinv_ref(x, *, hermitian):
    return jnp.linalg.pinv(sym_nonsingular(x) if hermitian else rect(x), hermitian=hermitian)


def _slogdet_fg(x):
    sign, logabsdet = fg.linalg.slogdet(flip_last(well(x)))
    return logabsdet + sign  # the sign has no gradient


def _slogdet_ref(x):
    sign, logabsdet = jnp.linalg.slogdet(flip_last(well(x)))
    return logabsdet + sign


# -- decompositions ------------------------------------------------------------------------------------------------
CHOLESKY_CASES = cases(Case(((2, 3, 3),), dict(upper=True)))  # L^T of the lower-triangle primitive


def _cholesky_ref(x, *, upper):
    low = jnp.linalg.cholesky(spd(x))
    return low.mT if upper else low


QR_CASES = cases(*(Case((s,), dict(mode=m)) for s, m in [
    ((4, 3), "reduced"), ((3, 4), "complete"),  # tall, and wide (for which complete == reduced)
]))


def _qr_fg(x, *, mode):
    q, r = fg.linalg.qr(rect(x), mode=mode)
    return (q * q) @ (r * r)


def _qr_ref(x, *, mode):
    q, r = jnp.linalg.qr(rect(x), mode=mode)
    return (q * q) @ (r * r)


EIGH_CASES = cases(Case(((2, 3, 3),), dict(UPLO="U")))  # (eigvalsh covers UPLO="L")


def _eigh_fg(x, *, UPLO):
    w, v = fg.linalg.eigh(sym(x), UPLO=UPLO)
    return w.unsqueeze(-2) + v * v


def _eigh_ref(x, *, UPLO):
    w, v = jnp.linalg.eigh(sym(x), UPLO=UPLO)
    return w[..., None, :] + v * v


SVD_CASES = cases(*(Case((s,), dict(full_matrices=f)) for s, f in [
    ((4, 3), False), ((3, 4), True),  # tall; wide with the extra rows of Vh (no gradient). Square: svdvals
]))


def _usv(u, s, vh):
    k = s.shape[-1]
    if u.shape[-1] != k:
        u = u[..., :, :k]
    if vh.shape[-2] != k:
        vh = vh[..., :k, :]
    return (u * u * s[..., None, :]) @ (vh * vh)


def _svd_fg(x, *, full_matrices):
    return _usv(*fg.linalg.svd(rect(x), full_matrices=full_matrices))


def _svd_ref(x, *, full_matrices):
    return _usv(*jnp.linalg.svd(rect(x), full_matrices=False))


RECTS = shape_cases([((2, 3, 3),)])


# -- norms ------------------------------------------------------------------------------------------------------------
VECTOR_NORM_CASES = cases(*(Case((s,), dict(ord=o, dim=d, keepdim=k)) for s, o, d, k in [
    ((2, 3), 2, 1, False),
    ((2, 3, 3), 1, (0, 2), True),
    ((2, 3), 3, -1, False),  # p > 2
    ((2, 3), -1, 1, False),  # p < 1
    ((2, 3), INF, 1, False),
    ((2, 0), 2, 1, False),  # empty slices: norm 0, gradient 0
]))


def _vector_norm_ref(x, *, ord, dim, keepdim):
    return jnp.linalg.vector_norm(norm_input(x), ord=ord, axis=dim, keepdims=keepdim)


MATRIX_NORM_CASES = cases(*(Case(((2, 3, 4),), dict(ord=o, dim=d, keepdim=k)) for o, d, k in [
    ("nuc", (2, 1), True), (-1, (0, 2), False),  # through svdvals; through sums of |A| and a min
]))


def _matrix_norm_ref(x, *, ord, dim, keepdim):
    a = jnp.moveaxis(rect(x), dim, (-2, -1))
    out = jnp.linalg.matrix_norm(a, ord=ord)
    return jnp.expand_dims(out, tuple(sorted(d % x.ndim for d in dim))) if keepdim else out


NORM_CASES = cases(*(Case((s,), dict(ord=o, dim=d, keepdim=k)) for s, o, d, k in [
    ((2, 3, 4), None, None, False),  # the 2-norm of all entries
    ((3, 4), INF, None, False),  # a matrix norm of a 2-D input
]))


def _prepared(x):
    return rect(x) if x.ndim >= 2 else x


def _norm_ref(x, *, ord, dim, keepdim):
    a = _prepared(x)
    if dim is None and ord is None:
        return jnp.linalg.norm(a.reshape(-1))
    if dim is None:
        return jnp.linalg.norm(a, ord=ord)
    return jnp.linalg.norm(a, ord=ord, axis=dim, keepdims=keepdim)


def _e(name, fg_fn, ref_fn, arity, case_strategy, domain=REAL, max_examples=None) -> OpEntry:
    return OpEntry(name, fg_fn, ref_fn, arity, case_strategy, domain, max_examples)


TABLE = [
    # products
    _e("mm", fg.mm, jnp.matmul, 2, shape_cases([((2, 3), (3, 3)), ((2, 0), (0, 3))])),
    _e("bmm", fg.bmm, jnp.matmul, 2, shape_cases([((2, 2, 3), (2, 3, 3))])),
    _e("mv", fg.mv, jnp.matmul, 2, shape_cases([((2, 3), (3,))])),
    _e("dot", fg.dot, jnp.dot, 2, shape_cases([((3,), (3,)), ((0,), (0,))])),
    _e("vdot", fg.vdot, jnp.vdot, 2, shape_cases([((3,), (3,))])),
    _e("outer", fg.outer, jnp.outer, 2, shape_cases([((2,), (3,))])),
    _e("kron", fg.kron, jnp.kron, 2, shape_cases([((2, 2, 1), (3,))])),
    _e("tensordot", lambda a, b, dims: fg.tensordot(a, b, dims), lambda a, b, dims: jnp.tensordot(a, b, dims), 2,
       TENSORDOT_CASES),
    _e("einsum", lambda *xs, eq: fg.einsum(eq, *xs), lambda *xs, eq: jnp.einsum(eq, *xs), None, EINSUM_CASES),
    _e("multi_dot", lambda *xs: fg.linalg.multi_dot(xs), lambda *xs: jnp.linalg.multi_dot(xs), None,
       shape_cases([((2, 3), (3, 3), (3,))])),
    _e("vecdot", lambda x, y: fg.linalg.vecdot(x, y), lambda x, y: jnp.sum(jnp.conj(x) * y, -1), 2,
       shape_cases([((2, 3), (3,))])),
    # inverses and determinants
    _e("inv", lambda x: fg.linalg.inv(well(x)), lambda x: jnp.linalg.inv(well(x)), 1, SQUARE, WELL),
    _e("solve", lambda a, b, left: fg.linalg.solve(well(a), b, left=left), _solve_ref, 2, SOLVE_CASES, (WELL, REAL)),
    _e("solve_triangular",
       lambda a, b, upper, left, unitriangular: fg.linalg.solve_triangular(
           well(a), b, upper=upper, left=left, unitriangular=unitriangular),
       _solve_triangular_ref, 2, TRIANGULAR_CASES, (WELL, REAL)),
    _e("det", lambda x: fg.linalg.det(well(x)), lambda x: jnp.linalg.det(well(x)), 1, shape_cases([((2, 3, 3),)]),
       WELL),
    _e("slogdet", _slogdet_fg, _slogdet_ref, 1, shape_cases([((2, 3, 3),)]), WELL),
    _e("pinv", _pinv_fg, _pinv_ref, 1, PINV_CASES, SMALL),
    # decompositions
    _e("cholesky", lambda x, upper: fg.linalg.cholesky(spd(x), upper=upper), _cholesky_ref, 1, CHOLESKY_CASES),
    _e("qr", _qr_fg, _qr_ref, 1, QR_CASES, SMALL),
    _e("eigh", _eigh_fg, _eigh_ref, 1, EIGH_CASES, SMALL),
    _e("eigvalsh", lambda x: fg.linalg.eigvalsh(sym(x)), lambda x: jnp.linalg.eigvalsh(sym(x)), 1,
       shape_cases([((2, 3, 3),)]), SMALL),
    _e("svd", _svd_fg, _svd_ref, 1, SVD_CASES, SMALL),
    _e("svdvals", lambda x: fg.linalg.svdvals(rect(x)), lambda x: jnp.linalg.svd(rect(x), compute_uv=False), 1,
       RECTS, SMALL),
    # norms
    _e("vector_norm", lambda x, ord, dim, keepdim: fg.linalg.vector_norm(x, ord, dim, keepdim), _vector_norm_ref, 1,
       VECTOR_NORM_CASES, NONZERO),
    _e("matrix_norm", lambda x, ord, dim, keepdim: fg.linalg.matrix_norm(rect(x), ord, dim, keepdim),
       _matrix_norm_ref, 1, MATRIX_NORM_CASES, SMALL_NONZERO),
    _e("norm", lambda x, ord, dim, keepdim: fg.linalg.norm(_prepared(x), ord, dim, keepdim), _norm_ref, 1,
       NORM_CASES, SMALL_NONZERO),
]


# -- the same programs in PyTorch (optional oracle: tests/test_ops_against_torch.py) ---------------------------------
def _torch():
    import torch

    return torch


def _t_qr(x, *, mode):
    q, r = _torch().linalg.qr(rect(x), mode=mode)
    return (q * q) @ (r * r)


def _t_eigh(x, *, UPLO):
    w, v = _torch().linalg.eigh(sym(x), UPLO=UPLO)
    return w.unsqueeze(-2) + v * v


def _t_svd(x, *, full_matrices):
    return _usv(*_torch().linalg.svd(rect(x), full_matrices=full_matrices))


def _t_slogdet(x):
    sign, logabsdet = _torch().linalg.slogdet(flip_last(well(x)))
    return logabsdet + sign


TORCH = {
    "mm": lambda a, b: _torch().mm(a, b),
    "bmm": lambda a, b: _torch().bmm(a, b),
    "mv": lambda a, b: _torch().mv(a, b),
    "dot": lambda a, b: _torch().dot(a, b),
    "vdot": lambda a, b: _torch().vdot(a, b),
    "outer": lambda a, b: _torch().outer(a, b),
    "kron": lambda a, b: _torch().kron(a, b),
    "tensordot": lambda a, b, dims: _torch().tensordot(a, b, dims=dims),
    "einsum": lambda *xs, eq: _torch().einsum(eq, *xs),
    "multi_dot": lambda *xs: _torch().linalg.multi_dot(xs),
    "vecdot": lambda x, y: _torch().linalg.vecdot(x, y),
    "inv": lambda x: _torch().linalg.inv(well(x)),
    "solve": lambda a, b, left: _torch().linalg.solve(well(a), b, left=left),
    "solve_triangular": lambda a, b, upper, left, unitriangular: _torch().linalg.solve_triangular(
        well(a), b, upper=upper, left=left, unitriangular=unitriangular),
    "det": lambda x: _torch().linalg.det(well(x)),
    "slogdet": _t_slogdet,
    "pinv": lambda x, hermitian: _torch().linalg.pinv(sym_nonsingular(x) if hermitian else rect(x),
                                                      hermitian=hermitian),
    "cholesky": lambda x, upper: _torch().linalg.cholesky(spd(x), upper=upper),
    "qr": _t_qr,
    "eigh": _t_eigh,
    "eigvalsh": lambda x: _torch().linalg.eigvalsh(sym(x)),
    "svd": _t_svd,
    "svdvals": lambda x: _torch().linalg.svdvals(rect(x)),
    "vector_norm": lambda x, ord, dim, keepdim: _torch().linalg.vector_norm(x, ord, dim, keepdim),
    "matrix_norm": lambda x, ord, dim, keepdim: _torch().linalg.matrix_norm(rect(x), ord, dim, keepdim),
    "norm": lambda x, ord, dim, keepdim: _torch().linalg.norm(_prepared(x), ord, dim, keepdim),
}


#: Entries whose ops refuse complex inputs (an OpError); every other entry is also checked on complex ones.
REAL_ONLY = {
    "slogdet", "pinv", "cholesky", "qr", "eigh", "eigvalsh", "svd", "svdvals", "matrix_norm"
}
#: decompositions fgraph refuses on complex input (docs/linalg.md).
TORCH_TAKES_COMPLEX = {"slogdet", "pinv", "cholesky", "qr", "eigvalsh", "svd", "svdvals", "matrix_norm"}
