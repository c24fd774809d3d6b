"""Gather/scatter and indexing ops (fgraph/ops/gather_scatter.py, fgraph/ops/indexing.py) against pure JAX.

Index tensors are ``consts`` drawn from small pools valid for each shape. The
scatter-style references are written densely (a one-hot matrix from each source
element to its target position, then matmul / max / prod over it), so they share
nothing with fgraph's scatter kernels, and ``jnp.max`` splits tied gradients evenly
exactly as ``scatter_reduce``'s ``amax``/``amin`` rules must. ``scatter`` and
``index_put`` without ``accumulate`` only get unique indices (duplicates are
undefined in PyTorch). ``amax``/``amin`` draw ``input`` and ``src`` from disjoint
grids, so ties occur between ``src`` elements only (PyTorch also counts an
excluded ``input`` that ties with the result; see gather_scatter.py).

No op here is first-order only.
"""
from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fgraph as fg
from op_harness import GRID_A, GRID_B, NONZERO, REAL, Case, OpEntry

I64 = np.int64


# -- index strategies ----------------------------------------------------------------------------------------
def _ints(draw, shape, lo, hi):
    return draw(hnp.arrays(I64, shape, elements=st.integers(lo, hi - 1)))


def _unique_along(draw, shape, dim, size):
    """An index of ``shape`` whose values along ``dim`` are distinct in every line (values < size)."""
    moved = (shape[dim],) + tuple(s for i, s in enumerate(shape) if i != dim)
    lines = max(math.prod(moved[1:]), 1)
    rows = [draw(st.permutations(range(size)))[: moved[0]] for _ in range(lines)]
    arr = np.array(rows, I64).T.reshape(moved) if moved[0] else np.zeros(moved, I64)
    return np.moveaxis(arr, 0, dim)


def _unique_flat(draw, count, shape):
    """``count`` distinct positions of ``shape``, as one int64 array per dimension."""
    flat = np.array(draw(st.permutations(range(math.prod(shape))))[:count], I64)
    return tuple(np.asarray(a, I64) for a in np.unravel_index(flat, shape))


@st.composite
def dim_cases(draw, specs, unique=False, src=True, params_list=({},)):
    """``specs``: (input shape, dim, index shape[, src shape]); the index is valid for input along dim."""
    spec = draw(st.sampled_from(specs))
    shape, dim, ishape = spec[:3]
    size = shape[dim] if shape else 1
    lifted = _lift(ishape)
    idx = _unique_along(draw, lifted, dim, size) if unique else _ints(draw, lifted, 0, size)
    idx = idx.reshape(ishape)
    shapes = (shape, spec[3] if len(spec) > 3 else ishape) if src else (shape,)
    params = dict(draw(st.sampled_from(params_list)), dim=dim)
    return Case(shapes, params, (idx,))


def _lift(shape):
    return shape if shape else (1,)


# -- dense references ----------------------------------------------------------------------------------------
def _onehot(index, dim, shape):
    """``(index.size, prod(shape))`` bool: source element -> its flat target position."""
    shape, index = _lift(shape), index.reshape(_lift(index.shape))
    coords = [index if d == dim else jnp.broadcast_to(
        jnp.arange(index.shape[d]).reshape([-1 if k == d else 1 for k in range(index.ndim)]), index.shape)
        for d in range(index.ndim)]
    strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
    flat = sum(c * s for c, s in zip(coords, strides)).reshape(-1)
    return flat[:, None] == jnp.arange(math.prod(shape))[None, :]


def _src_flat(src, index):
    src = src.reshape(_lift(src.shape))
    return src[tuple(slice(0, n) for n in _lift(index.shape))].reshape(-1)


def gather_ref(x, index, *, dim):
    xs = x.reshape(_lift(x.shape))
    idx = index.reshape(_lift(index.shape))
    cut = tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(idx.shape))
    return jnp.take_along_axis(xs[cut], idx, axis=dim).reshape(index.shape)


