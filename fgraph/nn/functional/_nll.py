"""The negative log-likelihood primitive behind ``nll_loss`` and ``cross_entropy`` (torch's ``NllLossBackward0``).

One kernel forward and one rule backward, in place of the dozen elementwise ops and
reductions the loss would otherwise record: class-index losses sit at the end of every
classifier's step, so their dispatches count.

With ``hit[i, c] = (target_i == c) and (target_i != ignore_index)`` and per-sample weight
``w_i = sum_c hit[i, c] weight_c`` (1 without ``weight``), the per-sample loss is
``l_i = -w_i logp[i, target_i]``; ``'sum'`` adds them, ``'mean'`` divides that sum by
``W = sum_i w_i`` (``nan`` when every target is ignored, as in PyTorch). The rule:

* ``d/d logp[i, c] = -hit[i, c] weight_c g_i`` (``g / W`` for ``'mean'``); zero where no
  target hits; with ``W = 0`` (every target ignored) the rule divides by 1: zero gradients,
  at every order;
* ``d/d weight_c = sum_i hit[i, c] g_i n_i`` with ``n_i = -logp[i, target_i]``; for ``'mean'``
  ``g (n_i - L) / W`` in place of ``g_i n_i`` (``L`` the loss): the weights also scale the
  denominator. PyTorch has no gradient for ``weight``; fgraph's composite had one, kept.

The rule is written in fgraph ops, so ``create_graph`` passes differentiate it again.
"""
from __future__ import annotations

import functools
from typing import Any, Optional

import jax
import jax.numpy as jnp
import numpy as np

from fgraph.ops._declare import RuleContext, apply_op, declare
from fgraph.ops.elementwise import eq, logical_and, ne, to_dtype, where
from fgraph.ops.reduction import sum as _sum
from fgraph.ops.shape import reshape, unsqueeze
from fgraph.tensor import Tensor, _wrap

__all__ = ["nll", "class_ids"]


def _broadcast_shape(ndim: int, class_dim: int, c: int) -> tuple:
    shape = [1] * ndim
    shape[class_dim] = c
    return tuple(shape)


def _nll_forward(logp: Any, target: Any, weight: Any, *, class_dim: int, ignore_index: int, reduction: str) -> Any:
    c = logp.shape[class_dim]
    classes = jnp.arange(c, dtype=target.dtype).reshape(_broadcast_shape(logp.ndim, class_dim, c))
    t = jnp.expand_dims(target, class_dim)
    hit = (t == classes) & (t != ignore_index)
    scored = logp if weight is None else logp * weight.reshape(classes.shape)
    loss = -jnp.sum(jnp.where(hit, scored, 0), axis=class_dim)
    if reduction == "none":
        return loss
    total = jnp.sum(loss)
    if reduction == "sum":
        return total
    if weight is None:
        return total / jnp.sum(hit, dtype=logp.dtype)
    return total / jnp.sum(jnp.where(hit, weight.reshape(classes.shape), 0))


@functools.lru_cache(maxsize=64)
def class_ids(c: int, class_dim: int, ndim: int, dtype: np.dtype) -> Tensor:
    """``arange(c)`` laid along ``class_dim`` of an ``ndim``-d input: made once (on the host), not per call."""
    with jax.ensure_compile_time_eval():  # a concrete constant even when first made under a trace
        return _wrap(jnp.asarray(np.arange(c, dtype=dtype).reshape(_broadcast_shape(ndim, class_dim, c))))


def _hit(target: Tensor, c: int, ndim: int, class_dim: int, ignore_index: int) -> Tensor:
    classes = class_ids(c, class_dim, ndim, np.dtype(target.dtype))
    t = unsqueeze(target, class_dim)
    return logical_and(eq(t, classes), ne(t, ignore_index))


def _nll_rule(ctx: RuleContext, g: Tensor) -> tuple:
    logp, target, weight = ctx.inputs
    class_dim, ignore_index, reduction = ctx.params
    shape = ctx.shapes[0] if ctx.shapes[0] is not None else logp.shape
    c = shape[class_dim]
    hit = _hit(target, c, len(shape), class_dim, ignore_index)
    weight_c = None if weight is None else reshape(weight, _broadcast_shape(len(shape), class_dim, c))
    per_class = to_dtype(hit, g.dtype) if weight_c is None else where(hit, weight_c, 0.0)
    total_weight = None
    if reduction == "mean":  # every target ignored (W = 0): zero gradients, as PyTorch, and no 0/0 in higher orders
        total_weight = _sum(per_class)
        total_weight = where(eq(total_weight, 0.0), 1.0, total_weight)
    grad_logp = grad_weight = None
    if ctx.needs[0]:
        scale = g / total_weight if reduction == "mean" else g
        if reduction == "none":
            scale = unsqueeze(scale, class_dim)
        grad_logp = where(hit, -scale if weight_c is None else -scale * weight_c, 0.0)
    if ctx.needs[2]:
        n = -_sum(where(hit, logp, 0.0), class_dim)  # per-sample -logp[i, target_i] (0 where ignored)
        if reduction == "mean":
            loss = _sum(n * _sum(per_class, class_dim)) / total_weight
            coef = g * (n - loss) / total_weight
        else:
            coef = g * n
        spread = where(hit, unsqueeze(coef, class_dim), 0.0)
        others = tuple(d for d in range(len(shape)) if d != class_dim)
        grad_weight = reshape(_sum(spread, others) if others else spread, (c,))
    return grad_logp, None, grad_weight


_NLL = declare("nll_loss", _nll_forward, _nll_rule, params=("class_dim", "ignore_index", "reduction"),
               save_inputs={0: (2,), 1: (0, 2), 2: (0, 2)}, node_name="NllLossBackward0", real_only=True)


def nll(logp: Tensor, target: Tensor, weight: Optional[Tensor], class_dim: int, ignore_index: int,
        reduction: str) -> Tensor:
    """The loss of checked arguments: ``logp`` (classes along ``class_dim``), integer ``target``, ``weight`` (C,)."""
    return apply_op(_NLL, (logp, target, weight), _NLL.Params(class_dim, ignore_index, reduction))
