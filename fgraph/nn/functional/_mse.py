"""The mean squared error as one primitive (torch's ``MseLossBackward0``), behind ``F.mse_loss`` without a weight.

Regression steps end in it, so one kernel and one node in place of the subtraction,
square and reduction the composite recorded count in every step. ``input`` and
``target`` broadcast against each other (PyTorch expands both first); the loss is
``(input - target) ** 2``, summed for ``'sum'``, averaged over the ``N`` elements of the
broadcast shape for ``'mean'``, kept for ``'none'``. The rule:
``d/dinput = 2 (input - target) g`` (``g / N`` for ``'mean'``) and ``d/dtarget`` its
negative, summed back to each input's shape by the central ``reduce_grad``. It is
written in fgraph ops, so ``create_graph`` passes differentiate it again.

With a ``weight`` PyTorch composes the loss from ordinary ops, and so does fgraph.
"""
from __future__ import annotations

import math
from typing import Any

import jax.numpy as jnp

from fgraph.ops._declare import RuleContext, apply_op, declare
from fgraph.ops.elementwise import mul, neg, sub
from fgraph.tensor import Tensor

__all__ = ["mse"]


def _mse_forward(x: Any, t: Any, *, reduction: str) -> Any:
    d = x - t
    loss = d * d
    if reduction == "mean":
        return jnp.mean(loss)
    if reduction == "sum":
        return jnp.sum(loss)
    return loss


def _mse_rule(ctx: RuleContext, g: Tensor) -> tuple:
    x, t = ctx.inputs
    (reduction,) = ctx.params
    d = sub(x, t)
    if reduction == "mean":
        shape = jnp.broadcast_shapes(tuple(x.shape), tuple(t.shape))
        scale = 2.0 / math.prod(shape) if math.prod(shape) else math.nan  # PyTorch: nan loss, empty gradients
        grad = mul(d, mul(g, scale))
    else:
        grad = mul(d, mul(g, 2.0))
    return (grad if ctx.needs[0] else None), (neg(grad) if ctx.needs[1] else None)


_MSE = declare("mse_loss", _mse_forward, _mse_rule, params=("reduction",), save_inputs=True,
               node_name="MseLossBackward0", real_only=True)


def mse(input: Tensor, target: Tensor, reduction: str) -> Tensor:
    """``(input - target) ** 2`` reduced by ``reduction`` ('mean', 'sum' or 'none'), for checked arguments."""
    return apply_op(_MSE, (input, target), _MSE.Params(reduction))
