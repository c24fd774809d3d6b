"""Module hooks: the global registries, the registration methods and the slow call path.

``Module.__call__`` takes the slow path (:meth:`HookMixin._call_impl`) only when a
hook is registered on the module or globally; this file holds everything that path
needs. The order is PyTorch's: global forward pre-hooks, then the module's; full
backward hooks set up around ``forward`` (see ``_backward_hook.py``); global
forward hooks, then the module's. ``prepend=True`` puts a hook first among the
module's own.
"""
from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Callable

from fgraph.autograd.graph import RemovableHandle
from fgraph.nn.modules._backward_hook import BackwardHook

if TYPE_CHECKING:
    from fgraph.nn.modules.module import Module

__all__ = [
    "register_module_forward_pre_hook",
    "register_module_forward_hook",
    "register_module_full_backward_pre_hook",
    "register_module_full_backward_hook",
    "HookMixin",
]

# -- global hooks: run for every module, before the module's own ----------------------------------
_global_forward_pre_hooks: "OrderedDict[int, Callable]" = OrderedDict()
_global_forward_hooks: "OrderedDict[int, Callable]" = OrderedDict()
_global_forward_hooks_with_kwargs: "OrderedDict[int, bool]" = OrderedDict()
_global_forward_hooks_always_called: "OrderedDict[int, bool]" = OrderedDict()
_global_backward_pre_hooks: "OrderedDict[int, Callable]" = OrderedDict()
_global_backward_hooks: "OrderedDict[int, Callable]" = OrderedDict()


def register_module_forward_pre_hook(hook: Callable[["Module", tuple], Any]) -> RemovableHandle:
    """``hook(module, args) -> None | new args`` before every module's ``forward`` (before its own pre-hooks).

    Example:
        >>> import fgraph as fg
        >>> seen = []
        >>> h = fg.nn.modules.module.register_module_forward_pre_hook(lambda m, a: seen.append(type(m).__name__))
        >>> _ = fg.nn.ReLU()(fg.ones(1)); h.remove()
        >>> seen
        ['ReLU']
    """
    handle = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[handle.id] = hook
    return handle


