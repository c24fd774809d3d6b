"""Module hooks: the global registries, the registration methods and the slow call path.

``Module.__call__`` takes the slow path (:meth:`HookMixin._call_impl`) only when a
hook is registered on the module or globally; this file holds everything that path
needs. The order is PyTorch's: global forward pre-hooks, then the module's; full
backward hooks set up around ``forward`` (see ``_backward_hook.py``); global
forward hooks, then the module's. ``prepend=True`` puts a hook first among the
module's own.
"""
from __future__ import annotations

import functools
import warnings
import weakref
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


class _WrappedHook:
    """A load-state-dict pre-hook as torch stores it: ``hook(*args)``, or ``hook(module, *args)`` when
    registered ``with_module`` (the module held weakly; pickling and deepcopy re-point it at the copy)."""

    def __init__(self, hook: Callable, module: Any = None) -> None:
        self.hook = hook
        functools.update_wrapper(self, hook)
        self.with_module = module is not None
        self.module = weakref.ref(module) if module is not None else None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.with_module:
            module = self.module() if self.module is not None else None
            if module is None:
                raise RuntimeError("You are trying to call the hook of a dead Module!")
            return self.hook(module, *args, **kwargs)
        return self.hook(*args, **kwargs)

    def call_for(self, module: Any, *args: Any) -> Any:
        """Run for ``module`` (the one loading: also right for a pytree copy sharing the hook table)."""
        return self.hook(module, *args) if self.with_module else self.hook(*args)

    def __getstate__(self) -> dict:
        return {"hook": self.hook, "with_module": self.with_module}

    def __setstate__(self, state: dict) -> None:
        self.hook = state["hook"]
        self.with_module = state["with_module"]
        self.module = None  # set by the owning Module's __setstate__ (rebind_wrapped_hooks)


def rebind_wrapped_hooks(module: Any) -> None:
    """Point the ``with_module`` load pre-hooks of an unpickled or deep-copied ``module`` at it."""
    for hook in module.__dict__.get("_load_state_dict_pre_hooks", {}).values():
        if isinstance(hook, _WrappedHook) and hook.with_module:
            hook.module = weakref.ref(module)


class _PublicStateDictHook:
    """A state-dict post-hook registered through ``register_state_dict_post_hook`` that cannot carry
    torch's ``_from_public_api`` mark itself (a bound method): it must return ``None``."""

    _from_public_api = True

    def __init__(self, hook: Callable) -> None:
        self.hook = hook

    def __call__(self, *args: Any) -> Any:
        return self.hook(*args)


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

    def register_state_dict_post_hook(self, hook: Callable[..., None]) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata) -> None`` after ``state_dict`` collected this
        module's entries; it edits ``state_dict`` in place (returning anything else raises, as in torch).

        Example:
            >>> import fgraph as fg
            >>> lin = fg.nn.Linear(2, 2)
            >>> h = lin.register_state_dict_post_hook(lambda m, sd, prefix, meta: sd.pop(prefix + "bias"))
            >>> list(lin.state_dict())
            Traceback (most recent call last):
            ...
            RuntimeError: state_dict post-hook must return None ...
        """
        try:
            hook._from_public_api = True  # torch's mark: state_dict() then requires it to return None
        except AttributeError:
            hook = _PublicStateDictHook(hook)
        return _add_hook(self._state_dict_hooks, hook, False)

    def _register_state_dict_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """torch's private post-hook: ``hook(module, state_dict, prefix, local_metadata) -> None | new dict``;
        a returned dict replaces the state dict (honoured by the module ``state_dict()`` was called on)."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError(
                "Cannot register the same function as the state dict post hook that was previously registered "
                "via register_state_dict_post_hook"
            )
        return _add_hook(self._state_dict_hooks, hook, False)

    def register_load_state_dict_pre_hook(self, hook: Callable[..., None]) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)``
        before this module loads its entries (it may edit ``state_dict``)."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook: Callable[..., None],
                                           with_module: bool = False) -> RemovableHandle:
        """torch's private form: ``hook(state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)``; ``with_module=True`` passes the module first."""
        return _add_hook(self._load_state_dict_pre_hooks, _WrappedHook(hook, self if with_module else None), False)

    def register_load_state_dict_post_hook(self, hook: Callable[["Module", Any], None]) -> RemovableHandle:
        """``hook(module, incompatible_keys)`` after ``load_state_dict`` (it may edit the key lists)."""
        return _add_hook(self._load_state_dict_post_hooks, hook, False)
