"""Lazy step caching: ``with fg.lazy():`` runs eager code as one cached XLA program per step.

Inside the block, ops record their kernel calls instead of dispatching them; tensors hold
:class:`LazyArray` placeholders with the right shape and dtype, so graph recording,
``backward`` and ``opt.step`` run unchanged. The recorded trace runs as one ``jax.jit``
program when a value is needed (printing, ``.item()``, ``.numpy()``, ``bool()``, any
``jnp`` function on the data), at the end of the block, or when it grows past
``MAX_RECORDS``; the program is cached by the trace's structure, so a training-loop body
that records the same structure each step replays one compiled program per step.

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([1.0, 2.0], requires_grad=True)
    >>> with fg.lazy():
    ...     y = (x * x).sum()
    ...     grads = y.backward()
    >>> y.item(), grads[x].tolist()
    (5.0, [2.0, 4.0])
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Optional

from fgraph.lazy import _deferred
from fgraph.lazy._array import LazyArray, concrete, is_lazy
from fgraph.lazy._recorder import MAX_PROGRAMS, MAX_RECORDS, STATS, Recorder, cache_clear
from fgraph.lazy._state import LAZY

__all__ = ["lazy", "LazyArray", "is_lazy", "concrete", "Recorder"]


class lazy:
    """Context manager (and decorator) that turns on lazy step caching in this context.

    Nested blocks share the outer block's trace. Leaving the outermost block runs what is
    pending, so every value made inside is concrete afterwards. ``fg.lazy.stats()`` reads
    the counters (``traces``: programs compiled; ``hits``: replays of a cached program;
    ``flushes``; ``records``: kernel calls recorded).

    Example:
        >>> import fgraph as fg
        >>> @fg.lazy()
        ... def f(x):
        ...     return (x.exp() * 2).sum()
        >>> round(f(fg.zeros(3)).item(), 4)
        6.0
    """

    __slots__ = ("_tokens",)

    def __init__(self) -> None:
        self._tokens: list = []

    def __enter__(self) -> "lazy":
        rec = LAZY.get()
        if rec is not None and rec.deferred:  # a block is a trace of its own: run what deferred dispatch holds
            rec.flush()
            rec = None
        self._tokens.append((LAZY.set(rec if rec is not None else Recorder()), rec is None))
        return self

    def __exit__(self, *exc: Any) -> None:
        token, outermost = self._tokens.pop()
        rec = LAZY.get()
        LAZY.reset(token)
        if outermost and rec is not None:
            if exc[0] is None:
                rec.flush()
                return
            try:  # the block raised: still run what it recorded, so values made before the error stay readable
                rec.flush()
            except Exception:
                rec.discard()  # the block's own exception propagates

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def run_lazily(*args: Any, **kwargs: Any) -> Any:
            with lazy():
                return fn(*args, **kwargs)
        return run_lazily

    @staticmethod
    def flush() -> None:
        """Run the pending trace of the active block now (nothing happens outside one)."""
        rec = LAZY.get()
        if rec is not None:
            rec.flush()

    @staticmethod
    def is_active() -> bool:
        """Whether ops record lazily in this context (in a block, or under deferred dispatch)."""
        return LAZY.get() is not None

    @staticmethod
    def set_deferred(enabled: bool) -> None:
        """Deferred dispatch in this thread: eager ops record and run when a value is needed, a trace
        that keeps recurring as one compiled program (see ``docs/lazy.md``). It is on by default in the
        thread that imports fgraph (``FGRAPH_DEFERRED=0`` in the environment turns it off at import);
        ``False`` runs what is pending and dispatches op by op again.

        Example:
            >>> import fgraph as fg
            >>> before = fg.lazy.is_deferred()
            >>> fg.lazy.set_deferred(True)
            >>> y = fg.tensor([1.0, 2.0]).exp().sum()
            >>> fg.lazy.is_deferred(), round(y.item(), 3)
            (True, 10.107)
            >>> fg.lazy.set_deferred(before)
        """
        if enabled:
            _deferred.enable()
        else:
            _deferred.disable()

    @staticmethod
    def is_deferred() -> bool:
        """Whether this thread's eager ops are deferred (:meth:`set_deferred`)."""
        return _deferred.is_enabled()

    @staticmethod
    def op_by_op() -> "_deferred.eager_section":
        """Context manager: run what deferred dispatch holds, then dispatch op by op inside the block.

        For code that wants each op to run as it is called (timing one op, a section known to be
        faster op by op); outside deferred dispatch it changes nothing.

        Example:
            >>> import fgraph as fg
            >>> with fg.lazy.op_by_op():
            ...     y = fg.tensor([1.0, 2.0]).exp()
            ...     fg.lazy.pending()
            0
        """
        return _deferred.eager_section()

    @staticmethod
    def pending() -> int:
        """Kernel calls recorded and not yet run in the active block (0 outside one)."""
        rec = LAZY.get()
        return 0 if rec is None else len(rec)

    @staticmethod
    def stats() -> dict:
        """A copy of the counters: records, flushes, traces, hits, signatures, bypassed, evicted; deferred
        dispatch's one_by_one, observed, steps_recorded, left_out, recomputed, races_recorded and races_eager."""
        return dict(STATS)

    @staticmethod
    def reset_stats() -> None:
        """Zero the counters."""
        for k in STATS:
            STATS[k] = 0

    @staticmethod
    def concrete(x: Any) -> Any:
        """``x``'s concrete array if it is a :class:`LazyArray` (running its trace if pending), else ``x``."""
        return concrete(x)

    @staticmethod
    def cache_clear() -> None:
        """Drop every compiled replay program and traced backward kernel (the next use of each
        structure traces again)."""
        from fgraph.autograd import fused_lazy  # imports this package

        cache_clear()
        fused_lazy.clear_cache()


def active_recorder() -> Optional[Recorder]:
    """The recorder of the active block, or ``None``."""
    return LAZY.get()
