"""Reductions and scans (fgraph/ops/reduction.py, reduction_minmax.py, reduction_norm.py, scan.py)
against pure JAX: forward, first derivative, Hessian-vector product.

* ``prod``/``cumprod`` are also drawn from a domain full of zeros (slices with no, one and
  several zeros): their gradients and HVPs must be exact there (JAX's own derivatives of
  ``jnp.prod``/``jnp.cumprod`` are exact products, no division).
* Ties: the ``*_ties`` entries draw from {0, 1} (or {-1, 0.5, 1} for the inf-norm), so
  ties are the rule. Their references implement PyTorch's documented behaviour
  explicitly (not through JAX's own choice): ``amax``/``amin``/``max()``/``min()``/
  ``norm(p=inf)`` split the gradient evenly among the tied elements; ``max(x, dim)``
  sends it to the returned index, the first maximal element.
* ``std``'s input gets a fixed ramp added, so that no slice is nearly constant (see
  :func:`spread`); its zero-gradient rule at constant slices is tested in test_reduction_values.py.

Non-differentiable results (argmax, argmin, all, any, max's indices) are checked in
tests/test_reduction_values.py. No op here lacks a second derivative.
"""
import math

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st

import fgraph as fg
from op_harness import GRID_A, GRID_B, NONZERO, REAL, Case, OpEntry, cases, magnitude as magnitude_of

#: No reduction lacks a second derivative (in PyTorch or here).
FIRST_ORDER_ONLY: dict = {}

ZEROS = st.sampled_from([0.0, 0.0, 1.5, -0.5, 2.0, -1.25])  # many slices with one or several zeros
TIES = st.sampled_from([0.0, 1.0])
ABS_TIES = st.sampled_from([-1.0, 0.5, 1.0])  # |x| ties across signs

BIG = (2, 3, 4)


def dims_cases(items, **extra):
    """``Case((shape,), dict(dim=..., keepdim=..., **extra))`` for each ``(shape, dim, keepdim)``."""
    return cases(*(Case((s,), dict(dim=d, keepdim=k, **extra)) for s, d, k in items))


#: The reduction pool: all dims, one (kept, negative), several (a permutation in prod's rule),
#: 0-d, and an empty input. Each case compiles kernels: entries share cases where they can.
REDUCE = [
    (BIG, None, False),
    (BIG, -2, True),
    (BIG, (0, 2), False),
    ((), None, True),
    ((2, 0, 3), 1, False),
]
#: Reductions that need at least one element per slice (amax, max...): no empty reduction.
NONEMPTY = REDUCE[:4] + [((2, 0, 3), 2, True)]
#: Tie entries reuse their op's first cases (and so its compiled kernels).
TIE_CASES = REDUCE[:3]
#: Single-dim reductions for max(x, dim)/min(x, dim).
ONE_DIM = [(BIG, 1, False), (BIG, -1, True), ((), 0, False), ((2, 0, 3), 0, False)]
#: Scans: (shape, dim).
SCANS = cases(*(Case((s,), dict(dim=d)) for s, d in [(BIG, 1), ((), 0), ((2, 0, 3), 1), ((4, 3), -1)]))
ZERO_SCANS = cases(*(Case((s,), dict(dim=d)) for s, d in [(BIG, 1), ((4, 3), -1), ((6,), 0)]))


def _axes(x, dim):
    if dim is None:
        return tuple(range(x.ndim))
    return tuple(d % x.ndim for d in ((dim,) if isinstance(dim, int) else dim)) if x.ndim else ()


def _count(x, axes):
    return math.prod(x.shape[a] for a in axes)


# -- sum-like ----------------------------------------------------------------------------------------------
def prod(x, *, dim, keepdim):
    return fg.prod(x, dim, keepdim)


def prod_ref(x, *, dim, keepdim):
    return jnp.prod(x, axis=_axes(x, dim), keepdims=keepdim)


def logsumexp(x, *, dim, keepdim):
    return fg.logsumexp(x, dim, keepdim)


def logsumexp_ref(x, *, dim, keepdim):
    return jax.nn.logsumexp(x, axis=_axes(x, dim), keepdims=keepdim)


def var(x, *, dim, keepdim, correction):
    return fg.var(x, dim, keepdim=keepdim, correction=correction)


