"""Checkpoints: ``fg.save`` / ``fg.load`` on the safetensors format (never pickle).

``save(obj, f)`` writes a Tensor, or a nested ``dict``/``list``/``tuple`` of Tensors,
JAX/NumPy arrays and plain Python values (``int``, ``float``, ``bool``, ``str``,
``None``) -- a ``Module.state_dict()``, an optimizer state -- as one
`safetensors <https://github.com/huggingface/safetensors>`_ file. ``load(f)``
gives the same structure back, every array as an fgraph Tensor.

* The tensors are stored flat. A plain ``{str: tensor}`` dict (a state_dict) keeps
  its own keys, so ``safetensors.torch.load_file`` and Hugging Face tools see the
  usual names; tensors inside any other structure go under their dotted path
  (``state.0.exp_avg``).
* The structure (containers, dict key types and order, the non-tensor values,
  which tensors require grad or are Parameters) is JSON in the file's metadata
  under the key ``"fgraph"``. The metadata also holds ``"format": "pt"``, which
  Hugging Face's loaders ask for.
* Every dtype round-trips bit for bit, 0-d and empty tensors included.
  ``complex128``, which safetensors lacks, is stored as float64 with a trailing
  dimension of 2 (real, imaginary), as ``torch.view_as_real`` would.
* A safetensors file from elsewhere (``safetensors.torch.save_file``) has no
  ``"fgraph"`` metadata: it loads as a flat ``{key: Tensor}`` dict.
* 64-bit dtypes need JAX's x64 mode. With it off, ``load`` gives float64 and
  complex128 tensors as float32/complex64 (with a warning: precision is lost) and
  int64/uint64 as int32/uint32 (an error if a value does not fit): fgraph's one rule
  for 64-bit dtypes without x64 (``docs/dtypes.md``), with its ``DtypeNarrowingWarning``.

Loading never executes anything from the file: the header is JSON and the data
raw bytes. A pickle (``torch.save``'s zip archive or legacy format) or any other
file is recognised by its first bytes and refused with :class:`CheckpointError`,
which says what the file is and how to convert it.

Example:
    >>> import os, tempfile
    >>> import fgraph as fg
    >>> layer = fg.nn.Linear(3, 2)
    >>> path = os.path.join(tempfile.mkdtemp(), "layer.safetensors")
    >>> fg.save(layer.state_dict(), path)
    >>> fresh = fg.nn.Linear(3, 2)
    >>> fresh.load_state_dict(fg.load(path))
    <All keys matched successfully>
    >>> fresh.weight.tolist() == layer.weight.tolist()
    True
    >>> fg.save({"step": 3, "groups": [{"lr": 0.1, "params": [0]}], "m": fg.ones(2)}, path)
    >>> fg.load(path)
    {'step': 3, 'groups': [{'lr': 0.1, 'params': [0]}], 'm': tensor([1., 1.])}
"""
from __future__ import annotations

import json
import math
import os
import struct
import warnings
import zipfile
from collections import OrderedDict
from typing import Any, BinaryIO, Optional, Union

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np

from fgraph._dtypes import DtypeNarrowingWarning, warn_narrowing, x64_enabled
from fgraph.nn.parameter import Parameter, _make_parameter
from fgraph.tensor import Tensor, _init_leaf, _new_object

__all__ = ["save", "load", "CheckpointError"]

PathOrFile = Union[str, "os.PathLike[str]", BinaryIO]

#: Metadata key holding the structure.
STRUCTURE_KEY = "fgraph"
_VERSION = 1
_MAX_HEADER = 100_000_000  # safetensors' own limit on the JSON header

