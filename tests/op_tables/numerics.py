"""Numerics (fgraph/ops/numerics.py, numerics_reduce.py; top-level softmax/log_softmax) against pure JAX.

* ``cummax``/``cummin``: the reference picks, for each position, the *latest* index holding the
  running extreme by an O(n^2) mask (not a scan), then gathers: PyTorch's tie rule, written
  independently of fgraph's associative scan. The ``*_ties`` entries draw from {0, 1}.
* NaN/inf handling, non-differentiable outputs (indices, ``isclose``, ``signbit``) and the
  special points are checked in tests/test_numerics.py.
"""
import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st

import fgraph as fg
from op_harness import GRID_A, GRID_B, NONZERO, POSITIVE, REAL, Case, OpEntry, cases, grid, torch

FIRST_ORDER_ONLY: dict = {}

UNARY = [((2, 3),), ((3, 0),)]
BINARY = [((2, 3), (2, 3)), ((3,), (2, 3))]
#: (shape, dim) for scans.
SCANS = cases(*(Case((s,), dict(dim=d)) for s, d in [((2, 3, 4), 1), ((), 0), ((4, 3), -1), ((2, 0, 3), 1)]))
REDUCE = cases(*(Case((s,), dict(dim=d, keepdim=k)) for s, d, k in
                 [((2, 3, 4), None, False), ((2, 3, 4), -2, True), ((2, 3, 4), (0, 2), False), ((), None, False)]))
TIES = st.sampled_from([0.0, 1.0])


def _method(name):
    def call(x, y):
        return getattr(x, name)(y)

    call.__name__ = f"{name}_method"
    return call


# -- scans ---------------------------------------------------------------------------------------------------
def logcumsumexp(x, *, dim):
    return fg.logcumsumexp(x, dim)


def logcumsumexp_ref(x, *, dim):
    return x if x.ndim == 0 or x.shape[dim] == 0 else jax.lax.cumlogsumexp(x, axis=dim % x.ndim)


def cummax(x, *, dim):
    return fg.cummax(x, dim).values


def cummin(x, *, dim):
    return x.cummin(dim).values


def _cum_extreme_ref(x, dim, largest):
    if x.ndim == 0 or x.shape[dim] == 0:
        return x
    d = dim % x.ndim
    xm = jnp.moveaxis(x, d, -1)
    n = xm.shape[-1]
    k = jnp.arange(n)
    upto = k[None, :] <= k[:, None]  # upto[j, i]: i <= j
    fill = -jnp.inf if largest else jnp.inf
    vals = jnp.where(upto, xm[..., None, :], fill)  # [..., j, i]
    ext = vals.max(-1) if largest else vals.min(-1)
    hit = upto & (xm[..., None, :] == ext[..., None])
    idx = jnp.max(jnp.where(hit, k, -1), axis=-1)  # the latest extreme index
    return jnp.moveaxis(jnp.take_along_axis(xm, idx, axis=-1), -1, d)


def cummax_ref(x, *, dim):
    return _cum_extreme_ref(x, dim, True)


def cummin_ref(x, *, dim):
    return _cum_extreme_ref(x, dim, False)


# -- reductions -------------------------------------------------------------------------------------------------
def nansum(x, *, dim, keepdim):
    return fg.nansum(x, dim, keepdim)


def nanmean(x, *, dim, keepdim):
    return x.nanmean(dim, keepdim)


def _axes(x, dim):
    if dim is None:
        return None
    return tuple(d % x.ndim for d in ((dim,) if isinstance(dim, int) else dim)) if x.ndim else None


def nansum_ref(x, *, dim, keepdim):
    return jnp.nansum(x, axis=_axes(x, dim), keepdims=keepdim)


def nanmean_ref(x, *, dim, keepdim):
    return jnp.nanmean(x, axis=_axes(x, dim), keepdims=keepdim)


def aminmax(x, *, dim, keepdim):
    return fg.stack(list(fg.aminmax(x, dim=dim, keepdim=keepdim)))


def aminmax_ref(x, *, dim, keepdim):
    axes = _axes(x, dim)
    return jnp.stack([jnp.min(x, axis=axes, keepdims=keepdim), jnp.max(x, axis=axes, keepdims=keepdim)])


AMINMAX = cases(*(Case((s,), dict(dim=d, keepdim=k)) for s, d, k in
                  [((2, 3, 4), None, False), ((2, 3, 4), 1, True), ((2, 3, 4), -1, False), ((), None, True)]))


def renorm(x, *, p, dim, maxnorm):
    return x.renorm(p, dim, maxnorm)


