"""Batching samples into tensors: ``default_collate``, ``default_convert`` and ``collate`` (torch's rules).

The structure of a sample is kept and its leaves are stacked along a new first dimension:

* fgraph Tensors -> ``fg.stack`` (on the graph, like ``torch.stack``);
* NumPy arrays and NumPy scalars -> a Tensor of their dtype (64-bit dtypes follow fgraph's rule without
  x64: ``int64`` is stored as ``int32``, ``float64`` as ``float32``, see ``docs/dtypes.md``);
* torch Tensors -> stacked by torch, then one fgraph Tensor of their dtype (a DataLoader over a torch
  dataset hands out fgraph Tensors);
* Python ints (and bools) -> torch's ``int64``: fgraph's ``long`` (``int64`` with x64, else ``int32``);
* Python floats -> torch's ``float64`` (with x64; else ``float32``, the widest JAX then has);
* strings and bytes -> left as they are: the list (or tuple) of them;
* dicts, namedtuples, tuples and lists -> the same structure of collated fields (a tuple of fields
  becomes a list, as in torch).

Worker *processes* never build fgraph Tensors from the default collation: they collate to
:class:`HostBatch` leaves (NumPy, torch tensors or Python lists) that the main process turns into
Tensors with the same rules (:func:`from_host`), so a worker never touches an accelerator.

Example:
    >>> import fgraph as fg
    >>> from fgraph.utils.data import default_collate
    >>> batch = default_collate([{"x": fg.tensor([1.0, 2.0]), "y": 0}, {"x": fg.tensor([3.0, 4.0]), "y": 1}])
    >>> batch["x"].shape, batch["y"].tolist(), batch["y"].dtype == fg.tensor([0]).dtype
    ((2, 2), [0, 1], True)
"""
from __future__ import annotations

import collections.abc
import copy
import re
import sys
from functools import partial
from typing import Any, Callable, Optional

import numpy as np

from fgraph._dtypes import x64_enabled
from fgraph.ops.shape import stack
from fgraph.tensor import Tensor, _default_int_dtype, _is_torch_tensor, tensor

__all__ = ["default_collate", "default_convert", "collate", "default_collate_fn_map", "HostBatch", "to_host",
           "from_host", "host_collate", "host_convert"]

_STRING_OR_OBJECT = re.compile(r"[SaUO]")
_ERROR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
TORCH_TENSOR = "torch.Tensor"  # the key of the torch handler: torch is never imported by fgraph itself


class HostBatch:
    """A collated leaf made in a worker process, turned into a Tensor in the main process.

    ``kind`` is ``"array"`` (NumPy array or torch tensor), ``"int"`` or ``"float"`` (a list of Python
    numbers, converted with torch's dtype rule in the main process, where JAX's x64 setting lives).
    """

    __slots__ = ("value", "kind")

    def __init__(self, value: Any, kind: str) -> None:
        self.value = value
        self.kind = kind

    def __reduce__(self) -> tuple:
        return HostBatch, (self.value, self.kind)


def make_tensor(value: Any, kind: str) -> Tensor:
    """The fgraph Tensor of a collated leaf (see :class:`HostBatch` for ``kind``)."""
    if kind == "int":  # fgraph's default integer: long (int64 with x64, else int32, checked), bools stay bool
        if isinstance(value, np.ndarray) and value.dtype != np.bool_:
            return tensor(value, dtype=_default_int_dtype())
        return tensor(value)
    if kind == "float":
        return tensor(value, dtype="float64" if x64_enabled() else "float32")
    if _is_torch_tensor(value):
        return tensor(value.detach())  # the DataLoader hands out data; a torch graph never comes along
    return tensor(value)


def _shapes_must_match(shapes: list, what: str) -> None:
    for i, shape in enumerate(shapes):
        if shape != shapes[0]:
            raise RuntimeError(
                f"default_collate: {what} {i} of the batch has shape {tuple(shape)} but {what} 0 has shape "
                f"{tuple(shapes[0])}; samples stacked into one batch need equal shapes. Pad them in a custom "
                "collate_fn (e.g. with fgraph.nn.utils.rnn.pad_sequence), or use batch_size=1."
            )


# -- leaf handlers: each takes the batch (a list of leaves) and the map, as torch's do -------------------------
def _collate_fgraph(batch: list, *, collate_fn_map: Optional[dict] = None, host: bool = False) -> Any:
    _shapes_must_match([t.shape for t in batch], "tensor")
    if host:
        return HostBatch(np.stack([np.asarray(t._array) for t in batch]), "array")
    return stack(batch, 0)


