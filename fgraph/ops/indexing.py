"""Indexing: ``tensor[index]``, index_select, index_add, index_put, masked_fill, masked_select, take.

``tensor[index]`` takes ints, slices, ``None``, ``Ellipsis``, integer tensors and
boolean masks. The index is split into a static part (ints, slices, ``None``,
``...``), which is a hashable op parameter, and index arrays, which are op
inputs. The gradient scatters ``grad`` into zeros at the same index
(``index_add_zeros``), whose own gradient is indexing again, so any order of
derivative works. The other ops follow the same pattern: each derivative is
another op of this family (index_select <-> index_add, index_put <-> indexing,
take -> index_put), so higher derivatives come free.

Boolean masks (in ``x[mask]``, ``index_put`` and ``masked_select``) make the
output's shape depend on the mask's values: they work eagerly only, and raise a
clear error under tracing. Index bounds are checked eagerly (not under tracing).
See also :mod:`fgraph.ops.gather_scatter`.

Example:
    >>> import fgraph as fg
    >>> x = fg.arange(6.0).reshape(2, 3)
    >>> x[1, 1:].tolist(), x[:, None, 0].shape
    ([4.0, 5.0], (2, 1))
    >>> x.index_select(1, fg.tensor([2, 0])).tolist()
    [[2.0, 0.0], [5.0, 3.0]]
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from fgraph.errors import OpError
from fgraph.ops._declare import OpDef, apply_op, declare
from fgraph.ops._index_checks import (
    bool_mask, check_bounds, check_tensor, hashable_scalar, index_array, is_traced, norm_dim,
)
from fgraph.ops._variants import node_variant
from fgraph.ops.elementwise import where
from fgraph.ops.shape import expand, reshape
from fgraph.tensor import Tensor, _wrap

_ARRAY = "array"  # marker for "the next index array input"


def _encode(index: Any, shape: tuple[int, ...], op: str = "index") -> tuple[tuple, tuple]:
    """Split ``index`` into (static hashable spec, index arrays), checking bounds eagerly."""
    items = index if isinstance(index, tuple) else (index,)
    consumed = sum(0 if it is None or it is Ellipsis else _dims_used(it) for it in items)
    if consumed > len(shape):
        raise IndexError(f"{op}: too many indices for a tensor of shape {shape} ({consumed} indexed dimensions).")
    if sum(it is Ellipsis for it in items) > 1:
        raise IndexError(f"{op}: an index can only have a single ellipsis ('...').")
    spec, arrays, dim = [], [], 0
    for it in items:
        if it is None:
            spec.append(None)
        elif it is Ellipsis:
            spec.append(Ellipsis)
            dim += len(shape) - consumed
        elif isinstance(it, slice):
            spec.append(("slice", _int_or_none(it.start), _int_or_none(it.stop), _int_or_none(it.step)))
            dim += 1
        elif isinstance(it, (int, np.integer)) and not isinstance(it, bool):
            size = shape[dim]
            if not -size <= it < size:
                raise IndexError(f"{op}: index {it} is out of bounds for dimension {dim} with size {size}.")
            spec.append(int(it))
            dim += 1
        else:
            array = _index_array(it, shape, dim, op)
            if array.dtype == np.bool_:
                dims = array.ndim
                for part in np.nonzero(np.asarray(array)):  # eager only: masks are concrete here
                    spec.append(_ARRAY)
                    arrays.append(part)
                dim += dims
            else:
                spec.append(_ARRAY)
                arrays.append(array)
                dim += 1
    return tuple(spec), tuple(arrays)


def _dims_used(it: Any) -> int:
    if isinstance(it, (Tensor, np.ndarray, jax.Array)) and np.dtype(it.dtype) == np.bool_:
        return it.ndim
    if isinstance(it, list) and it and isinstance(np.asarray(it).flat[0], np.bool_):
        return np.asarray(it).ndim
    return 1


def _int_or_none(v: Any) -> Any:
    return None if v is None else int(v)


def _index_array(it: Any, shape: tuple, dim: int, op: str = "index") -> Any:
    device = it._array if isinstance(it, Tensor) else it
    traced = isinstance(device, jax.core.Tracer)
    data = device if traced else np.asarray(device)  # host copy: bounds and masks are checked eagerly
    if not isinstance(device, jax.Array):
        device = None
    if data.dtype == np.bool_:
        if traced:
            raise OpError(
                f"{op}: boolean-mask indexing has a data-dependent shape and cannot be traced "
                "(inside jax.jit/vmap or fg.compile); use fg.where(mask, x, 0) instead."
            )
        mask_shape = tuple(shape[dim : dim + data.ndim])
        if tuple(data.shape) != mask_shape:
            raise IndexError(f"{op}: boolean mask of shape {data.shape} does not match the indexed shape {mask_shape}.")
        return data
    if not jnp.issubdtype(data.dtype, jnp.integer):
        raise OpError(
            f"{op}: tensors used as indices must be integer or bool, got an index of shape {tuple(data.shape)} "
            f"and dtype {data.dtype}; convert it with .long()."
        )
    if not traced and data.size:
        size = shape[dim]
        lo, hi = int(data.min()), int(data.max())
        if lo < -size or hi >= size:
            bad = lo if lo < -size else hi
            raise IndexError(f"{op}: index {bad} is out of bounds for dimension {dim} with size {size}.")
    return jnp.asarray(data) if device is None else device  # reuse the device array: no upload


def _decode(spec: tuple, arrays: tuple) -> tuple:
    out, k = [], 0
    for s in spec:
        if isinstance(s, tuple):
            out.append(slice(s[1], s[2], s[3]))
        elif s == _ARRAY:
            out.append(arrays[k])
            k += 1
        else:
            out.append(s)
    return tuple(out)


def _getitem_forward(x, *arrays, spec):
    return x[_decode(spec, arrays)]


def _index_add_zeros_forward(g, *arrays, spec, shape):
    return jnp.zeros(shape, g.dtype).at[_decode(spec, arrays)].add(g)


def _getitem_rule(ctx, g):
    arrays = ctx.inputs[1:]
    return (index_add_zeros(g, arrays, ctx.params.spec, ctx.shapes[0]),) + (None,) * len(arrays)


def _index_add_zeros_rule(ctx, g):
    arrays = ctx.inputs[1:]
    return (_index_with_spec(g, ctx.params.spec, arrays),) + (None,) * len(arrays)


GETITEM = declare("index", _getitem_forward, _getitem_rule, params=("spec",), save_inputs=slice(1, None))
# ``x[index]`` records PyTorch's name for the last step it takes (see _basic_index_op); same kernels.
SELECT = node_variant(GETITEM, "SelectBackward0")
SLICE = node_variant(GETITEM, "SliceBackward0")
UNSQUEEZE = node_variant(GETITEM, "UnsqueezeBackward0")
ALIAS = node_variant(GETITEM, "AliasBackward0")
INDEX_ADD_ZEROS = declare("index_add_zeros", _index_add_zeros_forward, _index_add_zeros_rule,
                          params=("spec", "shape"), save_inputs=slice(1, None), node_name="IndexPutBackward0")


def _index_with_spec(x: Tensor, spec: tuple, arrays: tuple, op: OpDef = GETITEM) -> Tensor:
    return apply_op(op, (x,) + tuple(arrays), GETITEM.Params(spec))


def _basic_index_op(index: Any, spec: tuple, shape: tuple) -> OpDef:
    """The variant named like the outermost node PyTorch records for ``x[index]``.

    PyTorch takes one step per index item, left to right (``select`` for an int, ``slice``,
    ``unsqueeze`` for ``None``), then one ``index`` for all tensor indices; in a tuple it skips
    slices that cover their whole dimension, and records ``alias`` when no step is left.
    fgraph records one node for the whole index, named after PyTorch's last step.
    """
    if not isinstance(index, tuple):
        index = (index,)
        whole = None  # a lone slice is always a SliceBackward0
    else:
        whole = shape
    op, dim = ALIAS, 0
    for s in spec:
        if s == _ARRAY:
            return GETITEM
        if s is None:
            op = UNSQUEEZE
        elif s is Ellipsis:
            dim += len(shape) - sum(1 for t in spec if t is not None and t is not Ellipsis)
        elif isinstance(s, tuple):
            if whole is None or slice(s[1], s[2], s[3]).indices(shape[dim]) != (0, shape[dim], 1):
                op = SLICE
            dim += 1
        else:
            op = SELECT
            dim += 1
    return op


def index_add_zeros(g: Tensor, arrays: tuple, spec: tuple, shape: tuple) -> Tensor:
    """Zeros of ``shape`` with ``g`` added at the index ``spec`` (the gradient of indexing)."""
    return apply_op(INDEX_ADD_ZEROS, (g,) + tuple(arrays), INDEX_ADD_ZEROS.Params(spec, tuple(shape)))


def getitem(input: Tensor, index: Any) -> Tensor:
    """``input[index]`` with NumPy/PyTorch semantics (advanced indices included).

    Example:
        >>> import fgraph as fg
        >>> x = fg.arange(5.0)
        >>> x[fg.tensor([0, 4])].tolist(), x[x > 2].tolist()
        ([0.0, 4.0], [3.0, 4.0])
    """
    spec, arrays = _encode(index, input.shape)
    if arrays:
        from fgraph.ops._index_update_plan import split_ints  # (imports this module)

        ints, rest = split_ints(spec)
        if ints is not None:  # PyTorch applies the ints first: x[1, :, idx] is x[1][:, idx], not NumPy's placement
            input, spec = _index_with_spec(input, ints, ()), rest
        return _index_with_spec(input, spec, arrays)
    if input._edge is None:
        return _index_with_spec(input, spec, arrays)
    return _index_with_spec(input, spec, arrays, _basic_index_op(index, spec, input.shape))


# -- index_select / index_add ------------------------------------------------------------------------
def _dim_index(index, dim):
    return (slice(None),) * dim + (index,)


def _index_select_forward(x, index, *, dim):
    return jnp.take(x, index, axis=dim)


def _index_add_forward(x, index, src, *, dim, alpha):
    return x.at[_dim_index(index, dim)].add(src if alpha == 1 else alpha * src)


def _index_select_rule(ctx, g):
    index = ctx.inputs[1]
    return _index_add(_wrap(jnp.zeros(ctx.shapes[0], g.dtype)), ctx.params.dim, index, g, 1), None


def _index_add_rule(ctx, g):
    index = ctx.inputs[1]
    gsrc = None
    if ctx.needs[2]:
        gsrc = _index_select(g, ctx.params.dim, index)
        if ctx.params.alpha != 1:
            gsrc = gsrc * ctx.params.alpha
    return g, None, gsrc


INDEX_SELECT = declare("index_select", _index_select_forward, _index_select_rule, params=("dim",), save_inputs=(1,))
INDEX_ADD = declare("index_add", _index_add_forward, _index_add_rule, params=("dim", "alpha"), save_inputs=(1,))


def _index_select(x: Tensor, dim: int, index: Any) -> Tensor:
    return apply_op(INDEX_SELECT, (x, index), INDEX_SELECT.Params(dim))


def _index_add(x: Tensor, dim: int, index: Any, src: Tensor, alpha: Any) -> Tensor:
    return apply_op(INDEX_ADD, (x, index, src), INDEX_ADD.Params(dim, alpha))


def _vector_index(op: str, input: Tensor, dim: Any, index: Any) -> tuple:
    """Validate a 0-d/1-d index along ``dim``; return ``(input lifted to >= 1-d, dim, 1-d index)``."""
    check_tensor(input, op)
    idx = index_array(index, op)
    d = norm_dim(dim, input.ndim, op)
    if idx.ndim > 1:
        raise IndexError(
            f"{op}: index is supposed to be a vector (0-d or 1-d), got index of shape {tuple(idx.shape)}; "
            "flatten it with .reshape(-1)."
        )
    x = reshape(input, (1,)) if input.ndim == 0 else input
    check_bounds(op, idx, x.shape[d], d, negative=False)
    return x, d, (idx if idx.ndim == 1 else idx.reshape(-1))


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The slices of ``input`` along ``dim`` at the positions in the 1-d ``index`` (repeats allowed).

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        >>> fg.index_select(x, 1, fg.tensor([2, 0, 2])).tolist()
        [[3.0, 1.0, 3.0], [6.0, 4.0, 6.0]]
    """
    x, d, idx = _vector_index("index_select", input, dim, index)
    if input.ndim == 0 and idx.shape[0] != 1:
        raise IndexError(f"index_select: indexing a 0-d tensor takes exactly one index, got {idx.shape[0]}.")
    out = _index_select(x, d, idx)
    return reshape(out, ()) if input.ndim == 0 else out


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
    """A copy of ``input`` with ``alpha * source[..., i, ...]`` added at slice ``index[i]`` along ``dim``
    (repeated indices add up).

    Example:
        >>> import fgraph as fg
        >>> fg.index_add(fg.zeros(3, 2), 0, fg.tensor([0, 2, 0]), fg.ones(3, 2), alpha=2).tolist()
        [[4.0, 4.0], [0.0, 0.0], [2.0, 2.0]]
    """
    op = "index_add"
    x, d, idx = _vector_index(op, input, dim, index)
    check_tensor(source, op, "source")
    src = reshape(source, (1,)) if source.ndim == 0 else source
    expected = x.shape[:d] + (idx.shape[0],) + x.shape[d + 1:]
    if src.shape != expected:
        raise OpError(
            f"{op}: source of shape {source.shape} does not fit input of shape {input.shape} with "
            f"{idx.shape[0]} indices along dim {d}; expected source of shape {expected}."
        )
    if source.dtype != input.dtype:
        raise OpError(f"{op}: source dtype {source.dtype} does not match input dtype {input.dtype}; "
                      f"cast it with .to({input.dtype}).")
    out = _index_add(x, d, idx, src, hashable_scalar(alpha, op))
    return reshape(out, ()) if input.ndim == 0 else out


