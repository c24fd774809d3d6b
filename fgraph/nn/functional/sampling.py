"""``interpolate`` with ``torch.nn.functional``'s arguments.

Resampling along each spatial dim is linear in the input, so it is a product with a
static interpolation matrix built from the shapes only (one-hot rows for
``nearest``/``nearest-exact``, two taps for the linear modes, four for ``bicubic``,
window means for ``area``), one spatial dim after the other: a composite of
``matmul``, with every order of derivative. Modes, as torch: ``nearest``,
``nearest-exact`` and ``area`` (3-D, 4-D and 5-D inputs), ``linear`` (3-D),
``bilinear`` and ``bicubic`` (4-D), ``trilinear`` (5-D); ``align_corners`` for the
interpolating ones. The source positions follow torch's CPU kernels, including the
float32/float64 arithmetic of the nearest modes, so the picked pixels agree with
torch's even at rounding boundaries. ``antialias=True`` is not supported.

Example:
    >>> import fgraph as fg
    >>> import fgraph.nn.functional as F
    >>> F.interpolate(fg.tensor([[[1.0, 2.0]]]), scale_factor=2).tolist()
    [[[1.0, 1.0, 2.0, 2.0]]]
"""
from __future__ import annotations

import functools
import math
import warnings
from typing import Optional, Sequence, Union

import numpy as np

from fgraph.errors import OpError
from fgraph.nn.functional._utils import check_float
from fgraph.ops._complex import refuse_complex
from fgraph.ops.linalg import matmul
from fgraph.ops.shape import reshape
from fgraph.tensor import Tensor, tensor

__all__ = ["interpolate", "upsample"]

TENSOR_METHODS: dict = {}

# mode -> the numbers of spatial dims it accepts
_MODES = {"nearest": (1, 2, 3), "nearest-exact": (1, 2, 3), "area": (1, 2, 3), "linear": (1,), "bilinear": (2,),
          "bicubic": (2,), "trilinear": (3,)}
_INTERPOLATING = ("linear", "bilinear", "bicubic", "trilinear")
_CUBIC_A = -0.75  # torch's bicubic convolution constant


def _nearest(L: int, o: int, scale: Optional[float], exact: bool, double: bool, two_d: bool) -> np.ndarray:
    """Source index of each output position with the arithmetic of torch's CPU kernels: in float64 for float64
    inputs, else float32 (``nearest-exact`` rounds its float32 source position once, like a fused multiply-add),
    truncated to float32 before the floor. Torch's 2-D ``nearest`` kernel copies a dim whose size is unchanged
    and halves the index of a doubled one, whatever the scale factor; its 1-D and 3-D kernels do not."""
    if two_d and not exact and o in (L, 2 * L):
        return np.arange(o) // (o // L)
    ft = np.float64 if double else np.float32
    s = ft(1.0 / scale) if scale else ft(L) / ft(o)
    dst = np.arange(o)
    if not exact:
        real = s * dst.astype(ft)
    else:
        real = s * (dst.astype(ft) + ft(0.5)) - ft(0.5) if double else \
            (np.float64(s) * (dst + 0.5) - 0.5).astype(np.float32)
        real = np.maximum(real, 0).astype(np.float64) + 0.5
    return np.minimum(np.floor(real.astype(np.float32)).astype(np.int64), L - 1)


def _source(L: int, o: int, scale: Optional[float], align_corners: bool, cubic: bool) -> np.ndarray:
    """Real source position of each output position (torch's ``area_pixel_compute_source_index``)."""
    dst = np.arange(o, dtype=np.float64)
    if align_corners:
        return dst * ((L - 1) / (o - 1)) if o > 1 else np.zeros(o)
    src = (dst + 0.5) * ((1.0 / scale) if scale else L / o) - 0.5
    return src if cubic else np.maximum(src, 0.0)


def _cubic_weights(t: np.ndarray) -> list:
    """The four tap weights at offsets -1, 0, 1, 2 for fractional positions ``t`` (Keys' kernel, A=-0.75)."""
    a = _CUBIC_A

    def near(x: np.ndarray) -> np.ndarray:  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: np.ndarray) -> np.ndarray:  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


@functools.lru_cache(maxsize=256)
def _matrix(mode: str, L: int, o: int, scale: Optional[float], align_corners: bool, double: bool,
            two_d: bool) -> np.ndarray:
    """The ``(o, L)`` matrix that resamples one spatial dim (``double``: the input is float64; ``two_d``: it has
    two spatial dims). Cached: a layer resamples the same shapes every step."""
    m = _build_matrix(mode, L, o, scale, align_corners, double, two_d)
    m.flags.writeable = False
    return m


def _build_matrix(mode: str, L: int, o: int, scale: Optional[float], align_corners: bool, double: bool,
                  two_d: bool) -> np.ndarray:
    m = np.zeros((o, L))
    rows = np.arange(o)
    if mode in ("nearest", "nearest-exact"):
        m[rows, _nearest(L, o, scale, mode == "nearest-exact", double, two_d)] = 1.0
        return m
    if mode == "area":  # adaptive average pooling windows
        for i in range(o):
            start, end = (i * L) // o, -(-((i + 1) * L) // o)
            m[i, start:end] = 1.0 / (end - start)
        return m
    cubic = mode == "bicubic"
    src = _source(L, o, scale, align_corners, cubic)
    i0 = np.minimum(np.floor(src).astype(np.int64), L - 1)
    lam = np.clip(src - i0, 0.0, 1.0)
    if cubic:
        for j, w in enumerate(_cubic_weights(lam)):
            np.add.at(m, (rows, np.clip(i0 - 1 + j, 0, L - 1)), w)
        return m
    np.add.at(m, (rows, i0), 1.0 - lam)
    np.add.at(m, (rows, np.minimum(i0 + 1, L - 1)), lam)
    return m


