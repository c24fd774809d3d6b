"""Numerics: ``logaddexp logaddexp2 xlogy nan_to_num float_power heaviside copysign signbit
deg2rad rad2deg clamp_min clamp_max isclose allclose equal``.

Gradients follow PyTorch's formulas, special points included:

* ``logaddexp(a, b)``: ``g / (1 + exp(b - a))`` for ``a`` (NaN where both are the same
  infinity, as in PyTorch);
* ``xlogy(x, y)``: ``xlogy(g, y)`` for ``x`` (0 where ``x = 0`` and ``y <= 0``) and ``g * x / y``
  for ``y`` (NaN at ``x = y = 0``);
* ``nan_to_num``: the gradient passes where the input is finite, else 0 (for complex input, each
  part where that part is finite: the parts are replaced separately);
* ``copysign(x, y)``: ``+-g`` for ``x`` (0 at ``x = 0``), 0 for ``y``;
* ``heaviside`` has no derivative in PyTorch: its backward raises an error naming it.

``isclose`` returns a bool Tensor; ``allclose`` and ``equal`` return Python bools, as in
PyTorch (they read the values, so they need concrete arrays: not under ``jax.jit``).

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([0.0, 2.0], requires_grad=True)
    >>> (g,) = fg.grad(fg.xlogy(x, fg.tensor([0.0, 1.0])).sum(), [x])
    >>> g.tolist()   # 0 at x = y = 0, log(y) elsewhere
    [0.0, 0.0]
"""
from __future__ import annotations

import math
from typing import Any, Optional

import jax.numpy as jnp
import numpy as np

from fgraph.errors import OpError
from fgraph.ops._declare import apply_op, apply_unary, declare
from fgraph.ops._index_checks import is_traced
from fgraph.ops._math_helpers import check_number, describe, floating_args, operands_hint
from fgraph.ops._complex import refuse_complex
from fgraph.ops._variants import node_variant
from fgraph.ops.elementwise import (
    CLAMP, CLAMP_TENSOR, Number, clamp_as, eq, exp, le, log, logical_and, pow, to_dtype, where, zeros_of,
)
from fgraph.ops.elementwise_math import exp2
from fgraph.ops.rounding import isfinite
from fgraph.tensor import Tensor, _wrap, type_name


def _dtype(a: Any) -> Any:
    return a.dtype if isinstance(a, Tensor) else None


# -- logaddexp, logaddexp2 ---------------------------------------------------------------------------
def _logaddexp_forward(a, b):
    return jnp.logaddexp(*floating_args(a, b))


def _logaddexp2_forward(a, b):
    return jnp.logaddexp2(*floating_args(a, b))


def _logaddexp_rule(ctx, g):
    a, b = ctx.inputs
    ga = g / (exp(b - a) + 1) if ctx.needs[0] else None
    gb = g / (exp(a - b) + 1) if ctx.needs[1] else None
    return ga, gb


def _logaddexp2_rule(ctx, g):
    a, b = ctx.inputs
    ga = g / (exp2(b - a) + 1) if ctx.needs[0] else None
    gb = g / (exp2(a - b) + 1) if ctx.needs[1] else None
    return ga, gb


LOGADDEXP = declare("logaddexp", _logaddexp_forward, _logaddexp_rule, save_inputs=True, hint=operands_hint)
LOGADDEXP2 = declare("logaddexp2", _logaddexp2_forward, _logaddexp2_rule, save_inputs=True, hint=operands_hint,
                     real_only=True)


def _binary(op: Any, name: str, input: Any, other: Any) -> Tensor:
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise OpError(f"{name}: expected at least one Tensor, got {type_name(input)} and {type_name(other)}; "
                      "wrap one with fgraph.tensor(...).")
    return apply_op(op, (input, other))


def logaddexp(input: Number, other: Number) -> Tensor:
    """``log(exp(input) + exp(other))``, computed stably (``-inf`` with ``-inf`` gives ``-inf``).

    Example:
        >>> import fgraph as fg
        >>> fg.logaddexp(fg.tensor([0.0, -float("inf")]), fg.tensor([0.0, -float("inf")])).tolist()[1]
        -inf
    """
    return _binary(LOGADDEXP, "logaddexp", input, other)


def logaddexp2(input: Number, other: Number) -> Tensor:
    """``log2(2**input + 2**other)``, computed stably.

    Example:
        >>> import fgraph as fg
        >>> fg.logaddexp2(fg.tensor([1.0]), fg.tensor([1.0])).tolist()
        [2.0]
    """
    return _binary(LOGADDEXP2, "logaddexp2", input, other)


