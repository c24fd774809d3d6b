"""Elementwise ops: arithmetic, transcendental functions, comparisons, casts.

Each primitive is one ``declare`` line plus its derivative rule, written in
fgraph ops so that it can itself be differentiated.

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([1.0, 4.0], requires_grad=True)
    >>> (gx,) = fg.grad(fg.sqrt(x).sum(), [x])
    >>> gx.tolist()
    [0.5, 0.25]
"""
from __future__ import annotations

import functools
import warnings
from typing import Any, Optional

import jax
import jax.numpy as jnp
import numpy as np

from fgraph._dtypes import canonical_dtype
from fgraph.ops._declare import OpDef, apply_binary, apply_op, apply_unary, declare
from fgraph.tensor import Tensor, _wrap

Number = Any  # Tensor or Python scalar


def _shapes_hint(args: tuple, params: Any) -> str:
    shapes = [tuple(a.shape) for a in args if isinstance(a, Tensor)]
    return (
        f"Shapes {shapes} must broadcast: align them from the right, where each pair of sizes "
        "is equal or one of them is 1 (use unsqueeze/reshape to add dimensions)."
    )


def zeros_of(t: Tensor) -> Tensor:
    """Zeros with ``t``'s shape and dtype, outside the graph (for zero-gradient rules)."""
    return _wrap(jnp.zeros(t.shape, t.dtype))


# -- arithmetic ---------------------------------------------------------------------------
def _add_rule(ctx, g):
    return g, g


def _sub_rule(ctx, g):
    return g, -g


def _mul_rule(ctx, g):
    a, b = ctx.inputs
    return (g * b if ctx.needs[0] else None), (g * a if ctx.needs[1] else None)


def _div_rule(ctx, g):
    a, b = ctx.inputs
    ga = g / b if ctx.needs[0] else None
    gb = -g * a / (b * b) if ctx.needs[1] else None
    return ga, gb


def _neg_rule(ctx, g):
    return (-g,)


ADD = declare("add", jnp.add, _add_rule, hint=_shapes_hint)
SUB = declare("sub", jnp.subtract, _sub_rule, hint=_shapes_hint)
# Each input is saved only when the other input's gradient reads it (div: b for both).
MUL = declare("mul", jnp.multiply, _mul_rule, save_inputs={0: (1,), 1: (0,)}, hint=_shapes_hint)
DIV = declare("div", jnp.true_divide, _div_rule, save_inputs={0: (1,), 1: (0, 1)}, hint=_shapes_hint)
NEG = declare("neg", jnp.negative, _neg_rule)


def add(input: Number, other: Number, *, alpha: Number = 1) -> Tensor:
    """``input + alpha * other`` with broadcasting.

    Example:
        >>> import fgraph as fg
        >>> fg.add(fg.tensor([1.0, 2.0]), 1.0).tolist()
        [2.0, 3.0]
    """
    if alpha != 1:
        other = mul(other, alpha)
    return apply_binary(ADD, input, other)


def sub(input: Number, other: Number, *, alpha: Number = 1) -> Tensor:
    """``input - alpha * other`` with broadcasting."""
    if alpha != 1:
        other = mul(other, alpha)
    return apply_binary(SUB, input, other)


def mul(input: Number, other: Number) -> Tensor:
    """Elementwise product with broadcasting."""
    return apply_binary(MUL, input, other)


def div(input: Number, other: Number, *, rounding_mode: Optional[str] = None) -> Tensor:
    """``input / other`` with broadcasting; ``rounding_mode`` ``'trunc'`` or ``'floor'`` rounds the quotient.

    Rounded division keeps integer dtypes and has a zero gradient (``DivBackward2``), as in PyTorch.

    Example:
        >>> import fgraph as fg
        >>> fg.div(fg.tensor([7.0, -7.0]), 2.0, rounding_mode="floor").tolist()
        [3.0, -4.0]
    """
    if rounding_mode is None:
        return apply_binary(DIV, input, other)
    from fgraph.ops.elementwise_math import div_rounded

    return div_rounded(input, other, rounding_mode)


