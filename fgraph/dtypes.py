"""Dtypes: PyTorch's names for them, type promotion, and the default floating dtype.

The dtype objects are ``numpy.dtype`` instances (what ``Tensor.dtype`` returns),
exported under PyTorch's names: ``fg.float32``/``fg.float``, ``fg.float64``/
``fg.double``, ``fg.float16``/``fg.half``, ``fg.bfloat16``, ``fg.int8``,
``fg.int16``/``fg.short``, ``fg.int32``/``fg.int``, ``fg.int64``/``fg.long``,
``fg.uint8``, ``fg.bool`` (also ``fg.bool_``), ``fg.complex64``/``fg.cfloat``,
``fg.complex128``/``fg.cdouble``. (``fg.float``, ``fg.int`` and ``fg.bool``
shadow the builtins only inside the ``fgraph`` namespace, as in ``torch``.)

Promotion follows ``jax.numpy`` (see ``docs/dtypes.md``): :func:`promote_types`
is JAX's type lattice, and :func:`result_type` is the dtype an op on those
operands returns, with Python scalars *weak* (``float16_tensor * 2.0`` stays
float16). Without JAX's x64 mode, ``int64``/``long`` is ``int32`` (one
:class:`DtypeNarrowingWarning` per process) and asking for float64/complex128 raises a
``TypeError`` that says how to turn x64 on (``docs/dtypes.md``).

Example:
    >>> import fgraph as fg
    >>> fg.promote_types(fg.int32, fg.float16)
    dtype('float16')
    >>> fg.result_type(fg.ones(2, dtype=fg.float16), 2.0)
    dtype('float16')
    >>> fg.get_default_dtype()
    dtype('float32')
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from fgraph._dtypes import DtypeNarrowingWarning, default_float_dtype, set_default_float_dtype
from fgraph.tensor import Tensor

_PyBool, _PyInt, _PyFloat, _PyComplex = bool, int, float, complex  # the builtins, shadowed below

__all__ = [
    "float16", "half", "bfloat16", "float32", "float", "float64", "double",
    "int8", "int16", "short", "int32", "int", "int64", "long", "uint8", "bool", "bool_",
    "complex64", "cfloat", "complex128", "cdouble",
    "promote_types", "result_type", "can_cast", "get_default_dtype", "set_default_dtype",
    "finfo", "iinfo", "is_floating_point", "is_complex", "DtypeNarrowingWarning",
]


def _dtype(dtype: Any, op: str) -> np.dtype:
    """``np.dtype(dtype)`` with an error that names ``op`` (no x64 check: these are queries)."""
    if isinstance(dtype, Tensor):
        raise TypeError(f"{op}: expected a dtype, got a Tensor; pass its .dtype.")
    try:
        return np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{op}: {dtype!r} is not a dtype; pass e.g. fgraph.float32 or 'float32'.") from None


def promote_types(type1: Any, type2: Any) -> np.dtype:
    """The smallest dtype both ``type1`` and ``type2`` convert to, on ``jax.numpy``'s lattice.

    Like ``torch.promote_types``, except where JAX's lattice differs (see
    ``docs/dtypes.md``: e.g. ``int64`` with ``uint64``).

    Example:
        >>> import fgraph as fg
        >>> fg.promote_types(fg.uint8, fg.int8), fg.promote_types(fg.bfloat16, fg.float16)
        (dtype('int16'), dtype('float32'))
    """
    return np.dtype(jnp.promote_types(_dtype(type1, "promote_types"), _dtype(type2, "promote_types")))


def result_type(*operands: Any) -> np.dtype:
    """The dtype of an elementwise op on ``operands`` (Tensors, Python scalars or dtypes).

    Python scalars are *weak*: they take the tensor's dtype when they fit its kind
    (``int8_tensor + 1`` is int8, ``float16_tensor * 2.0`` is float16); a Python
    float with an integer tensor gives JAX's default float (float64 with x64 on).

    Example:
        >>> import fgraph as fg
        >>> fg.result_type(fg.tensor([1, 2], dtype=fg.int8), 3)
        dtype('int8')
        >>> fg.result_type(fg.tensor([1.0], dtype=fg.float16), fg.tensor([1.0]))
        dtype('float32')
    """
    if not operands:
        raise TypeError("result_type: expected at least one operand (a Tensor, Python scalar or dtype).")
    args = []
    for a in operands:
        if isinstance(a, Tensor):
            args.append(a._array)
        elif isinstance(a, (_PyBool, _PyInt, _PyFloat, _PyComplex, np.ndarray, np.generic, jax.Array)):
            args.append(a)
        else:
            args.append(_dtype(a, "result_type"))
    return np.dtype(jnp.result_type(*args))


def _category(dt: np.dtype) -> _PyInt:
    if dt == np.bool_:
        return 0
    if jnp.issubdtype(dt, jnp.integer):
        return 1
    if jnp.issubdtype(dt, jnp.floating):
        return 2
    return 3


def can_cast(from_: Any, to: Any) -> _PyBool:
    """Whether ``torch.can_cast`` allows the cast: never to a lower kind (complex > float > int > bool).

    Example:
        >>> import fgraph as fg
        >>> fg.can_cast(fg.float64, fg.float16), fg.can_cast(fg.float32, fg.int32)
        (True, False)
    """
    return _category(_dtype(from_, "can_cast")) <= _category(_dtype(to, "can_cast"))


def get_default_dtype() -> np.dtype:
    """The dtype of tensors made from Python floats (float32 unless :func:`set_default_dtype` changed it).

    Example:
        >>> import fgraph as fg
        >>> fg.get_default_dtype() == fg.tensor(1.5).dtype
        True
    """
    return default_float_dtype()


def set_default_dtype(d: Any) -> None:
    """Make ``d`` (float32 or float64) the dtype of tensors made from Python floats.

    It applies to ``fg.tensor(1.5)``, and to ``zeros``, ``ones``, ``rand``, ``randn``,
    ``linspace``... without ``dtype=``. float64 needs JAX's x64 mode. Ops between
    tensors follow promotion and are not affected.

    Example (with x64 on, ``fg.set_default_dtype(fg.float64)`` makes both float64):
        >>> import fgraph as fg
        >>> fg.set_default_dtype(fg.float32)
        >>> fg.tensor([1.5]).dtype, fg.zeros(2).dtype
        (dtype('float32'), dtype('float32'))
    """
    set_default_float_dtype(d, "set_default_dtype")


def finfo(type: Any = None) -> Any:
    """Machine limits of a floating dtype (``bits``, ``eps``, ``max``, ``min``, ``tiny``...); default dtype if omitted.

    Example:
        >>> import fgraph as fg
        >>> fg.finfo(fg.bfloat16).bits, fg.finfo().bits
        (16, 32)
    """
    dt = default_float_dtype() if type is None else _dtype(type, "finfo")
    if not jnp.issubdtype(dt, jnp.inexact):
        raise TypeError(f"finfo: {dt} is not a floating point dtype; use fgraph.iinfo for integer dtypes.")
    return jnp.finfo(dt)


def iinfo(type: Any) -> Any:
    """Machine limits of an integer dtype (``bits``, ``min``, ``max``).

    Example:
        >>> import fgraph as fg
        >>> fg.iinfo(fg.uint8).max
        255
    """
    dt = _dtype(type, "iinfo")
    if not jnp.issubdtype(dt, jnp.integer):
        raise TypeError(f"iinfo: {dt} is not an integer dtype; use fgraph.finfo for floating point dtypes.")
    return jnp.iinfo(dt)


def is_floating_point(input: Tensor) -> _PyBool:
    """Whether ``input``'s dtype is a floating point type (float16, bfloat16, float32, float64).

    Example:
        >>> import fgraph as fg
        >>> fg.is_floating_point(fg.ones(2)), fg.is_floating_point(fg.arange(2))
        (True, False)
    """
    return _PyBool(jnp.issubdtype(input.dtype, jnp.floating))


def is_complex(input: Tensor) -> _PyBool:
    """Whether ``input``'s dtype is complex.

    Example:
        >>> import fgraph as fg
        >>> fg.is_complex(fg.ones(1, dtype=fg.complex64)), fg.is_complex(fg.ones(1))
        (True, False)
    """
    return _PyBool(jnp.issubdtype(input.dtype, jnp.complexfloating))


# -- the dtype objects (defined last: ``float``, ``int`` and ``bool`` shadow the builtins) -----------
float16 = half = np.dtype("float16")
bfloat16 = np.dtype(jnp.bfloat16)
float32 = np.dtype("float32")
float64 = double = np.dtype("float64")
int8 = np.dtype("int8")
int16 = short = np.dtype("int16")
int32 = np.dtype("int32")
int64 = long = np.dtype("int64")
uint8 = np.dtype("uint8")
bool_ = np.dtype("bool")
complex64 = cfloat = np.dtype("complex64")
complex128 = cdouble = np.dtype("complex128")
float = float32  # noqa: A001  (torch.float)
int = int32  # noqa: A001  (torch.int)
bool = bool_  # noqa: A001  (torch.bool)
