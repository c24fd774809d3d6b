"""Structure ops and Tensor attributes a ported PyTorch script reaches for.

Functions: ``clone`` (a primitive: ``CloneBackward0``), ``select``, ``index_fill``,
``index_copy``, ``masked_scatter``, ``split_with_sizes``, ``hsplit``/``vsplit``/``dsplit``,
``from_numpy`` and ``scalar_tensor``. The others are composites of fgraph's primitives,
recorded under PyTorch's node names through node variants (:mod:`fgraph.ops._variants`):
``select`` is indexing (``SelectBackward0``), ``index_fill`` a ``masked_fill`` with a mask
built from the index (``IndexFillBackward0``; ``IndexFillBackward1`` for a tensor value),
``index_copy`` an ``index_put`` (``IndexCopyBackward0``) and ``masked_scatter`` a ``where``
over ``source`` gathered at the running count of the mask (``MaskedScatterBackward0``), so
every derivative is another fgraph op and differentiates again.

Tensor attributes (``TENSOR_PROPERTIES``): ``T`` (reverses every dimension; warns, as
PyTorch does, for tensors that are not 2-D), ``H`` (2-D only) and ``mH`` (conjugate
transposes: the transpose for the real tensors fgraph differentiates). Methods:
``clone``, ``contiguous`` (the tensor itself: fgraph has no strides), ``cpu``, ``view_as``, ``reshape_as``,
``type_as``, ``is_floating_point``, ``is_complex``, ``element_size``, ``nelement``.

Example:
    >>> import fgraph as fg
    >>> x = fg.arange(6.0).reshape(2, 3)
    >>> x.select(1, 2).tolist(), x.T.shape
    ([2.0, 5.0], (3, 2))
    >>> x.index_fill(1, fg.tensor([0, 2]), -1.0).tolist()
    [[-1.0, 1.0, -1.0], [-1.0, 4.0, -1.0]]
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Sequence, Union

import jax
import jax.numpy as jnp
import numpy as np

from fgraph._dtypes import canonical_dtype, default_float_dtype
from fgraph.errors import OpError
from fgraph.lazy._array import concrete
from fgraph.ops._declare import apply_op, apply_unary, declare
from fgraph.ops._index_checks import bool_mask, check_tensor, is_traced
from fgraph.ops._variants import node_variant
from fgraph.ops.elementwise import WHERE
from fgraph.ops.indexing import (
    _ARRAY, INDEX_PUT, MASKED_FILL, SELECT, TAKE, _broadcast, _encode, _index_with_spec, _vector_index,
)
from fgraph.ops.shape import _dim, matrix_transpose, permute, reshape, transpose
from fgraph.ops.splitting import split, tensor_split
from fgraph.tensor import Tensor, tensor, type_name

Sections = Union[int, Sequence[int]]


# -- clone: the one new primitive ---------------------------------------------------------------
def _clone_forward(x):
    return jnp.copy(x)


def _clone_rule(ctx, g):
    return (g,)


CLONE = declare("clone", _clone_forward, _clone_rule)
_INDEX_FILL = node_variant(MASKED_FILL, "IndexFillBackward0")
_INDEX_FILL_TENSOR = node_variant(MASKED_FILL, "IndexFillBackward1")
_INDEX_COPY = node_variant(INDEX_PUT, "IndexCopyBackward0")
_MASKED_SCATTER = node_variant(WHERE, "MaskedScatterBackward0")


def clone(input: Tensor, *, memory_format: Any = None) -> Tensor:
    """A copy of ``input`` on the graph (node ``CloneBackward0``; the gradient passes through).

    fgraph tensors are immutable, so a copy is never needed for safety; ``clone`` exists so
    PyTorch code runs unchanged. ``memory_format`` is accepted and ignored (no strides).

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([1.0, 2.0], requires_grad=True)
        >>> y = x.clone()
        >>> y.tolist(), y.grad_fn.name()
        ([1.0, 2.0], 'CloneBackward0')
    """
    check_tensor(input, "clone")
    return apply_unary(CLONE, input)


# -- select / index_fill / index_copy --------------------------------------------------------------
def select(input: Tensor, dim: int, index: int) -> Tensor:
    """The slice of ``input`` at position ``index`` along ``dim``, without that dimension (``x[:, index]``).

    Example:
        >>> import fgraph as fg
        >>> x = fg.arange(6.0, requires_grad=True).reshape(2, 3)
        >>> y = fg.select(x, 1, -1)
        >>> y.tolist(), y.grad_fn.name()
        ([2.0, 5.0], 'SelectBackward0')
    """
    check_tensor(input, "select")
    if input.ndim == 0:
        raise IndexError("select: cannot select on a 0-d tensor; it has no dimension to index.")
    d = _dim(dim, input.ndim, "select")
    if isinstance(index, Tensor) and index.ndim == 0 and not is_traced(index):
        index = int(index.item())
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
        raise TypeError(f"select: index must be an int, got {type_name(index)}; for several positions use "
                        "index_select(input, dim, index_tensor).")
    spec, arrays = _encode((slice(None),) * d + (int(index),), input.shape, "select")
    return _index_with_spec(input, spec, arrays, SELECT)


def _fill_value(value: Any, op: str) -> Any:
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise OpError(f"{op}: value must be a number or a 0-dimensional tensor, got a tensor of shape "
                          f"{value.shape}.")
        return value
    if isinstance(value, (bool, int, float)) or (isinstance(value, (np.generic, np.ndarray, jax.Array))
                                                 and np.ndim(value) == 0):
        return value if isinstance(value, (bool, int, float)) else jnp.asarray(value)
    raise TypeError(f"{op}: value must be a number or a 0-dimensional tensor, got {type_name(value)}.")


def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """A copy of ``input`` with ``value`` written at every position ``index`` along ``dim``.

    ``value`` is a number or a 0-d tensor; a 0-d tensor that requires grad gets the sum of
    the gradient over the filled positions (each counted once, as in PyTorch).

    Example:
        >>> import fgraph as fg
        >>> fg.index_fill(fg.zeros(2, 3), 0, fg.tensor([1]), 5.0).tolist()
        [[0.0, 0.0, 0.0], [5.0, 5.0, 5.0]]
    """
    op = "index_fill"
    x, d, idx = _vector_index(op, input, dim, index)
    value = _fill_value(value, op)
    n = x.shape[d]
    mask = jnp.zeros((n,), bool).at[idx].set(True).reshape((n,) + (1,) * (x.ndim - d - 1))
    variant = _INDEX_FILL_TENSOR if isinstance(value, Tensor) else _INDEX_FILL
    out = apply_op(variant, (x, mask, value))
    return reshape(out, ()) if input.ndim == 0 else out


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` with the slice ``source[..., i, ...]`` written at position ``index[i]`` along ``dim``.

    Repeated indices leave the written value undefined, as in PyTorch. The gradient of
    ``input`` is zero at the overwritten slices; ``source`` gets the gradient there.

    Example:
        >>> import fgraph as fg
        >>> fg.index_copy(fg.zeros(2, 3), 1, fg.tensor([2, 0]), fg.tensor([[1.0, 2.0], [3.0, 4.0]])).tolist()
        [[2.0, 0.0, 1.0], [4.0, 0.0, 3.0]]
    """
    op = "index_copy"
    x, d, idx = _vector_index(op, input, dim, index)
    check_tensor(source, op, "source")
    src = reshape(source, (1,)) if source.ndim == 0 else source
    expected = x.shape[:d] + (idx.shape[0],) + x.shape[d + 1:]
    if src.shape != expected:
        raise OpError(f"{op}: source of shape {source.shape} does not fit input of shape {input.shape} with "
                      f"{idx.shape[0]} indices along dim {d}; expected source of shape {expected}.")
    if source.dtype != input.dtype:
        raise OpError(f"{op}: source dtype {source.dtype} does not match input dtype {input.dtype}; "
                      f"cast it with .to({input.dtype}).")
    spec = (("slice", None, None, None),) * d + (_ARRAY,)
    out = apply_op(_INDEX_COPY, (x, src, idx), INDEX_PUT.Params(spec, False))
    return reshape(out, ()) if input.ndim == 0 else out


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """``input`` with the positions where ``mask`` is true filled, in row-major order, by ``source``'s elements.

    ``input`` and ``mask`` broadcast; ``source`` needs at least as many elements as the
    mask has true entries (checked eagerly) and is read flat. Traceable: the positions
    come from a running count of the mask, not from its host values.

    Example:
        >>> import fgraph as fg
        >>> x = fg.zeros(2, 3)
        >>> mask = fg.tensor([[True, False, True], [False, True, False]])
        >>> fg.masked_scatter(x, mask, fg.tensor([1.0, 2.0, 3.0, 4.0])).tolist()
        [[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]
    """
    op = "masked_scatter"
    check_tensor(input, op)
    bool_mask(mask, op)
    check_tensor(source, op, "source")
    if source.dtype != input.dtype:
        raise OpError(f"{op}: source dtype {source.dtype} does not match input dtype {input.dtype}; "
                      f"cast it with .to({input.dtype}).")
    shape = _broadcast(op, input, mask)
    m = jnp.broadcast_to(mask._array, shape)
    count = math.prod(source.shape)
    if not is_traced(mask):
        needed = int(np.count_nonzero(np.asarray(m)))
        if needed > count:
            raise OpError(f"{op}: the mask (shape {mask.shape}) has {needed} true entries but source (shape "
                          f"{source.shape}) has only {count} elements; source needs at least one per true entry.")
    if count == 0:
        return apply_op(_MASKED_SCATTER, (m, jnp.zeros((), input.dtype), input))
    positions = jnp.clip(jnp.cumsum(m.reshape(-1)) - 1, 0, count - 1).reshape(shape)
    gathered = apply_op(TAKE, (source, positions))
    return apply_op(_MASKED_SCATTER, (m, gathered, input))


