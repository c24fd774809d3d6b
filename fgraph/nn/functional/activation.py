"""Activation functions with ``torch.nn.functional``'s names and arguments.

Each activation that PyTorch differentiates with its own backward formula is a
primitive here (a JAX forward kernel plus a derivative rule written in fgraph ops,
so every order of derivative works); the rest are composites of fgraph ops.
Gradients at kinks follow PyTorch: ``hardtanh``/``relu6``/``hardsigmoid`` pass the
gradient only strictly inside their linear range, ``leaky_relu``/``elu`` use the
negative-side slope at 0. Every op here has second (and higher) derivatives.

Exact ``gelu`` needs the normal CDF, which is a private primitive of this module
(its derivative is the normal density, written with ``exp``), so ``gelu`` does not
depend on an ``erf`` op.

``inplace=True`` raises: fgraph tensors are immutable records.

Example:
    >>> import fgraph as fg
    >>> import fgraph.nn.functional as F
    >>> x = fg.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    >>> [round(v, 4) for v in F.gelu(x).tolist()]
    [-0.1587, 0.0, 1.9545]
    >>> F.softmax(fg.tensor([[1.0, 1.0]]), dim=-1).tolist()
    [[0.5, 0.5]]
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Optional

import jax
import jax.numpy as jnp

from fgraph.errors import OpError
from fgraph.nn.functional._utils import check_float, check_tensor, dim_index, no_inplace
from fgraph.ops._declare import apply_unary, declare
from fgraph.ops._complex import refuse_complex
from fgraph.ops.shape import reshape
from fgraph.ops.elementwise import (
    exp,
    gt,
    le,
    logical_and,
    lt,
    mul,
    relu as _relu,
    sigmoid,
    tanh,
    to_dtype,
    where,
)
from fgraph.ops.reduction import sum as _sum
from fgraph.ops.shape import narrow
from fgraph.tensor import Tensor

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_GELU_TANH_C = 0.044715
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


# -- rectifiers and hard functions -------------------------------------------------------------
def _leaky_relu_forward(x, *, negative_slope):
    return jnp.where(x > 0, x, x * negative_slope)


def _leaky_relu_rule(ctx, g):
    (x,) = ctx.inputs
    return (where(gt(x, 0), g, g * ctx.params.negative_slope),)


def _hardtanh_forward(x, *, min_val, max_val):
    return jnp.clip(x, min_val, max_val)


def _hardtanh_rule(ctx, g):
    (x,) = ctx.inputs
    p = ctx.params
    return (where(logical_and(gt(x, p.min_val), lt(x, p.max_val)), g, 0.0),)


def _hardsigmoid_forward(x):
    return jnp.minimum(jnp.maximum(x + 3, 0), 6) / 6


def _hardsigmoid_rule(ctx, g):
    (x,) = ctx.inputs
    return (where(logical_and(gt(x, -3), lt(x, 3)), g / 6, 0.0),)


def _hardswish_forward(x):
    return x * jnp.minimum(jnp.maximum(x + 3, 0), 6) / 6


def _hardswish_rule(ctx, g):
    (x,) = ctx.inputs
    # PyTorch's kernel: 0 for x <= -3, g for x >= 3.
    return (where(le(x, -3), 0.0, where(lt(x, 3), g * (x / 3 + 0.5), g)),)


LEAKY_RELU = declare("leaky_relu", _leaky_relu_forward, _leaky_relu_rule, params=("negative_slope",),
                     save_inputs=True, real_only=True)
HARDTANH = declare("hardtanh", _hardtanh_forward, _hardtanh_rule, params=("min_val", "max_val"), save_inputs=True,
                   real_only=True)
HARDSIGMOID = declare("hardsigmoid", _hardsigmoid_forward, _hardsigmoid_rule, save_inputs=True, real_only=True)
HARDSWISH = declare("hardswish", _hardswish_forward, _hardswish_rule, save_inputs=True, real_only=True)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(input, 0)`` (``fgraph.relu``); the gradient at 0 is 0.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.relu(fg.tensor([-1.0, 2.0])).tolist()
        [0.0, 2.0]
    """
    no_inplace("relu", inplace)
    return _relu(check_tensor(input, "relu"))


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``min(max(input, 0), 6)``: ``hardtanh(input, 0, 6)``.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.relu6(fg.tensor([-1.0, 3.0, 9.0])).tolist()
        [0.0, 3.0, 6.0]
    """
    no_inplace("relu6", inplace)
    return hardtanh(input, 0.0, 6.0)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``input`` where positive, else ``negative_slope * input`` (the slope at 0 is ``negative_slope``).

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.leaky_relu(fg.tensor([-2.0, 3.0]), 0.5).tolist()
        [-1.0, 3.0]
    """
    no_inplace("leaky_relu", inplace)
    check_float(input, "leaky_relu")
    return apply_unary(LEAKY_RELU, input, LEAKY_RELU.Params(float(negative_slope)))


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """Clamp into ``[min_val, max_val]``; the gradient passes only strictly inside, as in PyTorch.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.hardtanh(fg.tensor([-3.0, 0.5, 3.0])).tolist()
        [-1.0, 0.5, 1.0]
    """
    no_inplace("hardtanh", inplace)
    check_float(input, "hardtanh")
    if min_val > max_val:
        raise OpError(f"hardtanh: min_val ({min_val}) cannot be greater than max_val ({max_val}).")
    return apply_unary(HARDTANH, input, HARDTANH.Params(float(min_val), float(max_val)))


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``relu6(input + 3) / 6``.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.hardsigmoid(fg.tensor([-4.0, 0.0, 4.0])).tolist()
        [0.0, 0.5, 1.0]
    """
    no_inplace("hardsigmoid", inplace)
    return apply_unary(HARDSIGMOID, check_float(input, "hardsigmoid"))


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``input * relu6(input + 3) / 6``.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.hardswish(fg.tensor([-4.0, 0.0, 4.0])).tolist()
        [-0.0, 0.0, 4.0]
    """
    no_inplace("hardswish", inplace)
    return apply_unary(HARDSWISH, check_float(input, "hardswish"))


