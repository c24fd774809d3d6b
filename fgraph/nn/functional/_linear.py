"""The affine map ``x @ w.T + b`` as one primitive (torch's ``AddmmBackward0``), behind ``F.linear`` with a bias,
and ``x @ w.T`` as another (torch's ``MmBackward0``), behind ``F.linear`` without one.

Every ``nn.Linear`` with a bias calls it, so one kernel and one node in place of a
contraction and an addition count in every step. The rule is written in fgraph ops
(two contractions and the gradient itself for the bias, summed to ``(out,)`` by the
central ``reduce_grad``), so ``create_graph`` passes differentiate it again.

For a 2-D input this is PyTorch's graph (``addmm``, ``mm``); for other input ranks PyTorch
adds view nodes around it (``ViewBackward0`` over ``AddmmBackward0``; ``UnsafeViewBackward0``
over ``MmBackward0`` for 3-D and up, ``SqueezeBackward4`` over it for a 1-D input), fgraph
records the one node.
"""
from __future__ import annotations

from typing import Any

from fgraph.ops import _natural_sharding as natural_sharding
from fgraph.ops._declare import RuleContext, apply_op, declare
from fgraph.ops.einsum import einsum
from fgraph.tensor import Tensor

__all__ = ["affine", "project"]


def _affine_forward(x: Any, w: Any, b: Any) -> Any:
    return natural_sharding.einsum("...i,oi->...o", x, w) + b


def _affine_rule(ctx: RuleContext, g: Tensor) -> tuple:
    x, w, _ = ctx.inputs
    grad_x = einsum("...o,oi->...i", g, w) if ctx.needs[0] else None
    grad_w = einsum("...o,...i->oi", g, x) if ctx.needs[1] else None
    return grad_x, grad_w, g if ctx.needs[2] else None


_AFFINE = declare("linear", _affine_forward, _affine_rule, save_inputs={0: (1,), 1: (0,)},
                  node_name="AddmmBackward0")


def affine(x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    """``x @ weight.T + bias`` for checked arguments: ``weight`` ``(out, in)``, ``bias`` ``(out,)``."""
    return apply_op(_AFFINE, (x, weight, bias))


def _project_forward(x: Any, w: Any) -> Any:
    return natural_sharding.einsum("...i,oi->...o", x, w)


def _project_rule(ctx: RuleContext, g: Tensor) -> tuple:
    x, w = ctx.inputs
    grad_x = einsum("...o,oi->...i", g, w) if ctx.needs[0] else None
    grad_w = einsum("...o,...i->oi", g, x) if ctx.needs[1] else None
    return grad_x, grad_w


_PROJECT = declare("linear_no_bias", _project_forward, _project_rule, save_inputs={0: (1,), 1: (0,)},
                   node_name="MmBackward0")


def project(x: Tensor, weight: Tensor) -> Tensor:
    """``x @ weight.T`` for checked arguments: ``weight`` ``(out, in)``."""
    return apply_op(_PROJECT, (x, weight))
