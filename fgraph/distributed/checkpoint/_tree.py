"""A state dict as flat named arrays plus a JSON structure, and the way back into a target state dict.

Saving splits a nested ``state_dict`` into ``arrays`` (``{name: jax.Array | np.ndarray}``, the
name the dotted path of the first place an array appears) and a JSON tree holding the
containers, the plain values and, at each array's place, its name and kind (Parameter, Tensor,
JAX or NumPy array). Loading walks the *target* state dict beside that tree: each array of the
target asks for its saved array with the target's shape, dtype and sharding, and the result
replaces it in its container. Nothing here touches storage: :mod:`._storage` does.

Example:
    >>> import fgraph as fg
    >>> from fgraph.distributed.checkpoint._tree import flatten
    >>> arrays, tree = flatten({"w": fg.ones(2), "step": 3})
    >>> list(arrays), tree["dict"][1]
    (['w'], ['step', 3])
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Callable

import jax
import numpy as np

from fgraph.lazy._array import concrete
from fgraph.nn.parameter import Parameter, _make_parameter
from fgraph.serialization import CheckpointError
from fgraph.tensor import Tensor, _init_leaf, _new_object

__all__ = ["flatten", "Loader", "is_stateful"]

_PLAIN = (bool, int, float, str)
_ARRAY_TYPES = (Tensor, jax.Array, np.ndarray, np.generic)


def is_stateful(obj: Any) -> bool:
    """torch DCP's ``Stateful``: an object with ``state_dict()`` and ``load_state_dict()`` (a Module, an Optimizer)."""
    return (not isinstance(obj, (Mapping, list, tuple) + _ARRAY_TYPES)
            and callable(getattr(obj, "state_dict", None)) and callable(getattr(obj, "load_state_dict", None)))


def where(path: tuple) -> str:
    """A path as the dotted key torch DCP prints (``model.0.weight``)."""
    return ".".join(str(p) for p in path) or "<the state_dict itself>"


# -- save side -------------------------------------------------------------------------------------
def flatten(state_dict: Any) -> tuple[dict, dict]:
    """``(arrays, tree)``: every array of ``state_dict`` by name, and the JSON-able structure.

    A Stateful value (a Module, an Optimizer) is saved as its ``state_dict()``. An array
    held in several places (tied weights) is stored once.
    """
    flattener = _Flattener()
    return flattener.arrays, flattener.encode(state_dict, ())


class _Flattener:
    def __init__(self) -> None:
        self.arrays: dict[str, Any] = {}
        self.names: dict[int, str] = {}  # id(array) -> its name, so a shared array is stored once
        self.keep: list[Any] = []  # keeps those arrays alive while their ids are keys

    def encode(self, obj: Any, path: tuple) -> Any:
        if obj is None or isinstance(obj, _PLAIN):
            return obj
        if isinstance(obj, _ARRAY_TYPES):
            return self.leaf(obj, path)
        if isinstance(obj, Mapping):
            items = []
            for k, v in obj.items():
                if k is not None and not isinstance(k, _PLAIN):
                    raise TypeError(f"save: the key {k!r} under {where(path)!r} is a {type(k).__name__}; state_dict "
                                    "keys must be str, int, float, bool or None.")
                items.append([k, self.encode(v, path + (k,))])
            return {"odict" if isinstance(obj, OrderedDict) else "dict": items}
        if isinstance(obj, (list, tuple)):
            kind = "list" if isinstance(obj, list) else "tuple"
            return {kind: [self.encode(v, path + (i,)) for i, v in enumerate(obj)]}
        if is_stateful(obj):
            return self.encode(obj.state_dict(), path)
        raise TypeError(
            f"save: cannot store the {type(obj).__name__} at {where(path)!r}. A state_dict holds Tensors, JAX or NumPy "
            "arrays, dicts, lists and tuples of them, int, float, bool, str and None, and objects with "
            "state_dict()/load_state_dict() (a Module, an Optimizer)."
        )

    def leaf(self, obj: Any, path: tuple) -> dict:
        node: dict[str, Any] = {}
        data = obj
        if isinstance(obj, Tensor):
            data = concrete(obj._array)  # a value deferred dispatch holds pending runs now
            node["kind"] = "parameter" if isinstance(obj, Parameter) else "tensor"
            if obj.requires_grad:
                node["requires_grad"] = True
        elif isinstance(obj, jax.Array):
            node["kind"] = "jax"
        else:
            node["kind"] = "numpy_scalar" if isinstance(obj, np.generic) else "numpy"
            data = np.asarray(obj)
        if isinstance(data, jax.core.Tracer):
            raise TypeError(f"save: the array at {where(path)!r} is traced (inside fg.compile, jax.jit or vmap) and "
                            "has no values yet; save outside the traced function, on the tensors it returns.")
        if isinstance(data, jax.Array) and jax.dtypes.issubdtype(data.dtype, jax.dtypes.prng_key):
            node["prng_impl"] = str(jax.random.key_impl(data))
            data = jax.random.key_data(data)
        name = self.names.get(id(data))
        if name is None:
            base = name = where(path) if path else "value"
            n = 1
            while name in self.arrays:
                n += 1
                name = f"{base}#{n}"
            self.arrays[name] = data
            self.names[id(data)] = name
            self.keep.append(data)
        node.update(array=name, shape=list(data.shape), dtype=str(data.dtype))
        return node