# safetensors dtype codes and the NumPy dtypes they hold (ml_dtypes for bfloat16 and float8).
_CODES = {
    "BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "I16": np.int16, "U16": np.uint16,
    "I32": np.int32, "U32": np.uint32, "I64": np.int64, "U64": np.uint64,
    "F16": np.float16, "F32": np.float32, "F64": np.float64, "C64": np.complex64,
    "BF16": ml_dtypes.bfloat16,
    "F8_E4M3": ml_dtypes.float8_e4m3fn, "F8_E5M2": ml_dtypes.float8_e5m2,
    "F8_E4M3FNUZ": ml_dtypes.float8_e4m3fnuz, "F8_E5M2FNUZ": ml_dtypes.float8_e5m2fnuz,
}
if hasattr(ml_dtypes, "float8_e8m0fnu"):
    _CODES["F8_E8M0"] = ml_dtypes.float8_e8m0fnu
_DTYPE_OF_CODE = {code: np.dtype(dt) for code, dt in _CODES.items()}
_SAVEABLE = frozenset(_DTYPE_OF_CODE.values())
_NARROW = {np.dtype(np.float64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.complex64),
           np.dtype(np.int64): np.dtype(np.int32), np.dtype(np.uint64): np.dtype(np.uint32)}

_CONVERT_TORCH = (
    "Convert it once in PyTorch (only for a file you trust):\n"
    "    import torch\n"
    "    from safetensors.torch import save_file\n"
    "    save_file(torch.load({path!r}, weights_only=True), 'model.safetensors')\n"
    "then fg.load('model.safetensors'). (A whole pickled model: save its .state_dict(); if save_file "
    "complains about shared tensors, save {{k: v.clone() for k, v in state_dict.items()}}.)"
)


class CheckpointError(ValueError):
    """``fg.load`` was given a file that is not a safetensors checkpoint, or a damaged one."""


# -- save ------------------------------------------------------------------------------------------
def save(obj: Any, f: PathOrFile) -> None:
    """Write ``obj`` to ``f`` (a path or a binary file object) as a safetensors file.

    ``obj`` is a Tensor, a JAX/NumPy array, or a nested ``dict``/``list``/``tuple`` of
    those and of ``int``, ``float``, ``bool``, ``str`` and ``None``; dict keys may be
    ``str``, ``int``, ``float``, ``bool`` or ``None``. A path is written atomically
    (a temporary file, then a rename), so a crash never leaves half a checkpoint.
    See the module docstring for the layout.

    Example:
        >>> import io
        >>> import fgraph as fg
        >>> buffer = io.BytesIO()
        >>> fg.save({"w": fg.tensor([1.0, 2.0])}, buffer)
        >>> _ = buffer.seek(0)
        >>> fg.load(buffer)["w"].tolist()
        [1.0, 2.0]
    """
    from safetensors.numpy import save as to_bytes, save_file

    flat = _is_flat(obj)
    writer = _Writer(flat)
    tree = writer.encode(obj, ())
    metadata = {"format": "pt", STRUCTURE_KEY: json.dumps({"version": _VERSION, "tree": tree})}
    try:
        if hasattr(f, "write"):
            f.write(to_bytes(writer.arrays, metadata=metadata))
            return
        path = os.fspath(f)
        tmp = f"{path}.{os.getpid()}.tmp"
        try:
            save_file(writer.arrays, tmp, metadata=metadata)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    except Exception as exc:
        if isinstance(exc, (OSError, TypeError)):
            raise
        raise CheckpointError(f"save: safetensors could not write the checkpoint: {exc}") from exc


def _is_flat(obj: Any) -> bool:
    """A non-empty ``{str: array}`` dict (a state_dict): stored under its own keys."""
    return (isinstance(obj, dict) and len(obj) > 0
            and all(isinstance(k, str) and _is_array(v) for k, v in obj.items()))


def _is_array(v: Any) -> bool:
    return isinstance(v, (Tensor, jax.Array, np.ndarray, np.generic))


