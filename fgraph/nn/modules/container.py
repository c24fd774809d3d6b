"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``, ``ParameterDict``.

Children are registered under their index (``"0"``, ``"1"``...) or key, so
parameter names and ``state_dict`` keys are PyTorch's (``layers.0.weight``).
``ModuleDict`` and ``ParameterDict`` are registered ``collections.abc.MutableMapping``
types, ``ModuleList`` and ``ParameterList`` ``collections.abc.Sequence`` types (virtual
subclasses: a module keeps identity equality and stays hashable). The parameter
containers live in ``container_params.py`` and are re-exported here.

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
from collections.abc import Iterable as _IterableABC
from collections.abc import Mapping as _MappingABC
from collections.abc import MutableMapping, Sequence as _SequenceABC
from itertools import islice
from typing import Any, ItemsView, Iterable, Iterator, KeysView, Mapping, Optional, Union, ValuesView

from fgraph.nn.modules.container_params import ParameterDict, ParameterList
from fgraph.nn.modules.module import Module, _indent

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

    def __contains__(self, module: object) -> bool:
        return any(m is module for m in self._modules.values())

    def __reversed__(self) -> Iterator[Module]:
        return reversed(list(self._modules.values()))

    def index(self, module: Module, start: int = 0, stop: Optional[int] = None) -> int:
        """Position of ``module`` (by identity), as ``list.index``."""
        values = list(self._modules.values())
        for i in range(len(values))[start:stop]:
            if values[i] is module:
                return i
        raise ValueError(f"{type(module).__name__} module is not in the ModuleList")

    def count(self, module: Module) -> int:
        """How many times ``module`` (by identity) is in the list."""
        return sum(m is module for m in self._modules.values())

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


_MISSING = object()


class ModuleDict(Module):
    """An ordered dict of modules, registered as children under their keys.

    It is a ``collections.abc.MutableMapping`` (``update`` takes another ``ModuleDict``,
    any mapping in its own order, or ``(key, module)`` pairs). Unlike ``ParameterDict``,
    a plain ``dict`` keeps its order, as in PyTorch.

    Example:
        >>> import fgraph as fg
        >>> heads = fg.nn.ModuleDict({"a": fg.nn.Linear(2, 1), "b": fg.nn.Linear(2, 3)})
        >>> heads["b"](fg.ones(2)).shape, list(heads)
        ((3,), ['a', 'b'])
        >>> more = fg.nn.ModuleDict({"c": fg.nn.ReLU()})
        >>> more.update(heads); list(more)
        ['c', 'a', 'b']
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

    def __reversed__(self) -> Iterator[str]:
        return reversed(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def keys(self) -> KeysView[str]:
        """The keys, in insertion order."""
        return self._modules.keys()

    def values(self) -> ValuesView[Module]:
        """The modules, in insertion order."""
        return self._modules.values()

    def items(self) -> ItemsView[str, Module]:
        """``(key, module)`` pairs, in insertion order."""
        return self._modules.items()

    def get(self, key: str, default: Any = None) -> Any:
        """The module under ``key``, or ``default``."""
        return self._modules.get(key, default)

    def pop(self, key: str, default: Any = _MISSING) -> Any:
        """Remove ``key`` and return its module (``default`` if given and ``key`` is absent)."""
        if key not in self._modules and default is not _MISSING:
            return default
        module = self[key]
        del self[key]
        return module

    def popitem(self) -> tuple[str, Module]:
        """Remove and return the last inserted ``(key, module)`` pair."""
        if not self._modules:
            raise KeyError("popitem(): ModuleDict is empty")
        key = next(reversed(self._modules))
        return key, self.pop(key)

    def setdefault(self, key: str, default: Optional[Module] = None) -> Optional[Module]:
        """The module under ``key``; if absent, first insert ``default`` there."""
        if key not in self._modules:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()

    def update(self, modules: Union[Mapping[str, Module], Iterable[tuple[str, Module]]]) -> None:
        """Add (or replace) modules from a mapping (a ``ModuleDict`` too) or from ``(key, module)`` pairs."""
        if not isinstance(modules, _IterableABC):
            raise TypeError(
                "ModuleDict.update should be called with an iterable of key/value pairs, but got "
                f"{type(modules).__name__}; pass a mapping or a list of (key, module) pairs."
            )
        if isinstance(modules, _MappingABC):
            for key, module in modules.items():
                self[key] = module
            return
        for j, item in enumerate(modules):
            if not isinstance(item, _IterableABC) or isinstance(item, Module):
                raise TypeError(
                    f"ModuleDict update sequence element #{j} should be Iterable; is {type(item).__name__}: "
                    "pass (key, module) pairs, e.g. update([('relu', ReLU())])."
                )
            item = list(item)
            if len(item) != 2:
                raise ValueError(
                    f"ModuleDict update sequence element #{j} has length {len(item)}; 2 is required "
                    "(a (key, module) pair)."
                )
            self[item[0]] = item[1]


MutableMapping.register(ModuleDict)
_SequenceABC.register(ModuleList)
