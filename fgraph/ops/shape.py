"""Shape and movement ops: reshape, transpose, permute, expand, squeeze, unsqueeze, cat, stack, narrow.

More live in ``movement.py`` (movedim, repeat, flip, roll...), ``splitting.py`` (split, chunk,
unbind), ``triangular.py`` (diagonal, diag_embed, tril, triu) and ``padding.py`` (pad).

Example:
    >>> import fgraph as fg
    >>> x = fg.ones(2, 3)
    >>> x.reshape(3, 2).shape, x.t().shape, x.unsqueeze(0).shape
    ((3, 2), (3, 2), (1, 2, 3))
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from fgraph.errors import OpError
from fgraph.ops._declare import apply_op, apply_unary, declare
from fgraph.ops._known_ranges import inherit
from fgraph.tensor import Tensor, _is_torch_tensor, type_name

Shape = Union[int, Sequence[int]]


def _shape_args(shape: tuple) -> tuple[int, ...]:
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


def _dim(d: int, ndim: int, op: str) -> int:
    if ndim == 0:
        raise IndexError(f"{op}: dim {d} is out of range: the tensor is 0-dimensional (a scalar) and has no dims.")
    if not -ndim <= d < ndim:
        raise IndexError(
            f"{op}: dim {d} is out of range for a tensor with {ndim} dimensions "
            f"(expected a value in [{-ndim}, {ndim - 1}])."
        )
    return d % ndim


# -- reshape ----------------------------------------------------------------------------------------
def _reshape_forward(x, *, shape):
    return jnp.reshape(x, shape)


def _back_to_input_shape(ctx, g):
    return (reshape(g, ctx.shapes[0]),)


RESHAPE = declare("reshape", _reshape_forward, _back_to_input_shape, params=("shape",),
                  node_name="ViewBackward0")


def reshape(input: Tensor, *shape: Any) -> Tensor:
    """Same data, new shape; one entry may be -1.

    Example:
        >>> import fgraph as fg
        >>> fg.reshape(fg.arange(6), (2, -1)).shape
        (2, 3)
    """
    target = _shape_args(shape)
    size = math.prod(input.shape)
    if target.count(-1) > 1:
        raise OpError(f"reshape: only one dimension can be -1, got {target}.")
    if -1 in target:
        rest = math.prod(s for s in target if s != -1)
        if rest == 0 or size % rest:
            raise OpError(f"reshape: cannot reshape a tensor of shape {input.shape} ({size} elements) into {target}.")
        target = tuple(size // rest if s == -1 else s for s in target)
    if math.prod(target) != size or any(s < 0 for s in target):
        raise OpError(
            f"reshape: cannot reshape a tensor of shape {input.shape} ({size} elements) into {target} "
            f"({math.prod(target)} elements); the element counts must match."
        )
    if target == input.shape and isinstance(input, Tensor):
        return input
    out = apply_unary(RESHAPE, input, RESHAPE.Params(target))
    if isinstance(input, Tensor):  # a loss's class-index check then needs no new host read (_known_ranges)
        inherit(input._array, out._array)
    return out


view = reshape


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dimensions ``start_dim..end_dim`` into one."""
    if input.ndim == 0:
        return reshape(input, (1,))
    s, e = _dim(start_dim, input.ndim, "flatten"), _dim(end_dim, input.ndim, "flatten")
    if s > e:
        raise OpError(
            f"flatten: start_dim ({start_dim}) cannot come after end_dim ({end_dim}) for a tensor of shape "
            f"{tuple(input.shape)}; pass start_dim <= end_dim (dims {s} and {e} after wrapping negatives)."
        )
    shape = input.shape
    return reshape(input, shape[:s] + (math.prod(shape[s : e + 1]),) + shape[e + 1 :])


# -- transpose / permute ------------------------------------------------------------------------------
def _transpose_forward(x, *, dim0, dim1):
    return jnp.swapaxes(x, dim0, dim1)