def var_ref(x, *, dim, keepdim, correction):
    axes = _axes(x, dim)
    c = x - jnp.mean(x, axis=axes, keepdims=True)
    return jnp.sum(jnp.real(c * jnp.conj(c)), axis=axes, keepdims=keepdim) / max(_count(x, axes) - correction, 0)


def spread(shape, dtype):
    """A fixed ramp added to std's input: no slice is (nearly) constant, where std's derivative
    blows up and a last-bit difference in the mean decides between 0 and a huge value.
    (Constant slices, with PyTorch's zero gradient, are tested in test_reduction_values.py.)"""
    return (np.arange(math.prod(shape), dtype=np.float64).reshape(shape) * 0.37 % 1.0).astype(dtype)


def std(x, *, dim, keepdim, correction):
    x = x + fg.tensor(spread(x.shape, x.dtype))
    return x.std(dim, keepdim=keepdim, correction=correction)


def std_ref(x, **params):
    v = var_ref(x + spread(x.shape, x.dtype), **params)
    zero = v == 0  # PyTorch: the gradient is 0 where std is 0
    return jnp.where(zero, 0.0, jnp.sqrt(jnp.where(zero, 1.0, v))).astype(v.dtype)


def var_unbiased(x, *, dim, unbiased):
    return fg.var(x, dim, unbiased)


def var_unbiased_ref(x, *, dim, unbiased):
    return var_ref(x, dim=dim, keepdim=False, correction=1 if unbiased else 0)


def norm(x, *, p, dim, keepdim):
    return fg.norm(x, p, dim, keepdim)


def norm_ref(x, *, p, dim, keepdim):
    axes = _axes(x, dim)
    ax = magnitude_of(x)
    p = 2.0 if p == "fro" else p
    if p == math.inf:
        return jnp.max(ax, axis=axes, keepdims=keepdim)
    if p == -math.inf:
        return jnp.min(ax, axis=axes, keepdims=keepdim)
    if p == 0:
        return jnp.sum(x != 0, axis=axes, keepdims=keepdim).astype(ax.dtype)
    return jnp.sum(ax ** p, axis=axes, keepdims=keepdim) ** (1.0 / p)


# -- max-like ------------------------------------------------------------------------------------------------
def amax(x, *, dim, keepdim):
    return fg.amax(x, () if dim is None else dim, keepdim)


def amin(x, *, dim, keepdim):
    return x.amin(() if dim is None else dim, keepdim)


def even_split(x, axes, keepdim, pick, magnitude=False):
    """PyTorch's documented tie rule, written out: each of the k tied extreme elements gets 1/k."""
    y = magnitude_of(x) if magnitude else x
    mask = y == pick(y, axis=axes, keepdims=True)
    share = jax.lax.stop_gradient((mask / jnp.sum(mask, axis=axes, keepdims=True)).astype(y.dtype))
    return jnp.sum(y * share, axis=axes, keepdims=keepdim).astype(y.dtype)


def amax_ref(x, *, dim, keepdim):
    return even_split(x, _axes(x, dim), keepdim, jnp.max)


def amin_ref(x, *, dim, keepdim):
    return even_split(x, _axes(x, dim), keepdim, jnp.min)


def max_all(x):
    return fg.max(x)


def max_all_ref(x):
    return even_split(x, tuple(range(x.ndim)), False, jnp.max)


def min_all(x):
    return x.min()


def min_all_ref(x):
    return even_split(x, tuple(range(x.ndim)), False, jnp.min)


def norm_inf_ties_ref(x, *, p, dim, keepdim):
    pick = jnp.max if p > 0 else jnp.min
    return even_split(x, _axes(x, dim), keepdim, pick, magnitude=True)


def max_dim(x, *, dim, keepdim):
    return fg.max(x, dim, keepdim).values


def min_dim(x, *, dim, keepdim):
    return x.min(dim=dim, keepdim=keepdim)[0]


def _selected(x, dim, keepdim, pick):
    """The element at ``pick``'s (first) index along ``dim``: the gradient goes there only."""
    if x.ndim == 0:
        return x
    idx = jnp.expand_dims(pick(x, axis=dim), dim)
    out = jnp.take_along_axis(x, idx, axis=dim)
    return out if keepdim else jnp.squeeze(out, axis=dim)