# -- load side -------------------------------------------------------------------------------------
class Request:
    """What ``load`` asks storage for one saved array: its shape, dtype and sharding (``None``: NumPy)."""

    __slots__ = ("shape", "dtype", "sharding")

    def __init__(self, shape: tuple, dtype: Any, sharding: Any) -> None:
        self.shape, self.dtype, self.sharding = shape, dtype, sharding


Builder = Callable[[dict], Any]


class Loader:
    """Walks a target state dict beside the saved tree; collects :class:`Request` s and returns a builder.

    ``default_sharding(name)`` places arrays the target has no array for (a value the target
    does not hold yet, such as a fresh optimizer's empty ``state``).
    """

    def __init__(self, default_sharding: Callable[[str], Any], checkpoint_id: str) -> None:
        self.default_sharding = default_sharding
        self.checkpoint_id = checkpoint_id
        self.requests: dict[str, Request] = {}
        self.missing: list[str] = []

    def plan(self, target: Any, node: Any, path: tuple = ()) -> Builder:
        """A function of the restored arrays giving the loaded value for ``target`` (containers filled in place)."""
        if isinstance(target, _ARRAY_TYPES):
            return self._array(target, node, path)
        if isinstance(target, Mapping):
            return self._mapping(target, node, path)
        if isinstance(target, (list, tuple)):
            return self._sequence(target, node, path)
        if is_stateful(target):
            inner = self.plan(target.state_dict(), node, path)

            def load_into(restored: dict) -> Any:
                target.load_state_dict(inner(restored))
                return target
            return load_into
        return self.fill(node, path)  # a plain value (or None): the saved value replaces it

    def _mapping(self, target: Any, node: Any, path: tuple) -> Builder:
        saved = self._container(node, ("dict", "odict"), "a dict", path)
        if not isinstance(target, dict):
            raise TypeError(f"load: the {type(target).__name__} at {where(path)!r} cannot be filled in place; "
                            "give load a state_dict of dicts, lists and tuples.")
        by_key = {k: v for k, v in saved}
        by_text = {str(k): k for k, _ in saved}
        if not target and saved:  # an empty dict (a fresh optimizer's state): take everything the checkpoint has
            builders = [(k, self.fill(v, path + (k,))) for k, v in saved]
        else:
            builders = []
            for k in list(target):
                key = k if k in by_key else by_text.get(str(k), _MISSING)
                if key is _MISSING:
                    self.missing.append(where(path + (k,)))
                    continue
                builders.append((k, self.plan(target[k], by_key[key], path + (k,))))

        def build(restored: dict) -> Any:
            for k, b in builders:
                target[k] = b(restored)
            return target
        return build

    def _sequence(self, target: Any, node: Any, path: tuple) -> Builder:
        saved = self._container(node, ("list", "tuple"), "a list or tuple", path)
        if len(saved) != len(target):
            raise CheckpointError(f"load: {where(path)!r} has {len(saved)} entries in {self.checkpoint_id!r}, the "
                                  f"state_dict's {len(target)}.")
        builders = [self.plan(t, v, path + (i,)) for i, (t, v) in enumerate(zip(target, saved))]
        if isinstance(target, list):
            def build_list(restored: dict) -> Any:
                target[:] = [b(restored) for b in builders]
                return target
            return build_list
        if hasattr(target, "_fields"):  # a namedtuple takes its fields one by one
            return lambda restored: type(target)(*(b(restored) for b in builders))
        return lambda restored: type(target)(b(restored) for b in builders)

    def _container(self, node: Any, kinds: tuple, what: str, path: tuple) -> list:
        if isinstance(node, dict) and len(node) == 1 and next(iter(node)) in kinds:
            return next(iter(node.values()))
        raise CheckpointError(f"load: the state_dict holds {what} at {where(path)!r}, {self.checkpoint_id!r} holds "
                              f"{_describe(node)} there.")

    def _array(self, target: Any, node: Any, path: tuple) -> Builder:
        if not (isinstance(node, dict) and "array" in node):
            raise CheckpointError(f"load: the state_dict holds an array at {where(path)!r}, {self.checkpoint_id!r} "
                                  f"holds {_describe(node)} there.")
        data = concrete(target._array) if isinstance(target, Tensor) else target
        if isinstance(data, jax.core.Tracer):
            raise TypeError(f"load: the target at {where(path)!r} is traced (inside fg.compile, jax.jit or vmap); load "
                            "into concrete tensors, outside the traced function.")
        is_key = isinstance(data, jax.Array) and jax.dtypes.issubdtype(data.dtype, jax.dtypes.prng_key)
        if is_key:
            data = jax.random.key_data(data)
        shape = tuple(np.shape(data))
        if shape != tuple(node["shape"]):
            raise CheckpointError(
                f"load: {where(path)!r} has shape {tuple(node['shape'])} in {self.checkpoint_id!r}, the state_dict's "
                f"has shape {shape}. Build the model (and optimizer) with the sizes it was saved with."
            )
        host = isinstance(data, (np.ndarray, np.generic))
        sharding = None if host else data.sharding
        self._request(node["array"], Request(shape, np.asarray(data).dtype if host else data.dtype, sharding))
        name, impl = node["array"], node.get("prng_impl")

        def build(restored: dict) -> Any:
            array = restored[name]
            if sharding is not None and array.sharding != sharding:  # a tied entry asked with another sharding
                array = jax.device_put(array, sharding)
            if is_key:
                array = jax.random.wrap_key_data(array, impl=impl or jax.random.key_impl(target))
            return _like(target, array)
        return build

    def fill(self, node: Any, path: tuple) -> Builder:
        """The saved value at ``node`` itself (for places the target does not hold an array or container)."""
        if node is None or isinstance(node, _PLAIN):
            return lambda restored: node
        if "array" in node:
            name, kind = node["array"], node["kind"]
            host = kind.startswith("numpy")
            dtype = np.dtype(node["dtype"]) if host else jax.dtypes.canonicalize_dtype(node["dtype"])
            self._request(name, Request(tuple(node["shape"]), dtype, None if host else self.default_sharding(name)))
            return lambda restored: _from_saved(node, restored[name])
        (kind, items), = node.items()
        if kind in ("dict", "odict"):
            parts = [(k, self.fill(v, path + (k,))) for k, v in items]
            container = OrderedDict if kind == "odict" else dict
            return lambda restored: container((k, b(restored)) for k, b in parts)
        elements = [self.fill(v, path + (i,)) for i, v in enumerate(items)]
        container = list if kind == "list" else tuple
        return lambda restored: container(b(restored) for b in elements)

    def _request(self, name: str, request: Request) -> None:
        self.requests.setdefault(name, request)  # a tied array: the first place's sharding; build() moves the rest


