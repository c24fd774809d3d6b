"""Global registration hooks: run whenever any Module registers a parameter, buffer or submodule.

PyTorch's ``torch.nn.modules.module.register_module_{parameter,buffer,module}_registration_hook``.
Each hook is ``hook(module, name, value) -> None | replacement``: a returned value is
registered instead of ``value`` (and passed on to the next hook). Each registration
function returns a handle whose ``remove()`` unregisters the hook.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Callable

from fgraph.autograd.graph import RemovableHandle

if TYPE_CHECKING:
    from fgraph.nn.modules.module import Module

__all__ = [
    "register_module_buffer_registration_hook",
    "register_module_module_registration_hook",
    "register_module_parameter_registration_hook",
]

_global_buffer_registration_hooks: "OrderedDict[int, Callable]" = OrderedDict()
_global_module_registration_hooks: "OrderedDict[int, Callable]" = OrderedDict()
_global_parameter_registration_hooks: "OrderedDict[int, Callable]" = OrderedDict()


def _register(table: OrderedDict, hook: Callable) -> RemovableHandle:
    if not callable(hook):
        raise TypeError(f"registration hook must be callable as hook(module, name, value), got {type(hook).__name__}")
    handle = RemovableHandle(table)
    table[handle.id] = hook
    return handle


def register_module_buffer_registration_hook(hook: Callable[["Module", str, Any], Any]) -> RemovableHandle:
    """``hook(module, name, buffer) -> None | new buffer`` each time any module registers a buffer
    (``register_buffer``, ``module.x = nn.Buffer(...)``, reassigning a buffer attribute).

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.modules.module import register_module_buffer_registration_hook
        >>> h = register_module_buffer_registration_hook(lambda m, name, b: b * 2)
        >>> m = fg.nn.Module(); m.register_buffer("b", fg.ones(2)); h.remove()
        >>> m.b.tolist()
        [2.0, 2.0]
    """
    return _register(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook: Callable[["Module", str, Any], Any]) -> RemovableHandle:
    """``hook(module, name, submodule) -> None | new submodule`` each time any module registers a submodule
    (``add_module``/``register_module``, ``module.child = ...``).

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.modules.module import register_module_module_registration_hook
        >>> seen = []
        >>> h = register_module_module_registration_hook(lambda m, name, sub: seen.append(name))
        >>> m = fg.nn.Module(); m.act = fg.nn.ReLU(); h.remove()
        >>> seen
        ['act']
    """
    return _register(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook: Callable[["Module", str, Any], Any]) -> RemovableHandle:
    """``hook(module, name, param) -> None | new Parameter`` each time any module registers a parameter
    (``register_parameter``, ``module.w = nn.Parameter(...)``).

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.modules.module import register_module_parameter_registration_hook
        >>> seen = []
        >>> h = register_module_parameter_registration_hook(lambda m, name, p: seen.append(name))
        >>> _ = fg.nn.Linear(2, 2); h.remove()
        >>> seen
        ['weight', 'bias']
    """
    return _register(_global_parameter_registration_hooks, hook)


def _run(table: OrderedDict, module: "Module", name: str, value: Any) -> Any:
    """``value`` after every hook of ``table`` (a hook's non-``None`` result replaces it)."""
    for hook in tuple(table.values()):
        output = hook(module, name, value)
        if output is not None:
            value = output
    return value