def _transpose_rule(ctx, g):
    return (transpose(g, ctx.params.dim0, ctx.params.dim1),)


def _permute_forward(x, *, dims):
    return jnp.transpose(x, dims)


def _permute_rule(ctx, g):
    dims = ctx.params.dims
    inverse = tuple(sorted(range(len(dims)), key=dims.__getitem__))
    return (permute(g, inverse),)


TRANSPOSE = declare("transpose", _transpose_forward, _transpose_rule, params=("dim0", "dim1"))
PERMUTE = declare("permute", _permute_forward, _permute_rule, params=("dims",))


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dimensions."""
    nd = input.ndim
    if nd == 0:
        return input
    d0, d1 = _dim(dim0, nd, "transpose"), _dim(dim1, nd, "transpose")
    if d0 == d1:
        return input
    return apply_unary(TRANSPOSE, input, TRANSPOSE.Params(min(d0, d1), max(d0, d1)))


def permute(input: Tensor, *dims: Any) -> Tensor:
    """Reorder dimensions: output dim ``i`` is input dim ``dims[i]``."""
    order = _shape_args(dims)
    nd = input.ndim
    if len(order) != nd:
        raise OpError(f"permute: got {len(order)} dims {order} for a tensor with {nd} dimensions (shape {input.shape}).")
    order = tuple(_dim(d, nd, "permute") for d in order)
    if sorted(order) != list(range(nd)):
        raise OpError(f"permute: {order} is not a permutation of range({nd}).")
    return apply_unary(PERMUTE, input, PERMUTE.Params(order))


def t(input: Tensor) -> Tensor:
    """Transpose a tensor of at most 2 dimensions."""
    if input.ndim > 2:
        raise OpError(f"t: expects a tensor with <= 2 dimensions, got shape {input.shape}; use transpose or mT.")
    return transpose(input, 0, -1) if input.ndim == 2 else input


def matrix_transpose(input: Tensor) -> Tensor:
    """Swap the last two dimensions (``x.mT``)."""
    if input.ndim < 2:
        raise OpError(f"mT: expects a tensor with >= 2 dimensions, got shape {input.shape}.")
    return transpose(input, -2, -1)


# -- expand / squeeze / unsqueeze -----------------------------------------------------------------------
def _expand_forward(x, *, shape):
    return jnp.broadcast_to(x, shape)


def _expand_rule(ctx, g):
    return (g,)  # reduce_grad sums the broadcast dimensions back


EXPAND = declare("expand", _expand_forward, _expand_rule, params=("shape",))


def expand(input: Tensor, *sizes: Any) -> Tensor:
    """Broadcast to a larger shape; ``-1`` keeps a dimension's size.

    Example:
        >>> import fgraph as fg
        >>> fg.ones(3, 1).expand(2, 3, 4).shape
        (2, 3, 4)
    """
    target = _shape_args(sizes)
    shape = input.shape
    lead = len(target) - len(shape)
    if lead < 0:
        raise OpError(f"expand: cannot expand shape {shape} to fewer dimensions {target}.")
    resolved = []
    for i, s in enumerate(target):
        own = shape[i - lead] if i >= lead else None
        if s == -1:
            if own is None:
                raise OpError(f"expand: -1 is not allowed for the new leading dimension {i} in {target}.")
            s = own
        if own is not None and own != 1 and own != s:
            raise OpError(
                f"expand: the size of dimension {i - lead} ({own}) must match the target ({s}) or be 1; "
                f"cannot expand {shape} to {target}."
            )
        resolved.append(s)
    target = tuple(resolved)
    if target == shape:
        return input
    return apply_unary(EXPAND, input, EXPAND.Params(target))


broadcast_to = expand


def _squeeze_forward(x, *, dims):
    return jnp.squeeze(x, axis=dims)


def _unsqueeze_forward(x, *, dim):
    return jnp.expand_dims(x, dim)


SQUEEZE = declare("squeeze", _squeeze_forward, _back_to_input_shape, params=("dims",))
UNSQUEEZE = declare("unsqueeze", _unsqueeze_forward, _back_to_input_shape, params=("dim",))


def squeeze(input: Tensor, dim: Optional[Union[int, Sequence[int]]] = None) -> Tensor:
    """Remove size-1 dimensions (all of them, or those in ``dim``; others are left alone, as in PyTorch)."""
    nd = input.ndim
    if dim is None:
        dims = tuple(i for i, s in enumerate(input.shape) if s == 1)
    else:
        wanted = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = tuple(sorted({_dim(d, max(nd, 1), "squeeze") for d in wanted}))
        dims = tuple(d for d in dims if nd and input.shape[d] == 1)
    if not dims:
        return input
    return apply_unary(SQUEEZE, input, SQUEEZE.Params(dims))


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Insert a size-1 dimension at ``dim``."""
    d = _dim(dim, input.ndim + 1, "unsqueeze")
    return apply_unary(UNSQUEEZE, input, UNSQUEEZE.Params(d))


