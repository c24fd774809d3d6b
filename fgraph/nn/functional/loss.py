"""Loss functions with ``torch.nn.functional``'s names, arguments and reductions.

``reduction`` is ``'none'``, ``'mean'`` or ``'sum'`` (``kl_div`` also takes
``'batchmean'``); the deprecated ``size_average``/``reduce`` flags map onto it as in
PyTorch. Weighted means follow PyTorch exactly: ``nll_loss``/``cross_entropy`` with
class indices divide by the summed weights of the non-ignored targets; with class
probabilities by the number of samples; weighted ``mse_loss``/``l1_loss`` by the
summed weights; weighted ``huber_loss`` by the number of elements.

All losses are composites of fgraph ops except ``binary_cross_entropy``, a primitive
whose rule is PyTorch's (``(x - t) / max(x (1 - x), 1e-12)``, logs clamped at -100), and
the class-index ``nll_loss`` (also the end of ``cross_entropy``), the primitive of
``_nll.py`` (one kernel, node ``NllLossBackward0`` as in PyTorch), and the unweighted
``mse_loss``, the primitive of ``_mse.py`` (node ``MseLossBackward0``, for every reduction);
every loss has exact second derivatives (targets included, where they are floats).
Class-index targets are checked eagerly (not under tracing).

Example:
    >>> import fgraph as fg
    >>> import fgraph.nn.functional as F
    >>> logits = fg.tensor([[2.0, 0.0], [0.0, 2.0]], requires_grad=True)
    >>> round(F.cross_entropy(logits, fg.tensor([0, 1])).item(), 4)
    0.1269
    >>> F.mse_loss(fg.tensor([1.0, 3.0]), fg.tensor([1.0, 1.0])).item()
    2.0
"""
from __future__ import annotations

import warnings
from typing import Any, Optional

import jax.numpy as jnp
import numpy as np

from fgraph.errors import OpError
from fgraph.nn.functional._mse import mse
from fgraph.nn.functional._nll import class_ids, nll
from fgraph.nn.functional._utils import (
    broadcast_shape,
    broadcasts_to,
    check_float,
    check_integer,
    check_reduction,
    check_tensor,
    is_traced,
    legacy_reduction,
    reduce_loss,
    warn_target_size,
)
from fgraph.nn.functional.activation import log_softmax, logsigmoid
from fgraph.nn.functional.basic import pairwise_distance
from fgraph.ops._declare import apply_op, declare
from fgraph.ops._known_ranges import value_range
from fgraph.ops._complex import refuse_complex
from fgraph.ops.elementwise import (
    abs as _abs,
    clamp,
    eq,
    exp,
    log,
    logical_and,
    lt,
    minimum,
    ne,
    sqrt,
    to_dtype,
    where,
)
from fgraph.ops.reduction import sum as _sum
from fgraph.ops.shape import reshape, unsqueeze
from fgraph.tensor import Tensor
from fgraph.amp.autocast_mode import autocast_policy


def _pair(op: str, input: Tensor, target: Tensor) -> None:
    check_float(input, op)
    check_float(target, op, "target")
    warn_target_size(op, input, target)
    broadcast_shape(op, input, target)


def _weighted(loss: Tensor, input: Tensor, weight: Optional[Tensor], reduction: str, op: str, mean_by: str) -> Tensor:
    """PyTorch's optional elementwise ``weight`` (same shape as ``input``); ``mean_by`` is 'weight' or 'count'."""
    check_reduction(reduction, op)
    if weight is None:
        return reduce_loss(loss, reduction, op)
    check_float(weight, op, "weight")
    if tuple(weight.shape) != tuple(input.shape):
        raise OpError(f"{op}: weight of shape {tuple(weight.shape)} must have the input's shape {tuple(input.shape)}.")
    loss = loss * weight
    if reduction == "mean" and mean_by == "weight":
        return _sum(loss) / _sum(weight)
    return reduce_loss(loss, reduction, op)


# -- regression losses ------------------------------------------------------------------------------------------
@autocast_policy("mse_loss")
def mse_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
             reduction: str = "mean", weight: Optional[Tensor] = None) -> Tensor:
    """``(input - target) ** 2``, reduced; a ``weight`` makes the mean ``sum(w * loss) / sum(w)``.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.mse_loss(fg.tensor([1.0, 2.0]), fg.tensor([0.0, 0.0]), reduction="sum").item()
        5.0
    """
    refuse_complex("mse_loss", input, target)
    _pair("mse_loss", input, target)
    reduction = legacy_reduction(size_average, reduce, reduction)
    if weight is None:  # PyTorch's fused kernel and node; with a weight, PyTorch composes it too
        return mse(input, target, check_reduction(reduction, "mse_loss"))
    d = input - target
    return _weighted(d * d, input, weight, reduction, "mse_loss", "weight")


