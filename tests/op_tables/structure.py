"""Structure ops (fgraph/ops/structure.py): clone, select, index_fill, index_copy, masked_scatter,
split_with_sizes, hsplit/vsplit/dsplit and the transposing attributes T, H, mH.

As in ``shape_movement``, every op here is linear, so each entry checks
``p(op(x)) = op(x) * op(x) + op(x)`` (its HVP then runs the rule's own rule) and split-like
ops concatenate ``p`` of their flattened pieces. Calls are written once over a namespace
(``fg`` or ``torch``), so ``TORCH`` pins the same argument conventions. The JAX references
are independent of the implementations: ``jnp.take`` for select, one-hot masks built in
NumPy for index_fill and index_copy (so those entries have static consts), ``.at[nonzero].set``
for masked_scatter, ``jnp.split``/``hsplit``/``vsplit``/``dsplit`` for the splits.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

import fgraph as fg
from op_harness import REAL, Case, OpEntry, cases

I64 = np.int64


def p(y):
    """The nonlinearity wrapped around every op (see the module docstring)."""
    return y * y + y


def joined(ns, pieces):
    return ns.cat([p(q).reshape(-1) for q in pieces])


#: op name -> (call, ref): ``call(ns, *tensors, *consts, **params)`` with ``ns`` = fg or torch; ``ref`` in jnp.
OPS: dict = {}


def _op(name, call, ref, case_list):
    OPS[name] = (call, ref)
    return [Case(c.shapes, {"op": name, **c.params}, c.consts) for c in case_list]


def _fg_call(*args, op, **params):
    return OPS[op][0](fg, *args, **params)


def _ref_call(*args, op, **params):
    return OPS[op][1](*args, **params)


def _group(name, *case_lists, static_consts=False):
    items = [c for case_list in case_lists for c in case_list]
    return OpEntry(name, _fg_call, _ref_call, None, cases(*items), REAL, None, static_consts)


def C(shapes, consts=(), **params):
    return Case(shapes, params, consts)


# -- calls over a namespace --------------------------------------------------------------------------------------
def clone(ns, x):
    return p(ns.clone(x))


def select(ns, x, *, dim, index):
    return p(ns.select(x, dim, index))


def select_method(ns, x, *, dim, index):
    return p(x.select(dim, index))


def index_fill(ns, x, index, *, dim, value):
    return p(ns.index_fill(x, dim, index, value))


def index_fill_tensor(ns, x, value, index, *, dim):
    return p(x.index_fill(dim, index, value))


def index_copy(ns, x, source, index, *, dim):
    return p(ns.index_copy(x, dim, index, source))


def masked_scatter(ns, x, source, mask):
    return p(ns.masked_scatter(x, mask, source))


def split_with_sizes(ns, x, *, sizes, dim):
    return joined(ns, ns.split_with_sizes(x, sizes, dim))


def direction_split(ns, x, *, fn, sections):
    return joined(ns, getattr(ns, fn)(x, sections))


def attribute(ns, x, *, name):
    return p(getattr(x, name))


def view_as(ns, x, other):
    return p(x.view_as(other))


# -- pure-JAX references -------------------------------------------------------------------------------------------
def _dim_mask(n, positions, dim, ndim):
    dim %= ndim
    mask = np.zeros(n, bool)
    mask[np.asarray(positions)] = True
    return mask.reshape((n,) + (1,) * (ndim - dim - 1))


def index_fill_ref(x, index, *, dim, value):
    return p(jnp.where(_dim_mask(x.shape[dim], index, dim, x.ndim), jnp.asarray(value, x.dtype), x))


def index_fill_tensor_ref(x, value, index, *, dim):
    return p(jnp.where(_dim_mask(x.shape[dim], index, dim, x.ndim), value, x))


def index_copy_ref(x, source, index, *, dim):
    dim %= x.ndim
    out = x
    for i, j in enumerate(np.asarray(index)):
        piece = jnp.expand_dims(jnp.take(source, i, axis=dim), dim)
        out = jnp.where(_dim_mask(x.shape[dim], [j], dim, x.ndim), piece, out)
    return p(out)


def masked_scatter_ref(x, source, mask):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    where = np.nonzero(np.broadcast_to(mask, shape))
    out = jnp.broadcast_to(x, shape).at[where].set(source.reshape(-1)[: len(where[0])])
    return p(out)


def split_with_sizes_ref(x, *, sizes, dim):
    return jnp.concatenate([p(q).reshape(-1) for q in jnp.split(x, list(np.cumsum(sizes)[:-1]), axis=dim)])


def direction_split_ref(x, *, fn, sections):
    return jnp.concatenate([p(q).reshape(-1) for q in getattr(jnp, fn)(x, sections)])


def _matrix_transpose(x):
    return jnp.swapaxes(x, -1, -2)


_ATTRIBUTES = {"T": jnp.transpose, "H": lambda x: jnp.conj(x).T, "mH": lambda x: jnp.conj(_matrix_transpose(x)),
               "mT": _matrix_transpose}


def attribute_ref(x, *, name):
    return p(_ATTRIBUTES[name](x))


# -- the table -----------------------------------------------------------------------------------------------------
SELECT = [
    *_op("clone", clone, lambda x: p(x), [C(((2, 3),)), C(((0, 2),))]),
    *_op("select", select, lambda x, *, dim, index: p(jnp.take(x, index, axis=dim)), [
        C(((2, 3, 4),), dim=1, index=-1), C(((3,),), dim=0, index=2),
    ]),
    *_op("select_method", select_method, lambda x, *, dim, index: p(jnp.take(x, index, axis=dim)), [
        C(((2, 3),), dim=-1, index=0),
    ]),
    *_op("view_as", view_as, lambda x, other: p(x.reshape(other.shape)), [C(((2, 3),), (np.zeros((3, 1, 2)),))]),
]
INDEX_FILL = [
    *_op("index_fill", index_fill, index_fill_ref, [
        C(((2, 3),), (np.array([0, 2, 0], I64),), dim=1, value=1.5),
        C(((3, 2, 2),), (np.array([1], I64),), dim=0, value=-2.0),
        C(((2, 3),), (np.array([], I64),), dim=-1, value=0.5),
    ]),
    *_op("index_fill_tensor", index_fill_tensor, index_fill_tensor_ref, [
        C(((2, 3), ()), (np.array([2, 0, 2], I64),), dim=1), C(((3, 2), ()), (np.array([1], I64),), dim=0),
    ]),
]
INDEX_COPY = [
    *_op("index_copy", index_copy, index_copy_ref, [
        C(((2, 3), (2, 2)), (np.array([2, 0], I64),), dim=1),
        C(((3, 2), (1, 2)), (np.array([1], I64),), dim=0),
        C(((2, 3, 2), (2, 3, 1)), (np.array([0], I64),), dim=-1),
    ]),
    *_op("masked_scatter", masked_scatter, masked_scatter_ref, [
        C(((2, 3), (6,)), (np.array([[True, False, True], [False, True, True]]),)),
        C(((2, 3), (2, 3)), (np.array([True, False, True]),)),  # mask broadcasts; source has spare elements
        C(((3, 1), (3, 2)), (np.array([[True, False], [False, False], [True, True]]),)),  # input broadcasts
    ]),
]
SPLITS = [
    *_op("split_with_sizes", split_with_sizes, split_with_sizes_ref, [
        C(((2, 5),), sizes=[1, 0, 4], dim=1), C(((3,),), sizes=[3], dim=0),
    ]),
    *_op("hsplit_vsplit_dsplit", direction_split, direction_split_ref, [
        C(((2, 6),), fn="hsplit", sections=3), C(((4,),), fn="hsplit", sections=[1, 3]),
        C(((4, 2),), fn="vsplit", sections=[1, 3]), C(((1, 2, 4),), fn="dsplit", sections=2),
    ]),
]
ATTRIBUTES = [
    *_op("transpose_attributes", attribute, attribute_ref, [
        C(((2, 3),), name="T"), C(((3, 2),), name="H"), C(((2, 3, 4),), name="mH"), C(((2, 2),), name="mT"),
    ]),
]

TABLE = [
    _group("clone_select_view_as", SELECT),
    _group("index_fill", INDEX_FILL, static_consts=True),
    _group("index_copy_masked_scatter", INDEX_COPY, static_consts=True),
    _group("split_with_sizes_hvdsplit", SPLITS),
    _group("transpose_attributes", ATTRIBUTES),
]


def _torch_call(*args, op, **params):
    import torch

    return OPS[op][0](torch, *args, **params)


try:
    import torch  # noqa: F401

    TORCH = {entry.name: _torch_call for entry in TABLE}
except ImportError:  # PyTorch is an optional oracle
    TORCH = {}
