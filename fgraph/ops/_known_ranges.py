"""The value range of integer arrays already read from the host, kept across reshapes.

A class-index loss checks its targets' range on the host (PyTorch raises ``IndexError`` at the
op), which waits for every queued program. JAX arrays are immutable, so the range of one array
never changes and is read once: :func:`value_range` caches it by array identity (a weak
reference, so a freed array's entry cannot answer for a new one at the same address).
A reshape keeps the values, so its input and output share one entry (:func:`inherit`):
``targets.view(-1)``, a new array every step, costs one host read for the first view only.

Example:
    >>> import numpy as np, jax.numpy as jnp
    >>> from fgraph.ops._known_ranges import inherit, value_range
    >>> a = jnp.asarray(np.array([3, 1, -100, 2]))
    >>> value_range(a, ignore=-100)
    (1, 3)
    >>> b = a.reshape(2, 2)
    >>> inherit(a, b); value_range(b, ignore=-100)  # known: no host read
    (1, 3)
"""
from __future__ import annotations

import collections
import weakref
from typing import Any, Optional

import numpy as np

_LIMIT = 32  # entries kept: the targets of a few live batches, their views and validation sets
# id(array) -> (weak reference to the array, {ignored value: (min, max) of the others})
_KNOWN: "collections.OrderedDict[int, tuple[weakref.ref, dict]]" = collections.OrderedDict()


def _entry(array: Any) -> Optional[dict]:
    known = _KNOWN.get(id(array))
    if known is None or known[0]() is not array:
        return None
    return known[1]


def _remember(array: Any, ranges: dict) -> None:
    try:
        _KNOWN[id(array)] = (weakref.ref(array), ranges)
    except TypeError:  # an array type without weak references: not cached
        return
    _KNOWN.move_to_end(id(array))
    if len(_KNOWN) > _LIMIT:
        _KNOWN.popitem(last=False)


def _read(array: Any) -> np.ndarray:
    return np.asarray(array)  # waits for the program computing ``array``


def value_range(array: Any, ignore: int) -> tuple:
    """``(min, max)`` of ``array``'s values other than ``ignore``; ``(None, None)`` when there are none.

    Read from the host the first time an array (or an array it was reshaped from) is asked about.
    """
    ranges = _entry(array)
    if ranges is None:
        ranges = {}
        _remember(array, ranges)
    if ignore not in ranges:
        values = _read(array)
        values = values[values != ignore]
        ranges[ignore] = (int(values.min()), int(values.max())) if values.size else (None, None)
    return ranges[ignore]


def inherit(source: Any, result: Any) -> None:
    """``result`` holds ``source``'s integer values rearranged: the two share one entry, so a range read
    through either serves both (the next step's ``view`` of the same targets included)."""
    if source.dtype.kind not in "iu":
        return
    ranges = _entry(source)
    if ranges is None:
        ranges = {}
        _remember(source, ranges)
    _remember(result, ranges)
