"""PyTorch's remaining top-level names (fgraph/ops/torch_extras.py, complex_more.py, linalg_legacy.py,
special_bessel.py) against pure JAX.

References are independent of the kernels: ``bessel_j0``/``j1`` against their power series
(fgraph uses Cephes' rational approximations), ``erfcx`` against ``exp(x**2) * erfc(x)``
(fgraph switches to a continued fraction from 3 on: the domain crosses it), complex
functions against ``jnp``'s complex arithmetic through real inputs and outputs, the
Cholesky/triangular solves against ``jnp.linalg.solve``. Matrices are made well conditioned
inside the call (``tril(m) + 3 I``), so the gradient for ``m`` is the one on the triangle read.
"""
import math

import jax.numpy as jnp
import jax.scipy.linalg as jsl
import jax.scipy.special as jsp
import numpy as np
from hypothesis import strategies as st

import fgraph as fg
from op_harness import GRID_A, GRID_B, NONZERO, POSITIVE, REAL, Case, OpEntry, cases, grid, torch

UNARY = [((2, 3),), ((3, 0),)]
UNARY_0D = [((),), ((2, 3),)]
BINARY = [((2, 3), (2, 3)), ((3,), (2, 3))]
S = fg.special
MAT = [((3, 2), (3, 3))]  # (b, m)


# -- Bessel J0/J1: power series sum_k (-1)^k (x/2)^(2k+n) / (k! (k+n)!), exact enough on |x| <= 6 ------------------
def _bessel_series(x, n):
    h = x / 2.0
    return sum((-1) ** k * h ** (2 * k + n) / float(math.factorial(k) * math.factorial(k + n)) for k in range(30))


def bessel_j0_ref(x):
    return _bessel_series(x, 0)


def bessel_j1_ref(x):
    return _bessel_series(x, 1)


def erfcx_ref(x):
    return jnp.exp(x * x) * jsp.erfc(x)


# -- complex functions through real inputs and outputs ---------------------------------------------------------------
def _as_real(z):
    return jnp.stack([jnp.real(z), jnp.imag(z)], -1)


def angle_complex(x, y):
    return fg.angle(fg.complex(x, y))


def angle_complex_ref(x, y):
    return jnp.angle(x + 1j * y)


def angle_real(x):
    return fg.angle(x)


def angle_real_ref(x):
    if jnp.iscomplexobj(x):  # the complex checks of this entry
        return jnp.angle(x)
    return jnp.where(x < 0, jnp.pi, 0.0).astype(x.dtype) + 0 * x


def sgn_ref(x):
    return x / jnp.abs(x) if jnp.iscomplexobj(x) else jnp.sign(x)  # JAX's sign has a zero derivative


def polar(r, t):
    return fg.view_as_real(fg.polar(r, t))


def polar_ref(r, t):
    return _as_real(r * jnp.exp(1j * t))


def conj(x, y):
    return fg.view_as_real(fg.conj(fg.complex(x, y)))


def conj_ref(x, y):
    return _as_real(jnp.conj(x + 1j * y))


def sgn_complex(x, y):
    return fg.view_as_real(fg.complex(x, y).sgn())


def sgn_complex_ref(x, y):
    z = x + 1j * y
    return _as_real(z / jnp.abs(z))


def view_as_complex(x):
    return fg.angle(fg.view_as_complex(x)) + fg.imag(fg.view_as_complex(x)) * 2


def view_as_complex_ref(x):
    return jnp.arctan2(x[..., 1], x[..., 0]) + x[..., 1] * 2


# -- linear algebra ---------------------------------------------------------------------------------------------------
def _tri(m, upper):
    k = 3 * np.eye(m.shape[-1])
    if isinstance(m, fg.Tensor):
        return (fg.triu(m) if upper else fg.tril(m)) + fg.tensor(k, dtype=m.dtype)
    return (jnp.triu(m) if upper else jnp.tril(m)) + k.astype(m.dtype)


def triangular_solve(b, m, *, upper, transpose):
    return fg.triangular_solve(b, _tri(m, upper), upper=upper, transpose=transpose).solution


def triangular_solve_ref(b, m, *, upper, transpose):
    a = _tri(m, upper)
    return jnp.linalg.solve(a.swapaxes(-1, -2) if transpose else a, b)


def cholesky_solve(b, m, *, upper):
    return fg.cholesky_solve(b, _tri(m, upper), upper)