# -- joining --------------------------------------------------------------------------------------------
def _cat_forward(*xs, dim, sizes):
    return jnp.concatenate(xs, axis=dim)


# cat's and stack's rules cut the output gradient into one piece per input. A static slice
# per piece would compile one kernel per offset, and one traced rule kernel with an output
# per input compiles for seconds at a thousand inputs; so the pieces are cut by
# ``slice_at`` (the offset is a runtime argument: one kernel per piece size), op by op
# (``fuse_rule=False``), which keeps the first backward linear in the number of inputs.
def _slice_at_forward(x, start, *, dim, length):
    return lax.dynamic_slice_in_dim(x, start, length, axis=dim)


def _slice_at_rule(ctx, g):
    size = ctx.shapes[0][ctx.params.dim]
    return apply_op(PLACE_AT, (g, ctx.inputs[1]), PLACE_AT.Params(ctx.params.dim, size)), None


def _place_at_forward(g, start, *, dim, size):
    zeros = jnp.zeros(g.shape[:dim] + (size,) + g.shape[dim + 1:], g.dtype)
    return lax.dynamic_update_slice_in_dim(zeros, g, start, axis=dim)


def _place_at_rule(ctx, g):
    length = ctx.shapes[0][ctx.params.dim]
    return apply_op(SLICE_AT, (g, ctx.inputs[1]), SLICE_AT.Params(ctx.params.dim, length)), None


SLICE_AT = declare("slice_at", _slice_at_forward, _slice_at_rule, params=("dim", "length"), save_inputs=(1,),
                   node_name="SliceBackward0")
PLACE_AT = declare("place_at", _place_at_forward, _place_at_rule, params=("dim", "size"), save_inputs=(1,),
                   node_name="SliceBackwardBackward0")


def _piece(g: Tensor, dim: int, start: int, length: int) -> Tensor:
    """``g.narrow(dim, start, length)`` with ``start`` passed at run time (one kernel for every offset)."""
    if start == 0 and length == g.shape[dim]:
        return g
    return apply_op(SLICE_AT, (g, np.int32(start)), SLICE_AT.Params(dim, length))


def _cat_rule(ctx, g):
    dim, sizes = ctx.params.dim, ctx.params.sizes
    grads, start = [], 0
    for size, need in zip(sizes, ctx.needs):
        grads.append(_piece(g, dim, start, size) if need else None)
        start += size
    return tuple(grads)


def _stack_forward(*xs, dim):
    return jnp.stack(xs, axis=dim)


def _stack_rule(ctx, g):
    dim = ctx.params.dim
    return tuple(squeeze(_piece(g, dim, i, 1), dim) if need else None for i, need in enumerate(ctx.needs))


CAT = declare("cat", _cat_forward, _cat_rule, params=("dim", "sizes"), fuse_rule=False)
STACK = declare("stack", _stack_forward, _stack_rule, params=("dim",), fuse_rule=False)


