"""Which tensors a compiled function returned, so that ``.backward()`` on one names the fix.

A compiled step's results come back detached: their graph lived inside the XLA program.
PyTorch code that calls ``loss.backward()`` on the value a compiled step returned would
otherwise meet the engine's generic "does not require grad" error. The step marks what it
returns here (weakly: a bounded table of the most recent results, never keeping a tensor
alive), and the engine asks :func:`detached_hint` when a root or input has no graph.

Example:
    >>> import fgraph as fg
    >>> from fgraph.compile._outputs import detached_hint, mark
    >>> t = fg.ones(2)
    >>> detached_hint(t)
    ''
    >>> mark(t, "train_step")
    >>> "fg.compile" in detached_hint(t)
    True
"""
from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Any

__all__ = ["mark", "mark_tree", "detached_hint"]

#: id(tensor) -> (weak reference, function name); the oldest entries go first past _CAPACITY.
_RETURNED: "OrderedDict[int, tuple[weakref.ref, str]]" = OrderedDict()
_CAPACITY = 256


def mark(tensor: Any, name: str) -> None:
    """Remember that the compiled function ``name`` returned ``tensor``."""
    key = id(tensor)
    _RETURNED.pop(key, None)
    _RETURNED[key] = (weakref.ref(tensor), name)
    if len(_RETURNED) > _CAPACITY:
        try:
            _RETURNED.popitem(last=False)
        except KeyError:  # another thread emptied it
            pass


def mark_tree(outputs: Any, name: str) -> None:
    """:func:`mark` every Tensor in the (nested list/tuple/dict) result of a compiled call."""
    from fgraph.tensor import Tensor

    stack = [outputs]
    while stack:
        value = stack.pop()
        if isinstance(value, Tensor):
            mark(value, name)
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())


def detached_hint(tensor: Any) -> str:
    """A sentence for the engine's error when ``tensor`` came out of a compiled function, else ``''``."""
    entry = _RETURNED.get(id(tensor))
    if entry is None or entry[0]() is not tensor:
        return ""
    return (
        f"it was returned by the compiled function {entry[1]!r} (fg.compile): compiled results come back "
        "detached, because their graph lived inside the compiled program. Differentiate inside the function "
        "and return what you need: `grads = loss.backward(); opt.step(grads); return loss` (or "
        "`return loss, fg.grad(loss, params)`); see docs/compile.md."
    )
