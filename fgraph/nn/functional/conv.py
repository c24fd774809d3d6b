"""Convolutions with ``torch.nn.functional``'s names and arguments.

``conv1d/2d/3d`` and ``conv_transpose1d/2d/3d`` all run the one general convolution
primitive (:mod:`fgraph.nn.functional._conv_primitive`), whose derivative rule is
itself written with that primitive: every order of derivative works.

Weights use torch's layouts: ``(out, in/groups, *k)`` for convolutions and
``(in, out/groups, *k)`` for transposed convolutions. ``padding`` is an int, a tuple,
``'valid'`` or ``'same'`` (stride 1 only, odd total padding goes on the right, as torch).
Unbatched inputs ``(C, *spatial)`` are accepted, as in torch.

Example:
    >>> import fgraph as fg
    >>> import fgraph.nn.functional as F
    >>> F.conv1d(fg.ones((1, 1, 4)), fg.ones((1, 1, 2))).tolist()
    [[[2.0, 2.0, 2.0]]]
"""
from __future__ import annotations

from typing import Optional, Union

import jax.numpy as jnp

from fgraph.errors import OpError
from fgraph.nn.functional._conv_primitive import conv_general
from fgraph.nn.functional._utils import IntOrTuple, check_float, check_tensor, int_tuple
from fgraph.ops.elementwise import add
from fgraph.ops.movement import flip
from fgraph.ops.shape import permute, reshape, squeeze, unsqueeze
from fgraph.tensor import Tensor

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]

TENSOR_METHODS: dict = {}



def _std_spec(n: int):
    s = tuple(range(n + 2))
    return (s, s, s)


def _prepare(op: str, input: Tensor, weight: Tensor, n: int):
    check_float(input, op)
    check_float(weight, op, "weight")
    if weight.ndim != n + 2:
        raise OpError(f"{op}: weight must have {n + 2} dims (out, in/groups, *kernel), got shape {tuple(weight.shape)}.")
    if input.dtype != weight.dtype:  # promote, as matmul and linear do
        dtype = jnp.promote_types(input.dtype, weight.dtype)
        input, weight = input.to(dtype), weight.to(dtype)
    if input.ndim == n + 1:
        return unsqueeze(input, 0), weight, True
    if input.ndim != n + 2:
        raise OpError(
            f"{op}: expected a {n + 1}-D (unbatched) or {n + 2}-D (batched) input of shape (N, C, *spatial), "
            f"got shape {tuple(input.shape)}."
        )
    return input, weight, False


def _add_bias(out: Tensor, bias: Optional[Tensor], channels: int, n: int, op: str) -> Tensor:
    if bias is None:
        return out
    check_tensor(bias, op, "bias")
    if tuple(bias.shape) != (channels,):
        raise OpError(f"{op}: bias must have shape ({channels},) (one per output channel), got {tuple(bias.shape)}.")
    return add(out, reshape(bias, (channels,) + (1,) * n))


