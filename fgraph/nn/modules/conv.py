"""Convolution layers: ``Conv1d/2d/3d`` and ``ConvTranspose1d/2d/3d`` (PyTorch's arguments, shapes and init).

Weights have torch's layouts, ``(out_channels, in_channels // groups, *kernel_size)``
for convolutions and ``(in_channels, out_channels // groups, *kernel_size)`` for
transposed ones, so a torch ``state_dict`` loads as is. Both are initialised as in
torch: ``kaiming_uniform_(weight, a=sqrt(5))`` (``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``)
and the bias ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``, ``fan_in = weight.shape[1] * prod(kernel_size)``.

``padding_mode`` other than ``'zeros'`` pads with :func:`fgraph.nn.functional.pad`
(``reflect``, ``replicate``, ``circular``) and convolves without padding, as torch.
Arguments are checked when the layer is built (torch defers some checks to the
first call), and a wrong input rank or channel count raises an ``OpError`` naming
the layer.

Example:
    >>> import fgraph as fg
    >>> conv = fg.nn.Conv2d(3, 8, 3, padding=1)
    >>> conv
    Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
    >>> conv(fg.ones(2, 3, 5, 5)).shape
    (2, 8, 5, 5)
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

from fgraph.errors import OpError
from fgraph.nn import functional as F
from fgraph.nn import init
from fgraph.nn.functional._utils import int_tuple
from fgraph.nn.modules._factory import check_positive_int, empty_parameter
from fgraph.nn.modules.module import Module
from fgraph.tensor import Tensor

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

IntOrTuple = Union[int, Sequence[int]]
_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")
_SPATIAL_NAMES = {1: "L", 2: "H, W", 3: "D, H, W"}


def check_input(layer: str, input: Any, n: int, channels: Optional[int] = None) -> None:
    """An error naming ``layer`` unless ``input`` is ``(N, C, *spatial)`` or ``(C, *spatial)`` with ``n`` spatial
    dims and ``channels`` channels (when given). Shared by the convolution, pooling and upsampling layers."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{layer}: expected an fgraph Tensor as input, got {type(input).__name__}; "
                        "wrap it with fg.tensor(...).")
    c = "C" if channels is None else str(channels)
    expected = f"(N, {c}, {_SPATIAL_NAMES[n]}) or ({c}, {_SPATIAL_NAMES[n]})"
    if input.ndim not in (n + 1, n + 2):
        raise OpError(f"{layer}: expected a {n + 1}-D (unbatched) or {n + 2}-D (batched) input {expected}, "
                      f"got shape {tuple(input.shape)}.")
    if channels is not None and input.shape[-n - 1] != channels:
        raise OpError(f"{layer}: expected input {expected} with {channels} channels in dim {input.ndim - n - 1}, "
                      f"got shape {tuple(input.shape)} ({input.shape[-n - 1]} channels); fix the channel "
                      "dim of the input or the layer's in_channels.")