class _Writer:
    """Walks the object: fills ``arrays`` (name -> contiguous NumPy array) and returns the JSON tree."""

    def __init__(self, flat: bool) -> None:
        self.flat = flat
        self.arrays: dict[str, np.ndarray] = {}
        self.seen: dict[int, dict] = {}  # id(tensor) -> its leaf, so a shared tensor is stored once
        self.keep: list[Any] = []  # keeps the seen objects alive (ids stay unique)

    def encode(self, obj: Any, path: tuple) -> Any:
        if obj is None or isinstance(obj, (bool, int, float, str)):
            return obj
        if _is_array(obj):
            return self.leaf(obj, path)
        if isinstance(obj, dict):
            items = []
            for k, v in obj.items():
                if k is not None and not isinstance(k, (str, int, float, bool)):
                    raise TypeError(
                        f"save: dict key {k!r} at {_where(path)} is a {type(k).__name__}; keys must be str, int, "
                        "float, bool or None. For gradients (keyed by tensors) save "
                        "{name: grads[p] for name, p in model.named_parameters()}."
                    )
                items.append([k, self.encode(v, path + (k,))])
            return {"odict" if isinstance(obj, OrderedDict) else "dict": items}
        if isinstance(obj, (list, tuple)):
            kind = "list" if isinstance(obj, list) else "tuple"
            return {kind: [self.encode(v, path + (i,)) for i, v in enumerate(obj)]}
        if hasattr(obj, "state_dict") and hasattr(obj, "load_state_dict"):
            raise TypeError(_whole_object_message(obj, path))
        raise TypeError(
            f"save: cannot store a value of type {type(obj).__name__!r} at {_where(path)}. Checkpoints hold "
            f"Tensors, JAX/NumPy arrays, dict/list/tuple containers and int, float, bool, str or None."
        )

    def leaf(self, obj: Any, path: tuple) -> dict:
        if not self.flat and id(obj) in self.seen:
            return self.seen[id(obj)]
        array, tags = _host_array(obj, path)
        name = path[-1] if self.flat else ".".join(str(p) for p in path) or "tensor"
        base, n = name, 1
        while name in self.arrays or name == "__metadata__":
            n += 1
            name = f"{base}#{n}"
        self.arrays[name] = array
        leaf = {"tensor": name, **tags}
        self.seen[id(obj)] = leaf
        self.keep.append(obj)
        return leaf


def _whole_object_message(obj: Any, path: tuple) -> str:
    """``torch.save(model, path)`` ported as is: fgraph saves state, never pickled objects."""
    from fgraph.nn.modules.module import Module

    name = "model" if isinstance(obj, Module) else "opt" if hasattr(obj, "param_groups") else "obj"
    return (
        f"save: cannot store a whole {type(obj).__name__} (at {_where(path)}): checkpoints hold tensors and plain "
        "values, never pickled objects, because loading a pickle can run any code. Save its state and load it "
        f"into one you build again: fg.save({name}.state_dict(), path), then "
        f"{name}.load_state_dict(fg.load(path)) (in a dict: {{'{name}': {name}.state_dict(), ...}})."
    )


def _host_array(obj: Any, path: tuple) -> tuple[np.ndarray, dict]:
    """The value as a contiguous little-endian NumPy array, and the tags ``load`` needs to rebuild it."""
    tags: dict[str, Any] = {}
    data = obj
    if isinstance(obj, Tensor):
        data = obj._array
        if obj.requires_grad:
            tags["requires_grad"] = True
        if isinstance(obj, Parameter):
            tags["parameter"] = True
    if isinstance(data, jax.core.Tracer):
        raise TypeError(
            f"save: the tensor at {_where(path)} is traced (inside fg.compile, jax.jit or vmap) and has no "
            "values yet; save outside the traced function, on the tensors it returns."
        )
    if isinstance(data, jax.Array) and jax.dtypes.issubdtype(data.dtype, jax.dtypes.prng_key):
        tags["prng_impl"] = str(jax.random.key_impl(data))
        data = jax.random.key_data(data)
    array = np.asarray(data)
    if array.dtype == np.complex128:
        tags["complex128"] = True
        array = np.stack([array.real, array.imag], axis=-1)
    if not array.flags.c_contiguous:
        array = array.copy(order="C")  # (np.ascontiguousarray would make 0-d arrays 1-d)
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    if array.dtype not in _SAVEABLE:
        raise TypeError(
            f"save: the array at {_where(path)} has dtype {array.dtype}, which safetensors cannot store "
            f"(it stores {', '.join(sorted(str(d) for d in _SAVEABLE))}); cast it first."
        )
    return array, tags