def _conv(op: str, n: int, input: Tensor, weight: Tensor, bias: Optional[Tensor], stride: IntOrTuple,
          padding: Union[str, IntOrTuple], dilation: IntOrTuple, groups: int) -> Tensor:
    x, weight, unbatched = _prepare(op, input, weight, n)
    stride = int_tuple(stride, n, op, "stride")
    dilation = int_tuple(dilation, n, op, "dilation")
    if any(s <= 0 for s in stride) or any(d <= 0 for d in dilation):
        raise OpError(f"{op}: stride {stride} and dilation {dilation} must be positive.")
    c_in, c_out = x.shape[1], weight.shape[0]
    if not isinstance(groups, int) or groups <= 0 or c_in % groups or c_out % groups:
        raise OpError(
            f"{op}: groups={groups} must be positive and divide both the input channels {c_in} and the "
            f"output channels {c_out} (weight {tuple(weight.shape)})."
        )
    if weight.shape[1] * groups != c_in:
        raise OpError(
            f"{op}: input of shape {tuple(input.shape)} has {c_in} channels but weight of shape "
            f"{tuple(weight.shape)} expects in_channels/groups * groups = {weight.shape[1]} * {groups} = "
            f"{weight.shape[1] * groups}; fix the channel dim or groups."
        )
    ksize = tuple(weight.shape[2:])
    eff = tuple(d * (k - 1) + 1 for d, k in zip(dilation, ksize))
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0),) * n
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise OpError(f"{op}: padding='same' is not supported for strided convolutions (stride={stride}); "
                              "use an explicit padding.")
            pads = tuple(((e - 1) // 2, (e - 1) - (e - 1) // 2) for e in eff)
        else:
            raise OpError(f"{op}: padding must be 'valid', 'same', an int or a tuple, got {padding!r}.")
    else:
        p = int_tuple(padding, n, op, "padding")
        if any(v < 0 for v in p):
            raise OpError(f"{op}: padding {p} must be non-negative.")
        pads = tuple((v, v) for v in p)
    spatial = tuple(x.shape[2:])
    for s, (lo, hi), e in zip(spatial, pads, eff):
        if s + lo + hi < e:
            raise OpError(
                f"{op}: the (dilated) kernel {ksize} (effective size {eff}) is larger than the padded input "
                f"{tuple(sp + a + b for sp, (a, b) in zip(spatial, pads))} (input shape {tuple(input.shape)}); "
                "use a smaller kernel or more padding."
            )
    out = conv_general(x, weight, stride, pads, (1,) * n, dilation, _std_spec(n), groups, 1)
    out = _add_bias(out, bias, c_out, n, op)
    return squeeze(out, 0) if unbatched else out


def _conv_transpose(op: str, n: int, input: Tensor, weight: Tensor, bias: Optional[Tensor], stride: IntOrTuple,
                    padding: IntOrTuple, output_padding: IntOrTuple, groups: int, dilation: IntOrTuple) -> Tensor:
    x, weight, unbatched = _prepare(op, input, weight, n)
    stride = int_tuple(stride, n, op, "stride")
    dilation = int_tuple(dilation, n, op, "dilation")
    pad = int_tuple(padding, n, op, "padding")
    out_pad = int_tuple(output_padding, n, op, "output_padding")
    if any(s <= 0 for s in stride) or any(d <= 0 for d in dilation) or any(v < 0 for v in pad + out_pad):
        raise OpError(f"{op}: stride {stride}/dilation {dilation} must be positive, padding {pad} and "
                      f"output_padding {out_pad} non-negative.")
    if any(o >= s and o >= d for o, s, d in zip(out_pad, stride, dilation)):
        raise OpError(f"{op}: output_padding {out_pad} must be smaller than either stride {stride} or "
                      f"dilation {dilation}.")
    c_in = x.shape[1]
    if not isinstance(groups, int) or groups <= 0 or c_in % groups:
        raise OpError(f"{op}: groups={groups} must be positive and divide the input channels {c_in}.")
    if weight.shape[0] != c_in:
        raise OpError(
            f"{op}: input of shape {tuple(input.shape)} has {c_in} channels but weight of shape "
            f"{tuple(weight.shape)} expects {weight.shape[0]} (layout (in, out/groups, *kernel))."
        )
    ksize = tuple(weight.shape[2:])
    c_out = weight.shape[1] * groups
    # (in, out/g, *k) -> (g, in/g, out/g, *k) -> (g, out/g, in/g, *k) -> (out, in/g, *k), flipped spatially
    w = reshape(weight, (groups, c_in // groups, weight.shape[1]) + ksize)
    w = permute(w, (0, 2, 1) + tuple(range(3, n + 3)))
    w = flip(reshape(w, (c_out, c_in // groups) + ksize), tuple(range(2, n + 2)))
    pads = []
    for k, d, p, o in zip(ksize, dilation, pad, out_pad):
        e = d * (k - 1)
        pads.append((e - p, e - p + o))
    spatial = tuple(x.shape[2:])
    out_size = tuple((s - 1) * st - 2 * p + d * (k - 1) + o + 1
                     for s, st, p, d, k, o in zip(spatial, stride, pad, dilation, ksize, out_pad))
    if any(s <= 0 for s in out_size):
        raise OpError(f"{op}: the output size {out_size} computed from input {tuple(input.shape)}, kernel {ksize}, "
                      f"stride {stride}, padding {pad} is not positive; reduce the padding.")
    out = conv_general(x, w, (1,) * n, tuple(pads), stride, dilation, _std_spec(n), groups, 1)
    out = _add_bias(out, bias, c_out, n, op)
    return squeeze(out, 0) if unbatched else out


def conv1d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: IntOrTuple = 1,
           padding: Union[str, IntOrTuple] = 0, dilation: IntOrTuple = 1, groups: int = 1) -> Tensor:
    """1-D convolution (cross-correlation) of ``(N, C_in, L)`` with weight ``(C_out, C_in/groups, k)``.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.conv1d(fg.ones((1, 1, 3)), fg.ones((1, 1, 3)), padding="same").tolist()
    [[[2.0, 3.0, 2.0]]]
    """
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: IntOrTuple = 1,
           padding: Union[str, IntOrTuple] = 0, dilation: IntOrTuple = 1, groups: int = 1) -> Tensor:
    """2-D convolution of ``(N, C_in, H, W)`` with weight ``(C_out, C_in/groups, kh, kw)``.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.conv2d(fg.ones((1, 1, 2, 2)), fg.ones((1, 1, 2, 2))).tolist()
    [[[[4.0]]]]
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: IntOrTuple = 1,
           padding: Union[str, IntOrTuple] = 0, dilation: IntOrTuple = 1, groups: int = 1) -> Tensor:
    """3-D convolution of ``(N, C_in, D, H, W)`` with weight ``(C_out, C_in/groups, kd, kh, kw)``.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.conv3d(fg.ones((1, 1, 1, 2, 2)), fg.ones((1, 1, 1, 2, 2))).tolist()
    [[[[[4.0]]]]]
    """
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: IntOrTuple = 1,
                     padding: IntOrTuple = 0, output_padding: IntOrTuple = 0, groups: int = 1,
                     dilation: IntOrTuple = 1) -> Tensor:
    """1-D transposed convolution of ``(N, C_in, L)`` with weight ``(C_in, C_out/groups, k)``.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.conv_transpose1d(fg.ones((1, 1, 2)), fg.ones((1, 1, 2)), stride=2).tolist()
    [[[1.0, 1.0, 1.0, 1.0]]]
    """
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: IntOrTuple = 1,
                     padding: IntOrTuple = 0, output_padding: IntOrTuple = 0, groups: int = 1,
                     dilation: IntOrTuple = 1) -> Tensor:
    """2-D transposed convolution of ``(N, C_in, H, W)`` with weight ``(C_in, C_out/groups, kh, kw)``.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.conv_transpose2d(fg.ones((1, 1, 1, 1)), fg.ones((1, 1, 2, 2))).tolist()
    [[[[1.0, 1.0], [1.0, 1.0]]]]
    """
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: IntOrTuple = 1,
                     padding: IntOrTuple = 0, output_padding: IntOrTuple = 0, groups: int = 1,
                     dilation: IntOrTuple = 1) -> Tensor:
    """3-D transposed convolution of ``(N, C_in, D, H, W)`` with weight ``(C_in, C_out/groups, kd, kh, kw)``.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.conv_transpose3d(fg.ones((1, 1, 1, 1, 1)), fg.ones((1, 1, 1, 1, 2))).tolist()
    [[[[[1.0, 1.0]]]]]
    """
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)
