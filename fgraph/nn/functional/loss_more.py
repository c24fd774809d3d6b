"""Margin, ranking and likelihood losses with ``torch.nn.functional``'s names, arguments and reductions.

``gaussian_nll_loss``, ``poisson_nll_loss``, ``soft_margin_loss``, ``hinge_embedding_loss``,
``margin_ranking_loss``, ``multi_margin_loss``, ``multilabel_margin_loss`` and
``multilabel_soft_margin_loss``: composites of fgraph ops written as PyTorch defines them
(hinges are ``relu``-style clamps, so the gradient at a hinge's kink is 0, as in PyTorch's
kernels), with exact second derivatives. Class-index targets are checked eagerly (not
under tracing); so is ``gaussian_nll_loss``'s ``var >= 0``.

Example:
    >>> import fgraph as fg
    >>> import fgraph.nn.functional as F
    >>> F.margin_ranking_loss(fg.tensor([1.0, 2.0]), fg.tensor([2.0, 1.0]), fg.tensor([1.0, 1.0])).item()
    0.5
    >>> F.multi_margin_loss(fg.tensor([[0.1, 0.2, 0.4, 0.8]]), fg.tensor([3])).item()
    0.32499998807907104
"""
from __future__ import annotations

import math
from typing import Optional, Union

import jax.numpy as jnp
import numpy as np

from fgraph.errors import OpError
from fgraph.nn.functional._utils import (
    broadcast_shape,
    check_float,
    check_integer,
    check_reduction,
    check_tensor,
    is_traced,
    legacy_reduction,
    reduce_loss,
)
from fgraph.nn.functional.activation import LOG_SIGMOID
from fgraph.ops._declare import apply_unary
from fgraph.ops.elementwise import (
    clamp, eq, exp, gt, le, log, logical_and, logical_not, lt, mul, ne, relu, to_dtype, where,
)
from fgraph.ops.reduction import sum as _sum
from fgraph.ops.scan import cumsum
from fgraph.ops.shape import unsqueeze
from fgraph.tensor import Tensor, _wrap
from fgraph.amp.autocast_mode import autocast_policy


def _logsigmoid(x: Tensor) -> Tensor:
    return apply_unary(LOG_SIGMOID, x)


def _reduction(size_average: Optional[bool], reduce: Optional[bool], reduction: str, op: str) -> str:
    return check_reduction(legacy_reduction(size_average, reduce, reduction), op)


# -- likelihood losses ----------------------------------------------------------------------------------------------
def gaussian_nll_loss(input: Tensor, target: Tensor, var: Union[Tensor, float], full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """Gaussian negative log-likelihood ``0.5 (log(v) + (input - target)^2 / v)`` (+ ``0.5 log(2 pi)`` if ``full``).

    ``var`` has ``input``'s shape (heteroscedastic), one dimension less or a size-1
    dimension (homoscedastic), or is a float. ``v = max(var, eps)`` with the gradient
    passing to ``var`` unchanged (PyTorch clamps in place under ``no_grad``).

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> mean, target, var = fg.tensor([1.0, 3.0]), fg.tensor([1.0, 1.0]), fg.tensor([1.0, 2.0])
        >>> F.gaussian_nll_loss(mean, target, var, reduction="none").tolist()
        [0.0, 1.3465735912322998]
    """
    op = "gaussian_nll_loss"
    check_float(input, op)
    check_float(target, op, "target")
    if isinstance(var, (int, float)) and not isinstance(var, bool):
        if var < 0:
            raise ValueError(f"{op}: var has negative entry/entries (got {var}); variances must be >= 0.")
        var = mul(input.detach(), 0.0) + float(var)
    check_float(var, op, "var")
    if not is_traced(var) and var.numel() and bool(np.any(np.asarray(var._array) < 0)):
        raise ValueError(f"{op}: var has negative entry/entries; variances must be >= 0.")
    ishape, vshape = tuple(input.shape), tuple(var.shape)
    if vshape != ishape:
        if ishape[:-1] == vshape:
            var = unsqueeze(var, -1)
        elif not (len(ishape) == len(vshape) and sum(v for i, v in zip(ishape, vshape) if i != v) == 1):
            raise ValueError(
                f"{op}: var of shape {vshape} is of incorrect size for input {ishape}: it must have the input's "
                "shape, the input's shape without its last dimension, or the input's shape with one dimension 1."
            )
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{op}: {reduction} is not valid; expected 'none', 'mean' or 'sum'.")
    v = var + (clamp(var.detach(), min=eps) - var.detach())  # clamped value, identity gradient
    d = input - target
    loss = (log(v) + d * d / v) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return reduce_loss(loss, reduction, op)


@autocast_policy("poisson_nll_loss")
def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: Optional[bool] = None, eps: float = 1e-8, reduce: Optional[bool] = None,
                     reduction: str = "mean") -> Tensor:
    """Poisson negative log-likelihood: ``exp(input) - target * input`` (``log_input``), else
    ``input - target * log(input + eps)``; ``full`` adds Stirling's term for ``target > 1``.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> loss = F.poisson_nll_loss(fg.tensor([0.0, 1.0]), fg.tensor([1.0, 0.0]), reduction="none")
        >>> [round(v, 4) for v in loss.tolist()]
        [1.0, 2.7183]
    """
    op = "poisson_nll_loss"
    check_float(input, op)
    check_float(target, op, "target")
    reduction = _reduction(size_average, reduce, reduction, op)
    broadcast_shape(op, input, target)
    if log_input:
        loss = exp(input) - target * input
    else:
        loss = input - target * log(input + eps)
    if full:
        small = le(target, 1.0)
        t = where(small, 2.0, target)  # keeps log finite (and its gradient 0) where the term is masked
        stirling = t * log(t) - t + log(t * (2 * math.pi)) * 0.5
        loss = loss + where(small, 0.0, stirling)
    return reduce_loss(loss, reduction, op)