def scatter_ref(x, src, index, *, dim):
    m = _onehot(index, dim, x.shape)
    written = m.T.astype(x.dtype) @ _src_flat(src, index)
    return jnp.where(m.any(0), written, x.reshape(-1)).reshape(x.shape)


def scatter_value_ref(x, index, *, dim, value):
    return jnp.where(_onehot(index, dim, x.shape).any(0), value, x.reshape(-1)).reshape(x.shape).astype(x.dtype)


def scatter_add_ref(x, src, index, *, dim):
    return x + (_onehot(index, dim, x.shape).T.astype(x.dtype) @ _src_flat(src, index)).reshape(x.shape)


def scatter_reduce_ref(x, src, index, *, dim, reduce, include_self):
    m = _onehot(index, dim, x.shape)
    s = _src_flat(src, index)[:, None]
    hit = m.any(0)
    xf = x.reshape(-1)
    if reduce in ("sum", "mean"):
        total = jnp.sum(jnp.where(m, s, 0.0), axis=0)
        if reduce == "sum":
            out = (xf if include_self else jnp.where(hit, 0.0, xf)) + total
        else:
            base = xf if include_self else jnp.where(hit, 0.0, xf)
            count = (1.0 if include_self else jnp.where(hit, 0.0, 1.0)) + m.sum(0)
            out = (base + total) / count
    elif reduce == "prod":
        out = (xf if include_self else jnp.where(hit, 1.0, xf)) * jnp.prod(jnp.where(m, s, 1.0), axis=0)
    else:
        pick = jnp.max if reduce == "amax" else jnp.min
        far = -jnp.inf if reduce == "amax" else jnp.inf
        cands = jnp.where(m, s, far)
        if include_self:
            out = pick(jnp.concatenate([xf[None, :], cands]), axis=0)
        else:
            out = jnp.where(hit, pick(cands, axis=0), xf)
    return out.reshape(x.shape).astype(x.dtype)


def index_add_ref(x, src, index, *, dim, alpha):
    onehot = (index[:, None] == jnp.arange(x.shape[dim])[None, :]).astype(x.dtype)
    added = jnp.tensordot(onehot, jnp.moveaxis(src, dim, 0), axes=(0, 0))
    return x + alpha * jnp.moveaxis(added, 0, dim)


def index_put_ref(x, values, *indices, accumulate):
    at = x.at[tuple(indices)]
    return at.add(values) if accumulate else at.set(values)


def take_ref(x, index):
    flat = x.reshape(-1)
    return jnp.take(flat, jnp.where(index < 0, index + flat.shape[0], index), axis=0)


def take_along_dim_ref(x, index, *, dim):
    if dim is None:
        return jnp.take_along_axis(x.reshape(-1), index.reshape(-1), axis=0)
    dim %= x.ndim
    index = jnp.where(index < 0, index + x.shape[dim], index)
    shape = list(np.broadcast_shapes(x.shape[:dim] + (1,) + x.shape[dim + 1:],
                                     index.shape[:dim] + (1,) + index.shape[dim + 1:]))
    xb = jnp.broadcast_to(x, tuple(shape[:dim]) + (x.shape[dim],) + tuple(shape[dim + 1:]))
    ib = jnp.broadcast_to(index, tuple(shape[:dim]) + (index.shape[dim],) + tuple(shape[dim + 1:]))
    return jnp.take_along_axis(xb, ib, axis=dim)


# -- fgraph calls --------------------------------------------------------------------------------------------
def gather_fg(x, index, *, dim):
    return fg.gather(x, dim, index)


def scatter_fg(x, src, index, *, dim):
    return fg.scatter(x, dim, index, src)


def scatter_value_fg(x, index, *, dim, value):
    return x.scatter(dim, index, value)


def scatter_add_fg(x, src, index, *, dim):
    return x.scatter_add(dim, index, src)


def scatter_reduce_fg(x, src, index, *, dim, reduce, include_self):
    return fg.scatter_reduce(x, dim, index, src, reduce, include_self=include_self)


def index_select_fg(x, index, *, dim):
    return x.index_select(dim, index)


