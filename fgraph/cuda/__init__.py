"""``fg.cuda``: ``torch.cuda``'s everyday names, over JAX's GPU devices.

``is_available()``, ``device_count()``, ``current_device()``, ``set_device()``, ``synchronize()``,
``get_device_name()``, ``manual_seed``/``manual_seed_all``, ``empty_cache()`` and the deprecated
``fg.cuda.amp`` spellings. A "CUDA device" is one of ``jax.devices("gpu")`` (a ROCm GPU too, as in
PyTorch). Where a call needs a GPU and the machine has none it raises
:class:`fgraph.errors.DeviceUnavailableError`, naming the portable idiom
``device = "cuda" if fg.cuda.is_available() else "cpu"``. See ``docs/devices.md``.

fgraph has one random generator for every device (JAX's keys do not depend on where the draws run),
so ``manual_seed`` and ``manual_seed_all`` seed it, as ``fg.manual_seed`` does.

Example:
    >>> import fgraph as fg
    >>> device = "cuda" if fg.cuda.is_available() else "cpu"
    >>> fg.zeros(2, device=device).device.type == device
    True
"""
from __future__ import annotations

from typing import Any

import jax

from fgraph import random as _random
from fgraph.device import CURRENT, device as _device, platform_devices, unavailable

__all__ = ["is_available", "device_count", "current_device", "set_device", "synchronize", "get_device_name",
           "get_device_capability", "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed",
           "empty_cache", "is_bf16_supported", "is_initialized", "init", "memory_allocated",
           "max_memory_allocated", "reset_peak_memory_stats", "amp"]


def _gpus() -> list:
    return platform_devices("gpu")


def is_available() -> bool:
    """Whether JAX has a GPU here (``jax.devices("gpu")`` is not empty).

    Example:
        >>> import fgraph as fg, jax
        >>> fg.cuda.is_available() == any(d.platform == "gpu" for d in jax.devices())
        True
    """
    return bool(_gpus())


def device_count() -> int:
    """The number of GPUs JAX sees (0 without one).

    Example:
        >>> import fgraph as fg
        >>> fg.cuda.device_count() == len(fg.cuda._gpus())
        True
    """
    return len(_gpus())


def is_initialized() -> bool:
    """Whether a GPU is available (JAX starts its backends itself; there is nothing to initialise)."""
    return is_available()


def init() -> None:
    """Accepted (JAX starts its backends itself); raises without a GPU, as ``torch.cuda.init`` does."""
    _require(None)


def _index(device: Any) -> int:
    """The GPU index ``device`` names (an int, ``"cuda:1"``, an :class:`fgraph.device`; ``None``: the current one)."""
    if device is None:
        return CURRENT["cuda"]
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    d = _device(device)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return CURRENT["cuda"] if d.index is None else d.index


def _require(device: Any) -> jax.Device:
    """The JAX GPU ``device`` names, or :class:`DeviceUnavailableError` naming the portable idiom."""
    index = _index(device)
    gpus = _gpus()
    if not 0 <= index < len(gpus):
        raise unavailable(_device("cuda", index) if device is not None else _device("cuda"))
    return gpus[index]


def current_device() -> int:
    """The index of the current GPU (``fg.device("cuda")`` places data there); set with :func:`set_device`."""
    _require(None)
    return CURRENT["cuda"]


def set_device(device: Any) -> None:
    """Make ``device`` (an index, ``"cuda:1"`` or an :class:`fgraph.device`) the current GPU: ``"cuda"``
    without an index means it from now on."""
    index = _index(device)
    _require(index)
    CURRENT["cuda"] = index


def synchronize(device: Any = None) -> None:
    """Wait until the work queued on the GPU ``device`` (the current one by default) is done: blocks until
    every live array on it is ready (JAX dispatches asynchronously, as CUDA does)."""
    target = _require(device)
    for array in jax.live_arrays("gpu"):
        if target in array.devices():
            array.block_until_ready()


def get_device_name(device: Any = None) -> str:
    """The GPU's name (JAX's ``device_kind``, e.g. ``'NVIDIA H100 80GB HBM3'``)."""
    return _require(device).device_kind


def get_device_capability(device: Any = None) -> tuple[int, int]:
    """The GPU's CUDA compute capability as ``(major, minor)`` (``(0, 0)`` where JAX does not report one)."""
    capability = getattr(_require(device), "compute_capability", None)
    try:
        major, minor = str(capability).split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        return 0, 0


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether bfloat16 runs on the GPU: whenever there is one (XLA supports it on every GPU it runs on)."""
    return is_available()


def manual_seed(seed: int) -> None:
    """Seed fgraph's random generator (one for every device: ``fg.manual_seed(seed)``)."""
    _random.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """Seed fgraph's random generator (one for every device: ``fg.manual_seed(seed)``)."""
    _random.manual_seed(seed)


def seed() -> None:
    """Seed fgraph's random generator with a random number (``fg.seed()``)."""
    _random.seed()


def seed_all() -> None:
    """Seed fgraph's random generator with a random number (``fg.seed()``)."""
    _random.seed()


def initial_seed() -> int:
    """The seed of fgraph's random generator (``fg.initial_seed()``)."""
    return _random.initial_seed()


def empty_cache() -> None:
    """Does nothing: XLA manages device memory (set ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` to have JAX take
    memory as needed instead of preallocating it)."""


def _stats(device: Any) -> dict:
    stats = _require(device).memory_stats()
    return stats or {}


def memory_allocated(device: Any = None) -> int:
    """Bytes of GPU memory in use by arrays (JAX's ``memory_stats()['bytes_in_use']``)."""
    return int(_stats(device).get("bytes_in_use", 0))


def max_memory_allocated(device: Any = None) -> int:
    """The peak of :func:`memory_allocated` (JAX's ``memory_stats()['peak_bytes_in_use']``)."""
    return int(_stats(device).get("peak_bytes_in_use", 0))


def reset_peak_memory_stats(device: Any = None) -> None:
    """Accepted (JAX keeps its own peak counter and has no call to reset it)."""
    _require(device)


from fgraph.cuda import amp  # noqa: E402
