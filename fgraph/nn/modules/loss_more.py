"""More loss layers: margin, ranking, likelihood and CTC losses over ``fgraph.nn.functional``.

Same conventions as :mod:`fgraph.nn.modules.loss`: ``reduction`` is checked when the
layer is built, the deprecated ``size_average``/``reduce`` flags set it (with PyTorch's
warning), and class ``weight`` tensors are buffers.

Example:
    >>> import fgraph as fg
    >>> from fgraph import nn
    >>> nn.MarginRankingLoss(margin=0.5)
    MarginRankingLoss()
    >>> nn.SoftMarginLoss(reduction="sum")(fg.tensor([0.0, 0.0]), fg.tensor([1.0, -1.0])).item() > 1.38
    True
"""
from __future__ import annotations

from typing import Optional, Union

from fgraph.nn import functional as F
from fgraph.nn.functional.ctc import Lengths
from fgraph.nn.modules.loss import _Loss, _WeightedLoss
from fgraph.tensor import Tensor

__all__ = [
    "GaussianNLLLoss", "PoissonNLLLoss", "SoftMarginLoss", "HingeEmbeddingLoss", "MarginRankingLoss",
    "MultiMarginLoss", "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss", "CTCLoss",
]


class GaussianNLLLoss(_Loss):
    """Gaussian negative log-likelihood of ``target`` under mean ``input`` and variance ``var``.

    Example:
        >>> import fgraph as fg
        >>> loss_fn = fg.nn.GaussianNLLLoss(reduction="none")
        >>> loss_fn(fg.tensor([1.0]), fg.tensor([1.0]), fg.tensor([1.0])).tolist()
        [0.0]
    """

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        self.full = full
        self.eps = eps

    def forward(self, input: Tensor, target: Tensor, var: Union[Tensor, float]) -> Tensor:
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """Poisson negative log-likelihood (``input`` is the log-rate when ``log_input``).

    Example:
        >>> import fgraph as fg
        >>> fg.nn.PoissonNLLLoss()(fg.tensor([0.0]), fg.tensor([1.0])).item()
        1.0
    """

    def __init__(self, log_input: bool = True, full: bool = False, size_average: Optional[bool] = None,
                 eps: float = 1e-8, reduce: Optional[bool] = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full, eps=self.eps,
                                  reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """Two-class logistic loss ``log(1 + exp(-y x))``.

    Example:
        >>> import fgraph as fg
        >>> round(fg.nn.SoftMarginLoss()(fg.tensor([0.0]), fg.tensor([-1.0])).item(), 4)
        0.6931
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """``x`` for ``y = 1``, ``max(0, margin - x)`` for ``y = -1``.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.HingeEmbeddingLoss(margin=2.0)(fg.tensor([0.5]), fg.tensor([-1.0])).item()
        1.5
    """

    def __init__(self, margin: float = 1.0, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class MarginRankingLoss(_Loss):
    """``max(0, -y (x1 - x2) + margin)``.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.MarginRankingLoss()(fg.tensor([1.0]), fg.tensor([3.0]), fg.tensor([1.0])).item()
        2.0
    """

    def __init__(self, margin: float = 0.0, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss; ``weight`` (one per class, a buffer) scales each sample by ``weight[y]``.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.MultiMarginLoss()(fg.tensor([[0.0, 1.0]]), fg.tensor([0])).item()
        1.0
    """

    def __init__(self, p: int = 1, margin: float = 1.0, weight: Optional[Tensor] = None,
                 size_average: Optional[bool] = None, reduce: Optional[bool] = None, reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError(f"MultiMarginLoss: only p == 1 and p == 2 supported, got {p!r}.")
        self.p = p
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss; ``target`` lists the target classes, ended by ``-1``.

    Example:
        >>> import fgraph as fg
        >>> round(fg.nn.MultiLabelMarginLoss()(fg.tensor([[0.1, 0.2, 0.4, 0.8]]), fg.tensor([[3, 0, -1, 1]])).item(), 4)
        0.85
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """One-vs-all logistic loss averaged over classes; ``weight`` (a buffer) broadcasts over the classes.

    Example:
        >>> import fgraph as fg
        >>> round(fg.nn.MultiLabelSoftMarginLoss()(fg.tensor([[0.0, 0.0]]), fg.tensor([[1.0, 0.0]])).item(), 4)
        0.6931
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


class CTCLoss(_Loss):
    """Connectionist temporal classification loss (see :func:`fgraph.nn.functional.ctc_loss`).

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> lp = F.log_softmax(fg.zeros(3, 1, 2), 2)
        >>> round(fg.nn.CTCLoss(reduction="sum")(lp, fg.tensor([[1]]), [3], [1]).item(), 4)
        0.2877
    """

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths: Lengths, target_lengths: Lengths) -> Tensor:
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                          self.zero_infinity)
