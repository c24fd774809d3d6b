"""Layer normalization as one primitive (torch's ``NativeLayerNormBackward0``), behind ``F.layer_norm``, and
training-mode batch normalization likewise (``NativeBatchNormBackward0``, behind ``F.batch_norm``).

Every transformer block calls layer norm twice, and every ResNet block batch norm twice,
so one kernel and one node in place of the mean, variance, rsqrt and affine ops the
composite recorded count in every step (and, compiled, the rule's two reductions are
cheaper than the composite's chain of derivatives).

Over the normalized dimensions (layer norm: the trailing ``k``; batch norm: all but the
channel dimension 1), with ``mu`` the mean,
``rstd = (var + eps) ** -0.5`` (biased variance) and ``xhat = (x - mu) rstd``, the
output is ``y = xhat * w + b`` (``weight``/``bias`` optional; batch norm's are given in the
shape ``(C,)`` and broadcast to ``(1, C, 1, ...)``). The rule, with
``gh = g * w`` (``g`` without a weight) and means over the normalized dimensions:

* ``d/dx = rstd * (gh - mean(gh) - xhat * mean(gh * xhat))``;
* ``d/dw = g * xhat`` and ``d/db = g``, summed to the weight's shape (by the central
  ``reduce_grad`` for layer norm, in the rule for batch norm's ``(C,)`` weight).

The rule recomputes ``mu`` and ``rstd`` from the saved input (a node keeps ``x`` and
``weight``, never the statistics), and is written in fgraph ops, so ``create_graph``
passes differentiate it again.
"""
from __future__ import annotations

from typing import Any, Optional

import jax.numpy as jnp
from jax import lax

from fgraph.ops._declare import RuleContext, apply_op, declare
from fgraph.ops.elementwise import add, mul, sub
from fgraph.ops.elementwise_math import rsqrt
from fgraph.ops.reduction import mean, sum
from fgraph.ops.shape import reshape
from fgraph.tensor import Tensor

__all__ = ["native_layer_norm", "native_batch_norm"]


def _dims(ndim: int, k: int) -> tuple:
    return tuple(range(ndim - k, ndim))


def _normalize_forward(x: Any, w: Any, b: Any, dims: tuple, eps: float) -> Any:
    mu = jnp.mean(x, axis=dims, keepdims=True)
    d = x - mu
    var = jnp.mean(d * d, axis=dims, keepdims=True)
    y = d * lax.rsqrt(var + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def _normalize_rule(ctx: RuleContext, g: Tensor, dims: tuple, eps: float, channel: Optional[tuple] = None) -> tuple:
    """The rule; ``channel``: batch norm's ``(1, C, 1, ...)``, its ``(C,)`` weight and bias broadcast to it."""
    x, w, _ = ctx.inputs
    if channel is not None and w is not None:
        w = reshape(w, channel)
    grad_x = grad_w = None
    if ctx.needs[0] or ctx.needs[1]:
        d = sub(x, mean(x, dim=dims, keepdim=True))
        rstd = rsqrt(add(mean(mul(d, d), dim=dims, keepdim=True), eps))
        xhat = mul(d, rstd)
        if ctx.needs[0]:
            gh = g if w is None else mul(g, w)
            centred = sub(gh, mean(gh, dim=dims, keepdim=True))
            grad_x = mul(rstd, sub(centred, mul(xhat, mean(mul(gh, xhat), dim=dims, keepdim=True))))
        if ctx.needs[1]:
            grad_w = mul(g, xhat)
    grad_b = g if ctx.needs[2] else None
    if channel is not None:  # to the (C,) weight and bias: a sum over the normalized dims
        grad_w = None if grad_w is None else sum(grad_w, dim=dims)
        grad_b = None if grad_b is None else sum(grad_b, dim=dims)
    return grad_x, grad_w, grad_b


def _layer_norm_forward(x: Any, w: Any, b: Any, *, k: int, eps: float) -> Any:
    return _normalize_forward(x, w, b, _dims(x.ndim, k), eps)


def _layer_norm_rule(ctx: RuleContext, g: Tensor) -> tuple:
    k, eps = ctx.params
    return _normalize_rule(ctx, g, _dims(ctx.inputs[0].ndim, k), eps)


def _channel(ndim: int, channels: int) -> tuple:
    return (1, channels) + (1,) * (ndim - 2)


def _batch_norm_forward(x: Any, w: Any, b: Any, *, dims: tuple, eps: float) -> Any:
    channel = _channel(x.ndim, x.shape[1])
    return _normalize_forward(x, None if w is None else w.reshape(channel), None if b is None else b.reshape(channel),
                              dims, eps)


def _batch_norm_rule(ctx: RuleContext, g: Tensor) -> tuple:
    dims, eps = ctx.params
    return _normalize_rule(ctx, g, dims, eps, _channel(g.ndim, g.shape[1]))  # g: the input's shape


_LAYER_NORM = declare("layer_norm", _layer_norm_forward, _layer_norm_rule, params=("k", "eps"),
                      save_inputs={0: (0, 1), 1: (0,)}, node_name="NativeLayerNormBackward0", real_only=True)


def native_layer_norm(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], k: int, eps: float) -> Tensor:
    """Layer norm of checked arguments over the last ``k`` dims; ``weight``/``bias`` of shape ``x.shape[-k:]``."""
    return apply_op(_LAYER_NORM, (x, weight, bias), _LAYER_NORM.Params(k, float(eps)))


_BATCH_NORM = declare("batch_norm_train", _batch_norm_forward, _batch_norm_rule, params=("dims", "eps"),
                      save_inputs={0: (0, 1), 1: (0,)}, node_name="NativeBatchNormBackward0", real_only=True)


def native_batch_norm(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], eps: float) -> Tensor:
    """Training-mode batch norm of checked arguments: ``(N, C, *)`` by its batch statistics per channel;
    ``weight``/``bias`` of shape ``(C,)``."""
    dims = (0,) + tuple(range(2, x.ndim))
    return apply_op(_BATCH_NORM, (x, weight, bias), _BATCH_NORM.Params(dims, float(eps)))
