"""Functional indexed update: ``x.at[index].set(v)``, ``.add(v)``, ``.mul(v)``, ``.min(v)``, ``.max(v)``, ``.get()``.

fgraph tensors are immutable, so PyTorch's ``x[index] = v`` is spelled as in JAX and returns
a new tensor: ``x = x.at[index].set(v)`` (``x[index] += v`` is ``x = x.at[index].add(v)``).
The index is anything ``x[index] = v`` takes in PyTorch -- ints (negative too), slices with
steps, ``...``, ``None``, boolean masks (whole or covering some dimensions), integer tensors,
NumPy arrays and lists, and combinations of them -- read with PyTorch's rules (see
:mod:`fgraph.ops._index_update_plan`: ints select first, so ``x[1, :, t]`` keeps ``t``'s
dimensions in place). ``v`` broadcasts to the region ``x[index]`` (leading size-1 dimensions
dropped, as in PyTorch) and is cast to ``x``'s dtype; ``.add``/``.mul``/``.min``/``.max``
compute in the promoted dtype and cast back, like ``x[index] += v``.

Repeated positions: ``.add`` (and ``.mul``, ``.min``, ``.max``) combines every value written to
the same position (JAX's semantics, PyTorch's ``index_put_(..., accumulate=True)`` for
``.add``); which value ``.set`` keeps is unspecified, as in both. The gradient of ``.mul``
with respect to ``v`` needs unique positions (JAX refuses it too): an eager call with
repeated positions and a ``v`` that requires grad raises.

Each mode is one primitive (``indexed_set``, ``indexed_add``, ... and ``indexed_get``, the
region read) whose derivative is written with the others, so every order works, under
``fg.compile``, ``jax.jit`` and ``fg.func.vmap`` too. Nodes carry PyTorch's names for the
same write: ``CopySlices`` when it lands on a view (an int, ``None`` or a partial slice in the
index), ``IndexPutBackward0`` for index tensors or masks on the whole tensor, ``FillBackward3``
/ ``CopyBackwards`` for ``x[:] = v``. A single boolean mask whose value does not vary over the
selected elements (``logits.at[logits < v].set(-inf)``) is a ``where``: it traces.

Example:
    >>> import fgraph as fg
    >>> x = fg.zeros(2, 4)
    >>> x.at[:, 0::2].set(1.0).tolist()
    [[1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0]]
    >>> x.at[fg.tensor([0, 0]), 1].add(2.0).tolist()
    [[0.0, 4.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]
    >>> y = fg.tensor([1.0, -2.0, 3.0], requires_grad=True)
    >>> z = y.at[y < 0].set(0.0)
    >>> z.tolist(), z.grad_fn.name()
    ([1.0, 0.0, 3.0], 'IndexPutBackward0')
"""
from __future__ import annotations

import functools
from typing import Any, Optional, Union

import jax
import jax.numpy as jnp
import numpy as np

from fgraph.errors import OpError
from fgraph.ops._declare import OpDef, apply_op, declare
from fgraph.ops._index_update_plan import (
    Where, check_arrays_broadcast, check_items, get_region, has_repeats, is_array_item, plan_mask,
    refuse_traced_mask, region_shape, split_ints, torch_node_name,
)
from fgraph.ops._variants import node_variant
from fgraph.ops.elementwise import WHERE, add, div, eq, maximum, minimum, mul, to_dtype
from fgraph.ops.indexing import _decode, _encode, getitem
from fgraph.ops.shape import reshape
from fgraph.tensor import Tensor, _wrap, type_name

Value = Union[Tensor, bool, int, float, complex]


# -- kernels ----------------------------------------------------------------------------------------------
def _updated(x: Any, v: Any, arrays: tuple, outer: Any, spec: tuple, mode: str) -> Any:
    """``x`` with ``x[index]`` combined with ``v`` (PyTorch's order: ``outer``'s ints first, then ``spec``)."""
    sub = x if outer is None else x[_decode(outer, ())]
    at_index = _decode(spec, arrays)
    v = jnp.asarray(v)
    if mode == "set":
        new = sub.at[at_index].set(v.astype(x.dtype))
    else:  # x[index] op= v: computed in the promoted dtype, written back in x's
        dtype = jnp.result_type(sub, v)
        new = getattr(sub.astype(dtype).at[at_index], mode)(v.astype(dtype)).astype(x.dtype)
    return new if outer is None else x.at[_decode(outer, ())].set(new)


