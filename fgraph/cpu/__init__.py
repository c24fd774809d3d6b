"""``fg.cpu``: ``torch.cpu``'s names that ported code uses: ``is_available()`` (always ``True``),
``device_count()``, ``current_device()``, ``synchronize()`` and the deprecated ``fg.cpu.amp`` spellings.

Example:
    >>> import fgraph as fg
    >>> fg.cpu.is_available(), fg.cpu.current_device()
    (True, 'cpu')
"""
from __future__ import annotations

from typing import Any

import jax

__all__ = ["is_available", "device_count", "current_device", "synchronize", "amp"]


def is_available() -> bool:
    """Always ``True``: JAX always has a CPU backend."""
    return True


def device_count() -> int:
    """1, as in PyTorch (JAX may split the host into several devices; ``len(jax.devices("cpu"))`` counts them)."""
    return 1


def current_device() -> str:
    """``'cpu'``, as in PyTorch."""
    return "cpu"


def synchronize(device: Any = None) -> None:
    """Wait until every live array on the CPU is ready (JAX dispatches asynchronously on the CPU too)."""
    for array in jax.live_arrays("cpu"):
        array.block_until_ready()


from fgraph.cpu import amp  # noqa: E402