def _where(path: tuple) -> str:
    return "the top level" if not path else "obj" + "".join(f"[{p!r}]" for p in path)


# -- load ------------------------------------------------------------------------------------------
def load(f: PathOrFile, map_location: Any = None, *, device: Any = None, weights_only: Optional[bool] = None,
         mmap: Optional[bool] = None) -> Any:
    """Read a safetensors file written by :func:`save` (or any safetensors file).

    Returns the saved structure with every array as an fgraph Tensor (leaves, with
    the ``requires_grad`` they were saved with; Parameters come back as
    ``fg.nn.Parameter``). A file without fgraph's metadata (written by
    ``safetensors.torch.save_file`` or Hugging Face) loads as ``{key: Tensor}``.
    ``map_location`` places the tensors, in ``torch.load``'s forms: a device (``"cpu"``, ``"cuda:0"``, an
    :class:`fgraph.device`, a JAX device); a dict from saved locations to new ones (``{"cuda:0": "cpu"}``:
    a safetensors file does not record where its tensors lived, so the entry for JAX's default device
    applies, else the one for ``"cpu"``, else the one value the dict maps everything to); or a callable
    ``fn(tensor, "cpu")`` given each tensor on the host, as ``torch.load`` gives it a CPU storage, and
    returning the tensor to keep (``lambda storage, loc: storage`` keeps it on the host; ``storage.cuda()``
    moves it). ``device=`` is the same as a device
    ``map_location``. The default is JAX's default device. Asking for a device this machine lacks raises
    :class:`fgraph.errors.DeviceUnavailableError`. ``weights_only`` and ``mmap`` are accepted: nothing in
    a safetensors file executes, whatever ``weights_only`` says.

    Raises :class:`CheckpointError` for a pickle (``torch.save`` files), a file of
    another format, or a truncated or corrupt file; nothing in the file is executed.

    Example:
        >>> import io
        >>> import fgraph as fg
        >>> buffer = io.BytesIO()
        >>> fg.save([fg.tensor(7, dtype=fg.int8), None], buffer)
        >>> _ = buffer.seek(0)
        >>> fg.load(buffer)
        [tensor(7, dtype=int8), None]
    """
    if map_location is not None:
        if device is not None:
            raise TypeError("load: pass map_location= or device= (the same thing), not both.")
        device = _map_location(map_location)
    elif device is not None:
        device = _jax_device(device)
    if hasattr(f, "read"):
        name = getattr(f, "name", "<file object>")
        return _load_from(f, str(name), device)
    path = os.fspath(f)
    with open(path, "rb") as handle:
        return _load_from(handle, path, device)


def _load_from(f: BinaryIO, name: str, device: Any) -> Any:
    start = f.tell()
    size = f.seek(0, os.SEEK_END) - start
    f.seek(start)
    head = f.read(min(size, 64))
    foreign = None if _framed_like_safetensors(head, size) else _foreign_format(head, f, start, name)
    if foreign:
        raise CheckpointError(foreign)
    header = _read_header(f, start, head, size, name)
    meta = header.pop("__metadata__", None) or {}
    data_start = start + 8 + struct.unpack("<Q", head[:8])[0]
    data_len = size - (data_start - start)
    entries = {key: _check_entry(key, spec, data_len, name) for key, spec in header.items()}
    structure = meta.get(STRUCTURE_KEY) if isinstance(meta, dict) else None
    tree = None if structure is None else _parse_structure(structure, name)
    loaded: dict[str, Any] = {}
    narrowed: list[str] = []
    for key, (dtype, shape, begin, end) in entries.items():
        buffer = np.empty(end - begin, np.uint8)
        f.seek(data_start + begin)
        if f.readinto(memoryview(buffer)) != end - begin:
            raise CheckpointError(f"load: {name!r} ended while reading tensor {key!r}; the file is truncated.")
        loaded[key] = _to_device(_fit_x64(buffer.view(dtype).reshape(shape), key, narrowed, name), device)
    if narrowed:
        warnings.warn(
            f"load: JAX's x64 mode is off, so the 64-bit tensors {narrowed[:5]}{'...' if len(narrowed) > 5 else ''} "
            f"of {name!r} were loaded as 32-bit (precision lost). Enable x64 before loading to keep them: "
            "jax.config.update('jax_enable_x64', True).",
            DtypeNarrowingWarning,
            stacklevel=3,
        )
    if tree is None:
        return {key: _tensor(array, {}) for key, array in loaded.items()}
    try:
        return _decode(tree, loaded, {})
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise _corrupt_structure(name, exc) from None


