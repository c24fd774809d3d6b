"""``fg.accelerator``: ``torch.accelerator``'s device-agnostic names over JAX's devices.

The accelerator is the GPU when JAX has one (type ``"cuda"``), else a TPU (``"tpu"``), else none.

Example:
    >>> import fgraph as fg
    >>> device = fg.accelerator.current_accelerator() if fg.accelerator.is_available() else fg.device("cpu")
    >>> fg.ones(2, device=device).device.type == device.type
    True
"""
from __future__ import annotations

from typing import Any, Optional

from fgraph.device import CURRENT, device, platform_devices, unavailable

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "set_device_index",
           "synchronize"]


def _kind() -> Optional[str]:
    if platform_devices("gpu"):
        return "cuda"
    if platform_devices("tpu"):
        return "tpu"
    return None


def is_available() -> bool:
    """Whether JAX has an accelerator (a GPU or a TPU) here.

    Example:
        >>> import fgraph as fg
        >>> fg.accelerator.is_available() == (fg.accelerator.current_accelerator() is not None)
        True
    """
    return _kind() is not None


def current_accelerator(check_available: bool = False) -> Optional[device]:
    """``device(type='cuda')`` (or ``'tpu'``) when there is an accelerator, else ``None``."""
    kind = _kind()
    return None if kind is None else device(kind)


def device_count() -> int:
    """How many accelerator devices JAX sees (0 without one)."""
    kind = _kind()
    return 0 if kind is None else len(platform_devices(device(kind).platform))


def current_device_index() -> int:
    """The index of the current accelerator device (raises without one)."""
    kind = _kind()
    if kind is None:
        raise unavailable(device("cuda"))
    return CURRENT["cuda"] if kind == "cuda" else 0


current_device_idx = current_device_index


def set_device_index(index: Any) -> None:
    """Make accelerator device ``index`` the current one (``fg.cuda.set_device`` on a GPU)."""
    if _kind() == "cuda":
        from fgraph import cuda

        cuda.set_device(index)
    elif _kind() is None:
        raise unavailable(device("cuda"))


set_device_idx = set_device_index


def synchronize(device_index: Any = None) -> None:
    """Wait until the accelerator's queued work is done (``fg.cuda.synchronize`` on a GPU)."""
    kind = _kind()
    if kind is None:
        raise unavailable(device("cuda"))
    if kind == "cuda":
        from fgraph import cuda

        cuda.synchronize(device_index)
    else:
        import jax

        for array in jax.live_arrays("tpu"):
            array.block_until_ready()
