"""Python numbers as device arrays made once.

``jax.jit`` copies every Python number argument from the host on every call: on a GPU a
synchronous transfer per number and call. A training step passes the same few numbers
(a learning rate, Adam's betas and eps) call after call; holding them as device arrays,
remade only when a new number object takes the place (a scheduler's step), avoids those
copies. The arrays are weakly typed, as jit makes the numbers, so programs do not change.

Example:
    >>> from fgraph._numbers import on_device
    >>> lr = 0.1
    >>> array, entry = on_device(lr, None)
    >>> on_device(lr, entry)[0] is array
    True
"""
from __future__ import annotations

from typing import Any, Optional

import jax.numpy as jnp

NUMBER_TYPES = frozenset((float, int, bool, complex))


def on_device(value: Any, known: Optional[tuple]) -> tuple[Any, Optional[tuple]]:
    """``(arrays, entry)``: ``value`` as a device array (a tuple of numbers: a tuple of arrays) and the entry
    to pass as ``known`` next time, which returns the same arrays while ``value`` is the same object.
    Anything but a number or a tuple of numbers comes back unchanged, with entry ``None``."""
    kind = type(value)
    if kind not in NUMBER_TYPES and kind is not tuple:
        return value, None
    if known is not None and known[0] is value:
        return known[1], known
    if kind is tuple:
        if not all(type(v) in NUMBER_TYPES for v in value):
            return value, None
        arrays: Any = tuple(jnp.asarray(v) for v in value)
    else:
        arrays = jnp.asarray(value)
    entry = (value, arrays)
    return arrays, entry
