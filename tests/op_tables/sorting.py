"""Sorting and selection (fgraph/ops/sorting.py, selection.py) against pure JAX: forward, first
derivative, Hessian-vector product.

Ops that return ``(values, indices)`` are checked on both: the entries return
``stack([values, indices.to(values.dtype)])``, so the indices (and their tie-breaking)
are compared too, while the gradient flows through ``values`` only.

* The references order elements with ``jnp.lexsort`` on ``(position, key)`` -- a stable
  order written independently of ``jnp.argsort`` -- and pick values with
  ``take_along_axis`` (whose JAX derivative is a scatter-add to the picked positions).
* ``mode``'s reference counts occurrences with a dense pairwise comparison and takes the
  smallest most frequent value at its last occurrence. ``median()``'s reference splits the
  gradient evenly among the elements equal to the lower median (PyTorch's rule).
  ``quantile``'s reference is ``jnp.quantile`` (q as a static tuple, or as a second
  differentiable input).
* Ties: the ``*_ties`` entries draw from {0, 1} (or {0, 1, 2} for ``mode``), so ties are
  the rule. PyTorch breaks ties in ``sort`` stably (its CPU sort is stable for up to 16
  elements per slice, and every slice here is shorter) and in ``mode`` as fgraph does,
  so those tie entries are in the PyTorch oracle; ``topk``/``kthvalue``/``median(dim)``
  ties follow the stable sort here while PyTorch's selection algorithm picks arbitrarily
  (documented in fgraph/ops/sorting.py), so the entries checked against PyTorch add a
  fixed irregular ramp to their input (:func:`distinct`) that keeps values apart.

Non-differentiable ops (searchsorted, bucketize, histc, count_nonzero, unique, nonzero,
bincount...), NaN handling and errors are tested in tests/test_sorting.py. No op here
lacks a second derivative.
"""
import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st

import fgraph as fg
from op_harness import REAL, Case, OpEntry, cases

TIES = st.sampled_from([0.0, 1.0])
MODE_VALUES = st.sampled_from([0.0, 1.0, 2.0])
Q_DOMAIN = st.floats(0.05, 0.3)  # q * 3 stays inside (0, 1): the linear weight's kinks are at integers


def distinct(shape, dtype):
    """A fixed ramp with irregular steps: added to an input, it leaves no two elements equal in practice."""
    n = int(np.prod(shape, dtype=np.int64))
    return (np.arange(n, dtype=np.float64) * 0.6180339887 % 1.0 * 0.5).reshape(shape).astype(dtype)


def _ramp_fg(x):
    return x + fg.tensor(distinct(x.shape, x.dtype), dtype=x.dtype)


def _ramp_jnp(x):
    return x + distinct(x.shape, x.dtype)


def _pack_fg(result):
    values, indices = result
    return fg.stack([values, indices.to(values.dtype)])


def _pack_jnp(values, indices):
    return jnp.stack([values, indices.astype(values.dtype)])


# -- references ---------------------------------------------------------------------------------------------
def _order(x, dim, descending=False):
    """The stable sorting permutation along ``dim``, from a lexicographic sort on (key, position)."""
    pos = jnp.broadcast_to(jnp.arange(x.shape[dim]).reshape((-1,) + (1,) * (x.ndim - 1 - dim)), x.shape)
    return jnp.lexsort((pos, -x if descending else x), axis=dim)


def _select(x, order, dim, keepdim=True):
    values = jnp.take_along_axis(x, order, axis=dim)
    if not keepdim:
        values, order = jnp.squeeze(values, dim), jnp.squeeze(order, dim)
    return _pack_jnp(values, order)


def sort(x, *, dim, descending):
    return _pack_fg(fg.sort(x, dim, descending))


def sort_ref(x, *, dim, descending):
    if x.ndim == 0:
        return _pack_jnp(x, jnp.zeros((), jnp.int64))
    return _select(x, _order(x, dim % x.ndim, descending), dim % x.ndim)


def argsort_values(x, *, dim, descending):
    """argsort's indices, used to gather: checks argsort against the sort of the reference."""
    return fg.take_along_dim(x, x.argsort(dim, descending), dim)


def argsort_values_ref(x, *, dim, descending):
    return jnp.take_along_axis(x, _order(x, dim % x.ndim, descending), axis=dim)