def _get_forward(x, *arrays, outer, spec):
    return get_region(x, arrays, outer, spec)


def _set_forward(x, v, *arrays, outer, spec):
    return _updated(x, v, arrays, outer, spec, "set")


def _add_forward(x, v, *arrays, outer, spec):
    return _updated(x, v, arrays, outer, spec, "add")


def _mul_forward(x, v, *arrays, outer, spec):
    return _scatter_mul(outer, spec, x, v, *arrays)


# JAX differentiates a scatter-multiply with respect to the values only when told the positions are unique;
# this JVP assumes it (checked eagerly in ``update``). Its dx term is dx times the scattered factors (a call of
# itself on ones, never a raw scatter-multiply of v), so JAX differentiates it again to any order.
@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def _scatter_mul(outer, spec, x, v, *arrays):
    return _updated(x, v, arrays, outer, spec, "mul")


@_scatter_mul.defjvp
def _scatter_mul_jvp(outer, spec, primals, tangents):
    x, v, *arrays = primals
    dx, dv = tangents[:2]
    out = _scatter_mul(outer, spec, x, v, *arrays)
    from_v = _updated(jnp.zeros_like(out), get_region(x, arrays, outer, spec) * dv, arrays, outer, spec, "add")
    factors = _scatter_mul(outer, spec, jnp.ones_like(x), v, *arrays)
    return out, dx * factors + from_v


def _min_forward(x, v, *arrays, outer, spec):
    return _updated(x, v, arrays, outer, spec, "min")


def _max_forward(x, v, *arrays, outer, spec):
    return _updated(x, v, arrays, outer, spec, "max")


# -- derivative rules: each written with the family's own ops ------------------------------------------------
def _get_rule(ctx, g):
    arrays = ctx.inputs[1:]
    zeros = _wrap(jnp.zeros(ctx.shapes[0], g.dtype))
    return (_apply(ADD, zeros, g, arrays, ctx.params),) + (None,) * len(arrays)


def _set_rule(ctx, g):
    arrays = ctx.inputs[2:]
    gx = _apply(SET, g, 0, arrays, ctx.params) if ctx.needs[0] else None
    gv = _region(g, arrays, ctx.params) if ctx.needs[1] else None
    return (gx, gv) + (None,) * len(arrays)


def _add_rule(ctx, g):
    arrays = ctx.inputs[2:]
    gv = _region(g, arrays, ctx.params) if ctx.needs[1] else None
    return (g if ctx.needs[0] else None, gv) + (None,) * len(arrays)


def _mul_rule(ctx, g):
    x, v = ctx.inputs[:2]
    arrays = ctx.inputs[2:]
    gx = _apply(MUL, g, v, arrays, ctx.params) if ctx.needs[0] else None
    gv = _region(g * x, arrays, ctx.params) if ctx.needs[1] else None  # unique positions (checked eagerly)
    return (gx, gv) + (None,) * len(arrays)


def _extremal_rule(ctx, g):
    # Every contender equal to the result (x's element and each value written there) gets an equal share
    # of the gradient, as jnp.max / torch.amax split ties (and JAX's scatter_min/max).
    x, v = ctx.inputs[:2]
    arrays = ctx.inputs[2:]
    result = ctx.result
    if isinstance(v, Tensor) and v.dtype != result.dtype:
        v = to_dtype(v, result.dtype)
    x_wins = to_dtype(eq(x, result), g.dtype)
    v_wins = to_dtype(eq(v, _region(result, arrays, ctx.params)), g.dtype)
    share = div(g, _apply(ADD, x_wins, v_wins, arrays, ctx.params))
    gx = mul(share, x_wins) if ctx.needs[0] else None
    gv = mul(_region(share, arrays, ctx.params), v_wins) if ctx.needs[1] else None
    return (gx, gv) + (None,) * len(arrays)


