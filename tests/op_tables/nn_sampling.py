"""interpolate (fgraph/nn/functional/sampling.py) against a pure-JAX gather reference.

The reference gathers source pixels with ``jnp.take`` at torch's source coordinates
(nearest: ``floor(dst * in/out)``; linear: half-pixel or align_corners) and blends
them. interpolate is linear in its input: it has second derivatives (FIRST_ORDER_ONLY empty).
"""
import jax.numpy as jnp
import numpy as np

import fgraph.nn.functional as F
from op_harness import REAL, Case, OpEntry, cases


def _resample_axis(x, axis, o, mode, scale, align):
    L = x.shape[axis]
    dst = np.arange(o, dtype=np.float64)
    s = (1.0 / scale) if scale else L / o
    if mode == "nearest":
        return jnp.take(x, np.minimum(np.floor(dst * s).astype(int), L - 1), axis=axis)
    if align:
        src = dst * ((L - 1) / (o - 1)) if o > 1 else np.zeros(o)
    else:
        src = np.maximum((dst + 0.5) * s - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(int), L - 1)
    i1 = np.minimum(i0 + 1, L - 1)
    lam = (src - i0).reshape((-1,) + (1,) * (x.ndim - 1 - axis)).astype(x.dtype)
    return jnp.take(x, i0, axis=axis) * (1 - lam) + jnp.take(x, i1, axis=axis) * lam


def _interp_ref(x, *, size=None, scale_factor=None, mode="nearest", align_corners=None):
    n = x.ndim - 2
    if size is not None:
        sizes = (size,) * n if isinstance(size, int) else size
        scales = (None,) * n
    else:
        scales = (scale_factor,) * n if isinstance(scale_factor, (int, float)) else scale_factor
        sizes = [int(np.floor(L * s)) for L, s in zip(x.shape[2:], scales)]
    for i in range(n):
        x = _resample_axis(x, 2 + i, sizes[i], mode, scales[i], bool(align_corners))
    return x


TABLE = [
    OpEntry("interpolate", F.interpolate, _interp_ref, 1, cases(
        Case(((1, 2, 3),), dict(size=5)),
        Case(((1, 2, 4),), dict(scale_factor=1.5, mode="linear")),
        Case(((1, 1, 3, 2),), dict(size=(4, 3), mode="bilinear", align_corners=True)),
        Case(((1, 1, 3, 3),), dict(scale_factor=2, mode="bilinear")),
        Case(((1, 1, 2, 3),), dict(scale_factor=(2, 1))),
    ), REAL, max_examples=5),
]

FIRST_ORDER_ONLY: dict = {}


def _torch_interp(x, **params):
    import torch.nn.functional as TF

    return TF.interpolate(x, **params)


TORCH = {"interpolate": _torch_interp}


#: Entries whose ops refuse complex inputs (an OpError); every other entry is also checked on complex ones.
REAL_ONLY = {
    "interpolate"
}
