"""The general convolution primitive behind ``conv*d`` and ``conv_transpose*d``.

``conv_general`` wraps ``jax.lax.conv_general_dilated`` with every argument static.
Its derivative rule expresses the input- and weight-gradients as calls of the same
primitive with transformed static parameters (the transpose formulas JAX uses in
``_conv_general_dilated_transpose_lhs/_rhs``), written in fgraph ops, so every order
of derivative works (the gradient of a feature-grouped convolution is a batch-grouped
one and back).

Example:
    >>> import fgraph as fg
    >>> from fgraph.nn.functional._conv_primitive import conv_general
    >>> x = fg.ones((1, 1, 3)); w = fg.ones((1, 1, 2))
    >>> conv_general(x, w, (1,), ((0, 0),), (1,), (1,), ((0, 1, 2), (0, 1, 2), (0, 1, 2)), 1, 1).tolist()
    [[[2.0, 2.0]]]
"""
from __future__ import annotations

import jax

from fgraph.ops import _natural_sharding as natural_sharding
from fgraph.ops._declare import apply_op, declare
from fgraph.ops.movement import flip
from fgraph.ops.shape import permute, reshape
from fgraph.tensor import Tensor, zeros

__all__: list[str] = []

Spec = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]


def _forward(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
             feature_group_count, batch_group_count):
    def conv(lhs, rhs):
        return jax.lax.conv_general_dilated(
            lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
            jax.lax.ConvDimensionNumbers(*dimension_numbers), feature_group_count, batch_group_count,
            precision=jax.lax.Precision.HIGHEST,
        )

    return natural_sharding.conv_general_dilated(conv, lhs, rhs, dimension_numbers, batch_group_count)


def _dilate(shape, dil):
    return tuple(0 if s == 0 else 1 + d * (s - 1) for s, d in zip(shape, dil))


def _sdims(spec):
    return tuple(spec[2:])


def _spec_t(spec):
    return (spec[1], spec[0]) + tuple(spec[2:])


def _axis_out_of(src: int, size1: int, x: Tensor) -> Tensor:
    shape = list(x.shape)
    shape[src:src + 1] = [size1, shape[src] // size1]
    return reshape(x, tuple(shape))


def _axis_into(src: int, dst: int, x: Tensor) -> Tensor:
    perm = [i for i in range(x.ndim) if i != src]
    perm.insert(dst, src)
    new_shape = [x.shape[i] for i in range(x.ndim) if i != src]
    new_shape[dst] *= x.shape[src]
    return reshape(permute(x, tuple(perm)), tuple(new_shape))


def _take(shape, dims):
    return tuple(int(shape[d]) for d in dims)


def _grad_lhs(g: Tensor, lhs_shape, rhs: Tensor, p) -> Tensor:
    lhs_spec, rhs_spec, out_spec = p.dimension_numbers
    fgc, bgc = p.feature_group_count, p.batch_group_count
    if fgc > 1:
        rhs = _axis_into(rhs_spec[0], rhs_spec[1], _axis_out_of(rhs_spec[0], fgc, rhs))
    elif bgc > 1:
        rhs = _axis_into(rhs_spec[0], rhs_spec[1], _axis_out_of(rhs_spec[0], bgc, rhs))
        fgc = bgc
    dn = (tuple(out_spec), _spec_t(rhs_spec), tuple(lhs_spec))
    in_s = _take(lhs_shape, _sdims(lhs_spec))
    win = _take(rhs.shape, _sdims(rhs_spec))
    out_s = _take(g.shape, _sdims(out_spec))
    lhs_d = _dilate(in_s, p.lhs_dilation)
    rhs_d = _dilate(win, p.rhs_dilation)
    out_d = _dilate(out_s, p.window_strides)
    before = tuple(r - lo - 1 for r, (lo, _) in zip(rhs_d, p.padding))
    after = tuple(ld + rd - 1 - od - b for ld, rd, od, b in zip(lhs_d, rhs_d, out_d, before))
    out = conv_general(g, flip(rhs, _sdims(rhs_spec)), p.lhs_dilation, tuple(zip(before, after)),
                       p.window_strides, p.rhs_dilation, dn, fgc, 1)
    if p.batch_group_count > 1:
        out = _axis_into(lhs_spec[1], lhs_spec[0], _axis_out_of(lhs_spec[1], p.batch_group_count, out))
    return out


def _grad_rhs(g: Tensor, lhs: Tensor, rhs_shape, p) -> Tensor:
    lhs_spec, rhs_spec, out_spec = p.dimension_numbers
    if 0 in tuple(g.shape):
        return zeros(tuple(rhs_shape), dtype=g.dtype)
    fgc, bgc = p.feature_group_count, p.batch_group_count
    if bgc > 1:
        fgc, bgc = bgc, 1
    elif fgc > 1:
        fgc, bgc = 1, fgc
    dn = (_spec_t(lhs_spec), _spec_t(out_spec), _spec_t(rhs_spec))
    in_s = _take(lhs.shape, _sdims(lhs_spec))
    win = _take(rhs_shape, _sdims(rhs_spec))
    out_s = _take(g.shape, _sdims(out_spec))
    lhs_d = _dilate(in_s, p.lhs_dilation)
    rhs_d = _dilate(win, p.rhs_dilation)
    out_d = _dilate(out_s, p.window_strides)
    lo = tuple(a for a, _ in p.padding)
    hi = tuple(od - ld + rd - pl - 1 for od, ld, rd, pl in zip(out_d, lhs_d, rhs_d, lo))
    return conv_general(lhs, g, p.rhs_dilation, tuple(zip(lo, hi)), p.lhs_dilation, p.window_strides,
                        dn, fgc, bgc)


def _conv_rule(ctx, g):
    lhs, rhs = ctx.inputs
    p = ctx.params
    g_lhs = _grad_lhs(g, tuple(lhs.shape), rhs, p) if ctx.needs[0] else None
    g_rhs = _grad_rhs(g, lhs, tuple(rhs.shape), p) if ctx.needs[1] else None
    return (g_lhs, g_rhs)


CONV = declare(
    "conv_general",
    _forward,
    _conv_rule,
    params=("window_strides", "padding", "lhs_dilation", "rhs_dilation", "dimension_numbers",
            "feature_group_count", "batch_group_count"),
    save_inputs=True,
    node_name="ConvolutionBackward0",
)


def conv_general(lhs: Tensor, rhs: Tensor, window_strides: tuple, padding: tuple, lhs_dilation: tuple,
                 rhs_dilation: tuple, dimension_numbers: Spec, feature_group_count: int = 1,
                 batch_group_count: int = 1) -> Tensor:
    """``jax.lax.conv_general_dilated`` as a differentiable fgraph primitive (all arguments static)."""
    params = CONV.Params(
        tuple(int(s) for s in window_strides),
        tuple((int(a), int(b)) for a, b in padding),
        tuple(int(s) for s in lhs_dilation),
        tuple(int(s) for s in rhs_dilation),
        tuple(tuple(int(i) for i in s) for s in dimension_numbers),
        int(feature_group_count),
        int(batch_group_count),
    )
    return apply_op(CONV, (lhs, rhs), params)