# -- binary margin losses --------------------------------------------------------------------------------------------
@autocast_policy("soft_margin_loss")
def soft_margin_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None,
                     reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    """Two-class logistic loss ``log(1 + exp(-target * input))`` (targets ``1``/``-1``), computed stably.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> round(F.soft_margin_loss(fg.tensor([0.0]), fg.tensor([1.0])).item(), 4)
        0.6931
    """
    op = "soft_margin_loss"
    check_float(input, op)
    check_float(target, op, "target")
    reduction = _reduction(size_average, reduce, reduction, op)
    broadcast_shape(op, input, target)
    return reduce_loss(-_logsigmoid(target * input), reduction, op)


@autocast_policy("hinge_embedding_loss")
def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average: Optional[bool] = None,
                         reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    """``input`` where ``target == 1``, ``max(0, margin - input)`` where ``target == -1`` (summed where a
    target is neither: PyTorch's definition).

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.hinge_embedding_loss(fg.tensor([0.3, 0.3]), fg.tensor([1.0, -1.0]), reduction="none").tolist()
        [0.30000001192092896, 0.699999988079071]
    """
    op = "hinge_embedding_loss"
    check_float(input, op)
    check_tensor(target, op, "target")
    reduction = _reduction(size_average, reduce, reduction, op)
    broadcast_shape(op, input, target)
    hinge = where(ne(target, 1), relu(margin - input), 0.0)
    return reduce_loss(hinge + where(ne(target, -1), input, 0.0), reduction, op)


