"""Reductions: sum and mean over ``dim`` (int, tuple or all) with ``keepdim``.

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> fg.sum(x, dim=0).tolist(), x.mean().item()
    ([4.0, 6.0], 2.5)
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Union

import jax.numpy as jnp

from fgraph.ops._declare import apply_op, apply_unary, declare
from fgraph.tensor import Tensor

Dim = Union[int, Sequence[int], None]


def normalize_dims(dim: Dim, ndim: int, op: str) -> tuple[int, ...]:
    """``dim`` as a sorted tuple of non-negative axes (all axes for ``None``)."""
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    out = []
    for d in dims:
        if not isinstance(d, int) or not -max(ndim, 1) <= d < max(ndim, 1):
            raise IndexError(
                f"{op}: dim {d} is out of range for a tensor with {ndim} dimensions "
                f"(expected a value in [{-max(ndim, 1)}, {max(ndim, 1) - 1}])."
            )
        out.append(d % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: dim {dims} names a dimension twice.")
    return tuple(sorted(out)) if ndim else ()


def expand_reduced(g: Tensor, shape: tuple[int, ...], dims: tuple[int, ...], keepdim: bool) -> Tensor:
    """Broadcast a reduced gradient back to the input ``shape``."""
    from fgraph.ops.shape import expand, reshape

    if not keepdim:
        kept = tuple(1 if i in dims else s for i, s in enumerate(shape))
        g = reshape(g, kept)
    return expand(g, shape)


def _sum_forward(x, *, dims, keepdim):
    return jnp.sum(x, axis=dims, keepdims=keepdim)


def _mean_forward(x, *, dims, keepdim):
    return jnp.mean(x, axis=dims, keepdims=keepdim)


def _sum_rule(ctx, g):
    p = ctx.params
    return (expand_reduced(g, ctx.shapes[0], p.dims, p.keepdim),)


def _mean_rule(ctx, g):
    p = ctx.params
    shape = ctx.shapes[0]
    count = math.prod(shape[d] for d in p.dims)
    return (expand_reduced(g, shape, p.dims, p.keepdim) / max(count, 1),)


SUM = declare("sum", _sum_forward, _sum_rule, params=("dims", "keepdim"))
MEAN = declare("mean", _mean_forward, _mean_rule, params=("dims", "keepdim"))


def sum(input: Tensor, dim: Dim = None, keepdim: bool = False) -> Tensor:
    """Sum over ``dim`` (all dimensions by default).

    Example:
        >>> import fgraph as fg
        >>> fg.sum(fg.ones(2, 3), dim=1).tolist()
        [3.0, 3.0]
    """
    return apply_unary(SUM, input, SUM.Params(normalize_dims(dim, input.ndim, "sum"), bool(keepdim)))


def mean(input: Tensor, dim: Dim = None, keepdim: bool = False) -> Tensor:
    """Mean over ``dim`` (all dimensions by default)."""
    if not jnp.issubdtype(input.dtype, jnp.inexact):
        raise TypeError(
            f"mean: input dtype {input.dtype} is not floating point; convert with .float() first."
        )
    return apply_unary(MEAN, input, MEAN.Params(normalize_dims(dim, input.ndim, "mean"), bool(keepdim)))


#: Exported as ``fgraph.<name>``.
__all__ = ["sum", "mean"]
#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {"sum": sum, "mean": mean}