def _parse_structure(structure: Any, name: str) -> Any:
    """The ``tree`` of fgraph's structure metadata."""
    try:
        spec = json.loads(structure)
        version = spec.get("version")
        tree = spec["tree"]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise _corrupt_structure(name, exc) from None
    if version != _VERSION:
        raise CheckpointError(
            f"load: {name!r} was written by a newer fgraph (structure version {version!r}); upgrade fgraph to read it."
        )
    return tree


def _corrupt_structure(name: str, exc: Exception) -> CheckpointError:
    return CheckpointError(
        f"load: the structure metadata of {name!r} is corrupt ({type(exc).__name__}: {exc}). Its tensors can "
        "still be read as a flat dict with safetensors.numpy.load_file."
    )


def _framed_like_safetensors(head: bytes, size: int) -> bool:
    """Whether ``head`` opens as safetensors does: a little-endian header length that fits in the file, then
    the header's JSON ``{``. (Checked first: a header of 1408 bytes begins ``80 05``, a pickle's first bytes.)"""
    return len(head) > 8 and head[8:9] == b"{" and 8 + struct.unpack("<Q", head[:8])[0] <= size


def _foreign_format(head: bytes, f: BinaryIO, start: int, name: str) -> Optional[str]:
    """A message naming the file's real format, for files that are clearly not safetensors."""
    def refuse(what: str, how: str) -> str:
        return f"load: {name!r} is {what}, not a safetensors file. {how}"

    never = ("fgraph never unpickles files: loading a pickle can run arbitrary code. ")
    if len(head) == 0:
        return refuse("empty (0 bytes)", "It was not written completely; save the checkpoint again.")
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        try:
            f.seek(start)
            names = zipfile.ZipFile(f).namelist()
        except (zipfile.BadZipFile, OSError, ValueError):
            names = []
        if any(n == "data.pkl" or n.endswith("/data.pkl") for n in names):
            return refuse("a PyTorch checkpoint written by torch.save (a zip archive holding a pickle, data.pkl)",
                          never + _CONVERT_TORCH.format(path=name))
        if names and all(n.endswith(".npy") for n in names):
            return refuse("a NumPy .npz archive", "Convert it with safetensors.numpy.save_file(dict(numpy.load("
                          f"{name!r})), 'arrays.safetensors') (its arrays are not pickles).")
        return refuse("a zip archive", "fg.load reads safetensors files (fg.save, safetensors.*.save_file).")
    if head[:1] == b"\x80" and len(head) > 1 and 2 <= head[1] <= 5:
        if head[2:14] == b"\x8a\nl\xfc\x9cF\xf9 j\xa8P\x19":  # torch's magic number 0x1950a86a20f9469cfc6c
            what = "a PyTorch checkpoint in torch.save's legacy format (pickles)"
        else:
            what = f"a Python pickle (protocol {head[1]}), perhaps from torch.save or pickle.dump"
        return refuse(what, never + _CONVERT_TORCH.format(path=name))
    if head.startswith(b"\x93NUMPY"):
        return refuse("a NumPy .npy file", "Convert it with safetensors.numpy.save_file({'x': numpy.load("
                      f"{name!r})}}, 'x.safetensors') or load it with numpy.load and wrap it with fg.tensor.")
    others = {b"\x89HDF\r\n\x1a\n": "an HDF5 file (Keras .h5?)", b"GGUF": "a GGUF model file",
              b"\x1f\x8b": "a gzip-compressed file"}
    for magic, what in others.items():
        if head.startswith(magic):
            return refuse(what, "fg.load reads safetensors files (fg.save, safetensors.*.save_file).")
    return None


