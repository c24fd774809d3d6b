"""Upsampling layers: ``Upsample``, ``UpsamplingNearest2d``, ``UpsamplingBilinear2d`` (torch's arguments and reprs).

Thin modules over :func:`fgraph.nn.functional.interpolate`, which resamples with
static interpolation matrices (see :mod:`fgraph.nn.functional.sampling` for the
modes and the input ranks each accepts).

Example:
    >>> import fgraph as fg
    >>> up = fg.nn.Upsample(scale_factor=2, mode="bilinear")
    >>> up
    Upsample(scale_factor=2.0, mode='bilinear')
    >>> up(fg.ones(1, 3, 4, 5)).shape
    (1, 3, 8, 10)
"""
from __future__ import annotations

from typing import Optional, Sequence, Union

from fgraph.errors import OpError
from fgraph.nn import functional as F
from fgraph.nn.modules.module import Module
from fgraph.tensor import Tensor

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]

_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")
_SPATIAL = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}


class Upsample(Module):
    """Resize the spatial dims of ``(N, C, L)``, ``(N, C, H, W)`` or ``(N, C, D, H, W)`` to ``size`` or by
    ``scale_factor``; ``mode`` is ``nearest`` (default), ``nearest-exact``, ``linear``, ``bilinear``,
    ``bicubic``, ``trilinear`` or ``area``. ``align_corners`` applies to the interpolating modes.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.Upsample(size=3, mode="linear", align_corners=True)(fg.tensor([[[0.0, 1.0]]])).tolist()
        [[[0.0, 0.5, 1.0]]]
    """

    def __init__(self, size: Optional[Union[int, Sequence[int]]] = None,
                 scale_factor: Optional[Union[float, Sequence[float]]] = None, mode: str = "nearest",
                 align_corners: Optional[bool] = None, recompute_scale_factor: Optional[bool] = None) -> None:
        super().__init__()
        name = type(self).__name__
        if mode not in _MODES:
            raise ValueError(f"{name}: mode {mode!r} is not supported; use one of {list(_MODES)}.")
        if (size is None) == (scale_factor is None):
            raise ValueError(f"{name}: pass exactly one of size and scale_factor (got size={size!r}, "
                             f"scale_factor={scale_factor!r}).")
        if align_corners is not None and mode not in _SPATIAL:
            raise ValueError(f"{name}: align_corners can only be set with the interpolating modes "
                             f"(linear | bilinear | bicubic | trilinear), not {mode!r}.")
        self.name = name
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(factor) for factor in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        n = _SPATIAL.get(self.mode)
        if not isinstance(input, Tensor) or (n is None and input.ndim not in (3, 4, 5)) or \
                (n is not None and input.ndim != n + 2):
            ranks = "a 3-D, 4-D or 5-D" if n is None else f"a {n + 2}-D"
            got = f"shape {tuple(input.shape)}" if isinstance(input, Tensor) else type(input).__name__
            raise OpError(f"{self.name}: mode {self.mode!r} expects {ranks} batched input (N, C, *spatial), "
                          f"got {got}.")
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = "scale_factor=" + repr(self.scale_factor)
        else:
            info = "size=" + repr(self.size)
        return info + ", mode=" + repr(self.mode)


class UpsamplingNearest2d(Upsample):
    """``Upsample(size, scale_factor, mode='nearest')`` for ``(N, C, H, W)`` inputs.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.UpsamplingNearest2d(scale_factor=2)(fg.tensor([[[[1.0, 2.0]]]])).tolist()
        [[[[1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 2.0, 2.0]]]]
    """

    def __init__(self, size: Optional[Union[int, Sequence[int]]] = None,
                 scale_factor: Optional[Union[float, Sequence[float]]] = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """``Upsample(size, scale_factor, mode='bilinear', align_corners=True)`` for ``(N, C, H, W)`` inputs.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.UpsamplingBilinear2d(size=(1, 3))(fg.tensor([[[[0.0, 1.0]]]])).tolist()
        [[[[0.0, 0.5, 1.0]]]]
    """

    def __init__(self, size: Optional[Union[int, Sequence[int]]] = None,
                 scale_factor: Optional[Union[float, Sequence[float]]] = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
