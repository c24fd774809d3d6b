"""Helpers shared by the elementwise math families (elementwise_math, trigonometric,
special, rounding): integer-to-float promotion inside kernels, zero-gradient rules,
and dtype checks that name the op, the operands and the fix.

Example:
    >>> import jax.numpy as jnp
    >>> from fgraph.ops._math_helpers import to_floating
    >>> str(to_floating(jnp.array([1, 2], jnp.int32)).dtype)
    'float32'
"""
from __future__ import annotations

from typing import Any, Callable

import jax.numpy as jnp
import numpy as np

from fgraph.errors import OpError
from fgraph.tensor import Tensor, type_name, _wrap

__all__ = [
    "to_floating", "floating_args", "float_unary", "operand_hint", "operands_hint", "zero_grads", "dtype_of",
    "describe", "check_float_tensor", "check_not_bool", "check_number",
]


# -- inside kernels (pure JAX, traceable) -------------------------------------------------------
def to_floating(x: Any) -> Any:
    """Integer and bool arrays become float32 (PyTorch's default dtype), as ``torch.exp(int_tensor)``."""
    x = jnp.asarray(x)
    return x if jnp.issubdtype(x.dtype, jnp.inexact) else x.astype(jnp.float32)


def floating_args(*xs: Any) -> tuple:
    """Binary/ternary version of :func:`to_floating`: promote together, then to float32 if integral.

    Python scalars stay weak (``atan2(x_f16, 2)`` stays float16).
    """
    if jnp.issubdtype(jnp.result_type(*xs), jnp.inexact):
        return xs
    return tuple(jnp.asarray(x, jnp.float32) for x in xs)


def float_unary(fn: Callable[[Any], Any], name: str) -> Callable[[Any], Any]:
    """A forward kernel ``fn(to_floating(x))``, named ``name`` (for tracebacks and profiles)."""

    def forward(x: Any) -> Any:
        return fn(to_floating(x))

    forward.__name__ = forward.__qualname__ = f"_{name}_forward"
    return forward


def operand_hint(args: tuple, params: Any) -> str:
    """``hint=`` for unary ops: what a failed call should have passed."""
    bad = [type(a).__name__ for a in args if not isinstance(a, Tensor) and dtype_of(a) == np.dtype(object)]
    if bad:
        return f"Pass a Tensor (e.g. fgraph.tensor([...])) or a Python number, not {', '.join(bad)}."
    return ""


def operands_hint(args: tuple, params: Any) -> str:
    """``hint=`` for ops with several operands: a wrong operand type, else shapes that do not broadcast."""
    wrong = operand_hint(args, params)
    if wrong:
        return wrong
    shapes = [tuple(a.shape) for a in args if isinstance(a, Tensor)]
    return (
        f"Shapes {shapes} must broadcast: align them from the right, where each pair of sizes "
        "is equal or one of them is 1 (use unsqueeze/reshape to add dimensions)."
    )


# -- inside rules ----------------------------------------------------------------------------------
def zero_grads(ctx: Any, g: Tensor) -> tuple:
    """Zero gradient for every input that needs one (rounded division, floor...), as in PyTorch."""
    return tuple(
        _wrap(jnp.zeros(shape, g.dtype)) if need else None for need, shape in zip(ctx.needs, ctx.shapes)
    )


# -- argument checks in public functions (static metadata only: no host round trips) ----------------
def dtype_of(a: Any) -> np.dtype:
    """The dtype of a Tensor, or the dtype a Python scalar would take (bool, int64, float32...)."""
    if isinstance(a, Tensor) or hasattr(a, "dtype"):
        return np.dtype(a.dtype)
    if isinstance(a, bool):
        return np.dtype(np.bool_)
    if isinstance(a, int):
        return np.dtype(np.int64)
    if isinstance(a, float):
        return np.dtype(np.float32)
    if isinstance(a, complex):
        return np.dtype(np.complex64)
    return np.dtype(object)


def describe(a: Any) -> str:
    """``'shape (2, 3) float32'`` for a Tensor, ``'Python float 1.5'`` for a scalar."""
    if isinstance(a, Tensor) or hasattr(a, "shape"):
        return f"shape {tuple(a.shape)} {a.dtype}"
    return f"Python {type(a).__name__} {a!r}"


def check_float_tensor(op: str, name: str, a: Any) -> None:
    """``a`` must be a floating-point or complex Tensor (lerp's operands)."""
    if not isinstance(a, Tensor):
        raise OpError(
            f"{op}: argument '{name}' must be a Tensor, got {type_name(a)}; wrap it with fgraph.tensor(...)."
        )
    dtype = a._array.dtype
    if dtype.kind not in "fc" and not jnp.issubdtype(dtype, jnp.floating):  # bfloat16's kind is 'V'
        raise OpError(
            f"{op}: argument '{name}' must be a floating-point or complex tensor, got {describe(a)}; "
            "cast it first, e.g. x.float()."
        )


def check_not_bool(op: str, *args: Any) -> None:
    """Arithmetic that PyTorch does not define on bool (floor, remainder...): a clear error."""
    for a in args:  # hot path: one dtype look-up per operand
        if isinstance(a, Tensor):
            if a._array.dtype.kind != "b":
                return
        elif type(a) is float or type(a) is int or not isinstance(a, (bool, np.bool_)) and dtype_of(a).kind != "b":
            return
    described = ", ".join(describe(a) for a in args)
    raise OpError(
        f"{op}: not defined for bool operands ({described}); cast to a numeric dtype first, e.g. x.int() or x.float()."
    )


def check_number(op: str, name: str, value: Any, *, integer: bool = False) -> Any:
    """A static Python number argument (``decimals``, ``eps``, ``n``...), returned hashable."""
    if isinstance(value, Tensor) or isinstance(value, bool) or hasattr(value, "shape") and np.ndim(value) != 0:
        raise OpError(
            f"{op}: '{name}' must be a Python {'int' if integer else 'number'}, got {describe(value)}."
        )
    if integer:
        if not isinstance(value, (int, np.integer)):
            raise OpError(f"{op}: '{name}' must be a Python int, got {describe(value)}.")
        return int(value)
    if not isinstance(value, (int, float, np.integer, np.floating)):
        raise OpError(f"{op}: '{name}' must be a Python number, got {describe(value)}.")
    return float(value)