true_divide = div


def neg(input: Tensor) -> Tensor:
    """``-input``."""
    return apply_unary(NEG, input)


# -- powers ------------------------------------------------------------------------------------
def _pow_scalar_forward(x, *, exponent, exponent_type):
    return jnp.power(x, exponent)


def _pow_scalar_rule(ctx, g):
    (x,) = ctx.inputs
    p = ctx.params.exponent
    if p == 0:
        return (zeros_of(g),)
    return (g * p * pow(x, p - 1),)


def _pow_tensor_rule(ctx, g):
    a, b = ctx.inputs
    ga = None
    if ctx.needs[0]:
        # PyTorch's value: 0 where b == 0 (else 0 * 0**-1 = nan at a == 0). Only a == b == 0 is
        # masked, so the derivative in b at b == 0, a != 0 survives; the exponent is made safe there
        # too, so the masked branch stays finite and second derivatives are not nan either.
        zero_zero = logical_and(eq(a, 0), eq(b, 0))
        safe_b = where(zero_zero, 1.0, b)
        ga = where(zero_zero, 0.0, g * b * pow(a, safe_b - 1))
    gb = None
    if ctx.needs[1]:
        # d/db a**b = a**b * log(a); PyTorch defines it as 0 where a == 0 and b >= 0 (real(b), complex b).
        from fgraph.ops.complex_parts import real

        at_zero = logical_and(eq(a, 0), ge(real(b), 0))
        gb = where(at_zero, 0.0, g * ctx.result * log(a))
    return ga, gb


# ``*_type`` params keep 2, 2.0 and True apart: they compare equal but compile differently.
POW = declare("pow", _pow_scalar_forward, _pow_scalar_rule, params=("exponent", "exponent_type"), save_inputs=True,
              node_name="PowBackward0")
POW_TENSOR = declare("pow_tensor", jnp.power, _pow_tensor_rule, save_inputs=True, save_result=True,
                     node_name="PowBackward1", hint=_shapes_hint)


def pow(input: Number, exponent: Number) -> Tensor:
    """``input ** exponent``; a Python-number exponent records ``PowBackward0``, a tensor one ``PowBackward1``.

    Example:
        >>> import fgraph as fg
        >>> fg.pow(fg.tensor([3.0]), 2).tolist()
        [9.0]
    """
    if isinstance(input, Tensor) and not isinstance(exponent, Tensor) and np.ndim(exponent) == 0:
        exponent = _hashable_scalar(exponent)
        return apply_op(POW, (input,), POW.Params(exponent, type(exponent)))
    return apply_binary(POW_TENSOR, input, exponent)


def _hashable_scalar(v: Any) -> Any:
    if isinstance(v, (int, float, bool, complex)):
        return v
    return np.asarray(v).item()


# -- unary functions ----------------------------------------------------------------------------
def _exp_rule(ctx, g):
    return (g * ctx.result,)


def _log_rule(ctx, g):
    return (g / ctx.inputs[0],)


def _sin_rule(ctx, g):
    return (g * cos(ctx.inputs[0]),)


def _cos_rule(ctx, g):
    return (-g * sin(ctx.inputs[0]),)


def _tanh_rule(ctx, g):
    y = ctx.result
    return (g * (1 - y * y),)


def _sigmoid_rule(ctx, g):
    y = ctx.result
    return (g * y * (1 - y),)


def _relu_rule(ctx, g):
    return (where(gt(ctx.result, 0), g, 0.0),)


def _sqrt_rule(ctx, g):
    return (g / (2 * ctx.result),)


def _abs_rule(ctx, g):
    x = ctx.inputs[0]
    if x.dtype.kind == "c":  # d|z| = Re(conj(sgn z) dz): its transpose is g * conj(sgn z)
        from fgraph.ops.complex_more import sgn
        from fgraph.ops.complex_parts import conj

        return (g * conj(sgn(x)),)
    return (g * sign(x),)


@jax.custom_jvp
def _real_abs(x: jax.Array) -> jax.Array:
    return jnp.abs(x)