# -- index_put ----------------------------------------------------------------------------------------------
def _index_put_forward(x, values, *arrays, spec, accumulate):
    at = x.at[_decode(spec, arrays)]
    values = jnp.asarray(values).astype(x.dtype)
    return at.add(values) if accumulate else at.set(values)


def _index_put_rule(ctx, g):
    arrays = ctx.inputs[2:]
    spec, accumulate = ctx.params.spec, ctx.params.accumulate
    gx = None
    if ctx.needs[0]:
        gx = g if accumulate else _index_put(g, 0, spec, arrays, False)
    gvalues = _index_with_spec(g, spec, arrays) if ctx.needs[1] else None
    return (gx, gvalues) + (None,) * len(arrays)


def _index_put_hint(args: tuple, params: Any) -> str:
    return ("values must broadcast to the shape of input[indices] (align the shapes from the right; "
            "each pair of sizes equal or one of them 1).")


INDEX_PUT = declare("index_put", _index_put_forward, _index_put_rule, params=("spec", "accumulate"),
                    save_inputs=slice(2, None), hint=_index_put_hint)


def _index_put(x: Tensor, values: Any, spec: tuple, arrays: tuple, accumulate: bool) -> Tensor:
    return apply_op(INDEX_PUT, (x, values) + tuple(arrays), INDEX_PUT.Params(spec, accumulate))


