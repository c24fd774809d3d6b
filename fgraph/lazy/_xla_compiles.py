"""How many XLA compiles this process has run: deferred dispatch's race times no step during which one ran.

JAX reports each backend compile to :mod:`jax.monitoring` listeners; the listener is registered on first
use, so importing fgraph registers nothing.

Example:
    >>> import jax, jax.numpy as jnp
    >>> from fgraph.lazy import _xla_compiles
    >>> before = _xla_compiles.count()
    >>> _ = jax.jit(lambda v: v * 3 + 1)(jnp.ones(5))   # a new program: one compile
    >>> _xla_compiles.count() > before
    True
"""
from __future__ import annotations

import threading

from jax import monitoring

__all__ = ["count"]

_EVENT = "/jax/core/compile/backend_compile_duration"
_state = {"count": 0, "listening": False}
_lock = threading.Lock()


def _on_duration(event: str, duration: float, **_: object) -> None:
    if event == _EVENT:
        _state["count"] += 1


def count() -> int:
    """XLA compiles finished in this process since the first call (the first call starts counting)."""
    if not _state["listening"]:
        with _lock:
            if not _state["listening"]:
                monitoring.register_event_duration_secs_listener(_on_duration)
                _state["listening"] = True
    return _state["count"]
