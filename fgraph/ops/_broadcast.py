"""The one place where broadcasting is undone in backward.

Derivative rules return gradients in the broadcast shape of the computation;
:func:`reduce_grad` sums each down to its input's shape and casts it to the
input's dtype. Because it is written in fgraph ops, it is differentiable too.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from fgraph.tensor import Tensor

__all__ = ["sum_to", "reduce_grad"]


def sum_to(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum ``g`` over the dimensions that broadcasting added or stretched to reach ``shape``.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.ops._broadcast import sum_to
        >>> sum_to(fg.ones(2, 3), (1, 3)).tolist()
        [[2.0, 2.0, 2.0]]
    """
    from fgraph.ops.reduction import sum as fg_sum
    from fgraph.ops.shape import reshape

    gshape = g.shape
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    if lead < 0 or any(s != 1 and s != gs for s, gs in zip(shape, gshape[lead:])):
        raise RuntimeError(f"gradient of shape {gshape} cannot be summed to an input of shape {shape}")
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and gshape[lead + i] != 1)
    if dims:
        g = fg_sum(g, dims, keepdim=True)
    if g.shape != shape:
        g = reshape(g, shape)
    return g


def reduce_grad(g: Tensor, shape: tuple[int, ...], dtype: Any) -> Tensor:
    """Sum ``g`` to ``shape`` and cast it to ``dtype`` (the input's), if needed.

    A complex gradient of a real input keeps its real part: the imaginary part is the
    derivative along a direction the real input cannot move in.
    """
    if g.shape != shape:
        g = sum_to(g, shape)
    if g.dtype != dtype:
        if g.dtype.kind == "c" and np.dtype(dtype).kind != "c":
            from fgraph.ops.complex_parts import real

            g = real(g)
            if g.dtype == dtype:
                return g
        from fgraph.ops.elementwise import to_dtype

        g = to_dtype(g, dtype)
    return g
