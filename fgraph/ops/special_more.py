"""More special functions (``torch.special``'s): ``xlog1py entr expit ndtr ndtri log_ndtr
i0 i0e i1 i1e sinc multigammaln zeta``.

Each rule is written in fgraph ops, so each differentiates again. PyTorch's values at the
special points: ``xlog1py(0, y) = 0`` with gradient ``log1p(y)`` for ``x`` (0 where ``y <= -1``); ``entr(0) = 0`` with
gradient ``+inf``; ``sinc(0) = 1`` with gradient 0; ``i1'(0) = i1e'(0) = 0.5``.
``sinc``'s second derivative at 0 is the true ``-pi**2 / 3`` (PyTorch gives NaN there).
``zeta(x, q)`` is differentiable in ``q`` only (``-x * zeta(x + 1, q)``); as in PyTorch, a
gradient with respect to ``x`` raises an error.

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([0.0], requires_grad=True)
    >>> (g,) = fg.grad(fg.special.i1(x).sum(), [x])
    >>> g.tolist()
    [0.5]
"""
from __future__ import annotations

import math

import jax.numpy as jnp
import jax.scipy.special as jsp

from fgraph.errors import OpError
from fgraph.ops._declare import apply_op, apply_unary, declare
from fgraph.ops._math_helpers import check_number, float_unary, floating_args, operand_hint, operands_hint
from fgraph.ops.elementwise import Number, cos, eq, exp, log, sigmoid, sign, sin, to_dtype, where
from fgraph.ops.numerics import at_zero_x, g_times
from fgraph.ops.elementwise_math import log1p
from fgraph.ops.special import erfc, lgamma
from fgraph.tensor import Tensor, _wrap, type_name

_SQRT_2PI = math.sqrt(2.0 * math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)


def _check_tensor(input: object, op: str) -> None:
    if not isinstance(input, Tensor):
        raise OpError(f"{op}: expected a Tensor as input, got {type_name(input)}; wrap it with fgraph.tensor(...).")


# -- xlog1py, entr ------------------------------------------------------------------------------------------
def _xlog1py_forward(x, y):
    x, y = floating_args(x, y)
    out = jnp.where(x == 0, jnp.zeros((), jnp.result_type(x, y)), x * jnp.log1p(y))
    return jnp.where(jnp.isnan(y), jnp.nan, out).astype(out.dtype)


def _xlog1py_rule(ctx, g):
    x, y = ctx.inputs
    gx = None
    if ctx.needs[0]:  # PyTorch: xlog1py(grad, y), 0 where x == 0 and y <= -1
        gx = g_times(g, log1p(y))
        mask = at_zero_x(x, y, -1.0)
        gx = gx if mask is None else where(mask, 0.0, gx)
    gy = g * x / (y + 1) if ctx.needs[1] else None
    return gx, gy


def _entr_forward(x):
    x = jnp.asarray(x)
    x = x if jnp.issubdtype(x.dtype, jnp.inexact) else x.astype(jnp.float32)
    safe = jnp.where(x > 0, x, jnp.ones((), x.dtype))
    out = jnp.where(x > 0, -x * jnp.log(safe), jnp.where(x == 0, jnp.zeros((), x.dtype), -jnp.inf))
    return jnp.where(jnp.isnan(x), x, out).astype(x.dtype)


def _entr_rule(ctx, g):
    return (g * -(log(ctx.inputs[0]) + 1),)


XLOG1PY = declare("xlog1py", _xlog1py_forward, _xlog1py_rule, save_inputs=True, hint=operands_hint,
                  node_name="SpecialXlog1PyBackward0", real_only=True, tangent="rule")
ENTR = declare("entr", _entr_forward, _entr_rule, save_inputs=True, hint=operand_hint,
               node_name="SpecialEntrBackward0", real_only=True)


def xlog1py(input: Number, other: Number) -> Tensor:
    """``input * log1p(other)``, and 0 where ``input == 0`` (unless ``other`` is NaN).

    Example:
        >>> import fgraph as fg
        >>> fg.special.xlog1py(fg.tensor([0.0, 1.0]), fg.tensor([-1.0, 0.0])).tolist()
        [0.0, 0.0]
    """
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise OpError(f"xlog1py: expected at least one Tensor, got {type_name(input)} and {type_name(other)}; "
                      "wrap one with fgraph.tensor(...).")
    return apply_op(XLOG1PY, (input, other))


def entr(input: Tensor) -> Tensor:
    """Elementwise entropy ``-x * log(x)`` (0 at 0, ``-inf`` for negative ``x``).

    Example:
        >>> import fgraph as fg
        >>> fg.special.entr(fg.tensor([0.0, 1.0, -1.0])).tolist()
        [0.0, -0.0, -inf]
    """
    _check_tensor(input, "entr")
    return apply_unary(ENTR, input)


