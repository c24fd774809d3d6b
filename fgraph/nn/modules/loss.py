"""Loss layers: thin modules over ``fgraph.nn.functional``'s losses, with PyTorch's arguments and reprs.

Every loss takes ``reduction`` (``'none'``, ``'mean'`` or ``'sum'``; ``KLDivLoss`` also
``'batchmean'``) and, where PyTorch does, the deprecated ``size_average``/``reduce``
flags, which set ``reduction`` with PyTorch's warning. Class weights (``weight``) and
``BCEWithLogitsLoss``'s ``pos_weight`` are registered as buffers, as in PyTorch, so they
follow ``.to()``/``.double()`` and appear in ``state_dict`` (``None`` ones do not).

An invalid ``reduction`` is reported when the layer is built (PyTorch reports it at the
first call); errors in forward come from the functional, which names itself (``cross_entropy: ...``).

Example:
    >>> import fgraph as fg
    >>> from fgraph import nn
    >>> loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    >>> loss_fn
    CrossEntropyLoss()
    >>> logits = fg.tensor([[2.0, 0.0, -1.0]], requires_grad=True)
    >>> loss = loss_fn(logits, fg.tensor([0]))
    >>> round(loss.item(), 4), loss.backward()[logits].shape
    (0.3365, (1, 3))
"""
from __future__ import annotations

import warnings
from typing import Optional

from fgraph.errors import OpError
from fgraph.nn import functional as F
from fgraph.nn.modules.module import Module
from fgraph.tensor import Tensor

__all__ = [
    "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss",
    "KLDivLoss", "CosineEmbeddingLoss", "TripletMarginLoss",
]

_REDUCTIONS = ("none", "mean", "sum")


