"""``Module``: PyTorch's ``nn.Module`` over immutable fgraph tensors.

A Module registers :class:`~fgraph.nn.Parameter`\\ s, buffers and submodules when
they are assigned as attributes, and calls ``forward`` through PyTorch's call
path (``__call__``):

* no hook registered on the module or globally: ``forward`` is called directly
  (the fast path);
* otherwise: global then module forward pre-hooks (may replace the arguments),
  full backward hooks set up around ``forward``, ``forward``, global then module
  forward hooks (may replace the output; ``always_call`` hooks run even when
  ``forward`` raises).

Parameters are immutable leaves: whatever changes them (an optimizer step,
``load_state_dict``, ``to``, ``requires_grad_``) makes new Parameters and rebinds
them on every module that holds the old ones, so tied parameters stay tied.
Gradients are returned by ``fg.backward``/``fg.grad``, never stored, so there is
no ``zero_grad``.

Example:
    >>> import fgraph as fg
    >>> from fgraph import nn
    >>> class MLP(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc1 = nn.Linear(3, 4)
    ...         self.fc2 = nn.Linear(4, 1)
    ...     def forward(self, x):
    ...         return self.fc2(fg.relu(self.fc1(x)))
    >>> model = MLP()
    >>> [name for name, _ in model.named_parameters()]
    ['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias']
    >>> grads = model(fg.ones(2, 3)).sum().backward()
    >>> grads[model.fc1.weight].shape
    (4, 3)
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Iterator, Optional, TypeVar

import jax
import numpy as np

from fgraph.nn.modules._hooks import (  # noqa: F401  (re-exported: torch's fgraph.nn.modules.module names)
    _HOOK_DICTS,
    HookMixin,
    rebind_wrapped_hooks,
    _global_backward_hooks,
    _global_backward_pre_hooks,
    _global_forward_hooks,
    _global_forward_pre_hooks,
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
)
from fgraph.nn.modules._pytree import register as register_pytree
from fgraph.nn.modules._state_dict import StateDictMixin, _IncompatibleKeys  # noqa: F401
from fgraph.nn.modules._registration_hooks import (  # noqa: F401  (torch's fgraph.nn.modules.module names)
    _global_buffer_registration_hooks,
    _global_module_registration_hooks,
    _global_parameter_registration_hooks,
    register_module_buffer_registration_hook,
    register_module_module_registration_hook,
    register_module_parameter_registration_hook,
)
from fgraph.nn.modules._registration_hooks import _run as _run_registration_hooks
from fgraph.nn.parameter import Buffer, Parameter, _make_parameter, placed, rebind, track, untrack
from fgraph.tensor import Tensor, _wrap

__all__ = [
    "Module",
    "register_module_forward_pre_hook",
    "register_module_forward_hook",
    "register_module_full_backward_pre_hook",
    "register_module_full_backward_hook",
    "register_module_buffer_registration_hook",
    "register_module_module_registration_hook",
    "register_module_parameter_registration_hook",
]

T = TypeVar("T", bound="Module")

class Module(StateDictMixin, HookMixin):
    """Base class of every layer and model (``torch.nn.Module``).

    Subclass it, call ``super().__init__()`` first, assign parameters, buffers and
    submodules as attributes, and define ``forward``. See the module docstring.
    """

    training: bool
    _parameters: dict
    _buffers: dict
    _modules: dict
    call_super_init: bool = False

    _version: int = 1  # torch's: saved in state_dict()._metadata, read back by _load_from_state_dict

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # torch: with ``call_super_init = True`` (a class attribute) the arguments go on to the next
        # ``__init__`` in the MRO (cooperative multiple inheritance); otherwise there must be none.
        if self.call_super_init is False and kwargs:
            raise TypeError(
                f"{type(self).__name__}.__init__() got an unexpected keyword argument '{next(iter(kwargs))}' "
                "(Module.__init__ takes no arguments: call super().__init__(), or set the class attribute "
                "call_super_init = True to pass them on to the next base class)"
            )
        if self.call_super_init is False and args:
            raise TypeError(
                f"{type(self).__name__}.__init__() takes 1 positional argument but {len(args) + 1} were given "
                "(call super().__init__() with no arguments, or set the class attribute call_super_init = True)"
            )
        setter = object.__setattr__
        setter(self, "training", True)
        setter(self, "_parameters", {})
        setter(self, "_buffers", {})
        setter(self, "_non_persistent_buffers_set", set())
        setter(self, "_modules", {})
        for name in _HOOK_DICTS:
            setter(self, name, OrderedDict())
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        register_pytree(cls)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation; every subclass defines it. Call the module, not ``forward``, so hooks run."""
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # -- the call path (the slow path with hooks is HookMixin._call_impl) ------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if (self._forward_pre_hooks or self._forward_hooks or self._backward_pre_hooks or self._backward_hooks
                or _global_forward_pre_hooks or _global_forward_hooks or _global_backward_pre_hooks
                or _global_backward_hooks):
            return self._call_impl(args, kwargs)
        return self.forward(*args, **kwargs)

    # -- registration ----------------------------------------------------------------------------
    def register_parameter(self, name: str, param: Optional[Parameter]) -> None:
        """Add a parameter (or ``None``: a declared but absent parameter, like ``bias=False``)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type(param).__name__}' object to parameter '{name}' (fgraph.nn.Parameter or None "
                "required); wrap it: fg.nn.Parameter(tensor)."
            )
        if param is not None and _global_parameter_registration_hooks:  # torch: not for None
            param = _run_registration_hooks(_global_parameter_registration_hooks, self, name, param)
            if param is not None and not isinstance(param, Parameter):
                raise TypeError(
                    f"a parameter registration hook returned '{type(param).__name__}' for parameter '{name}'; "
                    "it must return None or an fgraph.nn.Parameter"
                )
        old = self._parameters.get(name)
        if isinstance(old, Parameter):
            untrack(old, self, name)
        self._parameters[name] = param
        if param is not None:
            track(param, self, name)

    def register_buffer(self, name: str, tensor: Optional[Tensor], persistent: bool = True) -> None:
        """Add a buffer: a tensor that is state but not a parameter (running statistics).

        ``persistent=False`` leaves it out of ``state_dict``. Reassigning the attribute
        (``self.running_mean = new``) rebinds the buffer.
        """
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (fgraph Tensor or None required)"
            )
        if _global_buffer_registration_hooks:
            tensor = _run_registration_hooks(_global_buffer_registration_hooks, self, name, tensor)
        # a plain value: commit it (see nn.parameter.placed)
        if tensor is not None and isinstance(tensor, Tensor) and tensor._edge is None:
            data = placed(tensor._array)
            if data is not tensor._array or isinstance(tensor, Buffer):
                tensor = _wrap(data)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Optional["Module"]) -> None:
        """Add a child module (``None`` keeps the name with no module)."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        _check_name(name, "module")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if _global_module_registration_hooks:
            module = _run_registration_hooks(_global_module_registration_hooks, self, name, module)
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            _remove_from(name, d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' (fgraph.nn.Parameter or None "
                    "expected); wrap the tensor: fg.nn.Parameter(value)."
                )
            self.register_parameter(name, None)
        elif isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._drop_parameter(name)
            _remove_from(name, d, self._buffers, self._non_persistent_buffers_set)
            if _global_module_registration_hooks:
                value = _run_registration_hooks(_global_module_registration_hooks, self, name, value)
            self._modules[name] = value
        elif params is not None and name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' (Module or None expected)")
            if _global_module_registration_hooks:
                value = _run_registration_hooks(_global_module_registration_hooks, self, name, value)
            self._modules[name] = value
        elif isinstance(value, Buffer) or (params is not None and name in self._buffers):
            if params is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' (fgraph Tensor or None expected)")
            persistent = value.persistent if isinstance(value, Buffer) else name not in self._non_persistent_buffers_set
            # torch removes nothing here: a plain attribute of that name makes register_buffer raise KeyError
            self.register_buffer(name, value, persistent)
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            entries = d.get(table)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def _drop_parameter(self, name: str) -> None:
        old = self._parameters.pop(name, None)
        if isinstance(old, Parameter):
            untrack(old, self, name)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            self._drop_parameter(name)
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        keys = set(dir(type(self))) | set(self.__dict__) | set(self._parameters) | set(self._buffers)
        keys |= set(self._modules)
        return sorted(k for k in keys if not k[0].isdigit())

    def __setstate__(self, state: dict) -> None:
        """Restore from ``pickle``/``copy``/``deepcopy``: the parameters learn their new owner, hooks
        registered with ``with_module`` point at this module, missing tables are made (older pickles)."""
        self.__dict__.update(state)
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            d.setdefault(table, {})
        d.setdefault("_non_persistent_buffers_set", set())
        d.setdefault("training", True)
        for name in _HOOK_DICTS:
            d.setdefault(name, OrderedDict())
        for name, p in self._parameters.items():
            if isinstance(p, Parameter):
                track(p, self, name)
        rebind_wrapped_hooks(self)

    # -- iteration -------------------------------------------------------------------------------
    def named_modules(self, memo: Optional[set] = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, "Module"]]:
        """``(name, module)`` for this module and every submodule, depth first (PyTorch's order).

        A module reachable twice is listed once unless ``remove_duplicate=False``.
        """
        seen = set() if memo is None else memo
        stack: list = [(prefix, self)]
        while stack:
            name, module = stack.pop()
            if remove_duplicate:
                if module in seen:
                    continue
                seen.add(module)
            yield name, module
            children = [(name + ("." if name else "") + k, m) for k, m in module._modules.items() if m is not None]
            stack.extend(reversed(children))

    def modules(self) -> Iterator["Module"]:
        """This module and every submodule (each once)."""
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        """``(name, module)`` for the direct submodules (each once)."""
        seen = set()
        for name, module in self._modules.items():
            if module is not None and module not in seen:
                seen.add(module)
                yield name, module

    def children(self) -> Iterator["Module"]:
        """The direct submodules."""
        for _, module in self.named_children():
            yield module

    def _named_members(self, table: str, prefix: str, recurse: bool,
                       remove_duplicate: bool) -> Iterator[tuple[str, Tensor]]:
        seen: set = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in getattr(module, table).items():
                if value is None or id(value) in seen:
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield module_prefix + ("." if module_prefix else "") + name, value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """``(name, parameter)`` in PyTorch's order; a tied parameter is listed once (first name)."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The parameters, each once (what an optimizer takes)."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """``(name, buffer)`` in PyTorch's order (persistent or not)."""
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """The buffers, each once."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target: str) -> "Module":
        """The submodule at a dotted path (``"encoder.layers.0"``); ``""`` is this module."""
        if target == "":
            return self
        module: Module = self
        for item in target.split("."):
            if item not in module._modules:
                raise AttributeError(f"{type(module).__name__} has no attribute `{item}` (looking up {target!r})")
            module = module._modules[item]
            if not isinstance(module, Module):
                raise AttributeError(f"`{item}` is not an nn.Module (looking up {target!r})")
        return module

    def set_submodule(self, target: str, module: "Module", strict: bool = False) -> None:
        """Put ``module`` at the dotted path ``target``, replacing a submodule there or (``strict=False``)
        adding a new one under an existing parent.

        Raises ``ValueError`` for an empty ``target`` or a non-Module ``module``; ``AttributeError`` when
        the parent path does not exist, when ``strict=True`` and there is nothing to replace, or when
        the name is taken by something that is not a Module.

        Example:
            >>> import fgraph as fg
            >>> net = fg.nn.Sequential(fg.nn.Linear(2, 2), fg.nn.ReLU())
            >>> net.set_submodule("1", fg.nn.Tanh())
            >>> net
            Sequential(
              (0): Linear(in_features=2, out_features=2, bias=True)
              (1): Tanh()
            )
        """
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}` (set_submodule with "
                                 "strict=True only replaces existing submodules; pass strict=False to add one)")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at a dotted path (``"fc1.weight"``)."""
        return self._get_member(target, "_parameters", "nn.Parameter")

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at a dotted path (``"bn.running_mean"``)."""
        return self._get_member(target, "_buffers", "buffer")

    def _get_member(self, target: str, table: str, what: str) -> Any:
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        entries = getattr(module, table)
        if name not in entries:
            raise AttributeError(f"{type(module).__name__} has no {what} `{name}` (looking up {target!r})")
        return entries[name]

    # -- modes and conversions --------------------------------------------------------------------
    def train(self: T, mode: bool = True) -> T:
        """Set training mode on this module and every submodule (dropout, batch norm). Returns ``self``."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        object.__setattr__(self, "training", mode)
        for module in self.children():
            module.train(mode)
        return self

    def eval(self: T) -> T:
        """``train(False)``."""
        return self.train(False)

    def requires_grad_(self: T, requires_grad: bool = True) -> T:
        """Rebind every parameter as one with ``requires_grad`` (``False`` freezes: no gradient). Returns ``self``.

        Example:
            >>> import fgraph as fg
            >>> lin = fg.nn.Linear(2, 2).requires_grad_(False)
            >>> [p.requires_grad for p in lin.parameters()]
            [False, False]
        """
        if not isinstance(requires_grad, bool):
            raise TypeError(f"requires_grad_: expected a bool, got {type(requires_grad).__name__}")
        rebind({p: _make_parameter(p._array, requires_grad)
                for p in self.parameters() if p.requires_grad != requires_grad})
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Not needed in fgraph: gradients are returned by ``backward``, never stored on parameters."""
        raise RuntimeError(
            "zero_grad: fgraph has no .grad to zero. Gradients are returned, not accumulated: "
            "`grads = loss.backward()` (or fg.backward(loss)) gives fresh gradients every step, read them as "
            "grads[param] and pass them on with opt.step(grads). Delete the zero_grad() call."
        )

    def apply(self: T, fn: Callable[["Module"], None]) -> T:
        """Call ``fn`` on every submodule, then on this module (children first). Returns ``self``."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self: T, *args: Any, **kwargs: Any) -> T:
        """Move and/or cast parameters and buffers: ``to(dtype)``, ``to(device)``, ``to(device, dtype)``,
        ``to(tensor)``. A dtype applies to floating point and complex tensors only. A device is an
        :class:`fgraph.device`, a string (``"cpu"``, ``"cuda"``, ``"cuda:1"``), a JAX device or a
        ``jax.sharding.NamedSharding``; ``non_blocking=`` is accepted. Returns ``self``.

        Example:
            >>> import fgraph as fg, jax
            >>> jax.config.update("jax_enable_x64", True)
            >>> fg.nn.Linear(2, 2).to(fg.float64).weight.dtype
            dtype('float64')
        """
        from fgraph.nn.modules._conversion import converter

        sharding = next((a for a in (*args, kwargs.get("device")) if isinstance(a, jax.sharding.NamedSharding)), None)
        if sharding is not None:  # name the tensor a spec cannot split, instead of JAX's IndivisibleError
            from fgraph.distributed._rules import check_spec

            hint = ("to split each parameter on a dimension that divides and replicate the rest, use "
                    "fg.distributed.fully_shard(module, mesh); to choose specs per name, fg.distributed.shard")
            for kind, named in (("parameter", self.named_parameters()), ("buffer", self.named_buffers())):
                for name, t in named:
                    check_spec("Module.to", f"{kind} {name!r}", t.shape, sharding.spec, sharding.mesh, hint)
        return self._apply(converter(args, kwargs))

    def float(self: T) -> T:
        """Cast floating point parameters and buffers to float32."""
        return self.to(np.float32)

    def double(self: T) -> T:
        """Cast floating point parameters and buffers to float64."""
        return self.to(np.float64)

    def half(self: T) -> T:
        """Cast floating point parameters and buffers to float16."""
        return self.to(np.float16)

    def bfloat16(self: T) -> T:
        """Cast floating point parameters and buffers to bfloat16."""
        return self.to(jax.numpy.bfloat16)

    def cpu(self: T) -> T:
        """Move parameters and buffers to the CPU."""
        return self.to("cpu")

    def cuda(self: T, device: Any = None) -> T:
        """Move parameters and buffers to a GPU (``device``: an index or a device; the current GPU by default).
        Without a GPU this raises :class:`fgraph.errors.DeviceUnavailableError`, naming the portable idiom
        ``device = "cuda" if fg.cuda.is_available() else "cpu"``."""
        from fgraph.device import device as _device

        if device is None or isinstance(device, int) and not isinstance(device, bool):
            return self.to(_device("cuda", device))
        return self.to(_device(device))

    def _apply(self: T, fn: Callable[[Any], Any]) -> T:
        """Rebind every parameter and buffer to ``fn(array)`` (parameters keep ``requires_grad`` and ties)."""
        new_params = {}
        for p in self.parameters():
            data = fn(p._array)
            if data is not p._array:
                new_params[p] = _make_parameter(data, p.requires_grad)
        rebind(new_params)
        done: dict = {}
        for module in self.modules():
            for name, b in module._buffers.items():
                if b is None:
                    continue
                if id(b) not in done:
                    data = fn(b._array)
                    done[id(b)] = b if data is b._array else _wrap(data)
                module._buffers[name] = done[id(b)]
        return self

    # -- printing --------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The module's own settings for ``repr`` (``in_features=3, out_features=4, bias=True``)."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _indent(repr(module), 2) for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        body = ""
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                body = extra_lines[0]
            else:
                body = "\n  " + "\n  ".join(lines) + "\n"
        return f"{self._get_name()}({body})"


def _indent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


def _check_name(name: Any, what: str) -> None:
    if not isinstance(name, str):
        raise TypeError(f"{what} name should be a string. Got {type(name).__name__}")
    if name == "":
        raise KeyError(f'{what} name can\'t be empty string ""')
    if "." in name:
        raise KeyError(f'{what} name can\'t contain ".", got: {name}')


def _remove_from(name: str, *tables: Any) -> None:
    for table in tables:
        if name in table:
            if isinstance(table, dict):
                del table[name]
            else:
                table.discard(name)


register_pytree(Module)
