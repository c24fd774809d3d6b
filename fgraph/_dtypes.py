"""Dtype helpers: default dtypes, x64 checks, which dtypes can carry gradients.

fgraph follows ``jax.numpy``'s promotion rules, with Python scalars weak: adding
``2.0`` to a float16 tensor stays float16. Python floats become float32 by default
(PyTorch's default dtype), whatever JAX's x64 mode says; :func:`set_default_dtype`
switches that default to float64 (see ``docs/dtypes.md``).

float64 needs JAX's x64 mode, which must be switched on before any array is made::

    import jax
    jax.config.update("jax_enable_x64", True)
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["canonical_dtype", "is_differentiable_dtype", "default_float_dtype", "set_default_float_dtype",
           "x64_enabled"]

_WIDE = {np.dtype("float64"), np.dtype("int64"), np.dtype("uint64"), np.dtype("complex128")}
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


def canonical_dtype(dtype: Any, op: str = "tensor") -> np.dtype | None:
    """Normalise a user dtype (``'float32'``, ``jnp.float32``, ``np.float64``...) to ``np.dtype``.

    Raises a clear error for 64-bit dtypes when JAX's x64 mode is off instead of
    letting JAX silently downcast.
    """
    if dtype is None:
        return None
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{op}: {dtype!r} is not a dtype; pass e.g. fgraph.float32 or 'float32'.") from None
    if dt in _WIDE and not x64_enabled():
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
