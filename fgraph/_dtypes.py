"""Dtype helpers: default dtypes, x64 checks, which dtypes can carry gradients.

fgraph follows ``jax.numpy``'s promotion rules, with Python scalars weak: adding
``2.0`` to a float16 tensor stays float16. Python floats become float32 by default
(PyTorch's default dtype), whatever JAX's x64 mode says; :func:`set_default_dtype`
switches that default to float64 (see ``docs/dtypes.md``).

With JAX's x64 mode off (JAX's default), one rule holds on every path (``docs/dtypes.md``):

* ``int64``/``long`` (and ``uint64``) is the widest integer JAX has there, ``int32`` (``uint32``): an
  explicit ``dtype=``, ``x.long()``, ``x.to(fg.int64)``, 64-bit NumPy or torch data and checkpoints
  all give it, with one :class:`DtypeNarrowingWarning` per process. A concrete value that does not fit
  raises ``OverflowError`` instead of wrapping.
* 64-bit *data* (float64 NumPy arrays, torch doubles) becomes float32/complex64 likewise, but an
  explicit float64/complex128 *request* raises: the precision it asks for cannot be given.

Switch x64 on before any array is made for true 64-bit dtypes::

    import jax
    jax.config.update("jax_enable_x64", True)
"""
from __future__ import annotations

import warnings
from typing import Any, Optional

import jax
import jax.numpy as jnp
import numpy as np

from fgraph._stacklevel import user_stacklevel

__all__ = ["canonical_dtype", "is_differentiable_dtype", "default_float_dtype", "set_default_float_dtype",
           "x64_enabled", "DtypeNarrowingWarning", "narrowing_hint", "host_for_jax", "check_int_fits", "int_overflow"]

_WIDE = {np.dtype("float64"), np.dtype("int64"), np.dtype("uint64"), np.dtype("complex128")}
#: With x64 off: the 32-bit dtype JAX stores each 64-bit dtype's values in.
_NARROW = {np.dtype("int64"): np.dtype("int32"), np.dtype("uint64"): np.dtype("uint32"),
           np.dtype("float64"): np.dtype("float32"), np.dtype("complex128"): np.dtype("complex64")}
_NARROW_INTEGERS = (np.dtype("int32"), np.dtype("uint32"))
_X64_ON = "jax.config.update(\"jax_enable_x64\", True)"
_DEFAULT_CHOICES = (np.dtype("float32"), np.dtype("float64"))

#: The dtype of tensors made from Python floats (and of float creation functions
#: without ``dtype=``). A one-element list so that it can be switched in place.
_DEFAULT_FLOAT = [np.dtype("float32")]


def default_float_dtype() -> np.dtype:
    """The current default floating dtype (float32 unless :func:`set_default_float_dtype` changed it)."""
    return _DEFAULT_FLOAT[0]


def set_default_float_dtype(dtype: Any, op: str = "set_default_dtype") -> None:
    """Make ``dtype`` (float32 or float64) the default floating dtype, like ``torch.set_default_dtype``."""
    dt = canonical_dtype(dtype, op)
    if dt not in _DEFAULT_CHOICES:
        raise TypeError(
            f"{op}: the default dtype must be float32 or float64, got {dt}; integer, bool and "
            "half-precision tensors are made by passing dtype= explicitly."
        )
    _DEFAULT_FLOAT[0] = dt


def x64_enabled() -> bool:
    return bool(jax.config.jax_enable_x64)


class DtypeNarrowingWarning(UserWarning):
    """A 64-bit dtype was stored in 32 bits because JAX's x64 mode is off (``long`` -> ``int32``...).

    Shown once per process, the first time it happens; see ``docs/dtypes.md``. Silence it with
    ``warnings.filterwarnings("ignore", category=fg.DtypeNarrowingWarning)``, or turn x64 on.

    Example:
        >>> import fgraph as fg
        >>> issubclass(fg.DtypeNarrowingWarning, UserWarning)
        True
    """


_NARROWING_WARNED = [False]  # the warning is shown once per process


def warn_narrowing(wide: np.dtype, narrow: np.dtype, op: str) -> None:
    """The one :class:`DtypeNarrowingWarning` of this process (nothing after the first)."""
    if _NARROWING_WARNED[0]:
        return
    _NARROWING_WARNED[0] = True
    warnings.warn(
        f"{op}: JAX's 64-bit mode is off, so {wide} is stored as {narrow}. fgraph's rule without x64: "
        "int64 (long) is int32 and uint64 is uint32 everywhere (dtype=, .long(), .to(), NumPy/torch data, "
        "checkpoints), so index arithmetic runs unchanged and a value that does not fit raises OverflowError; "
        "float64/complex128 data becomes float32/complex64 (an explicit float64 request raises). For true "
        f"64-bit dtypes turn x64 on before creating any array: {_X64_ON}. "
        "This warning is shown once per process.",
        DtypeNarrowingWarning,
        stacklevel=user_stacklevel(),
    )


