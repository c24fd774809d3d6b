"""Pooling with ``torch.nn.functional``'s names and arguments.

Max pooling gathers the input at the first maximum of each window (ties go to the
first, as torch); the gather's gradient is a scatter-add and the scatter-add's
gradient a gather (:mod:`fgraph.nn.functional._pool_primitives`), so every order of
derivative works. The window tables are built from static shapes only. Average
pooling is a convolution with a ones kernel (the differentiable convolution
primitive) divided by a static divisor; adaptive average pooling multiplies by static
averaging matrices. Power-average (``lp_pool``) pooling is torch's composite of
average pooling. ``return_indices`` gives torch's flat per-channel input indices.

Example:
    >>> import fgraph as fg
    >>> import fgraph.nn.functional as F
    >>> F.max_pool1d(fg.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2).tolist()
    [[[3.0, 2.0]]]
"""
from __future__ import annotations

import functools

from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from fgraph.errors import OpError
from fgraph.nn.functional._conv_primitive import conv_general
from fgraph.nn.functional._pool_primitives import take_last, window_argmax
from fgraph.nn.functional._utils import IntOrTuple, check_float, int_tuple
from fgraph.nn.functional.sampling import _resample_dim
from fgraph.ops._complex import refuse_complex
from fgraph.ops.elementwise import abs as _abs, mul, pow, relu, sign
from fgraph.ops.linalg import matmul
from fgraph.ops.reduction import mean
from fgraph.ops.shape import reshape, squeeze, unsqueeze
from fgraph.tensor import Tensor, tensor

__all__ = [
    "max_pool1d",
    "max_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "max_pool3d",
    "avg_pool3d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool3d",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
]

TENSOR_METHODS: dict = {}



def _batched(op: str, input: Tensor, n: int) -> tuple[Tensor, bool]:
    check_float(input, op)
    if input.ndim == n + 1:
        return unsqueeze(input, 0), True
    if input.ndim != n + 2:
        raise OpError(
            f"{op}: expected a {n + 1}-D (unbatched) or {n + 2}-D (batched) input of shape (N, C, *spatial), "
            f"got shape {tuple(input.shape)}."
        )
    if any(s == 0 for s in input.shape[2:]):
        raise OpError(f"{op}: spatial dims of the input {tuple(input.shape)} must be non-empty.")
    return input, False


def _out_size(op, L, k, s, p, d, ceil_mode):
    num = L + 2 * p - d * (k - 1) - 1
    if num < 0:
        raise OpError(
            f"{op}: the (dilated) kernel size {d * (k - 1) + 1} is larger than the padded input size {L + 2 * p}; "
            "use a smaller kernel or more padding."
        )
    out = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (out - 1) * s >= L + p:
        out -= 1
    return out


