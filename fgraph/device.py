"""``fg.device``: PyTorch's device descriptor, mapped onto JAX's devices.

A :class:`device` names where tensors live with PyTorch's spelling: ``fg.device("cpu")``,
``fg.device("cuda")``, ``fg.device("cuda:1")``, ``fg.device("cuda", 0)``; ``"gpu"`` is JAX's name
for the same thing and means ``"cuda"`` (a ROCm GPU is ``"cuda"`` too, as in PyTorch). A JAX device
object converts as well (``fg.device(jax.devices()[0])``). Underneath, ``"cpu"`` is
``jax.devices("cpu")[index or 0]`` and ``"cuda"`` is ``jax.devices("gpu")[index]`` (the current
device, :func:`fgraph.cuda.current_device`, when no index is given).

Making a descriptor never touches JAX: ``fg.device("cuda")`` works on any machine, as
``torch.device("cuda")`` does. *Placing* data there (``x.to("cuda")``, ``fg.zeros(2, device="cuda")``)
on a machine without a GPU raises :class:`fgraph.errors.DeviceUnavailableError` (a ``RuntimeError``)
naming the portable idiom ``device = "cuda" if fg.cuda.is_available() else "cpu"``.

See ``docs/devices.md``.

Example:
    >>> import fgraph as fg
    >>> fg.device("cuda:1")
    device(type='cuda', index=1)
    >>> fg.device("cpu") == "cpu", fg.device("gpu").type, str(fg.device("cuda", 0))
    (True, 'cuda', 'cuda:0')
    >>> fg.zeros(2).device
    device(type='cpu')
"""
from __future__ import annotations

from typing import Any, Optional

import jax

from fgraph.errors import DeviceUnavailableError
from fgraph.lazy._array import LazyArray

__all__ = ["device", "DeviceUnavailableError"]

#: Device types a descriptor may name (PyTorch's spelling); "gpu", "rocm" and "hip" are read as "cuda".
_TYPES = ("cpu", "cuda", "tpu", "mps", "xpu", "meta")
_ALIASES = {"gpu": "cuda", "rocm": "cuda", "hip": "cuda"}
#: device type -> the JAX platform that serves it (types without one cannot hold data here).
_JAX_PLATFORM = {"cpu": "cpu", "cuda": "gpu", "tpu": "tpu"}
#: JAX platform -> device type.
_TYPE_OF_PLATFORM = {"cpu": "cpu", "gpu": "cuda", "cuda": "cuda", "rocm": "cuda", "tpu": "tpu"}

IDIOM = 'device = "cuda" if fg.cuda.is_available() else "cpu"'


class device:
    """Where a tensor lives, with ``torch.device``'s spelling: ``type`` (``'cpu'``, ``'cuda'``, ...) and
    ``index`` (``None`` unless given).

    ``device("cuda:1")``, ``device("cuda", 1)``, ``device("gpu")`` (JAX's name, read as ``"cuda"``), a
    JAX device object, another ``device`` (or a ``torch.device``), or an int (a CUDA index). Equal to
    another device of the same type and index, and to a string that names it (``fg.device("cpu") ==
    "cpu"``; PyTorch compares devices only with devices). As in PyTorch, ``device("cuda")`` (the
    current GPU) and ``device("cuda:0")`` are different descriptors. Hashable.

    Example:
        >>> import fgraph as fg
        >>> d = fg.device("cuda", 1)
        >>> d.type, d.index, d == "cuda:1", d == fg.device("cuda")
        ('cuda', 1, True, False)
    """

    __slots__ = ("_type", "_index")

    def __init__(self, type: Any, index: Optional[int] = None) -> None:  # noqa: A002 (torch's name)
        kind, idx = _parse(type, index)
        object.__setattr__(self, "_type", kind)
        object.__setattr__(self, "_index", idx)

    @property
    def type(self) -> str:
        """The device type: ``'cpu'``, ``'cuda'``, ``'tpu'``, ..."""
        return self._type

    @property
    def index(self) -> Optional[int]:
        """The device's index within its type, or ``None`` (the current device of that type)."""
        return self._index

    @property
    def platform(self) -> str:
        """JAX's platform name for this type (``'cpu'``, ``'gpu'``, ``'tpu'``), as on ``jax.Device``."""
        return _JAX_PLATFORM.get(self._type, self._type)

    @property
    def jax_device(self) -> jax.Device:
        """The JAX device this descriptor places data on (raises :class:`DeviceUnavailableError` if there is
        none here)."""
        return _jax_device_of(self)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"fg.device is immutable: cannot assign {name!r}; make a new one.")

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, device):
            return self._type == other._type and self._index == other._index
        if isinstance(other, str) or _is_torch_device(other):
            try:
                return self == device(other)
            except (RuntimeError, ValueError, TypeError):
                return False
        return NotImplemented

    def __ne__(self, other: Any) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(str(self))  # equal strings hash alike

    def __str__(self) -> str:
        return self._type if self._index is None else f"{self._type}:{self._index}"

    def __repr__(self) -> str:
        if self._index is None:
            return f"device(type={self._type!r})"
        return f"device(type={self._type!r}, index={self._index})"

    def __reduce__(self) -> Any:
        return (device, (self._type, self._index))