def narrowing_hint(dtype: Any) -> str:
    """A sentence for range errors on ``dtype``: how to get int64 when x64 narrowing made it int32."""
    if x64_enabled() or np.dtype(dtype) not in _NARROW_INTEGERS:
        return ""
    return (f" JAX's 64-bit mode is off, so int64 (long) is {np.dtype(dtype)}; for larger values turn it on "
            f"before creating any array: {_X64_ON}.")


def check_int_fits(host: np.ndarray, dtype: np.dtype, op: str) -> None:
    """Raise ``OverflowError`` if integer ``host`` values do not fit integer ``dtype`` (instead of wrapping)."""
    if host.size == 0 or host.dtype.kind not in "iu" or dtype.kind not in "iu":
        return
    info = np.iinfo(dtype)
    low, high = host.min(), host.max()
    if low < info.min or high > info.max:
        raise int_overflow(int(low if low < info.min else high), dtype, op)


def int_overflow(value: int, dtype: np.dtype, op: str) -> OverflowError:
    """The error for an integer ``value`` that ``dtype`` cannot hold (instead of wrapping it around)."""
    info = np.iinfo(dtype)
    return OverflowError(
        f"{op}: value {value} does not fit {dtype} (range [{info.min}, {info.max}]); it would wrap around "
        f"silently.{narrowing_hint(dtype) or ' Pass a wider dtype=.'}"
    )


def host_for_jax(host: np.ndarray, dtype: Optional[np.dtype], op: str, *, user_data: bool) -> np.ndarray:
    """``host`` checked for ``jnp.array(host, dtype)``: no integer may wrap around silently.

    Python numbers (``user_data=False``) must fit an integer ``dtype``, as in PyTorch. With x64 off,
    64-bit integer arrays (``user_data=True``: NumPy, torch, checkpoints) stored as int32/uint32 must
    fit too, and 64-bit arrays stored in 32 bits for want of x64 (``dtype=None``) give the
    :class:`DtypeNarrowingWarning`.

    Example:
        >>> import numpy as np
        >>> from fgraph._dtypes import host_for_jax
        >>> host_for_jax(np.asarray([1, 2]), np.dtype("int8"), "tensor", user_data=False).tolist()
        [1, 2]
    """
    narrowing = not x64_enabled()
    wide = host.dtype in _NARROW
    target = dtype if dtype is not None else _NARROW[host.dtype] if narrowing and wide else host.dtype
    if host.dtype.kind in "iu" and target.kind in "iu" and not np.can_cast(host.dtype, target) and (
            not user_data or (narrowing and wide and target in _NARROW_INTEGERS)):
        check_int_fits(host, target, op)
    if narrowing and user_data and wide and dtype is None:  # (a narrowed dtype= warned in canonical_dtype)
        warn_narrowing(host.dtype, target, op)
    return host


def canonical_dtype(dtype: Any, op: str = "tensor") -> np.dtype | None:
    """Normalise a user dtype (``'float32'``, ``jnp.float32``, ``np.float64``...) to ``np.dtype``.

    With JAX's x64 mode off, ``int64``/``uint64`` become ``int32``/``uint32`` (one
    :class:`DtypeNarrowingWarning` per process) and ``float64``/``complex128`` raise a clear error
    instead of letting JAX silently downcast.

    Example:
        >>> import fgraph as fg
        >>> from fgraph._dtypes import canonical_dtype
        >>> canonical_dtype("float32"), canonical_dtype(fg.int64) in (fg.int64, fg.int32)
        (dtype('float32'), True)
    """
    if dtype is None:
        return None
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{op}: {dtype!r} is not a dtype; pass e.g. fgraph.float32 or 'float32'.") from None
    if dt in _WIDE and not x64_enabled():
        if dt.kind in "iu":
            warn_narrowing(dt, _NARROW[dt], op)
            return _NARROW[dt]
        raise TypeError(
            f"{op}: dtype {dt} needs JAX's 64-bit mode, which is off. Turn it on before creating "
            "any array: jax.config.update('jax_enable_x64', True) (or set JAX_ENABLE_X64=1), "
            f"or use {str(dt).replace('64', '32')}."
        )
    return dt


def is_differentiable_dtype(dtype: Any) -> bool:
    """Only floating and complex tensors may require grad."""
    try:
        return _DIFFERENTIABLE[dtype]
    except (KeyError, TypeError):  # TypeError: an unhashable dtype-like
        answer = bool(jnp.issubdtype(dtype, jnp.inexact))
    try:
        _DIFFERENTIABLE[dtype] = answer
    except TypeError:
        pass
    return answer


_DIFFERENTIABLE: dict = {}  # dtype -> is_differentiable_dtype (jnp.issubdtype costs ~5 us a call)
