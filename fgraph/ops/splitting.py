"""Splitting ops: ``split``, ``chunk``, ``unbind`` (multi-output primitives) and ``tensor_split``.

``split``/``chunk`` (node ``SplitBackward0``), ``split`` with a list of sizes
(``SplitWithSizesBackward0``) and ``unbind`` (``UnbindBackward0``) are primitives with a
parameter-dependent number of outputs (``num_outputs=0``): one node, one ``output_nr``
per piece. Their rules join the output gradients again (``cat`` / ``stack``); the
engine passes zeros for the pieces that were not used. ``tensor_split`` may return
overlapping pieces (decreasing indices), so it is a composite of ``narrow``.

Example:
    >>> import fgraph as fg
    >>> x = fg.arange(10.0)
    >>> [p.shape for p in x.split([3, 7])], [p.shape for p in x.chunk(3)]
    ([(3,), (7,)], [(4,), (4,), (2,)])
    >>> a, b = fg.ones(2, 3).unbind(0)
    >>> a.shape, a.grad_fn is None
    ((3,), True)
"""
from __future__ import annotations

from typing import Sequence, Union

import jax
import numpy as np

from fgraph.errors import OpError
from fgraph.ops._declare import apply_op, declare
from fgraph.ops.shape import _dim, cat, narrow, stack
from fgraph.tensor import Tensor


def _split_forward(x, *, dim, sizes):
    out, start = [], 0
    for size in sizes:
        out.append(jax.lax.slice_in_dim(x, start, start + size, axis=dim))
        start += size
    return tuple(out)


def _split_rule(ctx, g):
    return (g[0] if len(g) == 1 else cat(g, ctx.params.dim),)


def _unbind_forward(x, *, dim):
    return tuple(jax.lax.index_in_dim(x, i, axis=dim, keepdims=False) for i in range(x.shape[dim]))


def _unbind_rule(ctx, g):
    return (stack(g, ctx.params.dim),)


SPLIT = declare("split", _split_forward, _split_rule, params=("dim", "sizes"), num_outputs=0)
SPLIT_WITH_SIZES = declare("split_with_sizes", _split_forward, _split_rule, params=("dim", "sizes"),
                           num_outputs=0)
UNBIND = declare("unbind", _unbind_forward, _unbind_rule, params=("dim",), num_outputs=0)


def split(tensor: Tensor, split_size_or_sections: Union[int, Sequence[int]], dim: int = 0) -> tuple[Tensor, ...]:
    """Split into pieces of ``split_size`` along ``dim`` (the last may be smaller), or of the listed sizes.

    Example:
        >>> import fgraph as fg
        >>> [p.tolist() for p in fg.split(fg.arange(5.0), 2)]
        [[0.0, 1.0], [2.0, 3.0], [4.0]]
        >>> [p.shape for p in fg.ones(2, 5).split([1, 4], dim=1)]
        [(2, 1), (2, 4)]
    """
    d = _dim(dim, tensor.ndim, "split")
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, (int, np.integer)) and not isinstance(split_size_or_sections, bool):
        size = int(split_size_or_sections)
        if size < 0:
            raise OpError(f"split: split_size must be non-negative, got {size}.")
        if size == 0 and n != 0:
            raise OpError(
                f"split: split_size can only be 0 if dimension {d} has size 0, but it has size {n} "
                f"(tensor of shape {tensor.shape})."
            )
        if n == 0:
            sizes: tuple = (0,)
        else:
            sizes = (size,) * (n // size) + ((n % size,) if n % size else ())
        op = SPLIT
    else:
        sizes = tuple(int(s) for s in split_size_or_sections)
        if any(s < 0 for s in sizes) or sum(sizes) != n:
            raise OpError(
                f"split: split sizes {list(sizes)} must be non-negative and sum to the size of dim {d} ({n}) "
                f"of the tensor (shape {tensor.shape}), but they sum to {sum(sizes)}."
            )
        if not sizes:
            raise OpError(f"split: expected at least one split size (tensor of shape {tensor.shape}).")
        op = SPLIT_WITH_SIZES
    return apply_op(op, (tensor,), op.Params(d, sizes))


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into ``chunks`` pieces of ``ceil(size / chunks)`` along ``dim`` (possibly fewer pieces).

    Example:
        >>> import fgraph as fg
        >>> [p.shape for p in fg.chunk(fg.ones(6), 4)]
        [(2,), (2,), (2,)]
    """
    chunks = int(chunks)
    if chunks <= 0:
        raise OpError(f"chunk: chunks must be greater than 0, got {chunks}.")
    d = _dim(dim, input.ndim, "chunk")
    n = input.shape[d]
    if n == 0:
        return apply_op(SPLIT, (input,), SPLIT.Params(d, (0,) * chunks))
    return split(input, -(-n // chunks), d)


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices along ``dim``, each without that dimension.

    Example:
        >>> import fgraph as fg
        >>> [r.tolist() for r in fg.unbind(fg.tensor([[1.0, 2.0], [3.0, 4.0]]), 1)]
        [[1.0, 3.0], [2.0, 4.0]]
    """
    d = _dim(dim, input.ndim, "unbind")
    if input.shape[d] == 0:
        return ()
    return apply_op(UNBIND, (input,), UNBIND.Params(d))


def tensor_split(input: Tensor, indices_or_sections: Union[int, Sequence[int]], dim: int = 0) -> tuple[Tensor, ...]:
    """Split into ``sections`` nearly equal pieces (the first ``size % sections`` one larger), or at ``indices``.

    Example:
        >>> import fgraph as fg
        >>> [p.shape for p in fg.tensor_split(fg.ones(7), 3)], [p.shape for p in fg.tensor_split(fg.ones(7), [1, 5])]
        ([(3,), (2,), (2,)], [(1,), (4,), (2,)])
    """
    d = _dim(dim, input.ndim, "tensor_split")
    n = input.shape[d]
    if isinstance(indices_or_sections, (int, np.integer)) and not isinstance(indices_or_sections, bool):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise OpError(f"tensor_split: number of sections must be greater than 0, got {sections}.")
        base, extra = divmod(n, sections)
        bounds, start = [], 0
        for i in range(sections):
            stop = start + base + (1 if i < extra else 0)
            bounds.append((start, stop))
            start = stop
    else:
        points = [0] + [int(i) for i in indices_or_sections] + [n]
        bounds = []
        for start, stop in zip(points[:-1], points[1:]):
            start, stop, _ = slice(start, stop).indices(n)
            bounds.append((start, max(start, stop)))
    return tuple(narrow(input, d, start, stop - start) for start, stop in bounds)


#: Exported as ``fgraph.<name>``.
__all__ = ["split", "chunk", "unbind", "tensor_split"]
#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {"split": split, "chunk": chunk, "unbind": unbind, "tensor_split": tensor_split}