_PARAMS = ("outer", "spec")
_MAX_ARRAYS = 64  # an index has at most one array per dimension
# mul saves x only when v needs a gradient, v only when x does, and the index arrays always.
_MUL_SAVES = {0: (1,), 1: (0,), **{i: (0, 1) for i in range(2, 2 + _MAX_ARRAYS)}}
_ORDERED = "order complex numbers by a real key instead, e.g. x.at[i].set(fg.where(v.abs() < x[i].abs(), v, x[i]))"

GET = declare("indexed_get", _get_forward, _get_rule, params=_PARAMS, save_inputs=slice(1, None),
              node_name="IndexBackward0")
SET = declare("indexed_set", _set_forward, _set_rule, params=_PARAMS, save_inputs=slice(2, None),
              node_name="IndexPutBackward0")
ADD = declare("indexed_add", _add_forward, _add_rule, params=_PARAMS, save_inputs=slice(2, None),
              node_name="IndexPutBackward0")
MUL = declare("indexed_mul", _mul_forward, _mul_rule, params=_PARAMS, save_inputs=_MUL_SAVES,
              node_name="IndexPutBackward0")
MIN = declare("indexed_min", _min_forward, _extremal_rule, params=_PARAMS, save_inputs=True, save_result=True,
              node_name="IndexPutBackward0", real_only=True, complex_fix=_ORDERED)
MAX = declare("indexed_max", _max_forward, _extremal_rule, params=_PARAMS, save_inputs=True, save_result=True,
              node_name="IndexPutBackward0", real_only=True, complex_fix=_ORDERED)
_OPS = {"set": SET, "add": ADD, "mul": MUL, "min": MIN, "max": MAX}
_COMBINE = {"add": add, "mul": mul, "min": minimum, "max": maximum}
_VARIANTS: dict = {}


def _named(op: OpDef, node_name: str) -> OpDef:
    """``op`` recording nodes named ``node_name`` (PyTorch's name for this kind of index)."""
    if op.node_cls.__name__ == node_name:
        return op
    variant = _VARIANTS.get((op.name, node_name))
    if variant is None:
        variant = node_variant(op, node_name)
        variant.real_only, variant.complex_fix, variant.tangent = op.real_only, op.complex_fix, op.tangent
        variant.fuse_rule = op.fuse_rule  # node_variant copies neither these nor real_only/tangent
        _VARIANTS[(op.name, node_name)] = variant
    return variant


def _apply(op: OpDef, x: Any, v: Any, arrays: tuple, params: Any) -> Tensor:
    return apply_op(op, (x, v) + tuple(arrays), params)


def _region(x: Tensor, arrays: tuple, params: Any) -> Tensor:
    return apply_op(GET, (x,) + tuple(arrays), params)


# -- arguments -------------------------------------------------------------------------------------------------
_KIND_RANK = {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}  # PyTorch's "can cast" order of dtype kinds


def _value(value: Any, x: Tensor, name: str, mode: str) -> Value:
    """``value`` as a Tensor or Python number, or a clear error for what ``x[index] = value`` refuses."""
    if isinstance(value, (np.ndarray, np.generic, jax.Array)):
        value = _wrap(jnp.asarray(value))
    elif not isinstance(value, (Tensor, bool, int, float, complex)):
        raise TypeError(f"{name}: the value must be a Tensor, a Python number or a NumPy/JAX array, got "
                        f"{type_name(value)}; wrap a list with fg.tensor(...).")
    kind = value.dtype.kind if isinstance(value, Tensor) else np.dtype(type(value)).kind
    x_kind = x.dtype.kind if x.dtype.kind in _KIND_RANK else "f"  # bfloat16 and friends
    what = f"a value of dtype {value.dtype}" if isinstance(value, Tensor) else f"the {type(value).__name__} {value!r}"
    if kind == "c" and x_kind != "c":
        raise OpError(f"{name}: cannot write {what} into x of dtype {x.dtype} (PyTorch refuses complex values "
                      "in a real tensor too); write its real part (v.real) or make x complex first "
                      "(x.to(fg.complex64)).")
    if mode != "set" and _KIND_RANK.get(kind, 2) > _KIND_RANK[x_kind]:
        raise OpError(f"{name}: x of dtype {x.dtype} combined with {what} gives a result that cannot be cast back "
                      f"to {x.dtype} (PyTorch's x[index] {mode}= v refuses it too); cast x first (x.double()), or "
                      f"the value to {x.dtype}.")
    return value