# -- exponential units --------------------------------------------------------------------------
def _elu_forward(x, *, alpha, scale, input_scale):
    return jnp.where(x > 0, x * scale, (alpha * scale) * jnp.expm1(x * input_scale))


def _elu_rule(ctx, g):
    (x,) = ctx.inputs
    p = ctx.params
    # d/dx alpha*scale*(exp(x*input_scale) - 1) = input_scale * (result + alpha*scale): finite for large x.
    return (where(gt(x, 0), g * p.scale, g * p.input_scale * (ctx.result + p.alpha * p.scale)),)


ELU = declare("elu", _elu_forward, _elu_rule, params=("alpha", "scale", "input_scale"), save_inputs=True,
              save_result=True, real_only=True)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``input`` where positive, else ``alpha * (exp(input) - 1)``.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> [round(v, 4) for v in F.elu(fg.tensor([-1.0, 2.0])).tolist()]
        [-0.6321, 2.0]
    """
    no_inplace("elu", inplace)
    check_float(input, "elu")
    return apply_unary(ELU, input, ELU.Params(float(alpha), 1.0, 1.0))


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """``scale * elu(input, alpha)`` with the self-normalising constants (records ``EluBackward0``).

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> [round(v, 4) for v in F.selu(fg.tensor([-1.0, 1.0])).tolist()]
        [-1.1113, 1.0507]
    """
    no_inplace("selu", inplace)
    check_float(input, "selu")
    return apply_unary(ELU, input, ELU.Params(_SELU_ALPHA, _SELU_SCALE, 1.0))


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``max(0, input) + min(0, alpha * (exp(input / alpha) - 1))`` (records ``EluBackward0``).

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> [round(v, 4) for v in F.celu(fg.tensor([-1.0, 1.0]), alpha=2.0).tolist()]
        [-0.7869, 1.0]
    """
    no_inplace("celu", inplace)
    check_float(input, "celu")
    if alpha == 0:
        raise OpError("celu: alpha must be nonzero (the input is divided by alpha); the default is 1.0.")
    return apply_unary(ELU, input, ELU.Params(float(alpha), 1.0, 1.0 / float(alpha)))


# -- smooth gates -------------------------------------------------------------------------------------
def _normal_cdf_rule(ctx, g):
    (x,) = ctx.inputs
    return (g * exp(x * x * -0.5) * _INV_SQRT_2PI,)


def _normal_cdf_forward(x):
    # Through erf, as PyTorch's gelu backward computes it. erfc (jax.nn.gelu, our forward) and jsp.ndtr keep
    # the negative tail's relative precision, where the CDF is below 1e-16 and the derivative is x * pdf to
    # 1e-16 anyway, at the cost of branches that made the gelu backward a GPT step's largest fusions
    # (fg.compile's step: 1.18x the jax.jit twin with erfc, 0.90x with erf, on the 2-core CPU).
    return (jax.lax.erf(x * _INV_SQRT_2) + 1) * 0.5


#: Private: the standard normal CDF, for exact gelu's derivative (its own derivative is the density).
_NORMAL_CDF = declare("nn_normal_cdf", _normal_cdf_forward, _normal_cdf_rule, save_inputs=True,
                      node_name="NdtrBackward0", real_only=True)


