"""Parameter containers: ``ParameterList`` (a sequence) and ``ParameterDict`` (a mutable mapping).

Both register their entries as the module's own parameters (``"0"``, ``"1"``... or
the key), so ``named_parameters`` and ``state_dict`` keys are PyTorch's. A Tensor put
in is made a Parameter; ``None`` is kept as a declared but absent entry. Re-exported
by ``fgraph.nn.modules.container`` and ``fgraph.nn``.

Example:
    >>> import fgraph as fg
    >>> pl = fg.nn.ParameterList([fg.ones(2)])
    >>> pl.append(fg.zeros(3))[1].shape, isinstance(pl[0], fg.nn.Parameter)
    ((3,), True)
"""
from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable as _IterableABC
from collections.abc import Mapping as _MappingABC
from collections.abc import MutableMapping, Sequence as _SequenceABC
from typing import Any, ItemsView, Iterable, Iterator, KeysView, Mapping, Optional, Union, ValuesView

from fgraph.nn.modules.module import Module
from fgraph.nn.parameter import Parameter, as_parameter
from fgraph.tensor import Tensor

__all__ = ["ParameterList", "ParameterDict"]

_MISSING = object()


class ParameterList(Module):
    """A list of Parameters registered under their index; tensors are made Parameters.

    A ``collections.abc.Sequence``: ``len``, iteration, ``reversed``, ``in``, ``index`` and
    ``count`` (by identity: a tensor's ``==`` is elementwise). ``extend``/``+=`` take an
    iterable of tensors; a lone tensor raises ``TypeError`` (use ``append``).

    Example:
        >>> import fgraph as fg
        >>> ps = fg.nn.ParameterList([fg.ones(2), fg.zeros(3)])
        >>> [(n, p.shape) for n, p in ps.named_parameters()]
        [('0', (2,)), ('1', (3,))]
        >>> ps[fg.tensor(1)] = fg.ones(4); ps[1].shape
        (4,)
    """

    def __init__(self, values: Optional[Iterable[Any]] = None) -> None:
        super().__init__()
        if values is not None:
            self.extend(values)

    def _abs_index(self, idx: Any) -> str:
        """The key of position ``idx`` (an int, or anything with ``__index__`` such as a 0-d integer tensor)."""
        n = len(self)
        idx = operator.index(idx)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range for ParameterList of length {n}")
        return str(idx % n)

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[Optional[Parameter]]:
        return iter(list(self._parameters.values()))

    def __reversed__(self) -> Iterator[Optional[Parameter]]:
        return reversed(list(self._parameters.values()))

    def __contains__(self, value: object) -> bool:
        return any(p is value for p in self._parameters.values())

    def index(self, value: Any, start: int = 0, stop: Optional[int] = None) -> int:
        """Position of ``value`` (by identity), as ``list.index``."""
        values = list(self._parameters.values())
        for i in range(len(values))[start:stop]:
            if values[i] is value:
                return i
        raise ValueError("the value is not in the ParameterList (entries are compared by identity)")

    def count(self, value: Any) -> int:
        """How many times ``value`` (by identity) is in the list."""
        return sum(p is value for p in self._parameters.values())

    def __getitem__(self, idx: Union[int, slice]) -> Any:
        if isinstance(idx, slice):
            out = type(self)()
            for p in list(self._parameters.values())[idx]:
                out.append(p)
            return out
        return self._parameters[self._abs_index(idx)]

    def __setitem__(self, idx: int, value: Any) -> None:
        self.register_parameter(self._abs_index(idx), _parameter(value, "ParameterList"))

    def append(self, value: Any) -> "ParameterList":
        """Add ``value`` (a Parameter or Tensor) at the end; returns ``self``."""
        self.register_parameter(str(len(self)), _parameter(value, "ParameterList"))
        return self

    def extend(self, values: Iterable[Any]) -> "ParameterList":
        """Append every entry of the iterable ``values``; returns ``self``. A lone tensor raises ``TypeError``."""
        if isinstance(values, Tensor) or not isinstance(values, _IterableABC):
            raise TypeError(
                f"ParameterList.extend should be called with an iterable, but got {type(values).__name__}; "
                "to add one tensor use append(t), or extend([t])."
            )
        for value in list(values):
            self.append(value)
        return self

    def __iadd__(self, values: Iterable[Any]) -> "ParameterList":
        return self.extend(values)

    def __dir__(self) -> list[str]:
        return [k for k in super().__dir__() if not k.isdigit()]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterList should not be called.")

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): {_describe(p)}" for k, p in enumerate(self))


