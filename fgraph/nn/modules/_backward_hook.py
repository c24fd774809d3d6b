"""Full backward hooks of a Module: gradients with respect to its inputs and outputs, once per backward.

The construction is PyTorch's. When a module with full backward (pre-)hooks is
called, its tensor inputs pass through an identity :class:`BackwardHookFunction`
before ``forward`` and its tensor outputs through another one after. Two node
post-hooks then see the module's gradients:

* on the *output* identity node: the gradients of the outputs (``grad_output``).
  Backward pre-hooks run here and may replace them;
* on the *input* identity node: the gradients of the inputs (``grad_input``),
  computed from those outputs. Backward hooks run here, with the ``grad_output``
  kept from the first node, and may replace ``grad_input``.

Non-tensor arguments and inputs that need no gradient read ``None``. When no input
requires grad the hooks run at the output node with ``grad_input`` all ``None`` (with
PyTorch's ``UserWarning``). The output keeps its type: a namedtuple stays one. Only a
Tensor or a tuple is routed: any other output (a dict, a list) is returned unchanged
with PyTorch's warning that the hooks will not be called for it.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Optional, Sequence

from fgraph._stacklevel import user_stacklevel
from fgraph.autograd.function import Function
from fgraph.autograd.grad_mode import is_grad_enabled
from fgraph.errors import GradError
from fgraph.tensor import Tensor

__all__ = ["BackwardHook", "BackwardHookFunction"]


class BackwardHookFunction(Function):
    """Identity on its tensor arguments; its node (``BackwardHookFunctionBackward``) carries the hooks."""

    @staticmethod
    def forward(ctx: Any, *args: Tensor) -> tuple:
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx: Any, *grads: Optional[Tensor]) -> tuple:
        return grads


class BackwardHook:
    """One module call's backward hooks: set up around ``forward``, fired during backward."""

    def __init__(self, module: Any, user_hooks: Sequence[Callable], user_pre_hooks: Sequence[Callable]) -> None:
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs: Optional[tuple] = None
        self.n_outputs = -1
        self.output_tensors_index: Optional[list[int]] = None
        self.n_inputs = -1
        self.input_tensors_index: Optional[list[int]] = None

    # -- set-up, around forward ------------------------------------------------------------------
    def setup_input_hook(self, args: tuple) -> tuple:
        """Route the tensor ``args`` through an identity node whose post-hook runs the backward hooks."""
        new_args, self.input_tensors_index = self._apply_on_tensors(self._set_user_hook, args)
        self.n_inputs = len(args)
        return new_args

    def setup_output_hook(self, result: Any) -> Any:
        """Route the tensor outputs through an identity node whose post-hook records ``grad_output``."""
        is_tuple = isinstance(result, tuple)
        if not is_tuple and not isinstance(result, Tensor):
            warnings.warn(
                "For backward hooks to be called, module output should be a Tensor or a tuple of Tensors but "
                f"received {type(result)}: the backward hooks of {type(self.module).__name__} will not fire for "
                "this call; return a Tensor or a tuple (a namedtuple works) from forward.",
                UserWarning,
                stacklevel=user_stacklevel(),
            )
        outputs = result if is_tuple else (result,)
        new_outputs, self.output_tensors_index = self._apply_on_tensors(self._set_output_hook, outputs)
        self.n_outputs = len(outputs)
        return _same_type(result, new_outputs) if is_tuple else new_outputs[0]

    def _apply_on_tensors(self, register: Callable, args: tuple) -> tuple[tuple, Optional[list[int]]]:
        indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in indices]
        if not (any(t.requires_grad for t in tensors) and is_grad_enabled()):
            return args, None
        new_tensors = BackwardHookFunction.apply(*tensors)
        node = next(t.grad_fn for t in new_tensors if isinstance(t.grad_fn, BackwardHookFunction._backward_cls))
        node.register_hook(register)
        out = list(args)
        for i, t in zip(indices, new_tensors):
            out[i] = t
        return tuple(out), indices

    # -- the node hooks, during backward ---------------------------------------------------------
    def _set_output_hook(self, grad_inputs: tuple, grad_outputs: tuple) -> Optional[tuple]:
        grad_output = _pack(self.output_tensors_index, grad_outputs, self.n_outputs)
        for hook in self.user_pre_hooks:
            new = hook(self.module, grad_output)
            if new is not None:
                grad_output = _checked(new, grad_output, "backward pre-hook", "grad_output", self.module, hook)
        self.grad_outputs = grad_output
        if self.input_tensors_index is None:  # no input needs a gradient: the hooks run now
            warnings.warn(
                "Full backward hook is firing when gradients are computed with respect to module outputs since no "
                f"inputs require gradients (module {type(self.module).__name__}): grad_input is all None. See "
                "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                "#torch.nn.Module.register_full_backward_hook for more details.",
                UserWarning,
                stacklevel=user_stacklevel(),
            )
            grad_input = (None,) * self.n_inputs
            for hook in self.user_hooks:
                res = hook(self.module, grad_input, grad_output)
                if res is not None and not (isinstance(res, tuple) and all(r is None for r in res)):
                    raise GradError(
                        f"backward hook of {type(self.module).__name__}: no input of the module requires grad, so "
                        "the hook must return None (or a tuple of Nones) for grad_input."
                    )
            self.grad_outputs = None
        return tuple(grad_output[i] for i in self.output_tensors_index)

    def _set_user_hook(self, grad_inputs: tuple, grad_outputs: tuple) -> Optional[tuple]:
        if self.grad_outputs is None:
            # The gradient reached the module's inputs without passing through its outputs
            # (e.g. a second backward through only part of the graph): nothing to report.
            return None
        grad_input = _pack(self.input_tensors_index, grad_inputs, self.n_inputs)
        for hook in self.user_hooks:
            new = hook(self.module, grad_input, self.grad_outputs)
            if new is not None:
                grad_input = _checked(new, grad_input, "backward hook", "grad_input", self.module, hook)
        self.grad_outputs = None
        return tuple(grad_input[i] for i in self.input_tensors_index)


