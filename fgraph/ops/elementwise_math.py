"""Elementwise math beyond the basics: rounded division, remainders, exp/log variants,
reciprocals, ``logit``, ``lerp`` and ``hypot``.

Every primitive's derivative rule is written in fgraph ops, so all of them have second
derivatives (none is first-order only). Semantics follow PyTorch:

* ``div(a, b, rounding_mode='trunc'|'floor')`` and ``floor_divide`` have zero gradients
  (PyTorch's ``DivBackward2``; PyTorch's ``floor_divide`` has no derivative at all, here it
  is the same op as ``div(..., rounding_mode='floor')``).
* ``remainder`` (sign of the divisor) and ``fmod`` (sign of the dividend): ``d/da = 1``,
  ``d/db = -floor(a / b)`` resp. ``-trunc(a / b)``.
* Integer and bool inputs of the floating functions (``exp2``, ``log1p``, ``reciprocal``...)
  are promoted to float32, PyTorch's default dtype.
* ``logit(x, eps)`` clamps to ``[eps, 1 - eps]``; its gradient is zero outside, and NaN
  outside ``[0, 1]`` without ``eps``.
* Integer division by zero cannot raise (that would be a host round trip): the result is
  whatever XLA gives, where PyTorch raises ``ZeroDivisionError``.

Example:
    >>> import fgraph as fg
    >>> a = fg.tensor([7.0, -7.0], requires_grad=True)
    >>> fg.remainder(a, 2.0).tolist(), fg.fmod(a, 2.0).tolist()
    ([1.0, 1.0], [1.0, -1.0])
    >>> fg.grad(fg.log1p(a[:1]).sum(), [a])[0].tolist()
    [0.125, 0.0]
"""
from __future__ import annotations

import math
from typing import Any, Optional

import jax.numpy as jnp
from jax import lax

from fgraph.errors import OpError
from fgraph.ops._declare import apply_op, apply_unary, declare
from fgraph.ops._math_helpers import (
    check_float_tensor,
    check_not_bool,
    check_number,
    describe,
    float_unary,
    floating_args,
    operand_hint,
    operands_hint,
    to_floating,
    zero_grads,
)
from fgraph.ops.elementwise import Number, div, gt, logical_or, lt, pow, where
from fgraph.tensor import Tensor

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_ROUNDING_MODES = ("trunc", "floor")


def _is_scalar(x: Any) -> bool:
    return not isinstance(x, Tensor) and not hasattr(x, "shape")


# -- rounded division ---------------------------------------------------------------------------
def _div_rounded_forward(a, b, *, rounding_mode):
    if rounding_mode == "floor":
        return jnp.floor_divide(a, b)
    dtype = jnp.result_type(a, b)
    if jnp.issubdtype(dtype, jnp.integer):
        return lax.div(jnp.asarray(a, dtype), jnp.asarray(b, dtype))  # rounds toward zero
    return jnp.trunc(jnp.true_divide(a, b))


DIV_ROUNDED = declare("div_rounded", _div_rounded_forward, zero_grads, params=("rounding_mode",),
                      node_name="DivBackward2", hint=operands_hint, real_only=True)


def div_rounded(input: Number, other: Number, rounding_mode: str) -> Tensor:
    """``input / other`` rounded toward zero (``'trunc'``) or down (``'floor'``); zero gradient.

    This is ``fgraph.div(input, other, rounding_mode=...)``; integer operands stay integers.

    Example:
        >>> import fgraph as fg
        >>> fg.div(fg.tensor([7, -7]), 2, rounding_mode="trunc").tolist()
        [3, -3]
    """
    if rounding_mode not in _ROUNDING_MODES:
        raise OpError(
            f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}. "
            "Use None for true division, 'trunc' to round toward zero, 'floor' to round down."
        )
    check_not_bool(f"div(rounding_mode={rounding_mode!r})", input, other)
    return apply_op(DIV_ROUNDED, (input, other), DIV_ROUNDED.Params(rounding_mode))


def floor_divide(input: Number, other: Number) -> Tensor:
    """``floor(input / other)`` (Python's ``//``), i.e. ``div(..., rounding_mode='floor')``; zero gradient.

    Example:
        >>> import fgraph as fg
        >>> fg.floor_divide(fg.tensor([7.0, -7.0]), 2.0).tolist()
        [3.0, -4.0]
    """
    check_not_bool("floor_divide", input, other)
    return apply_op(DIV_ROUNDED, (input, other), DIV_ROUNDED.Params("floor"))


