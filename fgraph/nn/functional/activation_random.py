"""Random activations: ``rrelu``, ``gumbel_softmax``, ``alpha_dropout``, ``feature_alpha_dropout``.

Their noise comes from ``key=`` (a ``jax.random`` key: the same key, the same noise;
the way to write traced code) or from ``generator=``/the default generator
(:func:`fgraph.manual_seed`), like :func:`fgraph.nn.functional.dropout`. The draws
therefore differ from PyTorch's for the same seed; the distributions are PyTorch's:

* ``rrelu`` in training multiplies each ``x <= 0`` by a slope drawn from
  ``U(lower, upper)`` (the gradient there is that slope); in eval it is
  ``leaky_relu`` with slope ``(lower + upper) / 2``;
* ``gumbel_softmax`` is ``softmax((logits + g) / tau)`` with ``g ~ Gumbel(0, 1)``;
  ``hard=True`` returns the one-hot of its argmax with the soft sample's gradient
  (straight-through: ``y_hard - y_soft.detach() + y_soft``);
* ``alpha_dropout`` keeps SELU's mean and variance: dropped elements are set to
  SELU's negative saturation ``-alpha'`` and the result is the affine map
  ``a * (x * keep - alpha' * (1 - keep)) + alpha' * a * p`` with
  ``a = ((alpha'^2 p + 1)(1 - p))^(-1/2)``; ``feature_alpha_dropout`` draws one
  keep value per ``(n, c)`` channel.

Example:
    >>> import fgraph as fg, jax
    >>> import fgraph.nn.functional as F
    >>> F.rrelu(fg.tensor([-1.0, 2.0])).tolist()  # eval: slope (1/8 + 1/3) / 2
    [-0.2291666716337204, 2.0]
    >>> y = F.gumbel_softmax(fg.zeros(2, 3), hard=True, key=jax.random.PRNGKey(0))
    >>> y.sum(-1).tolist()
    [1.0, 1.0]
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Optional

from fgraph.errors import OpError
from fgraph.nn.functional._utils import check_float, dim_index, no_inplace
from fgraph.nn.functional.activation import SOFTMAX, leaky_relu
from fgraph.ops._declare import apply_unary
from fgraph.ops._complex import refuse_complex
from fgraph.ops.elementwise import add, eq, le, log, lt, mul, neg, sub, to_dtype, where
from fgraph.ops.elementwise_math import log1p
from fgraph.ops.random_ops import rand
from fgraph.ops.reduction_minmax import argmax
from fgraph.ops.shape import unsqueeze
from fgraph.random import Generator
from fgraph.tensor import Tensor, arange

#: SELU's negative saturation value ``scale * alpha`` (PyTorch's constant).
_ALPHA_PRIME = 1.7580993408473766


def _number(v: Any, name: str, op: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{op}: '{name}' must be a number, got {type(v).__name__}.")
    return float(v)


def _uniform(shape: tuple, dtype: Any, key: Any, generator: Optional[Generator]) -> Tensor:
    """``U[0, 1)`` noise of ``shape`` (from ``key`` or the generator); carries no gradient."""
    return rand(shape, key=key, generator=generator, dtype=dtype)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False, *, key: Any = None, generator: Optional[Generator] = None) -> Tensor:
    """Randomized leaky ReLU: ``x`` where ``x > 0``, else ``a * x`` with ``a ~ U(lower, upper)`` per element
    (training), or ``a = (lower + upper) / 2`` (eval, the default as in PyTorch).

    Example:
        >>> import fgraph as fg, jax
        >>> import fgraph.nn.functional as F
        >>> y = F.rrelu(-fg.ones(1000), training=True, key=jax.random.PRNGKey(0))
        >>> 1 / 8 <= -y.max().item() and -y.min().item() <= 1 / 3
        True
    """
    op = "rrelu"
    no_inplace(op, inplace)
    check_float(input, op)
    lower, upper = _number(lower, "lower", op), _number(upper, "upper", op)
    if lower > upper:
        raise OpError(f"{op}: lower bound {lower} must be less than or equal to upper bound {upper}.")
    if not training:
        return leaky_relu(input, (lower + upper) / 2)
    slope = add(mul(_uniform(tuple(input.shape), input.dtype, key, generator), upper - lower), lower)
    return where(le(input, 0.0), mul(input, slope), input)


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1, *,
                   key: Any = None, generator: Optional[Generator] = None) -> Tensor:
    """A sample of the Gumbel-softmax (concrete) distribution over ``dim``: ``softmax((logits + g) / tau)``.

    ``hard=True`` returns one-hot vectors (the argmax) whose gradient is the soft sample's.
    ``eps`` is deprecated and unused, as in PyTorch.

    Example:
        >>> import fgraph as fg, jax
        >>> import fgraph.nn.functional as F
        >>> y = F.gumbel_softmax(fg.zeros(4), tau=0.5, key=jax.random.PRNGKey(1))
        >>> round(y.sum().item(), 5)
        1.0
    """
    op = "gumbel_softmax"
    check_float(logits, op)
    tau = _number(tau, "tau", op)
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    d = dim_index(dim, logits.ndim, op)
    u = _uniform(tuple(logits.shape), logits.dtype, key, generator)
    gumbels = neg(log(neg(log1p(neg(u)))))  # -log(E) with E = -log(1 - U) ~ Exp(1)
    y_soft = apply_unary(SOFTMAX, (logits + gumbels) / tau, SOFTMAX.Params((d,) if logits.ndim else ()))
    if not hard:
        return y_soft
    if logits.ndim == 0:
        y_hard = mul(y_soft.detach(), 0.0) + 1.0
    else:
        index = unsqueeze(argmax(y_soft, d), d)
        classes = _class_positions(logits, d)
        y_hard = to_dtype(eq(classes, index), logits.dtype)
    return y_hard - y_soft.detach() + y_soft


def _class_positions(x: Tensor, d: int) -> Tensor:
    """``0, 1, ..., size - 1`` along dimension ``d`` of ``x``'s shape (size 1 elsewhere)."""
    shape = [1] * x.ndim
    shape[d] = x.shape[d]
    return arange(x.shape[d]).reshape(tuple(shape))


