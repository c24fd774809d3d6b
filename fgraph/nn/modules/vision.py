"""Vision layers: ``PixelShuffle``, ``PixelUnshuffle``, ``Fold``, ``Unfold`` (torch's arguments and reprs).

Thin modules over :mod:`fgraph.nn.functional.vision`.

Example:
    >>> import fgraph as fg
    >>> fg.nn.PixelShuffle(2)
    PixelShuffle(upscale_factor=2)
    >>> fg.nn.PixelShuffle(2)(fg.ones(1, 8, 3, 3)).shape
    (1, 2, 6, 6)
"""
from __future__ import annotations

from typing import Sequence, Union

from fgraph.nn import functional as F
from fgraph.nn.modules._factory import check_positive_int
from fgraph.nn.modules.module import Module
from fgraph.tensor import Tensor

__all__ = ["PixelShuffle", "PixelUnshuffle", "Fold", "Unfold"]

IntOrTuple = Union[int, Sequence[int]]


class PixelShuffle(Module):
    """Rearrange ``(*, C * r**2, H, W)`` into ``(*, C, H * r, W * r)``.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.PixelShuffle(2)(fg.arange(4.0).reshape(1, 4, 1, 1)).tolist()
        [[[[0.0, 1.0], [2.0, 3.0]]]]
    """

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = check_positive_int(upscale_factor, "upscale_factor", "PixelShuffle")

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """Rearrange ``(*, C, H * r, W * r)`` into ``(*, C * r**2, H, W)``, the inverse of ``PixelShuffle``.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.PixelUnshuffle(3)(fg.ones(2, 1, 6, 3)).shape
        (2, 9, 2, 1)
    """

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = check_positive_int(downscale_factor, "downscale_factor", "PixelUnshuffle")

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class Fold(Module):
    """Sum sliding blocks ``(N, C * kh * kw, L)`` back into ``(N, C, *output_size)`` (col2im).

    Example:
        >>> import fgraph as fg
        >>> fold = fg.nn.Fold((3, 3), 2)
        >>> fold
        Fold(output_size=(3, 3), kernel_size=2, dilation=1, padding=0, stride=1)
        >>> fold(fg.ones(1, 4, 4)).tolist()[0][0][1]
        [2.0, 4.0, 2.0]
    """

    def __init__(self, output_size: IntOrTuple, kernel_size: IntOrTuple, dilation: IntOrTuple = 1,
                 padding: IntOrTuple = 0, stride: IntOrTuple = 1) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """Extract sliding blocks (im2col): ``(N, C, H, W)`` -> ``(N, C * kh * kw, L)``.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.Unfold(2, padding=1)(fg.ones(2, 3, 4, 4)).shape
        (2, 12, 25)
    """

    def __init__(self, kernel_size: IntOrTuple, dilation: IntOrTuple = 1, padding: IntOrTuple = 0,
                 stride: IntOrTuple = 1) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, stride={self.stride}"