@autocast_policy("l1_loss")
def l1_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
            reduction: str = "mean", weight: Optional[Tensor] = None) -> Tensor:
    """``|input - target|``, reduced (the gradient at 0 is 0); a ``weight`` makes the mean ``sum(w * loss) / sum(w)``.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.l1_loss(fg.tensor([1.0, -2.0]), fg.tensor([0.0, 0.0])).item()
        1.5
    """
    _pair("l1_loss", input, target)
    reduction = legacy_reduction(size_average, reduce, reduction)
    return _weighted(_abs(input - target), input, weight, reduction, "l1_loss", "weight")


@autocast_policy("smooth_l1_loss")
def smooth_l1_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (``d = input - target``); ``beta=0`` is L1.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.smooth_l1_loss(fg.tensor([0.5, 3.0]), fg.tensor([0.0, 0.0]), reduction="none").tolist()
        [0.125, 2.5]
    """
    refuse_complex("smooth_l1_loss", input, target)
    _pair("smooth_l1_loss", input, target)
    reduction = legacy_reduction(size_average, reduce, reduction)
    if beta < 0:
        raise OpError(f"smooth_l1_loss: beta must be non-negative, got {beta}.")
    d = input - target
    a = _abs(d)
    loss = a if beta == 0 else where(lt(a, beta), d * d * (0.5 / beta), a - 0.5 * beta)
    return reduce_loss(loss, check_reduction(reduction, "smooth_l1_loss"), "smooth_l1_loss")


@autocast_policy("huber_loss")
def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Optional[Tensor] = None) -> Tensor:
    """``0.5 d**2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)``; a ``weight`` scales each element.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.huber_loss(fg.tensor([0.5, 3.0]), fg.tensor([0.0, 0.0]), reduction="none", delta=2.0).tolist()
        [0.125, 4.0]
    """
    refuse_complex("huber_loss", input, target)
    _pair("huber_loss", input, target)
    if delta <= 0:
        raise OpError(f"huber_loss: delta must be positive, got {delta}.")
    d = input - target
    a = _abs(d)
    loss = where(lt(a, delta), d * d * 0.5, (a - 0.5 * delta) * delta)
    return _weighted(loss, input, weight, reduction, "huber_loss", "count")


# -- classification losses -------------------------------------------------------------------------------------
def _class_dim(op: str, input: Tensor) -> int:
    check_float(input, op)
    if input.ndim == 0:
        raise OpError(f"{op}: input must have a class dimension: (C), (N, C) or (N, C, d1, ...), got a 0-d tensor.")
    return 0 if input.ndim == 1 else 1


def _class_weight(op: str, weight: Optional[Tensor], input: Tensor, class_dim: int) -> Optional[Tensor]:
    """``weight`` (one per class) reshaped to broadcast along the class dimension of ``input``."""
    if weight is None:
        return None
    check_float(weight, op, "weight")
    c = input.shape[class_dim]
    if tuple(weight.shape) != (c,):
        raise OpError(
            f"{op}: weight should hold one value per class, shape ({c},), for input {tuple(input.shape)}; "
            f"got shape {tuple(weight.shape)}."
        )
    shape = [1] * input.ndim
    shape[class_dim] = c
    return reshape(weight, tuple(shape))


def _check_class_target(op: str, input: Tensor, target: Tensor, class_dim: int, ignore_index: int) -> None:
    check_integer(target, op, "target")
    expected = tuple(input.shape[:class_dim] + input.shape[class_dim + 1:])
    if tuple(target.shape) != expected:
        raise OpError(
            f"{op}: for input of shape {tuple(input.shape)} (classes in dimension {class_dim}) the class-index "
            f"target must have shape {expected}, got {tuple(target.shape)}."
        )
    if is_traced(target) or not target.numel():
        return
    low, high = value_range(target._array, ignore_index)
    c = input.shape[class_dim]
    if low is not None and (low < 0 or high >= c):
        bad = low if low < 0 else high
        raise IndexError(
            f"{op}: target {bad} is out of bounds for {c} classes (class indices must lie in [0, {c - 1}] "
            f"or equal ignore_index={ignore_index})."
        )


def _nll_parts(input: Tensor, target: Tensor, weight_c: Optional[Tensor], ignore_index: int, class_dim: int):
    """(per-sample loss, per-sample weight, non-ignored mask) for class-index targets."""
    classes = class_ids(input.shape[class_dim], class_dim, input.ndim, np.dtype(target.dtype))
    valid = ne(target, ignore_index)
    hit = logical_and(eq(unsqueeze(target, class_dim), classes), unsqueeze(valid, class_dim))
    scored = input if weight_c is None else input * weight_c
    loss = -_sum(where(hit, scored, 0.0), class_dim)
    if weight_c is None:
        w = to_dtype(valid, input.dtype)
    else:
        w = _sum(where(hit, weight_c, 0.0), class_dim)
    return loss, w, valid


def _nll_reduce(loss: Tensor, w: Tensor, reduction: str) -> Tensor:
    if reduction == "none":
        return loss
    if reduction == "sum":
        return _sum(loss)
    return _sum(loss) / _sum(w)  # all targets ignored: 0 / 0 = nan, as in PyTorch


@autocast_policy("nll_loss")
def nll_loss(input: Tensor, target: Tensor, weight: Optional[Tensor] = None, size_average: Optional[bool] = None,
             ignore_index: int = -100, reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of integer class ``target`` under log-probabilities ``input``.

    ``input`` is ``(C)``, ``(N, C)`` or ``(N, C, d1, ...)``; ``target`` the same without ``C``.
    Targets equal to ``ignore_index`` contribute nothing; ``'mean'`` divides by the summed
    ``weight[target]`` of the others.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> logp = fg.tensor([[-0.5, -1.0], [-2.0, -0.25]])
        >>> F.nll_loss(logp, fg.tensor([0, 1]), reduction="none").tolist()
        [0.5, 0.25]
    """
    class_dim = _class_dim("nll_loss", input)
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction), "nll_loss")
    _check_class_target("nll_loss", input, target, class_dim, ignore_index)
    _class_weight("nll_loss", weight, input, class_dim)
    return nll(input, target, weight, class_dim, ignore_index, reduction)