@_real_abs.defjvp
def _real_abs_tangent(primals: tuple, tangents: tuple) -> tuple:
    (x,), (t,) = primals, tangents
    return jnp.abs(x), jnp.sign(x) * t  # 0 at 0, as PyTorch's sgn(x) * t; JAX's own abs takes t there


def _abs_kernel(x: jax.Array) -> jax.Array:
    """``|x|``. For real ``x`` its tangent at 0 is PyTorch's 0; JAX's complex ``abs`` already gives
    ``Re(conj(sgn z) dz)``, 0 at 0, and its second derivative must see ``sgn z`` vary."""
    return jnp.abs(x) if jnp.iscomplexobj(x) else _real_abs(x)


def _zero_rule(ctx, g):
    """For piecewise-constant ops (sign, floor...): the gradient is zero, as in PyTorch."""
    return (zeros_of(g),)


EXP = declare("exp", jnp.exp, _exp_rule, save_result=True)
LOG = declare("log", jnp.log, _log_rule, save_inputs=True)
SIN = declare("sin", jnp.sin, _sin_rule, save_inputs=True)
COS = declare("cos", jnp.cos, _cos_rule, save_inputs=True)
TANH = declare("tanh", jnp.tanh, _tanh_rule, save_result=True)
SIGMOID = declare("sigmoid", jax.nn.sigmoid, _sigmoid_rule, save_result=True)
RELU = declare("relu", jax.nn.relu, _relu_rule, save_result=True, real_only=True)
SQRT = declare("sqrt", jnp.sqrt, _sqrt_rule, save_result=True)
ABS = declare("abs", _abs_kernel, _abs_rule, save_inputs=True)
SIGN = declare("sign", jnp.sign, _zero_rule, real_only=True, complex_fix="fg.sgn(x) is x / |x| for complex x")


def exp(input: Tensor) -> Tensor:
    """Elementwise ``e**input``."""
    return apply_unary(EXP, input)


def log(input: Tensor) -> Tensor:
    """Natural logarithm."""
    return apply_unary(LOG, input)


def sin(input: Tensor) -> Tensor:
    """Sine."""
    return apply_unary(SIN, input)


