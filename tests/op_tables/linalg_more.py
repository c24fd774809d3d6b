"""More linear algebra (fgraph/ops/linalg_more.py, linalg_lu.py, linalg_eig.py, complex_parts.py) against pure
JAX: forward, first derivative, Hessian-vector product; and against PyTorch (``TORCH``).

Inputs are built from small free inputs (``|x| <= 0.1``) as in ``op_tables/linalg.py``:

* :func:`pivoted` ``x + D``, ``D`` with entries ``3, 2, 1.5`` on a reversed diagonal: LU's pivot rows
  never change under the perturbation and ``U``'s diagonal stays away from 0;
* :func:`nonsym` ``x + R``: ``R`` a rotation block with eigenvalues ``+-i`` and a 2 (``kind='complex'``),
  or an upper triangular matrix with eigenvalues ``0, 1.5, 3`` (``kind='real'``): distinct eigenvalues.

Eigenvalues come in LAPACK's order and eigenvectors up to a phase, so eig entries return
symmetric functions of the eigenvalues and ``sum_j |V_ij|^2 f(L_j)``, which depend on neither
(PyTorch's ``geev`` and JAX's may order them differently). ``householder_product`` has no JAX
derivative: its reference is the same product of reflectors written in ``jax.numpy``.
"""
import math

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st

import fgraph as fg
from op_harness import REAL, Case, OpEntry, cases, torch
from op_tables.linalg import _const, rect, spd, well

FIRST_ORDER_ONLY: dict = {}

SMALL = st.floats(-0.1, 0.1)
WELL = st.floats(-0.5, 0.5)


def _zero_if_tiny(v: float) -> float:
    return 0.0 if abs(v) < 1e-6 else v


# JAX's eigenvector derivative loses precision when the matrix is block diagonal but for couplings far
# below its scale (1e-38 next to 1: 1.5e-4 off central differences in float64, where fgraph's is within
# 1e-8; tests/test_linalg_more.py checks fgraph there). eig's table draws no such tiny entries.
NOT_TINY = SMALL.map(_zero_if_tiny)


def pivoted(x):
    m, n = x.shape[-2:]
    d = np.zeros((m, n))
    for i, v in enumerate([3.0, 2.0, 1.5, 1.2][: min(m, n)]):
        d[m - 1 - i, i] = v
    return x + _const(x, d)


_ROTATION = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 2.0]])
_UPPER = np.array([[0.0, 1.0, 0.5], [0.0, 1.5, 1.0], [0.0, 0.0, 3.0]])


def nonsym(x, kind):
    return x + _const(x, _ROTATION if kind == "complex" else _UPPER)


# -- eig: order- and phase-invariant outputs, the same code for fgraph, JAX and torch -------------------------
def _eigval_features(w):
    re, im = w.real, w.imag
    return ((re * re).sum(-1), (re * re * re).sum(-1), (im * im).sum(-1), (re * im * im).sum(-1))


def _stack(xs, like):
    if isinstance(like, fg.Tensor):
        return fg.stack(list(xs), -1)
    if type(like).__module__.startswith("torch"):
        return torch.stack(list(xs), -1)
    return jnp.stack(xs, -1)


def _eigvals_out(w, like):
    return _stack(_eigval_features(w), like)


def _eig_out(w, v):
    vv = v.real * v.real + v.imag * v.imag
    f = w.real + w.imag * w.imag + w.real * w.real * w.real
    return (vv * f[..., None, :]).sum(-1)


def _jax_eig(a):
    return jax.lax.linalg.eig(a, compute_left_eigenvectors=False, enable_eigvec_derivs=True)


def _eigvals_fg(x, *, kind):
    return _eigvals_out(fg.linalg.eigvals(nonsym(x, kind)), x)


def _eigvals_ref(x, *, kind):
    return _eigvals_out(_jax_eig(nonsym(x, kind))[0], x)


def _eigvals_torch(x, *, kind):
    return _eigvals_out(torch.linalg.eigvals(nonsym(x, kind)), x)