def _pool_args(op, n, kernel_size, stride, padding, dilation):
    k = int_tuple(kernel_size, n, op, "kernel_size")
    s = k if stride is None or (not isinstance(stride, int) and len(tuple(stride)) == 0) else int_tuple(stride, n, op, "stride")
    p = int_tuple(padding, n, op, "padding")
    d = int_tuple(dilation, n, op, "dilation")
    if any(v <= 0 for v in k + s + d) or any(v < 0 for v in p):
        raise OpError(f"{op}: kernel_size {k}, stride {s}, dilation {d} must be positive and padding {p} non-negative.")
    if any(pp > kk // 2 for pp, kk in zip(p, k)):
        raise OpError(f"{op}: padding {p} should be at most half of the kernel size {k}.")
    return k, s, p, d


def _combine(per_dim: list, spatial: tuple) -> np.ndarray:
    """(P, K) flat index table from per-dim (out_i, k_i) position tables (-1 = outside)."""
    n = len(spatial)
    strides = [int(np.prod(spatial[i + 1:])) for i in range(n)]
    flat = np.zeros((1,) * (2 * n), np.int64)
    valid = np.ones((1,) * (2 * n), bool)
    for i, pos in enumerate(per_dim):
        shape = [1] * (2 * n)
        shape[i], shape[n + i] = pos.shape
        pos = pos.reshape(shape)
        flat = flat + np.maximum(pos, 0) * strides[i]
        valid = valid & (pos >= 0)
    table = np.where(valid, flat, -1)
    outs = table.shape[:n]
    return table.reshape(int(np.prod(outs)), -1), outs


def _max_by_table(op, input, n, table, outs, return_indices):
    x, unbatched = _batched(op, input, n)
    flat = reshape(x, tuple(x.shape[:2]) + (int(np.prod(x.shape[2:])),))
    idx = window_argmax(flat, table)
    out = reshape(take_last(flat, idx), tuple(x.shape[:2]) + tuple(outs))
    ind = reshape(idx, tuple(x.shape[:2]) + tuple(outs))
    if unbatched:
        out, ind = squeeze(out, 0), squeeze(ind, 0)
    return (out, ind) if return_indices else out


def _constant(table: np.ndarray) -> jax.Array:
    """A device constant that is concrete even when first made under a trace (so caching it leaks no tracer)."""
    with jax.ensure_compile_time_eval():
        return jnp.asarray(table)


@functools.lru_cache(maxsize=256)
def _max_pool_table(op, spatial, k, s, p, d, ceil_mode):
    """The window table of a max pool, built and uploaded once per static configuration."""
    per_dim = []
    for L, kk, ss, pp, dd in zip(spatial, k, s, p, d):
        o = _out_size(op, L, kk, ss, pp, dd, ceil_mode)
        pos = np.arange(o)[:, None] * ss - pp + np.arange(kk)[None, :] * dd
        per_dim.append(np.where((pos >= 0) & (pos < L), pos, -1))
    table, outs = _combine(per_dim, spatial)
    return _constant(table), outs


def _max_pool(op, n, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    check_float(input, op)
    k, s, p, d = _pool_args(op, n, kernel_size, stride, padding, dilation)
    table, outs = _max_pool_table(op, tuple(input.shape[-n:]), k, s, p, d, bool(ceil_mode))
    return _max_by_table(op, input, n, table, outs, return_indices)


def max_pool1d(input: Tensor, kernel_size: IntOrTuple, stride: Optional[IntOrTuple] = None, padding: IntOrTuple = 0,
               dilation: IntOrTuple = 1, ceil_mode: bool = False, return_indices: bool = False):
    """Max over sliding windows of ``(N, C, L)`` (padding counts as -inf); ``stride`` defaults to the kernel.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> out, idx = F.max_pool1d(fg.tensor([[[1.0, 3.0, 3.0]]]), 2, 1, return_indices=True)
    >>> out.tolist(), idx.tolist()
    ([[[3.0, 3.0]]], [[[1, 1]]])
    """
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input: Tensor, kernel_size: IntOrTuple, stride: Optional[IntOrTuple] = None, padding: IntOrTuple = 0,
               dilation: IntOrTuple = 1, ceil_mode: bool = False, return_indices: bool = False):
    """Max over sliding windows of ``(N, C, H, W)``.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.max_pool2d(fg.tensor([[[[1.0, 2.0], [4.0, 3.0]]]]), 2).tolist()
    [[[[4.0]]]]
    """
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _adaptive_bounds(L: int, o: int):
    starts = [(i * L) // o for i in range(o)]
    ends = [-(-((i + 1) * L) // o) for i in range(o)]
    return starts, ends


def _adaptive_max(op, n, input, output_size, return_indices):
    check_float(input, op)
    outs = _adaptive_sizes(op, n, input, output_size)
    table, outs = _adaptive_max_table(tuple(input.shape[-n:]), tuple(outs))
    return _max_by_table(op, input, n, table, outs, return_indices)


@functools.lru_cache(maxsize=256)
def _adaptive_max_table(spatial, outs):
    per_dim = []
    for L, o in zip(spatial, outs):
        starts, ends = _adaptive_bounds(L, o)
        kmax = max(e - s for s, e in zip(starts, ends))
        pos = np.full((o, kmax), -1, np.int64)
        for i, (s, e) in enumerate(zip(starts, ends)):
            pos[i, : e - s] = np.arange(s, e)
        per_dim.append(pos)
    table, outs = _combine(per_dim, spatial)
    return _constant(table), outs


def _adaptive_sizes(op, n, input, output_size):
    if input.ndim not in (n + 1, n + 2) or any(s == 0 for s in input.shape[-n:]):
        raise OpError(
            f"{op}: expected a {n + 1}-D or {n + 2}-D input with non-empty spatial dims, got {tuple(input.shape)}."
        )
    if isinstance(output_size, int) or output_size is None:
        output_size = (output_size,) * n
    sizes = tuple(input.shape[-n + i] if o is None else o for i, o in enumerate(tuple(output_size)))
    if len(sizes) != n or any(not isinstance(o, int) or o <= 0 for o in sizes):
        raise OpError(f"{op}: output_size must be {n} positive ints (or None), got {output_size!r}.")
    return sizes


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """Max over ``output_size`` windows ``[floor(i*L/out), ceil((i+1)*L/out))`` of ``(N, C, L)``.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.adaptive_max_pool1d(fg.tensor([[[1.0, 3.0, 2.0]]]), 2).tolist()
    [[[3.0, 3.0]]]
    """
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """Adaptive max pooling of ``(N, C, H, W)`` to ``output_size`` (an int, a pair, None keeps a dim).

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.adaptive_max_pool2d(fg.tensor([[[[1.0, 2.0], [4.0, 3.0]]]]), 1).tolist()
    [[[[4.0]]]]
    """
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def _avg_pool(op, n, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    refuse_complex(op, input)
    x, unbatched = _batched(op, input, n)
    k, s, p, _ = _pool_args(op, n, kernel_size, stride, padding, 1)
    spatial = tuple(x.shape[2:])
    outs = tuple(_out_size(op, L, kk, ss, pp, 1, ceil_mode) for L, kk, ss, pp in zip(spatial, k, s, p))
    pads = []
    divs = []
    for L, kk, ss, pp, o in zip(spatial, k, s, p, outs):
        extra = max(0, (o - 1) * ss + kk - (L + 2 * pp))
        pads.append((pp, pp + extra))
        start = np.arange(o) * ss - pp
        end = np.minimum(start + kk, L + pp)
        if count_include_pad:
            divs.append((end - start).astype(np.float64))
        else:
            divs.append((np.minimum(end, L) - np.maximum(start, 0)).astype(np.float64))
    if divisor_override:
        div = np.full(outs, float(divisor_override))
    else:
        div = divs[0]
        for dv in divs[1:]:
            div = np.multiply.outer(div, dv)
    nc = tuple(x.shape[:2])
    flat = reshape(x, (nc[0] * nc[1], 1) + spatial)
    ones = tensor(np.ones((1, 1) + k), dtype=x.dtype)
    spec = tuple(range(n + 2))
    summed = conv_general(flat, ones, s, tuple(pads), (1,) * n, (1,) * n, (spec, spec, spec), 1, 1)
    out = mul(reshape(summed, nc + outs), tensor(1.0 / div, dtype=x.dtype))
    return squeeze(out, 0) if unbatched else out


def avg_pool1d(input: Tensor, kernel_size: IntOrTuple, stride: Optional[IntOrTuple] = None, padding: IntOrTuple = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """Mean over sliding windows of ``(N, C, L)`` (zero padding; ``count_include_pad`` counts it).

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.avg_pool1d(fg.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2).tolist()
    [[[2.0, 1.0]]]
    """
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input: Tensor, kernel_size: IntOrTuple, stride: Optional[IntOrTuple] = None, padding: IntOrTuple = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: Optional[int] = None) -> Tensor:
    """Mean over sliding windows of ``(N, C, H, W)``; ``divisor_override`` replaces the window size.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.avg_pool2d(fg.tensor([[[[1.0, 2.0], [4.0, 3.0]]]]), 2).tolist()
    [[[[2.5]]]]
    """
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def _avg_matrix(L: int, o: int) -> np.ndarray:
    starts, ends = _adaptive_bounds(L, o)
    m = np.zeros((o, L))
    for i, (s, e) in enumerate(zip(starts, ends)):
        m[i, s:e] = 1.0 / (e - s)
    return m


def _even_windows_mean(input: Tensor, sizes: tuple) -> Optional[Tensor]:
    """Adaptive average pooling when each output size divides its input size (equal, disjoint windows: a mean
    per window, one or two kernels, no averaging matrices); ``None`` otherwise."""
    k = len(sizes)
    spatial = input.shape[-k:]
    if any(L % o for L, o in zip(spatial, sizes)):
        return None
    if all(o == 1 for o in sizes):  # global average pooling
        return mean(input, dim=tuple(range(-k, 0)), keepdim=True)
    split = tuple(input.shape[:-k]) + tuple(v for L, o in zip(spatial, sizes) for v in (o, L // o))
    return mean(reshape(input, split), dim=tuple(range(input.ndim - k + 1, input.ndim + k, 2)))


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Mean over ``output_size`` windows ``[floor(i*L/out), ceil((i+1)*L/out))`` of ``(N, C, L)``.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.adaptive_avg_pool1d(fg.tensor([[[1.0, 3.0, 2.0]]]), 2).tolist()
    [[[2.0, 2.5]]]
    """
    refuse_complex("adaptive_avg_pool1d", input)
    check_float(input, "adaptive_avg_pool1d")
    (o,) = _adaptive_sizes("adaptive_avg_pool1d", 1, input, output_size)
    even = _even_windows_mean(input, (o,))
    if even is not None:
        return even
    a = tensor(_avg_matrix(input.shape[-1], o).T, dtype=input.dtype)
    return matmul(input, a)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Adaptive average pooling of ``(N, C, H, W)`` (or ``(C, H, W)``) to ``output_size``.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.adaptive_avg_pool2d(fg.tensor([[[[1.0, 2.0], [4.0, 3.0]]]]), 1).tolist()
    [[[[2.5]]]]
    """
    refuse_complex("adaptive_avg_pool2d", input)
    check_float(input, "adaptive_avg_pool2d")
    oh, ow = _adaptive_sizes("adaptive_avg_pool2d", 2, input, output_size)
    even = _even_windows_mean(input, (oh, ow))
    if even is not None:
        return even
    ah = tensor(_avg_matrix(input.shape[-2], oh), dtype=input.dtype)
    aw = tensor(_avg_matrix(input.shape[-1], ow).T, dtype=input.dtype)
    return matmul(matmul(ah, input), aw)


def max_pool3d(input: Tensor, kernel_size: IntOrTuple, stride: Optional[IntOrTuple] = None, padding: IntOrTuple = 0,
               dilation: IntOrTuple = 1, ceil_mode: bool = False, return_indices: bool = False):
    """Max over sliding windows of ``(N, C, D, H, W)`` or ``(C, D, H, W)``.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> out, idx = F.max_pool3d(fg.arange(8.0).reshape(1, 1, 2, 2, 2), 2, return_indices=True)
    >>> out.tolist(), idx.tolist()
    ([[[[[7.0]]]]], [[[[[7]]]]])
    """
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def avg_pool3d(input: Tensor, kernel_size: IntOrTuple, stride: Optional[IntOrTuple] = None, padding: IntOrTuple = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: Optional[int] = None) -> Tensor:
    """Mean over sliding windows of ``(N, C, D, H, W)``; ``divisor_override`` replaces the window size.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.avg_pool3d(fg.arange(8.0).reshape(1, 1, 2, 2, 2), 2).tolist()
    [[[[[3.5]]]]]
    """
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """Adaptive max pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` to ``output_size``.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.adaptive_max_pool3d(fg.arange(8.0).reshape(1, 1, 2, 2, 2), (1, 1, 2)).tolist()
    [[[[[6.0, 7.0]]]]]
    """
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, return_indices)


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """Adaptive average pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` to ``output_size`` (an int, a
    triple; None keeps a dim): a static averaging matrix along each spatial dim.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.adaptive_avg_pool3d(fg.arange(8.0).reshape(1, 1, 2, 2, 2), (1, 1, 2)).tolist()
    [[[[[3.0, 4.0]]]]]
    """
    refuse_complex("adaptive_avg_pool3d", input)
    check_float(input, "adaptive_avg_pool3d")
    sizes = _adaptive_sizes("adaptive_avg_pool3d", 3, input, output_size)
    even = _even_windows_mean(input, tuple(sizes))
    if even is not None:
        return even
    out = input
    for axis in (-1, -2, -3):
        L, o = input.shape[axis], sizes[axis]
        if L != o:
            out = _resample_dim(out, input.ndim + axis, _avg_matrix(L, o))
    return out


def _lp_pool(op, n, input, norm_type, kernel_size, stride, ceil_mode):
    check_float(input, op)
    if isinstance(norm_type, bool) or not isinstance(norm_type, (int, float)):
        raise OpError(f"{op}: norm_type must be a number (the p of the p-norm), got {norm_type!r}.")
    k = int_tuple(kernel_size, n, op, "kernel_size")
    pool = {1: avg_pool1d, 2: avg_pool2d, 3: avg_pool3d}[n]
    out = pool(pow(input, norm_type), k, stride, 0, ceil_mode)
    # torch's formula: the window mean times the window size (a partial ceil_mode window keeps its smaller divisor)
    return pow(mul(mul(sign(out), relu(_abs(out))), float(np.prod(k))), 1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride: Optional[IntOrTuple] = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling ``(sum over the window of x**p) ** (1/p)`` of ``(N, C, L)``.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.lp_pool1d(fg.tensor([[[3.0, 4.0, 1.0]]]), 2, 2).tolist()
    [[[5.0]]]
    """
    return _lp_pool("lp_pool1d", 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: IntOrTuple, stride: Optional[IntOrTuple] = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling of ``(N, C, H, W)`` (``norm_type=inf`` is not special-cased, as in torch).

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.lp_pool2d(fg.tensor([[[[1.0, 1.0], [1.0, 1.0]]]]), 2, 2).tolist()
    [[[[2.0]]]]
    """
    return _lp_pool("lp_pool2d", 2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: IntOrTuple, stride: Optional[IntOrTuple] = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling of ``(N, C, D, H, W)``.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.lp_pool3d(fg.ones(1, 1, 2, 2, 2), 1, 2).tolist()
    [[[[[8.0]]]]]
    """
    return _lp_pool("lp_pool3d", 3, input, norm_type, kernel_size, stride, ceil_mode)