def cholesky_solve_ref(b, m, *, upper):
    f = _tri(m, upper)
    a = f.swapaxes(-1, -2) @ f if upper else f @ f.swapaxes(-1, -2)
    return jnp.linalg.solve(a, b)


def cholesky_inverse(m, *, upper):
    return _tri(m, upper).cholesky_inverse(upper)


def cholesky_inverse_ref(m, *, upper):
    f = _tri(m, upper)
    return jnp.linalg.inv(f.swapaxes(-1, -2) @ f if upper else f @ f.swapaxes(-1, -2))


def lu(m):
    return fg.lu(m + fg.tensor(3 * np.eye(m.shape[-1]), dtype=m.dtype))[0]


def lu_ref(m):
    return jsl.lu_factor(m + 3 * jnp.eye(m.shape[-1], dtype=m.dtype))[0]


# -- numerical integration --------------------------------------------------------------------------------------------
def trapezoid_x(y, x, *, dim):
    return fg.trapezoid(y, x, dim=dim)


def trapezoid_x_ref(y, x, *, dim):
    return jnp.trapezoid(y, x, axis=dim)


def trapezoid_dx(y, *, dx, dim):
    return fg.trapezoid(y, dx=dx, dim=dim)


def trapezoid_dx_ref(y, *, dx, dim):
    return jnp.trapezoid(y, dx=dx, axis=dim)


def cumulative_trapezoid(y, x):
    return fg.cumulative_trapezoid(y, x)


def cumulative_trapezoid_ref(y, x):
    return jnp.cumsum((y[..., 1:] + y[..., :-1]) * jnp.diff(x) / 2, -1)


def mvlgamma(x, *, p):
    return x.mvlgamma(p)


def where_method(a, b):
    return a.where(a > 0.5, b)


TABLE = [
    OpEntry("bessel_j0", S.bessel_j0, bessel_j0_ref, 1, grid(UNARY[:1]), st.floats(-6.0, 6.0), max_examples=6),
    OpEntry("bessel_j1", S.bessel_j1, bessel_j1_ref, 1, grid(UNARY[:1]), st.floats(-6.0, 6.0), max_examples=6),
    OpEntry("erfcx", S.erfcx, erfcx_ref, 1, grid(UNARY_0D), st.floats(-2.0, 5.0), max_examples=8),
    OpEntry("angle_complex", angle_complex, angle_complex_ref, 2, grid(BINARY[:1]), (REAL, NONZERO), max_examples=4),
    OpEntry("angle_real", angle_real, angle_real_ref, 1, grid(UNARY[:1]), NONZERO, max_examples=4),
    OpEntry("polar", polar, polar_ref, 2, grid(BINARY[1:]), (POSITIVE, REAL), max_examples=4),
    OpEntry("conj", conj, conj_ref, 2, grid(BINARY[:1]), REAL, max_examples=4),
    OpEntry("sgn_complex", sgn_complex, sgn_complex_ref, 2, grid(BINARY[:1]), NONZERO, max_examples=4),
    OpEntry("sgn_real", fg.sgn, sgn_ref, 1, grid(UNARY[:1]), NONZERO, max_examples=4),
    OpEntry("view_as_complex", view_as_complex, view_as_complex_ref, 1, grid([((3, 2),)]), NONZERO, max_examples=3),
    OpEntry("fmax", fg.fmax, jnp.fmax, 2, grid(BINARY), (GRID_A, GRID_B)),
    OpEntry("fmin", lambda a, b: a.fmin(b), jnp.fmin, 2, grid(BINARY[:1]), (GRID_A, GRID_B)),
    OpEntry("triangular_solve", triangular_solve, triangular_solve_ref, 2,
            grid(MAT, [dict(upper=True, transpose=False), dict(upper=False, transpose=True)]), REAL, max_examples=4),
    OpEntry("cholesky_solve", cholesky_solve, cholesky_solve_ref, 2, grid(MAT, [dict(upper=False), dict(upper=True)]),
            REAL, max_examples=4),
    OpEntry("cholesky_inverse", cholesky_inverse, cholesky_inverse_ref, 1, grid([((3, 3),)], [dict(upper=False)]),
            REAL, max_examples=4),
    OpEntry("lu", lu, lu_ref, 1, grid([((3, 3),)]), REAL, max_examples=3),
    OpEntry("trapezoid_x", trapezoid_x, trapezoid_x_ref, 2,
            cases(Case(((2, 4), (4,)), dict(dim=-1)), Case(((4, 3), (4, 3)), dict(dim=0))), REAL, max_examples=4),
    OpEntry("trapezoid_dx", trapezoid_dx, trapezoid_dx_ref, 1, grid([((4, 3),)], [dict(dx=0.5, dim=0)]), REAL,
            max_examples=4),
    OpEntry("cumulative_trapezoid", cumulative_trapezoid, cumulative_trapezoid_ref, 2, grid([((2, 4), (4,))]), REAL,
            max_examples=3),
    OpEntry("mvlgamma", mvlgamma, lambda x, p: jsp.multigammaln(x, p), 1, grid(UNARY[:1], [dict(p=2)]),
            st.floats(1.2, 3.0), max_examples=1),
    OpEntry("where_method", where_method, lambda a, b: jnp.where(a > 0.5, a, b), 2, grid(BINARY[:1]),
            (GRID_B, REAL), max_examples=2),
]


