"""How ``x.at[index]`` reads its index: PyTorch's ``x[index] = v`` semantics, on the indexing family's encoding.

The index is encoded by :func:`fgraph.ops.indexing._encode` (the same normalisation as
``x[index]``: a hashable spec of ints, slices, ``None`` and ``...``, plus the index arrays).
On top of it this module settles what ``x[index] = v`` means in PyTorch:

* **Where advanced dimensions go.** PyTorch applies the ints of an index first (``select``),
  then the rest, so ``x[1, :, t]`` with ``x`` of shape ``(3, 4, 5)`` reads shape ``(4, 2)``
  (NumPy and JAX, which treat ``1`` as an index array, read ``(2, 4)``). :func:`split_ints`
  splits such a spec into an int-only ``outer`` step and an int-free ``inner`` step; for an
  int-free index both rules agree.
* **Boolean masks under tracing.** A single mask whose value broadcasts over the selected
  elements (``logits.at[logits < v].set(-inf)``) is an elementwise ``where``: it works under
  ``jax.jit``, ``vmap`` and ``fg.compile``. :func:`plan_mask` recognises it.
* **The node PyTorch records** (:func:`torch_node_name`): ``CopySlices`` when the write lands
  on a view (an int, ``None`` or a partial slice), ``IndexPutBackward0`` for index arrays on
  the whole tensor, ``FillBackward3`` / ``CopyBackwards`` when the index selects everything.

Example:
    >>> from fgraph.ops._index_update_plan import split_ints
    >>> split_ints((1, ("slice", None, None, None), "array"))
    ((1, ('slice', None, None, None), ('slice', None, None, None)), (('slice', None, None, None), 'array'))
"""
from __future__ import annotations

import functools
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from fgraph.errors import OpError
from fgraph.ops._index_checks import is_traced
from fgraph.ops.indexing import _ARRAY, _decode, _encode
from fgraph.ops.shape import reshape
from fgraph.tensor import Tensor, _wrap

__all__ = ["Where", "check_items", "is_array_item", "is_mask", "split_ints", "get_region", "region_shape",
           "check_arrays_broadcast", "torch_node_name", "plan_mask", "refuse_traced_mask", "has_repeats"]

_FULL = ("slice", None, None, None)
_ARRAY_TYPES = (Tensor, np.ndarray, jax.Array, list)


def check_items(index: Any, name: str) -> tuple:
    """``index`` as a tuple of items, each a kind ``x[index] = v`` takes; else PyTorch's ``IndexError``."""
    items = index if isinstance(index, tuple) else (index,)
    for it in items:
        ok = it is None or it is Ellipsis or isinstance(it, (slice,) + _ARRAY_TYPES) or (
            isinstance(it, (int, np.integer)) and not isinstance(it, (bool, np.bool_)))
        if not ok:
            raise IndexError(
                f"{name}: only integers, slices (`:`), ellipsis (`...`), None, integer or bool tensors and lists "
                f"are valid indices (got {type(it).__name__})."
            )
    return items


def is_array_item(it: Any) -> bool:
    """Whether an index item is an index array (integer or bool: a Tensor, NumPy/JAX array or list)."""
    return isinstance(it, _ARRAY_TYPES)


def is_mask(it: Any) -> bool:
    """Whether an index item is a boolean mask (a bool Tensor, array or nested list)."""
    if isinstance(it, (Tensor, np.ndarray, jax.Array)):
        return np.dtype(it.dtype) == np.bool_
    return isinstance(it, list) and np.asarray(it).dtype == np.bool_


def split_ints(spec: tuple) -> tuple[Optional[tuple], tuple]:
    """``(outer, inner)``: PyTorch's order for an index mixing ints and index arrays.

    ``outer`` keeps only the ints (every other dimension ``:``); ``inner`` is the rest, applied
    to ``x[outer]``. ``outer`` is ``None`` when the spec has no ints or no arrays.
    """
    if _ARRAY not in spec or not any(type(s) is int for s in spec):
        return None, spec
    outer = tuple(s if type(s) is int or s is Ellipsis else _FULL for s in spec if s is not None)
    inner = tuple(s for s in spec if type(s) is not int)
    return outer, inner


def get_region(x: Any, arrays: tuple, outer: Optional[tuple], spec: tuple) -> Any:
    """``x[index]`` in PyTorch's order, on raw arrays: the region an update writes."""
    sub = x if outer is None else x[_decode(outer, ())]
    return sub[_decode(spec, arrays)]


@functools.lru_cache(maxsize=1024)
def region_shape(outer: Optional[tuple], spec: tuple, shape: tuple, array_shapes: tuple) -> tuple:
    """The shape of ``x[index]`` (PyTorch's placement of the index arrays' broadcast dimensions)."""
    structs = [jax.ShapeDtypeStruct(s, np.int32) for s in array_shapes]
    out = jax.eval_shape(functools.partial(get_region, outer=outer, spec=spec),
                         jax.ShapeDtypeStruct(shape, np.float32), tuple(structs))
    return tuple(out.shape)


def check_arrays_broadcast(arrays: tuple, name: str) -> None:
    """PyTorch's ``IndexError`` when the index arrays do not broadcast together."""
    shapes = [tuple(a.shape) for a in arrays]
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError(
            f"{name}: shape mismatch: indexing tensors could not be broadcast together with shapes "
            f"{', '.join(str(list(s)) for s in shapes)}; give them equal shapes, or sizes of 1 where they differ."
        ) from None


def _is_full(s: Any, size: int) -> bool:
    return s == _FULL or (isinstance(s, tuple) and slice(s[1], s[2], s[3]).indices(size) == (0, size, 1))


