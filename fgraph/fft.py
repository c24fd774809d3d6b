"""``torch.fft``'s names: discrete Fourier transforms, differentiable to any order (``fgraph.fft.<name>``).

Every transform resizes its input to ``n``/``s`` (zero-padding or trimming, as PyTorch) and
then runs one of three primitives (:mod:`fgraph.ops.fft`: ``FftC2CBackward0``,
``FftR2CBackward0``, ``FftC2RBackward0``, PyTorch's nodes) whose rules are FFTs. ``norm`` is
``"backward"`` (the default: the forward transform is unscaled, the inverse scaled by
``1/n``), ``"forward"`` (the reverse) or ``"ortho"`` (both by ``1/sqrt(n)``). Real inputs of the
complex transforms are promoted to complex (integers to the default dtype first); half
precision is refused, as XLA's FFTs run in float32/float64.

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([1.0, 2.0, 3.0, 4.0])
    >>> fg.fft.fft(x).real.tolist()
    [10.0, -2.0, -2.0, -2.0]
    >>> fg.fft.irfft(fg.fft.rfft(x), n=4).tolist()
    [1.0, 2.0, 3.0, 4.0]
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import jax.numpy as jnp
import numpy as np

from fgraph.dtypes import get_default_dtype
from fgraph.errors import OpError
from fgraph.ops._linalg_util import check_tensor
from fgraph.ops.complex_parts import conj
from fgraph.ops.fft import fft_c2c, fft_c2r, fft_r2c, to_complex
from fgraph.ops.movement import roll
from fgraph.ops.shape import cat
from fgraph.tensor import Tensor, _wrap, tensor

__all__ = [
    "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
    "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]

Dims = Union[int, Sequence[int], None]
_NORMS = {None: "backward", "backward": "backward", "forward": "forward", "ortho": "ortho"}
_SWAPPED = {"backward": "forward", "forward": "backward", "ortho": "ortho"}  # hfft/ihfft: the other direction


# -- checks and resizing -------------------------------------------------------------------------------
def _norm(norm: Optional[str], op: str) -> str:
    found = _NORMS.get(norm) if isinstance(norm, (str, type(None))) else None
    if found is None:
        raise ValueError(f"fft.{op}: Invalid normalization mode: {norm!r}; use None, 'backward', 'forward' or "
                         "'ortho'.")
    return found


def _input(x: Any, op: str, *, real: bool = False) -> Tensor:
    """``x`` checked and promoted: integers and bools to the default float dtype; ``real``: complex refused."""
    check_tensor(x, f"fft.{op}")
    dtype = np.dtype(x.dtype)
    if dtype.kind in "iub":
        return x.to(get_default_dtype())
    if dtype in (np.float16, jnp.bfloat16):
        raise OpError(f"fft.{op}: {dtype} inputs are not supported (shape {x.shape}); XLA's FFTs run in float32 or "
                      f"float64: convert with .float() first.")
    if real and dtype.kind == "c":
        raise OpError(f"fft.{op}: expects a real input tensor, but got {dtype} (shape {x.shape}); use fft.fft "
                      f"for complex inputs, or pass input.real.")
    return x


def _is_complex(x: Tensor) -> bool:
    return np.dtype(x.dtype).kind == "c"


def _axes(x: Tensor, dim: Dims, s: Optional[Sequence[int]], op: str, default: Optional[tuple] = None) -> tuple:
    """``(dims, sizes)``: non-negative dims and the size each is resized to (``None``: kept)."""
    if dim is None:
        if s is not None:
            dim = tuple(range(-len(s), 0))
        else:
            dim = default if default is not None else tuple(range(x.ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if s is not None and len(s) != len(dims):
        raise ValueError(f"fft.{op}: When given, dim and shape arguments must have the same length; got s={tuple(s)} "
                         f"and dim={dims}.")
    normalized = []
    for d in dims:
        if not isinstance(d, (int, np.integer)) or not -max(x.ndim, 1) <= d < max(x.ndim, 1) or x.ndim == 0:
            raise IndexError(f"fft.{op}: Dimension out of range (expected to be in range of [{-x.ndim}, "
                             f"{x.ndim - 1}], but got {d}) for an input of shape {x.shape}.")
        normalized.append(int(d) % x.ndim)
    if len(set(normalized)) != len(normalized):
        raise RuntimeError(f"fft.{op}: FFT dims must be unique, got dim={dims}.")
    sizes = [None] * len(normalized) if s is None else [None if n == -1 else n for n in s]
    for n in sizes:
        if n is not None and (not isinstance(n, (int, np.integer)) or n < 1):
            raise RuntimeError(f"fft.{op}: Invalid number of data points ({n}) specified; n and s must be >= 1 "
                               "(or -1: keep that dim's size).")
    return tuple(normalized), sizes


def _resize(x: Tensor, dims: tuple, sizes: Sequence[Optional[int]]) -> Tensor:
    """``x`` trimmed or zero-padded (at the end) to ``sizes`` along ``dims``."""
    for d, n in zip(dims, sizes):
        if n is None or n == x.shape[d]:
            continue
        if n < x.shape[d]:
            x = x.narrow(d, 0, n)
        else:
            shape = list(x.shape)
            shape[d] = n - x.shape[d]
            x = cat([x, _wrap(jnp.zeros(shape, x.dtype))], d)
    return x


# -- complex-to-complex ----------------------------------------------------------------------------------
def _c2c(input: Tensor, s: Optional[Sequence[int]], dim: Dims, norm: Optional[str], forward: bool, op: str,
         default: Optional[tuple] = None) -> Tensor:
    mode = _norm(norm, op)
    x = _input(input, op)
    dims, sizes = _axes(x, dim, s, op, default)
    x = _resize(x, dims, sizes)
    if not _is_complex(x):
        if forward:
            return fft_r2c(x, dims, mode, False)  # PyTorch's FftR2CBackward0 for a real input
        x = to_complex(x)
    return fft_c2c(x, dims, mode, forward)


def fft(input: Tensor, n: Optional[int] = None, dim: int = -1, norm: Optional[str] = None) -> Tensor:
    """The one-dimensional discrete Fourier transform of ``input`` along ``dim`` (``torch.fft.fft``).

    Example:
        >>> import fgraph as fg
        >>> fg.fft.fft(fg.tensor([1.0, 0.0, 0.0, 0.0])).real.tolist()
        [1.0, 1.0, 1.0, 1.0]
    """
    return _c2c(input, None if n is None else (n,), dim, norm, True, "fft")


def ifft(input: Tensor, n: Optional[int] = None, dim: int = -1, norm: Optional[str] = None) -> Tensor:
    """The one-dimensional inverse discrete Fourier transform (``torch.fft.ifft``).

    Example:
        >>> import fgraph as fg
        >>> fg.fft.ifft(fg.fft.fft(fg.tensor([1.0, 2.0]))).real.tolist()
        [1.0, 2.0]
    """
    return _c2c(input, None if n is None else (n,), dim, norm, False, "ifft")


def fft2(input: Tensor, s: Optional[Sequence[int]] = None, dim: Dims = (-2, -1), norm: Optional[str] = None) -> Tensor:
    """The two-dimensional discrete Fourier transform over ``dim`` (``torch.fft.fft2``).

    Example:
        >>> import fgraph as fg
        >>> fg.fft.fft2(fg.ones(2, 2)).real.tolist()
        [[4.0, 0.0], [0.0, 0.0]]
    """
    return _c2c(input, s, dim, norm, True, "fft2", (-2, -1))


def ifft2(input: Tensor, s: Optional[Sequence[int]] = None, dim: Dims = (-2, -1),
          norm: Optional[str] = None) -> Tensor:
    """The two-dimensional inverse discrete Fourier transform over ``dim`` (``torch.fft.ifft2``).

    Example:
        >>> import fgraph as fg
        >>> fg.fft.ifft2(fg.fft.fft2(fg.ones(2, 2))).real.tolist()
        [[1.0, 1.0], [1.0, 1.0]]
    """
    return _c2c(input, s, dim, norm, False, "ifft2", (-2, -1))


def fftn(input: Tensor, s: Optional[Sequence[int]] = None, dim: Dims = None, norm: Optional[str] = None) -> Tensor:
    """The N-dimensional discrete Fourier transform over ``dim`` (all dims by default; ``torch.fft.fftn``).

    Example:
        >>> import fgraph as fg
        >>> fg.fft.fftn(fg.ones(2, 2, 2)).real.sum().item()
        8.0
    """
    return _c2c(input, s, dim, norm, True, "fftn")


def ifftn(input: Tensor, s: Optional[Sequence[int]] = None, dim: Dims = None, norm: Optional[str] = None) -> Tensor:
    """The N-dimensional inverse discrete Fourier transform (``torch.fft.ifftn``).

    Example:
        >>> import fgraph as fg
        >>> fg.fft.ifftn(fg.fft.fftn(fg.ones(2, 2))).real.tolist()
        [[1.0, 1.0], [1.0, 1.0]]
    """
    return _c2c(input, s, dim, norm, False, "ifftn")


# -- real-to-complex -------------------------------------------------------------------------------------
def _r2c(input: Tensor, s: Optional[Sequence[int]], dim: Dims, norm: Optional[str], op: str,
         default: Optional[tuple] = None) -> Tensor:
    mode = _norm(norm, op)
    x = _input(input, op, real=True)
    dims, sizes = _axes(x, dim, s, op, default)
    return fft_r2c(_resize(x, dims, sizes), dims, mode, True)


def rfft(input: Tensor, n: Optional[int] = None, dim: int = -1, norm: Optional[str] = None) -> Tensor:
    """The FFT of a real signal: its ``n // 2 + 1`` non-negative frequencies (``torch.fft.rfft``).

    Example:
        >>> import fgraph as fg
        >>> fg.fft.rfft(fg.tensor([1.0, 2.0, 3.0, 4.0])).real.tolist()
        [10.0, -2.0, -2.0]
    """
    return _r2c(input, None if n is None else (n,), dim, norm, "rfft")


def rfft2(input: Tensor, s: Optional[Sequence[int]] = None, dim: Dims = (-2, -1),
          norm: Optional[str] = None) -> Tensor:
    """The two-dimensional FFT of a real signal, one-sided in the last of ``dim`` (``torch.fft.rfft2``).

    Example:
        >>> import fgraph as fg
        >>> fg.fft.rfft2(fg.ones(2, 4)).shape
        (2, 3)
    """
    return _r2c(input, s, dim, norm, "rfft2", (-2, -1))


def rfftn(input: Tensor, s: Optional[Sequence[int]] = None, dim: Dims = None, norm: Optional[str] = None) -> Tensor:
    """The N-dimensional FFT of a real signal, one-sided in the last of ``dim`` (``torch.fft.rfftn``).

    Example:
        >>> import fgraph as fg
        >>> fg.fft.rfftn(fg.ones(2, 2, 4)).shape
        (2, 2, 3)
    """
    return _r2c(input, s, dim, norm, "rfftn")


def ihfft(input: Tensor, n: Optional[int] = None, dim: int = -1, norm: Optional[str] = None) -> Tensor:
    """The inverse of :func:`hfft`: the one-sided inverse FFT of a real signal (``torch.fft.ihfft``).

    Example:
        >>> import fgraph as fg
        >>> fg.fft.ihfft(fg.tensor([4.0, 0.0, 0.0, 0.0])).real.tolist()
        [1.0, 1.0, 1.0]
    """
    mode = _norm(norm, "ihfft")
    return conj(_r2c(input, None if n is None else (n,), dim, _SWAPPED[mode], "ihfft"))


def ihfft2(input: Tensor, s: Optional[Sequence[int]] = None, dim: Dims = (-2, -1),
           norm: Optional[str] = None) -> Tensor:
    """The inverse of :func:`hfft2`: the 2-D inverse FFT of a real signal, one-sided in the last dim
    (``torch.fft.ihfft2``).

    Example:
        >>> import fgraph as fg
        >>> fg.fft.ihfft2(fg.ones(2, 4)).real.tolist()
        [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    """
    mode = _norm(norm, "ihfft2")
    return conj(_r2c(input, s, dim, _SWAPPED[mode], "ihfft2", (-2, -1)))


def ihfftn(input: Tensor, s: Optional[Sequence[int]] = None, dim: Dims = None, norm: Optional[str] = None) -> Tensor:
    """The inverse of :func:`hfftn`: the N-D inverse FFT of a real signal, one-sided in the last of ``dim``
    (``torch.fft.ihfftn``).

    Example:
        >>> import fgraph as fg
        >>> fg.fft.ihfftn(fg.ones(2, 2, 4)).shape
        (2, 2, 3)
    """
    mode = _norm(norm, "ihfftn")
    return conj(_r2c(input, s, dim, _SWAPPED[mode], "ihfftn"))


# -- complex-to-real -------------------------------------------------------------------------------------
def _c2r(input: Tensor, s: Optional[Sequence[int]], dim: Dims, norm: Optional[str], op: str,
         default: Optional[tuple] = None) -> Tensor:
    mode = _norm(norm, op)
    x = _input(input, op)
    dims, sizes = _axes(x, dim, s, op, default)
    last = sizes[-1] if sizes[-1] is not None else 2 * (x.shape[dims[-1]] - 1)
    if last < 1:
        raise RuntimeError(f"fft.{op}: Invalid number of data points ({last}) specified; an input of "
                           f"{x.shape[dims[-1]]} bins along dim {dims[-1]} needs n >= 1 given explicitly.")
    x = _resize(to_complex(x), dims, [*sizes[:-1], last // 2 + 1])
    return fft_c2r(x, dims, mode, last)


def irfft(input: Tensor, n: Optional[int] = None, dim: int = -1, norm: Optional[str] = None) -> Tensor:
    """The inverse of :func:`rfft`: a real signal of length ``n`` (default ``2 * (bins - 1)``; ``torch.fft.irfft``).

    Example:
        >>> import fgraph as fg
        >>> fg.fft.irfft(fg.fft.rfft(fg.tensor([1.0, 2.0, 3.0])), n=3).tolist()
        [1.0, 2.0, 3.0]
    """
    return _c2r(input, None if n is None else (n,), dim, norm, "irfft")


def irfft2(input: Tensor, s: Optional[Sequence[int]] = None, dim: Dims = (-2, -1),
           norm: Optional[str] = None) -> Tensor:
    """The inverse of :func:`rfft2` (``torch.fft.irfft2``).

    Example:
        >>> import fgraph as fg
        >>> fg.fft.irfft2(fg.fft.rfft2(fg.ones(2, 4))).tolist()
        [[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]]
    """
    return _c2r(input, s, dim, norm, "irfft2", (-2, -1))


def irfftn(input: Tensor, s: Optional[Sequence[int]] = None, dim: Dims = None, norm: Optional[str] = None) -> Tensor:
    """The inverse of :func:`rfftn` (``torch.fft.irfftn``).

    Example:
        >>> import fgraph as fg
        >>> fg.fft.irfftn(fg.fft.rfftn(fg.ones(2, 4))).shape
        (2, 4)
    """
    return _c2r(input, s, dim, norm, "irfftn")


def hfft(input: Tensor, n: Optional[int] = None, dim: int = -1, norm: Optional[str] = None) -> Tensor:
    """The FFT of a Hermitian-symmetric signal given by its one-sided half: a real spectrum (``torch.fft.hfft``).

    Example:
        >>> import fgraph as fg
        >>> fg.fft.hfft(fg.tensor([1.0, 1.0, 1.0]), n=4).tolist()
        [4.0, 0.0, 0.0, 0.0]
    """
    mode = _norm(norm, "hfft")
    x = _input(input, "hfft")
    return _c2r(conj(x) if _is_complex(x) else x, None if n is None else (n,), dim, _SWAPPED[mode], "hfft")


# -- frequencies and shifts -----------------------------------------------------------------------------
def _hermitian(input: Tensor, s: Optional[Sequence[int]], dim: Dims, norm: Optional[str], op: str,
               default: Optional[tuple] = None) -> Tensor:
    # the FFT of a Hermitian signal is the inverse real FFT of its conjugate, scaled the other way
    mode = _norm(norm, op)
    x = _input(input, op)
    return _c2r(conj(x) if _is_complex(x) else x, s, dim, _SWAPPED[mode], op, default)


def hfft2(input: Tensor, s: Optional[Sequence[int]] = None, dim: Dims = (-2, -1),
          norm: Optional[str] = None) -> Tensor:
    """The 2-D FFT of a Hermitian-symmetric signal given by its one-sided half in the last dim: a real
    spectrum (``torch.fft.hfft2``; ``s[-1]`` defaults to ``2 * (bins - 1)``).

    Example:
        >>> import fgraph as fg
        >>> fg.fft.hfft2(fg.fft.ihfft2(fg.ones(2, 4))).tolist()
        [[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]]
    """
    return _hermitian(input, s, dim, norm, "hfft2", (-2, -1))


def hfftn(input: Tensor, s: Optional[Sequence[int]] = None, dim: Dims = None, norm: Optional[str] = None) -> Tensor:
    """The N-D FFT of a Hermitian-symmetric signal given by its one-sided half in the last of ``dim``
    (``torch.fft.hfftn``).

    Example:
        >>> import fgraph as fg
        >>> fg.fft.hfftn(fg.ones(2, 2, 3)).shape
        (2, 2, 4)
    """
    return _hermitian(input, s, dim, norm, "hfftn")


def _frequencies(values: np.ndarray, dtype: Any, requires_grad: bool, device: Any = None) -> Tensor:
    return tensor(values, dtype=get_default_dtype() if dtype is None else dtype, requires_grad=requires_grad,
                  device=device)


def fftfreq(n: int, d: float = 1.0, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """The sample frequencies of an ``n``-point FFT with sample spacing ``d`` (``torch.fft.fftfreq``).

    Example:
        >>> import fgraph as fg
        >>> fg.fft.fftfreq(4).tolist()
        [0.0, 0.25, -0.5, -0.25]
    """
    return _frequencies(np.fft.fftfreq(n, d), dtype, requires_grad, device)


def rfftfreq(n: int, d: float = 1.0, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """The sample frequencies of :func:`rfft` of an ``n``-point signal (``torch.fft.rfftfreq``).

    Example:
        >>> import fgraph as fg
        >>> fg.fft.rfftfreq(4).tolist()
        [0.0, 0.25, 0.5]
    """
    return _frequencies(np.fft.rfftfreq(n, d), dtype, requires_grad, device)


def _shift(input: Tensor, dim: Dims, sign: int, op: str) -> Tensor:
    check_tensor(input, f"fft.{op}")
    dims = tuple(range(input.ndim)) if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    if not dims:
        return input
    return roll(input, tuple(sign * (input.shape[d] // 2) for d in dims), dims)


def fftshift(input: Tensor, dim: Dims = None) -> Tensor:
    """The zero frequency moved to the middle of ``dim`` (all dims by default; ``torch.fft.fftshift``).

    Example:
        >>> import fgraph as fg
        >>> fg.fft.fftshift(fg.fft.fftfreq(4)).tolist()
        [-0.5, -0.25, 0.0, 0.25]
    """
    return _shift(input, dim, 1, "fftshift")


def ifftshift(input: Tensor, dim: Dims = None) -> Tensor:
    """The inverse of :func:`fftshift` (``torch.fft.ifftshift``).

    Example:
        >>> import fgraph as fg
        >>> fg.fft.ifftshift(fg.fft.fftshift(fg.fft.fftfreq(5))).tolist() == fg.fft.fftfreq(5).tolist()
        True
    """
    return _shift(input, dim, -1, "ifftshift")
