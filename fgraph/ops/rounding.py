"""Rounding, floating-point classification, and logical/bitwise ops.

* ``floor ceil trunc (fix) round(decimals)``: piecewise constant, so their gradient is
  zero, as in PyTorch; on integer tensors they return the input unchanged.
* ``frac`` (``input - trunc(input)``): gradient 1.
* ``isnan isfinite isinf isposinf isneginf logical_xor bitwise_*``: not differentiable
  (bool or integer outputs). ``bitwise_*`` take integer or bool operands only.

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([-1.5, 0.5, 2.5])
    >>> fg.floor(x).tolist(), fg.round(x).tolist(), fg.frac(x).tolist()
    ([-2.0, 0.0, 2.0], [-2.0, 0.0, 2.0], [-0.5, 0.5, 0.5])
"""
from __future__ import annotations

import jax.numpy as jnp

from fgraph.errors import OpError
from fgraph.ops._declare import apply_op, apply_unary, declare
from fgraph.ops._math_helpers import check_not_bool, check_number, describe, dtype_of, operand_hint, operands_hint
from fgraph.ops.elementwise import Number, _zero_rule
from fgraph.tensor import Tensor


# -- rounding (zero gradient) ----------------------------------------------------------------------
def _round_decimals_forward(x, *, decimals):
    # PyTorch's formula (dividing by 10**|d| for negative d, not multiplying by 10**d).
    ten_pow = 10.0 ** abs(decimals)
    if decimals < 0:
        return jnp.round(x / ten_pow) * ten_pow
    return jnp.round(x * ten_pow) / ten_pow


def _frac_forward(x):
    return x - jnp.trunc(x)


def _frac_rule(ctx, g):
    return (g,)


FLOOR = declare("floor", jnp.floor, _zero_rule, hint=operand_hint, real_only=True)
CEIL = declare("ceil", jnp.ceil, _zero_rule, hint=operand_hint, real_only=True)
TRUNC = declare("trunc", jnp.trunc, _zero_rule, hint=operand_hint, real_only=True)
ROUND = declare("round", jnp.round, _zero_rule, hint=operand_hint, real_only=True)
ROUND_DECIMALS = declare("round_decimals", _round_decimals_forward, _zero_rule, params=("decimals",),
                         node_name="RoundBackward1", hint=operand_hint, real_only=True)
FRAC = declare("frac", _frac_forward, _frac_rule, hint=operand_hint, real_only=True)


def floor(input: Tensor) -> Tensor:
    """Largest integer ``<= input`` (zero gradient; integer tensors are returned unchanged).

    Example:
        >>> import fgraph as fg
        >>> fg.floor(fg.tensor([-0.5, 1.5])).tolist()
        [-1.0, 1.0]
    """
    check_not_bool("floor", input)
    return apply_unary(FLOOR, input)


def ceil(input: Tensor) -> Tensor:
    """Smallest integer ``>= input`` (zero gradient).

    Example:
        >>> import fgraph as fg
        >>> fg.ceil(fg.tensor([-0.5, 1.5])).tolist()
        [-0.0, 2.0]
    """
    check_not_bool("ceil", input)
    return apply_unary(CEIL, input)


def trunc(input: Tensor) -> Tensor:
    """Round toward zero (zero gradient).

    Example:
        >>> import fgraph as fg
        >>> fg.trunc(fg.tensor([-1.5, 1.5])).tolist()
        [-1.0, 1.0]
    """
    check_not_bool("trunc", input)
    return apply_unary(TRUNC, input)


fix = trunc


def round(input: Tensor, *, decimals: int = 0) -> Tensor:
    """Round half to even, to ``decimals`` decimal places (negative: to tens, hundreds...); zero gradient.

    Example:
        >>> import fgraph as fg
        >>> fg.round(fg.tensor([0.5, 1.5, 2.5])).tolist()
        [0.0, 2.0, 2.0]
        >>> fg.round(fg.tensor([1234.0]), decimals=-2).tolist()
        [1200.0]
    """
    check_not_bool("round", input)
    if type(decimals) is not int:
        decimals = check_number("round", "decimals", decimals, integer=True)
    if decimals == 0:
        return apply_unary(ROUND, input)
    if isinstance(input, Tensor) and not jnp.issubdtype(input.dtype, jnp.inexact):
        raise OpError(
            f"round: decimals={decimals} needs a floating-point tensor, got {describe(input)}; "
            "cast it first, e.g. x.float(), or round integers with decimals=0."
        )
    return apply_unary(ROUND_DECIMALS, input, ROUND_DECIMALS.Params(decimals))


def frac(input: Tensor) -> Tensor:
    """Fractional part ``input - trunc(input)`` (sign of ``input``); its gradient is 1.

    Example:
        >>> import fgraph as fg
        >>> fg.frac(fg.tensor([-1.25, 2.5])).tolist()
        [-0.25, 0.5]
    """
    check_not_bool("frac", input)
    return apply_unary(FRAC, input)


# -- classification (not differentiable) -----------------------------------------------------------
ISNAN = declare("isnan", jnp.isnan, None, differentiable=False, hint=operand_hint)
ISFINITE = declare("isfinite", jnp.isfinite, None, differentiable=False, hint=operand_hint)
ISINF = declare("isinf", jnp.isinf, None, differentiable=False, hint=operand_hint)
ISPOSINF = declare("isposinf", jnp.isposinf, None, differentiable=False, hint=operand_hint, real_only=True)
ISNEGINF = declare("isneginf", jnp.isneginf, None, differentiable=False, hint=operand_hint, real_only=True)


