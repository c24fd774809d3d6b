"""Dropout layers: ``Dropout``, ``Dropout1d``, ``Dropout2d``, ``Dropout3d`` (PyTorch's arguments and reprs).

Active only in training mode (``module.train()``); in eval mode they return the
input. The mask comes from ``forward(input, key=...)`` when a JAX key is given
(the same key, the same mask: the way to write traced code), else from the
default generator (:func:`fgraph.manual_seed`). Masks therefore differ from
PyTorch's for the same seed; the distribution is the same: each element (or
whole channel) is zeroed with probability ``p`` and the rest scaled by
``1 / (1 - p)``, and the gradient is the mask. ``inplace=True`` is accepted and
ignored (fgraph tensors are immutable).

Example:
    >>> import fgraph as fg, jax
    >>> drop = fg.nn.Dropout(p=0.5)
    >>> drop
    Dropout(p=0.5, inplace=False)
    >>> sorted(set(drop(fg.ones(100), key=jax.random.PRNGKey(0)).tolist()))
    [0.0, 2.0]
    >>> drop.eval()(fg.ones(3)).tolist()
    [1.0, 1.0, 1.0]
"""
from __future__ import annotations

from typing import Any

from fgraph.nn import functional as F
from fgraph.nn.modules.module import Module
from fgraph.tensor import Tensor

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class _DropoutNd(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, (int, float)):
            raise TypeError(f"{type(self).__name__}: p must be a number in [0, 1], got {type(p).__name__}.")
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability ``p`` in training; scale the kept ones by ``1 / (1 - p)``.

    Example:
        >>> import fgraph as fg, jax
        >>> y = fg.nn.Dropout(0.25)(fg.ones(4, 4), key=jax.random.PRNGKey(3))
        >>> sorted(set(y.reshape(-1).tolist()))
        [0.0, 1.3333333730697632]
    """

    def forward(self, input: Tensor, *, key: Any = None) -> Tensor:
        return F.dropout(input, self.p, self.training, key=key)


class Dropout1d(_DropoutNd):
    """Zero whole channels of a ``(N, C, L)`` or ``(C, L)`` input with probability ``p`` in training.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.Dropout1d(0.5)(fg.ones(2, 3, 4)).shape
        (2, 3, 4)
    """

    def forward(self, input: Tensor, *, key: Any = None) -> Tensor:
        return F.dropout1d(input, self.p, self.training, key=key)


class Dropout2d(_DropoutNd):
    """Zero whole channels of a ``(N, C, H, W)`` input with probability ``p`` in training.

    As in PyTorch, a 3D input is read as ``(N, C, L)`` (channel-wise 1D dropout, with
    a warning); use :class:`Dropout1d` for that.

    Example:
        >>> import fgraph as fg, jax
        >>> y = fg.nn.Dropout2d(0.5)(fg.ones(1, 4, 2, 2), key=jax.random.PRNGKey(0))
        >>> [sorted(set(c)) for c in y[0].reshape(4, 4).tolist()]
        [[2.0], [2.0], [0.0], [0.0]]
    """

    def forward(self, input: Tensor, *, key: Any = None) -> Tensor:
        return F.dropout2d(input, self.p, self.training, key=key)


class Dropout3d(_DropoutNd):
    """Zero whole channels of a ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input with probability ``p`` in training.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.Dropout3d(0.5).eval()(fg.ones(2, 3, 2, 2, 2)).shape
        (2, 3, 2, 2, 2)
    """

    def forward(self, input: Tensor, *, key: Any = None) -> Tensor:
        return F.dropout3d(input, self.p, self.training, key=key)


class AlphaDropout(_DropoutNd):
    """Dropout for SELU networks: keeps zero mean and unit variance (``F.alpha_dropout``), in training only.

    Example:
        >>> import fgraph as fg, jax
        >>> y = fg.nn.AlphaDropout(0.2)(fg.randn(20000, key=jax.random.PRNGKey(1)), key=jax.random.PRNGKey(0))
        >>> abs(y.mean().item()) < 0.05, abs(y.std().item() - 1) < 0.05
        (True, True)
    """

    def forward(self, input: Tensor, *, key: Any = None) -> Tensor:
        return F.alpha_dropout(input, self.p, self.training, key=key)


class FeatureAlphaDropout(_DropoutNd):
    """:class:`AlphaDropout` of whole channels of an ``(N, C, ...)`` input (``F.feature_alpha_dropout``).

    Example:
        >>> import fgraph as fg
        >>> fg.nn.FeatureAlphaDropout(0.5).eval()(fg.ones(2, 3, 4)).shape
        (2, 3, 4)
    """

    def forward(self, input: Tensor, *, key: Any = None) -> Tensor:
        return F.feature_alpha_dropout(input, self.p, self.training, key=key)