def _read_header(f: BinaryIO, start: int, head: bytes, size: int, name: str) -> dict:
    """The JSON header, checked; CheckpointError naming what is wrong otherwise."""
    not_safetensors = (f"load: {name!r} is not a safetensors file (it starts with {head[:16]!r}); fg.load reads "
                       "files written by fg.save or safetensors' save_file.")
    if size < 8:
        raise CheckpointError(f"load: {name!r} has only {size} bytes: it is truncated or not a safetensors file.")
    n = struct.unpack("<Q", head[:8])[0]
    if head[8:9] != b"{" or n < 2:
        raise CheckpointError(not_safetensors)
    if n > size - 8:
        if n <= _MAX_HEADER:
            raise CheckpointError(
                f"load: {name!r} is truncated: its header needs {n} bytes but only {size - 8} follow. "
                "The file was cut short (an interrupted save or download); write or fetch it again."
            )
        raise CheckpointError(not_safetensors)
    f.seek(start + 8)
    raw = f.read(n)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise CheckpointError(
            f"load: the header of {name!r} is not valid JSON: the file is corrupt or not a safetensors file."
        ) from None
    if not isinstance(header, dict):
        raise CheckpointError(f"load: the header of {name!r} is not a JSON object; the file is corrupt.")
    return header


def _check_entry(key: str, spec: Any, data_len: int, name: str) -> tuple[np.dtype, tuple, int, int]:
    """``(dtype, shape, begin, end)`` of one header entry, after checking it fits in the file."""
    try:
        code, shape, (begin, end) = spec["dtype"], tuple(spec["shape"]), spec["data_offsets"]
        ok = (all(isinstance(v, int) and v >= 0 for v in shape + (begin, end))
              and not any(isinstance(v, bool) for v in shape + (begin, end)) and begin <= end)
    except (TypeError, KeyError, ValueError):
        ok = False
    if not ok:
        raise CheckpointError(f"load: the header entry for {key!r} in {name!r} is malformed: {spec!r}.")
    dtype = _DTYPE_OF_CODE.get(code)
    if dtype is None:
        raise CheckpointError(
            f"load: tensor {key!r} in {name!r} has dtype {code!r}, which fgraph cannot hold "
            f"(it reads {', '.join(_DTYPE_OF_CODE)})."
        )
    if end - begin != math.prod(shape) * dtype.itemsize:
        raise CheckpointError(
            f"load: tensor {key!r} in {name!r} has shape {list(shape)} and dtype {code} ({end - begin} bytes "
            "in the file do not match); the file is corrupt."
        )
    if end > data_len:
        raise CheckpointError(
            f"load: {name!r} is truncated: tensor {key!r} needs bytes up to {end} of the data section, which "
            f"has only {data_len}. The file was cut short (an interrupted save or download)."
        )
    return dtype, shape, begin, end


def _fit_x64(array: np.ndarray, key: str, narrowed: list, name: str) -> np.ndarray:
    """``array`` as JAX can hold it: 64-bit dtypes become 32-bit when x64 mode is off."""
    narrow = _NARROW.get(array.dtype)
    if narrow is None or x64_enabled():
        return array
    if array.dtype.kind in "iu":  # fgraph's rule for int64 without x64 (docs/dtypes.md): int32, values checked
        info = np.iinfo(narrow)
        if array.size and (array.min() < info.min or array.max() > info.max):
            raise CheckpointError(
                f"load: tensor {key!r} of {name!r} is {array.dtype} with values outside {narrow}'s range, and "
                "JAX's x64 mode is off. Enable it before loading: jax.config.update('jax_enable_x64', True)."
            )
        warn_narrowing(array.dtype, narrow, "load")
    else:
        narrowed.append(key)
    with np.errstate(over="ignore"):  # float64 beyond float32's range becomes inf; the caller warns
        return array.astype(narrow)


