"""Primitives behind max pooling: window argmax, gather along the last axis and its scatter-add.

``window_argmax(x, table)`` picks, for each output position, the flat input index of
the first maximum among the positions listed in ``table[p]`` (``-1`` = padding, never
chosen). ``take_last(x, idx)`` gathers along the last axis; its gradient is
``scatter_add_last`` (a scatter-add), whose gradient is ``take_last`` again, so every
order of derivative works.

Example:
    >>> import fgraph as fg, jax.numpy as jnp
    >>> from fgraph.nn.functional._pool_primitives import take_last
    >>> take_last(fg.tensor([[1.0, 2.0, 3.0]]), fg.tensor([[2, 0]])).tolist()
    [[3.0, 1.0]]
"""
from __future__ import annotations

import jax.numpy as jnp

from fgraph.ops._declare import apply_op, declare
from fgraph.tensor import Tensor

__all__: list[str] = []


def _argmax_forward(x, table):
    valid = table >= 0
    vals = jnp.where(valid, jnp.take(x, jnp.where(valid, table, 0), axis=-1), -jnp.inf)
    am = jnp.argmax(vals, axis=-1)  # first maximum, as torch
    return jnp.take_along_axis(jnp.broadcast_to(table, vals.shape), am[..., None], axis=-1)[..., 0]


WINDOW_ARGMAX = declare("window_argmax", _argmax_forward, None, differentiable=False, real_only=True)


def _take_forward(x, idx):
    return jnp.take_along_axis(x, idx, axis=-1)


def _scatter_forward(g, idx, *, size):
    lead = g.shape[:-1]
    b = 1
    for s in lead:
        b *= s
    g2 = g.reshape((b, g.shape[-1]))
    i2 = idx.reshape((b, idx.shape[-1]))
    out = jnp.zeros((b, size), g.dtype).at[jnp.arange(b)[:, None], i2].add(g2)
    return out.reshape(lead + (size,))


def _take_rule(ctx, g):
    x_shape = ctx.shapes[0]
    return (scatter_add_last(g, ctx.inputs[1], x_shape[-1]), None)


def _scatter_rule(ctx, g):
    return (take_last(g, ctx.inputs[1]), None)


TAKE_LAST = declare("pool_take_last", _take_forward, _take_rule, save_inputs=(1,), node_name="MaxPoolBackward0")
SCATTER_ADD_LAST = declare("pool_scatter_add_last", _scatter_forward, _scatter_rule, params=("size",),
                           save_inputs=(1,))


def window_argmax(x: Tensor, table) -> Tensor:
    """Flat index (into the last axis of ``x``) of the first maximum over each row of ``table``."""
    return apply_op(WINDOW_ARGMAX, (x, table))


def take_last(x: Tensor, idx: Tensor) -> Tensor:
    """``x[..., idx]`` along the last axis (``idx`` has ``x``'s leading shape)."""
    return apply_op(TAKE_LAST, (x, idx))


def scatter_add_last(g: Tensor, idx: Tensor, size: int) -> Tensor:
    """Zeros of last size ``size`` with ``g`` added at ``idx`` along the last axis."""
    return apply_op(SCATTER_ADD_LAST, (g, idx), SCATTER_ADD_LAST.Params(int(size)))
