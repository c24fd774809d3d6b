"""Convolutions (fgraph/nn/functional/conv.py) against ``jax.lax.conv_general_dilated``.

The references call JAX's convolution directly (torch layouts expressed as dimension
numbers; transposed convolutions through ``jax.lax.conv_transpose`` semantics written
out as lhs-dilated convolutions of the flipped, group-transposed weight). Every op has
second (and higher) derivatives: FIRST_ORDER_ONLY is empty. Shapes are tiny: each
distinct case compiles several kernels.
"""
import jax
import jax.numpy as jnp

import fgraph.nn.functional as F
from op_harness import REAL, Case, OpEntry, cases


def _dn(n):
    s = "DHW"[3 - n:]
    return ("NC" + s, "OI" + s, "NC" + s)


def _conv_ref(x, w, b=None, *, stride=1, padding=0, dilation=1, groups=1):
    n = x.ndim - 2
    st = (stride,) * n if isinstance(stride, int) else stride
    dl = (dilation,) * n if isinstance(dilation, int) else dilation
    if padding == "same":
        eff = [d * (k - 1) for d, k in zip(dl, w.shape[2:])]
        pads = [(e // 2, e - e // 2) for e in eff]
    elif padding == "valid":
        pads = [(0, 0)] * n
    else:
        p = (padding,) * n if isinstance(padding, int) else padding
        pads = [(v, v) for v in p]
    out = jax.lax.conv_general_dilated(x, w, st, pads, rhs_dilation=dl, dimension_numbers=_dn(n),
                                       feature_group_count=groups, precision=jax.lax.Precision.HIGHEST)
    return out if b is None else out + b.reshape((-1,) + (1,) * n)


def _conv_t_ref(x, w, b=None, *, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    n = x.ndim - 2
    tup = lambda v: (v,) * n if isinstance(v, int) else v  # noqa: E731
    st, p, op, dl = tup(stride), tup(padding), tup(output_padding), tup(dilation)
    cin, cog = w.shape[:2]
    k = w.shape[2:]
    wt = w.reshape((groups, cin // groups, cog) + k)
    wt = jnp.swapaxes(wt, 1, 2).reshape((groups * cog, cin // groups) + k)
    wt = jnp.flip(wt, tuple(range(2, n + 2)))
    pads = [(d * (kk - 1) - pp, d * (kk - 1) - pp + o) for kk, d, pp, o in zip(k, dl, p, op)]
    out = jax.lax.conv_general_dilated(x, wt, (1,) * n, pads, lhs_dilation=st, rhs_dilation=dl,
                                       dimension_numbers=_dn(n), feature_group_count=groups,
                                       precision=jax.lax.Precision.HIGHEST)
    return out if b is None else out + b.reshape((-1,) + (1,) * n)


def _wrap(fn):
    def call(x, w, b=None, **params):
        return fn(x, w, b, **params)

    return call


TABLE = [
    OpEntry("conv1d", _wrap(F.conv1d), _conv_ref, None, cases(
        Case(((2, 2, 5), (3, 2, 2), (3,)), dict(stride=2, padding=1)),
        Case(((1, 4, 5), (2, 2, 3)), dict(padding="same", dilation=2, groups=2)),
        Case(((1, 2, 3), (2, 2, 3)), dict(padding="valid")),
    ), REAL, max_examples=4),
    OpEntry("conv2d", _wrap(F.conv2d), _conv_ref, None, cases(
        Case(((1, 2, 4, 3), (2, 1, 2, 2), (2,)), dict(stride=(2, 1), padding=(1, 0), groups=2)),
        Case(((1, 1, 3, 3), (1, 1, 2, 2)), dict(padding="same", dilation=(1, 2))),
    ), REAL, max_examples=4),
    OpEntry("conv_transpose1d", _wrap(F.conv_transpose1d), _conv_t_ref, None, cases(
        Case(((1, 2, 3), (2, 2, 3), (2,)), dict(stride=2, padding=1, output_padding=1)),
        Case(((1, 4, 2), (4, 1, 2)), dict(groups=2, dilation=2)),
    ), REAL, max_examples=4),
    OpEntry("conv_transpose2d", _wrap(F.conv_transpose2d), _conv_t_ref, None, cases(
        Case(((1, 2, 2, 2), (2, 1, 2, 3)), dict(stride=(2, 1), padding=(0, 1), output_padding=(1, 0))),
    ), REAL, max_examples=3),
]

FIRST_ORDER_ONLY: dict = {}


def _torch(name):
    def call(x, w, b=None, **params):
        import torch.nn.functional as TF

        return getattr(TF, name)(x, w, b, **params)

    return call


TORCH = {name: _torch(name) for name in ("conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d")}