def _eig_fg(x, *, kind):
    return _eig_out(*fg.linalg.eig(nonsym(x, kind)))


def _eig_ref(x, *, kind):
    return _eig_out(*_jax_eig(nonsym(x, kind)))


def _eig_torch(x, *, kind):
    return _eig_out(*torch.linalg.eig(nonsym(x, kind)))


EIG_CASES = cases(Case(((2, 3, 3),), dict(kind="complex")), Case(((3, 3),), dict(kind="real")))


# -- matrix_exp, lstsq, cond ----------------------------------------------------------------------------------
MATRIX_EXP_CASES = cases(Case(((2, 3, 3),)), Case(((0, 3, 3),)))

LSTSQ_CASES = cases(*(Case(s, dict(driver=d)) for s, d in [
    (((4, 3), (4, 2)), "gelsd"),  # tall: least squares
    (((2, 3, 4), (2, 3)), None),  # wide: minimum norm, a batch of vectors B
]))


def _lstsq_ref(a, b, *, driver):
    A = rect(a)
    if b.ndim == A.ndim - 1:
        return jax.vmap(lambda m, v: jnp.linalg.lstsq(m, v)[0])(A, b)
    return jnp.linalg.lstsq(A, b)[0]


COND_CASES = cases(*(Case((s,), dict(p=p)) for s, p in [
    ((4, 3), None), ((3, 4), -2), ((2, 3, 3), "fro"), ((3, 3), "nuc"),
]))


def _cond_input(x, p):
    return rect(x)  # distinct singular values (JAX's svd has no second derivative at repeated ones)


def _cond_ref(x, *, p):
    a = _cond_input(x, p)
    if p in (None, -2):
        s = jnp.linalg.svd(a, compute_uv=False)
        return s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1]
    return jnp.linalg.matrix_norm(a, ord=p) * jnp.linalg.matrix_norm(jnp.linalg.inv(a), ord=p)


# -- LU ---------------------------------------------------------------------------------------------------------
LU_SHAPES = cases(Case(((2, 3, 3),)), Case(((3, 4),)), Case(((4, 3),)))


def _lu_fg(x):
    p, low, up = fg.linalg.lu(pivoted(x))
    return (p @ low) @ (up * up)


def _lu_ref(x):
    lu, _, perm = jax.lax.linalg.lu(pivoted(x))
    m, n = x.shape[-2:]
    k = min(m, n)
    low = jnp.tril(lu[..., :, :k], -1) + jnp.eye(m, k, dtype=x.dtype)
    up = jnp.triu(lu[..., :k, :])
    p = (jnp.arange(m)[:, None] == perm[..., None, :]).astype(x.dtype)
    return (p @ low) @ (up * up)


def _lu_torch(x):
    p, low, up = torch.linalg.lu(pivoted(x))
    return (p @ low) @ (up * up)


LU_SOLVE_CASES = cases(*(Case(s, dict(left=l, adjoint=a)) for s, l, a in [
    (((2, 3, 3), (3, 2)), True, False),
    (((3, 3), (2, 2, 3)), False, True),  # X A^T = B, batch from B
]))


def _lu_solve_ref(a, b, *, left, adjoint):
    A = pivoted(a)
    M = A.mT if adjoint else A
    if left:
        return jnp.linalg.solve(M, b)
    return jnp.swapaxes(jnp.linalg.solve(M.mT, jnp.swapaxes(b, -1, -2)), -1, -2)  # X M = B


# -- householder_product, tensorinv, tensorsolve, vander --------------------------------------------------------
#: tau < 0 keeps every reflector I - tau v v^T invertible: PyTorch's backward divides by 1 - tau |v|^2.
TAU = st.floats(-1.0, -0.05)
HOUSEHOLDER_CASES = cases(Case(((4, 3), (2,))), Case(((2, 3, 3), (2, 3))))