@autocast_policy("cross_entropy")
def cross_entropy(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                  size_average: Optional[bool] = None, ignore_index: int = -100, reduce: Optional[bool] = None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy between logits ``input`` and ``target``: integer class indices (shape of
    ``input`` without the class dimension) or class probabilities (``input``'s shape, floating).

    ``label_smoothing`` mixes the target with the uniform distribution. With class indices,
    ``'mean'`` divides by the summed ``weight[target]`` of non-ignored targets; with
    probabilities, by the number of samples.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> x = fg.tensor([[0.0, 0.0]])
        >>> round(F.cross_entropy(x, fg.tensor([1])).item(), 4), round(F.cross_entropy(x, fg.tensor([[0.0, 1.0]])).item(), 4)
        (0.6931, 0.6931)
    """
    op = "cross_entropy"
    class_dim = _class_dim(op, input)
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction), op)
    if not 0.0 <= label_smoothing <= 1.0:
        raise OpError(f"{op}: label_smoothing must be between 0.0 and 1.0, got {label_smoothing}.")
    check_tensor(target, op, "target")
    c = input.shape[class_dim]
    weight_c = _class_weight(op, weight, input, class_dim)
    if jnp.issubdtype(target.dtype, jnp.floating):
        if tuple(target.shape) != tuple(input.shape):
            raise OpError(
                f"{op}: a floating-point target holds class probabilities and must have the input's shape "
                f"{tuple(input.shape)}, got {tuple(target.shape)}; for class indices pass an integer tensor (.long())."
            )
        logp = log_softmax(input, class_dim)
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / c
        prod = logp * target if weight_c is None else logp * target * weight_c
        if reduction == "none":
            return -_sum(prod, class_dim)
        if reduction == "sum":
            return -_sum(prod)
        return -_sum(prod) / (input.numel() / c if c else 0.0)
    _check_class_target(op, input, target, class_dim, ignore_index)
    logp = log_softmax(input, class_dim)
    if label_smoothing == 0:
        return nll(logp, target, weight, class_dim, ignore_index, reduction)
    loss, w, valid = _nll_parts(logp, target, weight_c, ignore_index, class_dim)
    hard = _nll_reduce(loss, w, reduction)
    smooth = -_sum(logp if weight_c is None else logp * weight_c, class_dim)
    smooth = _nll_reduce(where(valid, smooth, 0.0), w, reduction)
    return hard * (1 - label_smoothing) + smooth * (label_smoothing / c)


# -- binary losses ---------------------------------------------------------------------------------------------------
def _bce_forward(x, t):
    return -(t * jnp.maximum(jnp.log(x), -100) + (1 - t) * jnp.maximum(jnp.log1p(-x), -100))


def _bce_rule(ctx, g):
    x, t = ctx.inputs
    gx = g * (x - t) / clamp((1 - x) * x, min=1e-12) if ctx.needs[0] else None
    gt = g * (clamp(log(1 - x), min=-100) - clamp(log(x), min=-100)) if ctx.needs[1] else None
    return gx, gt


_BCE = declare("binary_cross_entropy", _bce_forward, _bce_rule, save_inputs=True, real_only=True)


@autocast_policy("binary_cross_entropy")
def binary_cross_entropy(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                         size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                         reduction: str = "mean") -> Tensor:
    """``-(t log(x) + (1 - t) log(1 - x))`` for probabilities ``input``; logs are clamped at -100.

    ``weight`` broadcasts against ``input``. Values outside ``[0, 1]`` are not checked (they give nan).

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.binary_cross_entropy(fg.tensor([1.0, 0.0]), fg.tensor([0.0, 0.0]), reduction="none").tolist()
        [100.0, 0.0]
    """
    op = "binary_cross_entropy"
    check_float(input, op)
    check_float(target, op, "target")
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction), op)
    if tuple(target.shape) != tuple(input.shape):
        raise OpError(
            f"{op}: target of shape {tuple(target.shape)} must have the input's shape {tuple(input.shape)}."
        )
    loss = apply_op(_BCE, (input, target))
    if weight is not None:
        check_float(weight, op, "weight")
        if not broadcasts_to(weight, tuple(input.shape)):
            raise OpError(f"{op}: weight of shape {tuple(weight.shape)} must broadcast to {tuple(input.shape)}.")
        loss = loss * weight
    return reduce_loss(loss, reduction, op)


@autocast_policy("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                                     size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                                     reduction: str = "mean", pos_weight: Optional[Tensor] = None) -> Tensor:
    """``binary_cross_entropy(sigmoid(input), target)`` computed stably from logits.

    ``pos_weight`` (broadcast against ``target``, typically one per class) weights the positive
    term; ``weight`` broadcasts against ``input``.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> round(F.binary_cross_entropy_with_logits(fg.tensor([0.0]), fg.tensor([1.0])).item(), 4)
        0.6931
    """
    op = "binary_cross_entropy_with_logits"
    check_float(input, op)
    check_float(target, op, "target")
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction), op)
    if tuple(target.shape) != tuple(input.shape):
        raise OpError(f"{op}: target size {tuple(target.shape)} must be the same as input size {tuple(input.shape)}.")
    log_sig = logsigmoid(input)
    if pos_weight is not None:
        check_float(pos_weight, op, "pos_weight")
        if not broadcasts_to(pos_weight, tuple(target.shape)):
            raise OpError(
                f"{op}: pos_weight of shape {tuple(pos_weight.shape)} must broadcast to the target's shape "
                f"{tuple(target.shape)} (usually one value per class)."
            )
        log_sig = log_sig * ((pos_weight - 1) * target + 1)
    loss = (1 - target) * input - log_sig
    if weight is not None:
        check_float(weight, op, "weight")
        if not broadcasts_to(weight, tuple(input.shape)):
            raise OpError(f"{op}: weight of shape {tuple(weight.shape)} must broadcast to {tuple(input.shape)}.")
        loss = loss * weight
    return reduce_loss(loss, reduction, op)


# -- distribution and embedding losses -------------------------------------------------------------------------------
def _xlogx(t: Tensor) -> Tensor:
    """``t * log(t)``, 0 where ``t == 0`` (with a finite gradient there)."""
    zero = eq(t, 0)
    return where(zero, 0.0, t * log(where(zero, 1.0, t)))


@autocast_policy("kl_div")
def kl_div(input: Tensor, target: Tensor, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """KL divergence ``target * (log(target) - input)`` with ``input`` in log space (``target`` too if
    ``log_target``). ``'batchmean'`` divides the sum by ``input.shape[0]`` (the mathematical KL);
    ``'mean'`` by the number of elements.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.kl_div(fg.tensor([[-1.0, -1.0]]), fg.tensor([[0.0, 0.0]]), log_target=True, reduction="batchmean").item()
        2.0
    """
    refuse_complex("kl_div", input, target)
    op = "kl_div"
    _pair(op, input, target)
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, op, ("none", "batchmean", "sum", "mean"))
    if reduction == "mean":  # PyTorch's warning, word for word in substance
        warnings.warn(
            "kl_div: reduction='mean' divides the total loss by both the batch size and the support size; "
            "'batchmean' divides only by the batch size, which is the KL divergence's definition. "
            "Pass reduction='batchmean' for the KL divergence.", UserWarning, stacklevel=2)
    if log_target:
        loss = exp(target) * (target - input)
    else:
        loss = _xlogx(target) - target * input
    if reduction == "batchmean":
        total = _sum(loss)
        return total / input.shape[0] if input.ndim else total
    return reduce_loss(loss, reduction, op)


@autocast_policy("triplet_margin_loss")
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, size_average: Optional[bool] = None,
                        reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    """``max(d(a, p) - d(a, n) + margin, 0)`` with ``d = pairwise_distance(., ., p, eps)``; ``swap`` uses
    ``min(d(a, n), d(p, n))`` as the negative distance.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> a, pos, neg = fg.zeros(1, 2), fg.tensor([[3.0, 4.0]]), fg.tensor([[1.0, 0.0]])
        >>> round(F.triplet_margin_loss(a, pos, neg, eps=0.0).item(), 4)
        5.0
    """
    op = "triplet_margin_loss"
    for name, t in (("anchor", anchor), ("positive", positive), ("negative", negative)):
        check_float(t, op, name)
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction), op)
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise OpError(
            f"{op}: the anchor, positive and negative tensors must have the same number of dimensions, got "
            f"anchor {anchor.ndim}-d, positive {positive.ndim}-d and negative {negative.ndim}-d."
        )
    if margin <= 0:
        raise OpError(f"{op}: margin must be greater than 0, got {margin}.")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return reduce_loss(clamp(d_pos + margin - d_neg, min=0.0), reduction, op)


_COSINE_EPS = 1e-12  # PyTorch's EPSILON, added to both squared magnitudes


@autocast_policy("cosine_embedding_loss")
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                          reduction: str = "mean") -> Tensor:
    """``1 - cos(x1, x2)`` where ``target == 1``, ``max(0, cos(x1, x2) - margin)`` where ``target == -1``
    (other target values contribute 0).

    ``input1``/``input2`` are ``(N, D)`` with ``target`` ``(N)``, or ``(D)`` with a 0-d ``target``;
    the cosine is ``<x1, x2> / sqrt((|x1|^2 + 1e-12) (|x2|^2 + 1e-12))``, as in PyTorch.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> x1, x2 = fg.tensor([[1.0, 0.0], [1.0, 0.0]]), fg.tensor([[0.0, 1.0], [1.0, 1.0]])
        >>> [round(v, 4) for v in F.cosine_embedding_loss(x1, x2, fg.tensor([1, -1]), reduction="none").tolist()]
        [1.0, 0.7071]
    """
    op = "cosine_embedding_loss"
    check_float(input1, op, "input1")
    check_float(input2, op, "input2")
    check_tensor(target, op, "target")
    reduction = check_reduction(legacy_reduction(size_average, reduce, reduction), op)
    if target.ndim not in (0, 1):
        raise OpError(f"{op}: 0D or 1D target tensor expected (one label per pair), got shape {tuple(target.shape)}.")
    want = target.ndim + 1
    if input1.ndim != want or input2.ndim != want:
        raise OpError(
            f"{op}: a {target.ndim}D target tensor expects {want}D input tensors, but found inputs with shapes "
            f"{tuple(input1.shape)} and {tuple(input2.shape)}."
        )
    shape = broadcast_shape(op, input1, input2)
    if target.ndim and target.shape[0] not in (1, shape[0]) and shape[0] != 1:
        raise OpError(f"{op}: target of shape {tuple(target.shape)} needs one label per row of inputs {shape}.")
    dim = target.ndim
    prod = _sum(input1 * input2, dim)
    mag1 = _sum(input1 * input1, dim) + _COSINE_EPS
    mag2 = _sum(input2 * input2, dim) + _COSINE_EPS
    cos = prod / sqrt(mag1 * mag2)
    loss = where(eq(target, 1), 1 - cos, 0.0) + where(eq(target, -1), clamp(cos - margin, min=0.0), 0.0)
    return reduce_loss(loss, reduction, op)


#: Exported as ``fgraph.nn.functional.<name>``.
__all__ = [
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div", "triplet_margin_loss", "cosine_embedding_loss",
]
#: No Tensor methods: PyTorch has none for these.
TENSOR_METHODS: dict = {}