@autocast_policy("margin_ranking_loss")
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                        size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                        reduction: str = "mean") -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``: ``target = 1`` wants ``input1`` ranked higher.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.margin_ranking_loss(fg.tensor([1.0]), fg.tensor([2.0]), fg.tensor([-1.0]), margin=0.5).item()
        0.0
    """
    op = "margin_ranking_loss"
    check_float(input1, op, "input1")
    check_float(input2, op, "input2")
    check_tensor(target, op, "target")
    reduction = _reduction(size_average, reduce, reduction, op)
    if not input1.ndim == input2.ndim == target.ndim:
        raise OpError(
            f"{op}: All input tensors should have same dimension but got sizes: input1: {tuple(input1.shape)}, "
            f"input2: {tuple(input2.shape)}, target: {tuple(target.shape)}."
        )
    broadcast_shape(op, input1, input2, target)
    return reduce_loss(relu(-target * (input1 - input2) + margin), reduction, op)


# -- multi-class margin losses ---------------------------------------------------------------------------------------
def _classes(c: int, dtype: np.dtype) -> Tensor:
    return _wrap(jnp.arange(c, dtype=dtype))


def _check_targets(op: str, target: Tensor, low: int, c: int) -> None:
    if is_traced(target) or not target.numel():
        return
    values = np.asarray(target._array)
    if values.min() < low or values.max() >= c:
        bad = int(values.min()) if values.min() < low else int(values.max())
        raise IndexError(f"{op}: target {bad} is out of bounds for {c} classes (expected values in [{low}, {c - 1}]).")


@autocast_policy("multi_margin_loss")
def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Optional[Tensor] = None, size_average: Optional[bool] = None,
                      reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    """Multi-class hinge loss: ``sum_{i != y} max(0, margin - x[y] + x[i])^p / C`` per sample (``p`` 1 or 2),
    times ``weight[y]`` when given; ``input`` is ``(N, C)`` or ``(C)``, ``target`` ``(N)`` or 0-d.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.multi_margin_loss(fg.tensor([[0.0, 1.0], [1.0, 0.0]]), fg.tensor([1, 1]), reduction="none").tolist()
        [0.0, 1.0]
    """
    op = "multi_margin_loss"
    check_float(input, op)
    check_integer(target, op, "target")
    reduction = _reduction(size_average, reduce, reduction, op)
    if p not in (1, 2):
        raise OpError(f"{op}: only p == 1 and p == 2 are supported, got p={p!r}.")
    if input.ndim not in (1, 2) or input.shape[-1] == 0:
        raise OpError(f"{op}: expected a non-empty (C) or (N, C) input, got shape {tuple(input.shape)}.")
    c = input.shape[-1]
    if tuple(target.shape) != tuple(input.shape[:-1]):
        raise OpError(
            f"{op}: target of shape {tuple(target.shape)} must hold one class index per sample, shape "
            f"{tuple(input.shape[:-1])}, for input {tuple(input.shape)}."
        )
    _check_targets(op, target, 0, c)
    hit = eq(unsqueeze(target, -1), _classes(c, np.dtype(target.dtype)))
    x_y = _sum(where(hit, input, 0.0), -1, keepdim=True)
    z = relu(input - x_y + margin)
    if p == 2:
        z = z * z
    if weight is not None:
        check_float(weight, op, "weight")
        if tuple(weight.shape) != (c,):
            raise OpError(f"{op}: weight must hold one value per class, shape ({c},), got {tuple(weight.shape)}.")
        z = z * _sum(where(hit, weight, 0.0), -1, keepdim=True)
    loss = _sum(where(hit, 0.0, z), -1) / c
    return reduce_loss(loss, reduction, op)


@autocast_policy("multilabel_margin_loss")
def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None,
                           reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    """Multi-label hinge loss: ``sum_j sum_{i not a target} max(0, 1 - (x[y_j] - x[i])) / C`` per sample.

    ``target`` has ``input``'s shape (``(C)`` or ``(N, C)``) and lists the target classes
    first, ended by the first negative value (``-1``).

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> x = fg.tensor([[0.1, 0.2, 0.4, 0.8]])
        >>> round(F.multilabel_margin_loss(x, fg.tensor([[3, 0, -1, 1]])).item(), 4)
        0.85
    """
    op = "multilabel_margin_loss"
    check_float(input, op)
    check_integer(target, op, "target")
    reduction = _reduction(size_average, reduce, reduction, op)
    if input.ndim not in (1, 2) or input.shape[-1] == 0:
        raise OpError(f"{op}: expected a non-empty (C) or (N, C) input, got shape {tuple(input.shape)}.")
    if tuple(target.shape) != tuple(input.shape):
        raise OpError(f"{op}: target of shape {tuple(target.shape)} must have the input's shape {tuple(input.shape)}.")
    c = input.shape[-1]
    _check_targets(op, target, -1, c)
    listed = eq(cumsum(to_dtype(lt(target, 0), np.int32), -1), 0)  # (.., K): before the first negative entry
    hit = logical_and(eq(unsqueeze(target, -1), _classes(c, np.dtype(target.dtype))), unsqueeze(listed, -1))
    is_target = gt(_sum(to_dtype(hit, np.int32), -2), 0)  # (.., C)
    x_y = _sum(where(hit, unsqueeze(input, -2), 0.0), -1)  # (.., K): x[target_k]
    z = relu(unsqueeze(input, -2) - unsqueeze(x_y, -1) + 1.0)  # (.., K, C)
    keep = logical_and(unsqueeze(listed, -1), unsqueeze(logical_not(is_target), -2))
    loss = _sum(where(keep, z, 0.0), (-2, -1)) / c
    return reduce_loss(loss, reduction, op)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                                size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                                reduction: str = "mean") -> Tensor:
    """One-vs-all logistic loss ``-(t log(sigmoid(x)) + (1 - t) log(sigmoid(-x)))``, times ``weight``
    (broadcast), averaged over the classes (the last dimension), then reduced over samples.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> round(F.multilabel_soft_margin_loss(fg.tensor([[0.0, 0.0]]), fg.tensor([[1.0, 0.0]])).item(), 4)
        0.6931
    """
    op = "multilabel_soft_margin_loss"
    check_float(input, op)
    check_float(target, op, "target")
    reduction = _reduction(size_average, reduce, reduction, op)
    if input.ndim == 0:
        raise OpError(f"{op}: input must have a class dimension, got a 0-d tensor.")
    broadcast_shape(op, input, target)
    loss = -(target * _logsigmoid(input) + (1 - target) * _logsigmoid(-input))
    if weight is not None:
        check_float(weight, op, "weight")
        broadcast_shape(op, loss, weight)
        loss = loss * weight
    loss = _sum(loss, loss.ndim - 1) / input.shape[-1]
    return reduce_loss(loss, reduction, op)


#: Exported as ``fgraph.nn.functional.<name>``.
__all__ = [
    "gaussian_nll_loss", "poisson_nll_loss", "soft_margin_loss", "hinge_embedding_loss", "margin_ranking_loss",
    "multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss",
]
#: No Tensor methods: PyTorch has none for these.
TENSOR_METHODS: dict = {}