def _householder_ref(a, tau):
    m, n = a.shape[-2:]
    v = a * jnp.tril(jnp.ones((m, n), a.dtype), -1) + jnp.eye(m, n, dtype=a.dtype)
    q = jnp.broadcast_to(jnp.eye(m, dtype=a.dtype), a.shape[:-2] + (m, m))
    for i in range(tau.shape[-1]):
        h = jnp.eye(m, dtype=a.dtype) - tau[..., i, None, None] * v[..., :, i, None] * v[..., None, :, i]
        q = q @ h
    return q[..., :, :n]


def _tensor_a(x):
    """A well-conditioned 6 x 6 matrix, shaped (2, 3, 6)."""
    return well(x).reshape(2, 3, 6)


TENSORSOLVE_CASES = cases(Case(((6, 6), (2, 3)), dict(dims=None)), Case(((6, 6), (2, 3)), dict(dims=(0,))))


def _tsolve(lib, a, b, dims):
    if dims is None:
        return lib.linalg.tensorsolve(_tensor_a(a), b)
    return lib.linalg.tensorsolve(well(a).reshape(6, 2, 3), b, dims=dims)  # dim 0 moved last: A^T


def _tsolve_ref(a, b, *, dims):
    A = well(a)
    return jnp.linalg.solve(A if dims is None else A.T, b.reshape(6))


VANDER_CASES = cases(Case(((2, 3),), dict(N=4)), Case(((3,),), dict(N=None)))


def _vander_ref(x, *, N):
    N = x.shape[-1] if N is None else N
    return jnp.stack([x**k for k in range(N)], -1)  # integer powers: a finite derivative at 0


def _complex_parts_fg(x, y):
    z = fg.complex(x, y)
    return fg.real(z) * fg.imag(z) + z.imag * z.imag * z.real


def _complex_parts_torch(x, y):
    z = torch.complex(x, y)
    return torch.real(z) * torch.imag(z) + z.imag * z.imag * z.real


def _e(name, fg_fn, ref_fn, arity, case_strategy, domain=SMALL, max_examples=None, **options) -> OpEntry:
    return OpEntry(name, fg_fn, ref_fn, arity, case_strategy, domain, max_examples, **options)


TABLE = [
    # Imaginary parts as small as the real ones: exp(5 A) of a larger A is too ill-conditioned for complex64.
    _e("matrix_exp", lambda x: fg.linalg.matrix_exp(x * 5.0), lambda x: jax.scipy.linalg.expm(x * 5.0), 1,
       MATRIX_EXP_CASES, max_examples=3, imag_domain=SMALL),
    _e("lstsq", lambda a, b, driver: fg.linalg.lstsq(rect(a), b, driver=driver).solution, _lstsq_ref, 2,
       LSTSQ_CASES, (SMALL, REAL), max_examples=3),
    _e("cond", lambda x, p: fg.linalg.cond(_cond_input(x, p), p), _cond_ref, 1, COND_CASES, max_examples=3),
    _e("eigvals", _eigvals_fg, _eigvals_ref, 1, EIG_CASES),
    _e("eig", _eig_fg, _eig_ref, 1, EIG_CASES, NOT_TINY),
    _e("lu", _lu_fg, _lu_ref, 1, LU_SHAPES),
    _e("lu_factor", lambda x: fg.linalg.lu_factor(pivoted(x)).LU, lambda x: jax.lax.linalg.lu(pivoted(x))[0], 1,
       LU_SHAPES),
    _e("lu_solve",
       lambda a, b, left, adjoint: fg.linalg.lu_solve(*fg.linalg.lu_factor(pivoted(a)), b, left=left,
                                                        adjoint=adjoint),
       _lu_solve_ref, 2, LU_SOLVE_CASES, (SMALL, REAL)),
    _e("householder_product", fg.linalg.householder_product, _householder_ref, 2, HOUSEHOLDER_CASES, (REAL, TAU)),
    _e("tensorinv", lambda x: fg.linalg.tensorinv(_tensor_a(x), ind=2),
       lambda x: jnp.linalg.inv(well(x)).reshape(6, 2, 3), 1, cases(Case(((6, 6),))), WELL),
    _e("tensorsolve", lambda a, b, dims: _tsolve(fg, a, b, dims), _tsolve_ref, 2, TENSORSOLVE_CASES, (WELL, REAL)),
    _e("vander", lambda x, N: fg.linalg.vander(x, N=N), _vander_ref, 1, VANDER_CASES, REAL),
    _e("linalg_diagonal", lambda x: fg.linalg.diagonal(x, offset=1, dim1=0, dim2=-1),
       lambda x: jnp.diagonal(x, 1, 0, -1), 1, cases(Case(((3, 2, 4),))), REAL),
    _e("inv_ex", lambda x: fg.linalg.inv_ex(well(x)).inverse, lambda x: jnp.linalg.inv(well(x)), 1,
       cases(Case(((2, 3, 3),))), WELL),
    _e("cholesky_ex", lambda x: fg.linalg.cholesky_ex(spd(x)).L, lambda x: jnp.linalg.cholesky(spd(x)), 1,
       cases(Case(((2, 3, 3),))), REAL),
    _e("solve_ex", lambda a, b: fg.linalg.solve_ex(well(a), b).result, lambda a, b: jnp.linalg.solve(well(a), b),
       2, cases(Case(((2, 3, 3), (2, 3, 2)))), (WELL, REAL)),
    _e("complex_parts", _complex_parts_fg, lambda x, y: x * y + y * y * x, 2, cases(Case(((2, 3), (3,)))), REAL),
]