def _collate_torch(batch: list, *, collate_fn_map: Optional[dict] = None, host: bool = False) -> Any:
    _shapes_must_match([tuple(t.shape) for t in batch], "tensor")
    stacked = sys.modules["torch"].stack([t.detach() for t in batch], 0)
    if not host:
        return make_tensor(stacked, "array")
    try:
        return HostBatch(stacked.numpy(), "array")  # plain NumPy crosses the process boundary
    except TypeError:  # bfloat16 or a GPU tensor: torch pickles it itself
        return HostBatch(stacked, "array")


def _collate_numpy_array(batch: list, *, collate_fn_map: Optional[dict] = None, host: bool = False) -> Any:
    if _STRING_OR_OBJECT.search(batch[0].dtype.str) is not None:
        raise TypeError(_ERROR.format(batch[0].dtype))
    _shapes_must_match([b.shape for b in batch], "array")
    stacked = np.stack(batch)
    return HostBatch(stacked, "array") if host else make_tensor(stacked, "array")


def _collate_numpy_scalar(batch: list, *, collate_fn_map: Optional[dict] = None, host: bool = False) -> Any:
    stacked = np.asarray(batch)
    return HostBatch(stacked, "array") if host else make_tensor(stacked, "array")


def _collate_python_number(batch: list, *, collate_fn_map: Optional[dict] = None, host: bool = False,
                           kind: str = "int") -> Any:
    values: Any = np.asarray(batch)  # one NumPy array: tensor() would walk a list element by element
    if values.dtype.kind not in "biuf":  # ints beyond int64: tensor() says what is wrong with them
        values = list(batch)
    return HostBatch(values, kind) if host else make_tensor(values, kind)


def _collate_str(batch: list, *, collate_fn_map: Optional[dict] = None, host: bool = False) -> list:
    return batch


def _leaf_handlers(host: bool) -> dict:
    return {
        Tensor: partial(_collate_fgraph, host=host),
        np.ndarray: partial(_collate_numpy_array, host=host),
        (np.bool_, np.number, np.object_): partial(_collate_numpy_scalar, host=host),
        float: partial(_collate_python_number, host=host, kind="float"),
        int: partial(_collate_python_number, host=host, kind="int"),
        str: _collate_str,
        bytes: _collate_str,
        TORCH_TENSOR: partial(_collate_torch, host=host),
    }


#: Element type -> collate function, as torch's ``default_collate_fn_map``: extend it (or pass your own map to
#: :func:`collate`) to teach ``default_collate`` a new leaf type. Functions take ``(batch, *, collate_fn_map)``.
default_collate_fn_map: dict = _leaf_handlers(host=False)
_host_collate_fn_map: dict = _leaf_handlers(host=True)


def _handler(elem: Any, collate_fn_map: dict) -> Optional[Callable]:
    handler = collate_fn_map.get(type(elem))
    if handler is not None:
        return handler
    for key, fn in collate_fn_map.items():
        if isinstance(key, (type, tuple)) and isinstance(elem, key):
            return fn
    if _is_torch_tensor(elem):
        return collate_fn_map.get(TORCH_TENSOR)
    return None


def _rebuild_mapping(elem: Any, values: dict) -> Any:
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)  # keeps the mapping's own type and attributes
            clone.update(values)
            return clone
        return type(elem)(values)
    except TypeError:  # a mapping type without copy()/update() or __init__(mapping)
        return values