def _is_torch_device(obj: Any) -> bool:
    return type(obj).__name__ == "device" and type(obj).__module__ == "torch"


def _parse(spec: Any, index: Any) -> tuple[str, Optional[int]]:
    if isinstance(spec, device):
        if index is not None:
            raise TypeError("device: an index cannot be given with a device object.")
        return spec._type, spec._index
    if isinstance(spec, jax.Device):
        if index is not None:
            raise TypeError("device: an index cannot be given with a JAX device.")
        d = _from_jax(spec)
        return d._type, d._index
    if _is_torch_device(spec):
        spec, index = spec.type, spec.index if index is None else index
    if isinstance(spec, bool) or not isinstance(spec, (str, int)):
        raise TypeError(f"device: expected a device string ('cpu', 'cuda', 'cuda:1'), a device, a JAX device or "
                        f"an int, got {type(spec).__name__} {spec!r}.")
    if isinstance(spec, int):  # torch.device(1): the accelerator's device 1
        spec, index = "cuda", spec
    kind, sep, tail = spec.strip().partition(":")
    kind = _ALIASES.get(kind.lower(), kind.lower())
    if kind not in _TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_TYPES)} (or 'gpu', JAX's name for cuda) device type at "
                           f"start of device string: {spec}")
    if sep:
        if index is not None:
            raise RuntimeError(f"device: the string {spec!r} has an index already; do not pass index={index!r}.")
        if not tail.isdigit():
            raise RuntimeError(f"Invalid device string: {spec!r} (the index after ':' must be a non-negative int).")
        index = int(tail)
    if index is not None:
        if isinstance(index, bool) or not isinstance(index, int) and not hasattr(index, "__index__"):
            raise TypeError(f"device: index must be an int, got {type(index).__name__} {index!r}.")
        index = int(index)
        if index < 0:
            raise RuntimeError(f"Device index must not be negative, got {index}.")
    return kind, index


# -- JAX devices ---------------------------------------------------------------------------------
_PLATFORM_DEVICES: dict[str, list] = {}
_FROM_JAX: dict[Any, device] = {}
#: The index of the current CUDA device (fg.cuda.set_device).
CURRENT = {"cuda": 0}


def platform_devices(platform: str) -> list:
    """JAX's devices of ``platform`` (``'cpu'``, ``'gpu'``, ``'tpu'``), ``[]`` when it has none (cached)."""
    devices = _PLATFORM_DEVICES.get(platform)
    if devices is None:
        try:
            devices = list(jax.devices(platform))
        except RuntimeError:  # no such backend here
            devices = []
        _PLATFORM_DEVICES[platform] = devices
    return devices


def _from_jax(d: jax.Device) -> device:
    """The descriptor of a JAX device (cached): CPU device 0 is ``device('cpu')``, as in PyTorch."""
    out = _FROM_JAX.get(d)
    if out is None:
        kind = _TYPE_OF_PLATFORM.get(d.platform, d.platform)
        peers = platform_devices(d.platform)
        position = peers.index(d) if d in peers else d.id
        out = object.__new__(device)
        object.__setattr__(out, "_type", kind)
        object.__setattr__(out, "_index", None if kind == "cpu" and position == 0 else position)
        _FROM_JAX[d] = out
    return out