# -- xlogy ---------------------------------------------------------------------------------------------
def _xlogy_forward(x, y):
    x, y = floating_args(x, y)
    out = jnp.where(x == 0, jnp.zeros((), jnp.result_type(x, y)), x * jnp.log(y))
    return jnp.where(jnp.isnan(y), jnp.nan, out).astype(out.dtype)


def at_zero_x(x: Tensor, y: Any, edge: float) -> Any:
    """``(x == 0) & (y <= edge)``: where PyTorch zeroes xlogy's (xlog1py's) gradient for ``x``."""
    if isinstance(y, Tensor):
        return logical_and(eq(x, 0), le(y, edge))
    return eq(x, 0) if y <= edge else None


def g_times(g: Tensor, factor: Tensor) -> Tensor:
    """``xlogy(g, y)``'s value in the rules of xlogy and xlog1py (``g * factor``, 0 where ``g == 0``), not by
    calling the op itself: the transpose of a rule that calls its own op would recurse (forward mode)."""
    return where(eq(g, 0), 0.0, g * factor)


def _xlogy_rule(ctx, g):
    x, y = ctx.inputs
    gx = None
    if ctx.needs[0]:  # PyTorch: xlogy(grad, y), 0 where x == 0 and y <= 0
        gx = g_times(g, log(y))
        mask = at_zero_x(x, y, 0.0)
        gx = gx if mask is None else where(mask, 0.0, gx)
    gy = g * x / y if ctx.needs[1] else None
    return gx, gy


XLOGY = declare("xlogy", _xlogy_forward, _xlogy_rule, save_inputs=True, hint=operands_hint, real_only=True,
                tangent="rule")


def xlogy(input: Number, other: Number) -> Tensor:
    """``input * log(other)``, and 0 where ``input == 0`` (unless ``other`` is NaN).

    Example:
        >>> import fgraph as fg
        >>> fg.xlogy(fg.tensor([0.0, 2.0]), fg.tensor([0.0, 1.0])).tolist()
        [0.0, 0.0]
    """
    return _binary(XLOGY, "xlogy", input, other)


# -- nan_to_num ------------------------------------------------------------------------------------------
def _nan_to_num_forward(x, *, nan, posinf, neginf):
    return jnp.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


def _nan_to_num_rule(ctx, g):
    x = ctx.inputs[0]
    if x.dtype.kind == "c":
        from fgraph.ops.complex_parts import complex, imag, real

        return (complex(where(isfinite(real(x)), real(g), 0.0), where(isfinite(imag(x)), imag(g), 0.0)),)
    return (where(isfinite(x), g, 0.0),)


NAN_TO_NUM = declare("nan_to_num", _nan_to_num_forward, _nan_to_num_rule, params=("nan", "posinf", "neginf"),
                     save_inputs=True)


def nan_to_num(input: Tensor, nan: float = 0.0, posinf: Optional[float] = None,
               neginf: Optional[float] = None) -> Tensor:
    """NaN replaced by ``nan``, ``+inf`` by ``posinf`` and ``-inf`` by ``neginf`` (by default the
    largest and lowest finite values of the dtype). The gradient passes where ``input`` is finite.

    Example:
        >>> import fgraph as fg
        >>> fg.nan_to_num(fg.tensor([float("nan"), 1.0, float("inf")]), posinf=9.0).tolist()
        [0.0, 1.0, 9.0]
    """
    _check_tensor(input, "nan_to_num")
    values = [None if v is None else check_number("nan_to_num", n, v)
              for n, v in (("nan", nan), ("posinf", posinf), ("neginf", neginf))]
    return apply_unary(NAN_TO_NUM, input, NAN_TO_NUM.Params(*values))


def _check_tensor(input: Any, op: str) -> None:
    if not isinstance(input, Tensor):
        raise OpError(f"{op}: expected a Tensor as input, got {type_name(input)}; wrap it with fgraph.tensor(...).")


# -- float_power -------------------------------------------------------------------------------------------
def float_power(input: Number, exponent: Number) -> Tensor:
    """``input ** exponent`` computed in double precision: the result is float64 (complex128 for
    complex operands), as in PyTorch; gradients flow back in the inputs' dtypes.

    Example:
        >>> import fgraph as fg
        >>> y = fg.float_power(fg.tensor([2.0]), 3)
        >>> y.tolist(), str(y.dtype)
        ([8.0], 'float64')
    """
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise OpError(f"float_power: expected at least one Tensor, got {type_name(input)} and "
                      f"{type_name(exponent)}; wrap one with fgraph.tensor(...).")
    complex_ = any(np.dtype(_dtype(a) or np.float64).kind == "c" or isinstance(a, complex) for a in (input, exponent))
    target = "complex128" if complex_ else "float64"
    a = to_dtype(input, target) if isinstance(input, Tensor) else input
    b = to_dtype(exponent, target) if isinstance(exponent, Tensor) else exponent
    if not isinstance(a, Tensor):  # a Python number base: a 0-d double tensor, so the result is double
        a = _wrap(jnp.asarray(a, target))
    return pow(a, b)


