"""Running a derivative rule: what it sees (:class:`RuleContext`) and how its gradients are finished.

Shared by the two ways a declared op's rule runs (``fgraph/ops/_declare.py``): on Tensors, recorded
(``create_graph=True``), and traced on raw arrays into one jitted rule kernel (:func:`_traced_rule`).
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import jax.numpy as jnp

from fgraph.autograd.grad_mode import _GRAD_ENABLED
from fgraph.ops._complex import conj_grad as _conj
from fgraph.tensor import Tensor, _wrap

__all__ = ["RuleContext"]


class RuleContext:
    """What a derivative rule may look at (see module docstring)."""

    __slots__ = ("inputs", "result", "params", "needs", "shapes")

    def __init__(self, inputs: tuple, result: Any, params: Any, needs: tuple[bool, ...], in_meta: tuple) -> None:
        self.inputs = inputs
        self.result = result
        self.params = params
        self.needs = needs
        self.shapes = tuple(None if m is None else m[0] for m in in_meta)

    def __repr__(self) -> str:
        return f"RuleContext(params={self.params}, needs={self.needs}, shapes={self.shapes})"


def _default_needs(in_meta: tuple) -> tuple[bool, ...]:
    return tuple(m is not None for m in in_meta)


def _zeros(shape: tuple, dtype: Any) -> Tensor:
    return _wrap(jnp.zeros(shape, dtype))


def _fill_zeros(grads: Sequence[Any], out_meta: tuple) -> tuple:
    return tuple(_zeros(*meta) if g is None else g for g, meta in zip(grads, out_meta))


def _traced_rule(op: Any, params: Any, in_meta: tuple, needs: Optional[tuple], out_meta: Optional[tuple],
                 *args: Any) -> tuple:
    """Body of a rule kernel: the rule run on tracer-backed Tensors with grad mode off.

    ``args`` are the output gradients (``None`` where missing), then the saved
    inputs (if the op saves them), then the saved outputs (if it saves them).
    """
    n_out = 1 if op.num_outputs == 1 else len(out_meta)
    needs = _default_needs(in_meta) if needs is None else needs
    token = _GRAD_ENABLED.set(False)
    try:
        grads = [None if g is None else _wrap(g) for g in args[:n_out]]
        rest = args[n_out:]
        inputs = None
        if op.save_inputs:
            inputs = tuple(None if a is None else _wrap(jnp.asarray(a)) for a in rest[: len(in_meta)])
            rest = rest[len(in_meta):]
        result = None
        if op.save_result:
            result = _wrap(rest[0]) if op.num_outputs == 1 else tuple(_wrap(r) for r in rest)
        g: Any = _conj(grads[0]) if op.num_outputs == 1 else tuple(map(_conj, _fill_zeros(grads, out_meta)))
        outs = _finish(op.rule(RuleContext(inputs, result, params, needs, in_meta), g), needs, in_meta)
        return tuple(None if o is None else o._array for o in outs)
    finally:
        _GRAD_ENABLED.reset(token)


def _finish(outs: Any, needs: tuple, in_meta: tuple) -> tuple:
    """The rule's gradients summed to their inputs' shapes, in their dtypes and PyTorch's convention."""
    from fgraph.ops._broadcast import reduce_grad

    if isinstance(outs, Tensor) or not isinstance(outs, (tuple, list)):
        outs = (outs,)
    if len(outs) != len(needs):
        raise RuntimeError(f"derivative rule returned {len(outs)} gradients for {len(needs)} inputs")
    return tuple(
        _conj(reduce_grad(o, *meta)) if need and o is not None else None for o, need, meta in zip(outs, needs, in_meta)
    )