def unavailable(what: Any) -> DeviceUnavailableError:
    """The error for data asked onto a device this machine does not have, naming the portable idiom."""
    d = what if isinstance(what, device) else None
    kind = d.type if d is not None else str(what)
    seen = ", ".join(repr(x) for x in jax.devices())
    if kind == "cuda" and not platform_devices("gpu"):
        why = ("no CUDA device is available: JAX sees only " + seen + " (a GPU needs a CUDA-enabled jaxlib, "
               "e.g. pip install 'jax[cuda12]')")
    elif d is not None and d.type in _JAX_PLATFORM and platform_devices(d.platform):
        why = (f"there is no {str(d)!r}: this machine has {len(platform_devices(d.platform))} {d.type} device(s) "
               f"({seen})")
    else:
        why = f"no {kind!r} device is available here (JAX sees {seen})"
    return DeviceUnavailableError(
        f"Cannot place data on device {str(what)!r}: {why}. Write portable code by choosing the device at run "
        f"time: {IDIOM}, then pass device=device (or x.to(device), model.to(device)).")


def _jax_device_of(d: device) -> jax.Device:
    platform = _JAX_PLATFORM.get(d.type)
    devices = platform_devices(platform) if platform is not None else []
    if not devices:
        raise unavailable(d)
    index = d.index
    if index is None:
        index = CURRENT["cuda"] if d.type == "cuda" else 0
    if index >= len(devices):
        raise unavailable(d)
    return devices[index]


def jax_device(spec: Any) -> Any:
    """The ``jax.Device`` that ``spec`` names (a string, :class:`device`, JAX device, ``torch.device`` or int);
    a ``jax.sharding.Sharding`` is returned as it is."""
    if isinstance(spec, (jax.Device, jax.sharding.Sharding)):
        return spec
    return _jax_device_of(spec if isinstance(spec, device) else device(spec))


def is_device_like(arg: Any) -> bool:
    """Whether ``arg`` names a device (rather than a dtype) in ``x.to(...)``'s positional arguments."""
    if isinstance(arg, (device, jax.Device, jax.sharding.Sharding)) or _is_torch_device(arg):
        return True
    if isinstance(arg, str):
        kind = arg.strip().partition(":")[0].lower()
        return kind in _TYPES or kind in _ALIASES
    return False


def default_jax_device() -> jax.Device:
    """The device JAX puts new arrays on (``jax.default_device`` / ``jax_default_device``, else the first)."""
    d = jax.config.jax_default_device
    if d is None:
        return jax.devices()[0]
    if isinstance(d, str):
        return jax.devices(d)[0]
    return d


def default_device() -> device:
    """The descriptor of JAX's default device."""
    return _from_jax(default_jax_device())


def device_of(array: Any) -> device:
    """The descriptor of the device holding ``array`` (its first one if sharded; JAX's default device while
    traced, where the compiler places the values)."""
    if isinstance(array, jax.core.Tracer):
        return default_device()
    devices = getattr(array, "devices", None)
    if devices is None:
        return default_device()
    devs = devices()
    d = next(iter(devs)) if len(devs) == 1 else min(devs, key=lambda x: x.id)
    return _from_jax(d)


def put(array: Any, spec: Any) -> Any:
    """``array`` on the device (or sharding) ``spec`` names: itself when it is there already or while traced."""
    target = jax_device(spec)
    if type(array) is LazyArray:  # pending under deferred dispatch or fg.lazy: placing needs the value
        array = array.value()
    if isinstance(array, jax.core.Tracer) or not isinstance(array, jax.Array):
        return array
    if isinstance(target, jax.sharding.Sharding):
        from fgraph.distributed._placement import put_array  # also builds arrays on multi-process meshes

        return put_array(array, target)
    devs = array.devices()
    if len(devs) == 1 and target in devs:
        return array
    return jax.device_put(array, target)


def like_device(array: Any, spec: Any) -> Any:
    """PyTorch's default for ``*_like`` and ``x.new_*``: ``spec`` if given, else the device of ``array`` when
    JAX has committed it to one (an uncommitted array is on the default device, where new arrays go anyway)."""
    if spec is not None or isinstance(array, jax.core.Tracer) or not isinstance(array, jax.Array):
        return spec
    return device_of(array) if array.committed else None


def set_default_device(spec: Any) -> None:
    """Make new tensors go to ``spec`` (``torch.set_default_device``; ``None`` restores JAX's default):
    ``jax.config.update("jax_default_device", ...)``.

    Example:
        >>> import fgraph as fg
        >>> fg.set_default_device("cpu"); fg.get_default_device()
        device(type='cpu')
        >>> fg.set_default_device(None)
    """
    jax.config.update("jax_default_device", None if spec is None else jax_device(spec))


def get_default_device() -> device:
    """The device new tensors go to (``torch.get_default_device``)."""
    return default_device()