def isnan(input: Tensor) -> Tensor:
    """Where ``input`` is NaN (a bool tensor).

    Example:
        >>> import fgraph as fg
        >>> fg.isnan(fg.tensor([1.0, float("nan")])).tolist()
        [False, True]
    """
    return apply_unary(ISNAN, input)


def isfinite(input: Tensor) -> Tensor:
    """Where ``input`` is neither infinite nor NaN.

    Example:
        >>> import fgraph as fg
        >>> fg.isfinite(fg.tensor([1.0, float("inf"), float("nan")])).tolist()
        [True, False, False]
    """
    return apply_unary(ISFINITE, input)


def isinf(input: Tensor) -> Tensor:
    """Where ``input`` is ``+inf`` or ``-inf``.

    Example:
        >>> import fgraph as fg
        >>> fg.isinf(fg.tensor([1.0, float("-inf")])).tolist()
        [False, True]
    """
    return apply_unary(ISINF, input)


def isposinf(input: Tensor) -> Tensor:
    """Where ``input`` is ``+inf``.

    Example:
        >>> import fgraph as fg
        >>> fg.isposinf(fg.tensor([float("inf"), float("-inf")])).tolist()
        [True, False]
    """
    return apply_unary(ISPOSINF, input)


def isneginf(input: Tensor) -> Tensor:
    """Where ``input`` is ``-inf``.

    Example:
        >>> import fgraph as fg
        >>> fg.isneginf(fg.tensor([float("inf"), float("-inf")])).tolist()
        [False, True]
    """
    return apply_unary(ISNEGINF, input)


# -- logical and bitwise (not differentiable) ---------------------------------------------------------
LOGICAL_XOR = declare("logical_xor", jnp.logical_xor, None, differentiable=False, hint=operands_hint)
BITWISE_AND = declare("bitwise_and", jnp.bitwise_and, None, differentiable=False, hint=operands_hint)
BITWISE_OR = declare("bitwise_or", jnp.bitwise_or, None, differentiable=False, hint=operands_hint)
BITWISE_XOR = declare("bitwise_xor", jnp.bitwise_xor, None, differentiable=False, hint=operands_hint)
BITWISE_NOT = declare("bitwise_not", jnp.invert, None, differentiable=False, hint=operand_hint)


def logical_xor(input: Number, other: Number) -> Tensor:
    """Elementwise exclusive or of the truth values (non-zero is true); a bool tensor.

    Example:
        >>> import fgraph as fg
        >>> fg.logical_xor(fg.tensor([0.0, 1.0, 2.0]), fg.tensor([1.0, 1.0, 0.0])).tolist()
        [True, False, True]
    """
    return apply_op(LOGICAL_XOR, (input, other))


def _check_bitwise(op: str, *args: Number) -> None:
    for a in args:
        kind = dtype_of(a).kind
        if kind not in "biu":
            what = "logical_" + op[len("bitwise_"):] if op != "bitwise_not" else "logical_not"
            raise OpError(
                f"{op}: needs integer or bool operands, got {describe(a)}. Bitwise ops act on the bits of "
                f"integers; cast with .int()/.long(), or use fgraph.{what} for the truth values of floats."
            )


def bitwise_and(input: Number, other: Number) -> Tensor:
    """Elementwise ``&`` of integer or bool tensors.

    Example:
        >>> import fgraph as fg
        >>> fg.bitwise_and(fg.tensor([12, 10]), 6).tolist()
        [4, 2]
    """
    _check_bitwise("bitwise_and", input, other)
    return apply_op(BITWISE_AND, (input, other))


def bitwise_or(input: Number, other: Number) -> Tensor:
    """Elementwise ``|`` of integer or bool tensors.

    Example:
        >>> import fgraph as fg
        >>> fg.bitwise_or(fg.tensor([12, 10]), 6).tolist()
        [14, 14]
    """
    _check_bitwise("bitwise_or", input, other)
    return apply_op(BITWISE_OR, (input, other))


def bitwise_xor(input: Number, other: Number) -> Tensor:
    """Elementwise ``^`` of integer or bool tensors.

    Example:
        >>> import fgraph as fg
        >>> fg.bitwise_xor(fg.tensor([12, 10]), 6).tolist()
        [10, 12]
    """
    _check_bitwise("bitwise_xor", input, other)
    return apply_op(BITWISE_XOR, (input, other))


def bitwise_not(input: Tensor) -> Tensor:
    """Elementwise ``~``: flips every bit of an integer tensor; logical not of a bool tensor.

    Example:
        >>> import fgraph as fg
        >>> fg.bitwise_not(fg.tensor([0, 5])).tolist(), fg.bitwise_not(fg.tensor([True])).tolist()
        ([-1, -6], [False])
    """
    _check_bitwise("bitwise_not", input)
    return apply_unary(BITWISE_NOT, input)


def _xor(self: Tensor, other: Number) -> Tensor:
    return bitwise_xor(self, other)


def _rxor(self: Tensor, other: Number) -> Tensor:
    return bitwise_xor(other, self)


#: Exported as ``fgraph.<name>``.
__all__ = [
    "floor", "ceil", "trunc", "fix", "round", "frac", "isnan", "isfinite", "isinf", "isposinf", "isneginf",
    "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
]
#: Installed as ``Tensor.<name>`` methods (and the ``^`` operator).
TENSOR_METHODS = {name: globals()[name] for name in __all__}
TENSOR_METHODS.update({"__xor__": _xor, "__rxor__": _rxor})
