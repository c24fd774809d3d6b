"""Vision ops (fgraph/nn/functional/vision.py, local_response_norm, upsample) against pure-JAX references.

The references index pixels directly: pixel_shuffle reads input channel ``c*r*r + i*r + j`` for
output pixel ``(h*r + i, w*r + j)``; unfold slices the zero-padded input once per kernel offset,
fold adds each block back with ``.at[].add``; affine_grid builds torch's base grid with
``jnp.linspace``; grid_sample computes torch's source coordinates (unnormalise, clip or reflect)
and reads the corner pixels with advanced indexing; local_response_norm sums squares over
explicit channel windows. All are differentiable to second order (``grid_sample`` piecewise:
the grid values of GRID_B stay away from the pixel, clip and reflection boundaries of these shapes).
"""
import itertools
import warnings

import jax.numpy as jnp
import numpy as np

import fgraph.nn.functional as F
from op_harness import GRID_B, REAL, Case, OpEntry, TF, cases


def _pixel_shuffle_ref(x, *, upscale_factor):
    r = upscale_factor
    c, h, w = x.shape[-3:]
    oc, oh, ow = np.meshgrid(np.arange(c // (r * r)), np.arange(h * r), np.arange(w * r), indexing="ij")
    src_c = oc * r * r + (oh % r) * r + (ow % r)
    return x[..., src_c, oh // r, ow // r]


def _pixel_unshuffle_ref(x, *, downscale_factor):
    r = downscale_factor
    c, h, w = x.shape[-3:]
    oc, oh, ow = np.meshgrid(np.arange(c * r * r), np.arange(h // r), np.arange(w // r), indexing="ij")
    return x[..., oc // (r * r), oh * r + (oc % (r * r)) // r, ow * r + oc % r]


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _unfold_ref(x, *, kernel_size, dilation=1, padding=0, stride=1):
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = map(_pair, (kernel_size, dilation, padding, stride))
    n, c, h, w = x.shape
    xp = jnp.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    bh, bw = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    cols = [xp[:, :, i * dh: i * dh + sh * (bh - 1) + 1: sh, j * dw: j * dw + sw * (bw - 1) + 1: sw]
            for i in range(kh) for j in range(kw)]
    return jnp.stack(cols, axis=2).reshape(n, c * kh * kw, bh * bw)


def _fold_ref(x, *, output_size, kernel_size, dilation=1, padding=0, stride=1):
    (oh, ow), (kh, kw), (dh, dw), (ph, pw), (sh, sw) = map(_pair, (output_size, kernel_size, dilation, padding,
                                                                 stride))
    n, ck, _ = x.shape
    c = ck // (kh * kw)
    bh, bw = (oh + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (ow + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    blocks = x.reshape(n, c, kh, kw, bh, bw)
    out = jnp.zeros((n, c, oh + 2 * ph, ow + 2 * pw), x.dtype)
    for i, j in itertools.product(range(kh), range(kw)):
        out = out.at[:, :, i * dh: i * dh + sh * (bh - 1) + 1: sh, j * dw: j * dw + sw * (bw - 1) + 1: sw].add(
            blocks[:, :, i, j])
    return out[:, :, ph: ph + oh, pw: pw + ow]


def _affine_grid_ref(theta, *, size, align_corners):
    axes = []
    for L in size[2:]:
        lin = jnp.linspace(-1.0, 1.0, L) if L > 1 else jnp.zeros(1)
        axes.append(lin if align_corners else lin * (L - 1) / L)
    mesh = jnp.meshgrid(*axes, indexing="ij")
    base = jnp.stack(list(reversed(mesh)) + [jnp.ones_like(mesh[0])], axis=-1).astype(theta.dtype)
    return jnp.einsum("...k,nik->n...i", base, theta)


def _reflect_ref(v, lo, hi):
    if lo == hi:
        return jnp.zeros_like(v)
    span = hi - lo
    d = jnp.abs(v - lo)
    flips = jnp.floor(d / span)
    extra = d - flips * span
    return jnp.where(flips % 2 == 0, lo + extra, hi - extra)


def _grid_sample_ref(x, grid, *, mode="bilinear", padding_mode="zeros", align_corners=False):
    n_sp = x.ndim - 2
    spatial = x.shape[2:]
    coords = []
    for a in range(n_sp):
        L, g = spatial[a], grid[..., n_sp - 1 - a]
        v = (g + 1) / 2 * (L - 1) if align_corners else ((g + 1) * L - 1) / 2
        if padding_mode == "reflection":
            v = _reflect_ref(v, 0.0, L - 1.0) if align_corners else _reflect_ref(v, -0.5, L - 0.5)
        if padding_mode != "zeros":
            v = jnp.clip(v, 0, L - 1)
        coords.append(v)
    batch = jnp.arange(x.shape[0]).reshape((-1,) + (1,) * (grid.ndim - 2))
    xt = jnp.moveaxis(x, 1, -1)  # (N, *spatial, C)
    if mode == "nearest":
        corners = [[(jnp.round(v), jnp.ones_like(v))] for v in coords]
    else:
        corners = [[(jnp.floor(v), 1 - (v - jnp.floor(v))), (jnp.floor(v) + 1, v - jnp.floor(v))] for v in coords]
    out = 0.0
    for combo in itertools.product(*corners):
        w, ok, idx = 1.0, True, []
        for a, (pos, wa) in enumerate(combo):
            w = w * wa
            ok = ok & (pos >= 0) & (pos <= spatial[a] - 1)
            idx.append(jnp.clip(pos, 0, spatial[a] - 1).astype(jnp.int32))
        vals = xt[(batch, *idx)]  # (N, *out_spatial, C)
        out = out + vals * jnp.where(ok, w, 0.0)[..., None]
    return jnp.moveaxis(out, -1, 1)


def _lrn_ref(x, *, size, alpha=1e-4, beta=0.75, k=1.0):
    c = x.shape[1]
    sq = x * x
    windows = [sum(sq[:, j] for j in range(i - size // 2, i + (size - 1) // 2 + 1) if 0 <= j < c)
               for i in range(c)]
    div = (k + alpha * jnp.stack(windows, axis=1) / size) ** beta
    return x / div


def _upsample(x, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return F.upsample(x, **params)


def _upsample_ref(x, *, scale_factor):  # nearest, one spatial dim
    return jnp.repeat(x, scale_factor, axis=-1)


# input (N, C, H, W), grid (N, Ho, Wo, 2). H = W = 3 keeps the pixel and clip positions of align_corners=False
# (grid values -2/3, 0, 2/3) off GRID_B's centres (0.5k + 0.25); W = 4 would put them on it (-0.75, -0.25, ...).
GS_IN, GS_GRID = (2, 2, 3, 3), (2, 3, 2, 2)

TABLE = [
    OpEntry("pixel_shuffle", F.pixel_shuffle, _pixel_shuffle_ref, 1, cases(
        Case(((2, 8, 2, 3),), dict(upscale_factor=2)),
    ), REAL, max_examples=2),
    OpEntry("pixel_unshuffle", F.pixel_unshuffle, _pixel_unshuffle_ref, 1, cases(
        Case(((2, 1, 6, 3),), dict(downscale_factor=3)),
    ), REAL, max_examples=2),
    OpEntry("unfold", F.unfold, _unfold_ref, 1, cases(
        Case(((1, 2, 4, 5),), dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))),
    ), REAL, max_examples=3),
    OpEntry("fold", F.fold, _fold_ref, 1, cases(
        Case(((1, 12, 9),), dict(output_size=(4, 5), kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))),
        Case(((2, 4, 4),), dict(output_size=3, kernel_size=2)),
    ), REAL, max_examples=3),
    OpEntry("affine_grid", F.affine_grid, _affine_grid_ref, 1, cases(
        Case(((2, 2, 3),), dict(size=(2, 1, 3, 4), align_corners=False)),
        Case(((1, 3, 4),), dict(size=(1, 2, 2, 3, 1), align_corners=True)),
    ), REAL, max_examples=2),
    OpEntry("grid_sample", F.grid_sample, _grid_sample_ref, 2, cases(
        Case((GS_IN, GS_GRID), dict(mode="bilinear", padding_mode="zeros", align_corners=False)),
        Case((GS_IN, GS_GRID), dict(mode="bilinear", padding_mode="border", align_corners=True)),
        Case((GS_IN, GS_GRID), dict(mode="bilinear", padding_mode="reflection", align_corners=False)),
        Case((GS_IN, GS_GRID), dict(mode="bilinear", padding_mode="reflection", align_corners=True)),
        Case(((1, 1, 2, 3, 2), (1, 2, 1, 2, 3)), dict(mode="nearest", padding_mode="zeros", align_corners=True)),
    ), (REAL, GRID_B), max_examples=2),
    OpEntry("local_response_norm", F.local_response_norm, _lrn_ref, 1, cases(
        Case(((1, 4, 2, 2),), dict(size=3, alpha=0.5, beta=0.75, k=1.5)),
    ), REAL, max_examples=2),
    OpEntry("upsample", _upsample, _upsample_ref, 1, cases(
        Case(((1, 2, 3),), dict(scale_factor=2)),
    ), REAL, max_examples=2),
]

FIRST_ORDER_ONLY: dict = {}


def _torch(name):
    def call(*xs, **params):
        return getattr(TF, name)(*xs, **params)

    return call


TORCH = {e.name: _torch(e.name) for e in TABLE}


#: Entries whose ops refuse complex inputs (an OpError); every other entry is also checked on complex ones.
REAL_ONLY = {
    "affine_grid", "grid_sample", "local_response_norm", "upsample"
}