def _resample_dim(x: Tensor, axis: int, m: np.ndarray) -> Tensor:
    """Apply the ``(o, L)`` matrix ``m`` along ``axis`` of ``x``."""
    shape = tuple(x.shape)
    if axis == len(shape) - 1:
        return matmul(x, tensor(np.ascontiguousarray(m.T), dtype=x.dtype))
    lead, rest = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    out = matmul(tensor(m, dtype=x.dtype), reshape(x, (lead, shape[axis], rest)))
    return reshape(out, shape[:axis] + (m.shape[0],) + shape[axis + 1:])


def _sizes_and_scales(op: str, input: Tensor, n: int, size, scale_factor, recompute_scale_factor, mode: str):
    spatial = tuple(input.shape[2:])
    if (size is None) == (scale_factor is None):
        raise OpError(f"{op}: pass exactly one of size and scale_factor (got size={size!r}, "
                      f"scale_factor={scale_factor!r}).")
    if size is not None:
        if recompute_scale_factor:
            raise OpError(f"{op}: recompute_scale_factor is not meaningful with an explicit size.")
        sizes = tuple(size) if isinstance(size, (tuple, list)) else (size,) * n
        if len(sizes) != n or any(isinstance(o, bool) or not isinstance(o, (int, np.integer)) for o in sizes):
            raise OpError(f"{op}: size must be an int or {n} ints for input {tuple(input.shape)} "
                          f"({n} spatial dims), got {size!r}.")
        return tuple(int(o) for o in sizes), (None,) * n
    scales = tuple(scale_factor) if isinstance(scale_factor, (tuple, list)) else (scale_factor,) * n
    if len(scales) != n:
        raise OpError(f"{op}: scale_factor must be a number or {n} numbers for input {tuple(input.shape)} "
                      f"({n} spatial dims), got {scale_factor!r}.")
    scales = tuple(float(s) for s in scales)
    sizes = tuple(int(math.floor(L * s)) for L, s in zip(spatial, scales))
    if recompute_scale_factor or mode == "area":
        scales = (None,) * n
    return sizes, scales


def interpolate(input: Tensor, size: Optional[Union[int, Sequence[int]]] = None,
                scale_factor: Optional[Union[float, Sequence[float]]] = None, mode: str = "nearest",
                align_corners: Optional[bool] = None, recompute_scale_factor: Optional[bool] = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims of an ``(N, C, *spatial)`` input (1 to 3 spatial dims) to ``size`` or by
    ``scale_factor``.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.interpolate(fg.tensor([[[0.0, 1.0]]]), size=3, mode="linear", align_corners=True).tolist()
    [[[0.0, 0.5, 1.0]]]
    """
    refuse_complex("interpolate", input)
    op = "interpolate"
    check_float(input, op)
    if mode not in _MODES:
        raise OpError(f"{op}: mode {mode!r} is not supported; use one of {sorted(_MODES)}.")
    n = input.ndim - 2
    if n not in _MODES[mode]:
        dims = " or ".join(f"{d + 2}-D" for d in _MODES[mode])
        raise OpError(f"{op}: mode {mode!r} expects a {dims} input (N, C, *spatial), got shape "
                      f"{tuple(input.shape)}.")
    if antialias:
        raise OpError(f"{op}: antialias=True is not supported; resample without it.")
    if mode not in _INTERPOLATING and align_corners is not None:
        raise OpError(f"{op}: align_corners can only be set with the interpolating modes "
                      f"(linear | bilinear | bicubic | trilinear), not {mode!r}.")
    sizes, scales = _sizes_and_scales(op, input, n, size, scale_factor, recompute_scale_factor, mode)
    spatial = tuple(input.shape[2:])
    if any(o <= 0 for o in sizes) or any(L == 0 for L in spatial):
        raise OpError(f"{op}: input {tuple(input.shape)} and output {sizes} spatial sizes must be positive.")
    double = input.dtype == np.float64
    out = input
    for axis in reversed(range(n)):
        L, o = spatial[axis], sizes[axis]
        if mode in ("linear", "bilinear", "trilinear") and o == L:
            continue  # torch copies a dim whose size does not change
        out = _resample_dim(out, axis + 2, _matrix(mode, L, o, scales[axis], bool(align_corners), double, n == 2))
    return out


def upsample(input: Tensor, size: Optional[Union[int, Sequence[int]]] = None,
             scale_factor: Optional[Union[float, Sequence[float]]] = None, mode: str = "nearest",
             align_corners: Optional[bool] = None) -> Tensor:
    """Torch's deprecated alias of :func:`interpolate` (it warns, as torch does).

    >>> import warnings, fgraph as fg, fgraph.nn.functional as F
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     F.upsample(fg.tensor([[[1.0, 2.0]]]), scale_factor=2).tolist()
    [[[1.0, 1.0, 2.0, 2.0]]]
    """
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)
