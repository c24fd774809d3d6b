"""Deferred dispatch's programs compile on fusion's worker thread while the caller goes on kernel by kernel.

A trace whose rent is paid (``_deferred.py``) would otherwise compile on the caller's thread at
that flush: the whole step program of a model, hundreds of milliseconds in which nothing runs.
:func:`submit` hands the compile to ``fgraph.autograd.fusion``'s worker (one thread, yielding to
backward passes, as fusion's own compiles do) and the flush replays its trace one kernel at a time;
the program serves the trace's flushes from the first one after it is ready (:func:`install_ready`).

The worker traces and compiles for the inputs' abstract values -- shape, dtype, weak type and, for
committed arrays, their sharding: what ``jax.jit``'s caches are keyed by -- so the first call of the
program on the caller's thread finds its trace, lowering and executable cached, and the worker
holds no input array (an optimizer's donated buffers are consumed by the kernel-by-kernel replay).
"""
from __future__ import annotations

from typing import Any

import jax

from fgraph.lazy._recorder import _jit_quick_replay, _jit_replay, install
from fgraph.lazy._state import LAZY

__all__ = ["submit", "install_ready", "compiling", "ready"]

#: Keys whose program the worker is compiling.
compiling: set = set()
#: ``(key, program or None)`` the worker finished (``None``: it failed).
ready: list = []
#: Keys whose compile failed on the worker: they compile in the foreground, where the error is raised.
failed: set = set()


def submit(key: tuple, quick: bool, externals: list) -> bool:
    """Queue the compile of ``key``'s program for ``externals``; ``False`` when compiles run in the foreground."""
    from fgraph.autograd import fusion

    if not fusion._state["background"] or key in failed:
        return False
    avals = [jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type,
                                  sharding=a.sharding if a.committed else None) for a in externals]
    compiling.add(key)
    fusion._worker.submit(_compile, key, quick, avals)
    return True


def install_ready() -> None:
    """On the caller's thread: cache the programs the worker has finished."""
    while ready:
        key, program = ready.pop(0)
        compiling.discard(key)
        if program is not None:
            install(key, program)
        else:
            failed.add(key)


def _compile(key: tuple, quick: bool, avals: list) -> None:
    from fgraph.autograd.fusion import compile_politely

    LAZY.set(None)  # the job runs in a copy of the caller's context: nothing it traces is recorded
    program = None
    try:
        program = (_jit_quick_replay if quick else _jit_replay)(key)
        compile_politely(program, avals)
    except Exception:  # the caller's first call compiles (and raises) in the foreground
        program = None
    ready.append((key, program))
