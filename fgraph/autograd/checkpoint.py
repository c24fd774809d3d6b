"""Activation checkpointing: trade compute for memory by recomputing a block in backward.

``checkpoint(fn, *args)`` runs ``fn`` under ``no_grad`` and keeps only its
inputs (and the default generator's state). When the backward pass reaches the
block, it recomputes ``fn`` with grad enabled and differentiates the recomputed
outputs with :func:`fgraph.grad`. The graph therefore holds the block's inputs
instead of every activation inside it.

Built on :class:`fgraph.autograd.Function`; works with ``create_graph=True``
(second derivatives through a checkpointed block equal the plain ones).

Example:
    >>> import fgraph as fg
    >>> from fgraph.autograd import checkpoint
    >>> def block(h, w):
    ...     return fg.tanh(h @ w)
    >>> x = fg.tensor([[1.0, 2.0]], requires_grad=True)
    >>> w = fg.tensor([[0.5], [0.25]], requires_grad=True)
    >>> y = checkpoint(block, x, w, use_reentrant=False).sum()
    >>> gx, gw = fg.grad(y, [x, w])
    >>> gx.shape, gw.shape
    ((1, 2), (2, 1))
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from fgraph.autograd.function import Function, FunctionCtx
from fgraph.autograd.grad_mode import _GRAD_ENABLED, enable_grad
from fgraph.autograd.graph import AccumulateGrad, Node, next_sequence_nr
from fgraph.errors import GradError
from fgraph.random import get_rng_state, set_rng_state
from fgraph.tensor import Tensor

__all__ = ["checkpoint"]


def checkpoint(
    fn: Callable[..., Any],
    *args: Any,
    use_reentrant: Optional[bool] = None,
    preserve_rng_state: bool = True,
    **kwargs: Any,
) -> Any:
    """Run ``fn(*args, **kwargs)`` without keeping its activations; recompute them in backward.

    ``fn`` must return a Tensor or a tuple (Tensors among its items are
    differentiable). Every tensor that should receive a gradient must be passed
    as an argument (positional or keyword), not captured in a closure.
    With ``preserve_rng_state=True`` the default generator (``fg.random``) is
    rewound for the recomputation, so random draws replay identically; explicit
    ``key=`` arguments replay by construction. ``use_reentrant`` is accepted for
    PyTorch compatibility: both settings use the same recompute-in-backward
    mechanism, which supports ``fg.grad``, ``inputs=`` and ``create_graph``.

    When grad mode is off, or no tensor argument requires grad, ``fn`` simply
    runs (nothing to checkpoint; closure-captured parameters still get their
    normal graph).

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([0.5, 1.0], requires_grad=True)
        >>> y = fg.autograd.checkpoint(fg.exp, x).sum()
        >>> [round(v, 4) for v in fg.grad(y, [x])[0].tolist()]
        [1.6487, 2.7183]
    """
    if use_reentrant is not None and not isinstance(use_reentrant, bool):
        raise TypeError(f"checkpoint: use_reentrant must be a bool or None, got {type(use_reentrant).__name__}.")
    if not callable(fn):
        raise TypeError(f"checkpoint: the first argument must be the function to run, got {type(fn).__name__}.")
    if not _GRAD_ENABLED.get() or not _any_requires_grad(args, kwargs):
        return fn(*args, **kwargs)
    names = tuple(kwargs)
    return CheckpointFunction.apply(fn, bool(preserve_rng_state), names, len(args), *args, *kwargs.values())


def _any_requires_grad(args: tuple, kwargs: dict) -> bool:
    for a in args:
        if isinstance(a, Tensor) and a._edge is not None:
            return True
    for a in kwargs.values():
        if isinstance(a, Tensor) and a._edge is not None:
            return True
    return False


class CheckpointFunction(Function):
    """The Function behind :func:`checkpoint`; its node is ``CheckpointFunctionBackward``.

    Inputs: ``(fn, preserve_rng_state, kwarg_names, n_positional, *flat_args)``.
    """

    @staticmethod
    def forward(ctx: FunctionCtx, run_function: Callable[..., Any], preserve_rng_state: bool,
                kwarg_names: tuple, n_positional: int, *flat: Any) -> Any:
        ctx.run_function = run_function
        ctx.kwarg_names = kwarg_names
        ctx.n_positional = n_positional
        ctx.rng_state = get_rng_state() if preserve_rng_state else None
        # Non-tensor arguments stay on ctx; tensors are saved (held by the node).
        ctx.constants = tuple(None if isinstance(a, Tensor) else a for a in flat)
        ctx.save_for_backward(*[a if isinstance(a, Tensor) else None for a in flat])
        ctx.set_materialize_grads(False)
        outputs = _call(run_function, flat, kwarg_names, n_positional)
        if not isinstance(outputs, (Tensor, tuple)):
            raise TypeError(
                f"checkpoint: the checkpointed function must return a Tensor or a tuple, got a "
                f"{type(outputs).__name__}; return the tensors as a tuple."
            )
        ctx.out_meta = _meta(outputs)
        return outputs

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Optional[Tensor]) -> tuple:
        create_graph = _GRAD_ENABLED.get()
        saved = ctx.saved_tensors
        needs = ctx.needs_input_grad[4:]
        flat = []
        wanted = []  # (flat index, tensor the recomputation differentiates against)
        anchors = set()  # nodes where the recomputed graph may legitimately end
        for i, (t, const) in enumerate(zip(saved, ctx.constants)):
            if t is None:
                flat.append(const)
                continue
            if needs[i]:
                # create_graph: an identity node keeps the gradient connected to the original
                # input, so it can be differentiated again; else a fresh leaf is enough.
                r = _CheckpointInput.apply(t) if create_graph else t.detach().requires_grad_(True)
                anchors.add(r._edge[0])
                wanted.append((i, r))
            else:
                r = t if t._edge is None else t.detach()  # keeps the identity of an input that needs no grad
            flat.append(r)
        start = next_sequence_nr()
        outputs = _recompute(ctx, flat)
        _check_recomputed(ctx.out_meta, _meta(outputs))
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        roots = []
        seeds = []
        for o, g in zip(outs, grad_outputs):
            if g is not None and isinstance(o, Tensor) and o._edge is not None:
                roots.append(o)
                seeds.append(g)
        result: list = [None] * (4 + len(flat))
        if not roots or not wanted:
            return tuple(result)
        _check_closed_over(roots, anchors, start)
        from fgraph.autograd.engine import grad

        grads = grad(roots, [r for _, r in wanted], seeds, create_graph=create_graph, allow_unused=True)
        for (i, _), g in zip(wanted, grads):
            result[4 + i] = g
        return tuple(result)


class _CheckpointInput(Function):
    """Identity whose node anchors a recomputation to the original input (used under create_graph)."""

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor) -> Tensor:
        return x

    @staticmethod
    def backward(ctx: FunctionCtx, g: Tensor) -> Tensor:
        return g


def _call(run_function: Callable[..., Any], flat: Any, kwarg_names: tuple, n_positional: int) -> Any:
    kwargs = dict(zip(kwarg_names, flat[n_positional:]))
    return run_function(*flat[:n_positional], **kwargs)


def _recompute(ctx: FunctionCtx, flat: list) -> Any:
    """Run the block again with grad enabled, with the default generator rewound to its forward state."""
    state = ctx.rng_state
    current = get_rng_state() if state is not None else None
    if state is not None:
        set_rng_state(state)
    try:
        with enable_grad():
            return _call(ctx.run_function, flat, ctx.kwarg_names, ctx.n_positional)
    finally:
        if current is not None:
            set_rng_state(current)


def _meta(outputs: Any) -> tuple:
    outs = outputs if isinstance(outputs, tuple) else (outputs,)
    return tuple((o.shape, o.dtype) if isinstance(o, Tensor) else type(o) for o in outs)


def _check_recomputed(forward: tuple, again: tuple) -> None:
    """Raise if the recomputation returned other outputs (count, shapes, dtypes) than the forward pass."""
    if forward == again:
        return
    if len(forward) != len(again):
        what = f"{len(again)} outputs where the forward pass gave {len(forward)}"
    else:
        i = next(i for i, (a, b) in enumerate(zip(forward, again)) if a != b)
        what = f"output {i} as {_show(again[i])} where the forward pass gave {_show(forward[i])}"
    raise GradError(
        f"checkpoint: recomputing the checkpointed function in backward gave {what}. The "
        "function must compute the same shapes every time it is called with the same arguments: make it depend "
        "only on its arguments (no global state, counters or Python randomness; fgraph's random ops are replayed)."
    )


def _show(meta: Any) -> str:
    return f"shape {meta[0]} {meta[1]}" if isinstance(meta, tuple) else f"a {meta.__name__}"


def _check_closed_over(roots: list, anchors: set, start: int) -> None:
    """Raise if the recomputed graph reaches tensors that require grad but were not arguments.

    Their gradients would be lost (checkpoint only returns gradients of its
    arguments), so this is an error, with the fix. The walk covers only the
    nodes made by the recomputation (``sequence_nr >= start``); iterative.
    """
    stack = [r._edge[0] for r in roots]
    seen = set(stack)
    while stack:
        node: Node = stack.pop()
        if node in anchors:
            continue
        if type(node) is AccumulateGrad or node.sequence_nr < start:
            raise GradError(
                "checkpoint: the checkpointed function uses a tensor that requires grad but was not passed as an "
                f"argument (reached {node.name()} in the recomputation, e.g. a parameter captured in a closure); "
                "its gradient would be lost. Pass it explicitly: checkpoint(fn, x, weight, ...)."
            )
        for edge in node.next_edges:
            if edge is not None and edge[0] not in seen:
                seen.add(edge[0])
                stack.append(edge[0])