def index_select_ref(x, index, *, dim):
    return jnp.take(x, index.reshape(-1), axis=dim)


def index_add_fg(x, src, index, *, dim, alpha):
    return fg.index_add(x, dim, index, src, alpha=alpha)


def index_put_fg(x, values, *indices, accumulate):
    return fg.index_put(x, indices, values, accumulate=accumulate)


def masked_fill_fg(x, mask, *, value):
    return x.masked_fill(mask, value)


def masked_fill_ref(x, mask, *, value):
    return jnp.where(mask, jnp.asarray(value, x.dtype), x)


def masked_fill_tensor_fg(x, value, mask):
    return fg.masked_fill(x, mask, value)


def masked_fill_tensor_ref(x, value, mask):
    return jnp.where(mask, value, x)


def masked_select_fg(x, mask):
    return x.masked_select(mask)


def masked_select_ref(x, mask):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    return jnp.broadcast_to(x, shape)[np.broadcast_to(mask, shape)]


def take_fg(x, index):
    return x.take(index)


def take_along_dim_fg(x, index, *, dim):
    return fg.take_along_dim(x, index, dim=dim)


# -- cases ---------------------------------------------------------------------------------------------------
GATHER_SPECS = [
    ((3, 4), 0, (5, 4)),  # repeats
    ((2, 3, 4), 2, (2, 2, 5)),  # smaller outside dim, larger along it
    ((3, 4), 0, (0, 4)),
    ((), 0, ()),
]
SCATTER_SPECS = [
    ((3, 4), 0, (2, 4), (2, 4)),
    ((3, 4), 1, (3, 2), (3, 3)),  # src larger than the index
    ((2, 3), 0, (0, 3), (1, 3)),
]
SCATTER_ADD_SPECS = [
    ((3, 4), 0, (5, 4)),  # repeats add up
    ((3, 4), 1, (2, 3), (2, 5)),
    ((2, 3), 0, (0, 3), (1, 3)),
]
#: One shape per include_self (each new signature compiles a dozen kernels): repeated
#: indices along dim 0; then along dim 1 with a src larger than the index (4 indices into
#: 3 positions per row: some positions are usually not hit and keep the input's value).
REDUCE_SPECS = {True: [((3, 4), 0, (5, 4))], False: [((2, 3), 1, (2, 4), (2, 5))]}


@st.composite
def reduce_cases(draw, reduce):
    include_self = draw(st.booleans())
    return draw(dim_cases(REDUCE_SPECS[include_self], params_list=(dict(reduce=reduce, include_self=include_self),)))


@st.composite
def index_select_cases(draw):
    shape, dim, ishape = draw(st.sampled_from([((3, 4), 1, (5,)), ((3, 4), 0, (0,)), ((2, 3, 4), 1, (2,)),
                                               ((3,), 0, ())]))
    return Case((shape,), dict(dim=dim), (_ints(draw, ishape, 0, shape[dim]),))


@st.composite
def index_add_cases(draw):
    shape, dim, n, alpha = draw(st.sampled_from([((3, 4), 0, 5, 1), ((3, 4), 1, 2, -2.0), ((3, 4), 0, 0, 1)]))
    src = shape[:dim] + (n,) + shape[dim + 1:]
    return Case((shape, src), dict(dim=dim, alpha=alpha), (_ints(draw, (n,), 0, shape[dim]),))


@st.composite
def index_put_cases(draw):
    kind = draw(st.sampled_from(["rows", "pairs", "pairs3d", "accumulate"]))
    if kind == "rows":  # x[i] = v, v broadcast along the rows
        rows = np.array(draw(st.permutations(range(3)))[:2], I64)
        return Case(((3, 4), (4,)), dict(accumulate=False), (rows,))
    if kind == "pairs":  # x[i, j] = scalar
        return Case(((3, 4), ()), dict(accumulate=False), _unique_flat(draw, 3, (3, 4)))
    if kind == "pairs3d":  # x[i, j] = v of shape (2, 4); negative indices count from the end
        i, j = _unique_flat(draw, 2, (2, 3))
        return Case(((2, 3, 4), (2, 4)), dict(accumulate=False), (i - 2, j))
    return Case(((3, 4), (5, 4)), dict(accumulate=True), (_ints(draw, (5,), -3, 3),))


