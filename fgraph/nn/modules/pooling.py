"""Pooling layers: ``MaxPool1d/2d/3d``, ``AvgPool1d/2d/3d``, ``AdaptiveAvgPool1d/2d/3d``,
``AdaptiveMaxPool1d/2d/3d``, ``LPPool1d/2d/3d``.

Thin modules over :mod:`fgraph.nn.functional.pooling` with torch's arguments,
attributes and reprs. ``return_indices=True`` returns ``(output, indices)`` with
torch's flat per-channel input indices (int64). Window arguments are checked when
the layer is built (torch defers it to the first call); a wrong input rank raises
an ``OpError`` naming the layer.

Example:
    >>> import fgraph as fg
    >>> from fgraph import nn
    >>> nn.MaxPool2d(2)
    MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
    >>> nn.MaxPool2d(2)(fg.ones(1, 3, 4, 5)).shape
    (1, 3, 2, 2)
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from fgraph.nn import functional as F
from fgraph.nn.functional._utils import int_tuple
from fgraph.nn.functional.pooling import _pool_args
from fgraph.nn.modules.conv import check_input
from fgraph.nn.modules.module import Module
from fgraph.tensor import Tensor

__all__ = [
    "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
    "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d",
]

IntOrTuple = Union[int, Sequence[int]]
OutputSize = Union[Optional[int], Sequence[Optional[int]]]


class _MaxPoolNd(Module):
    _n = 0

    def __init__(self, kernel_size: IntOrTuple, stride: Optional[IntOrTuple] = None, padding: IntOrTuple = 0,
                 dilation: IntOrTuple = 1, return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        _pool_args(type(self).__name__, self._n, kernel_size, stride, padding, dilation)
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Max over sliding windows of ``(N, C, L)`` or ``(C, L)``; ``stride`` defaults to ``kernel_size``,
    padding counts as ``-inf``.

    Example:
        >>> import fgraph as fg
        >>> pool = fg.nn.MaxPool1d(2, return_indices=True)
        >>> out, idx = pool(fg.tensor([[[1.0, 3.0, 2.0, 0.0]]]))
        >>> out.tolist(), idx.tolist()
        ([[[3.0, 2.0]]], [[[1, 2]]])
    """

    _n = 1

    def forward(self, input: Tensor) -> Any:
        check_input("MaxPool1d", input, 1)
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """Max over sliding windows of ``(N, C, H, W)`` or ``(C, H, W)``.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)(fg.ones(2, 5, 6)).shape
        (2, 3, 4)
    """

    _n = 2

    def forward(self, input: Tensor) -> Any:
        check_input("MaxPool2d", input, 2)
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class _AvgPoolNd(Module):
    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """Mean over sliding windows of ``(N, C, L)`` or ``(C, L)`` (zero padding; ``count_include_pad`` counts
    it in the divisor). Stores its arguments as 1-tuples, as torch.

    Example:
        >>> import fgraph as fg
        >>> pool = fg.nn.AvgPool1d(2)
        >>> pool
        AvgPool1d(kernel_size=(2,), stride=(2,), padding=(0,))
        >>> pool(fg.tensor([[[1.0, 3.0, 2.0, 0.0]]])).tolist()
        [[[2.0, 1.0]]]
    """

    def __init__(self, kernel_size: IntOrTuple, stride: Optional[IntOrTuple] = None, padding: IntOrTuple = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True) -> None:
        super().__init__()
        _pool_args("AvgPool1d", 1, kernel_size, stride, padding, 1)
        self.kernel_size = int_tuple(kernel_size, 1, "AvgPool1d", "kernel_size")
        self.stride = int_tuple(stride if stride is not None else kernel_size, 1, "AvgPool1d", "stride")
        self.padding = int_tuple(padding, 1, "AvgPool1d", "padding")
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        check_input("AvgPool1d", input, 1)
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class _AvgPoolDivisor(_AvgPoolNd):
    _n = 2

    def __init__(self, kernel_size: IntOrTuple, stride: Optional[IntOrTuple] = None, padding: IntOrTuple = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: Optional[int] = None) -> None:
        super().__init__()
        name = type(self).__name__
        _pool_args(name, self._n, kernel_size, stride, padding, 1)
        if divisor_override is not None and (not isinstance(divisor_override, int) or divisor_override <= 0):
            raise ValueError(f"{name}: divisor_override must be a positive int or None, got {divisor_override!r}.")
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        check_input(type(self).__name__, input, self._n)
        pool = F.avg_pool2d if self._n == 2 else F.avg_pool3d
        return pool(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                    self.divisor_override)


class AvgPool2d(_AvgPoolDivisor):
    """Mean over sliding windows of ``(N, C, H, W)`` or ``(C, H, W)``; ``divisor_override`` replaces the
    window size as divisor.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.AvgPool2d(2, divisor_override=1)(fg.ones(1, 1, 2, 2)).tolist()
        [[[[4.0]]]]
    """

    _n = 2


class AvgPool3d(_AvgPoolDivisor):
    """Mean over sliding windows of ``(N, C, D, H, W)`` or ``(C, D, H, W)``; ``divisor_override`` replaces the
    window size as divisor.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.AvgPool3d(2, stride=1)(fg.ones(1, 1, 3, 3, 3)).shape
        (1, 1, 2, 2, 2)
    """

    _n = 3