def max_dim_ref(x, *, dim, keepdim):
    return _selected(x, dim, keepdim, jnp.argmax)


def min_dim_ref(x, *, dim, keepdim):
    return _selected(x, dim, keepdim, jnp.argmin)


def max_binary(a, b):
    return fg.max(a, b)


def min_binary(a, b):
    return a.min(b)


# -- scans -----------------------------------------------------------------------------------------------------
def cumsum(x, *, dim):
    return fg.cumsum(x, dim)


def cumsum_ref(x, *, dim):
    return x if x.ndim == 0 else jnp.cumsum(x, axis=dim)


def cumprod(x, *, dim):
    return x.cumprod(dim)


def cumprod_ref(x, *, dim):
    return x if x.ndim == 0 else jnp.cumprod(x, axis=dim)


VAR_CASES = cases(
    Case((BIG,), dict(dim=1, keepdim=False, correction=1)),
    Case((BIG,), dict(dim=(0, 2), keepdim=True, correction=0)),
    Case((BIG,), dict(dim=None, keepdim=False, correction=2.5)),
    Case(((2, 0, 3),), dict(dim=1, keepdim=False, correction=1)),  # no elements: nan
)
NORM_CASES = cases(
    *(Case((BIG,), dict(p=p, dim=-2, keepdim=True)) for p in (2, 1, math.inf, 0, 3, 0.5, 1.5)),
    Case((BIG,), dict(p="fro", dim=(0, 2), keepdim=False)),
    Case((BIG,), dict(p=-1.0, dim=None, keepdim=False)),
    Case(((),), dict(p=2, dim=None, keepdim=True)),
    Case(((2, 0, 3),), dict(p=1, dim=1, keepdim=False)),
)
ALL_CASES = cases(Case((BIG,)), Case(((),)))

TABLE = [
    OpEntry("prod", prod, prod_ref, 1, dims_cases(REDUCE), REAL),
    OpEntry("prod_zeros", prod, prod_ref, 1, dims_cases(TIE_CASES), ZEROS),
    OpEntry("logsumexp", logsumexp, logsumexp_ref, 1, dims_cases(REDUCE), REAL),
    OpEntry("var", var, var_ref, 1, VAR_CASES, REAL),
    OpEntry("var_unbiased", var_unbiased, var_unbiased_ref, 1,
            cases(Case((BIG,), dict(dim=1, unbiased=True))), REAL, max_examples=5),
    OpEntry("std", std, std_ref, 1, VAR_CASES, REAL),
    OpEntry("norm", norm, norm_ref, 1, NORM_CASES, NONZERO),
    OpEntry("amax", amax, amax_ref, 1, dims_cases(NONEMPTY), REAL),
    OpEntry("amin", amin, amin_ref, 1, dims_cases(NONEMPTY), REAL),
    OpEntry("max_all", max_all, max_all_ref, 1, ALL_CASES, REAL),
    OpEntry("min_all", min_all, min_all_ref, 1, ALL_CASES, REAL),
    OpEntry("max_dim", max_dim, max_dim_ref, 1, dims_cases(ONE_DIM), REAL),
    OpEntry("min_dim", min_dim, min_dim_ref, 1, dims_cases(ONE_DIM), REAL),
    OpEntry("max_binary", max_binary, jnp.maximum, 2, cases(Case(((2, 1), (3,)))), (GRID_A, GRID_B), max_examples=5),
    OpEntry("min_binary", min_binary, jnp.minimum, 2, cases(Case(((2, 1), (3,)))), (GRID_B, GRID_A), max_examples=5),
    # ties: PyTorch's documented gradients
    OpEntry("amax_ties", amax, amax_ref, 1, dims_cases(TIE_CASES), TIES),
    OpEntry("amin_ties", amin, amin_ref, 1, dims_cases(TIE_CASES), TIES),
    OpEntry("max_all_ties", max_all, max_all_ref, 1, cases(Case((BIG,))), TIES),
    OpEntry("min_all_ties", min_all, min_all_ref, 1, cases(Case((BIG,))), TIES),
    OpEntry("max_dim_ties", max_dim, max_dim_ref, 1, dims_cases(ONE_DIM[:2]), TIES),
    OpEntry("min_dim_ties", min_dim, min_dim_ref, 1, dims_cases(ONE_DIM[:2]), TIES),
    OpEntry("norm_inf_ties", norm, norm_inf_ties_ref, 1,
            cases(Case((BIG,), dict(p=math.inf, dim=-2, keepdim=True)),
                  Case((BIG,), dict(p=-math.inf, dim=None, keepdim=False))),
            ABS_TIES),
    # scans
    OpEntry("cumsum", cumsum, cumsum_ref, 1, SCANS, REAL),
    OpEntry("cumprod", cumprod, cumprod_ref, 1, SCANS, REAL),
    OpEntry("cumprod_zeros", cumprod, cumprod_ref, 1, ZERO_SCANS, ZEROS),
]


