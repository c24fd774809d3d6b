"""Python's cyclic garbage collector and define-by-run graphs: what exists at ``import fgraph`` is frozen.

An fgraph graph is Python objects (tensors, nodes, edges, pending placeholders), a few per op, alive from
the op to the end of the backward pass; PyTorch's is C++ and costs its collector nothing. The
collector's full collections (generation 2) walk *every* tracked object of the process, and after
``import fgraph`` -- JAX, jaxlib, NumPy and fgraph's own modules -- there are ~280,000 of them: one full
collection takes 200-270 ms on the 2-core CPU, and a training loop of small ops reaches one every few
hundred steps, as the graph objects alive at younger collections are promoted (on the per-op chain of
``benchmarks/overhead.py``, ~0.5 ms per step on average, and a 0.2 s pause when it comes).

At the end of ``import fgraph`` this module calls :func:`gc.freeze`: the objects that exist then move
to the collector's permanent generation, which no collection walks again (a full collection then
takes well under a millisecond). Reference counting frees them as before; the one thing lost is
the collection of a reference *cycle* among objects created before ``import fgraph`` that becomes
garbage later, which a program's imports rarely make. ``FGRAPH_GC_FREEZE=0`` in the environment
leaves the collector alone; :func:`gc.unfreeze` undoes it at any time.

Example:
    >>> import gc
    >>> import fgraph
    >>> gc.get_freeze_count() > 0 or not fgraph._gc.enabled_by_environment()
    True
"""
from __future__ import annotations

import gc
import os

__all__ = ["enabled_by_environment", "freeze_import_time_objects"]

_OFF_VALUES = ("0", "false", "no", "off")


def enabled_by_environment() -> bool:
    """Whether ``FGRAPH_GC_FREEZE`` leaves the freeze on (anything but ``0``/``false``/``no``/``off``)."""
    return os.environ.get("FGRAPH_GC_FREEZE", "").strip().lower() not in _OFF_VALUES


def freeze_import_time_objects() -> int:
    """Freeze the objects tracked now (see the module docstring), unless the environment opts out; returns the
    number of objects in the permanent generation afterwards."""
    if enabled_by_environment():
        gc.freeze()
    return gc.get_freeze_count()