def _fit(value: Value, region: tuple, x: Tensor, name: str, described: Optional[str] = None) -> Value:
    """``value`` reshaped (leading size-1 dimensions dropped) to broadcast to ``region``, or a shape error."""
    if not isinstance(value, Tensor):
        return value
    shape = tuple(value.shape)
    while len(shape) > len(region) and shape[0] == 1:
        shape = shape[1:]
    try:
        fits = np.broadcast_shapes(shape, region) == region
    except ValueError:
        fits = False
    if not fits:
        target = region if described is None else described
        raise OpError(f"{name}: a value of shape {tuple(value.shape)} cannot be broadcast to the indexed region "
                      f"x[index] of shape {target} (x has shape {tuple(x.shape)}); give the value that shape, or "
                      "one that broadcasts to it (sizes equal or 1, aligned from the right).")
    return value if shape == tuple(value.shape) else reshape(value, shape)


# -- the update ------------------------------------------------------------------------------------------------
def update(x: Tensor, index: Any, value: Any, mode: str) -> Tensor:
    """``x`` with ``x[index]`` set to (``mode='set'``) or combined with (``'add'``, ``'mul'``, ``'min'``,
    ``'max'``) ``value``: the function behind ``x.at[index].<mode>(value)``.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.ops.indexed_update import update
        >>> update(fg.ones(3), fg.tensor([0, 2]), 5.0, "mul").tolist()
        [5.0, 1.0, 5.0]
    """
    name = f"x.at[index].{mode}"
    items = check_items(index, name)
    value = _value(value, x, name, mode)
    value_shape = tuple(value.shape) if isinstance(value, Tensor) else ()
    plan = plan_mask(items, tuple(x.shape), value_shape, name)
    if plan is not None:
        return _where_update(x, value, plan, mode, name)
    refuse_traced_mask(items, value_shape, name)
    spec, arrays = _encode(items, tuple(x.shape), name)
    check_arrays_broadcast(arrays, name)
    outer, inner = split_ints(spec)
    region = region_shape(outer, inner, tuple(x.shape), tuple(tuple(a.shape) for a in arrays))
    value = _fit(value, region, x, name)
    if mode == "mul" and isinstance(value, Tensor) and value.requires_grad:
        sub_shape = tuple(x.shape) if outer is None else region_shape(None, outer, tuple(x.shape), ())
        if has_repeats(inner, arrays, sub_shape):
            raise OpError(f"{name}: the index names some positions of x (shape {tuple(x.shape)}) more than once "
                          "and the value requires grad; the gradient of a repeated product is not defined here "
                          "(JAX refuses it too). Use an index without repeats, or multiply in several steps.")
    op = _named(_OPS[mode], torch_node_name(spec, tuple(x.shape), len(value_shape), mode))
    return _apply(op, x, value, arrays, op.Params(outer, inner))


def _where_update(x: Tensor, value: Value, plan: Where, mode: str, name: str) -> Tensor:
    """A single-mask update as ``where(mask, new, x[basic])`` (no data-dependent shape: it traces)."""
    dims = plan.region[:plan.start] + ("N",) + plan.region[plan.start + plan.k:]
    shown = ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "")
    described = f"({shown}), N the number of elements the mask selects"
    if isinstance(value, Tensor) and tuple(value.shape) != plan.value_shape:
        value = reshape(value, plan.value_shape)
    _fit(value, plan.region, x, name, described)
    region = x if plan.whole else getitem(x, plan.basic)
    if mode == "set":
        new = value
        if isinstance(new, Tensor) and new.dtype != x.dtype:
            new = to_dtype(new, x.dtype)
        elif not isinstance(new, Tensor) and jnp.result_type(x.dtype, new) != x.dtype:
            new = _wrap(jnp.asarray(np.asarray(new).astype(x.dtype)))
    else:
        new = _COMBINE[mode](region, value)
        if new.dtype != x.dtype:
            new = to_dtype(new, x.dtype)
    written = apply_op(_named(WHERE, "IndexPutBackward0"), (plan.mask, new, region))
    if plan.whole:
        return written
    return _apply(_named(SET, "CopySlices"), x, written, (), SET.Params(None, plan.basic_spec))