def renorm_ref(x, *, p, dim, maxnorm):
    d = dim % x.ndim
    others = tuple(i for i in range(x.ndim) if i != d)
    norms = jnp.sum(jnp.abs(x) ** p, axis=others, keepdims=True) ** (1.0 / p)
    return x * jnp.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)


RENORM = cases(Case(((3, 4),), dict(p=2.0, dim=0, maxnorm=1.0)), Case(((3, 4),), dict(p=1.0, dim=-1, maxnorm=2.0)),
               Case(((2, 3, 2),), dict(p=3.0, dim=1, maxnorm=0.5)))


# -- elementwise ---------------------------------------------------------------------------------------------------
def nan_to_num(x, *, nan):
    return fg.nan_to_num(x, nan)


def nan_to_num_ref(x, *, nan):
    return jnp.nan_to_num(x, nan=nan)


def float_power(x, y):
    return fg.float_power(x, y)


def _double(*xs):
    wide = jnp.complex128 if any(jnp.iscomplexobj(x) for x in xs) else jnp.float64
    return [x.astype(wide) for x in xs]


def float_power_ref(x, y):
    return jnp.power(*_double(x, y))


def float_power_scalar(x, *, exponent):
    return x.float_power(exponent)


def float_power_scalar_ref(x, *, exponent):
    return jnp.power(*_double(x), exponent)


def clamp_min(x, *, bound):
    return fg.clamp_min(x, bound)


def clamp_max(x, *, bound):
    return x.clamp_max(bound)


def clamp_min_ref(x, *, bound):
    return jnp.maximum(x, bound)


def clamp_max_ref(x, *, bound):
    return jnp.minimum(x, bound)


#: Tensor bounds of clamp: the lower ones at or below 0.1, the upper ones at or above 0.4 (lower < upper: where
#: they tie or cross, PyTorch's rule and jax.grad of min(max(.)) part ways, see tests/test_node_names_torch.py),
#: both 0.15 from the input's grid GRID_B.
_LOWER = st.builds(lambda k, e: 0.5 * k + e, st.integers(-4, 0), st.floats(-0.1, 0.1))
_UPPER = st.builds(lambda k, e: 0.5 * k + e, st.integers(1, 4), st.floats(-0.1, 0.1))


def clamp_tensor_ref(x, lo, hi):
    return jnp.minimum(jnp.maximum(x, lo), hi)


def softmax(x, *, dim):
    return fg.softmax(x, dim)


def log_softmax(x, *, dim):
    return fg.log_softmax(x, dim)


def softmax_ref(x, *, dim):
    return jax.nn.softmax(x, axis=dim)


def log_softmax_ref(x, *, dim):
    return jax.nn.log_softmax(x, axis=dim)


SOFTMAX = grid([((2, 3),)], [dict(dim=1), dict(dim=0)])

TABLE = [
    OpEntry("logaddexp", fg.logaddexp, jnp.logaddexp, 2, grid(BINARY), REAL),
    OpEntry("logaddexp_method", _method("logaddexp"), jnp.logaddexp, 2, grid(BINARY[:1]), REAL, max_examples=4),
    OpEntry("logaddexp2", fg.logaddexp2, jnp.logaddexp2, 2, grid(BINARY), REAL),
    OpEntry("xlogy", fg.xlogy, jax.scipy.special.xlogy, 2, grid(BINARY), (REAL, POSITIVE)),
    OpEntry("xlogy_method", _method("xlogy"), jax.scipy.special.xlogy, 2, grid(BINARY[:1]), (REAL, POSITIVE),
            max_examples=4),
    OpEntry("copysign", fg.copysign, jnp.copysign, 2, grid(BINARY), NONZERO),
    OpEntry("float_power", float_power, float_power_ref, 2, grid(BINARY), (POSITIVE, REAL)),
    OpEntry("float_power_scalar", float_power_scalar, float_power_scalar_ref, 1,
            grid(UNARY[:1], [dict(exponent=2.5)]), POSITIVE, max_examples=4),
    OpEntry("nan_to_num", nan_to_num, nan_to_num_ref, 1, grid(UNARY, [dict(nan=0.0)]), REAL),
    OpEntry("deg2rad", fg.deg2rad, jnp.deg2rad, 1, grid(UNARY), REAL),
    OpEntry("rad2deg", fg.rad2deg, jnp.rad2deg, 1, grid(UNARY), REAL),
    OpEntry("clamp_min", clamp_min, clamp_min_ref, 1, grid(UNARY, [dict(bound=0.5)]), GRID_B),
    OpEntry("clamp_max", clamp_max, clamp_max_ref, 1, grid(UNARY, [dict(bound=-0.5)]), GRID_B),
    OpEntry("clamp_tensor", fg.clamp, clamp_tensor_ref, 3, cases(
        Case(((2, 3), (2, 3), (3,))), Case(((2, 3), (2, 1), ())), Case(((0, 3), (3,), (1, 3))),
    ), (GRID_B, _LOWER, _UPPER)),
    OpEntry("clamp_tensor_min", lambda x, lo: x.clamp(lo), jnp.maximum, 2, grid(BINARY), (GRID_B, GRID_A)),
    OpEntry("clamp_tensor_max", lambda x, hi: fg.clip(x, max=hi), jnp.minimum, 2, grid(BINARY), (GRID_B, GRID_A)),
    OpEntry("softmax", softmax, softmax_ref, 1, SOFTMAX, REAL),
    OpEntry("log_softmax", log_softmax, log_softmax_ref, 1, SOFTMAX, REAL),
    OpEntry("logcumsumexp", logcumsumexp, logcumsumexp_ref, 1, SCANS, REAL),
    OpEntry("cummax", cummax, cummax_ref, 1, SCANS, REAL),
    OpEntry("cummin", cummin, cummin_ref, 1, SCANS, REAL),
    OpEntry("cummax_ties", cummax, cummax_ref, 1, SCANS, TIES, max_examples=6),
    OpEntry("cummin_ties", cummin, cummin_ref, 1, SCANS, TIES, max_examples=6),
    OpEntry("nansum", nansum, nansum_ref, 1, REDUCE, REAL),
    OpEntry("nanmean", nanmean, nanmean_ref, 1, REDUCE, REAL),
    OpEntry("aminmax", aminmax, aminmax_ref, 1, AMINMAX, REAL),
    OpEntry("renorm", renorm, renorm_ref, 1, RENORM, NONZERO),  # |x| is not differentiable at 0
]


