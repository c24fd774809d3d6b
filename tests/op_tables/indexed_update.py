"""``x.at[index].get()/.set/.add/.mul/.min/.max`` (fgraph/ops/indexed_update.py) against pure JAX.

Indices are named by a ``kind`` parameter; their arrays (index tensors, masks) are ``consts``.
The references are JAX's own ``x.at[index]`` except where PyTorch reads the index differently:
an int before index arrays (``x[1, :, t]``) selects first, written as two JAX steps; a mask
with a value that does not vary over the selected elements is ``jnp.where`` (so the reference
takes the mask traced, as fgraph does). ``mul`` tells JAX the positions are unique (the only
case JAX differentiates; fgraph checks it eagerly). ``min``/``max`` draw ``x`` and ``v`` from
disjoint grids (no ties).
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from op_harness import GRID_A, GRID_B, REAL, Case, OpEntry, cases

_ROWS = np.array([2, 0])
_PAIRS = (np.array([0, 2, 1]), np.array([3, -4, 1]))
_REPEATED = np.array([1, -3, 2, 1])
_MASK = np.array([True, False, True])


def _index(kind: str, consts: tuple) -> tuple:
    """The index of ``kind`` (consts are fg Tensors or JAX arrays), as ``x[index] = v`` spells it."""
    if kind == "rows_step":  # ints and slices only
        return (slice(None, None, 2), 1)
    if kind == "int_then_array":  # x (2, 3, 4): PyTorch's region is (3, len(index))
        return (1, slice(None), consts[0])
    if kind == "mask":
        return consts[0]
    return tuple(consts)  # "pairs", "repeated": index arrays


def at_fg(x, v, *consts, kind, mode):
    return getattr(x.at[_index(kind, consts)], mode)(v)


def at_get_fg(x, *consts, kind):
    return x.at[_index(kind, consts)].get()


def at_ref(x, v, *consts, kind, mode):
    if kind == "int_then_array":
        return x.at[1].set(at_ref(x[1], v, *consts, kind="pairs_after_slice", mode=mode))
    if kind == "pairs_after_slice":
        index = (slice(None),) + consts
    elif kind == "mask":  # a value that broadcasts over the selected rows: where
        combined = v if mode == "set" else getattr(jnp, {"min": "minimum", "max": "maximum"}.get(mode, mode))(x, v)
        return jnp.where(consts[0][:, None], combined, x)
    else:
        index = _index(kind, consts)
    options = {"unique_indices": True} if mode == "mul" else {}
    return getattr(x.at[index], mode)(v, **options)


def at_get_ref(x, *consts, kind):
    if kind == "int_then_array":
        return x[1][:, consts[0]]
    return x[_index(kind, consts)]


def _case(x_shape: tuple, v_shape: tuple, kind: str, mode: str, consts: tuple = ()) -> Case:
    return Case((x_shape, v_shape), dict(kind=kind, mode=mode), consts)


TABLE = [
    OpEntry("at_get", at_get_fg, at_get_ref, 1, cases(
        Case(((2, 3, 4),), dict(kind="int_then_array"), (_ROWS,)),
        Case(((3, 4),), dict(kind="repeated"), (_REPEATED,)),
    ), REAL),
    OpEntry("at_set", at_fg, at_ref, 2, cases(
        _case((3, 4), (2,), "rows_step", "set"),
        _case((2, 3, 4), (3, 2), "int_then_array", "set", (_ROWS,)),
        _case((3, 4), (4,), "mask", "set", (_MASK,)),
    ), REAL),
    OpEntry("at_add", at_fg, at_ref, 2, cases(
        _case((3, 4), (4, 4), "repeated", "add", (_REPEATED,)),  # repeated rows add up
        _case((3, 4), (1, 4), "mask", "add", (_MASK,)),
    ), REAL),
    OpEntry("at_mul", at_fg, at_ref, 2, cases(
        _case((3, 4), (3,), "pairs", "mul", _PAIRS),
        _case((3, 4), (), "rows_step", "mul"),
    ), REAL),
    OpEntry("at_min", at_fg, at_ref, 2, cases(
        _case((2, 3, 4), (1, 2), "int_then_array", "min", (_ROWS,)),
        _case((3, 4), (4,), "mask", "min", (_MASK,)),
    ), (GRID_A, GRID_B)),
    OpEntry("at_max", at_fg, at_ref, 2, cases(
        _case((3, 4), (3,), "pairs", "max", _PAIRS),
    ), (GRID_A, GRID_B)),
]

#: Orderings: complex input is refused, as by torch.minimum / torch.maximum.
REAL_ONLY = {"at_min", "at_max"}


# -- the optional PyTorch oracle: y = x.clone(); y[index] = v (or op= v) ---------------------------------------
def _torch_setitem(x, v, *consts, kind, mode):
    y = x.clone()
    index = _index(kind, consts)
    if mode == "set":
        y[index] = v
    elif kind == "repeated":
        y = y.index_put(tuple(consts), v, accumulate=True)
    elif mode == "add":
        y[index] += v
    else:
        y[index] *= v
    return y


def _torch_getitem(x, *consts, kind):
    return x[_index(kind, consts)]


TORCH = {"at_get": _torch_getitem, "at_set": _torch_setitem, "at_add": _torch_setitem, "at_mul": _torch_setitem}
