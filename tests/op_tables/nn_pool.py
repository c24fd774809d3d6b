"""Pooling (fgraph/nn/functional/pooling.py) against pure-JAX references.

Max-pool references slice every window and take the value at ``jnp.argmax`` (first
maximum, like torch, so draws with ties agree); average pooling uses
``jax.lax.reduce_window`` sums divided by a window count computed the same way on
ones. Adaptive pools slice torch's windows ``[floor(i*L/o), ceil((i+1)*L/o))``.
``lp_pool`` follows torch's definition on top of the average-pool reference:
``(sign(m) * relu(|m|) * window size) ** (1/p)`` of the window mean ``m`` of ``x**p``.
Every op has second derivatives (max pooling: gather -> scatter-add -> gather):
FIRST_ORDER_ONLY is empty.
"""
import itertools
import math

import jax
import jax.numpy as jnp

import fgraph.nn.functional as F
from op_harness import POSITIVE, REAL, Case, OpEntry, cases


def _tup(v, n):
    return (v,) * n if isinstance(v, int) else tuple(v)


def _out(L, k, s, p, d, ceil_mode):
    num = L + 2 * p - d * (k - 1) - 1
    o = (math.ceil(num / s) if ceil_mode else num // s) + 1
    if ceil_mode and (o - 1) * s >= L + p:
        o -= 1
    return o


def _first_max(vals):
    flat = vals.reshape(vals.shape[:2] + (-1,))
    i = jnp.argmax(flat, axis=-1)
    return jnp.take_along_axis(flat, i[..., None], axis=-1)[..., 0]


def _windows_ref(x, ranges_per_dim):
    """Stack ``_first_max`` over windows given as per-dim lists of index arrays."""
    outs = [len(r) for r in ranges_per_dim]
    res = []
    for combo in itertools.product(*ranges_per_dim):
        sl = x
        for ax, idx in enumerate(combo):
            sl = jnp.take(sl, jnp.asarray(idx), axis=2 + ax)
        res.append(_first_max(sl))
    return jnp.stack(res, axis=-1).reshape(x.shape[:2] + tuple(outs))


def _max_pool_ref(x, *, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    n = x.ndim - 2
    k, p, d = _tup(kernel_size, n), _tup(padding, n), _tup(dilation, n)
    s = k if stride is None else _tup(stride, n)
    ranges = []
    for L, kk, ss, pp, dd in zip(x.shape[2:], k, s, p, d):
        o = _out(L, kk, ss, pp, dd, ceil_mode)
        ranges.append([[j for j in range(i * ss - pp, i * ss - pp + kk * dd, dd) if 0 <= j < L] for i in range(o)])
    return _windows_ref(x, ranges)


def _adaptive_ranges(shape, output_size):
    return [[list(range(i * L // o, -(-(i + 1) * L // o))) for i in range(o)] for L, o in zip(shape, output_size)]


def _adaptive_max_ref(x, *, output_size):
    return _windows_ref(x, _adaptive_ranges(x.shape[2:], _tup(output_size, x.ndim - 2)))


def _adaptive_avg_ref(x, *, output_size):
    ranges = _adaptive_ranges(x.shape[2:], _tup(output_size, x.ndim - 2))
    res = []
    for combo in itertools.product(*ranges):
        sl = x
        for ax, idx in enumerate(combo):
            sl = jnp.take(sl, jnp.asarray(idx), axis=2 + ax)
        res.append(jnp.mean(sl, axis=tuple(range(2, x.ndim))))
    return jnp.stack(res, axis=-1).reshape(x.shape[:2] + tuple(len(r) for r in ranges))


def _avg_pool_ref(x, *, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                  divisor_override=None):
    n = x.ndim - 2
    k, p = _tup(kernel_size, n), _tup(padding, n)
    s = k if stride is None else _tup(stride, n)
    outs = [_out(L, kk, ss, pp, 1, ceil_mode) for L, kk, ss, pp in zip(x.shape[2:], k, s, p)]
    extra = [max(0, (o - 1) * ss + kk - (L + 2 * pp)) for o, ss, kk, L, pp in zip(outs, s, k, x.shape[2:], p)]
    pads = [(0, 0), (0, 0)] + [(pp, pp + e) for pp, e in zip(p, extra)]
    win, strides = (1, 1) + k, (1, 1) + s
    total = jax.lax.reduce_window(jnp.pad(x, pads), 0.0, jax.lax.add, win, strides, "VALID")
    if divisor_override:
        return total / jnp.asarray(divisor_override, x.dtype)
    if count_include_pad:
        ones = jnp.pad(jnp.ones((1, 1) + tuple(L + 2 * pp for L, pp in zip(x.shape[2:], p))),
                       [(0, 0), (0, 0)] + [(0, e) for e in extra])
    else:
        ones = jnp.pad(jnp.ones((1, 1) + x.shape[2:]), pads)
    count = jax.lax.reduce_window(ones, 0.0, jax.lax.add, win, strides, "VALID")
    return total / count.astype(x.dtype)


def _lp_pool_ref(x, *, norm_type, kernel_size, stride=None, ceil_mode=False):
    m = _avg_pool_ref(x ** norm_type, kernel_size=kernel_size, stride=stride, ceil_mode=ceil_mode)
    size = math.prod(_tup(kernel_size, x.ndim - 2))
    return (jnp.sign(m) * jax.nn.relu(jnp.abs(m)) * size) ** (1.0 / norm_type)


TABLE = [
    OpEntry("max_pool1d", F.max_pool1d, _max_pool_ref, 1, cases(
        Case(((1, 2, 5),), dict(kernel_size=2)),
        Case(((2, 1, 6),), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
        Case(((1, 1, 7),), dict(kernel_size=2, stride=1, dilation=2)),
    ), REAL, max_examples=5),
    OpEntry("max_pool2d", F.max_pool2d, _max_pool_ref, 1, cases(
        Case(((1, 2, 3, 4),), dict(kernel_size=2, stride=(1, 2), padding=(1, 0))),
        Case(((1, 1, 5, 5),), dict(kernel_size=(2, 3), stride=2, ceil_mode=True, dilation=(2, 1))),
    ), REAL, max_examples=5),
    OpEntry("avg_pool1d", F.avg_pool1d, _avg_pool_ref, 1, cases(
        Case(((1, 2, 5),), dict(kernel_size=2)),
        Case(((2, 1, 6),), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ), REAL, max_examples=4),
    OpEntry("avg_pool2d", F.avg_pool2d, _avg_pool_ref, 1, cases(
        Case(((1, 2, 3, 4),), dict(kernel_size=2, stride=(1, 2), padding=(1, 0))),
        Case(((1, 1, 5, 5),), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
        Case(((1, 1, 4, 4),), dict(kernel_size=2, divisor_override=3)),
    ), REAL, max_examples=5),
    OpEntry("adaptive_avg_pool2d", F.adaptive_avg_pool2d, _adaptive_avg_ref, 1, cases(
        Case(((1, 2, 5, 3),), dict(output_size=(3, 2))),
        Case(((1, 2, 4, 6),), dict(output_size=(2, 3))),  # even windows: a mean per window
        Case(((2, 1, 4, 2),), dict(output_size=1)),  # global average pooling
    ), REAL, max_examples=3),
    OpEntry("adaptive_max_pool2d", F.adaptive_max_pool2d, _adaptive_max_ref, 1, cases(
        Case(((1, 2, 5, 3),), dict(output_size=(3, 2))),
    ), REAL, max_examples=3),
    OpEntry("max_pool3d", F.max_pool3d, _max_pool_ref, 1, cases(
        Case(((1, 1, 2, 4, 3),), dict(kernel_size=2, stride=(1, 2, 2), padding=(1, 0, 1), ceil_mode=True,
                                      dilation=(1, 2, 1))),
    ), REAL, max_examples=2),
    OpEntry("avg_pool3d", F.avg_pool3d, _avg_pool_ref, 1, cases(
        Case(((1, 2, 3, 4, 3),), dict(kernel_size=2, stride=(1, 2, 1), padding=(1, 0, 1))),
        Case(((1, 1, 2, 3, 4),), dict(kernel_size=2, stride=1, divisor_override=5)),
    ), REAL, max_examples=2),
    OpEntry("adaptive_avg_pool3d", F.adaptive_avg_pool3d, _adaptive_avg_ref, 1, cases(
        Case(((1, 1, 3, 4, 2),), dict(output_size=(2, 3, 1))),
        Case(((1, 2, 4, 2, 3),), dict(output_size=(2, 1, 3))),
    ), REAL, max_examples=2),
    OpEntry("lp_pool2d", F.lp_pool2d, _lp_pool_ref, 1, cases(
        Case(((1, 2, 3, 4),), dict(norm_type=1.5, kernel_size=(2, 3), stride=2, ceil_mode=True)),
    ), POSITIVE, max_examples=2),
]

FIRST_ORDER_ONLY: dict = {}


def _torch(name):
    def call(x, **params):
        import torch.nn.functional as TF

        return getattr(TF, name)(x, **params)

    return call


TORCH = {e.name: _torch(e.name) for e in TABLE}


#: Entries whose ops refuse complex inputs (an OpError); every other entry is also checked on complex ones.
REAL_ONLY = {
    "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool2d", "adaptive_max_pool2d",
    "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "lp_pool2d"
}
