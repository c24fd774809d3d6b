"""Special functions: ``erf erfc erfinv lgamma digamma polygamma``.

Every rule is written in fgraph ops, so each has derivatives of every order: the chain
``lgamma -> digamma -> polygamma(1) -> polygamma(2) -> ...`` is closed because
``polygamma(n, x)`` is a primitive whose rule is ``polygamma(n + 1, x)``.

As in PyTorch: integer inputs are promoted to float32, ``digamma(0)`` is ``-inf``
(``+inf`` at ``-0.0``), ``lgamma`` is ``log|gamma(x)|`` (``inf`` at the poles), and
``polygamma(0, x)`` is ``digamma(x)``.

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([1.0], requires_grad=True)
    >>> (g,) = fg.grad(fg.lgamma(x).sum(), [x])       # digamma(1) = -euler_gamma
    >>> round(g.item(), 4)
    -0.5772
"""
from __future__ import annotations

import math

import jax.numpy as jnp
import jax.scipy.special as jsp

from fgraph.errors import OpError
from fgraph.ops._declare import apply_unary, declare
from fgraph.ops._math_helpers import check_number, float_unary, operand_hint, to_floating
from fgraph.ops.elementwise import exp
from fgraph.tensor import Tensor

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_TWO = math.sqrt(math.pi) / 2.0


def _digamma_kernel(x):
    # PyTorch: digamma(+-0) = -+inf (JAX gives NaN there).
    return jnp.where(x == 0, jnp.copysign(jnp.inf, -x).astype(x.dtype), jsp.digamma(x))


def _polygamma_forward(x, *, n):
    x = to_floating(x)
    if n == 0:
        return _digamma_kernel(x)
    return jsp.polygamma(n, x).astype(x.dtype)


def _erf_rule(ctx, g):
    x = ctx.inputs[0]
    return (g * _TWO_OVER_SQRT_PI * exp(-(x * x)),)


def _erfc_rule(ctx, g):
    x = ctx.inputs[0]
    return (g * -_TWO_OVER_SQRT_PI * exp(-(x * x)),)


def _erfinv_rule(ctx, g):
    r = ctx.result
    return (g * _SQRT_PI_OVER_TWO * exp(r * r),)


def _lgamma_rule(ctx, g):
    return (g * digamma(ctx.inputs[0]),)


def _digamma_rule(ctx, g):
    return (g * polygamma(1, ctx.inputs[0]),)


def _polygamma_rule(ctx, g):
    return (g * polygamma(ctx.params.n + 1, ctx.inputs[0]),)


ERF = declare("erf", float_unary(jsp.erf, "erf"), _erf_rule, save_inputs=True, hint=operand_hint, real_only=True)
ERFC = declare("erfc", float_unary(jsp.erfc, "erfc"), _erfc_rule, save_inputs=True, hint=operand_hint, real_only=True)
ERFINV = declare("erfinv", float_unary(jsp.erfinv, "erfinv"), _erfinv_rule, save_result=True, hint=operand_hint,
                 real_only=True)
LGAMMA = declare("lgamma", float_unary(jsp.gammaln, "lgamma"), _lgamma_rule, save_inputs=True, hint=operand_hint,
                 real_only=True)
DIGAMMA = declare("digamma", float_unary(_digamma_kernel, "digamma"), _digamma_rule, save_inputs=True,
                  hint=operand_hint, real_only=True)
POLYGAMMA = declare("polygamma", _polygamma_forward, _polygamma_rule, params=("n",), save_inputs=True,
                    hint=operand_hint, real_only=True)


def erf(input: Tensor) -> Tensor:
    """The error function ``2/sqrt(pi) * integral_0^x exp(-t**2) dt``.

    Example:
        >>> import fgraph as fg
        >>> fg.erf(fg.tensor([0.0])).tolist()
        [0.0]
    """
    return apply_unary(ERF, input)


def erfc(input: Tensor) -> Tensor:
    """The complementary error function ``1 - erf(input)``, accurate for large inputs.

    Example:
        >>> import fgraph as fg
        >>> fg.erfc(fg.tensor([0.0])).tolist()
        [1.0]
    """
    return apply_unary(ERFC, input)


def erfinv(input: Tensor) -> Tensor:
    """The inverse error function on ``(-1, 1)`` (``+-inf`` at ``+-1``, NaN outside).

    Example:
        >>> import fgraph as fg
        >>> fg.erfinv(fg.tensor([0.0])).tolist()
        [0.0]
    """
    return apply_unary(ERFINV, input)


def lgamma(input: Tensor) -> Tensor:
    """``log|gamma(input)|``; its derivative is :func:`digamma`.

    Example:
        >>> import fgraph as fg
        >>> round(fg.lgamma(fg.tensor([3.0])).item(), 4)   # log(2!)
        0.6931
    """
    return apply_unary(LGAMMA, input)


def digamma(input: Tensor) -> Tensor:
    """``d/dx lgamma(x)``; its derivative is ``polygamma(1, x)``.

    Example:
        >>> import fgraph as fg
        >>> fg.digamma(fg.tensor([0.0])).tolist()
        [-inf]
    """
    return apply_unary(DIGAMMA, input)


def polygamma(n: int, input: Tensor) -> Tensor:
    """The ``n``-th derivative of :func:`digamma` (``n >= 0``; ``polygamma(0, x) = digamma(x)``).

    Note the argument order, as in PyTorch: ``fg.polygamma(n, x)``, or ``x.polygamma(n)``.

    Example:
        >>> import fgraph as fg
        >>> round(fg.polygamma(1, fg.tensor([1.0])).item(), 4)   # pi**2 / 6
        1.6449
    """
    if isinstance(n, Tensor) and not isinstance(input, Tensor):
        raise OpError(
            f"polygamma: the order comes first: polygamma(n, input), got a tensor as n and {type(input).__name__} "
            "as input; call fg.polygamma(n, x) or x.polygamma(n)."
        )
    n = check_number("polygamma", "n", n, integer=True)
    if n < 0:
        raise OpError(f"polygamma: n must be a non-negative integer (the order of the derivative), got {n}.")
    return apply_unary(POLYGAMMA, input, POLYGAMMA.Params(n))


def _polygamma_method(self: Tensor, n: int) -> Tensor:
    """``x.polygamma(n)`` is ``polygamma(n, x)``."""
    return polygamma(n, self)


#: Exported as ``fgraph.<name>``.
__all__ = ["erf", "erfc", "erfinv", "lgamma", "digamma", "polygamma"]
#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {
    "erf": erf, "erfc": erfc, "erfinv": erfinv, "lgamma": lgamma, "digamma": digamma, "polygamma": _polygamma_method,
}
