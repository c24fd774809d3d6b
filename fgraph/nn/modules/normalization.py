"""Normalization layers over features: ``LayerNorm``, ``GroupNorm``, ``RMSNorm``, ``LocalResponseNorm``
(PyTorch's arguments and reprs).

They have no running statistics, so train and eval mode compute the same thing.
``weight`` starts at ones and ``bias`` at zeros, as in PyTorch.

Example:
    >>> import fgraph as fg
    >>> ln = fg.nn.LayerNorm(2)
    >>> ln
    LayerNorm((2,), eps=1e-05, elementwise_affine=True, bias=True)
    >>> [round(v, 3) for v in ln(fg.tensor([[1.0, 3.0]])).tolist()[0]]
    [-1.0, 1.0]
"""
from __future__ import annotations

import numbers
from typing import Any, Optional, Sequence, Union

from fgraph.nn import functional as F
from fgraph.nn import init
from fgraph.nn.modules._factory import check_positive_int, empty_parameter, register_affine, reset_affine
from fgraph.nn.modules.module import Module
from fgraph.tensor import Tensor

__all__ = ["LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm"]

Shape = Union[int, Sequence[int]]


def _shape(normalized_shape: Shape, layer: str) -> tuple[int, ...]:
    if isinstance(normalized_shape, numbers.Integral) and not isinstance(normalized_shape, bool):
        normalized_shape = (int(normalized_shape),)
    try:
        shape = tuple(normalized_shape)
    except TypeError:
        raise TypeError(
            f"{layer}: normalized_shape must be an int or a sequence of ints, got {type(normalized_shape).__name__}."
        ) from None
    if any(isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 0 for s in shape):
        raise ValueError(f"{layer}: normalized_shape must hold non-negative ints, got {normalized_shape!r}.")
    return tuple(int(s) for s in shape)


class LayerNorm(Module):
    """Layer normalization over the trailing ``normalized_shape`` dimensions.

    ``y = (x - mean) / sqrt(var + eps) * weight + bias`` with the biased variance;
    ``weight`` and ``bias`` have shape ``normalized_shape`` (``elementwise_affine=True``,
    ``bias=True``).

    Example:
        >>> import fgraph as fg
        >>> fg.nn.LayerNorm((3, 4), elementwise_affine=False)(fg.randn(2, 3, 4)).shape
        (2, 3, 4)
    """

    def __init__(self, normalized_shape: Shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape, "LayerNorm")
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        register_affine(self, self.normalized_shape, elementwise_affine, bias, dtype, device, "LayerNorm")
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """``weight`` to ones, ``bias`` to zeros."""
        reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    """Group normalization: the ``num_channels`` channels of an ``(N, C, *)`` input are split into
    ``num_groups`` groups, each normalised over its channels and spatial dims; then a per-channel affine map.

    Example:
        >>> import fgraph as fg
        >>> gn = fg.nn.GroupNorm(2, 4)
        >>> gn
        GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)
        >>> gn(fg.randn(3, 4, 5)).shape
        (3, 4, 5)
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device: Any = None, dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        check_positive_int(num_groups, "num_groups", "GroupNorm")
        check_positive_int(num_channels, "num_channels", "GroupNorm")
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        register_affine(self, (num_channels,), affine, bias, dtype, device, "GroupNorm")
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """``weight`` to ones, ``bias`` to zeros."""
        reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        if isinstance(input, Tensor) and input.ndim >= 2 and input.shape[1] != self.num_channels:
            raise ValueError(
                f"GroupNorm: expected input with {self.num_channels} channels (num_channels) at dim 1, got input of "
                f"shape {tuple(input.shape)}; the input must be (N, {self.num_channels}, *)."
            )
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """Root-mean-square normalization over the trailing ``normalized_shape`` dimensions:
    ``y = x / sqrt(mean(x ** 2) + eps) * weight``.

    ``eps=None`` (the default) uses the machine epsilon of the input's dtype, as PyTorch.

    Example:
        >>> import fgraph as fg
        >>> norm = fg.nn.RMSNorm(2)
        >>> norm
        RMSNorm((2,), eps=None, elementwise_affine=True)
        >>> [round(v, 3) for v in norm(fg.tensor([3.0, 4.0])).tolist()]
        [0.849, 1.131]
    """

    def __init__(self, normalized_shape: Shape, eps: Optional[float] = None, elementwise_affine: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape, "RMSNorm")
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.register_parameter(
            "weight", empty_parameter(self.normalized_shape, dtype, device, "RMSNorm") if elementwise_affine else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """``weight`` to ones."""
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class LocalResponseNorm(Module):
    """Normalise each channel of ``(N, C, *)`` by the mean square of ``size`` neighbouring channels:
    ``x / (k + alpha * mean(x**2)) ** beta`` (see :func:`fgraph.nn.functional.local_response_norm`).

    Example:
        >>> import fgraph as fg
        >>> lrn = fg.nn.LocalResponseNorm(2)
        >>> lrn, lrn(fg.ones(1, 3, 4)).shape
        (LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0), (1, 3, 4))
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size = check_positive_int(size, "size", "LocalResponseNorm")
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