def divide(input: Number, other: Number, *, rounding_mode: Optional[str] = None) -> Tensor:
    """Alias of :func:`fgraph.div` (``torch.divide``).

    Example:
        >>> import fgraph as fg
        >>> fg.divide(fg.tensor([3.0]), 2.0).tolist()
        [1.5]
    """
    return div(input, other, rounding_mode=rounding_mode)


# -- remainders -------------------------------------------------------------------------------------
def _remainder_rule(ctx, g):
    a, b = ctx.inputs
    ga = g if ctx.needs[0] else None
    gb = -g * floor_divide(a, b) if ctx.needs[1] else None
    return ga, gb


def _fmod_rule(ctx, g):
    a, b = ctx.inputs
    ga = g if ctx.needs[0] else None
    gb = -g * div_rounded(a, b, "trunc") if ctx.needs[1] else None
    return ga, gb


def _scalar_other_rule(ctx, g):
    return g, None  # the Python-scalar divisor carries no gradient


REMAINDER = declare("remainder", jnp.remainder, _remainder_rule, save_inputs=True,
                    node_name="RemainderBackward1", hint=operands_hint, real_only=True)
REMAINDER_SCALAR = declare("remainder_scalar", jnp.remainder, _scalar_other_rule, node_name="RemainderBackward0",
                           real_only=True)
FMOD = declare("fmod", jnp.fmod, _fmod_rule, save_inputs=True, node_name="FmodBackward1", hint=operands_hint,
               real_only=True)
FMOD_SCALAR = declare("fmod_scalar", jnp.fmod, _scalar_other_rule, node_name="FmodBackward0", real_only=True)


def remainder(input: Number, other: Number) -> Tensor:
    """Python's ``%``: ``input - floor(input / other) * other``, with the sign of ``other``.

    Gradients as in PyTorch: 1 for ``input``, ``-floor(input / other)`` for ``other``.

    Example:
        >>> import fgraph as fg
        >>> fg.remainder(fg.tensor([-3.0, 3.0]), fg.tensor([2.0, -2.0])).tolist()
        [1.0, -1.0]
    """
    check_not_bool("remainder", input, other)
    if isinstance(input, Tensor) and _is_scalar(other):
        return apply_op(REMAINDER_SCALAR, (input, other))
    return apply_op(REMAINDER, (input, other))


def fmod(input: Number, other: Number) -> Tensor:
    """C's ``fmod``: ``input - trunc(input / other) * other``, with the sign of ``input``.

    Gradients as in PyTorch: 1 for ``input``, ``-trunc(input / other)`` for ``other``.

    Example:
        >>> import fgraph as fg
        >>> fg.fmod(fg.tensor([-3.0, 3.0]), fg.tensor([2.0, -2.0])).tolist()
        [-1.0, 1.0]
    """
    check_not_bool("fmod", input, other)
    if isinstance(input, Tensor) and _is_scalar(other):
        return apply_op(FMOD_SCALAR, (input, other))
    return apply_op(FMOD, (input, other))


# -- exponentials, logarithms, reciprocals ----------------------------------------------------------
def _reciprocal_rule(ctx, g):
    r = ctx.result
    return (-g * (r * r),)


def _exp2_rule(ctx, g):
    return (g * ctx.result * _LN2,)


def _expm1_rule(ctx, g):
    return (g * (ctx.result + 1),)


def _log2_rule(ctx, g):
    return (g / (ctx.inputs[0] * _LN2),)


def _log10_rule(ctx, g):
    return (g / (ctx.inputs[0] * _LN10),)


def _log1p_rule(ctx, g):
    return (g / (ctx.inputs[0] + 1),)


def _rsqrt_rule(ctx, g):
    return (g * pow(ctx.result, 3) * -0.5,)


RECIPROCAL = declare("reciprocal", float_unary(jnp.reciprocal, "reciprocal"), _reciprocal_rule, save_result=True,
                     hint=operand_hint)
EXP2 = declare("exp2", float_unary(jnp.exp2, "exp2"), _exp2_rule, save_result=True, hint=operand_hint)
EXPM1 = declare("expm1", float_unary(jnp.expm1, "expm1"), _expm1_rule, save_result=True, hint=operand_hint)
LOG2 = declare("log2", float_unary(jnp.log2, "log2"), _log2_rule, save_inputs=True, hint=operand_hint)
LOG10 = declare("log10", float_unary(jnp.log10, "log10"), _log10_rule, save_inputs=True, hint=operand_hint)
LOG1P = declare("log1p", float_unary(jnp.log1p, "log1p"), _log1p_rule, save_inputs=True, node_name="Log1PBackward0",
                hint=operand_hint)