# -- splitting -------------------------------------------------------------------------------------------
def split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Pieces of the listed sizes along ``dim`` (they must sum to its size); node ``SplitWithSizesBackward0``.

    Example:
        >>> import fgraph as fg
        >>> [p.tolist() for p in fg.split_with_sizes(fg.arange(5.0), [2, 3])]
        [[0.0, 1.0], [2.0, 3.0, 4.0]]
    """
    check_tensor(input, "split_with_sizes")
    if isinstance(split_sizes, (int, np.integer, Tensor)) or not isinstance(split_sizes, (list, tuple)):
        raise TypeError(f"split_with_sizes: split_sizes must be a list of ints, got {type_name(split_sizes)}; "
                        "for pieces of one size use split(input, size, dim).")
    return split(input, list(split_sizes), dim)


def _direction_split(input: Tensor, sections: Sections, dim: int, op: str, min_ndim: int) -> tuple[Tensor, ...]:
    check_tensor(input, op)
    if input.ndim < min_ndim:
        raise OpError(f"torch.{op} requires a tensor with at least {min_ndim} dimension"
                      f"{'s' if min_ndim > 1 else ''}, but got a tensor with {input.ndim} dimensions "
                      f"(shape {input.shape}).")
    if isinstance(sections, (int, np.integer)) and not isinstance(sections, bool):
        n, k = input.shape[dim], int(sections)
        if k <= 0 or n % k:
            raise OpError(f"{op}: attempted to split along dimension {dim}, but the size of the dimension {n} "
                          f"is not divisible by the split_size {k}; pass a divisor of {n} or a list of indices.")
        return split(input, n // k, dim) if n else tensor_split(input, k, dim)
    return tensor_split(input, list(sections), dim)


def hsplit(input: Tensor, indices_or_sections: Sections) -> tuple[Tensor, ...]:
    """Split along the columns: dim 1 (dim 0 for 1-D tensors) into equal pieces or at ``indices``.

    Example:
        >>> import fgraph as fg
        >>> [p.shape for p in fg.hsplit(fg.ones(2, 6), 3)], [p.shape for p in fg.hsplit(fg.ones(4), [1])]
        ([(2, 2), (2, 2), (2, 2)], [(1,), (3,)])
    """
    dim = 0 if getattr(input, "ndim", 0) == 1 else 1
    return _direction_split(input, indices_or_sections, dim, "hsplit", 1)


def vsplit(input: Tensor, indices_or_sections: Sections) -> tuple[Tensor, ...]:
    """Split along the rows (dim 0) of a tensor with at least 2 dimensions.

    Example:
        >>> import fgraph as fg
        >>> [p.shape for p in fg.vsplit(fg.ones(4, 2), [1, 3])]
        [(1, 2), (2, 2), (1, 2)]
    """
    return _direction_split(input, indices_or_sections, 0, "vsplit", 2)


def dsplit(input: Tensor, indices_or_sections: Sections) -> tuple[Tensor, ...]:
    """Split along the depth (dim 2) of a tensor with at least 3 dimensions.

    Example:
        >>> import fgraph as fg
        >>> [p.shape for p in fg.dsplit(fg.ones(1, 2, 4), 2)]
        [(1, 2, 2), (1, 2, 2)]
    """
    return _direction_split(input, indices_or_sections, 2, "dsplit", 3)


# -- creation ----------------------------------------------------------------------------------------------
def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A leaf with the values and dtype of a NumPy array.

    Unlike ``torch.from_numpy`` the values are copied (fgraph tensors are immutable, so
    later writes to the array do not show). With JAX's x64 mode off, 64-bit arrays are stored in 32 bits
    (``docs/dtypes.md``).

    Example:
        >>> import numpy as np
        >>> import fgraph as fg
        >>> fg.from_numpy(np.arange(3, dtype=np.int32)).tolist()
        [0, 1, 2]
    """
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type_name(ndarray)}; use fg.tensor(data) "
                        "for other data.")
    if ndarray.dtype.kind == "O":
        raise TypeError("from_numpy: arrays of Python objects have no tensor dtype; convert the array first.")
    return tensor(ndarray)  # NumPy arrays keep their dtype