# -- the optional PyTorch oracle: same call signatures as the fgraph functions above -------------------------------
def _torch():
    import torch

    def t_dims(x, dim):
        return list(range(x.dim())) if dim is None else ([dim] if isinstance(dim, int) else list(dim))

    def t_prod(x, *, dim, keepdim):
        if dim is None:
            out = torch.prod(x)
            return out.reshape((1,) * x.dim()) if keepdim else out
        if isinstance(dim, int):
            return torch.prod(x, dim, keepdim)
        for d in sorted((d % x.dim() for d in dim), reverse=True):  # torch.prod takes one dim
            x = torch.prod(x, d, keepdim)
        return x

    def t_amax(x, *, dim, keepdim):
        return torch.amax(x, () if dim is None else dim, keepdim)

    def t_amin(x, *, dim, keepdim):
        return torch.amin(x, () if dim is None else dim, keepdim)

    def t_std(x, *, dim, keepdim, correction):
        x = x + torch.from_numpy(spread(tuple(x.shape), x.detach().numpy().dtype))
        return x.std(dim, keepdim=keepdim, correction=correction)

    return {
        "prod": t_prod,
        "prod_zeros": t_prod,
        "logsumexp": lambda x, *, dim, keepdim: torch.logsumexp(x, t_dims(x, dim), keepdim),
        "var": lambda x, *, dim, keepdim, correction: torch.var(x, dim, keepdim=keepdim, correction=correction),
        "var_unbiased": lambda x, *, dim, unbiased: torch.var(x, dim, unbiased),
        "std": t_std,
        "norm": lambda x, *, p, dim, keepdim: torch.norm(x, p, dim, keepdim),
        "amax": t_amax,
        "amin": t_amin,
        "max_all": lambda x: torch.max(x),
        "min_all": lambda x: x.min(),
        "max_dim": lambda x, *, dim, keepdim: torch.max(x, dim, keepdim).values,
        "min_dim": lambda x, *, dim, keepdim: x.min(dim=dim, keepdim=keepdim)[0],
        "max_binary": lambda a, b: torch.max(a, b),
        "min_binary": lambda a, b: a.min(b),
        "amax_ties": t_amax,
        "amin_ties": t_amin,
        "max_all_ties": lambda x: torch.max(x),
        "min_all_ties": lambda x: x.min(),
        "max_dim_ties": lambda x, *, dim, keepdim: torch.max(x, dim, keepdim).values,
        "min_dim_ties": lambda x, *, dim, keepdim: x.min(dim=dim, keepdim=keepdim)[0],
        "norm_inf_ties": lambda x, *, p, dim, keepdim: torch.norm(x, p, dim, keepdim),
        "cumsum": lambda x, *, dim: torch.cumsum(x, dim),
        "cumprod": lambda x, *, dim: x.cumprod(dim),
        "cumprod_zeros": lambda x, *, dim: x.cumprod(dim),
    }


try:
    TORCH = _torch()
except ImportError:  # PyTorch is an optional oracle
    TORCH = {}


#: Entries whose ops refuse complex inputs (an OpError); every other entry is also checked on complex ones.
REAL_ONLY = {
    "amax", "amin", "max_all", "min_all", "max_dim", "min_dim", "max_binary", "min_binary", "amax_ties",
    "amin_ties", "max_all_ties", "min_all_ties", "max_dim_ties", "min_dim_ties"
}