RSQRT = declare("rsqrt", float_unary(lax.rsqrt, "rsqrt"), _rsqrt_rule, save_result=True, hint=operand_hint)


def reciprocal(input: Tensor) -> Tensor:
    """``1 / input``; integer inputs give float32.

    Example:
        >>> import fgraph as fg
        >>> fg.reciprocal(fg.tensor([2.0, -4.0])).tolist()
        [0.5, -0.25]
    """
    return apply_unary(RECIPROCAL, input)


def exp2(input: Tensor) -> Tensor:
    """``2 ** input``.

    Example:
        >>> import fgraph as fg
        >>> fg.exp2(fg.tensor([3.0, -1.0])).tolist()
        [8.0, 0.5]
    """
    return apply_unary(EXP2, input)


def expm1(input: Tensor) -> Tensor:
    """``exp(input) - 1``, accurate near 0.

    Example:
        >>> import fgraph as fg
        >>> fg.expm1(fg.tensor([0.0])).tolist()
        [0.0]
    """
    return apply_unary(EXPM1, input)


def log2(input: Tensor) -> Tensor:
    """Base-2 logarithm.

    Example:
        >>> import fgraph as fg
        >>> fg.log2(fg.tensor([8.0, 0.5])).tolist()
        [3.0, -1.0]
    """
    return apply_unary(LOG2, input)


def log10(input: Tensor) -> Tensor:
    """Base-10 logarithm.

    Example:
        >>> import fgraph as fg
        >>> fg.log10(fg.tensor([100.0])).tolist()
        [2.0]
    """
    return apply_unary(LOG10, input)


def log1p(input: Tensor) -> Tensor:
    """``log(1 + input)``, accurate near 0.

    Example:
        >>> import fgraph as fg
        >>> fg.log1p(fg.tensor([0.0])).tolist()
        [0.0]
    """
    return apply_unary(LOG1P, input)


def rsqrt(input: Tensor) -> Tensor:
    """``1 / sqrt(input)``.

    Example:
        >>> import fgraph as fg
        >>> fg.rsqrt(fg.tensor([4.0])).tolist()
        [0.5]
    """
    return apply_unary(RSQRT, input)


def square(input: Tensor) -> Tensor:
    """``input ** 2`` (records ``PowBackward0``, as in PyTorch); bool inputs give integers.

    Example:
        >>> import fgraph as fg
        >>> fg.square(fg.tensor([-3.0])).tolist()
        [9.0]
    """
    if isinstance(input, Tensor) and input.dtype == bool:
        from fgraph._dtypes import x64_enabled
        from fgraph.ops.elementwise import to_dtype

        input = to_dtype(input, "int64" if x64_enabled() else "int32")
    return pow(input, 2)


# -- logit --------------------------------------------------------------------------------------------
def _logit_forward(x, *, eps):
    x = to_floating(x)
    if eps is not None:
        x = jnp.clip(x, eps, 1 - eps)
    return jnp.log(x / (1 - x))


def _logit_rule(ctx, g):
    (x,) = ctx.inputs
    eps = ctx.params.eps
    d = g / (x * (1 - x))
    if eps is None:  # outside the domain the derivative is NaN, as in PyTorch
        return (where(logical_or(lt(x, 0), gt(x, 1)), math.nan, d),)
    return (where(logical_or(lt(x, eps), gt(x, 1 - eps)), 0.0, d),)


LOGIT = declare("logit", _logit_forward, _logit_rule, params=("eps",), save_inputs=True, hint=operand_hint,
                real_only=True)


def logit(input: Tensor, eps: Optional[float] = None) -> Tensor:
    """``log(z / (1 - z))`` with ``z = input`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given.

    A negative ``eps`` means no clamping, as in PyTorch.

    Example:
        >>> import fgraph as fg
        >>> fg.logit(fg.tensor([0.5, 0.0]), eps=0.5).tolist()
        [0.0, 0.0]
    """
    if eps is not None:
        eps = check_number("logit", "eps", eps)
        if eps < 0:
            eps = None
        elif eps > 0.5:
            raise OpError(
                f"logit: eps={eps} clamps to the empty interval [eps, 1 - eps]; "
                "pass an eps in [0, 0.5] (or None for no clamping)."
            )
    return apply_op(LOGIT, (input,), LOGIT.Params(eps))