def _torch_tri(m, upper):
    k = 3 * torch.eye(m.shape[-1], dtype=m.dtype)
    return (torch.triu(m) if upper else torch.tril(m)) + k


def _torch_j0(x):
    """PyTorch's J0 with J0' = -J1 attached (PyTorch has no derivative for bessel_j0/j1)."""
    d = x.detach()
    return torch.special.bessel_j0(d) - (x - d) * torch.special.bessel_j1(d)


#: The PyTorch oracle, with the entries' call signatures.
TORCH = {
    "bessel_j0": lambda x: _torch_j0(x),
    "erfcx": lambda x: torch.special.erfcx(x),
    "angle_complex": lambda x, y: torch.angle(torch.complex(x, y)),
    "angle_real": lambda x: torch.angle(x),
    "polar": lambda r, t: torch.view_as_real(torch.polar(r, t)),
    "conj": lambda x, y: torch.view_as_real(torch.conj_physical(torch.complex(x, y))),
    "sgn_complex": lambda x, y: torch.view_as_real(torch.complex(x, y).sgn()),
    "sgn_real": lambda x: torch.sgn(x) + 0 * x,  # PyTorch's gradient is a ZeroTensor, which numpy() refuses
    "view_as_complex": lambda x: torch.view_as_complex(x).angle() + torch.view_as_complex(x).imag * 2,
    "fmax": lambda a, b: torch.fmax(a, b),
    "fmin": lambda a, b: a.fmin(b),
    "triangular_solve": lambda b, m, upper, transpose: torch.triangular_solve(
        b, _torch_tri(m, upper), upper=upper, transpose=transpose).solution,
    "cholesky_solve": lambda b, m, upper: torch.cholesky_solve(b, _torch_tri(m, upper), upper),
    "cholesky_inverse": lambda m, upper: torch.cholesky_inverse(_torch_tri(m, upper), upper),
    "lu": lambda m: torch.lu(m + 3 * torch.eye(m.shape[-1], dtype=m.dtype))[0],
    "trapezoid_x": lambda y, x, dim: torch.trapezoid(y, x, dim=dim),
    "trapezoid_dx": lambda y, dx, dim: torch.trapezoid(y, dx=dx, dim=dim),
    "cumulative_trapezoid": lambda y, x: torch.cumulative_trapezoid(y, x),
    "mvlgamma": lambda x, p: x.mvlgamma(p),
    "where_method": lambda a, b: a.where(a > 0.5, b),
}
#: PyTorch's bessel_j0 (its Cephes port drops the monic denominators' leading 1) is off by up to ~4e-7.
TORCH_TOLERANCES = {"bessel_j0": (1e-6, 1e-6)}


#: Entries whose ops refuse complex inputs (an OpError); every other entry is also checked on complex ones.
REAL_ONLY = {
    "bessel_j0", "bessel_j1", "erfcx", "angle_complex", "polar", "conj", "sgn_complex", "view_as_complex", "fmax",
    "fmin", "cholesky_solve", "cholesky_inverse", "lu", "mvlgamma", "where_method"
}
#: decompositions fgraph refuses on complex input (docs/linalg.md).
TORCH_TAKES_COMPLEX = {"cholesky_solve", "cholesky_inverse", "lu"}