def _check_join(tensors: Sequence[Tensor], op: str) -> tuple:
    if isinstance(tensors, (Tensor, jax.Array, np.ndarray)) or _is_torch_tensor(tensors) or not hasattr(tensors, "__iter__"):
        raise OpError(f"{op}: tensors must be a list or tuple of Tensors, got a {type_name(tensors)}"
                      + (f" of shape {tensors.shape}" if isinstance(tensors, Tensor) else "")
                      + f"; write fg.{op}([a, b]) (a Tensor is not split into its rows).")
    tensors = tuple(tensors)
    if not tensors:
        raise OpError(f"{op}: expected a non-empty sequence of tensors.")
    for i, x in enumerate(tensors):
        if not isinstance(x, Tensor):
            raise OpError(f"{op}: element {i} is a {type_name(x)}, expected a Tensor.")
    return tensors


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Concatenate along an existing dimension.

    Example:
        >>> import fgraph as fg
        >>> fg.cat([fg.ones(2, 3), fg.zeros(1, 3)]).shape
        (3, 3)
    """
    tensors = _check_join(tensors, "cat")
    nd = tensors[0].ndim
    d = _dim(dim, max(nd, 1), "cat")
    for i, x in enumerate(tensors):
        if x.ndim != nd or any(a != b for j, (a, b) in enumerate(zip(x.shape, tensors[0].shape)) if j != d):
            raise OpError(
                f"cat: tensor {i} has shape {x.shape} but tensor 0 has shape {tensors[0].shape}; "
                f"all sizes must match except in dimension {d}."
            )
    return apply_op(CAT, tensors, CAT.Params(d, tuple(x.shape[d] for x in tensors)))


concat = concatenate = cat


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join along a new dimension ``dim``; all shapes must be equal."""
    tensors = _check_join(tensors, "stack")
    for i, x in enumerate(tensors):
        if x.shape != tensors[0].shape:
            raise OpError(f"stack: tensor {i} has shape {x.shape} but tensor 0 has shape {tensors[0].shape}; they must be equal.")
    d = _dim(dim, tensors[0].ndim + 1, "stack")
    return apply_op(STACK, tensors, STACK.Params(d))


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """The slice ``start:start+length`` along ``dim``; a negative ``start`` counts from the end.

    Example:
        >>> import fgraph as fg
        >>> fg.arange(5.0).narrow(0, 1, 3).tolist()
        [1.0, 2.0, 3.0]
    """
    d = _dim(dim, input.ndim, "narrow")
    size = input.shape[d]
    if isinstance(start, Tensor) or isinstance(length, Tensor):
        raise TypeError("narrow: start and length must be Python ints (reading a Tensor would need a host round trip).")
    start, length = int(start), int(length)
    if not -size <= start <= size:
        raise IndexError(f"narrow: start {start} is out of range for dim {d} of size {size} (expected [{-size}, {size}]).")
    if start < 0:
        start += size
    if length < 0:
        raise OpError(f"narrow: length must be non-negative, got {length}.")
    if start + length > size:
        raise OpError(
            f"narrow: start ({start}) + length ({length}) exceeds the size of dim {d} ({size}) of shape {input.shape}."
        )
    if start == 0 and length == size:
        return input
    return input[(slice(None),) * d + (slice(start, start + length),)]


#: Exported as ``fgraph.<name>``.
__all__ = ["reshape", "view", "flatten", "transpose", "permute", "t", "matrix_transpose", "expand", "broadcast_to", "squeeze", "unsqueeze", "cat", "concat", "concatenate", "stack", "narrow"]
#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {"reshape": reshape, "view": reshape, "flatten": flatten, "transpose": transpose, "permute": permute, "t": t, "expand": expand, "broadcast_to": expand, "squeeze": squeeze, "unsqueeze": unsqueeze, "narrow": narrow}