def register_module_forward_hook(hook: Callable[..., Any], *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """``hook(module, args, output) -> None | new output`` after every module's ``forward``.

    ``with_kwargs=True``: ``hook(module, args, kwargs, output)``. ``always_call=True``:
    also runs when ``forward`` raises.
    """
    handle = RemovableHandle(_global_forward_hooks,
                             extra=(_global_forward_hooks_with_kwargs, _global_forward_hooks_always_called))
    _global_forward_hooks[handle.id] = hook
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def register_module_full_backward_pre_hook(hook: Callable[["Module", tuple], Any]) -> RemovableHandle:
    """``hook(module, grad_output) -> None | new grad_output`` for every module, before its own."""
    handle = RemovableHandle(_global_backward_pre_hooks)
    _global_backward_pre_hooks[handle.id] = hook
    return handle


def register_module_full_backward_hook(hook: Callable[["Module", tuple, tuple], Any]) -> RemovableHandle:
    """``hook(module, grad_input, grad_output) -> None | new grad_input`` for every module, before its own."""
    handle = RemovableHandle(_global_backward_hooks)
    _global_backward_hooks[handle.id] = hook
    return handle


def _add_hook(hooks: OrderedDict, hook: Callable, prepend: bool, extra: tuple = ()) -> RemovableHandle:
    handle = RemovableHandle(hooks, extra=extra)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


_HOOK_DICTS = (
    "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks", "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called", "_backward_pre_hooks", "_backward_hooks", "_state_dict_pre_hooks",
    "_state_dict_hooks", "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks",
)



class HookMixin:
    """The hook half of :class:`~fgraph.nn.Module`: registration methods and the slow call path."""

    def _call_impl(self, args: tuple, kwargs: dict) -> Any:
        """The slow path: forward pre-hooks, backward hook set-up, forward, forward hooks."""
        result = None
        called_always = set()
        try:
            for hook_id, hook in (*_global_forward_pre_hooks.items(), *self._forward_pre_hooks.items()):
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    new = hook(self, args, kwargs)
                    if new is not None:
                        if not (isinstance(new, tuple) and len(new) == 2):
                            raise RuntimeError(
                                f"forward pre-hook must return None or a tuple of (new_args, new_kwargs), but got {new}."
                            )
                        args, kwargs = new
                else:
                    new = hook(self, args)
                    if new is not None:
                        args = new if isinstance(new, tuple) else (new,)
            backward_pre = [*_global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]
            backward = [*_global_backward_hooks.values(), *self._backward_hooks.values()]
            bw_hook = None
            if backward or backward_pre:
                bw_hook = BackwardHook(self, backward, backward_pre)
                args = bw_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            for hook_id, hook in (*_global_forward_hooks.items(), *self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called or hook_id in _global_forward_hooks_always_called:
                    called_always.add(hook_id)
                if hook_id in self._forward_hooks_with_kwargs or hook_id in _global_forward_hooks_with_kwargs:
                    new = hook(self, args, kwargs, result)
                else:
                    new = hook(self, args, result)
                if new is not None:
                    result = new
            if bw_hook is not None:
                result = bw_hook.setup_output_hook(result)
            return result
        except Exception:
            self._run_always_called_hooks(args, kwargs, result, called_always)
            raise

    def _run_always_called_hooks(self, args: tuple, kwargs: dict, result: Any, called: set) -> None:
        """After ``forward`` (or a hook) raised: the ``always_call`` forward hooks not run yet."""
        pending = [(i, h) for i, h in _global_forward_hooks.items() if i in _global_forward_hooks_always_called]
        pending += [(i, h) for i, h in self._forward_hooks.items() if i in self._forward_hooks_always_called]
        for hook_id, hook in pending:
            if hook_id in called:
                continue
            try:
                if hook_id in self._forward_hooks_with_kwargs or hook_id in _global_forward_hooks_with_kwargs:
                    new = hook(self, args, kwargs, result)
                else:
                    new = hook(self, args, result)
                if new is not None:
                    result = new
            except Exception as exc:  # the error from forward is the one to report
                warnings.warn(
                    f"module forward hook with always_call=True raised an exception that was silenced as another "
                    f"error was raised in forward: {exc}",
                    stacklevel=3,
                )

    # -- hooks -----------------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args) -> None | new args`` (or ``hook(module, args, kwargs) -> None | (args, kwargs)``
        with ``with_kwargs=True``) before ``forward``. ``prepend`` runs it before the others.

        Example:
            >>> import fgraph as fg
            >>> relu = fg.nn.ReLU()
            >>> h = relu.register_forward_pre_hook(lambda m, args: (args[0] - 1.0,))
            >>> relu(fg.tensor([0.5, 3.0])).tolist()
            [0.0, 2.0]
        """
        extra = (self._forward_pre_hooks_with_kwargs,)
        handle = _add_hook(self._forward_pre_hooks, hook, prepend, extra)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        return handle

    def register_forward_hook(self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """``hook(module, args, output) -> None | new output`` after ``forward``.

        ``with_kwargs=True``: ``hook(module, args, kwargs, output)``. ``always_call=True``:
        also runs when ``forward`` raises (the error is re-raised afterwards).

        Example:
            >>> import fgraph as fg
            >>> relu, acts = fg.nn.ReLU(), []
            >>> h = relu.register_forward_hook(lambda m, args, out: acts.append(out.tolist()))
            >>> _ = relu(fg.tensor([-1.0, 2.0])); h.remove(); _ = relu(fg.tensor([1.0]))
            >>> acts
            [[0.0, 2.0]]
        """
        extra = (self._forward_hooks_with_kwargs, self._forward_hooks_always_called)
        handle = _add_hook(self._forward_hooks, hook, prepend, extra)
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        return handle

    def register_full_backward_pre_hook(self, hook: Callable[["Module", tuple], Any],
                                        prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_output) -> None | new grad_output`` when the gradients of the outputs are known.

        ``grad_output`` has one entry per output (``None`` for non-tensor outputs and
        outputs that got no gradient). The returned tuple replaces it for the rest of
        the backward pass through the module.
        """
        return _add_hook(self._backward_pre_hooks, hook, prepend)

    def register_full_backward_hook(self, hook: Callable[["Module", tuple, tuple], Any],
                                    prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_input, grad_output) -> None | new grad_input``, once per backward pass.

        ``grad_input`` has one entry per positional argument of the call (``None`` for
        non-tensors and inputs that need no gradient), ``grad_output`` one per output.
        A returned tuple replaces ``grad_input`` in the gradients that flow on.

        Example:
            >>> import fgraph as fg
            >>> lin, seen = fg.nn.Linear(2, 1), []
            >>> h = lin.register_full_backward_hook(lambda m, gi, go: seen.append((gi[0].shape, go[0].shape)))
            >>> x = fg.ones(3, 2, requires_grad=True)
            >>> _ = fg.backward(lin(x).sum())
            >>> seen
            [((3, 2), (3, 1))]
        """
        return _add_hook(self._backward_hooks, hook, prepend)

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        """Not supported (deprecated in PyTorch): use :meth:`register_full_backward_hook`."""
        raise NotImplementedError(
            "register_backward_hook (PyTorch's deprecated non-full hook) is not supported; use "
            "register_full_backward_hook(hook), which gets gradients w.r.t. the module's inputs and outputs."
        )

    def register_state_dict_pre_hook(self, hook: Callable[["Module", str, bool], None]) -> RemovableHandle:
        """``hook(module, prefix, keep_vars)`` before ``state_dict`` collects this module's entries."""
        return _add_hook(self._state_dict_pre_hooks, hook, False)

    def register_state_dict_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata) -> None | new state_dict`` after ``state_dict``."""
        return _add_hook(self._state_dict_hooks, hook, False)

    def register_load_state_dict_pre_hook(self, hook: Callable[..., None]) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)``
        before this module loads its entries (it may edit ``state_dict``)."""
        return _add_hook(self._load_state_dict_pre_hooks, hook, False)

    def register_load_state_dict_post_hook(self, hook: Callable[["Module", Any], None]) -> RemovableHandle:
        """``hook(module, incompatible_keys)`` after ``load_state_dict`` (it may edit the key lists)."""
        return _add_hook(self._load_state_dict_post_hooks, hook, False)
