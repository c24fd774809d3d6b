"""The lazy-mode switch the kernel call points read: one ``ContextVar`` holding the active recorder.

Kept free of fgraph imports so ``fgraph.ops._declare``, the engine and the optimizer can
import it without cycles. ``LAZY.get()`` is ``None`` outside ``with fg.lazy():``.
"""
from __future__ import annotations

import contextvars
from typing import Any

#: The active :class:`fgraph.lazy._recorder.Recorder`, or ``None`` (eager).
LAZY: contextvars.ContextVar[Any] = contextvars.ContextVar("fgraph_lazy", default=None)
