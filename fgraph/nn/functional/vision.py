"""Vision layers with ``torch.nn.functional``'s names: ``pixel_shuffle``, ``pixel_unshuffle``, ``unfold``,
``fold``, ``affine_grid``, ``grid_sample`` (and ``pdist``, which is :func:`fgraph.pdist`).

All are composites of differentiable fgraph ops, so every order of derivative works:
the pixel shuffles are reshapes and a permutation; ``unfold`` (im2col) is a convolution
of the channels, one at a time, with one-hot kernels (one output channel per kernel
position) and ``fold`` (col2im) the matching transposed convolution, its adjoint;
``affine_grid`` multiplies a static base grid by ``theta``. ``grid_sample`` computes
torch's source coordinates from the grid with fgraph ops, gathers the 2**n corner
(``bilinear``) or the nearest (``nearest``) input values in one gather (whose gradient
is a scatter-add, whose gradient is a gather again) and blends them with weights that
are fgraph functions of the grid, so the grid gets its gradient too. ``padding_mode``
is ``zeros`` (out-of-range corners count as 0), ``border`` (coordinates clamped) or
``reflection`` (reflected about the borders, then clamped), as torch's CPU kernels.

Example:
    >>> import fgraph as fg
    >>> import fgraph.nn.functional as F
    >>> F.pixel_shuffle(fg.arange(4.0).reshape(1, 4, 1, 1), 2).tolist()
    [[[[0.0, 1.0], [2.0, 3.0]]]]
"""
from __future__ import annotations

import functools
import itertools
import warnings
from typing import Optional, Sequence

import jax.numpy as jnp
import numpy as np

from fgraph.errors import OpError
from fgraph.nn.functional._conv_primitive import conv_general
from fgraph.nn.functional._pool_primitives import take_last
from fgraph.nn.functional._utils import IntOrTuple, check_float, check_tensor, int_tuple
from fgraph.nn.functional.conv import conv_transpose2d
from fgraph.ops._declare import apply_op, declare
from fgraph.ops._complex import refuse_complex
from fgraph.ops.elementwise import abs as _abs, add, clamp, eq, mul, sub, where
from fgraph.ops.elementwise_math import fmod, remainder
from fgraph.ops.linalg import matmul
from fgraph.ops.reduction import sum as _sum
from fgraph.ops.rounding import floor
from fgraph.ops.shape import expand, permute, reshape, stack, squeeze, transpose, unsqueeze
from fgraph.tensor import Tensor, tensor

__all__ = ["pixel_shuffle", "pixel_unshuffle", "unfold", "fold", "affine_grid", "grid_sample", "pdist"]

TENSOR_METHODS: dict = {}


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """The p-norm distances between the rows of ``(rows, features)``, upper triangle row by row: :func:`fgraph.pdist`.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.pdist(fg.tensor([[0.0, 0.0], [3.0, 4.0]])).tolist()
    [5.0]
    """
    # imported here: fgraph.ops.distances imports fgraph.nn.functional while it loads
    from fgraph.ops.distances import pdist as _pdist

    return _pdist(input, p)