def cos(input: Tensor) -> Tensor:
    """Cosine."""
    return apply_unary(COS, input)


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent."""
    return apply_unary(TANH, input)


def sigmoid(input: Tensor) -> Tensor:
    """Logistic sigmoid ``1 / (1 + exp(-input))``."""
    return apply_unary(SIGMOID, input)


def relu(input: Tensor) -> Tensor:
    """``max(input, 0)``; the gradient at 0 is 0, as in PyTorch."""
    return apply_unary(RELU, input)


def sqrt(input: Tensor) -> Tensor:
    """Square root."""
    return apply_unary(SQRT, input)


def abs(input: Tensor) -> Tensor:
    """Absolute value; the gradient at 0 is 0, as in PyTorch."""
    return apply_unary(ABS, input)


def sign(input: Tensor) -> Tensor:
    """-1, 0 or 1 by the sign of each element (zero gradient)."""
    return apply_unary(SIGN, input)


# -- binary selections -------------------------------------------------------------------------
def _maximum_rule(ctx, g):
    a, b = ctx.inputs
    # Ties split the gradient evenly between both inputs, as in PyTorch.
    half = g * 0.5
    ga = where(gt(a, b), g, where(eq(a, b), half, 0.0)) if ctx.needs[0] else None
    gb = where(lt(a, b), g, where(eq(a, b), half, 0.0)) if ctx.needs[1] else None
    return ga, gb


def _minimum_rule(ctx, g):
    a, b = ctx.inputs
    half = g * 0.5
    ga = where(lt(a, b), g, where(eq(a, b), half, 0.0)) if ctx.needs[0] else None
    gb = where(gt(a, b), g, where(eq(a, b), half, 0.0)) if ctx.needs[1] else None
    return ga, gb


def _where_rule(ctx, g):
    cond = ctx.inputs[0]
    ga = where(cond, g, 0.0) if ctx.needs[1] else None
    gb = where(cond, 0.0, g) if ctx.needs[2] else None
    return None, ga, gb


def _clamp_forward(x, *, min, max, bound_types):
    return _clip(x, min, max)


@functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2))
def _clip(x: jax.Array, lo: Any, hi: Any) -> jax.Array:
    return jnp.clip(x, lo, hi)


@_clip.defjvp
def _clip_tangent(lo: Any, hi: Any, primals: tuple, tangents: tuple) -> tuple:
    # PyTorch's clamp_jvp: the tangent passes where lo <= x <= hi, bounds included (JAX's clip halves it there).
    (x,), (t,) = primals, tangents
    if t.dtype == jax.dtypes.float0:  # an integer input: no tangent
        return jnp.clip(x, lo, hi), t
    inside = jnp.ones(x.shape, bool)
    if lo is not None:
        inside = inside & (x >= lo)
    if hi is not None:
        inside = inside & (x <= hi)
    return jnp.clip(x, lo, hi), jnp.where(inside, t, jnp.zeros_like(t))


def _clamp_rule(ctx, g):
    (x,) = ctx.inputs
    lo, hi = ctx.params.min, ctx.params.max
    inside = None
    if lo is not None:
        inside = ge(x, lo)
    if hi is not None:
        below = le(x, hi)
        inside = below if inside is None else logical_and(inside, below)
    return (g if inside is None else where(inside, g, 0.0),)


MAXIMUM = declare("maximum", jnp.maximum, _maximum_rule, save_inputs=True, hint=_shapes_hint, real_only=True)
MINIMUM = declare("minimum", jnp.minimum, _minimum_rule, save_inputs=True, hint=_shapes_hint, real_only=True)
WHERE = declare("where", jnp.where, _where_rule, save_inputs=True, hint=_shapes_hint)
CLAMP = declare("clamp", _clamp_forward, _clamp_rule, params=("min", "max", "bound_types"), save_inputs=True,
                real_only=True, node_name="ClampBackward1")  # PyTorch: clamp.Scalar's node is ClampBackward1


def _clamp_tensor_values(x, lo, hi):
    out = x if lo is None else jnp.maximum(x, lo)  # NaN anywhere gives NaN, as PyTorch
    return out if hi is None else jnp.minimum(out, hi)


def _float_tangent(primal: Any, tangent: Any) -> Any:
    """``tangent``, or zeros where the primal is an integer array (JAX's float0 tangent)."""
    if tangent is not None and tangent.dtype == jax.dtypes.float0:
        return jnp.zeros(primal.shape, jnp.result_type(float))
    return tangent


@jax.custom_jvp
def _clamp_tensor_forward(x, lo, hi):
    return _clamp_tensor_values(x, lo, hi)


@_clamp_tensor_forward.defjvp
def _clamp_tensor_tangent(primals: tuple, tangents: tuple) -> tuple:
    # PyTorch's clamp_jvp: a tie with a bound takes the input's tangent (JAX's maximum/minimum split it in
    # halves); below lo the bound's, above hi the bound's, and hi's where hi < lo.
    (x, lo, hi), tangents = primals, tuple(map(_float_tangent, primals, tangents))
    tx, tlo, thi = tangents
    out = _clamp_tensor_values(x, lo, hi)
    t = tx
    if lo is not None:
        t = jnp.where(x < lo, tlo, t)
    if hi is not None:
        t = jnp.where(x > hi, thi, t)
        if lo is not None:
            t = jnp.where(lo > hi, thi, t)
    return out, jnp.broadcast_to(t, out.shape).astype(out.dtype)


def _clamp_tensor_rule(ctx, g):
    # PyTorch's clamp_backward / clamp_backward_min_max: ties with a bound pass the gradient to input; where
    # max < min the result is max and so is the gradient (min == max below it: to neither).
    x, lo, hi = ctx.inputs
    gx = glo = ghi = None
    if ctx.needs[0]:
        inside = ge(x, lo) if hi is None else le(x, hi) if lo is None else logical_and(ge(x, lo), le(x, hi))
        gx = where(inside, g, 0.0)
    if ctx.needs[1]:
        below = lt(x, lo) if hi is None else logical_and(lt(x, lo), lt(lo, hi))
        glo = where(below, g, 0.0)
    if ctx.needs[2]:
        above = gt(x, hi) if lo is None else logical_or(gt(x, hi), lt(hi, lo))
        ghi = where(above, g, 0.0)
    return gx, glo, ghi


CLAMP_TENSOR = declare("clamp_tensor", _clamp_tensor_forward, _clamp_tensor_rule, save_inputs=True, real_only=True,
                       hint=_shapes_hint, node_name="ClampBackward0")  # PyTorch: clamp.Tensor's node


def maximum(input: Number, other: Number) -> Tensor:
    """Elementwise maximum; at ties each input gets half the gradient."""
    return apply_binary(MAXIMUM, input, other)


def minimum(input: Number, other: Number) -> Tensor:
    """Elementwise minimum; at ties each input gets half the gradient."""
    return apply_binary(MINIMUM, input, other)


def where(condition: Tensor, input: Number, other: Number) -> Tensor:
    """``input`` where ``condition`` holds, else ``other`` (broadcasting all three).

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([-1.0, 2.0])
        >>> fg.where(x > 0, x, 0.0).tolist()
        [0.0, 2.0]
    """
    if isinstance(condition, Tensor) and condition.dtype != np.bool_:
        raise TypeError(
            f"where: condition must be a bool tensor, got dtype {condition.dtype}; compare first, e.g. x > 0."
        )
    return apply_op(WHERE, (condition, input, other))


def clamp(input: Tensor, min: Optional[Number] = None, max: Optional[Number] = None) -> Tensor:
    """Clamp into ``[min, max]``; the gradient passes where ``min <= input <= max``.

    Gradients go as in PyTorch: to ``input`` where ``min <= input <= max`` (ties included); with
    tensor bounds to ``min`` where ``input < min < max``, to ``max`` where ``input > max`` and
    everywhere ``max < min`` (where the result is ``max``). Number bounds record PyTorch's
    ``ClampBackward1``, tensor bounds its ``ClampBackward0``.

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([-2.0, 0.5, 3.0], requires_grad=True)
        >>> y = fg.clamp(x, -1.0, 1.0)
        >>> y.tolist(), y.grad_fn.name()
        ([-1.0, 0.5, 1.0], 'ClampBackward1')
        >>> fg.clamp(x, fg.zeros(3), fg.ones(3)).grad_fn.name()
        'ClampBackward0'
    """
    return clamp_as(CLAMP, CLAMP_TENSOR, input, min, max)


def clamp_as(number_op: OpDef, tensor_op: OpDef, input: Tensor, min: Any, max: Any) -> Tensor:
    """:func:`clamp` recorded as ``number_op`` (number bounds) or ``tensor_op`` (a tensor bound): ``CLAMP`` and
    ``CLAMP_TENSOR`` or their node-name variants (``clamp_min``'s ``ClampMinBackward0``...)."""
    if min is None and max is None:
        raise ValueError("clamp: at least one of min or max must be given.")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return apply_op(tensor_op, (input, min, max))
    lo = None if min is None else _hashable_scalar(min)
    hi = None if max is None else _hashable_scalar(max)
    return apply_op(number_op, (input,), CLAMP.Params(lo, hi, (type(lo), type(hi))))


clip = clamp


# -- comparisons and logic (never differentiable) ---------------------------------------------------
EQ = declare("eq", jnp.equal, None, differentiable=False, hint=_shapes_hint)
NE = declare("ne", jnp.not_equal, None, differentiable=False, hint=_shapes_hint)
LT = declare("lt", jnp.less, None, differentiable=False, hint=_shapes_hint, real_only=True)
LE = declare("le", jnp.less_equal, None, differentiable=False, hint=_shapes_hint, real_only=True)
GT = declare("gt", jnp.greater, None, differentiable=False, hint=_shapes_hint, real_only=True)
GE = declare("ge", jnp.greater_equal, None, differentiable=False, hint=_shapes_hint, real_only=True)
LOGICAL_AND = declare("logical_and", jnp.logical_and, None, differentiable=False, hint=_shapes_hint)
LOGICAL_OR = declare("logical_or", jnp.logical_or, None, differentiable=False, hint=_shapes_hint)
LOGICAL_NOT = declare("logical_not", jnp.logical_not, None, differentiable=False)


def eq(input: Number, other: Number) -> Tensor:
    """Elementwise ``==`` (a bool tensor, never requires grad)."""
    return apply_op(EQ, (input, other))


def ne(input: Number, other: Number) -> Tensor:
    """Elementwise ``!=``."""
    return apply_op(NE, (input, other))


def lt(input: Number, other: Number) -> Tensor:
    """Elementwise ``<``."""
    return apply_op(LT, (input, other))


def le(input: Number, other: Number) -> Tensor:
    """Elementwise ``<=``."""
    return apply_op(LE, (input, other))


def gt(input: Number, other: Number) -> Tensor:
    """Elementwise ``>``."""
    return apply_op(GT, (input, other))


def ge(input: Number, other: Number) -> Tensor:
    """Elementwise ``>=``."""
    return apply_op(GE, (input, other))


def logical_and(input: Number, other: Number) -> Tensor:
    """Elementwise logical and."""
    return apply_op(LOGICAL_AND, (input, other))


def logical_or(input: Number, other: Number) -> Tensor:
    """Elementwise logical or."""
    return apply_op(LOGICAL_OR, (input, other))


def logical_not(input: Tensor) -> Tensor:
    """Elementwise logical not."""
    return apply_op(LOGICAL_NOT, (input,))


# -- casts ------------------------------------------------------------------------------------------
def _to_dtype_forward(x, *, dtype):
    if x.dtype.kind == "c" and np.dtype(dtype).kind != "c":
        x = jnp.real(x)  # PyTorch keeps the real part; JAX's astype will refuse complex -> real
    return x.astype(dtype)


def _to_dtype_rule(ctx, g):
    return (g,)  # reduce_grad casts back to the input's dtype


TO_DTYPE = declare("to_dtype", _to_dtype_forward, _to_dtype_rule, params=("dtype",), node_name="ToCopyBackward0")


def to_dtype(input: Tensor, dtype: Any) -> Tensor:
    """Cast to ``dtype``; gradients flow back between floating dtypes.

    Casting to an integer or bool dtype leaves the graph.
    """
    dt = canonical_dtype(dtype, "to")
    if input.dtype == dt:
        return input
    if input.dtype.kind == "c" and np.dtype(dt).kind != "c":
        warnings.warn(f"to: casting complex values to {dt} discards the imaginary part (as in PyTorch); take "
                      "x.real (or x.abs()) to say which real number you mean.", UserWarning, stacklevel=2)
    out = apply_op(TO_DTYPE, (input,), TO_DTYPE.Params(dt))
    if out.requires_grad and not jnp.issubdtype(dt, jnp.inexact):
        return out.detach()
    return out


#: Exported as ``fgraph.<name>``.
__all__ = ["add", "sub", "mul", "div", "true_divide", "neg", "pow", "exp", "log", "sin", "cos", "tanh", "sigmoid", "relu", "sqrt", "abs", "sign", "maximum", "minimum", "where", "clamp", "clip", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not", "to_dtype"]
#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {"add": add, "sub": sub, "mul": mul, "div": div, "true_divide": div, "neg": neg, "pow": pow, "exp": exp, "log": log, "sin": sin, "cos": cos, "tanh": tanh, "sigmoid": sigmoid, "relu": relu, "sqrt": sqrt, "abs": abs, "sign": sign, "maximum": maximum, "minimum": minimum, "clamp": clamp, "clip": clamp, "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge, "logical_and": logical_and, "logical_or": logical_or, "logical_not": logical_not}