def index_put(input: Tensor, indices: Sequence[Tensor], values: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with ``values`` written (or, with ``accumulate``, added) at ``input[indices]``.

    ``indices`` is a tuple of integer or bool tensors, one per leading dimension,
    as in ``input[indices] = values``; ``values`` broadcasts to ``input[indices]``'s
    shape. Repeated indices without ``accumulate`` leave the written value undefined,
    as in PyTorch. Bool masks are eager only.

    Example:
        >>> import fgraph as fg
        >>> x = fg.zeros(2, 3)
        >>> fg.index_put(x, (fg.tensor([1]), fg.tensor([2])), fg.tensor(5.0)).tolist()
        [[0.0, 0.0, 0.0], [0.0, 0.0, 5.0]]
        >>> x.index_put((fg.tensor([0, 0]),), fg.ones(3), accumulate=True).tolist()
        [[2.0, 2.0, 2.0], [0.0, 0.0, 0.0]]
    """
    op = "index_put"
    check_tensor(input, op)
    check_tensor(values, op, "values")
    if isinstance(indices, Tensor) or not isinstance(indices, (tuple, list)):
        raise TypeError(f"{op}: indices must be a tuple of Tensors, got {type(indices).__name__}; "
                        "write (index,) for a single index.")
    for i, it in enumerate(indices):
        if not isinstance(it, Tensor):
            raise TypeError(f"{op}: indices[{i}] must be an integer or bool Tensor, got {type(it).__name__}.")
    if values.dtype != input.dtype:
        raise OpError(f"{op}: values dtype {values.dtype} does not match input dtype {input.dtype}; "
                      f"cast them with .to({input.dtype}).")
    spec, arrays = _encode(tuple(indices), input.shape, op)
    return _index_put(input, values, spec, arrays, bool(accumulate))


# -- masked_fill / masked_select -----------------------------------------------------------------------
def _masked_fill_forward(x, mask, value):
    return jnp.where(mask, jnp.asarray(value).astype(x.dtype), x)


def _masked_fill_rule(ctx, g):
    mask = ctx.inputs[1]
    gx = where(mask, 0.0, g) if ctx.needs[0] else None
    gvalue = where(mask, g, 0.0) if ctx.needs[2] else None  # summed to the 0-d value by reduce_grad
    return gx, None, gvalue


MASKED_FILL = declare("masked_fill", _masked_fill_forward, _masked_fill_rule, save_inputs=(1,))
MASKED_SELECT = declare("masked_select", _getitem_forward, _getitem_rule, params=("spec",), save_inputs=slice(1, None))


def _broadcast(op: str, input: Tensor, mask: Tensor) -> tuple:
    try:
        return tuple(np.broadcast_shapes(input.shape, mask.shape))
    except ValueError:
        raise OpError(
            f"{op}: mask of shape {mask.shape} does not broadcast with input of shape {input.shape}; "
            "align the shapes from the right (each pair of sizes equal or one of them 1)."
        ) from None


def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    """``value`` where the bool ``mask`` is true, else ``input`` (``input`` and ``mask`` broadcast).

    ``value`` is a number or a 0-d tensor, cast to ``input``'s dtype; a 0-d tensor
    that requires grad gets the sum of the gradient over the filled positions.

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([1.0, -2.0, 3.0])
        >>> fg.masked_fill(x, x < 0, 0.0).tolist()
        [1.0, 0.0, 3.0]
    """
    op = "masked_fill"
    check_tensor(input, op)
    bool_mask(mask, op)
    _broadcast(op, input, mask)
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise OpError(f"{op}: value must be a number or a 0-dimensional tensor, got a tensor of shape "
                          f"{value.shape}; use fg.where(mask, value, input) to fill from a tensor.")
    elif isinstance(value, (bool, int, float, np.generic, np.ndarray, jax.Array)) and np.ndim(value) == 0:
        value = value if isinstance(value, (bool, int, float)) else jnp.asarray(value)
    else:
        raise TypeError(f"{op}: value must be a number or a 0-dimensional tensor, got {type(value).__name__}.")
    return apply_op(MASKED_FILL, (input, mask, value))


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements of ``input`` where the bool ``mask`` is true, as a 1-d tensor (both broadcast).

    The output's length depends on the mask's values, so this works eagerly only;
    under tracing (``jax.jit``, ``vmap``, ``fg.compile``) use ``fg.where`` or
    ``masked_fill`` instead.

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([[1.0, -2.0], [-3.0, 4.0]])
        >>> fg.masked_select(x, x > 0).tolist()
        [1.0, 4.0]
    """
    op = "masked_select"
    check_tensor(input, op)
    bool_mask(mask, op)
    if is_traced(mask):
        raise OpError(
            f"{op}: the output's size depends on the values of the mask (shape {mask.shape}), so it cannot "
            "be traced (inside jax.jit/vmap or fg.compile); use fg.where(mask, input, 0) or masked_fill."
        )
    shape = _broadcast(op, input, mask) or (1,)
    x = expand(reshape(input, (1,)) if input.ndim == 0 else input, shape)
    arrays = tuple(jnp.asarray(a) for a in np.nonzero(np.broadcast_to(np.asarray(mask._array), shape)))
    return apply_op(MASKED_SELECT, (x,) + arrays, MASKED_SELECT.Params((_ARRAY,) * len(shape)))


# -- take --------------------------------------------------------------------------------------------------------
def _take_forward(x, index):
    return jnp.reshape(x, (-1,))[index]


def _take_rule(ctx, g):
    shape = ctx.shapes[0]
    flat = _index_put(_wrap(jnp.zeros((math.prod(shape),), g.dtype)), g, (_ARRAY,), (ctx.inputs[1],), True)
    return reshape(flat, shape), None


TAKE = declare("take", _take_forward, _take_rule, save_inputs=(1,))


def take(input: Tensor, index: Tensor) -> Tensor:
    """Elements of ``input`` read as a flat 1-d tensor, at ``index`` (any shape; negative counts from the end).

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> fg.take(x, fg.tensor([[0, -1], [2, 2]])).tolist()
        [[1.0, 4.0], [3.0, 3.0]]
    """
    op = "take"
    check_tensor(input, op)
    idx = index_array(index, op)
    numel = math.prod(input.shape)
    check_bounds(op, idx, numel, 0, negative=True)
    return apply_op(TAKE, (input, idx))


#: Exported as ``fgraph.<name>``.
__all__ = ["getitem", "index_select", "index_add", "index_put", "masked_fill", "masked_select", "take"]
#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {
    "index_select": index_select, "index_add": index_add, "index_put": index_put, "masked_fill": masked_fill,
    "masked_select": masked_select, "take": take,
}