def msort(x):
    return fg.msort(x)


def msort_ref(x):
    return jnp.take_along_axis(x, _order(x, 0), axis=0)


def topk(x, *, k, dim, largest):
    return _pack_fg(fg.topk(x, k, dim, largest))


def topk_ref(x, *, k, dim, largest):
    if x.ndim == 0:
        return _pack_jnp(x, jnp.zeros((), jnp.int64))
    d = dim % x.ndim
    order = jnp.take(_order(x, d, largest), jnp.arange(k), axis=d)
    return _select(x, order, d)


def _at_rank(x, rank, dim, keepdim):
    if x.ndim == 0:
        return _pack_jnp(x, jnp.zeros((), jnp.int64))
    d = dim % x.ndim
    order = jnp.take(_order(x, d), jnp.array([rank]), axis=d)
    return _select(x, order, d, keepdim)


def kthvalue(x, *, k, dim, keepdim):
    return _pack_fg(x.kthvalue(k, dim, keepdim))


def kthvalue_ref(x, *, k, dim, keepdim):
    return _at_rank(x, k - 1, dim, keepdim)


def median_dim(x, *, dim, keepdim):
    return _pack_fg(fg.median(x, dim, keepdim))


def median_dim_ref(x, *, dim, keepdim):
    n = x.shape[dim] if x.ndim else 1
    return _at_rank(x, (n - 1) // 2, dim, keepdim)


def nanmedian_dim(x, *, dim, keepdim):
    return _pack_fg(x.nanmedian(dim, keepdim))


def median_all(x):
    return fg.median(x)


def nanmedian_all(x):
    return x.nanmedian()


def median_all_ref(x):
    flat = x.reshape(-1)
    m = jnp.take(flat, _order(flat, 0)[(flat.size - 1) // 2])
    mask = flat == m
    share = jnp.where(mask, 1.0 / jnp.sum(mask), 0.0).astype(x.dtype)
    return jnp.sum(flat * jax.lax.stop_gradient(share))


def mode(x, *, dim, keepdim):
    return _pack_fg(fg.mode(x, dim, keepdim))


def mode_ref(x, *, dim, keepdim):
    if x.ndim == 0:
        return _pack_jnp(x, jnp.zeros((), jnp.int64))
    d = dim % x.ndim
    m = jnp.moveaxis(x, d, -1)
    counts = jnp.sum(m[..., :, None] == m[..., None, :], axis=-1)
    frequent = counts == jnp.max(counts, axis=-1, keepdims=True)
    value = jnp.min(jnp.where(frequent, m, jnp.inf), axis=-1, keepdims=True)
    last = jnp.max(jnp.where(m == value, jnp.arange(m.shape[-1]), -1), axis=-1, keepdims=True)
    return _select(x, jnp.moveaxis(last, -1, d), d, keepdim)


def quantile(x, *, q, dim, keepdim, interpolation):
    qt = fg.tensor(np.array(q), dtype=x.dtype) if isinstance(q, tuple) else q
    return fg.quantile(x, qt, dim, keepdim, interpolation=interpolation)


def quantile_ref(x, *, q, dim, keepdim, interpolation):
    qa = jnp.asarray(q, x.dtype)
    return jnp.quantile(x, qa, axis=dim, keepdims=keepdim, method=interpolation)


def nanquantile(x, *, q, dim, keepdim, interpolation):
    qt = fg.tensor(np.array(q), dtype=x.dtype) if isinstance(q, tuple) else q
    return x.nanquantile(qt, dim, keepdim, interpolation=interpolation)


def quantile_q(x, q, *, dim):
    return fg.quantile(x, q, dim)


def quantile_q_ref(x, q, *, dim):
    return jnp.quantile(x, q, axis=dim)


def with_ramp(fn, ref):
    """``fn``/``ref`` applied to the input plus :func:`distinct` (no ties, for the PyTorch oracle)."""
    def fg_fn(x, **params):
        return fn(_ramp_fg(x), **params)

    def ref_fn(x, **params):
        return ref(_ramp_jnp(x), **params)

    return fg_fn, ref_fn


BIG = (2, 3, 4)
SORT_CASES = cases(
    Case(((3, 4),), dict(dim=-1, descending=False)),
    Case((BIG,), dict(dim=1, descending=True)),
    Case(((),), dict(dim=0, descending=False)),
    Case(((2, 0, 3),), dict(dim=1, descending=True)),
    Case(((5,), ), dict(dim=0, descending=True)),
)
TIE_SORT_CASES = cases(Case(((3, 6),), dict(dim=1, descending=False)), Case(((3, 6),), dict(dim=0, descending=True)))
TOPK_CASES = cases(
    Case((BIG,), dict(k=2, dim=-1, largest=True)),
    Case(((5,),), dict(k=3, dim=0, largest=False)),
    Case(((),), dict(k=1, dim=0, largest=True)),
    Case(((3, 4),), dict(k=0, dim=1, largest=True)),
)
KTH_CASES = cases(
    Case((BIG,), dict(k=2, dim=1, keepdim=False)),
    Case(((5,),), dict(k=5, dim=0, keepdim=True)),
    Case(((),), dict(k=1, dim=0, keepdim=False)),
)
MEDIAN_CASES = cases(
    Case((BIG,), dict(dim=-1, keepdim=False)),  # even count: the lower median
    Case(((5,),), dict(dim=0, keepdim=True)),
    Case(((3, 4),), dict(dim=0, keepdim=False)),
    Case(((),), dict(dim=0, keepdim=False)),
)
ALL_CASES = cases(Case((BIG,)), Case(((5,),)), Case(((),)))
MODE_CASES = cases(
    Case(((3, 6),), dict(dim=1, keepdim=False)),
    Case((BIG,), dict(dim=0, keepdim=True)),
    Case(((5,),), dict(dim=-1, keepdim=False)),
)
QUANTILE_CASES = cases(
    *(Case(((3, 4),), dict(q=0.2, dim=1, keepdim=False, interpolation=m))
      for m in ("linear", "lower", "higher", "midpoint", "nearest")),
    Case((BIG,), dict(q=(0.2, 0.7), dim=0, keepdim=True, interpolation="linear")),
    Case((BIG,), dict(q=(0.1, 0.9), dim=None, keepdim=False, interpolation="midpoint")),
    Case((BIG,), dict(q=0.37, dim=None, keepdim=True, interpolation="nearest")),
    Case(((),), dict(q=0.7, dim=None, keepdim=False, interpolation="linear")),
)

_topk, _topk_ref = with_ramp(topk, topk_ref)
_kth, _kth_ref = with_ramp(kthvalue, kthvalue_ref)
_median, _median_ref = with_ramp(median_dim, median_dim_ref)
_nanmedian, _nanmedian_ref = with_ramp(nanmedian_dim, median_dim_ref)
_quantile, _quantile_ref = with_ramp(quantile, quantile_ref)
_nanquantile, _nanquantile_ref = with_ramp(nanquantile, quantile_ref)

TABLE = [
    OpEntry("sort", sort, sort_ref, 1, SORT_CASES, REAL),
    OpEntry("argsort_values", argsort_values, argsort_values_ref, 1,
            cases(Case((BIG,), dict(dim=-1, descending=True)), Case(((5,),), dict(dim=0, descending=False))), REAL),
    OpEntry("msort", msort, msort_ref, 1, cases(Case(((4, 3),))), REAL),
    OpEntry("topk", _topk, _topk_ref, 1, TOPK_CASES, REAL),
    OpEntry("kthvalue", _kth, _kth_ref, 1, KTH_CASES, REAL),
    OpEntry("median_dim", _median, _median_ref, 1, MEDIAN_CASES, REAL),
    OpEntry("nanmedian_dim", _nanmedian, _nanmedian_ref, 1, MEDIAN_CASES, REAL),
    OpEntry("median_all", median_all, median_all_ref, 1, ALL_CASES, REAL),
    OpEntry("nanmedian_all", nanmedian_all, median_all_ref, 1, ALL_CASES, REAL),
    OpEntry("mode", mode, mode_ref, 1, MODE_CASES, MODE_VALUES),
    OpEntry("quantile", _quantile, _quantile_ref, 1, QUANTILE_CASES, REAL),
    OpEntry("nanquantile", _nanquantile, _nanquantile_ref, 1,
            cases(Case(((3, 4),), dict(q=0.2, dim=-1, keepdim=True, interpolation="linear")),
                  Case((BIG,), dict(q=(0.3, 0.6), dim=1, keepdim=False, interpolation="higher"))), REAL),
    OpEntry("quantile_q", quantile_q, quantile_q_ref, 2, cases(Case(((3, 4), (2,)), dict(dim=1))), (REAL, Q_DOMAIN)),
    # ties: stable order (sort, topk, kthvalue, median), PyTorch's rules (median(), mode)
    OpEntry("sort_ties", sort, sort_ref, 1, TIE_SORT_CASES, TIES),
    OpEntry("topk_ties", topk, topk_ref, 1, cases(Case(((3, 6),), dict(k=3, dim=1, largest=True)),
                                                   Case(((3, 6),), dict(k=2, dim=1, largest=False))), TIES),
    OpEntry("kthvalue_ties", kthvalue, kthvalue_ref, 1, cases(Case(((3, 6),), dict(k=4, dim=1, keepdim=False))), TIES),
    OpEntry("median_dim_ties", median_dim, median_dim_ref, 1, cases(Case(((3, 6),), dict(dim=1, keepdim=True))), TIES),
    OpEntry("median_all_ties", median_all, median_all_ref, 1, cases(Case((BIG,))), TIES),
    OpEntry("mode_ties", mode, mode_ref, 1, cases(Case(((3, 6),), dict(dim=1, keepdim=False))), TIES),
]


# -- the optional PyTorch oracle: same call signatures as the fgraph functions above -------------------------------
def _torch():
    import torch

    def pack(result):
        values, indices = result
        return torch.stack([values, indices.to(values.dtype)])

    def ramp(x):
        return x + torch.from_numpy(distinct(tuple(x.shape), x.detach().numpy().dtype))

    def t_sort(x, *, dim, descending):
        return pack(torch.sort(x, dim, descending))

    def t_topk(x, *, k, dim, largest):
        return pack(torch.topk(ramp(x), k, dim, largest))

    def t_kth(x, *, k, dim, keepdim):
        return pack(torch.kthvalue(ramp(x), k, dim, keepdim))

    def t_median(x, *, dim, keepdim):
        return pack(torch.median(ramp(x), dim, keepdim))

    def t_nanmedian(x, *, dim, keepdim):
        return pack(torch.nanmedian(ramp(x), dim, keepdim))

    def t_mode(x, *, dim, keepdim):
        return pack(torch.mode(x, dim, keepdim))

    def t_q(q, x):
        return torch.tensor(q, dtype=x.dtype) if isinstance(q, tuple) else q

    def t_quantile(x, *, q, dim, keepdim, interpolation):
        return torch.quantile(ramp(x), t_q(q, x), dim, keepdim, interpolation=interpolation)

    def t_nanquantile(x, *, q, dim, keepdim, interpolation):
        return torch.nanquantile(ramp(x), t_q(q, x), dim, keepdim, interpolation=interpolation)

    return {
        "sort": t_sort,
        "argsort_values": lambda x, *, dim, descending: torch.take_along_dim(
            x, torch.argsort(x, stable=True, dim=dim, descending=descending), dim),
        "msort": torch.msort,
        "topk": t_topk,
        "kthvalue": t_kth,
        "median_dim": t_median,
        "nanmedian_dim": t_nanmedian,
        "median_all": torch.median,
        "nanmedian_all": torch.nanmedian,
        "mode": t_mode,
        "quantile": t_quantile,
        "nanquantile": t_nanquantile,
        "quantile_q": lambda x, q, *, dim: torch.quantile(x, q, dim),
        "sort_ties": t_sort,
        "median_all_ties": torch.median,
        "mode_ties": t_mode,
    }


try:
    TORCH = _torch()
except ImportError:  # PyTorch is an optional oracle
    TORCH = {}


#: Entries whose ops refuse complex inputs (an OpError); every other entry is also checked on complex ones.
REAL_ONLY = {
    "sort", "argsort_values", "msort", "topk", "kthvalue", "median_dim", "nanmedian_dim", "median_all",
    "nanmedian_all", "mode", "quantile", "nanquantile", "quantile_q", "sort_ties", "topk_ties", "kthvalue_ties",
    "median_dim_ties", "median_all_ties", "mode_ties"
}