@st.composite
def index_put_mask_cases(draw):
    mask = np.zeros(12, bool)
    mask[list(draw(st.permutations(range(12)))[:5])] = True
    accumulate = draw(st.booleans())
    return Case(((3, 4), (5,) if accumulate else ()), dict(accumulate=accumulate), (mask.reshape(3, 4),))


@st.composite
def masked_fill_cases(draw):
    xshape, mshape = draw(st.sampled_from([((2, 3), (2, 3)), ((3,), (2, 3)), ((2, 3), (3,)), ((0, 3), (3,))]))
    value = draw(st.sampled_from([-1.5, 2.0]))
    return Case((xshape,), dict(value=value), (draw(hnp.arrays(np.bool_, mshape)),))


@st.composite
def masked_fill_tensor_cases(draw):
    xshape, mshape = draw(st.sampled_from([((2, 3), (2, 3)), ((2, 1), (1, 3)), ((), ())]))
    return Case((xshape, ()), {}, (draw(hnp.arrays(np.bool_, mshape)),))


@st.composite
def masked_select_cases(draw):
    # (x shape, mask shape, number selected): fixed counts, so the kernels repeat.
    xshape, mshape, count = draw(st.sampled_from([((2, 3), (2, 3), 4), ((3,), (2, 3), 2), ((2, 3), (3,), 0)]))
    mask = np.zeros(math.prod(mshape), bool)
    mask[list(draw(st.permutations(range(mask.size)))[:count])] = True
    return Case((xshape,), {}, (mask.reshape(mshape),))


@st.composite
def take_cases(draw):
    shape, ishape = draw(st.sampled_from([((3, 4), (2, 3)), ((5,), (0,)), ((), (2,))]))
    n = max(math.prod(shape), 1)
    return Case((shape,), {}, (_ints(draw, ishape, -n, n),))


@st.composite
def take_along_dim_cases(draw):
    shape, ishape, dim = draw(st.sampled_from([
        ((3, 4), (3, 2), 1),
        ((3, 4), (1, 2), 1),  # indices broadcast
        ((1, 4), (3, 2), -1),  # input broadcast
        ((3, 4), (5,), None),
    ]))
    size = math.prod(shape) if dim is None else shape[dim]
    lo = 0 if dim is None else -size
    return Case((shape,), dict(dim=dim), (_ints(draw, ishape, lo, size),))