def _is_view(spec: tuple, shape: tuple) -> bool:
    """Whether PyTorch's basic indexing steps (int, ``None``, partial slice) make a view of part of x."""
    dim = 0
    consumed = sum(1 for s in spec if s is not None and s is not Ellipsis)
    for s in spec:
        if s is Ellipsis:
            dim += len(shape) - consumed
        elif s is None or type(s) is int:
            return True
        elif s != _ARRAY and not _is_full(s, shape[dim]):
            return True
        else:
            dim += 1
    return False


def torch_node_name(spec: tuple, shape: tuple, value_ndim: int, mode: str) -> str:
    """The name PyTorch gives the node of ``y[index] = v`` (``mode`` ``'set'``) or ``y[index] op= v``."""
    if _is_view(spec, shape):
        return "CopySlices"
    if _ARRAY in spec:
        return "IndexPutBackward0"
    return "FillBackward3" if mode == "set" and value_ndim == 0 else "CopyBackwards"


class Where(NamedTuple):
    """A single-mask update written as ``where(mask, new, x[basic])``, written back at ``basic`` unless ``whole``."""

    basic: tuple  # the index with the mask replaced by full slices (no arrays)
    basic_spec: tuple
    mask: Tensor  # bool, shaped to broadcast against x[basic]
    value_shape: tuple  # the value's shape with the selected-elements dimension widened to the mask's
    region: tuple  # the shape of x[basic]
    start: int  # the first of the mask's dimensions in x[basic]
    k: int  # how many dimensions the mask covers
    whole: bool  # x[basic] is x itself


def plan_mask(items: tuple, shape: tuple, value_shape: tuple, name: str) -> Optional[Where]:
    """The :class:`Where` form of ``x.at[items]`` when it is one boolean mask whose value does not vary
    over the selected elements; ``None`` otherwise (the index-array path, eager only for masks)."""
    positions = [i for i, it in enumerate(items) if is_array_item(it)]
    if len(positions) != 1 or not is_mask(items[positions[0]]):
        return None
    i = positions[0]
    mask = items[i]
    if not isinstance(mask, Tensor):
        mask = _wrap(mask if isinstance(mask, jax.Array) else jnp.asarray(np.asarray(mask)))
    k = mask.ndim
    if k == 0:
        return None
    basic = items[:i] + (slice(None),) * k + items[i + 1:]
    spec, _ = _encode(basic, shape, name)
    consumed = sum(1 for s in spec if s is not None and s is not Ellipsis)
    ell = len(shape) - consumed
    x_dim = out_dim = 0
    for s in items[:i]:
        if s is Ellipsis:
            x_dim, out_dim = x_dim + ell, out_dim + ell
        elif s is None:
            out_dim += 1
        elif isinstance(s, slice):
            x_dim, out_dim = x_dim + 1, out_dim + 1
        else:
            x_dim += 1
    if tuple(mask.shape) != tuple(shape[x_dim:x_dim + k]):
        raise IndexError(f"{name}: the shape of the mask {list(mask.shape)} at index {x_dim} does not match the "
                         f"shape of the indexed tensor {list(shape[x_dim:x_dim + k])} (x has shape {shape}); "
                         "a mask covers the dimensions it stands for exactly.")
    region = region_shape(None, spec, shape, ())
    post = len(region) - out_dim - k
    while len(value_shape) > len(region) - k + 1 and value_shape[0] == 1:  # PyTorch drops leading 1s
        value_shape = value_shape[1:]
    selected_dim = len(value_shape) - post - 1  # the value's dimension along the selected elements
    if selected_dim >= 0 and value_shape[selected_dim] != 1:
        return None
    if selected_dim >= 0:
        value_shape = value_shape[:selected_dim] + (1,) * k + value_shape[selected_dim + 1:]
    if post:
        mask = reshape(mask, tuple(mask.shape) + (1,) * post)
    return Where(basic, spec, mask, value_shape, region, out_dim, k, not _is_view(spec, shape))


def refuse_traced_mask(items: tuple, value_shape: tuple, name: str) -> None:
    """A clear error for a traced mask the ``where`` form cannot take: the update's shape depends on its values."""
    masks = [it for it in items if is_mask(it)]
    if not any(is_traced(m) for m in masks):
        return
    if len(masks) == 1 and sum(map(is_array_item, items)) == 1:
        why = (f"a value of shape {value_shape} has one entry per element the mask (shape {tuple(masks[0].shape)}) "
               "selects")
    else:
        why = "an index with several masks, or a mask and index tensors, depends on how many elements a mask selects"
    raise OpError(
        f"{name}: {why}, so it cannot be traced (inside jax.jit/vmap or fg.compile). Use one mask with a value "
        "that broadcasts over the selected elements (a scalar, or size 1 along that dimension), or "
        "fg.where(mask, new_values, x) with new_values shaped like x."
    )


def has_repeats(inner: tuple, arrays: tuple, sub_shape: tuple) -> bool:
    """Whether the index arrays of ``inner`` (eager, concrete) name any position twice."""
    if not arrays or any(isinstance(a, jax.core.Tracer) for a in arrays):
        return False
    consumed = sum(1 for s in inner if s is not None and s is not Ellipsis)
    dim, sizes = 0, []
    for s in inner:
        if s is Ellipsis:
            dim += len(sub_shape) - consumed
        elif s == _ARRAY:
            sizes.append(sub_shape[dim])
            dim += 1
        elif s is not None:
            dim += 1
    host = np.broadcast_arrays(*(np.asarray(a) for a in arrays))
    rows = np.stack([np.mod(h, max(n, 1)).reshape(-1) for h, n in zip(host, sizes)], axis=1)
    return len(np.unique(rows, axis=0)) < len(rows)