def _check_factor(op: str, name: str, r) -> int:
    if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or r <= 0:
        raise OpError(f"{op}: {name} must be a positive int, got {r!r}.")
    return int(r)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """Rearrange ``(*, C * r**2, H, W)`` into ``(*, C, H * r, W * r)``.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.pixel_shuffle(fg.ones(2, 8, 3, 5), 2).shape
    (2, 2, 6, 10)
    """
    op = "pixel_shuffle"
    check_tensor(input, op)
    r = _check_factor(op, "upscale_factor", upscale_factor)
    if input.ndim < 3 or input.shape[-3] % (r * r):
        raise OpError(f"{op}: expected an input (*, C * r**2, H, W) with at least 3 dims and channels divisible "
                      f"by upscale_factor**2 = {r * r}, got shape {tuple(input.shape)}.")
    lead, (c, h, w) = tuple(input.shape[:-3]), tuple(input.shape[-3:])
    k = len(lead)
    x = reshape(input, lead + (c // (r * r), r, r, h, w))
    x = permute(x, tuple(range(k)) + (k, k + 3, k + 1, k + 4, k + 2))
    return reshape(x, lead + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """Rearrange ``(*, C, H * r, W * r)`` into ``(*, C * r**2, H, W)`` (the inverse of :func:`pixel_shuffle`).

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.pixel_unshuffle(fg.arange(4.0).reshape(1, 1, 2, 2), 2).flatten().tolist()
    [0.0, 1.0, 2.0, 3.0]
    """
    op = "pixel_unshuffle"
    check_tensor(input, op)
    r = _check_factor(op, "downscale_factor", downscale_factor)
    if input.ndim < 3 or input.shape[-2] % r or input.shape[-1] % r:
        raise OpError(f"{op}: expected an input (*, C, H, W) with at least 3 dims and H, W divisible by "
                      f"downscale_factor = {r}, got shape {tuple(input.shape)}.")
    lead, (c, h, w) = tuple(input.shape[:-3]), tuple(input.shape[-3:])
    k = len(lead)
    x = reshape(input, lead + (c, h // r, r, w // r, r))
    x = permute(x, tuple(range(k)) + (k, k + 2, k + 4, k + 1, k + 3))
    return reshape(x, lead + (c * r * r, h // r, w // r))


@functools.lru_cache(maxsize=64)
def _one_hot_kernels(kernel: tuple) -> np.ndarray:
    """``(K, 1, kh, kw)``: kernel position ``k`` (row-major) picks the input at that offset."""
    size = int(np.prod(kernel))
    w = np.eye(size).reshape((size, 1) + kernel)
    w.flags.writeable = False
    return w


def _fold_args(op, kernel_size, dilation, padding, stride):
    k = int_tuple(kernel_size, 2, op, "kernel_size")
    d = int_tuple(dilation, 2, op, "dilation")
    p = int_tuple(padding, 2, op, "padding")
    s = int_tuple(stride, 2, op, "stride")
    if any(v <= 0 for v in k + d + s) or any(v < 0 for v in p):
        raise OpError(f"{op}: kernel_size {k}, dilation {d}, stride {s} must be positive and padding {p} "
                      "non-negative.")
    return k, d, p, s


def _blocks(op, spatial, k, d, p, s) -> tuple:
    blocks = tuple((L + 2 * pp - dd * (kk - 1) - 1) // ss + 1 for L, kk, dd, pp, ss in zip(spatial, k, d, p, s))
    if any(b <= 0 for b in blocks):
        raise OpError(f"{op}: the (dilated) kernel {k} (dilation {d}) does not fit the padded spatial size "
                      f"{tuple(L + 2 * pp for L, pp in zip(spatial, p))}; use a smaller kernel or more padding.")
    return blocks


def unfold(input: Tensor, kernel_size: IntOrTuple, dilation: IntOrTuple = 1, padding: IntOrTuple = 0,
           stride: IntOrTuple = 1) -> Tensor:
    """Extract sliding blocks (im2col): ``(N, C, H, W)`` -> ``(N, C * kh * kw, L)``, ``L`` blocks.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.unfold(fg.arange(4.0).reshape(1, 1, 2, 2), 1).tolist()
    [[[0.0, 1.0, 2.0, 3.0]]]
    """
    op = "unfold"
    check_float(input, op)
    if input.ndim not in (3, 4):
        raise OpError(f"{op}: expected a 3-D (unbatched) or 4-D (batched) input (N, C, H, W); only 4-D inputs "
                      f"are supported, as in torch; got shape {tuple(input.shape)}.")
    unbatched = input.ndim == 3
    x = unsqueeze(input, 0) if unbatched else input
    k, d, p, s = _fold_args(op, kernel_size, dilation, padding, stride)
    n, c, h, w = tuple(x.shape)
    blocks = _blocks(op, (h, w), k, d, p, s)
    weight = tensor(_one_hot_kernels(k), dtype=x.dtype)
    spec = (0, 1, 2, 3)
    cols = conv_general(reshape(x, (n * c, 1, h, w)), weight, s, tuple((pp, pp) for pp in p), (1, 1), d,
                        (spec, spec, spec), 1, 1)
    out = reshape(cols, (n, c * k[0] * k[1], blocks[0] * blocks[1]))
    return squeeze(out, 0) if unbatched else out


def fold(input: Tensor, output_size: IntOrTuple, kernel_size: IntOrTuple, dilation: IntOrTuple = 1,
         padding: IntOrTuple = 0, stride: IntOrTuple = 1) -> Tensor:
    """Sum sliding blocks back into an image (col2im): ``(N, C * kh * kw, L)`` -> ``(N, C, *output_size)``;
    the adjoint of :func:`unfold` (overlapping values add up).

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.fold(fg.ones(1, 4, 4), (3, 3), 2).tolist()
    [[[[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]]]
    """
    op = "fold"
    check_float(input, op)
    if input.ndim not in (2, 3):
        raise OpError(f"{op}: expected a 2-D (unbatched) or 3-D (batched) input (N, C * kh * kw, L), got shape "
                      f"{tuple(input.shape)}.")
    unbatched = input.ndim == 2
    x = unsqueeze(input, 0) if unbatched else input
    size = int_tuple(output_size, 2, op, "output_size")
    k, d, p, s = _fold_args(op, kernel_size, dilation, padding, stride)
    n, ck, length = tuple(x.shape)
    kk = k[0] * k[1]
    if ck % kk:
        raise OpError(f"{op}: the input's dim {input.ndim - 2} ({ck}) must be divisible by the kernel's size "
                      f"{k[0]} * {k[1]} = {kk}; got input shape {tuple(input.shape)}.")
    blocks = _blocks(op, size, k, d, p, s)
    if blocks[0] * blocks[1] != length:
        raise OpError(f"{op}: output_size={size}, kernel_size={k}, dilation={d}, padding={p}, stride={s} give "
                      f"{blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]} sliding blocks, but the input's last "
                      f"dim has {length} (input shape {tuple(input.shape)}).")
    c = ck // kk
    extra = tuple(L + 2 * pp - dd * (kw - 1) - 1 - (b - 1) * ss
                  for L, pp, dd, kw, b, ss in zip(size, p, d, k, blocks, s))
    weight = tensor(_one_hot_kernels(k), dtype=x.dtype)
    img = conv_transpose2d(reshape(x, (n * c, kk) + blocks), weight, None, s, p, extra, 1, d)
    out = reshape(img, (n, c) + size)
    return squeeze(out, 0) if unbatched else out


def _align(op: str, align_corners: Optional[bool]) -> bool:
    if align_corners is None:
        warnings.warn(f"Default {op} behavior has changed to align_corners=False since 1.3.0 (in torch). Please "
                      "specify align_corners=True if the old behavior is desired.", UserWarning, stacklevel=3)
        return False
    return bool(align_corners)


@functools.lru_cache(maxsize=64)
def _base_grid(spatial: tuple, align: bool) -> np.ndarray:
    """``(prod(spatial), n + 1)``: the normalised coordinates ``(x, y[, z], 1)`` of every output position."""
    axes = []
    for L in spatial:
        lin = np.linspace(-1.0, 1.0, L) if L > 1 else np.zeros(1)
        axes.append(lin if align else lin * (L - 1) / L)
    mesh = np.meshgrid(*axes, indexing="ij")
    cols = [m.reshape(-1) for m in reversed(mesh)] + [np.ones(int(np.prod(spatial)))]
    base = np.stack(cols, axis=-1)
    base.flags.writeable = False
    return base


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: Optional[bool] = None) -> Tensor:
    """Sampling grid ``(N, H, W, 2)`` (or ``(N, D, H, W, 3)``) of the affine maps ``theta`` ``(N, 2, 3)``
    (or ``(N, 3, 4)``) for an output of ``size`` ``(N, C, H, W)`` (or ``(N, C, D, H, W)``).

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> theta = fg.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    >>> F.affine_grid(theta, (1, 1, 1, 2), align_corners=True).tolist()
    [[[[-1.0, 0.0], [1.0, 0.0]]]]
    """
    refuse_complex("affine_grid", theta)
    op = "affine_grid"
    check_float(theta, op, "theta")
    size = tuple(size)
    if len(size) not in (4, 5) or not all(isinstance(v, (int, np.integer)) and v > 0 for v in size):
        raise OpError(f"{op}: size must be 4 or 5 positive ints (N, C, [D,] H, W), got {size!r}.")
    n = len(size) - 2
    if tuple(theta.shape) != (size[0], n, n + 1):
        raise OpError(f"{op}: for size {size} theta must have shape ({size[0]}, {n}, {n + 1}), got "
                      f"{tuple(theta.shape)}.")
    spatial = tuple(int(v) for v in size[2:])
    base = tensor(_base_grid(spatial, _align(op, align_corners)), dtype=theta.dtype)
    return reshape(matmul(base, transpose(theta, 1, 2)), (size[0],) + spatial + (n,))


def _corners_forward(coords, *, spatial, nearest):
    """``(2, N, K * P)`` int32 from source coordinates ``(n, N, P)``: row 0 the flat input index of each of the
    ``K`` corners (nearest: one) of every point (clamped into range), row 1 whether the corner is inside."""
    n = len(spatial)
    base = jnp.round(coords) if nearest else jnp.floor(coords)  # round: half to even, as torch's nearbyint
    strides = [int(np.prod(spatial[a + 1:])) for a in range(n)]
    offsets = [(0,) * n] if nearest else list(itertools.product((0, 1), repeat=n))
    flats, oks = [], []
    for off in offsets:
        flat, ok = 0, True
        for a in range(n):
            pos = base[a] + off[a]
            ok = ok & (pos >= 0) & (pos <= spatial[a] - 1)
            flat = flat + jnp.clip(pos, 0, spatial[a] - 1).astype(jnp.int32) * strides[a]
        flats.append(flat)
        oks.append(ok.astype(jnp.int32))
    return jnp.stack([jnp.concatenate(flats, -1), jnp.concatenate(oks, -1)])


GRID_CORNERS = declare("grid_sample_corners", _corners_forward, None, params=("spatial", "nearest"),
                       differentiable=False)


def _reflect(coord: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """torch's ``reflect_coordinates``: reflect ``coord`` about ``twice_low / 2`` and ``twice_high / 2``."""
    if twice_low == twice_high:
        return mul(coord, 0.0)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    dist = _abs(sub(coord, low))
    extra = fmod(dist, span)
    even = eq(remainder(floor(mul(dist, 1.0 / span)), 2.0), 0.0)
    return where(even, add(extra, low), sub(span + low, extra))


def _source_coord(g: Tensor, L: int, align: bool, padding_mode: str) -> Tensor:
    """torch's ``grid_sampler_compute_source_index``: pixel coordinate of the normalised grid values ``g``."""
    coord = mul(add(g, 1.0), (L - 1) / 2) if align else sub(mul(add(g, 1.0), L / 2), 0.5)
    if padding_mode == "border":
        return clamp(coord, 0.0, L - 1.0)
    if padding_mode == "reflection":
        coord = _reflect(coord, 0, 2 * (L - 1)) if align else _reflect(coord, -1, 2 * L - 1)
        return clamp(coord, 0.0, L - 1.0)
    return coord


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: Optional[bool] = None) -> Tensor:
    """Sample ``input`` ``(N, C, H, W)`` at the normalised positions ``grid`` ``(N, Ho, Wo, 2)`` (``x`` in
    ``[-1, 1]`` spans the width, ``y`` the height); 5-D inputs with ``(N, Do, Ho, Wo, 3)`` grids too.
    ``mode``: ``bilinear`` (trilinear for 5-D) or ``nearest``; ``bicubic`` is not supported.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> img = fg.tensor([[[[0.0, 1.0], [2.0, 3.0]]]])
    >>> F.grid_sample(img, fg.tensor([[[[0.0, 0.0], [1.0, -1.0]]]]), align_corners=True).tolist()
    [[[[1.5, 1.0]]]]
    """
    op = "grid_sample"
    check_float(input, op)
    check_float(grid, op, "grid")
    if mode not in ("bilinear", "nearest"):
        raise OpError(f"{op}: mode {mode!r} is not supported; use 'bilinear' or 'nearest' (bicubic is not "
                      "implemented).")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise OpError(f"{op}: padding_mode must be 'zeros', 'border' or 'reflection', got {padding_mode!r}.")
    n = input.ndim - 2
    if n not in (2, 3) or grid.ndim != n + 2 or grid.shape[-1] != n or grid.shape[0] != input.shape[0]:
        raise OpError(f"{op}: expected input (N, C, H, W) with grid (N, Ho, Wo, 2), or input (N, C, D, H, W) with "
                      f"grid (N, Do, Ho, Wo, 3); got input {tuple(input.shape)} and grid {tuple(grid.shape)}.")
    if input.dtype != grid.dtype:
        raise OpError(f"{op}: input ({input.dtype}) and grid ({grid.dtype}) must have the same dtype; convert one "
                      "with .to(...).")
    if any(v == 0 for v in input.shape[1:]):
        raise OpError(f"{op}: input {tuple(input.shape)} must have non-empty channel and spatial dims.")
    align = _align(op, align_corners)
    batch, channels, spatial = input.shape[0], input.shape[1], tuple(input.shape[2:])
    out_spatial = tuple(grid.shape[1:-1])
    points = int(np.prod(out_spatial))
    flat_grid = reshape(grid, (batch, points, n))
    # spatial dim a (D, H, W order) reads grid component n - 1 - a (x is the width)
    coords = [_source_coord(flat_grid[:, :, n - 1 - a], spatial[a], align, padding_mode) for a in range(n)]
    nearest = mode == "nearest"
    # flat (clamped) input index and validity of every corner: integer bookkeeping in one kernel
    table = apply_op(GRID_CORNERS, (stack(coords, 0),), GRID_CORNERS.Params(spatial, nearest))
    k = 1 if nearest else 2 ** n
    if nearest:  # constant weights; the grid's gradient is zero, as in torch
        weights = add(mul(flat_grid[:, :, 0], 0.0), 1.0)
    else:
        fracs = [sub(c, floor(c)) for c in coords]
        taps = [(sub(1.0, f), f) for f in fracs]
        corner_weights = []
        for corner in itertools.product(*taps):
            w = corner[0]
            for other in corner[1:]:
                w = mul(w, other)
            corner_weights.append(w)
        weights = reshape(stack(corner_weights, 1), (batch, k * points))
    weights = where(eq(table[1], 1), weights, 0.0)
    values = take_last(reshape(input, (batch, channels, int(np.prod(spatial)))),
                       expand(unsqueeze(table[0], 1), (batch, channels, k * points)))
    blended = mul(reshape(values, (batch, channels, k, points)), reshape(weights, (batch, 1, k, points)))
    return reshape(_sum(blended, 2), (batch, channels) + out_spatial)