def _torch_cum(name):
    def call(x, dim):
        return getattr(torch, name)(x, dim).values

    return call


#: The PyTorch oracle, with the entries' call signatures.
TORCH = {
    "logaddexp": lambda a, b: torch.logaddexp(a, b),
    "logaddexp_method": lambda a, b: a.logaddexp(b),
    "logaddexp2": lambda a, b: torch.logaddexp2(a, b),
    "xlogy": lambda a, b: torch.xlogy(a, b),
    "xlogy_method": lambda a, b: a.xlogy(b),
    "copysign": lambda a, b: torch.copysign(a, b),
    "float_power": lambda a, b: torch.float_power(a, b),
    "float_power_scalar": lambda x, exponent: x.float_power(exponent),
    "nan_to_num": lambda x, nan: torch.nan_to_num(x, nan),
    "deg2rad": lambda x: torch.deg2rad(x),
    "rad2deg": lambda x: torch.rad2deg(x),
    "clamp_min": lambda x, bound: torch.clamp_min(x, bound),
    "clamp_max": lambda x, bound: x.clamp_max(bound),
    "clamp_tensor": lambda x, lo, hi: torch.clamp(x, lo, hi),
    "clamp_tensor_min": lambda x, lo: x.clamp(lo),
    "clamp_tensor_max": lambda x, hi: torch.clip(x, max=hi),
    "softmax": lambda x, dim: torch.softmax(x, dim),
    "log_softmax": lambda x, dim: torch.log_softmax(x, dim),
    "logcumsumexp": lambda x, dim: torch.logcumsumexp(x, dim),
    "cummax": _torch_cum("cummax"),
    "cummin": _torch_cum("cummin"),
    "cummax_ties": _torch_cum("cummax"),
    "cummin_ties": _torch_cum("cummin"),
    "nansum": lambda x, dim, keepdim: torch.nansum(x, dim, keepdim) if dim is not None else torch.nansum(x),
    "nanmean": lambda x, dim, keepdim: x.nanmean(dim, keepdim),
    "aminmax": lambda x, dim, keepdim: torch.stack(list(torch.aminmax(x, dim=dim, keepdim=keepdim))),
    "renorm": lambda x, p, dim, maxnorm: x.renorm(p, dim, maxnorm),
}


#: Entries whose ops refuse complex inputs (an OpError); every other entry is also checked on complex ones.
REAL_ONLY = {
    "logaddexp2", "xlogy", "xlogy_method", "copysign", "deg2rad", "rad2deg", "clamp_min", "clamp_max", "softmax",
    "log_softmax", "cummax", "cummin", "cummax_ties", "cummin_ties", "aminmax", "clamp_tensor", "clamp_tensor_min",
    "clamp_tensor_max",
}
#: torch: nan_to_num's autograd refuses complex outputs; nansum/nanmean refuse complex on CPU.
TORCH_REFUSES_COMPLEX = {"nan_to_num", "nansum", "nanmean"}
