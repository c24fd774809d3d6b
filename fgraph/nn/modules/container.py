"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``, ``ParameterDict``.

Children are registered under their index (``"0"``, ``"1"``...) or key, so
parameter names and ``state_dict`` keys are PyTorch's (``layers.0.weight``).

Example:
    >>> import fgraph as fg
    >>> from fgraph import nn
    >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    >>> net(fg.ones(3, 4)).shape
    (3, 2)
    >>> len(net), type(net[-1]).__name__, len(net[:2])
    (3, 'Linear', 2)
"""
from __future__ import annotations

import operator
from collections import OrderedDict
from itertools import islice
from typing import Any, Iterable, Iterator, Mapping, Optional, Union

from fgraph.nn.modules.module import Module, _indent
from fgraph.nn.parameter import Parameter, as_parameter
from fgraph.tensor import Tensor

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


class _IndexedModules(Module):
    """What ``Sequential`` and ``ModuleList`` share: children named ``"0"``, ``"1"``... in order."""

    def _key_at(self, idx: int) -> str:
        size = len(self._modules)
        idx = operator.index(idx)
        if not -size <= idx < size:
            raise IndexError(f"index {idx} is out of range for {type(self).__name__} of length {size}")
        return next(islice(self._modules.keys(), idx % size, None))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, self._key_at(idx), module)

    def __delitem__(self, idx: Union[int, slice]) -> None:
        keys = list(self._modules)[idx] if isinstance(idx, slice) else [self._key_at(idx)]
        for key in keys:
            delattr(self, key)
        self._renumber()

    def _renumber(self) -> None:
        """Keep the names ``"0"..."n-1"`` after a deletion, as PyTorch does."""
        object.__setattr__(self, "_modules", {str(i): m for i, m in enumerate(self._modules.values())})

    def append(self, module: Module) -> "_IndexedModules":
        """Add ``module`` at the end; returns ``self``."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> "_IndexedModules":
        """Append every module of ``modules``; returns ``self``."""
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> "_IndexedModules":
        """Insert ``module`` before position ``index``; returns ``self``."""
        if not isinstance(module, Module):
            raise TypeError(f"insert: expected a Module, got {type(module).__name__}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"insert: index {index} is out of range for length {n}")
        index = index + n if index < 0 else index
        for i in range(n, index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module
        return self

    def pop(self, key: Union[int, slice]) -> Any:
        """Remove and return the module(s) at ``key``."""
        value = self[key]
        del self[key]
        return value

    def __dir__(self) -> list[str]:
        return [k for k in super().__dir__() if not k.isdigit()]


class Sequential(_IndexedModules):
    """Modules called one after the other: ``Sequential(m0, m1, ...)`` or ``Sequential(OrderedDict(name=m))``.

    Example:
        >>> import fgraph as fg
        >>> net = fg.nn.Sequential(fg.nn.Linear(2, 2), fg.nn.Tanh())
        >>> net.append(fg.nn.Linear(2, 1))(fg.ones(5, 2)).shape
        (5, 1)
    """

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def __getitem__(self, idx: Union[int, slice]) -> Any:
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return self._modules[self._key_at(idx)]

    def __add__(self, other: "Sequential") -> "Sequential":
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        return Sequential(*self, *other)

    def __iadd__(self, other: "Sequential") -> "Sequential":
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        return self.extend(list(other))

    def __mul__(self, other: int) -> "Sequential":
        if not isinstance(other, int) or isinstance(other, bool):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        return Sequential(*(list(self) * other))

    __rmul__ = __mul__

    def forward(self, input: Any) -> Any:
        for module in self._modules.values():
            input = module(input)
        return input


class ModuleList(_IndexedModules):
    """A list of modules, registered as children (``layers.0.weight``); it has no ``forward``.

    Example:
        >>> import fgraph as fg
        >>> layers = fg.nn.ModuleList([fg.nn.Linear(2, 2) for _ in range(3)])
        >>> len(list(layers.parameters()))
        6
    """

    def __init__(self, modules: Optional[Iterable[Module]] = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx: Union[int, slice]) -> Any:
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[self._key_at(idx)]

    def __iadd__(self, modules: Iterable[Module]) -> "ModuleList":
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> "ModuleList":
        return ModuleList([*self, *other])

    def __repr__(self) -> str:
        """PyTorch's compressed form: a run of identical modules prints once as ``(0-2): 3 x Linear(...)``."""
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        blocks: list = []  # [start, end, repr]
        for i, r in enumerate(reprs):
            if blocks and blocks[-1][2] == r:
                blocks[-1][1] = i
            else:
                blocks.append([i, i, r])
        lines = [_indent(f"({s}): {r}" if s == e else f"({s}-{e}): {e - s + 1} x {r}", 2) for s, e, r in blocks]
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of modules, registered as children under their keys.

    Example:
        >>> import fgraph as fg
        >>> heads = fg.nn.ModuleDict({"a": fg.nn.Linear(2, 1), "b": fg.nn.Linear(2, 3)})
        >>> heads["b"](fg.ones(2)).shape, list(heads)
        ((3,), ['a', 'b'])
    """

    def __init__(self, modules: Optional[Union[Mapping[str, Module], Iterable[tuple[str, Module]]]] = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def keys(self) -> Iterable[str]:
        return self._modules.keys()

    def values(self) -> Iterable[Module]:
        return self._modules.values()

    def items(self) -> Iterable[tuple[str, Module]]:
        return self._modules.items()

    def pop(self, key: str) -> Module:
        module = self[key]
        del self[key]
        return module

    def clear(self) -> None:
        self._modules.clear()

    def update(self, modules: Union[Mapping[str, Module], Iterable[tuple[str, Module]]]) -> None:
        """Add modules from a mapping or an iterable of ``(key, module)`` pairs."""
        items = modules.items() if isinstance(modules, Mapping) else modules
        for j, item in enumerate(items):
            if isinstance(modules, Mapping):
                key, module = item
            else:
                if not isinstance(item, (tuple, list)) or len(item) != 2:
                    raise ValueError(f"ModuleDict update sequence element #{j} should be a (key, module) pair")
                key, module = item
            self[key] = module


class ParameterList(Module):
    """A list of Parameters registered under their index; tensors are made Parameters.

    Example:
        >>> import fgraph as fg
        >>> ps = fg.nn.ParameterList([fg.ones(2), fg.zeros(3)])
        >>> [(n, p.shape) for n, p in ps.named_parameters()]
        [('0', (2,)), ('1', (3,))]
    """

    def __init__(self, values: Optional[Iterable[Any]] = None) -> None:
        super().__init__()
        if values is not None:
            self.extend(values)

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[Parameter]:
        return iter(self._parameters.values())

    def __getitem__(self, idx: Union[int, slice]) -> Any:
        if isinstance(idx, slice):
            return ParameterList(list(self._parameters.values())[idx])
        n = len(self)
        idx = operator.index(idx)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range for ParameterList of length {n}")
        return self._parameters[str(idx % n)]

    def __setitem__(self, idx: int, value: Any) -> None:
        n = len(self)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range for ParameterList of length {n}")
        self.register_parameter(str(idx % n), _parameter(value))

    def append(self, value: Any) -> "ParameterList":
        self.register_parameter(str(len(self)), _parameter(value))
        return self

    def extend(self, values: Iterable[Any]) -> "ParameterList":
        for value in values:
            self.append(value)
        return self

    def __iadd__(self, values: Iterable[Any]) -> "ParameterList":
        return self.extend(values)

    def extra_repr(self) -> str:
        return "\n".join(f"  ({i}): Parameter containing: [{p.dtype} of size {'x'.join(map(str, p.shape))}]"
                         for i, p in enumerate(self))


class ParameterDict(Module):
    """An ordered dict of Parameters registered under their keys; tensors are made Parameters.

    Example:
        >>> import fgraph as fg
        >>> pd = fg.nn.ParameterDict({"scale": fg.ones(1)})
        >>> list(pd.state_dict())
        ['scale']
    """

    def __init__(self, parameters: Optional[Union[Mapping[str, Any], Iterable[tuple[str, Any]]]] = None) -> None:
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Parameter:
        return self._parameters[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.register_parameter(key, _parameter(value))

    def __delitem__(self, key: str) -> None:
        self._drop_parameter(key)

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[str]:
        return iter(self._parameters)

    def __contains__(self, key: object) -> bool:
        return key in self._parameters

    def keys(self) -> Iterable[str]:
        return self._parameters.keys()

    def values(self) -> Iterable[Parameter]:
        return self._parameters.values()

    def items(self) -> Iterable[tuple[str, Parameter]]:
        return self._parameters.items()

    def get(self, key: str, default: Any = None) -> Any:
        return self._parameters.get(key, default)

    def pop(self, key: str) -> Parameter:
        value = self[key]
        del self[key]
        return value

    def update(self, parameters: Union[Mapping[str, Any], Iterable[tuple[str, Any]]]) -> None:
        items = parameters.items() if isinstance(parameters, Mapping) else parameters
        for key, value in items:
            self[key] = value

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): Parameter containing: [{p.dtype} of size {'x'.join(map(str, p.shape))}]"
                         for k, p in self.items())


def _parameter(value: Any) -> Parameter:
    if isinstance(value, Parameter):
        return value
    if not isinstance(value, Tensor):
        raise TypeError(f"expected a Parameter or Tensor, got {type(value).__name__}")
    return as_parameter(value, None)
