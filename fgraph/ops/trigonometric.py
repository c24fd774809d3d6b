"""Trigonometric and hyperbolic functions beyond ``sin``/``cos``/``tanh``, and their inverses.

``tan asin acos atan atan2 sinh cosh asinh acosh atanh``, with PyTorch's ``arc*`` aliases.
Each rule is written in fgraph ops, so every one has second derivatives. Integer and bool
inputs are promoted to float32, as in PyTorch.

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([0.0], requires_grad=True)
    >>> fg.grad(fg.atan(x).sum(), [x])[0].tolist()
    [1.0]
"""
from __future__ import annotations

import jax.numpy as jnp

from fgraph.ops._declare import apply_op, apply_unary, declare
from fgraph.ops._math_helpers import float_unary, floating_args, operand_hint, operands_hint
from fgraph.ops.elementwise import Number, sqrt
from fgraph.tensor import Tensor


def _tan_rule(ctx, g):
    r = ctx.result
    return (g * (1 + r * r),)


def _asin_rule(ctx, g):
    x = ctx.inputs[0]
    return (g / sqrt(1 - x * x),)


def _acos_rule(ctx, g):
    x = ctx.inputs[0]
    return (-g / sqrt(1 - x * x),)


def _atan_rule(ctx, g):
    x = ctx.inputs[0]
    return (g / (1 + x * x),)


def _sinh_rule(ctx, g):
    return (g * cosh(ctx.inputs[0]),)


def _cosh_rule(ctx, g):
    return (g * sinh(ctx.inputs[0]),)


def _asinh_rule(ctx, g):
    x = ctx.inputs[0]
    return (g / sqrt(x * x + 1),)


def _acosh_rule(ctx, g):
    x = ctx.inputs[0]
    return (g / sqrt((x - 1) * (x + 1)),)


def _atanh_rule(ctx, g):
    x = ctx.inputs[0]
    return (g / (1 - x * x),)


def _atan2_forward(a, b):
    return jnp.arctan2(*floating_args(a, b))


def _atan2_rule(ctx, g):
    a, b = ctx.inputs
    denom = a * a + b * b
    ga = g * b / denom if ctx.needs[0] else None
    gb = -g * a / denom if ctx.needs[1] else None
    return ga, gb


TAN = declare("tan", float_unary(jnp.tan, "tan"), _tan_rule, save_result=True, hint=operand_hint)
ASIN = declare("asin", float_unary(jnp.arcsin, "asin"), _asin_rule, save_inputs=True, hint=operand_hint)
ACOS = declare("acos", float_unary(jnp.arccos, "acos"), _acos_rule, save_inputs=True, hint=operand_hint)
ATAN = declare("atan", float_unary(jnp.arctan, "atan"), _atan_rule, save_inputs=True, hint=operand_hint)
SINH = declare("sinh", float_unary(jnp.sinh, "sinh"), _sinh_rule, save_inputs=True, hint=operand_hint)
COSH = declare("cosh", float_unary(jnp.cosh, "cosh"), _cosh_rule, save_inputs=True, hint=operand_hint)
ASINH = declare("asinh", float_unary(jnp.arcsinh, "asinh"), _asinh_rule, save_inputs=True, hint=operand_hint)
ACOSH = declare("acosh", float_unary(jnp.arccosh, "acosh"), _acosh_rule, save_inputs=True, hint=operand_hint)
ATANH = declare("atanh", float_unary(jnp.arctanh, "atanh"), _atanh_rule, save_inputs=True, hint=operand_hint)
ATAN2 = declare("atan2", _atan2_forward, _atan2_rule, save_inputs=True, hint=operands_hint, real_only=True)


def tan(input: Tensor) -> Tensor:
    """Tangent.

    Example:
        >>> import fgraph as fg
        >>> fg.tan(fg.tensor([0.0])).tolist()
        [0.0]
    """
    return apply_unary(TAN, input)


def asin(input: Tensor) -> Tensor:
    """Arcsine (NaN outside ``[-1, 1]``).

    Example:
        >>> import fgraph as fg
        >>> fg.asin(fg.tensor([0.0])).tolist()
        [0.0]
    """
    return apply_unary(ASIN, input)


def acos(input: Tensor) -> Tensor:
    """Arccosine (NaN outside ``[-1, 1]``).

    Example:
        >>> import fgraph as fg
        >>> fg.acos(fg.tensor([1.0])).tolist()
        [0.0]
    """
    return apply_unary(ACOS, input)


def atan(input: Tensor) -> Tensor:
    """Arctangent.

    Example:
        >>> import fgraph as fg
        >>> fg.atan(fg.tensor([0.0])).tolist()
        [0.0]
    """
    return apply_unary(ATAN, input)


def atan2(input: Number, other: Number) -> Tensor:
    """Angle of the point ``(other, input)``: ``atan(input / other)`` in the right quadrant.

    Example:
        >>> import fgraph as fg
        >>> fg.atan2(fg.tensor([1.0, 0.0]), fg.tensor([0.0, -1.0])).tolist()
        [1.5707963705062866, 3.1415927410125732]
    """
    return apply_op(ATAN2, (input, other))


def sinh(input: Tensor) -> Tensor:
    """Hyperbolic sine.

    Example:
        >>> import fgraph as fg
        >>> fg.sinh(fg.tensor([0.0])).tolist()
        [0.0]
    """
    return apply_unary(SINH, input)


def cosh(input: Tensor) -> Tensor:
    """Hyperbolic cosine.

    Example:
        >>> import fgraph as fg
        >>> fg.cosh(fg.tensor([0.0])).tolist()
        [1.0]
    """
    return apply_unary(COSH, input)


def asinh(input: Tensor) -> Tensor:
    """Inverse hyperbolic sine.

    Example:
        >>> import fgraph as fg
        >>> fg.asinh(fg.tensor([0.0])).tolist()
        [0.0]
    """
    return apply_unary(ASINH, input)


def acosh(input: Tensor) -> Tensor:
    """Inverse hyperbolic cosine (NaN below 1).

    Example:
        >>> import fgraph as fg
        >>> fg.acosh(fg.tensor([1.0])).tolist()
        [0.0]
    """
    return apply_unary(ACOSH, input)


def atanh(input: Tensor) -> Tensor:
    """Inverse hyperbolic tangent (NaN outside ``[-1, 1]``, infinite at the ends).

    Example:
        >>> import fgraph as fg
        >>> fg.atanh(fg.tensor([0.0])).tolist()
        [0.0]
    """
    return apply_unary(ATANH, input)


#: PyTorch's NumPy-style aliases.
arcsin, arccos, arctan, arctan2 = asin, acos, atan, atan2
arcsinh, arccosh, arctanh = asinh, acosh, atanh

#: Exported as ``fgraph.<name>``.
__all__ = [
    "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh", "atanh",
    "arcsin", "arccos", "arctan", "arctan2", "arcsinh", "arccosh", "arctanh",
]
#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {name: globals()[name] for name in __all__}
