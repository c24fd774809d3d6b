"""Fused products and friends (fgraph/ops/products.py) against pure JAX: addmm, addmv, addbmm, baddbmm,
addr, addcmul, addcdiv, inner, trace, chain_matmul, matrix_power, cross / linalg.cross.

Inputs of ``matrix_power`` with a negative exponent are made well conditioned inside the
functions (``x + 2 I`` with ``|x| <= 0.5``). Every op here has a second derivative.
"""
import functools
import warnings

import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st

import fgraph as fg
from op_harness import NONZERO, REAL, Case, OpEntry, cases, shape_cases, torch

#: No op here lacks a second derivative.
FIRST_ORDER_ONLY: dict = {}

WELL = st.floats(-0.5, 0.5)


def _e(name, fg_fn, ref_fn, arity, case_strategy, domain=REAL, max_examples=None) -> OpEntry:
    return OpEntry(name, fg_fn, ref_fn, arity, case_strategy, domain, max_examples)


# -- beta * input + alpha * product ---------------------------------------------------------------------------
def _addprod_cases(shapes):
    """The same shapes with scalars, and with beta=0 (input ignored); beta = alpha = 1 skips the scalings
    (the crosscheck sample of addbmm and tests/test_products_distances.py take that path)."""
    return cases(*(Case(shapes, dict(beta=b, alpha=a)) for b, a in [(0.5, 2.0), (0, -1.5)]))


def _addprod_ref(spec):
    def ref(inp, a, b, *, beta, alpha):
        prod = alpha * jnp.einsum(spec, a, b)
        return prod if beta == 0 else beta * inp + prod

    return ref


def _fg_addprod(name):
    def call(inp, a, b, *, beta, alpha):
        return getattr(fg, name)(inp, a, b, beta=beta, alpha=alpha)

    return call


def _torch_addprod(name):
    def call(inp, a, b, *, beta, alpha):
        return getattr(torch, name)(inp, a, b, beta=beta, alpha=alpha)

    return call


ADDPROD = {  # name: (einsum of the product, shapes of input and factors)
    "addmm": ("ij,jk->ik", ((3,), (2, 3), (3, 3))),
    "addmv": ("ij,j->i", ((2,), (2, 3), (3,))),
    "addbmm": ("bij,bjk->ik", ((1, 3), (2, 2, 3), (2, 3, 3))),
    "baddbmm": ("bij,bjk->bik", ((2, 1, 3), (2, 2, 3), (2, 3, 3))),
    "addr": ("i,j->ij", ((2, 3), (2,), (3,))),
}


# -- pointwise ------------------------------------------------------------------------------------------------
POINTWISE3 = cases(Case(((2, 3), (3,), (2, 1)), dict(value=0.5)), Case(((2, 3), (2, 3), (2, 3)), dict(value=1)))


def _chain_matmul(*xs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fg.chain_matmul(*xs)


def _torch_chain_matmul(*xs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.chain_matmul(*xs)


def _well(x):
    eye = np.eye(x.shape[-1]) * 2.0
    if isinstance(x, fg.Tensor):
        return x + fg.tensor(eye, dtype=x.dtype)
    if type(x).__module__.startswith("torch"):
        return x + torch.tensor(eye, dtype=x.dtype)
    return x + jnp.asarray(eye, dtype=x.dtype)


MATRIX_POWER_CASES = cases(Case(((2, 3, 3),), dict(n=3)), Case(((3, 3),), dict(n=-2)), Case(((3, 3),), dict(n=1)))


def _matrix_power_ref(x, *, n):
    return jnp.linalg.matrix_power(_well(x), n)


CROSS_CASES = cases(Case(((2, 3), (1, 3)), dict(dim=-1)), Case(((3, 2), (3, 1)), dict(dim=0)))


def _cross_ref(a, b, *, dim):
    a, b = jnp.broadcast_arrays(a, b)
    return jnp.cross(a, b, axis=dim)


TABLE = [
    *(_e(name, _fg_addprod(name), _addprod_ref(spec), 3, _addprod_cases(shapes))
      for name, (spec, shapes) in ADDPROD.items()),
    _e("addcmul", lambda x, a, b, value: fg.addcmul(x, a, b, value=value),
       lambda x, a, b, value: x + value * a * b, 3, POINTWISE3),
    _e("addcdiv", lambda x, a, b, value: fg.addcdiv(x, a, b, value=value),
       lambda x, a, b, value: x + value * a / b, 3, POINTWISE3, (REAL, REAL, NONZERO)),
    _e("inner", fg.inner, jnp.inner, 2, shape_cases([((2, 3), (4, 3)), ((), (3,)), ((2, 1, 3), (3,))])),
    _e("trace", fg.trace, jnp.trace, 1, shape_cases([((3, 3),), ((2, 3),)])),
    _e("chain_matmul", _chain_matmul, lambda *xs: functools.reduce(jnp.matmul, xs), None,
       shape_cases([((2, 3), (3, 3), (3, 2)), ((2, 3),)])),
    _e("matrix_power", lambda x, n: fg.matrix_power(_well(x), n), _matrix_power_ref, 1, MATRIX_POWER_CASES, WELL),
    _e("linalg_cross", lambda a, b, dim: fg.linalg.cross(a, b, dim=dim), _cross_ref, 2, CROSS_CASES),
    _e("cross", lambda a, b, dim: fg.cross(a, b, dim), _cross_ref, 2, CROSS_CASES),
]

TORCH = {
    **{name: _torch_addprod(name) for name in ADDPROD},
    "addcmul": lambda x, a, b, value: torch.addcmul(x, a, b, value=value),
    "addcdiv": lambda x, a, b, value: torch.addcdiv(x, a, b, value=value),
    "inner": lambda a, b: torch.inner(a, b),
    "trace": lambda x: torch.trace(x),
    "chain_matmul": _torch_chain_matmul,
    "matrix_power": lambda x, n: torch.linalg.matrix_power(_well(x), n),
    "linalg_cross": lambda a, b, dim: torch.linalg.cross(a, b, dim=dim),
    "cross": lambda a, b, dim: torch.cross(a, b, dim),
}