# -- heaviside ----------------------------------------------------------------------------------------------
def _heaviside_forward(x, values):
    return jnp.where(x == 0, values, (x > 0).astype(x.dtype)).astype(jnp.result_type(x, values))


HEAVISIDE = declare("heaviside", _heaviside_forward, None, hint=operands_hint, real_only=True)


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """The Heaviside step: 0 where ``input < 0`` (and NaN), ``values`` where ``input == 0``, 1 where
    ``input > 0``. Both must have the same dtype. It has no derivative (as in PyTorch): a backward
    through it raises an error.

    Example:
        >>> import fgraph as fg
        >>> fg.heaviside(fg.tensor([-1.0, 0.0, 2.0]), fg.tensor([0.5])).tolist()
        [0.0, 0.5, 1.0]
    """
    _check_tensor(input, "heaviside")
    if not isinstance(values, Tensor):
        raise OpError(f"heaviside: values must be a Tensor, got {type_name(values)}; "
                      f"pass fgraph.tensor([{values!r}], dtype=input.dtype).")
    if input.dtype != values.dtype:
        raise OpError(f"heaviside: input ({describe(input)}) and values ({describe(values)}) must have the same "
                      "dtype, as in PyTorch; cast one, e.g. values.to(input.dtype).")
    return apply_op(HEAVISIDE, (input, values))


# -- copysign, signbit -----------------------------------------------------------------------------------------
def _copysign_forward(a, b):
    return jnp.copysign(*floating_args(a, b))


def _copysign_rule(ctx, g):
    x = ctx.inputs[0]
    gx = None
    if ctx.needs[0]:
        zero = eq(x, 0)
        gx = g * where(zero, 0.0, ctx.result / where(zero, 1.0, x))  # +-1, 0 at x = 0 (PyTorch)
    return gx, (zeros_of(g) if ctx.needs[1] else None)


COPYSIGN = declare("copysign", _copysign_forward, _copysign_rule, save_inputs=(0,), save_result=True,
                   hint=operands_hint, real_only=True)
SIGNBIT = declare("signbit", jnp.signbit, None, differentiable=False, real_only=True)


def copysign(input: Number, other: Number) -> Tensor:
    """``|input|`` with the sign of ``other`` (``-0.0`` counts as negative); integers give float32.

    Example:
        >>> import fgraph as fg
        >>> fg.copysign(fg.tensor([1.0, -2.0]), fg.tensor([-0.0, 3.0])).tolist()
        [-1.0, 2.0]
    """
    return _binary(COPYSIGN, "copysign", input, other)


def signbit(input: Tensor) -> Tensor:
    """Whether the sign bit is set (True for ``-0.0`` and negative NaN), as a bool Tensor.

    Example:
        >>> import fgraph as fg
        >>> fg.signbit(fg.tensor([-0.0, 0.0, -1.0])).tolist()
        [True, False, True]
    """
    _check_tensor(input, "signbit")
    return apply_unary(SIGNBIT, input)


# -- angles ---------------------------------------------------------------------------------------------------
def _float_input(input: Tensor, op: str) -> Tensor:
    _check_tensor(input, op)
    if not jnp.issubdtype(input.dtype, jnp.inexact):
        input = to_dtype(input, "float32")
    return input


def deg2rad(input: Tensor) -> Tensor:
    """Degrees to radians (integers give float32).

    Example:
        >>> import fgraph as fg
        >>> round(fg.deg2rad(fg.tensor([180])).item(), 5)
        3.14159
    """
    refuse_complex("deg2rad", input)
    return _float_input(input, "deg2rad") * (math.pi / 180.0)


def rad2deg(input: Tensor) -> Tensor:
    """Radians to degrees (integers give float32).

    Example:
        >>> import fgraph as fg
        >>> fg.rad2deg(fg.tensor([0.0])).tolist()
        [0.0]
    """
    refuse_complex("rad2deg", input)
    return _float_input(input, "rad2deg") * (180.0 / math.pi)


# -- clamp_min, clamp_max ---------------------------------------------------------------------------------------
# clamp's kernels and rules under PyTorch's node names for these two (number bound: ...Backward0, tensor: ...1).
_CLAMP_MIN = node_variant(CLAMP, "ClampMinBackward0")
_CLAMP_MIN_TENSOR = node_variant(CLAMP_TENSOR, "ClampMinBackward1")
_CLAMP_MAX = node_variant(CLAMP, "ClampMaxBackward0")
_CLAMP_MAX_TENSOR = node_variant(CLAMP_TENSOR, "ClampMaxBackward1")