class MaxPool3d(_MaxPoolNd):
    """Max over sliding windows of ``(N, C, D, H, W)`` or ``(C, D, H, W)``.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.MaxPool3d(2)
        MaxPool3d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
        >>> fg.nn.MaxPool3d(2)(fg.ones(1, 2, 4, 4, 5)).shape
        (1, 2, 2, 2, 2)
    """

    _n = 3

    def forward(self, input: Tensor) -> Any:
        check_input("MaxPool3d", input, 3)
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class _AdaptivePoolNd(Module):
    def __init__(self, output_size: OutputSize) -> None:
        super().__init__()
        sizes = output_size if isinstance(output_size, (tuple, list)) else (output_size,)
        if any(s is not None and (isinstance(s, bool) or not isinstance(s, int) or s <= 0) for s in sizes):
            raise ValueError(f"{type(self).__name__}: output_size must be a positive int, None or a tuple of them, "
                             f"got {output_size!r}.")
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePoolNd):
    """Mean over ``output_size`` windows ``[floor(i * L / out), ceil((i + 1) * L / out))`` of ``(N, C, L)``.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.AdaptiveAvgPool1d(2)(fg.tensor([[[1.0, 3.0, 2.0]]])).tolist()
        [[[2.0, 2.5]]]
    """

    def forward(self, input: Tensor) -> Tensor:
        check_input("AdaptiveAvgPool1d", input, 1)
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptivePoolNd):
    """Adaptive average pooling of ``(N, C, H, W)`` or ``(C, H, W)`` to ``output_size`` (an int, a pair;
    ``None`` keeps that dim).

    Example:
        >>> import fgraph as fg
        >>> pool = fg.nn.AdaptiveAvgPool2d((1, None))
        >>> pool, pool(fg.ones(2, 3, 5, 4)).shape
        (AdaptiveAvgPool2d(output_size=(1, None)), (2, 3, 1, 4))
    """

    def forward(self, input: Tensor) -> Tensor:
        check_input("AdaptiveAvgPool2d", input, 2)
        return F.adaptive_avg_pool2d(input, self.output_size)


class _AdaptiveMaxPoolNd(_AdaptivePoolNd):
    def __init__(self, output_size: OutputSize, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max over ``output_size`` windows of ``(N, C, L)`` (the windows of ``AdaptiveAvgPool1d``).

    Example:
        >>> import fgraph as fg
        >>> fg.nn.AdaptiveMaxPool1d(2)(fg.tensor([[[1.0, 3.0, 2.0]]])).tolist()
        [[[3.0, 3.0]]]
    """

    def forward(self, input: Tensor) -> Any:
        check_input("AdaptiveMaxPool1d", input, 1)
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Adaptive max pooling of ``(N, C, H, W)`` or ``(C, H, W)`` to ``output_size``; ``return_indices`` also
    gives the flat per-channel indices of the maxima.

    Example:
        >>> import fgraph as fg
        >>> out, idx = fg.nn.AdaptiveMaxPool2d(1, return_indices=True)(fg.tensor([[[1.0, 2.0], [4.0, 3.0]]]))
        >>> out.tolist(), idx.tolist()
        ([[[4.0]]], [[[2]]])
    """

    def forward(self, input: Tensor) -> Any:
        check_input("AdaptiveMaxPool2d", input, 2)
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class AdaptiveAvgPool3d(_AdaptivePoolNd):
    """Adaptive average pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` to ``output_size``.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.AdaptiveAvgPool3d((1, None, 2))(fg.ones(2, 3, 4, 5, 6)).shape
        (2, 3, 1, 5, 2)
    """

    def forward(self, input: Tensor) -> Tensor:
        check_input("AdaptiveAvgPool3d", input, 3)
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Adaptive max pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` to ``output_size``.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.AdaptiveMaxPool3d(1)(fg.arange(8.0).reshape(1, 1, 2, 2, 2)).tolist()
        [[[[[7.0]]]]]
    """

    def forward(self, input: Tensor) -> Any:
        check_input("AdaptiveMaxPool3d", input, 3)
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class _LPPoolNd(Module):
    _n = 0

    def __init__(self, norm_type: float, kernel_size: IntOrTuple, stride: Optional[IntOrTuple] = None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        _pool_args(type(self).__name__, self._n, kernel_size, stride, 0, 1)
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        check_input(type(self).__name__, input, self._n)
        pool = (F.lp_pool1d, F.lp_pool2d, F.lp_pool3d)[self._n - 1]
        return pool(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """Power-average pooling ``(sum over the window of x**p) ** (1/p)`` of ``(N, C, L)`` or ``(C, L)``.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.LPPool1d(2, 2)(fg.tensor([[[3.0, 4.0]]])).tolist()
        [[[5.0]]]
    """

    _n = 1


class LPPool2d(_LPPoolNd):
    """Power-average pooling of ``(N, C, H, W)`` or ``(C, H, W)``.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.LPPool2d(2, 3)
        LPPool2d(norm_type=2, kernel_size=3, stride=None, ceil_mode=False)
    """

    _n = 2


class LPPool3d(_LPPoolNd):
    """Power-average pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)``.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.LPPool3d(1, 2)(fg.ones(1, 1, 2, 2, 2)).tolist()
        [[[[[8.0]]]]]
    """

    _n = 3