def _legacy_get_string(size_average: Optional[bool], reduce: Optional[bool]) -> str:
    """PyTorch's mapping of the deprecated flags onto ``reduction`` (and its warning)."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        reduction = "mean"
    elif reduce:
        reduction = "sum"
    else:
        reduction = "none"
    warnings.warn(
        f"size_average and reduce args will be deprecated, please use reduction='{reduction}' instead.",
        UserWarning, stacklevel=4,
    )
    return reduction


class _Loss(Module):
    """Base of the losses: holds and checks ``reduction``."""

    _reductions: tuple = _REDUCTIONS
    reduction: str

    def __init__(self, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                 reduction: str = "mean") -> None:
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = _legacy_get_string(size_average, reduce)
        if reduction not in self._reductions:
            raise OpError(
                f"{type(self).__name__}: {reduction!r} is not a valid value for reduction; "
                f"expected one of {list(self._reductions)}."
            )
        self.reduction = reduction


class _WeightedLoss(_Loss):
    """A loss with an optional per-class ``weight`` buffer."""

    weight: Optional[Tensor]

    def __init__(self, weight: Optional[Tensor] = None, size_average: Optional[bool] = None,
                 reduce: Optional[bool] = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    """Mean absolute error ``|input - target|``, reduced.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.L1Loss()(fg.tensor([1.0, -2.0]), fg.tensor([0.0, 0.0])).item()
        1.5
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """Mean squared error ``(input - target) ** 2``, reduced.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.MSELoss(reduction="sum")(fg.tensor([1.0, 2.0]), fg.tensor([0.0, 0.0])).item()
        5.0
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (``d = input - target``).

    Example:
        >>> import fgraph as fg
        >>> fg.nn.SmoothL1Loss(reduction="none", beta=1.0)(fg.tensor([0.5, 3.0]), fg.zeros(2)).tolist()
        [0.125, 2.5]
    """

    def __init__(self, size_average: Optional[bool] = None, reduce: Optional[bool] = None, reduction: str = "mean",
                 beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """``0.5 d**2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)`` (``d = input - target``).

    Example:
        >>> import fgraph as fg
        >>> fg.nn.HuberLoss(reduction="none", delta=2.0)(fg.tensor([0.5, 3.0]), fg.zeros(2)).tolist()
        [0.125, 4.0]
    """

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of class indices ``target`` under log-probabilities ``input``.

    ``input`` is ``(C)``, ``(N, C)`` or ``(N, C, d1, ...)``; ``target`` has its shape without ``C``.
    ``weight`` (one per class) is a buffer; targets equal to ``ignore_index`` contribute
    nothing, and ``'mean'`` divides by the summed weights of the others.

    Example:
        >>> import fgraph as fg
        >>> logp = fg.tensor([[-0.5, -1.0], [-2.0, -0.25]])
        >>> fg.nn.NLLLoss(reduction="none")(logp, fg.tensor([0, 1])).tolist()
        [0.5, 0.25]
        >>> fg.nn.NLLLoss(ignore_index=1)(logp, fg.tensor([0, 1])).item()
        0.5
    """

    def __init__(self, weight: Optional[Tensor] = None, size_average: Optional[bool] = None, ignore_index: int = -100,
                 reduce: Optional[bool] = None, reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy between logits ``input`` and ``target``: class indices (integer, ``input``'s shape
    without the class dimension) or class probabilities (floating, ``input``'s shape).

    ``weight`` (one per class) is a buffer; ``ignore_index`` applies to class indices;
    ``label_smoothing`` mixes the target with the uniform distribution.

    Example:
        >>> import fgraph as fg
        >>> loss_fn = fg.nn.CrossEntropyLoss(weight=fg.tensor([1.0, 3.0]))
        >>> [name for name, _ in loss_fn.named_buffers()]
        ['weight']
        >>> round(loss_fn(fg.tensor([[0.0, 0.0], [0.0, 0.0]]), fg.tensor([0, 1])).item(), 4)
        0.6931
    """

    def __init__(self, weight: Optional[Tensor] = None, size_average: Optional[bool] = None, ignore_index: int = -100,
                 reduce: Optional[bool] = None, reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    """Binary cross entropy ``-(t log(x) + (1 - t) log(1 - x))`` of probabilities ``input``; logs clamped at -100.

    ``weight`` (a buffer) broadcasts against ``input``.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.BCELoss(reduction="none")(fg.tensor([1.0, 0.0]), fg.tensor([0.0, 0.0])).tolist()
        [100.0, 0.0]
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """``BCELoss`` of ``sigmoid(input)``, computed stably from logits.

    ``weight`` broadcasts against ``input``; ``pos_weight`` (usually one per class) weights
    the positive term. Both are buffers.

    Example:
        >>> import fgraph as fg
        >>> loss_fn = fg.nn.BCEWithLogitsLoss(pos_weight=fg.tensor([3.0]))
        >>> round(loss_fn(fg.tensor([0.0]), fg.tensor([1.0])).item(), 4)
        2.0794
        >>> list(loss_fn.state_dict())
        ['pos_weight']
    """

    weight: Optional[Tensor]
    pos_weight: Optional[Tensor]

    def __init__(self, weight: Optional[Tensor] = None, size_average: Optional[bool] = None,
                 reduce: Optional[bool] = None, reduction: str = "mean", pos_weight: Optional[Tensor] = None) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(input, target, self.weight, pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class KLDivLoss(_Loss):
    """KL divergence ``target * (log(target) - input)`` with ``input`` log-probabilities (``target`` too if
    ``log_target``). Use ``reduction='batchmean'`` for the mathematical KL (``'mean'`` averages over
    every element, as in PyTorch).

    Example:
        >>> import fgraph as fg
        >>> loss_fn = fg.nn.KLDivLoss(reduction="batchmean", log_target=True)
        >>> loss_fn(fg.tensor([[-1.0, -1.0]]), fg.tensor([[0.0, 0.0]])).item()
        2.0
    """

    _reductions = ("none", "batchmean", "sum", "mean")

    def __init__(self, size_average: Optional[bool] = None, reduce: Optional[bool] = None, reduction: str = "mean",
                 log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class CosineEmbeddingLoss(_Loss):
    """``1 - cos(x1, x2)`` for pairs labelled ``1``, ``max(0, cos(x1, x2) - margin)`` for pairs labelled ``-1``.

    Inputs ``(N, D)`` with a target ``(N)`` of ``1``/``-1``, or ``(D)`` with a 0-d target.

    Example:
        >>> import fgraph as fg
        >>> x1, x2 = fg.tensor([[1.0, 0.0], [1.0, 0.0]]), fg.tensor([[0.0, 1.0], [1.0, 1.0]])
        >>> loss_fn = fg.nn.CosineEmbeddingLoss(margin=0.5, reduction="none")
        >>> [round(v, 4) for v in loss_fn(x1, x2, fg.tensor([1, -1])).tolist()]
        [1.0, 0.2071]
    """

    def __init__(self, margin: float = 0.0, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with ``d`` the ``p``-norm pairwise distance; ``swap`` uses
    ``min(d(a, n), d(p, n))`` as the negative distance.

    Example:
        >>> import fgraph as fg
        >>> loss_fn = fg.nn.TripletMarginLoss(margin=1.0, eps=0.0)
        >>> loss_fn(fg.zeros(1, 2), fg.tensor([[3.0, 4.0]]), fg.tensor([[1.0, 0.0]])).item()
        5.0
    """

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                 size_average: Optional[bool] = None, reduce: Optional[bool] = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead")
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps,
                                     swap=self.swap, reduction=self.reduction)
