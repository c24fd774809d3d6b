"""``tensor[index]``: ints, slices, ``None``, ``Ellipsis``, integer tensors and boolean masks.

The index is split into a static part (ints, slices, ``None``, ``...``), which is
a hashable op parameter, and index arrays, which are op inputs. The gradient
scatters ``grad`` into zeros at the same index (``index_add_zeros``), whose own
gradient is indexing again, so any order of derivative works.

Example:
    >>> import fgraph as fg
    >>> x = fg.arange(6.0).reshape(2, 3)
    >>> x[1, 1:].tolist(), x[:, None, 0].shape
    ([4.0, 5.0], (2, 1))
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from fgraph.errors import OpError
from fgraph.ops._declare import apply_op, declare
from fgraph.tensor import Tensor

_ARRAY = "array"  # marker for "the next index array input"


def _encode(index: Any, shape: tuple[int, ...]) -> tuple[tuple, tuple]:
    """Split ``index`` into (static hashable spec, index arrays), checking bounds eagerly."""
    items = index if isinstance(index, tuple) else (index,)
    consumed = sum(0 if it is None or it is Ellipsis else _dims_used(it) for it in items)
    if consumed > len(shape):
        raise IndexError(f"index: too many indices for a tensor of shape {shape} ({consumed} indexed dimensions).")
    if sum(it is Ellipsis for it in items) > 1:
        raise IndexError("index: an index can only have a single ellipsis ('...').")
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
                raise IndexError(f"index: index {it} is out of bounds for dimension {dim} with size {size}.")
            spec.append(int(it))
            dim += 1
        else:
            array = _index_array(it, shape, dim)
            if array.dtype == np.bool_:
                dims = array.ndim
                for part in jnp.nonzero(array):
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


def _index_array(it: Any, shape: tuple, dim: int) -> Any:
    data = it.data if isinstance(it, Tensor) else it
    traced = isinstance(data, jax.core.Tracer)
    if not traced:
        data = np.asarray(data)
    if data.dtype == np.bool_:
        if traced:
            raise OpError(
                "index: boolean-mask indexing has a data-dependent shape and cannot be traced "
                "(inside jax.jit/vmap or fg.compile); use fg.where(mask, x, 0) instead."
            )
        mask_shape = tuple(shape[dim : dim + data.ndim])
        if tuple(data.shape) != mask_shape:
            raise IndexError(f"index: boolean mask of shape {data.shape} does not match the indexed shape {mask_shape}.")
        return data
    if not jnp.issubdtype(data.dtype, jnp.integer):
        raise OpError(
            f"index: tensors used as indices must be integer or bool, got dtype {data.dtype}; convert with .long()."
        )
    if not traced and data.size:
        size = shape[dim]
        lo, hi = int(data.min()), int(data.max())
        if lo < -size or hi >= size:
            bad = lo if lo < -size else hi
            raise IndexError(f"index: index {bad} is out of bounds for dimension {dim} with size {size}.")
    return jnp.asarray(data)


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


GETITEM = declare("index", _getitem_forward, _getitem_rule, params=("spec",), save_inputs=True)
INDEX_ADD_ZEROS = declare("index_add_zeros", _index_add_zeros_forward, _index_add_zeros_rule,
                          params=("spec", "shape"), save_inputs=True, node_name="IndexPutBackward0")


def _index_with_spec(x: Tensor, spec: tuple, arrays: tuple) -> Tensor:
    return apply_op(GETITEM, (x,) + tuple(arrays), GETITEM.Params(spec))


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
    return _index_with_spec(input, spec, arrays)


#: Exported as ``fgraph.<name>``.
__all__ = ["getitem"]
#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {}