# -- lerp -------------------------------------------------------------------------------------------------
def _lerp_forward(a, b, w):
    diff = b - a
    # PyTorch's formula: exact at both ends (w = 0 gives a, w = 1 gives b).
    return jnp.where(jnp.abs(w) < 0.5, a + w * diff, b - diff * (1 - w))


def _lerp_rule(ctx, g):
    a, b, w = ctx.inputs  # a Python-number weight never needs a gradient
    ga = g * (1 - w) if ctx.needs[0] else None
    gb = g * w if ctx.needs[1] else None
    gw = g * (b - a) if ctx.needs[2] else None
    return ga, gb, gw


LERP_SCALAR = declare("lerp_scalar", _lerp_forward, _lerp_rule, save_inputs=True, node_name="LerpBackward0",
                      hint=operands_hint)
LERP = declare("lerp", _lerp_forward, _lerp_rule, save_inputs=True, node_name="LerpBackward1", hint=operands_hint)


def lerp(input: Tensor, end: Tensor, weight: Number) -> Tensor:
    """``input + weight * (end - input)``; ``weight`` is a Python number or a tensor (broadcast).

    ``input``, ``end`` and a tensor ``weight`` must share one floating dtype, as in PyTorch.

    Example:
        >>> import fgraph as fg
        >>> fg.lerp(fg.tensor([0.0, 2.0]), fg.tensor([4.0, 4.0]), 0.25).tolist()
        [1.0, 2.5]
    """
    check_float_tensor("lerp", "input", input)
    check_float_tensor("lerp", "end", end)
    _check_same_dtype(input, "end", end)
    if isinstance(weight, Tensor):
        check_float_tensor("lerp", "weight", weight)
        _check_same_dtype(input, "weight", weight)
        return apply_op(LERP, (input, end, weight))
    if type(weight) is not float:
        weight = check_number("lerp", "weight", weight)
    return apply_op(LERP_SCALAR, (input, end, weight))


def _check_same_dtype(input: Tensor, name: str, t: Tensor) -> None:
    if t._array.dtype != input._array.dtype:
        raise OpError(
            f"lerp: '{name}' has dtype {t.dtype} but input has dtype {input.dtype} "
            f"(input {describe(input)}, {name} {describe(t)}); cast them to one dtype, e.g. {name}.to(input.dtype)."
        )


# -- hypot ----------------------------------------------------------------------------------------------
def _hypot_forward(a, b):
    return jnp.hypot(*floating_args(a, b))


def _hypot_rule(ctx, g):
    a, b = ctx.inputs
    r = ctx.result
    ga = g * a / r if ctx.needs[0] else None
    gb = g * b / r if ctx.needs[1] else None
    return ga, gb


# tangent="rule": jnp.hypot orders its operands with max/min, so JAX's second derivative is wrong where |a| == |b|.
HYPOT = declare("hypot", _hypot_forward, _hypot_rule, save_inputs=True, save_result=True, hint=operands_hint,
                real_only=True, tangent="rule")


def hypot(input: Number, other: Number) -> Tensor:
    """``sqrt(input**2 + other**2)`` without overflow.

    Example:
        >>> import fgraph as fg
        >>> fg.hypot(fg.tensor([3.0]), fg.tensor([4.0])).tolist()
        [5.0]
    """
    return apply_op(HYPOT, (input, other))


# -- Tensor methods and operators ------------------------------------------------------------------------
def _floordiv(self: Tensor, other: Number) -> Tensor:
    return floor_divide(self, other)


def _rfloordiv(self: Tensor, other: Number) -> Tensor:
    return floor_divide(other, self)


def _mod(self: Tensor, other: Number) -> Tensor:
    return remainder(self, other)


def _rmod(self: Tensor, other: Number) -> Tensor:
    return remainder(other, self)


#: Exported as ``fgraph.<name>``.
__all__ = [
    "floor_divide", "divide", "remainder", "fmod", "reciprocal", "exp2", "expm1", "log2", "log10", "log1p", "rsqrt",
    "square", "logit", "lerp", "hypot",
]
#: Installed as ``Tensor.<name>`` methods (and the ``//``, ``%`` operators).
TENSOR_METHODS = {
    "floor_divide": floor_divide, "divide": divide, "remainder": remainder, "fmod": fmod, "reciprocal": reciprocal,
    "exp2": exp2, "expm1": expm1, "log2": log2, "log10": log10, "log1p": log1p, "rsqrt": rsqrt, "square": square,
    "logit": logit, "lerp": lerp, "hypot": hypot,
    "__floordiv__": _floordiv, "__rfloordiv__": _rfloordiv, "__mod__": _mod, "__rmod__": _rmod,
}