def _check_p(p: Any, op: str) -> float:
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise OpError(f"{op}: dropout probability has to be between 0 and 1, but got {p!r}.")
    return float(p)


def _alpha_dropout(input: Tensor, p: float, training: bool, inplace: bool, key: Any,
                   generator: Optional[Generator], op: str, feature: bool) -> Tensor:
    p = _check_p(p, op)
    no_inplace(op, inplace)
    check_float(input, op)
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        return mul(input, 0.0)
    if feature:
        if input.ndim < 2:
            raise OpError(
                f"{op}: feature dropout requires at least 2 dimensions in the input (N, C, ...), got input of "
                f"shape {tuple(input.shape)}; use F.alpha_dropout for element-wise alpha dropout."
            )
        shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    else:
        shape = tuple(input.shape)
    keep = to_dtype(lt(_uniform(shape, input.dtype, key, generator), 1.0 - p), input.dtype)
    a = 1.0 / math.sqrt((_ALPHA_PRIME ** 2 * p + 1) * (1 - p))
    b = add(mul(sub(keep, 1.0), _ALPHA_PRIME * a), _ALPHA_PRIME * a * p)
    return add(mul(input, mul(keep, a)), b)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False, *,
                  key: Any = None, generator: Optional[Generator] = None) -> Tensor:
    """Dropout for SELU networks (keeps zero mean and unit variance); active only when ``training``.

    Example:
        >>> import fgraph as fg, jax
        >>> import fgraph.nn.functional as F
        >>> x = fg.randn(20000, key=jax.random.PRNGKey(1))
        >>> y = F.alpha_dropout(x, 0.2, training=True, key=jax.random.PRNGKey(0))
        >>> abs(y.mean().item()) < 0.05, abs(y.std().item() - 1) < 0.05
        (True, True)
    """
    refuse_complex("alpha_dropout", input)
    return _alpha_dropout(input, p, training, inplace, key, generator, "alpha_dropout", False)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False, *,
                          key: Any = None, generator: Optional[Generator] = None) -> Tensor:
    """:func:`alpha_dropout` of whole channels: one keep draw per ``(n, c)`` of an ``(N, C, ...)`` input.

    Example:
        >>> import fgraph as fg, jax
        >>> import fgraph.nn.functional as F
        >>> y = F.feature_alpha_dropout(fg.ones(2, 3, 4), 0.5, training=True, key=jax.random.PRNGKey(0))
        >>> all(len(set(row)) == 1 for row in y.reshape(6, 4).tolist())
        True
    """
    refuse_complex("feature_alpha_dropout", input)
    return _alpha_dropout(input, p, training, inplace, key, generator, "feature_alpha_dropout", True)


#: Exported as ``fgraph.nn.functional.<name>``.
__all__ = ["rrelu", "gumbel_softmax", "alpha_dropout", "feature_alpha_dropout"]
#: No Tensor methods: PyTorch has none for these.
TENSOR_METHODS: dict = {}
