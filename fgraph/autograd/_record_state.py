"""Extra work done when a node is recorded: saved-tensor hooks and anomaly mode.

Both live in one context variable so the op hot path checks a single value:
``None`` (the usual case) means nodes are recorded as they are.
"""
from __future__ import annotations

import contextvars
from typing import Any, Callable, NamedTuple, Optional


class RecordExtras(NamedTuple):
    """What recording does on top of building the node."""

    saved_hooks: Optional[tuple[Callable[[Any], Any], Callable[[Any], Any]]]  # innermost (pack, unpack)
    anomaly: Optional[bool]  # None: off; else the check_nan flag


RECORD_EXTRAS: contextvars.ContextVar[Optional[RecordExtras]] = contextvars.ContextVar(
    "fgraph_record_extras", default=None
)


def push_extras(**changes: Any) -> contextvars.Token:
    """Set some fields of the current extras (for the current context); returns a reset token."""
    current = RECORD_EXTRAS.get() or RecordExtras(None, None)
    updated = current._replace(**changes)
    if updated.saved_hooks is None and updated.anomaly is None:
        return RECORD_EXTRAS.set(None)
    return RECORD_EXTRAS.set(updated)