def collate(batch: list, *, collate_fn_map: Optional[dict] = None) -> Any:
    """Collate ``batch`` (a list of samples) by structure, using ``collate_fn_map`` for the leaves.

    The element type is looked up exactly, then by ``isinstance`` in the map's order (torch's rule).

    Example:
        >>> from fgraph.utils.data._collate import collate, default_collate_fn_map
        >>> collate([(1, "a"), (2, "b")], collate_fn_map=default_collate_fn_map)[1]  # strings stay as they came
        ('a', 'b')
    """
    elem = batch[0]
    if collate_fn_map is not None:
        handler = _handler(elem, collate_fn_map)
        if handler is not None:
            return handler(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild_mapping(elem, {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                                       for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(sample) != size for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        fields = [collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)]  # tuples, as torch
        if isinstance(elem, tuple):
            return fields  # torch's backwards-compatible rule: a tuple sample gives a list of fields
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, field in enumerate(fields):
                    clone[i] = field
                return clone
            return type(elem)(fields)
        except TypeError:  # e.g. range
            return fields
    raise TypeError(_ERROR.format(type(elem)))


def default_collate(batch: list) -> Any:
    """Stack a list of samples into a batch, keeping the samples' structure (torch's ``default_collate``).

    See the module docstring for the leaf rules.

    Example:
        >>> import numpy as np
        >>> from fgraph.utils.data import default_collate
        >>> xs, ys = default_collate([(np.zeros(3, np.float32), 1.5), (np.ones(3, np.float32), 2.5)])
        >>> xs.shape, str(xs.dtype), ys.tolist()
        ((2, 3), 'float32', [1.5, 2.5])
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)


def host_collate(batch: list) -> Any:
    """:func:`default_collate` in a worker process: :class:`HostBatch` leaves instead of Tensors."""
    return collate(batch, collate_fn_map=_host_collate_fn_map)


def _convert(data: Any, leaf: Callable[[Any], Any]) -> Any:
    """torch's ``default_convert`` walk: ``leaf`` converts tensors and NumPy arrays/scalars."""
    if isinstance(data, Tensor) or _is_torch_tensor(data):
        return leaf(data)
    elem_type = type(data)
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_", "bytes_"):
        if isinstance(data, np.ndarray) and _STRING_OR_OBJECT.search(data.dtype.str) is not None:
            return data
        return leaf(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {key: _convert(data[key], leaf) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return elem_type(*(_convert(d, leaf) for d in data))
    if isinstance(data, tuple):
        return [_convert(d, leaf) for d in data]  # torch's backwards-compatible rule
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = _convert(d, leaf)
                return clone
            return elem_type([_convert(d, leaf) for d in data])
        except TypeError:
            return [_convert(d, leaf) for d in data]
    return data


def _convert_leaf(data: Any) -> Any:
    return data if isinstance(data, Tensor) else make_tensor(data, "array")


def _host_convert_leaf(data: Any) -> Any:
    if isinstance(data, Tensor):
        return HostBatch(np.asarray(data._array), "array")
    return HostBatch(data, "array")


def default_convert(data: Any) -> Any:
    """Turn NumPy arrays (and torch tensors) inside ``data`` into fgraph Tensors, keeping the structure.

    The collate function of a ``DataLoader`` with ``batch_size=None`` (no batching), as in torch:
    Python numbers and strings stay as they are.

    Example:
        >>> import numpy as np
        >>> from fgraph.utils.data import default_convert
        >>> out = default_convert({"x": np.arange(3), "name": "a", "n": 4})
        >>> out["x"].tolist(), out["name"], out["n"]
        ([0, 1, 2], 'a', 4)
    """
    return _convert(data, _convert_leaf)


def host_convert(data: Any) -> Any:
    """:func:`default_convert` in a worker process: :class:`HostBatch` leaves instead of Tensors."""
    return _convert(data, _host_convert_leaf)


# -- crossing the process boundary ----------------------------------------------------------------------------
def _map_leaves(obj: Any, fn: Callable[[Any], Any]) -> Any:
    """``obj`` with ``fn`` applied to every leaf of its dicts, namedtuples, tuples and lists."""
    if isinstance(obj, dict):
        return _rebuild_mapping(obj, {k: _map_leaves(v, fn) for k, v in obj.items()})
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_map_leaves(v, fn) for v in obj))
    if type(obj) in (tuple, list):
        return type(obj)(_map_leaves(v, fn) for v in obj)
    return fn(obj)


def _to_host_leaf(obj: Any) -> Any:
    return HostBatch(np.asarray(obj._array), "array") if isinstance(obj, Tensor) else obj


def _from_host_leaf(obj: Any) -> Any:
    return make_tensor(obj.value, obj.kind) if isinstance(obj, HostBatch) else obj


def to_host(batch: Any) -> Any:
    """A worker process's batch ready to be pickled to the main process: fgraph Tensors become NumPy."""
    return _map_leaves(batch, _to_host_leaf)


def from_host(batch: Any) -> Any:
    """The main process's side of :func:`to_host`: every :class:`HostBatch` leaf becomes an fgraph Tensor."""
    return _map_leaves(batch, _from_host_leaf)