_MISSING = object()


def _describe(node: Any) -> str:
    if node is None or isinstance(node, _PLAIN):
        return f"the value {node!r}"
    if "array" in node:
        return f"an array of shape {tuple(node['shape'])}"
    return {"dict": "a dict", "odict": "a dict", "list": "a list", "tuple": "a tuple"}.get(next(iter(node)), "?")


def _like(target: Any, array: Any) -> Any:
    """``array`` as the same kind of value as ``target`` (a Parameter keeps its ``requires_grad``)."""
    if isinstance(target, Parameter):
        return _make_parameter(array, target.requires_grad, place=False)
    if isinstance(target, Tensor):
        return _leaf(array, target.requires_grad)
    if isinstance(target, np.generic):
        return np.asarray(array)[()]
    return array


def _from_saved(node: dict, array: Any) -> Any:
    """A restored array as the kind of value it was saved as."""
    kind = node["kind"]
    if "prng_impl" in node:
        array = jax.random.wrap_key_data(array, impl=node["prng_impl"])
    if kind == "parameter":
        return _make_parameter(array, bool(node.get("requires_grad", False)), place=False)
    if kind == "tensor":
        return _leaf(array, bool(node.get("requires_grad", False)))
    if kind == "numpy_scalar":
        return np.asarray(array)[()]
    return array


def _leaf(array: Any, requires_grad: bool) -> Tensor:
    t = _new_object(Tensor)
    _init_leaf(t, array, requires_grad)
    return t