def expit(input: Tensor) -> Tensor:
    """The logistic sigmoid ``1 / (1 + exp(-input))`` (``torch.special.expit``).

    Example:
        >>> import fgraph as fg
        >>> fg.special.expit(fg.tensor([0.0])).tolist()
        [0.5]
    """
    return sigmoid(input)


# -- normal distribution: ndtr, ndtri, log_ndtr ---------------------------------------------------------------
def _ndtri_rule(ctx, g):
    r = ctx.result
    return (g * _SQRT_2PI * exp(r * r * 0.5),)


def _log_ndtr_rule(ctx, g):
    x = ctx.inputs[0]
    # ndtr'(x) / ndtr(x) = exp(-x**2/2 - log_ndtr(x)) / sqrt(2 pi): stable in both tails.
    return (g * exp(x * x * -0.5 - ctx.result) * (1.0 / _SQRT_2PI),)


NDTRI = declare("ndtri", float_unary(jsp.ndtri, "ndtri"), _ndtri_rule, save_result=True, hint=operand_hint,
                node_name="SpecialNdtriBackward0", real_only=True)
LOG_NDTR = declare("log_ndtr", float_unary(jsp.log_ndtr, "log_ndtr"), _log_ndtr_rule, save_inputs=True,
                   save_result=True, hint=operand_hint, node_name="SpecialLogNdtrBackward0", real_only=True)


def ndtr(input: Tensor) -> Tensor:
    """The standard normal CDF ``(1 + erf(x / sqrt(2))) / 2``, as ``erfc(-x / sqrt(2)) / 2``.

    Example:
        >>> import fgraph as fg
        >>> fg.special.ndtr(fg.tensor([0.0])).tolist()
        [0.5]
    """
    _check_tensor(input, "ndtr")
    return erfc(input * -_INV_SQRT_2) * 0.5


def ndtri(input: Tensor) -> Tensor:
    """The inverse of :func:`ndtr` on ``(0, 1)`` (``-inf``/``+inf`` at 0/1, NaN outside).

    Example:
        >>> import fgraph as fg
        >>> fg.special.ndtri(fg.tensor([0.5])).tolist()
        [0.0]
    """
    _check_tensor(input, "ndtri")
    return apply_unary(NDTRI, input)


def log_ndtr(input: Tensor) -> Tensor:
    """``log(ndtr(input))``, accurate in the lower tail.

    Example:
        >>> import fgraph as fg
        >>> round(fg.special.log_ndtr(fg.tensor([0.0])).item(), 4)
        -0.6931
    """
    _check_tensor(input, "log_ndtr")
    return apply_unary(LOG_NDTR, input)


# -- modified Bessel functions of the first kind ---------------------------------------------------------------
def _i0_rule(ctx, g):
    return (g * i1(ctx.inputs[0]),)


def _i0e_rule(ctx, g):
    x = ctx.inputs[0]
    return (g * (i1e(x) - sign(x) * ctx.result),)


def _i1_rule(ctx, g):
    x = ctx.inputs[0]
    zero = eq(x, 0)
    safe = where(zero, 1.0, x)
    return (g * where(zero, 0.5, i0(x) - i1(safe) / safe),)


def _i1e_rule(ctx, g):
    x = ctx.inputs[0]
    zero = eq(x, 0)
    safe = where(zero, 1.0, x)
    return (g * where(zero, 0.5, i0e(x) - i1e(safe) * (sign(safe) + 1.0 / safe)),)


I0 = declare("i0", float_unary(jsp.i0, "i0"), _i0_rule, save_inputs=True, hint=operand_hint, real_only=True)
I0E = declare("i0e", float_unary(jsp.i0e, "i0e"), _i0e_rule, save_inputs=True, save_result=True,
              hint=operand_hint, node_name="SpecialI0EBackward0", real_only=True)
I1 = declare("i1", float_unary(jsp.i1, "i1"), _i1_rule, save_inputs=True, hint=operand_hint,
             node_name="SpecialI1Backward0", real_only=True)
I1E = declare("i1e", float_unary(jsp.i1e, "i1e"), _i1e_rule, save_inputs=True, hint=operand_hint,
              node_name="SpecialI1EBackward0", real_only=True)


