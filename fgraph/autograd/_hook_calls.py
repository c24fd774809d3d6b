"""Calling a node's hooks during backward, and checking what they return (PyTorch's checks).

A replacement gradient must keep the shape and dtype of the gradient it replaces;
errors name the hook, the node, and the expected and received shape or dtype.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from fgraph.autograd.graph import Node
from fgraph.errors import GradError
from fgraph.tensor import Tensor

__all__ = ["call_tensor_pre_hooks", "call_pre_hooks", "call_post_hooks", "hook_name", "calls"]

_CALLS = [0]  # how many times hooks were called: a backward whose hooks ran was wanted for them


def calls() -> int:
    """A count that grows whenever backward calls hooks (compare two readings)."""
    return _CALLS[0]


def call_tensor_pre_hooks(fn: Node, hooks: dict, grads: list) -> list:
    _CALLS[0] += 1
    grads = list(grads)
    for output_nr, hook in tuple(hooks.values()):
        g = grads[output_nr]  # None when only a sibling output of a multi-output node got a gradient
        new = hook(g)
        if new is not None:
            grads[output_nr] = _check_hook_result(fn, "tensor hook", hook, g, new)
    return grads


def call_pre_hooks(fn: Node, hooks: dict, grads: list) -> list:
    _CALLS[0] += 1
    for hook in tuple(hooks.values()):
        new = hook(tuple(grads))
        if new is not None:
            grads = _check_hook_results(fn, "pre-hook", hook, grads, new)
    return grads


def call_post_hooks(fn: Node, hooks: dict, outputs: tuple, grads: list) -> tuple:
    _CALLS[0] += 1
    for hook in tuple(hooks.values()):
        new = hook(tuple(outputs), tuple(grads))
        if new is not None:
            outputs = tuple(_check_hook_results(fn, "post-hook", hook, outputs, new))
    return outputs


def hook_name(hook: Any) -> str:
    return getattr(hook, "__name__", type(hook).__name__)


def _check_hook_results(fn: Node, kind: str, hook: Any, old: Sequence, new: Any) -> list:
    if not isinstance(new, (tuple, list)):
        raise TypeError(
            f"{kind} '{hook_name(hook)}' on {fn.name()} returned a {type(new).__name__}; it must return None or "
            f"a tuple of {len(old)} gradients."
        )
    if len(new) != len(old):
        raise GradError(
            f"{kind} '{hook_name(hook)}' on {fn.name()} has returned an incorrect number of values "
            f"(got {len(new)}, but expected {len(old)})."
        )
    return [_check_hook_result(fn, kind, hook, o, n) for o, n in zip(old, new)]


def _check_hook_result(fn: Node, kind: str, hook: Any, old: Optional[Tensor], new: Any) -> Optional[Tensor]:
    """A hook's replacement gradient must keep the original's shape and dtype (PyTorch checks the same)."""
    name = hook_name(hook)
    if new is None:
        return None
    if not isinstance(new, Tensor):
        raise TypeError(
            f"{kind} '{name}' on {fn.name()} returned a {type(new).__name__}; it must return a Tensor or None."
        )
    if old is None:
        raise GradError(
            f"{kind} '{name}' on {fn.name()} returned a gradient of shape {new.shape} where there is none (None); "
            "a hook can't replace an empty gradient with a non-empty value."
        )
    if new.shape != old.shape:
        raise GradError(
            f"{kind} '{name}' on {fn.name()} has changed the size of value: expected shape {old.shape}, got "
            f"{new.shape}; a hook must return a gradient of the same shape."
        )
    if new.dtype != old.dtype:
        raise GradError(
            f"{kind} '{name}' on {fn.name()} has changed the type of value: expected dtype {old.dtype}, got "
            f"{new.dtype}; cast the replacement back (e.g. g.to(grad.dtype))."
        )
    return new
