"""Instance normalization layers: ``InstanceNorm1d``, ``InstanceNorm2d``, ``InstanceNorm3d``.

Each ``(n, c)`` slice of the input is normalised over its spatial dimensions.
PyTorch's defaults: ``affine=False``, ``track_running_stats=False``. With
``track_running_stats=True`` a training forward rebinds ``running_mean`` and
``running_var`` to PyTorch's update (the batch average of the per-instance means
and unbiased variances, blended with ``momentum``; ``momentum=None`` leaves them
unchanged, as in PyTorch) and eval mode normalises with them.
``num_batches_tracked`` is registered as in PyTorch but never advanced (PyTorch's
instance norm does not advance it either). Unbatched inputs (``(C, L)`` for
``InstanceNorm1d``...) are accepted.

Example:
    >>> import fgraph as fg
    >>> norm = fg.nn.InstanceNorm2d(3)
    >>> norm
    InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)
    >>> y = norm(fg.randn(2, 3, 4, 4))
    >>> abs(y[0, 1].mean().tolist()) < 1e-5
    True
"""
from __future__ import annotations

import warnings
from typing import Any, Optional

from fgraph.autograd.grad_mode import no_grad
from fgraph.nn import functional as F
from fgraph.nn.functional._utils import check_tensor
from fgraph.nn.modules.batchnorm import _NormBase, _rank_error, blend
from fgraph.ops.reduction import mean, var
from fgraph.ops.shape import squeeze, unsqueeze
from fgraph.tensor import Tensor

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(_NormBase):
    _no_batch_dim = 0
    _layout = ""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: Optional[float] = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input_dim(self, input: Tensor) -> None:
        n = self._no_batch_dim
        if input.ndim not in (n, n + 1):
            raise _rank_error(type(self).__name__, f"{n}D or {n + 1}D", input, self._layout)

    def forward(self, input: Tensor) -> Tensor:
        name = type(self).__name__
        check_tensor(input, name)
        self._check_input_dim(input)
        feature_dim = input.ndim - self._no_batch_dim
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(
                    f"{name}: expected input's size at dim={feature_dim} to match num_features "
                    f"({self.num_features}), but got: {input.shape[feature_dim]} (input shape {tuple(input.shape)})."
                )
            warnings.warn(
                f"input's size at dim={feature_dim} does not match num_features. You can silence this warning by not "
                "passing in num_features, which is not used because affine=False",
                stacklevel=3,
            )
        if input.ndim == self._no_batch_dim:
            return squeeze(self._apply_instance_norm(unsqueeze(input, 0)), 0)
        return self._apply_instance_norm(input)

    def _apply_instance_norm(self, input: Tensor) -> Tensor:
        use_input_stats = self.training or not self.track_running_stats
        running_mean, running_var = self.running_mean, self.running_var
        spatial = tuple(range(2, input.ndim))
        if use_input_stats and _prod(input.shape[2:]) <= 1:
            raise ValueError(
                f"{type(self).__name__}: expected more than 1 spatial element when training, got input of shape "
                f"{tuple(input.shape)}; instance statistics need at least 2 values per channel."
            )
        if running_mean is not None or running_var is not None:
            self._check_channels(input, 1, running_mean, running_var)
        out = F.instance_norm(input, running_mean, running_var, self.weight, self.bias, use_input_stats, 0.0,
                              self.eps)
        if use_input_stats and (running_mean is not None or running_var is not None):
            factor = 0.0 if self.momentum is None else self.momentum
            with no_grad():
                x = input.detach()
                if running_mean is not None:
                    self.running_mean = blend(running_mean, mean(mean(x, dim=spatial), dim=0), factor)
                if running_var is not None:
                    self.running_var = blend(running_var, mean(var(x, dim=spatial, correction=1), dim=0), factor)
        return out


def _prod(shape: tuple) -> int:
    out = 1
    for s in shape:
        out *= int(s)
    return out


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of a ``(N, C, L)`` or unbatched ``(C, L)`` input.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.InstanceNorm1d(2, affine=True)(fg.randn(3, 2, 5)).shape
        (3, 2, 5)
    """

    _no_batch_dim = 2
    _layout = "(N, C, L) or (C, L)"


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of a ``(N, C, H, W)`` or unbatched ``(C, H, W)`` input.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.InstanceNorm2d(2, track_running_stats=True)(fg.randn(3, 2, 4, 4)).shape
        (3, 2, 4, 4)
    """

    _no_batch_dim = 3
    _layout = "(N, C, H, W) or (C, H, W)"


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of a ``(N, C, D, H, W)`` or unbatched ``(C, D, H, W)`` input.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.InstanceNorm3d(2)(fg.randn(2, 3, 3, 3)).shape
        (2, 3, 3, 3)
    """

    _no_batch_dim = 4
    _layout = "(N, C, D, H, W) or (C, D, H, W)"