def i0(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind, order 0; its derivative is :func:`i1`.

    Example:
        >>> import fgraph as fg
        >>> round(fg.i0(fg.tensor([0.0])).item(), 6)
        1.0
    """
    _check_tensor(input, "i0")
    return apply_unary(I0, input)


def i0e(input: Tensor) -> Tensor:
    """The exponentially scaled ``i0(x) * exp(-|x|)``.

    Example:
        >>> import fgraph as fg
        >>> round(fg.special.i0e(fg.tensor([0.0])).item(), 6)
        1.0
    """
    _check_tensor(input, "i0e")
    return apply_unary(I0E, input)


def i1(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind, order 1.

    Example:
        >>> import fgraph as fg
        >>> fg.special.i1(fg.tensor([0.0])).tolist()
        [0.0]
    """
    _check_tensor(input, "i1")
    return apply_unary(I1, input)


def i1e(input: Tensor) -> Tensor:
    """The exponentially scaled ``i1(x) * exp(-|x|)``.

    Example:
        >>> import fgraph as fg
        >>> fg.special.i1e(fg.tensor([0.0])).tolist()
        [0.0]
    """
    _check_tensor(input, "i1e")
    return apply_unary(I1E, input)


# -- sinc --------------------------------------------------------------------------------------------------------
def _sinc_rule(ctx, g):
    x = ctx.inputs[0]
    zero = eq(x, 0)
    px = where(zero, 1.0, x) * math.pi
    d = (px * cos(px) - sin(px)) / (px * px) * math.pi
    # At 0 the first derivative is 0 (PyTorch); the branch -pi**2/3 * x also gives the true second derivative.
    return (g * where(zero, x * (-math.pi ** 2 / 3.0), d),)


SINC = declare("sinc", float_unary(jnp.sinc, "sinc"), _sinc_rule, save_inputs=True, hint=operand_hint)


def sinc(input: Tensor) -> Tensor:
    """The normalized sinc ``sin(pi x) / (pi x)``, 1 at 0.

    Example:
        >>> import fgraph as fg
        >>> fg.sinc(fg.tensor([0.0, 1.0])).tolist()[0]
        1.0
    """
    _check_tensor(input, "sinc")
    return apply_unary(SINC, input)


# -- multigammaln, zeta -----------------------------------------------------------------------------------------
def multigammaln(input: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma ``p(p-1)/4 log(pi) + sum_{j<p} lgamma(input - j/2)``.

    PyTorch also checks that every element exceeds ``(p - 1) / 2``; that needs the values
    on the host, so it is not done here (the terms are then ``log|gamma|`` of negative numbers).

    Example:
        >>> import fgraph as fg
        >>> round(fg.special.multigammaln(fg.tensor([2.0]), 1).item(), 6)   # lgamma(2)
        0.0
    """
    _check_tensor(input, "multigammaln")
    p = check_number("multigammaln", "p", p, integer=True)
    if p < 1:
        raise OpError(f"multigammaln: p has to be greater than or equal to 1, got {p}.")
    x = input if jnp.issubdtype(input.dtype, jnp.inexact) else to_dtype(input, "float32")
    offsets = _wrap(-0.5 * jnp.arange(p, dtype=x.dtype))
    terms = lgamma(x.unsqueeze(-1) + offsets)
    return terms.sum(-1) + p * (p - 1) / 4.0 * math.log(math.pi)


def _zeta_forward(x, q):
    return jsp.zeta(*floating_args(x, q))


def _zeta_rule(ctx, g):
    x, q = ctx.inputs
    if ctx.needs[0]:
        raise RuntimeError(
            "the derivative for 'zeta' with respect to its first argument x is not implemented (as in PyTorch); "
            "only q is differentiable. Detach x, or pass it as a number."
        )
    return None, g * -x * zeta(x + 1, q)


ZETA = declare("zeta", _zeta_forward, _zeta_rule, save_inputs=True, hint=operands_hint,
               node_name="SpecialZetaBackward0", real_only=True)


def zeta(input: Number, other: Number) -> Tensor:
    """The Hurwitz zeta function ``sum_{k>=0} (k + other) ** -input``; differentiable in ``other``.

    Example:
        >>> import fgraph as fg
        >>> round(fg.special.zeta(fg.tensor([2.0]), 1.0).item(), 6)   # pi**2 / 6
        1.644934
    """
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise OpError(f"zeta: expected at least one Tensor, got {type_name(input)} and {type_name(other)}; "
                      "wrap one with fgraph.tensor(...).")
    return apply_op(ZETA, (input, other))


#: Exported as ``fgraph.<name>`` (torch has these at top level; the rest are in ``fgraph.special``).
__all__ = ["i0", "sinc"]
#: Every function of this module, for ``fgraph.special``.
SPECIAL = ["xlog1py", "entr", "expit", "ndtr", "ndtri", "log_ndtr", "i0", "i0e", "i1", "i1e", "sinc",
           "multigammaln", "zeta"]
#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {"i0": i0, "sinc": sinc}