def clamp_min(input: Tensor, min: Number) -> Tensor:
    """``clamp(input, min=min)`` (a number or a tensor), recorded as PyTorch's ``ClampMinBackward0``/``1``.

    Example:
        >>> import fgraph as fg
        >>> fg.clamp_min(fg.tensor([1.0, 3.0]), 2.0).tolist()
        [2.0, 3.0]
    """
    return clamp_as(_CLAMP_MIN, _CLAMP_MIN_TENSOR, input, min, None)


def clamp_max(input: Tensor, max: Number) -> Tensor:
    """``clamp(input, max=max)`` (a number or a tensor), recorded as PyTorch's ``ClampMaxBackward0``/``1``.

    Example:
        >>> import fgraph as fg
        >>> fg.clamp_max(fg.tensor([1.0, 3.0]), 2.0).tolist()
        [1.0, 2.0]
    """
    return clamp_as(_CLAMP_MAX, _CLAMP_MAX_TENSOR, input, None, max)


# -- isclose, allclose, equal --------------------------------------------------------------------------------------
def _isclose_forward(a, b, *, rtol, atol, equal_nan):
    if a.dtype == jnp.bool_:
        return a == b
    exact = a == b
    if not jnp.issubdtype(a.dtype, jnp.inexact):
        a, b = a.astype(jnp.result_type(float)), b.astype(jnp.result_type(float))
    close = jnp.abs(a - b) <= atol + rtol * jnp.abs(b)
    out = exact | (close & jnp.isfinite(a) & jnp.isfinite(b))
    if equal_nan:
        out = out | (jnp.isnan(a) & jnp.isnan(b))
    return out


ISCLOSE = declare("isclose", _isclose_forward, None, params=("rtol", "atol", "equal_nan"), differentiable=False,
                  hint=operands_hint)


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """``|input - other| <= atol + rtol * |other|`` elementwise (equal infinities are close; NaNs
    only with ``equal_nan``), as a bool Tensor. Both must have the same dtype, as in PyTorch.

    Example:
        >>> import fgraph as fg
        >>> fg.isclose(fg.tensor([1.0, float("nan")]), fg.tensor([1.0 + 1e-9, float("nan")])).tolist()
        [True, False]
    """
    _check_tensor(input, "isclose")
    if not isinstance(other, Tensor):
        raise OpError(f"isclose: other must be a Tensor, got {type_name(other)}; wrap it with fgraph.tensor(...).")
    if input.dtype != other.dtype:
        raise OpError(f"isclose: input ({describe(input)}) and other ({describe(other)}) must have the same dtype, "
                      "as in PyTorch; cast one, e.g. other.to(input.dtype).")
    rtol = check_number("isclose", "rtol", rtol)
    atol = check_number("isclose", "atol", atol)
    if rtol < 0 or atol < 0:
        raise OpError(f"isclose: rtol and atol must be non-negative, got rtol={rtol}, atol={atol}.")
    return apply_op(ISCLOSE, (input, other), ISCLOSE.Params(rtol, atol, bool(equal_nan)))


def _concrete(op: str, *tensors: Tensor) -> None:
    if any(is_traced(t) for t in tensors):
        raise OpError(f"{op}: returns a Python bool, which needs concrete values, but got traced (jax.jit/vmap) "
                      f"inputs; use fgraph.isclose(a, b).all() or fgraph.eq(a, b).all() to keep a Tensor.")


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether :func:`isclose` holds everywhere (after broadcasting), as a Python bool.

    Example:
        >>> import fgraph as fg
        >>> fg.allclose(fg.tensor([1.0, 2.0]), fg.tensor([1.0, 2.0 + 1e-7]))
        True
    """
    close = isclose(input, other, rtol, atol, equal_nan)
    _concrete("allclose", input, other)
    return bool(jnp.all(close._array))


def equal(input: Tensor, other: Tensor) -> bool:
    """``True`` if both have the same shape and the same values (NaN is never equal), else ``False``.

    Example:
        >>> import fgraph as fg
        >>> fg.equal(fg.tensor([1.0, 2.0]), fg.tensor([1.0, 2.0])), fg.equal(fg.tensor([1.0]), fg.tensor([1.0, 1.0]))
        (True, False)
    """
    _check_tensor(input, "equal")
    _check_tensor(other, "equal")
    if tuple(input.shape) != tuple(other.shape):
        return False
    _concrete("equal", input, other)
    return bool(jnp.all(input._array == other._array))


#: Exported as ``fgraph.<name>``.
__all__ = [
    "logaddexp", "logaddexp2", "xlogy", "nan_to_num", "float_power", "heaviside", "copysign", "signbit",
    "deg2rad", "rad2deg", "clamp_min", "clamp_max", "isclose", "allclose", "equal",
]
#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {name: globals()[name] for name in __all__}
