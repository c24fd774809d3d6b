"""Short-time Fourier transforms: ``stft`` and its inverse ``istft`` (``torch.stft``/``torch.istft``, ``Tensor.stft``).

``stft`` cuts the (reflect-padded, when ``center``) signal into frames of ``n_fft`` samples,
``hop_length`` apart, multiplies each by the window (zero-padded to ``n_fft``, centred) and
takes its FFT: the result is ``(..., n_fft // 2 + 1, n_frames)`` for a one-sided transform of a
real signal. ``istft`` inverts it: inverse FFTs of the frames, windowed again, overlap-added
and divided by the overlap-added squared window. Both are gathers, scatter-adds and
``fgraph.fft`` transforms, so they are differentiable to any order and traceable.

Example:
    >>> import fgraph as fg
    >>> x = fg.sin(fg.arange(64.0) * 0.3)
    >>> window = fg.hann_window(16)
    >>> spec = fg.stft(x, 16, hop_length=4, window=window, return_complex=True)
    >>> spec.shape
    (9, 17)
    >>> back = fg.istft(spec, 16, hop_length=4, window=window, length=64)
    >>> bool(((back - x).abs() < 1e-5).all())
    True
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from fgraph.errors import OpError
from fgraph.ops._index_checks import is_traced
from fgraph.tensor import Tensor, type_name

__all__ = ["stft", "istft", "hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


# -- windows (torch.hann_window, ...): leaves, like the other creation functions ------------------------------------
def _make_window(values: Any, window_length: int, periodic: bool, dtype: Any, requires_grad: bool, op: str,
                 device: Any = None) -> Tensor:
    import fgraph as fg

    if not isinstance(window_length, (int, np.integer)) or window_length < 0:
        raise OpError(f"{op}: window_length must be a non-negative int, got {window_length!r}.")
    if window_length <= 1:
        array = np.ones(window_length)
    else:
        n = window_length + 1 if periodic else window_length
        array = values(n)[:window_length]
    return fg.tensor(array, dtype=dtype if dtype is not None else fg.get_default_dtype(), requires_grad=requires_grad,
                     device=device)


def hann_window(window_length: int, periodic: bool = True, *, dtype: Any = None, device: Any = None,
                requires_grad: bool = False) -> Tensor:
    """``0.5 - 0.5 cos(2 pi n / N)`` (``torch.hann_window``; ``periodic`` drops the last point of ``N + 1``).

    Example:
        >>> import fgraph as fg
        >>> fg.hann_window(4).tolist()
        [0.0, 0.5, 1.0, 0.5]
    """
    return _make_window(np.hanning, window_length, periodic, dtype, requires_grad, "hann_window", device)


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54, beta: float = 0.46, *,
                   dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """``alpha - beta cos(2 pi n / N)`` (``torch.hamming_window``)."""
    def values(n: int) -> np.ndarray:
        return alpha - beta * np.cos(2 * np.pi * np.arange(n) / (n - 1))

    return _make_window(values, window_length, periodic, dtype, requires_grad, "hamming_window", device)


def blackman_window(window_length: int, periodic: bool = True, *, dtype: Any = None, device: Any = None,
                    requires_grad: bool = False) -> Tensor:
    """``0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)`` (``torch.blackman_window``)."""
    return _make_window(np.blackman, window_length, periodic, dtype, requires_grad, "blackman_window", device)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype: Any = None, device: Any = None,
                    requires_grad: bool = False) -> Tensor:
    """The triangular window ``1 - |2n / N - 1|`` (``torch.bartlett_window``)."""
    return _make_window(np.bartlett, window_length, periodic, dtype, requires_grad, "bartlett_window", device)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype: Any = None,
                  device: Any = None, requires_grad: bool = False) -> Tensor:
    """``I0(beta sqrt(1 - (2n / N - 1)^2)) / I0(beta)`` (``torch.kaiser_window``)."""
    def values(n: int) -> np.ndarray:
        return np.kaiser(n, beta)

    return _make_window(values, window_length, periodic, dtype, requires_grad, "kaiser_window", device)


# -- stft / istft -----------------------------------------------------------------------------------------------------
def _window(window: Optional[Tensor], n_fft: int, win_length: int, like: Tensor, op: str) -> Tensor:
    """The window, zero-padded on both sides to ``n_fft`` (ones of ``win_length`` when none is given)."""
    import fgraph as fg

    if window is None:
        window = fg.ones(win_length, dtype=fg.real(like).dtype if like.is_complex() else like.dtype)
    elif not isinstance(window, Tensor) or window.dim() != 1 or window.shape[0] != win_length:
        shape = tuple(window.shape) if isinstance(window, Tensor) else type_name(window)
        raise OpError(f"{op}: expected a 1-D window tensor of size equal to win_length={win_length}, but got window "
                      f"with size {shape}.")
    left = (n_fft - win_length) // 2
    if left or n_fft - win_length - left:
        window = fg.nn.functional.pad(window, (left, n_fft - win_length - left))
    return window


def _lengths(n_fft: int, hop_length: Optional[int], win_length: Optional[int], op: str) -> tuple:
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if not isinstance(n_fft, int) or n_fft <= 0:
        raise OpError(f"{op}: expected 0 < n_fft, but got n_fft={n_fft!r}.")
    if hop <= 0:
        raise OpError(f"{op}: expected hop_length > 0, but got hop_length={hop}.")
    if not 0 < win <= n_fft:
        raise OpError(f"{op}: expected 0 < win_length <= n_fft, but got win_length={win} (n_fft={n_fft}).")
    return hop, win


def _frame_index(n_frames: int, n_fft: int, hop: int) -> np.ndarray:
    return (np.arange(n_frames)[:, None] * hop + np.arange(n_fft)[None, :]).astype(np.int32)


def stft(input: Tensor, n_fft: int, hop_length: Optional[int] = None, win_length: Optional[int] = None,
         window: Optional[Tensor] = None, center: bool = True, pad_mode: str = "reflect", normalized: bool = False,
         onesided: Optional[bool] = None, return_complex: Optional[bool] = None) -> Tensor:
    """The short-time Fourier transform of a ``(L,)`` or ``(B, L)`` signal: ``(B?, freqs, n_frames)``, complex.

    As ``torch.stft``: ``hop_length`` defaults to ``n_fft // 4``, ``win_length`` to ``n_fft``, the
    window to ones; ``center`` pads ``n_fft // 2`` on both sides with ``pad_mode``; ``normalized``
    scales by ``n_fft ** -0.5``; ``onesided`` (default for real signals and windows) keeps the
    ``n_fft // 2 + 1`` non-negative frequencies. ``return_complex`` must be given for real
    inputs (``True``; ``False`` returns ``view_as_real`` of the result, as torch's deprecated form).
    """
    import fgraph as fg

    if not isinstance(input, Tensor):
        raise TypeError(f"stft: input must be a Tensor, got {type_name(input)}")
    if input.dim() not in (1, 2):
        raise OpError(f"stft: expected a 1D or 2D tensor, but got a tensor of shape {tuple(input.shape)}.")
    complex_input = input.is_complex() or (window is not None and window.is_complex())
    if return_complex is None:
        if not complex_input:
            raise OpError("stft requires the return_complex parameter be given for real inputs, and will further "
                          "require that return_complex=True in a future PyTorch release.")
        return_complex = True
    hop, win = _lengths(n_fft, hop_length, win_length, "stft")
    x = input if input.is_floating_point() or input.is_complex() else input.to(fg.get_default_dtype())
    batched = x.dim() == 2
    if not batched:
        x = x.unsqueeze(0)
    if center:
        pad = n_fft // 2
        x = fg.nn.functional.pad(x.unsqueeze(1), (pad, pad), mode=pad_mode).squeeze(1)
    length = x.shape[-1]
    if not 0 < n_fft <= length:
        raise OpError(f"stft: expected 0 < n_fft < {length}, but got n_fft={n_fft}.")
    n_frames = 1 + (length - n_fft) // hop
    frames = x[:, fg.tensor(_frame_index(n_frames, n_fft, hop))] * _window(window, n_fft, win, x, "stft")
    if onesided is None:
        onesided = not complex_input
    if onesided and complex_input:
        raise OpError("stft: cannot have onesided output if window or input is complex.")
    norm = "ortho" if normalized else "backward"
    spec = fg.fft.rfft(frames, dim=-1, norm=norm) if onesided else fg.fft.fft(frames, dim=-1, norm=norm)
    spec = spec.transpose(-1, -2)
    if not batched:
        spec = spec.squeeze(0)
    return spec if return_complex else fg.view_as_real(spec)


def istft(input: Tensor, n_fft: int, hop_length: Optional[int] = None, win_length: Optional[int] = None,
          window: Optional[Tensor] = None, center: bool = True, normalized: bool = False,
          onesided: Optional[bool] = None, length: Optional[int] = None, return_complex: bool = False) -> Tensor:
    """The inverse of :func:`stft` (``torch.istft``): overlap-add of the windowed inverse FFTs of the frames,
    divided by the overlap-added squared window; ``length`` trims or zero-pads the result.

    Raises an ``OpError`` when the window's overlap-add is (nearly) zero somewhere: that signal
    cannot be recovered (the NOLA condition), as torch does.
    """
    import fgraph as fg

    if not isinstance(input, Tensor) or not input.is_complex():
        got = input.dtype if isinstance(input, Tensor) else type_name(input)
        raise OpError(f"istft requires a complex-valued input tensor (the output of stft(..., return_complex=True)), "
                      f"got {got}.")
    if input.dim() not in (2, 3):
        raise OpError(f"istft: expected a tensor with 2 or 3 dimensions of complex dtype, but got shape "
                      f"{tuple(input.shape)}.")
    hop, win = _lengths(n_fft, hop_length, win_length, "istft")
    batched = input.dim() == 3
    spec = input if batched else input.unsqueeze(0)
    n_freqs, n_frames = spec.shape[-2], spec.shape[-1]
    if onesided is None:
        onesided = n_freqs != n_fft
    expected = n_fft // 2 + 1 if onesided else n_fft
    if n_freqs != expected:
        raise OpError(f"istft: expected the frequency dimension (3rd to the last) of the input tensor to match "
                      f"n_fft / 2 + 1 when onesided=True, but got {n_freqs}" if onesided else
                      f"istft: expected the frequency dimension to be n_fft={n_fft} when onesided=False, got {n_freqs}")
    if return_complex and onesided:
        raise OpError("istft: cannot have onesided output if the window or input is complex (return_complex=True).")
    norm = "ortho" if normalized else "backward"
    frames = spec.transpose(-1, -2)  # (B, n_frames, freqs)
    frames = fg.fft.irfft(frames, n=n_fft, dim=-1, norm=norm) if onesided else \
        fg.fft.ifft(frames, n=n_fft, dim=-1, norm=norm)
    if not return_complex and frames.is_complex():
        frames = fg.real(frames)
    w = _window(window, n_fft, win, fg.real(spec) if spec.is_complex() else spec, "istft")
    frames = frames * w
    total = n_fft + hop * (n_frames - 1)
    index = fg.tensor(_frame_index(n_frames, n_fft, hop).reshape(-1))
    signal = fg.zeros((frames.shape[0], total), dtype=frames.dtype).index_add(-1, index,
                                                                              frames.reshape(frames.shape[0], -1))
    envelope = fg.zeros(total, dtype=w.dtype).index_add(0, index, (w * w).expand(n_frames, n_fft).reshape(-1))
    start = n_fft // 2 if center else 0
    end = total - n_fft // 2 if center else total
    if length is not None:
        end = start + length
    signal = signal[:, start:min(end, total)]
    envelope = envelope[start:min(end, total)]
    if not is_traced(envelope) and bool((envelope.abs() < 1e-11).any()):
        raise OpError("istft: window overlap add min: the overlap-added squared window is (nearly) zero somewhere, "
                      "so the signal cannot be recovered; use a hop_length small enough for the window to overlap "
                      "(the NOLA condition).")
    signal = signal / envelope
    if end > total:  # a longer length: zero-padded at the end
        signal = fg.nn.functional.pad(signal, (0, end - total))
    return signal if batched else signal.squeeze(0)


TENSOR_METHODS = {"stft": stft, "istft": istft}