TABLE = [
    OpEntry("gather", gather_fg, gather_ref, 1, dim_cases(GATHER_SPECS, src=False), REAL),
    OpEntry("scatter", scatter_fg, scatter_ref, 2, dim_cases(SCATTER_SPECS, unique=True), REAL),
    OpEntry("scatter_value", scatter_value_fg, scatter_value_ref, 1,
            dim_cases(SCATTER_SPECS[:2], unique=True, src=False, params_list=(dict(value=1.5),)), REAL,
            max_examples=10),
    OpEntry("scatter_add", scatter_add_fg, scatter_add_ref, 2, dim_cases(SCATTER_ADD_SPECS), REAL),
    OpEntry("scatter_reduce_sum", scatter_reduce_fg, scatter_reduce_ref, 2,
            reduce_cases("sum"), REAL, max_examples=12),
    OpEntry("scatter_reduce_mean", scatter_reduce_fg, scatter_reduce_ref, 2,
            reduce_cases("mean"), REAL, max_examples=12),
    OpEntry("scatter_reduce_prod", scatter_reduce_fg, scatter_reduce_ref, 2,
            reduce_cases("prod"), NONZERO, max_examples=12),
    OpEntry("scatter_reduce_amax", scatter_reduce_fg, scatter_reduce_ref, 2,
            reduce_cases("amax"), (GRID_A, GRID_B), max_examples=12),
    OpEntry("scatter_reduce_amin", scatter_reduce_fg, scatter_reduce_ref, 2,
            reduce_cases("amin"), (GRID_A, GRID_B), max_examples=12),
    OpEntry("index_select", index_select_fg, index_select_ref, 1, index_select_cases(), REAL),
    OpEntry("index_add", index_add_fg, index_add_ref, 2, index_add_cases(), REAL),
    OpEntry("index_put", index_put_fg, index_put_ref, 2, index_put_cases(), REAL),
    OpEntry("index_put_mask", index_put_fg, index_put_ref, 2, index_put_mask_cases(), REAL,
            max_examples=6, static_consts=True),
    OpEntry("masked_fill", masked_fill_fg, masked_fill_ref, 1, masked_fill_cases(), REAL),
    OpEntry("masked_fill_tensor_value", masked_fill_tensor_fg, masked_fill_tensor_ref, 2,
            masked_fill_tensor_cases(), REAL, max_examples=12),
    OpEntry("masked_select", masked_select_fg, masked_select_ref, 1, masked_select_cases(), REAL,
            max_examples=8, static_consts=True),
    OpEntry("take", take_fg, take_ref, 1, take_cases(), REAL),
    OpEntry("take_along_dim", take_along_dim_fg, take_along_dim_ref, 1, take_along_dim_cases(), REAL),
]

#: Entries whose op has no second derivative in PyTorch: none.
FIRST_ORDER_ONLY: dict = {}


# -- the optional PyTorch oracle: torch_fn(*torch_tensors, *consts, **params) --------------------------------
def _torch():
    import torch

    return torch


def _fit(src, index):
    """PyTorch has no backward for a ``src`` larger than ``index`` (fgraph pads the gradient with
    zeros); slicing it first in PyTorch gives the same values and gradients."""
    return src[tuple(slice(0, n) for n in index.shape)].contiguous() if index.ndim else src


def _torch_scatter_reduce(x, src, index, *, dim, reduce, include_self):
    return _torch().scatter_reduce(x, dim, index, _fit(src, index), reduce, include_self=include_self)


def _torch_index_put(x, values, *indices, accumulate):
    return _torch().index_put(x, tuple(indices), values, accumulate=accumulate)


def _torch_masked_fill_tensor(x, value, mask):
    return _torch().masked_fill(x, mask, value)


TORCH = {
    "gather": lambda x, index, *, dim: _torch().gather(x, dim, index),
    "scatter": lambda x, src, index, *, dim: _torch().scatter(x, dim, index, _fit(src, index)),
    "scatter_value": lambda x, index, *, dim, value: x.scatter(dim, index, value),
    "scatter_add": lambda x, src, index, *, dim: x.scatter_add(dim, index, _fit(src, index)),
    **{f"scatter_reduce_{r}": _torch_scatter_reduce for r in ("sum", "mean", "prod", "amax", "amin")},
    "index_select": lambda x, index, *, dim: x.index_select(dim, index),
    "index_add": lambda x, src, index, *, dim, alpha: _torch().index_add(x, dim, index, src, alpha=alpha),
    "index_put": _torch_index_put,
    "index_put_mask": _torch_index_put,
    "masked_fill": lambda x, mask, *, value: x.masked_fill(mask, value),
    "masked_fill_tensor_value": _torch_masked_fill_tensor,
    "masked_select": lambda x, mask: x.masked_select(mask),
    "take": lambda x, index: x.take(index),
    "take_along_dim": lambda x, index, *, dim: _torch().take_along_dim(x, index, dim=dim),
}


#: Entries whose ops refuse complex inputs (an OpError); every other entry is also checked on complex ones.
REAL_ONLY = {
    "scatter_reduce_amax", "scatter_reduce_amin"
}
#: torch's autograd refuses complex outputs of scatter_reduce.
TORCH_REFUSES_COMPLEX = {"scatter_reduce_sum", "scatter_reduce_mean", "scatter_reduce_prod"}