def _cond_torch(a, p):
    """torch.linalg.cond's backward fails for 'fro'/'nuc' (it reuses inv_ex's output modified in place):
    its definition, in torch ops (test_linalg_more.py checks the forward against torch.linalg.cond)."""
    if p in (None, -2):
        return torch.linalg.cond(a, p)
    return torch.linalg.matrix_norm(a, p) * torch.linalg.matrix_norm(torch.linalg.inv(a), p)


TORCH = {
    "matrix_exp": lambda x: torch.matrix_exp(x * 5.0),
    "lstsq": lambda a, b, driver: torch.linalg.lstsq(rect(a), b, driver=driver).solution,
    "cond": lambda x, p: _cond_torch(_cond_input(x, p), p),
    "eigvals": _eigvals_torch,
    "eig": _eig_torch,
    "lu": _lu_torch,
    "lu_factor": lambda x: torch.linalg.lu_factor(pivoted(x)).LU,
    "lu_solve": lambda a, b, left, adjoint: torch.linalg.lu_solve(*torch.linalg.lu_factor(pivoted(a)), b, left=left,
                                                                  adjoint=adjoint),
    "householder_product": lambda a, tau: torch.linalg.householder_product(a, tau),
    "tensorinv": lambda x: torch.linalg.tensorinv(_tensor_a(x), ind=2),
    "tensorsolve": lambda a, b, dims: _tsolve(torch, a, b, dims),
    "vander": lambda x, N: torch.linalg.vander(x, N=N),
    "linalg_diagonal": lambda x: torch.linalg.diagonal(x, offset=1, dim1=0, dim2=-1),
    "inv_ex": lambda x: torch.linalg.inv_ex(well(x)).inverse,
    "cholesky_ex": lambda x: torch.linalg.cholesky_ex(spd(x)).L,
    "solve_ex": lambda a, b: torch.linalg.solve_ex(well(a), b).result,
    "complex_parts": _complex_parts_torch,
}


#: Entries whose ops refuse complex inputs (an OpError); every other entry is also checked on complex ones.
REAL_ONLY = {
    "lstsq", "cond", "eigvals", "eig", "lu", "lu_factor", "lu_solve", "householder_product", "cholesky_ex",
    "complex_parts"
}
#: decompositions fgraph refuses on complex input (docs/linalg.md).
TORCH_TAKES_COMPLEX = {
    "lstsq", "cond", "eigvals", "eig", "lu", "lu_factor", "lu_solve", "householder_product", "cholesky_ex",
}
