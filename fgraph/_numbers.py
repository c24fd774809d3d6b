"""Python numbers as device arrays made once.

``jax.jit`` copies every Python number argument from the host on every call: on a GPU a
synchronous transfer per number and call (on the CPU ~1.6 us more per kernel call than a
device array). A training step passes the same few numbers call after call: a learning
rate, Adam's betas (:func:`on_device`, kept per slot while the same object stays there),
an op's constant (``x * 0.5``, LayerNorm's eps: :func:`constant`, cached by value). The
arrays are weakly typed, as jit makes the numbers, so programs and results do not change.

Example:
    >>> from fgraph._numbers import on_device
    >>> lr = 0.1
    >>> array, entry = on_device(lr, None)
    >>> on_device(lr, entry)[0] is array
    True
"""
from __future__ import annotations

from typing import Any, Optional

import jax
import jax.numpy as jnp

try:  # JAX's own test for "no trace is running" (~0.2 us); without it numbers stay numbers
    from jax._src.core import trace_state_clean as _at_top_level
except ImportError:  # pragma: no cover - a JAX without it
    def _at_top_level() -> bool:
        return False

NUMBER_TYPES = frozenset((float, int, bool, complex))

_CONSTANTS: dict = {}  # (type, value, x64) -> device array
MAX_CONSTANTS = 512  # a loop's constants are few; a stream of new ones (a changing factor) clears it now and then


def constants(values: list) -> list:
    """``values`` (a kernel's arguments) with their numbers as :func:`constant` arrays, unless JAX is
    tracing: inside a trace a number stays a literal of the program (a concrete array there becomes a
    constant the program hoists into an argument of its own; a cached rule kernel was once called
    without it)."""
    for value in values:
        if type(value) in NUMBER_TYPES:
            break
    else:  # a backward node's saved arrays, usually: no number, nothing to look up
        return values
    if not _at_top_level():
        return values
    return [constant(v) for v in values]


def constant(value: Any) -> Any:
    """An int, bool or float an op takes as an argument, as a device array cached by value; anything
    else (signed zeros and NaN included: equal keys would merge them) unchanged.

    Example:
        >>> from fgraph._numbers import constant
        >>> constant(0.5) is constant(0.5), constant(-0.0)
        (True, -0.0)
    """
    kind = type(value)
    if kind is float:
        if value == 0.0 or value != value:
            return value
    elif kind is not int and kind is not bool:
        return value
    key = (kind, value, jax.config.jax_enable_x64)
    array = _CONSTANTS.get(key)
    if array is None:
        try:
            array = jnp.asarray(value)
        except (OverflowError, TypeError, ValueError):  # the kernel call reports it, as before
            return value
        if len(_CONSTANTS) >= MAX_CONSTANTS:
            _CONSTANTS.clear()
        _CONSTANTS[key] = array
    return array


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