def _jax_device(spec: Any) -> Any:
    from fgraph.device import jax_device

    return jax_device(spec)


def _map_location(spec: Any) -> Any:
    """``torch.load``'s ``map_location`` as a JAX device, or a function of an array."""
    if isinstance(spec, dict):
        from fgraph.device import default_device, device as _device

        def key(k: Any) -> Any:
            try:
                return _device(k)
            except (RuntimeError, TypeError, ValueError):
                return k

        table = {key(k): v for k, v in spec.items()}
        for where in (default_device(), _device("cpu")):
            if where in table:
                return _jax_device(table[where])
        targets = {str(key(v)) for v in spec.values()}
        if len(targets) == 1:
            return _jax_device(next(iter(spec.values())))
        return None  # no entry applies: JAX's default device, as torch keeps unmapped locations
    if callable(spec) and not isinstance(spec, type):
        return _MapFunction(spec)
    return _jax_device(spec)


class _MapFunction:
    """A callable ``map_location``: ``fn(tensor, "cpu")`` gives the tensor (or array) to keep."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def __call__(self, array: jax.Array) -> jax.Array:
        out = self.fn(_new_leaf(array), "cpu")
        if out is None:
            return array
        if isinstance(out, Tensor):
            return out._array
        if isinstance(out, jax.Array):
            return out
        if isinstance(out, np.ndarray):
            return jnp.asarray(out)
        raise TypeError(f"load: map_location returned a {type(out).__name__}; it must return the tensor it was "
                        "given (or a moved one: storage.cuda(), storage.to(device)).")


def _new_leaf(array: jax.Array) -> Tensor:
    t = _new_object(Tensor)
    _init_leaf(t, array, False)
    return t


def _to_device(array: np.ndarray, device: Any) -> jax.Array:
    if device is None:
        return jnp.asarray(array)  # the buffer is ours alone: no copy needed
    if isinstance(device, _MapFunction):  # as torch.load: the function is given the tensor on the host
        return device(jax.device_put(array, jax.devices("cpu")[0]))
    return jax.device_put(array, device)


def _tensor(array: jax.Array, leaf: dict) -> Any:
    if "prng_impl" in leaf:
        return jax.random.wrap_key_data(array, impl=leaf["prng_impl"])
    if leaf.get("complex128"):
        array = jax.lax.complex(array[..., 0], array[..., 1])
    requires_grad = bool(leaf.get("requires_grad", False))
    if leaf.get("parameter"):
        return _make_parameter(array, requires_grad)
    t = _new_object(Tensor)
    _init_leaf(t, array, requires_grad)
    return t


def _decode(node: Any, arrays: dict, made: dict) -> Any:
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if not isinstance(node, dict) or len(node) < 1:
        raise ValueError(f"unexpected node {node!r}")
    if "tensor" in node:
        key = node["tensor"]
        if key not in made:  # one Tensor per stored array: shared tensors stay shared
            if key not in arrays:
                raise KeyError(f"the structure names tensor {key!r}, which the file does not hold")
            made[key] = _tensor(arrays[key], node)
        return made[key]
    (kind, items), = node.items()
    if kind in ("dict", "odict"):
        pairs = [(k, _decode(v, arrays, made)) for k, v in items]
        return OrderedDict(pairs) if kind == "odict" else dict(pairs)
    if kind in ("list", "tuple"):
        values = [_decode(v, arrays, made) for v in items]
        return values if kind == "list" else tuple(values)
    raise ValueError(f"unknown container {kind!r}")
