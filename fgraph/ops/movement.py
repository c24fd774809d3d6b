"""Movement ops: moving, repeating, flipping and rolling dimensions and elements.

``unflatten``, ``movedim``/``moveaxis``, ``swapaxes``/``swapdims``, ``expand_as``,
``broadcast_tensors``/``broadcast_shapes``, ``atleast_1d/2d/3d``, ``hstack``,
``vstack``/``row_stack``, ``dstack``, ``column_stack``, ``repeat``, ``tile``,
``repeat_interleave``, ``flip``, ``fliplr``, ``flipud``, ``rot90`` and ``roll``, with
PyTorch's names and argument conventions.

Primitives (each with a rule written in fgraph ops, so every derivative order works):
``repeat`` (its rule sums the repeated copies), ``flip`` (its own inverse) and ``roll``
(rolled back). Everything else is a composite of primitives. ``repeat_interleave``
with a tensor of repeats has a data-dependent output size: it runs eagerly, or under
tracing (``jax.jit``, ``fg.compile``) when ``output_size=`` is given.

Example:
    >>> import fgraph as fg
    >>> x = fg.arange(6.0).reshape(2, 3)
    >>> x.repeat(2, 1).shape, x.flip(1)[0].tolist(), x.roll(1, 1)[0].tolist()
    ((4, 3), [2.0, 1.0, 0.0], [2.0, 0.0, 1.0])
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

import jax
import jax.numpy as jnp
import numpy as np

from fgraph.errors import OpError
from fgraph.ops._declare import apply_op, apply_unary, declare
from fgraph.ops.indexing import getitem
from fgraph.ops.reduction import sum as _sum
from fgraph.ops.shape import _check_join, _dim, _shape_args, cat, expand, flatten, permute, reshape, transpose, unsqueeze
from fgraph.tensor import Tensor, tensor, type_name

Dims = Union[int, Sequence[int]]


def _int_tuple(value: Dims) -> tuple[int, ...]:
    if isinstance(value, (int, np.integer)):
        return (int(value),)
    return tuple(int(v) for v in value)


# -- reshaping and moving dimensions (composites) ---------------------------------------------------
def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """Split dimension ``dim`` into ``sizes`` (one entry may be -1).

    Example:
        >>> import fgraph as fg
        >>> fg.ones(2, 6).unflatten(1, (3, -1)).shape
        (2, 3, 2)
    """
    d = _dim(dim, input.ndim, "unflatten")
    sizes = _int_tuple(sizes)
    size = input.shape[d]
    if not sizes:
        raise OpError(f"unflatten: sizes must be non-empty (input shape {input.shape}, dim {d}).")
    if sizes.count(-1) > 1 or any(s < -1 for s in sizes):
        raise OpError(f"unflatten: sizes {list(sizes)} may contain at most one -1 and no other negative size.")
    if -1 in sizes:
        rest = math.prod(s for s in sizes if s != -1)
        if rest == 0 or size % rest:
            raise OpError(
                f"unflatten: provided sizes {list(sizes)} don't multiply up to the size of dim {d} ({size}) "
                f"of the input (shape {input.shape}); the -1 cannot be inferred."
            )
        sizes = tuple(size // rest if s == -1 else s for s in sizes)
    if math.prod(sizes) != size:
        raise OpError(
            f"unflatten: provided sizes {list(sizes)} don't multiply up to the size of dim {d} ({size}) "
            f"of the input (shape {input.shape})."
        )
    return reshape(input, input.shape[:d] + sizes + input.shape[d + 1:])


def movedim(input: Tensor, source: Dims, destination: Dims) -> Tensor:
    """Move the dimensions ``source`` to positions ``destination``; the others keep their order.

    Example:
        >>> import fgraph as fg
        >>> fg.ones(2, 3, 4).movedim(0, -1).shape
        (3, 4, 2)
    """
    src, dst = _int_tuple(source), _int_tuple(destination)
    nd = input.ndim
    if len(src) != len(dst):
        raise OpError(
            f"movedim: source {list(src)} and destination {list(dst)} must name the same number of dims."
        )
    if nd == 0:
        for d in src + dst:
            _dim(d, 1, "movedim")
        return input
    src = tuple(_dim(s, nd, "movedim") for s in src)
    dst = tuple(_dim(d, nd, "movedim") for d in dst)
    for what, dims in (("source", src), ("destination", dst)):
        if len(set(dims)) != len(dims):
            raise OpError(f"movedim: repeated dim in {what} {list(dims)} (tensor of shape {input.shape}).")
    order: list = [None] * nd
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(i for i in range(nd) if i not in src)
    order = [next(rest) if o is None else o for o in order]
    if order == list(range(nd)):
        return input
    return permute(input, order)


moveaxis = movedim


def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """Swap two dimensions (``transpose``'s NumPy-style alias).

    Example:
        >>> import fgraph as fg
        >>> fg.ones(2, 3, 4).swapaxes(0, 2).shape
        (4, 3, 2)
    """
    return transpose(input, axis0, axis1)


def swapdims(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dimensions (alias of ``transpose``)."""
    return transpose(input, dim0, dim1)


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    """``input.expand(other.shape)``.

    Example:
        >>> import fgraph as fg
        >>> fg.ones(3, 1).expand_as(fg.zeros(2, 3, 4)).shape
        (2, 3, 4)
    """
    return expand(input, other.shape)


def broadcast_shapes(*shapes: Any) -> tuple[int, ...]:
    """The shape that ``shapes`` broadcast to (PyTorch/NumPy rules).

    Example:
        >>> import fgraph as fg
        >>> fg.broadcast_shapes((2, 1), (3,))
        (2, 3)
    """
    norm = [(int(s),) if isinstance(s, (int, np.integer)) else tuple(int(v) for v in s) for s in shapes]
    nd = max((len(s) for s in norm), default=0)
    out = []
    for i in range(nd):
        size = 1
        for s in norm:
            own = s[i - nd + len(s)] if i - nd + len(s) >= 0 else 1
            if own != 1:
                if size != 1 and size != own:
                    raise OpError(
                        f"broadcast: shapes {norm} cannot be broadcast together: sizes {size} and {own} differ "
                        f"at dimension {i - nd} (counting from the right); each pair must be equal or contain a 1."
                    )
                size = own
        out.append(size)
    return tuple(out)


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """Expand all ``tensors`` to their common broadcast shape.

    Example:
        >>> import fgraph as fg
        >>> a, b = fg.broadcast_tensors(fg.ones(2, 1), fg.zeros(3))
        >>> a.shape, b.shape
        ((2, 3), (2, 3))
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise OpError(f"broadcast_tensors: argument {i} is a {type_name(t)}, expected a Tensor.")
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(expand(t, shape) for t in tensors)


# -- atleast_nd and stacking ---------------------------------------------------------------------------
def _atleast(tensors: tuple, n: int) -> Any:
    single = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    out = []
    for t in tensors:
        shape = t.shape
        if t.ndim < n:
            if n == 3 and t.ndim == 2:
                shape = shape + (1,)
            elif n == 3 and t.ndim == 1:
                shape = (1,) + shape + (1,)
            else:
                shape = (1,) * (n - t.ndim) + shape
            t = reshape(t, shape)
        out.append(t)
    return out[0] if single else tuple(out)


def atleast_1d(*tensors: Any) -> Any:
    """View 0-d tensors as 1-d; one tensor in, one out; several (or a sequence) give a tuple.

    Example:
        >>> import fgraph as fg
        >>> fg.atleast_1d(fg.tensor(1.0)).shape
        (1,)
    """
    return _atleast(tensors, 1)


def atleast_2d(*tensors: Any) -> Any:
    """View tensors with fewer than 2 dims as ``(1, n)``.

    Example:
        >>> import fgraph as fg
        >>> fg.atleast_2d(fg.ones(3)).shape
        (1, 3)
    """
    return _atleast(tensors, 2)


def atleast_3d(*tensors: Any) -> Any:
    """View tensors with fewer than 3 dims as 3-d: ``()->(1,1,1)``, ``(n,)->(1,n,1)``, ``(m,n)->(m,n,1)``.

    Example:
        >>> import fgraph as fg
        >>> fg.atleast_3d(fg.ones(2, 3)).shape
        (2, 3, 1)
    """
    return _atleast(tensors, 3)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenate horizontally: along dim 0 for 1-d tensors, else along dim 1.

    Example:
        >>> import fgraph as fg
        >>> fg.hstack([fg.ones(2, 1), fg.zeros(2, 3)]).shape
        (2, 4)
    """
    tensors = _atleast(_check_join(tensors, "hstack"), 1)
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenate vertically (along dim 0) after ``atleast_2d``.

    Example:
        >>> import fgraph as fg
        >>> fg.vstack([fg.ones(3), fg.zeros(2, 3)]).shape
        (3, 3)
    """
    return cat(_atleast(_check_join(tensors, "vstack"), 2), 0)


row_stack = vstack


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenate depth-wise (along dim 2) after ``atleast_3d``.

    Example:
        >>> import fgraph as fg
        >>> fg.dstack([fg.ones(2, 3), fg.zeros(2, 3)]).shape
        (2, 3, 2)
    """
    return cat(_atleast(_check_join(tensors, "dstack"), 3), 2)


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """Stack 0-d/1-d tensors as columns (others as they are) and ``hstack`` them.

    Example:
        >>> import fgraph as fg
        >>> fg.column_stack([fg.ones(3), fg.zeros(3, 2)]).shape
        (3, 3)
    """
    tensors = _check_join(tensors, "column_stack")
    return hstack([reshape(t, (t.numel(), 1)) if t.ndim <= 1 else t for t in tensors])


# -- repeat / tile / repeat_interleave -------------------------------------------------------------------
def _repeat_forward(x, *, repeats):
    lead = len(repeats) - x.ndim
    return jnp.tile(jnp.reshape(x, (1,) * lead + x.shape), repeats)


def _repeat_rule(ctx, g):
    repeats, shape = ctx.params.repeats, ctx.shapes[0]
    padded = (1,) * (len(repeats) - len(shape)) + shape
    blocks = tuple(v for r, s in zip(repeats, padded) for v in (r, s))
    summed = _sum(reshape(g, blocks), tuple(range(0, 2 * len(repeats), 2)))
    return (reshape(summed, shape),)


REPEAT = declare("repeat", _repeat_forward, _repeat_rule, params=("repeats",))


def repeat(input: Tensor, *sizes: Any) -> Tensor:
    """Tile the whole tensor ``sizes[i]`` times along dim ``i`` (PyTorch's ``Tensor.repeat``).

    ``len(sizes)`` must be at least ``input.ndim``; extra sizes add leading dimensions.
    (NumPy's ``repeat`` is :func:`repeat_interleave`.)

    Example:
        >>> import fgraph as fg
        >>> fg.tensor([1.0, 2.0]).repeat(2, 2).tolist()
        [[1.0, 2.0, 1.0, 2.0], [1.0, 2.0, 1.0, 2.0]]
    """
    repeats = _shape_args(sizes)
    if len(repeats) < input.ndim:
        raise OpError(
            f"repeat: got {len(repeats)} repeat sizes {list(repeats)} for a tensor of shape {input.shape}; "
            f"the number of sizes can not be smaller than the number of dimensions ({input.ndim})."
        )
    if any(r < 0 for r in repeats):
        raise OpError(f"repeat: repeat sizes {list(repeats)} must be non-negative.")
    if len(repeats) == input.ndim and all(r == 1 for r in repeats):
        return input
    return apply_unary(REPEAT, input, REPEAT.Params(repeats))


def tile(input: Tensor, *dims: Any) -> Tensor:
    """Like :func:`repeat`, but fewer ``dims`` than dimensions are padded with leading 1s.

    Example:
        >>> import fgraph as fg
        >>> fg.ones(2, 3).tile((2,)).shape
        (2, 6)
    """
    reps = _shape_args(dims)
    reps = (1,) * (input.ndim - len(reps)) + reps
    return repeat(input, reps)


def _repeat_index_forward(repeats, *, size, output_size):
    counts = jnp.broadcast_to(jnp.reshape(repeats, (-1,)), (size,))
    return jnp.repeat(jnp.arange(size, dtype=repeats.dtype), counts, total_repeat_length=output_size)


REPEAT_INDEX = declare("repeat_interleave", _repeat_index_forward, None, params=("size", "output_size"),
                       differentiable=False)


def _repeat_index(repeats: Tensor, size: int, output_size: Optional[int], where: str) -> Tensor:
    """``arange(size)`` with element ``i`` repeated ``repeats[i]`` times (an integer Tensor)."""
    if isinstance(repeats._array, jax.core.Tracer):
        if output_size is None:
            raise OpError(
                f"{where}: with a tensor of repeats the output size depends on their values, which are not "
                "known while tracing (jax.jit, vmap, fg.compile); pass output_size=<sum of repeats>."
            )
    else:
        counts = np.broadcast_to(np.asarray(repeats._array).reshape(-1), (size,))
        if counts.size and counts.min() < 0:
            raise OpError(f"{where}: repeats must be non-negative, got {counts.tolist()}.")
        total = int(counts.sum())
        if output_size is not None and output_size != total:
            raise OpError(f"{where}: output_size={output_size} does not match the sum of repeats ({total}).")
        output_size = total
    return apply_op(REPEAT_INDEX, (repeats,), REPEAT_INDEX.Params(size, int(output_size)))


def repeat_interleave(
    input: Tensor, repeats: Any = None, dim: Optional[int] = None, *, output_size: Optional[int] = None
) -> Tensor:
    """Repeat each element ``repeats`` times along ``dim`` (flattened input when ``dim`` is None).

    ``repeats`` is an int, or an integer tensor with one count per element of ``dim``
    (or a single count). Tensor repeats make the output size data-dependent: pass
    ``output_size`` (their sum) to use it under tracing. ``repeat_interleave(counts)``
    with only an integer tensor returns ``arange(len(counts))`` repeated by ``counts``.

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> x.repeat_interleave(2, dim=0).shape, fg.repeat_interleave(x, fg.tensor([1, 2]), dim=1).tolist()
        ((4, 2), [[1.0, 2.0, 2.0], [3.0, 4.0, 4.0]])
        >>> fg.repeat_interleave(fg.tensor([2, 1])).tolist()
        [0, 0, 1]
    """
    if repeats is None:
        counts = input if isinstance(input, Tensor) else tensor(input)
        if counts.ndim != 1 or not jnp.issubdtype(counts.dtype, jnp.integer):
            raise OpError(
                f"repeat_interleave: with a single argument it must be a 1-d integer tensor of repeats, "
                f"got shape {counts.shape} dtype {counts.dtype}."
            )
        return _repeat_index(counts, counts.shape[0], output_size, "repeat_interleave")
    if dim is None:
        input, d = flatten(input), 0
    else:
        d = _dim(dim, input.ndim, "repeat_interleave")
    size = input.shape[d]
    if isinstance(repeats, (int, np.integer)) and not isinstance(repeats, bool):
        r = int(repeats)
        if r < 0:
            raise OpError(f"repeat_interleave: repeats must be non-negative, got {r}.")
        if output_size is not None and output_size != r * size:
            raise OpError(
                f"repeat_interleave: output_size={output_size} does not match {r} repeats of dim {d} "
                f"(size {size}) of the input (shape {input.shape})."
            )
        expanded = expand(unsqueeze(input, d + 1), input.shape[: d + 1] + (r,) + input.shape[d + 1:])
        return reshape(expanded, input.shape[:d] + (size * r,) + input.shape[d + 1:])
    counts = repeats if isinstance(repeats, Tensor) else tensor(repeats)
    if not jnp.issubdtype(counts.dtype, jnp.integer):
        raise OpError(
            f"repeat_interleave: repeats must be an int or an integer tensor, got dtype {counts.dtype}; "
            "convert with .long()."
        )
    if counts.ndim > 1 or (counts.ndim == 1 and counts.shape[0] not in (1, size)):
        raise OpError(
            f"repeat_interleave: repeats of shape {counts.shape} must be 0-d or 1-d with one count per element "
            f"of dim {d} (size {size}) of the input (shape {input.shape})."
        )
    index = _repeat_index(counts, size, output_size, "repeat_interleave")
    return getitem(input, (slice(None),) * d + (index,))


# -- flip / rot90 / roll ---------------------------------------------------------------------------------
def _flip_forward(x, *, dims):
    return jnp.flip(x, dims)


def _flip_rule(ctx, g):
    return (apply_unary(FLIP, g, ctx.params),)


def _roll_forward(x, *, shifts, dims):
    return jnp.roll(x, shifts, dims)


def _roll_rule(ctx, g):
    p, shape = ctx.params, ctx.shapes[0]
    back = tuple(shape[d] - s for s, d in zip(p.shifts, p.dims))
    return (apply_unary(ROLL, g, ROLL.Params(back, p.dims)),)


FLIP = declare("flip", _flip_forward, _flip_rule, params=("dims",))
ROLL = declare("roll", _roll_forward, _roll_rule, params=("shifts", "dims"))


def flip(input: Tensor, dims: Dims) -> Tensor:
    """Reverse the order of elements along ``dims``.

    Example:
        >>> import fgraph as fg
        >>> fg.flip(fg.tensor([[1.0, 2.0], [3.0, 4.0]]), (0, 1)).tolist()
        [[4.0, 3.0], [2.0, 1.0]]
    """
    wanted = _int_tuple(dims)
    if input.ndim == 0:
        for d in wanted:
            _dim(d, 1, "flip")
        return input
    norm = tuple(_dim(d, input.ndim, "flip") for d in wanted)
    if len(set(norm)) != len(norm):
        raise OpError(f"flip: dims {list(wanted)} name a dimension more than once (tensor of shape {input.shape}).")
    norm = tuple(sorted(d for d in norm if input.shape[d] > 1))
    if not norm:
        return input
    return apply_unary(FLIP, input, FLIP.Params(norm))


def fliplr(input: Tensor) -> Tensor:
    """Flip dimension 1 (left/right); needs at least 2 dimensions.

    Example:
        >>> import fgraph as fg
        >>> fg.fliplr(fg.tensor([[1.0, 2.0]])).tolist()
        [[2.0, 1.0]]
    """
    if input.ndim < 2:
        raise OpError(f"fliplr: input must have at least 2 dimensions, got shape {input.shape}.")
    return flip(input, 1)


def flipud(input: Tensor) -> Tensor:
    """Flip dimension 0 (up/down); needs at least 1 dimension.

    Example:
        >>> import fgraph as fg
        >>> fg.flipud(fg.tensor([1.0, 2.0])).tolist()
        [2.0, 1.0]
    """
    if input.ndim < 1:
        raise OpError(f"flipud: input must have at least 1 dimension, got shape {input.shape}.")
    return flip(input, 0)


def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """Rotate by 90 degrees ``k`` times in the plane ``dims``, from the first towards the second.

    Example:
        >>> import fgraph as fg
        >>> fg.rot90(fg.tensor([[1.0, 2.0], [3.0, 4.0]])).tolist()
        [[2.0, 4.0], [1.0, 3.0]]
    """
    dims = _int_tuple(dims)
    if len(dims) != 2:
        raise OpError(f"rot90: dims must name exactly 2 dimensions, got {list(dims)}.")
    if input.ndim < 2:
        raise OpError(f"rot90: input must have at least 2 dimensions, got shape {input.shape}.")
    d0, d1 = (_dim(d, input.ndim, "rot90") for d in dims)
    if d0 == d1:
        raise OpError(f"rot90: the rotation dims must differ, got dim0 = {d0} and dim1 = {d1}.")
    k = int(k) % 4
    if k == 1:
        return transpose(flip(input, d1), d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return transpose(flip(input, d0), d0, d1)
    return input


def roll(input: Tensor, shifts: Dims, dims: Optional[Dims] = None) -> Tensor:
    """Shift elements circularly by ``shifts`` along ``dims`` (the flattened tensor when ``dims`` is None).

    Example:
        >>> import fgraph as fg
        >>> fg.roll(fg.tensor([1.0, 2.0, 3.0]), 1).tolist()
        [3.0, 1.0, 2.0]
    """
    shifts_t = _int_tuple(shifts)
    if dims is None:
        if len(shifts_t) != 1:
            raise OpError(f"roll: without dims, shifts must be a single int, got {list(shifts_t)}.")
        return reshape(roll(flatten(input), shifts_t, 0), input.shape)
    dims_t = _int_tuple(dims)
    if len(shifts_t) != len(dims_t):
        raise OpError(
            f"roll: shifts and dims must align: got {len(shifts_t)} shifts {list(shifts_t)} and "
            f"{len(dims_t)} dims {list(dims_t)}."
        )
    if input.ndim == 0:
        for d in dims_t:
            _dim(d, 1, "roll")
        return input
    total: dict[int, int] = {}
    for s, d in zip(shifts_t, dims_t):
        d = _dim(d, input.ndim, "roll")
        total[d] = total.get(d, 0) + s
    moves = sorted((d, s % input.shape[d]) for d, s in total.items() if input.shape[d] and s % input.shape[d])
    if not moves:
        return input
    return apply_unary(ROLL, input, ROLL.Params(tuple(s for _, s in moves), tuple(d for d, _ in moves)))


#: Exported as ``fgraph.<name>``.
__all__ = [
    "unflatten", "movedim", "moveaxis", "swapaxes", "swapdims", "expand_as", "broadcast_shapes",
    "broadcast_tensors", "atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack", "row_stack", "dstack",
    "column_stack", "repeat", "tile", "repeat_interleave", "flip", "fliplr", "flipud", "rot90", "roll",
]
#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {
    "unflatten": unflatten, "movedim": movedim, "moveaxis": moveaxis, "swapaxes": swapaxes, "swapdims": swapdims,
    "expand_as": expand_as, "repeat": repeat, "tile": tile, "repeat_interleave": repeat_interleave,
    "flip": flip, "fliplr": fliplr, "flipud": flipud, "rot90": rot90, "roll": roll,
}