def scalar_tensor(s: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A 0-d tensor holding ``s``, of the default float dtype unless ``dtype`` is given (as in PyTorch).

    Example:
        >>> import fgraph as fg
        >>> t = fg.scalar_tensor(3)
        >>> t.shape, t.dtype, t.item()
        ((), dtype('float32'), 3.0)
    """
    if isinstance(s, Tensor):
        if s._array.size != 1:
            raise OpError(f"scalar_tensor: expected a number, got a tensor of shape {s.shape}.")
        s = s._array.reshape(())
    elif not isinstance(s, (bool, int, float, complex, np.generic)):
        raise TypeError(f"scalar_tensor: expected a number, got {type_name(s)}.")
    dt = canonical_dtype(dtype, "scalar_tensor")
    return tensor(jnp.asarray(s, default_float_dtype() if dt is None else dt), requires_grad=requires_grad,
                  device=device)


# -- Tensor attributes and methods ------------------------------------------------------------------------------
def _T(self: Tensor) -> Tensor:
    """All dimensions reversed (``x.permute(n-1, ..., 0)``); warns for tensors that are not 2-D, as PyTorch does."""
    if self.ndim != 2:
        warnings.warn(
            "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated in "
            "PyTorch; use x.mT to transpose batches of matrices or x.permute(*reversed(range(x.ndim))) to "
            "reverse the dimensions.", UserWarning, stacklevel=2)
        if self.ndim < 2:
            return self
    return permute(self, tuple(range(self.ndim - 1, -1, -1)))


def _H(self: Tensor) -> Tensor:
    """The conjugate transpose of a matrix (the transpose, for real tensors)."""
    from fgraph.ops.complex_parts import conj

    if self.ndim == 0:
        return conj(self)
    if self.ndim != 2:
        raise OpError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor "
                      f"(shape {self.shape}); for batches of matrices use tensor.mH.")
    return transpose(conj(self), 0, 1)


def _mH(self: Tensor) -> Tensor:
    """The conjugate transpose of the last two dimensions (``mT`` for real tensors)."""
    from fgraph.ops.complex_parts import conj

    if self.ndim < 2:
        raise OpError(f"tensor.mH is only supported on matrices or batches of matrices. Got {self.ndim}-D "
                      f"tensor (shape {self.shape}).")
    return matrix_transpose(conj(self))


def contiguous(self: Tensor, memory_format: Any = None) -> Tensor:
    """The tensor itself: fgraph tensors have no strides, so they are always contiguous.

    Example:
        >>> import fgraph as fg
        >>> x = fg.ones(2, 3).T
        >>> x.contiguous() is x, x.is_contiguous()
        (True, True)
    """
    return self


def is_contiguous(self: Tensor, memory_format: Any = None) -> bool:
    """Always ``True`` (no strides: see :func:`contiguous`)."""
    return True


def cpu(self: Tensor, memory_format: Any = None) -> Tensor:
    """The tensor on the CPU (itself if it is there already, or while traced); still on the graph.

    Example:
        >>> import fgraph as fg
        >>> fg.ones(2).cpu().device
        device(type='cpu')
    """
    from fgraph._methods import _to_device

    data = concrete(self._array)  # a pending value (deferred dispatch) runs first: it may not be on the CPU
    if isinstance(data, jax.core.Tracer) or not isinstance(data, jax.Array):
        return self
    if all(d.platform == "cpu" for d in data.devices()):
        return self
    return _to_device(self, "cpu")


def cuda(self: Tensor, device: Any = None, non_blocking: bool = False, memory_format: Any = None) -> Tensor:
    """The tensor on a GPU (``device``: an index, ``"cuda:1"`` or an :class:`fgraph.device`; the current GPU by
    default), still on the graph. Without a GPU this raises :class:`fgraph.errors.DeviceUnavailableError`
    naming the portable idiom ``device = "cuda" if fg.cuda.is_available() else "cpu"``."""
    from fgraph._methods import _to_device
    from fgraph.device import device as _device

    if device is None:
        target = _device("cuda")
    elif isinstance(device, int) and not isinstance(device, bool):
        target = _device("cuda", device)
    else:
        target = _device(device)
        if target.type != "cuda":
            raise ValueError(f"cuda: expected a CUDA device, got {device!r}; use x.to({str(target)!r}).")
    return _to_device(self, target)


def get_device(self: Tensor) -> int:
    """The GPU index holding the data, or -1 on the CPU (``Tensor.get_device``).

    Example:
        >>> import fgraph as fg
        >>> fg.ones(2).get_device()
        -1
    """
    d = self.device
    return -1 if d.type == "cpu" else (d.index or 0)


def view_as(self: Tensor, other: Tensor) -> Tensor:
    """``self`` reshaped to ``other``'s shape (``ViewBackward0``).

    Example:
        >>> import fgraph as fg
        >>> fg.arange(6.0).view_as(fg.zeros(2, 3)).shape
        (2, 3)
    """
    check_tensor(other, "view_as", "other")
    return reshape(self, other.shape)


def reshape_as(self: Tensor, other: Tensor) -> Tensor:
    """``self`` reshaped to ``other``'s shape (``reshape(other.shape)``).

    Example:
        >>> import fgraph as fg
        >>> fg.arange(6.0).reshape_as(fg.zeros(3, 2)).shape
        (3, 2)
    """
    check_tensor(other, "reshape_as", "other")
    return reshape(self, other.shape)


def type_as(self: Tensor, other: Tensor) -> Tensor:
    """``self`` cast to ``other``'s dtype (``self`` itself when they match).

    Example:
        >>> import fgraph as fg
        >>> fg.arange(3).type_as(fg.zeros(1)).dtype
        dtype('float32')
    """
    from fgraph.ops.elementwise import to_dtype

    check_tensor(other, "type_as", "other")
    return self if self.dtype == other.dtype else to_dtype(self, other.dtype)


def is_floating_point(input: Tensor) -> bool:
    """Whether the dtype is a floating point type (float16, bfloat16, float32, float64).

    Example:
        >>> import fgraph as fg
        >>> fg.ones(1).is_floating_point(), fg.arange(2).is_floating_point()
        (True, False)
    """
    check_tensor(input, "is_floating_point")
    return bool(jnp.issubdtype(input.dtype, jnp.floating))


def is_complex(input: Tensor) -> bool:
    """Whether the dtype is a complex type.

    Example:
        >>> import fgraph as fg
        >>> fg.ones(1).is_complex()
        False
    """
    check_tensor(input, "is_complex")
    return bool(jnp.issubdtype(input.dtype, jnp.complexfloating))


def element_size(self: Tensor) -> int:
    """Bytes per element of the dtype.

    Example:
        >>> import fgraph as fg
        >>> fg.ones(2).element_size(), fg.ones(2, dtype=fg.float16).element_size()
        (4, 2)
    """
    return int(np.dtype(self.dtype).itemsize)


def nelement(self: Tensor) -> int:
    """The number of elements (``numel``).

    Example:
        >>> import fgraph as fg
        >>> fg.ones(2, 3).nelement()
        6
    """
    return math.prod(self.shape)


#: Exported as ``fgraph.<name>``.
__all__ = [
    "clone", "select", "index_fill", "index_copy", "masked_scatter", "split_with_sizes", "hsplit", "vsplit",
    "dsplit", "from_numpy", "scalar_tensor", "is_floating_point", "is_complex",
]
#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {
    "clone": clone, "select": select, "index_fill": index_fill, "index_copy": index_copy,
    "masked_scatter": masked_scatter, "split_with_sizes": split_with_sizes, "hsplit": hsplit, "vsplit": vsplit,
    "dsplit": dsplit, "contiguous": contiguous, "is_contiguous": is_contiguous, "cpu": cpu, "view_as": view_as,
    "cuda": cuda, "get_device": get_device,
    "reshape_as": reshape_as, "type_as": type_as, "is_floating_point": is_floating_point, "is_complex": is_complex,
    "element_size": element_size, "nelement": nelement,
}
#: Installed as ``Tensor.<name>`` properties.
TENSOR_PROPERTIES = {"T": _T, "H": _H, "mH": _mH}