def _gelu_forward(x, *, approximate):
    return jax.nn.gelu(x, approximate=approximate == "tanh")


def _gelu_rule(ctx, g):
    (x,) = ctx.inputs
    if ctx.params.approximate == "tanh":
        x2 = x * x
        t = tanh((x + x2 * x * _GELU_TANH_C) * _SQRT_2_OVER_PI)
        inner = (x2 * (3 * _GELU_TANH_C) + 1) * _SQRT_2_OVER_PI
        return (g * ((t + 1) * 0.5 + x * 0.5 * (1 - t * t) * inner),)
    return (g * (apply_unary(_NORMAL_CDF, x) + x * exp(x * x * -0.5) * _INV_SQRT_2PI),)


def _silu_rule(ctx, g):
    (x,) = ctx.inputs
    s = sigmoid(x)
    return (g * s * (x * (1 - s) + 1),)


def _mish_forward(x):
    return x * jnp.tanh(jax.nn.softplus(x))


def _mish_rule(ctx, g):
    (x,) = ctx.inputs
    t = tanh(apply_unary(SOFTPLUS, x, SOFTPLUS.Params(1.0, 20.0)))
    return (g * (t + x * sigmoid(x) * (1 - t * t)),)


def _softplus_forward(x, *, beta, threshold):
    bx = x * beta
    return jnp.where(bx > threshold, x, jnp.logaddexp(bx, 0) / beta)


def _softplus_rule(ctx, g):
    (x,) = ctx.inputs
    p = ctx.params
    bx = x * p.beta
    return (where(gt(bx, p.threshold), g, g * sigmoid(bx)),)


def _log_sigmoid_rule(ctx, g):
    (x,) = ctx.inputs
    return (g * sigmoid(-x),)


GELU = declare("gelu", _gelu_forward, _gelu_rule, params=("approximate",), save_inputs=True, real_only=True)
SILU = declare("silu", jax.nn.silu, _silu_rule, save_inputs=True, real_only=True)
MISH = declare("mish", _mish_forward, _mish_rule, save_inputs=True, real_only=True)
SOFTPLUS = declare("softplus", _softplus_forward, _softplus_rule, params=("beta", "threshold"), save_inputs=True,
                   real_only=True)
LOG_SIGMOID = declare("log_sigmoid", jax.nn.log_sigmoid, _log_sigmoid_rule, save_inputs=True, real_only=True)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit ``input * Phi(input)``; ``approximate='tanh'`` uses the tanh formula.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> [round(v, 4) for v in F.gelu(fg.tensor([1.0, 1.0]), approximate="tanh").tolist()]
        [0.8412, 0.8412]
    """
    check_float(input, "gelu")
    if approximate not in ("none", "tanh"):
        raise OpError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}.")
    return apply_unary(GELU, input, GELU.Params(approximate))


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``input * sigmoid(input)`` (swish).

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.silu(fg.tensor([0.0])).tolist()
        [0.0]
    """
    no_inplace("silu", inplace)
    return apply_unary(SILU, check_float(input, "silu"))


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``input * tanh(softplus(input))``.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> [round(v, 4) for v in F.mish(fg.tensor([1.0])).tolist()]
        [0.8651]
    """
    no_inplace("mish", inplace)
    return apply_unary(MISH, check_float(input, "mish"))


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * input)) / beta``, linear where ``beta * input > threshold`` (as PyTorch).

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> [round(v, 4) for v in F.softplus(fg.tensor([0.0, 30.0])).tolist()]
        [0.6931, 30.0]
    """
    check_float(input, "softplus")
    if beta == 0:
        raise OpError("softplus: beta must be nonzero (the result is divided by beta); the default is 1.0.")
    return apply_unary(SOFTPLUS, input, SOFTPLUS.Params(float(beta), float(threshold)))