class _ConvNd(Module):
    """Shared construction, initialisation and repr of the convolution layers."""

    _n: int = 0

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple, stride: IntOrTuple,
                 padding: Union[str, IntOrTuple], dilation: IntOrTuple, transposed: bool,
                 output_padding: IntOrTuple, groups: int, bias: bool, padding_mode: str, device: Any,
                 dtype: Any) -> None:
        super().__init__()
        name, n = type(self).__name__, self._n
        check_positive_int(in_channels, "in_channels", name)
        check_positive_int(out_channels, "out_channels", name)
        check_positive_int(groups, "groups", name)
        if in_channels % groups:
            raise ValueError(f"{name}: in_channels ({in_channels}) must be divisible by groups ({groups}).")
        if out_channels % groups:
            raise ValueError(f"{name}: out_channels ({out_channels}) must be divisible by groups ({groups}).")
        kernel_size = int_tuple(kernel_size, n, name, "kernel_size")
        stride = int_tuple(stride, n, name, "stride")
        dilation = int_tuple(dilation, n, name, "dilation")
        output_padding = int_tuple(output_padding, n, name, "output_padding")
        if min(kernel_size + stride + dilation) <= 0:
            raise ValueError(f"{name}: kernel_size {kernel_size}, stride {stride} and dilation {dilation} must be "
                             "positive.")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"{name}: invalid padding string {padding!r}, should be one of 'same', 'valid' "
                                 "(or an int or a tuple of ints).")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError(f"{name}: padding='same' is not supported for strided convolutions "
                                 f"(stride={stride}); use an explicit padding.")
        else:
            padding = int_tuple(padding, n, name, "padding")
            if min(padding) < 0:
                raise ValueError(f"{name}: padding {padding} must be non-negative.")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {_PADDING_MODES}, but got "
                             f"padding_mode={padding_mode!r}.")
        if min(output_padding) < 0 or any(o >= s and o >= d for o, s, d in zip(output_padding, stride, dilation)):
            raise ValueError(f"{name}: output_padding {output_padding} must be non-negative and smaller than "
                             f"either stride {stride} or dilation {dilation}.")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's amounts (last dim first) for the non-'zeros' padding modes; 'same' puts the odd one on the right
        if isinstance(padding, str):
            pads = [0, 0] * n
            if padding == "same":
                for i, (d, k) in enumerate(zip(dilation, kernel_size)):
                    total = d * (k - 1)
                    pads[2 * (n - 1 - i)], pads[2 * (n - 1 - i) + 1] = total // 2, total - total // 2
        else:
            pads = [p for p in reversed(padding) for _ in range(2)]
        self._reversed_padding_repeated_twice = pads
        shape = (in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups)
        self.weight = empty_parameter(shape + kernel_size, dtype, device, name)
        if bias:
            self.bias = empty_parameter((out_channels,), dtype, device, name)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw new values from torch's default distribution (the default generator)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        n = self._n
        padding = self.padding
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if padding != (0,) * n:
            s += f", padding={padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    _functional: Any = None

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple, stride: IntOrTuple = 1,
                 padding: Union[str, IntOrTuple] = 0, dilation: IntOrTuple = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups, bias,
                         padding_mode, device, dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
        check_input(type(self).__name__, input, self._n, self.in_channels)
        if self.padding_mode != "zeros":
            input = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return self._functional(input, weight, bias, self.stride, 0, self.dilation, self.groups)
        return self._functional(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution (cross-correlation) over ``(N, C_in, L)`` or ``(C_in, L)``; ``weight`` is
    ``(out_channels, in_channels // groups, k)``.

    Example:
        >>> import fgraph as fg
        >>> conv = fg.nn.Conv1d(2, 4, 3, stride=2, padding_mode="circular", padding=1)
        >>> conv
        Conv1d(2, 4, kernel_size=(3,), stride=(2,), padding=(1,), padding_mode=circular)
        >>> conv(fg.ones(5, 2, 8)).shape
        (5, 4, 4)
    """

    _n = 1
    _functional = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-D convolution over ``(N, C_in, H, W)`` or ``(C_in, H, W)``; ``weight`` is
    ``(out_channels, in_channels // groups, kh, kw)``.

    Example:
        >>> import fgraph as fg
        >>> conv = fg.nn.Conv2d(4, 4, (3, 1), padding="same", groups=2, bias=False)
        >>> conv
        Conv2d(4, 4, kernel_size=(3, 1), stride=(1, 1), padding=same, groups=2, bias=False)
        >>> conv.weight.shape, conv(fg.ones(4, 6, 6)).shape
        ((4, 2, 3, 1), (4, 6, 6))
    """

    _n = 2
    _functional = staticmethod(F.conv2d)


class Conv3d(_Conv):
    """3-D convolution over ``(N, C_in, D, H, W)`` or ``(C_in, D, H, W)``; ``weight`` is
    ``(out_channels, in_channels // groups, kd, kh, kw)``.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.Conv3d(1, 2, 2, dilation=(1, 2, 1))(fg.ones(1, 1, 3, 4, 3)).shape
        (1, 2, 2, 2, 2)
    """

    _n = 3
    _functional = staticmethod(F.conv3d)


class _ConvTranspose(_ConvNd):
    _functional: Any = None

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple, stride: IntOrTuple = 1,
                 padding: IntOrTuple = 0, output_padding: IntOrTuple = 0, groups: int = 1, bias: bool = True,
                 dilation: IntOrTuple = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__} '
                             f"(got padding_mode={padding_mode!r}).")
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be an int or a tuple of ints, got {padding!r} "
                             "(transposed convolutions take no padding strings).")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, True, output_padding,
                         groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input: Tensor, output_size: Optional[Sequence[int]]) -> tuple[int, ...]:
        """The ``output_padding`` that gives ``output_size`` (torch's rule), or the layer's own without one."""
        if output_size is None:
            return self.output_padding
        name, n = type(self).__name__, self._n
        non_spatial = 2 if input.ndim == n + 2 else 1
        output_size = tuple(int(s) for s in output_size)
        if len(output_size) == non_spatial + n:
            output_size = output_size[non_spatial:]
        if len(output_size) != n:
            raise ValueError(f"{name}: for {input.ndim}-D input, output_size must have {n} or {non_spatial + n} "
                             f"elements (got {len(output_size)}).")
        spatial = tuple(input.shape[non_spatial:])
        min_sizes = tuple((L - 1) * s - 2 * p + d * (k - 1) + 1 for L, s, p, d, k in
                          zip(spatial, self.stride, self.padding, self.dilation, self.kernel_size))
        max_sizes = tuple(m + s - 1 for m, s in zip(min_sizes, self.stride))
        if any(not lo <= size <= hi for size, lo, hi in zip(output_size, min_sizes, max_sizes)):
            raise ValueError(f"{name}: requested an output size of {list(output_size)}, but valid sizes range "
                             f"from {list(min_sizes)} to {list(max_sizes)} (for an input of {spatial}).")
        return tuple(size - lo for size, lo in zip(output_size, min_sizes))

    def forward(self, input: Tensor, output_size: Optional[Sequence[int]] = None) -> Tensor:
        check_input(type(self).__name__, input, self._n, self.in_channels)
        output_padding = self._output_padding(input, output_size)
        return self._functional(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                                self.groups, self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """1-D transposed convolution (the gradient of ``Conv1d`` w.r.t. its input) over ``(N, C_in, L)``;
    ``weight`` is ``(in_channels, out_channels // groups, k)``. ``forward(input, output_size=None)``: an
    ``output_size`` picks the ``output_padding`` that gives it, as torch.

    Example:
        >>> import fgraph as fg
        >>> up = fg.nn.ConvTranspose1d(2, 3, 3, stride=2)
        >>> up
        ConvTranspose1d(2, 3, kernel_size=(3,), stride=(2,))
        >>> up(fg.ones(1, 2, 5)).shape, up(fg.ones(1, 2, 5), output_size=[12]).shape
        ((1, 3, 11), (1, 3, 12))
    """

    _n = 1
    _functional = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """2-D transposed convolution over ``(N, C_in, H, W)``; ``weight`` is ``(in_channels, out_channels // groups,
    kh, kw)``.

    Example:
        >>> import fgraph as fg
        >>> up = fg.nn.ConvTranspose2d(4, 2, 2, stride=2, groups=2)
        >>> up.weight.shape, up(fg.ones(1, 4, 3, 3)).shape
        ((4, 1, 2, 2), (1, 2, 6, 6))
    """

    _n = 2
    _functional = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTranspose):
    """3-D transposed convolution over ``(N, C_in, D, H, W)``; ``weight`` is ``(in_channels,
    out_channels // groups, kd, kh, kw)``.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.ConvTranspose3d(1, 1, 2, stride=(1, 2, 2))(fg.ones(1, 1, 2, 2, 2)).shape
        (1, 1, 3, 4, 4)
    """

    _n = 3
    _functional = staticmethod(F.conv_transpose3d)
