"""``interpolate`` with ``torch.nn.functional``'s arguments.

Resampling along each spatial dim is linear in the input, so it is a product with a
static interpolation matrix (one-hot rows for ``nearest``, two taps for ``linear`` /
``bilinear``) built from the shapes only: a composite of ``matmul``, with every order
of derivative. Modes: ``nearest`` (3-D and 4-D inputs), ``linear`` (3-D), ``bilinear``
(4-D), with ``align_corners`` for the linear modes.

Example:
    >>> import fgraph as fg
    >>> import fgraph.nn.functional as F
    >>> F.interpolate(fg.tensor([[[1.0, 2.0]]]), scale_factor=2).tolist()
    [[[1.0, 1.0, 2.0, 2.0]]]
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Union

import numpy as np

from fgraph.errors import OpError
from fgraph.nn.functional._utils import check_float
from fgraph.ops.linalg import matmul
from fgraph.tensor import Tensor, tensor

__all__ = ["interpolate"]

TENSOR_METHODS: dict = {}

_MODES = {"nearest": (1, 2), "linear": (1,), "bilinear": (2,)}


def _matrix(mode: str, L: int, o: int, scale: Optional[float], align_corners: bool) -> np.ndarray:
    m = np.zeros((o, L))
    dst = np.arange(o, dtype=np.float64)
    if mode == "nearest":
        s = (1.0 / scale) if scale else L / o
        src = np.minimum(np.floor(dst * s).astype(np.int64), L - 1)
        m[np.arange(o), src] = 1.0
        return m
    if align_corners:
        src = dst * ((L - 1) / (o - 1)) if o > 1 else np.zeros(o)
    else:
        s = (1.0 / scale) if scale else L / o
        src = np.maximum((dst + 0.5) * s - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), L - 1)
    i1 = np.minimum(i0 + 1, L - 1)
    lam = src - i0
    np.add.at(m, (np.arange(o), i0), 1.0 - lam)
    np.add.at(m, (np.arange(o), i1), lam)
    return m


def interpolate(input: Tensor, size: Optional[Union[int, Sequence[int]]] = None,
                scale_factor: Optional[Union[float, Sequence[float]]] = None, mode: str = "nearest",
                align_corners: Optional[bool] = None, recompute_scale_factor: Optional[bool] = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims of an ``(N, C, L)`` or ``(N, C, H, W)`` input to ``size`` or by ``scale_factor``.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.interpolate(fg.tensor([[[0.0, 1.0]]]), size=3, mode="linear", align_corners=True).tolist()
    [[[0.0, 0.5, 1.0]]]
    """
    op = "interpolate"
    check_float(input, op)
    if mode not in _MODES:
        raise OpError(f"{op}: mode {mode!r} is not supported; use one of {sorted(_MODES)}.")
    n = input.ndim - 2
    if n not in _MODES[mode]:
        raise OpError(f"{op}: mode {mode!r} expects a {', '.join(str(d + 2) for d in _MODES[mode])}-D input, "
                      f"got shape {tuple(input.shape)}.")
    if antialias:
        raise OpError(f"{op}: antialias=True is not supported.")
    if mode == "nearest" and align_corners is not None:
        raise OpError(f"{op}: align_corners can only be set with the linear modes, not {mode!r}.")
    align = bool(align_corners)
    if (size is None) == (scale_factor is None):
        raise OpError(f"{op}: pass exactly one of size and scale_factor.")
    spatial = tuple(input.shape[2:])
    if size is not None:
        sizes = (size,) * n if isinstance(size, int) else tuple(size)
        scales = (None,) * n
    else:
        scales = (float(scale_factor),) * n if isinstance(scale_factor, (int, float)) else tuple(map(float, scale_factor))
        if len(scales) != n:
            raise OpError(f"{op}: scale_factor must have {n} entries for input {tuple(input.shape)}.")
        sizes = tuple(int(math.floor(L * s)) for L, s in zip(spatial, scales))
        if recompute_scale_factor:
            scales = (None,) * n
    if len(sizes) != n or any(not isinstance(o, int) or o <= 0 for o in sizes):
        raise OpError(f"{op}: output size {sizes} must be {n} positive ints (input {tuple(input.shape)}).")
    if any(L == 0 for L in spatial):
        raise OpError(f"{op}: spatial dims of the input {tuple(input.shape)} must be non-empty.")
    mats = [_matrix(mode, L, o, s, align) for L, o, s in zip(spatial, sizes, scales)]
    out = matmul(input, tensor(mats[-1].T, dtype=input.dtype))
    if n == 2:
        out = matmul(tensor(mats[0], dtype=input.dtype), out)
    return out