def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(input))``, computed stably.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> [round(v, 4) for v in F.logsigmoid(fg.tensor([0.0, -200.0])).tolist()]
        [-0.6931, -200.0]
    """
    return apply_unary(LOG_SIGMOID, check_float(input, "logsigmoid"))


def softsign(input: Tensor) -> Tensor:
    """``input / (1 + |input|)`` (a composite, as in PyTorch).

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.softsign(fg.tensor([-1.0, 3.0])).tolist()
        [-0.5, 0.75]
    """
    check_float(input, "softsign")
    return input / (input.abs() + 1)


# -- softmax family ---------------------------------------------------------------------------------
def _softmax_forward(x, *, dims):
    return jax.nn.softmax(x, axis=dims)


def _log_softmax_forward(x, *, dims):
    return jax.nn.log_softmax(x, axis=dims)


def _softmax_rule(ctx, g):
    y = ctx.result
    return (y * (g - _sum(g * y, ctx.params.dims, keepdim=True)),)


def _log_softmax_rule(ctx, g):
    return (g - exp(ctx.result) * _sum(g, ctx.params.dims, keepdim=True),)


SOFTMAX = declare("_softmax", _softmax_forward, _softmax_rule, params=("dims",), save_result=True,
                  node_name="SoftmaxBackward0", real_only=True)
LOG_SOFTMAX = declare("_log_softmax", _log_softmax_forward, _log_softmax_rule, params=("dims",), save_result=True,
                      node_name="LogSoftmaxBackward0", real_only=True)


def _softmax_dims(input: Tensor, dim: Optional[int], dtype: Any, op: str) -> tuple[Tensor, tuple[int, ...]]:
    if dtype is None:
        check_float(input, op)
    else:
        check_tensor(input, op)
    if dim is None:
        warnings.warn(
            f"Implicit dimension choice for {op} has been deprecated. Change the call to include dim=X as an argument.",
            UserWarning,
            stacklevel=3,
        )
        dim = 0 if input.ndim in (0, 1, 3) else 1
    d = dim_index(dim, input.ndim, op)
    if dtype is not None:
        input = to_dtype(input, dtype)
        check_float(input, op)
    return input, ((d,) if input.ndim else ())


def softmax(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """``exp(input) / exp(input).sum(dim, keepdim=True)``, computed stably; ``dtype`` casts the input first.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.softmax(fg.tensor([0.0, 0.0, 0.0, 0.0]), dim=0).tolist()
        [0.25, 0.25, 0.25, 0.25]
    """
    input, dims = _softmax_dims(input, dim, dtype, "softmax")
    return apply_unary(SOFTMAX, input, SOFTMAX.Params(dims))


def log_softmax(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """``log(softmax(input, dim))``, computed stably; ``dtype`` casts the input first.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> [round(v, 4) for v in F.log_softmax(fg.tensor([1000.0, 1000.0]), dim=0).tolist()]
        [-0.6931, -0.6931]
    """
    input, dims = _softmax_dims(input, dim, dtype, "log_softmax")
    return apply_unary(LOG_SOFTMAX, input, LOG_SOFTMAX.Params(dims))


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: split ``input`` in halves ``a, b`` along ``dim``; return ``a * sigmoid(b)``.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.glu(fg.tensor([[2.0, 4.0, 0.0, 0.0]])).tolist()
        [[1.0, 2.0]]
    """
    refuse_complex("glu", input)
    check_float(input, "glu")
    if input.ndim == 0:
        raise OpError("glu: does not support 0-d tensors because the halving dimension must be even.")
    d = dim_index(dim, input.ndim, "glu")
    size = input.shape[d]
    if size % 2:
        raise OpError(
            f"glu: halving dimension must be even, but dimension {d} of input shape {tuple(input.shape)} is size {size}."
        )
    half = size // 2
    return mul(narrow(input, d, 0, half), sigmoid(narrow(input, d, half, half)))


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``input`` where positive, else ``weight * input``; ``weight`` has 1 or ``input.shape[1]`` (channels) entries.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.prelu(fg.tensor([[-2.0, 3.0]]), fg.tensor([0.25])).tolist()
        [[-0.5, 3.0]]
    """
    check_float(input, "prelu")
    check_float(weight, "prelu", "weight")
    n = weight.numel()
    channels = input.shape[1] if input.ndim >= 2 else 1
    if weight.ndim > 1 or n not in (1, channels):
        raise OpError(
            f"prelu: weight of shape {tuple(weight.shape)} must hold 1 value or one per channel "
            f"(input.shape[1] = {channels}) for an input of shape {tuple(input.shape)}."
        )
    if n > 1:
        weight = reshape(weight, (n,) + (1,) * (input.ndim - 2))
    return where(gt(input, 0), input, mul(weight, input))


#: Exported as ``fgraph.nn.functional.<name>``.
__all__ = ["prelu", "relu", "relu6", "leaky_relu", "elu", "selu", "celu", "gelu", "silu", "mish", "softplus", "softsign", "hardtanh", "hardsigmoid", "hardswish", "logsigmoid", "softmax", "log_softmax", "glu"]
#: Tensor methods PyTorch has for these (installed only for modules in ``fgraph.ops.FAMILIES``).
TENSOR_METHODS = {"softmax": softmax, "log_softmax": log_softmax}