def _same_type(original: tuple, items: tuple) -> tuple:
    """``items`` in the tuple type of ``original``: a namedtuple stays that namedtuple (PyTorch's rule)."""
    kind = type(original)
    if kind is tuple or items is original:
        return items
    if hasattr(kind, "_make"):  # a namedtuple
        return kind._make(items)
    try:  # another tuple subclass: most take an iterable, as tuple does
        return kind(items)
    except TypeError:
        return kind(*items)


def _pack(indices: list[int], values: Sequence, size: int) -> tuple:
    """``values`` placed at ``indices`` of a ``size``-tuple of ``None``."""
    res: list = [None] * size
    for i, v in zip(indices, values):
        res[i] = v
    return tuple(res)


def _checked(new: Any, old: tuple, kind: str, what: str, module: Any, hook: Callable) -> tuple:
    """A hook's replacement for ``old``: same length, and each gradient of the same shape and dtype."""
    name = f"{type(module).__name__} ('{getattr(hook, '__name__', type(hook).__name__)}')"
    if not isinstance(new, (tuple, list)) or len(new) != len(old):
        got = f"{len(new)} entries" if isinstance(new, (tuple, list)) else f"a {type(new).__name__}"
        raise GradError(
            f"{kind} of {name} returned {got} for {what}, expected a tuple of {len(old)} (None where unchanged "
            "is not allowed: return the tuple with every entry, or None to keep all)."
        )
    for i, (o, n) in enumerate(zip(old, new)):
        if n is None or o is None:
            continue
        if not isinstance(n, Tensor):
            raise TypeError(f"{kind} of {name} returned a {type(n).__name__} as {what}[{i}]; expected a Tensor.")
        if n.shape != o.shape or n.dtype != o.dtype:
            change = "size" if n.shape != o.shape else "type"
            raise GradError(
                f"{kind} of {name} has changed the {change} of value: it changed {what}[{i}] from shape {o.shape} "
                f"{o.dtype} to {n.shape} {n.dtype}; a hook must return gradients of the same shape and dtype."
            )
    return tuple(new)