class ParameterDict(Module):
    """An ordered dict of Parameters registered under their keys; tensors are made Parameters.

    A ``collections.abc.MutableMapping`` with PyTorch's methods (``copy``, ``get``,
    ``pop``, ``popitem``, ``setdefault``, ``fromkeys``, ``clear``, ``update``, ``|``,
    ``|=``, ``reversed``). As in PyTorch, a plain ``dict`` (any mapping other than an
    ``OrderedDict`` or a ``ParameterDict``) is added in **sorted key order**; an
    ``OrderedDict``, a ``ParameterDict`` or a list of pairs keeps its order.

    Example:
        >>> import fgraph as fg
        >>> pd = fg.nn.ParameterDict({"scale": fg.ones(1), "bias": fg.zeros(1)})
        >>> list(pd.state_dict())
        ['bias', 'scale']
        >>> list(pd | fg.nn.ParameterDict([("a", fg.ones(2))]))
        ['bias', 'scale', 'a']
    """

    def __init__(self, parameters: Optional[Union[Mapping[str, Any], Iterable[tuple[str, Any]]]] = None) -> None:
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Any:
        return self._parameters[_key(key)]

    def __setitem__(self, key: str, value: Any) -> None:
        self.register_parameter(_key(key), _parameter(value, "ParameterDict"))

    def __delitem__(self, key: str) -> None:
        if _key(key) not in self._parameters:
            raise KeyError(key)
        self._drop_parameter(key)

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._parameters))

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._parameters))

    def __contains__(self, key: object) -> bool:
        return key in self._parameters

    def keys(self) -> KeysView[str]:
        """The keys, in order."""
        return self._parameters.keys()

    def values(self) -> ValuesView[Any]:
        """The parameters, in key order."""
        return self._parameters.values()

    def items(self) -> ItemsView[str, Any]:
        """``(key, parameter)`` pairs, in order."""
        return self._parameters.items()

    def get(self, key: str, default: Any = None) -> Any:
        """The parameter under ``key``, or ``default``."""
        return self._parameters.get(key, default)

    def copy(self) -> "ParameterDict":
        """A new ``ParameterDict`` holding the same Parameters, in the same order."""
        return ParameterDict(OrderedDict(self._parameters.items()))

    def setdefault(self, key: str, default: Any = None) -> Any:
        """The parameter under ``key``; if absent, first insert ``default`` (made a Parameter) there."""
        if key not in self:
            self[key] = default
        return self[key]

    def pop(self, key: str, default: Any = _MISSING) -> Any:
        """Remove ``key`` and return its parameter (``default`` if given and ``key`` is absent)."""
        if key not in self._parameters and default is not _MISSING:
            return default
        value = self[key]
        del self[key]
        return value

    def popitem(self) -> tuple[str, Any]:
        """Remove and return the last inserted ``(key, parameter)`` pair."""
        if not self._parameters:
            raise KeyError("popitem(): ParameterDict is empty")
        key = next(reversed(self._parameters))
        return key, self.pop(key)

    def clear(self) -> None:
        """Remove every parameter."""
        for key in list(self._parameters):
            del self[key]

    @classmethod
    def fromkeys(cls, keys: Iterable[str], default: Any = None) -> "ParameterDict":
        """A new ``ParameterDict`` with ``keys`` (in their order), each holding ``default``."""
        return ParameterDict([(k, default) for k in keys])

    def update(self, parameters: Union[Mapping[str, Any], Iterable[tuple[str, Any]]]) -> None:
        """Add (or replace) entries from a mapping or from ``(key, value)`` pairs.

        A plain ``dict`` is added in sorted key order (PyTorch's rule); an ``OrderedDict``,
        a ``ParameterDict`` or a sequence of pairs keeps its order.
        """
        if not isinstance(parameters, _IterableABC):
            raise TypeError(
                "ParametersDict.update should be called with an iterable of key/value pairs, but got "
                f"{type(parameters).__name__}; pass a mapping or a list of (key, tensor) pairs."
            )
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            items = list(parameters.items())
        elif isinstance(parameters, _MappingABC):
            items = sorted(parameters.items(), key=lambda kv: kv[0])
        else:
            items = []
            for j, pair in enumerate(parameters):
                if not isinstance(pair, _IterableABC):
                    raise TypeError(
                        f"ParameterDict update sequence element #{j} should be Iterable; is {type(pair).__name__}: "
                        "pass (key, tensor) pairs."
                    )
                if len(pair) != 2:
                    raise ValueError(
                        f"ParameterDict update sequence element #{j} has length {len(pair)}; 2 is required "
                        "(a (key, tensor) pair)."
                    )
                items.append((pair[0], pair[1]))
        for key, value in items:
            self[key] = value

    def __or__(self, other: "ParameterDict") -> "ParameterDict":
        out = self.copy()
        out.update(other)
        return out

    def __ror__(self, other: Any) -> Any:
        out = other.copy()
        out.update(self)
        return out

    def __ior__(self, other: Any) -> "ParameterDict":
        self.update(other)
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterDict should not be called.")

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): {_describe(p)}" for k, p in self.items())


MutableMapping.register(ParameterDict)
_SequenceABC.register(ParameterList)


def _key(key: Any) -> str:
    if not isinstance(key, str):
        raise TypeError(
            "Index given to ParameterDict cannot be used as a key as it is not a string "
            f"(type is '{type(key).__name__}'); use a string key, e.g. pd[str(key)]."
        )
    return key


def _describe(p: Any) -> str:
    if p is None:
        return "Object of type: NoneType"
    return f"Parameter containing: [{p.dtype} of size {'x'.join(map(str, p.shape))}]"


def _parameter(value: Any, where: str) -> Optional[Parameter]:
    if value is None or isinstance(value, Parameter):
        return value
    if not isinstance(value, Tensor):
        raise TypeError(
            f"{where} holds Parameters: expected a Parameter or Tensor, got {type(value).__name__}; "
            "convert it first, e.g. fg.tensor(value)."
        )
    return as_parameter(value, None)
