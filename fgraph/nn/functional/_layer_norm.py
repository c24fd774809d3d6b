"""Layer normalization as one primitive (torch's ``NativeLayerNormBackward0``), behind ``F.layer_norm``.

Every transformer block calls it twice, so one kernel and one node in place of the
mean, variance, rsqrt and affine ops the composite recorded count in every step.

Over the trailing ``k`` dimensions (``N`` elements each), with ``mu`` the mean,
``rstd = (var + eps) ** -0.5`` (biased variance) and ``xhat = (x - mu) rstd``, the
output is ``y = xhat * w + b`` (``weight``/``bias`` optional). The rule, with
``gh = g * w`` (``g`` without a weight) and means over the normalized dimensions:

* ``d/dx = rstd * (gh - mean(gh) - xhat * mean(gh * xhat))``;
* ``d/dw = g * xhat`` and ``d/db = g``, summed over the leading dimensions by the central
  ``reduce_grad``.

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
from fgraph.ops.reduction import mean
from fgraph.tensor import Tensor

__all__ = ["native_layer_norm"]


def _dims(ndim: int, k: int) -> tuple:
    return tuple(range(ndim - k, ndim))


def _layer_norm_forward(x: Any, w: Any, b: Any, *, k: int, eps: float) -> Any:
    dims = _dims(x.ndim, k)
    mu = jnp.mean(x, axis=dims, keepdims=True)
    d = x - mu
    var = jnp.mean(d * d, axis=dims, keepdims=True)
    y = d * lax.rsqrt(var + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def _layer_norm_rule(ctx: RuleContext, g: Tensor) -> tuple:
    x, w, _ = ctx.inputs
    k, eps = ctx.params
    grad_x = grad_w = None
    if ctx.needs[0] or ctx.needs[1]:
        dims = _dims(x.ndim, k)
        d = sub(x, mean(x, dim=dims, keepdim=True))
        rstd = rsqrt(add(mean(mul(d, d), dim=dims, keepdim=True), eps))
        xhat = mul(d, rstd)
        if ctx.needs[0]:
            gh = g if w is None else mul(g, w)
            centred = sub(gh, mean(gh, dim=dims, keepdim=True))
            grad_x = mul(rstd, sub(centred, mul(xhat, mean(mul(gh, xhat), dim=dims, keepdim=True))))
        if ctx.needs[1]:
            grad_w = mul(g, xhat)
    return grad_x, grad_w, g if ctx.needs[2] else None


_LAYER_NORM = declare("layer_norm", _layer_norm_forward, _layer_norm_rule, params=("k", "eps"),
                      save_inputs={0: (0, 1), 1: (0,)}, node_name="NativeLayerNormBackward0", real_only=True)


def native_layer_norm(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], k: int, eps: float) -> Tensor:
    """Layer norm of checked arguments over the last ``k`` dims; ``weight``/``bias`` of shape ``x.shape[-k:]``."""
    return apply_op(_LAYER_NORM, (x, weight, bias), _LAYER_NORM.Params(k, float(eps)))