def get(x: Tensor, index: Any) -> Tensor:
    """``x[index]`` read with PyTorch's rules: the region ``x.at[index]`` writes.

    Example:
        >>> import fgraph as fg
        >>> x = fg.zeros(3, 4, 5)
        >>> x.at[1, :, fg.tensor([0, 2])].get().shape
        (4, 2)
    """
    name = "x.at[index].get"
    items = check_items(index, name)
    if not any(is_array_item(it) for it in items):
        return getitem(x, index)
    spec, arrays = _encode(items, tuple(x.shape), name)
    check_arrays_broadcast(arrays, name)
    outer, inner = split_ints(spec)
    if outer is None:  # no ints among index arrays: NumPy's placement is PyTorch's
        return getitem(x, index)
    return _region(x, arrays, GET.Params(outer, inner))


# -- x.at ------------------------------------------------------------------------------------------------------
class IndexUpdateRef:
    """``x.at[index]``: ``.set(v)``, ``.add(v)``, ``.mul(v)``, ``.min(v)``, ``.max(v)`` return new tensors;
    ``.get()`` reads ``x[index]``.

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([1.0, 5.0, 3.0])
        >>> x.at[1:].min(4.0).tolist(), x.at[[0, 0]].add(1.0).tolist()
        ([1.0, 4.0, 3.0], [3.0, 5.0, 3.0])
    """

    __slots__ = ("_x", "_index")

    def __init__(self, x: Tensor, index: Any) -> None:
        self._x = x
        self._index = index

    def __repr__(self) -> str:
        return f"IndexUpdateRef(shape={tuple(self._x.shape)}, index={self._index!r})"

    def get(self) -> Tensor:
        """``x[index]`` (PyTorch's reading of the index)."""
        return get(self._x, self._index)

    def set(self, value: Any) -> Tensor:
        """A copy of ``x`` with ``x[index] = value`` (``value`` broadcast and cast to x's dtype)."""
        return update(self._x, self._index, value, "set")

    def add(self, value: Any) -> Tensor:
        """A copy of ``x`` with ``x[index] += value``; repeated positions add up."""
        return update(self._x, self._index, value, "add")

    def mul(self, value: Any) -> Tensor:
        """A copy of ``x`` with ``x[index] *= value``; repeated positions multiply."""
        return update(self._x, self._index, value, "mul")

    def min(self, value: Any) -> Tensor:
        """A copy of ``x`` with ``x[index] = minimum(x[index], value)``; repeated positions take the least."""
        return update(self._x, self._index, value, "min")

    def max(self, value: Any) -> Tensor:
        """A copy of ``x`` with ``x[index] = maximum(x[index], value)``; repeated positions take the greatest."""
        return update(self._x, self._index, value, "max")


class IndexUpdateHelper:
    """``x.at``: index it (``x.at[index]``) to update ``x[index]`` out of place."""

    __slots__ = ("_x",)

    def __init__(self, x: Tensor) -> None:
        self._x = x

    def __getitem__(self, index: Any) -> IndexUpdateRef:
        return IndexUpdateRef(self._x, index)

    def __repr__(self) -> str:
        return f"IndexUpdateHelper(shape={tuple(self._x.shape)})"


def at(x: Tensor) -> IndexUpdateHelper:
    """``x.at[index].set(v)`` and friends: JAX's spelling of PyTorch's ``x[index] = v`` for immutable tensors.

    Example:
        >>> import fgraph as fg
        >>> pe = fg.zeros(2, 4)
        >>> pe = pe.at[:, 0::2].set(fg.ones(2, 2)).at[:, 1::2].set(-1.0)
        >>> pe.tolist()
        [[1.0, -1.0, 1.0, -1.0], [1.0, -1.0, 1.0, -1.0]]
    """
    return IndexUpdateHelper(x)


#: No top-level functions: the family is reached through ``Tensor.at``.
__all__: list = []
TENSOR_METHODS: dict = {}
#: Installed as ``Tensor.<name>`` properties.
TENSOR_PROPERTIES = {"at": at}
