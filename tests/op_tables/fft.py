"""Discrete Fourier transforms (fgraph/fft.py, fgraph/ops/fft.py) against ``jax.numpy.fft``, and against
``torch.fft`` (``TORCH``): values, first derivatives, Hessian-vector products and tangents, on real inputs
(the float runs) and complex ones (the complex runs), with padding and trimming by ``n``/``s``, every
``norm``, odd and even lengths (the Hermitian transforms treat the Nyquist bin apart). ``ifft``,
``fft2``, ``ifft2``, ``rfft2``, ``irfft2`` are these entries' primitives with other arguments
(``tests/test_fft.py`` checks their values).

A transform is linear, so its Hessian-vector product is zero: the second-order checks are there for
the FFTs' rules' own rules (a rule made of FFTs must itself be differentiable), which the
tables' quadratic loss ``real(f(x) * w)`` does not reach; ``_squared`` entries square the spectrum
first, so that second derivatives go through the rules of the rules.
"""
import jax.numpy as jnp

import fgraph as fg
from op_harness import REAL, Case, OpEntry, cases, torch

#: Every rule here is made of FFTs, so every order is available.
FIRST_ORDER_ONLY: dict = {}


def _e(name, fg_fn, ref_fn, case_strategy) -> OpEntry:
    return OpEntry(name, fg_fn, ref_fn, 1, case_strategy, REAL)


def _squared(out):
    return out * out


FFT_CASES = cases(Case(((3, 4),), dict(n=6, dim=0, norm="ortho")),  # zero-padded
                  Case(((6,),), dict(n=4, dim=0, norm="forward")))  # trimmed
FFTN_CASES = cases(Case(((2, 3, 4),), dict(s=None, dim=None, norm=None)),
                   Case(((2, 3, 4),), dict(s=(3, 5), dim=(0, 2), norm="ortho")))
RFFT_CASES = cases(Case(((5, 2),), dict(n=7, dim=0, norm="ortho")))  # odd length, padded
IRFFT_CASES = cases(Case(((2, 4),), dict(n=None, dim=-1, norm=None)),  # n = 6: a Nyquist bin
                    Case(((4, 2),), dict(n=7, dim=0, norm="forward")))  # odd: none
RFFTN_CASES = cases(Case(((2, 3, 4),), dict(s=(3, 6), dim=(0, 2), norm="backward")))
IRFFTN_CASES = cases(Case(((2, 3, 3),), dict(s=(3, 4), dim=(1, 2), norm="ortho")))
HFFT_CASES = cases(Case(((3,),), dict(n=5, dim=0, norm="ortho")))
SHIFT_CASES = cases(Case(((3, 5),), dict(dim=None)))


def _fft_fg(x, n, dim, norm):
    return _squared(fg.fft.fft(x, n=n, dim=dim, norm=norm))


def _fft_ref(x, n, dim, norm):
    return _squared(jnp.fft.fft(x, n=n, axis=dim, norm=norm))


def _fftn_fg(x, s, dim, norm, inverse=False):
    return _squared((fg.fft.ifftn if inverse else fg.fft.fftn)(x, s=s, dim=dim, norm=norm))


def _fftn_ref(x, s, dim, norm, inverse=False):
    return _squared((jnp.fft.ifftn if inverse else jnp.fft.fftn)(x, s=s, axes=dim, norm=norm))


TABLE = [
    _e("fft", _fft_fg, _fft_ref, FFT_CASES),
    _e("fftn", _fftn_fg, _fftn_ref, FFTN_CASES),
    _e("ifftn", lambda x, s, dim, norm: _fftn_fg(x, s, dim, norm, True),
       lambda x, s, dim, norm: _fftn_ref(x, s, dim, norm, True), FFTN_CASES),
    _e("rfft", lambda x, n, dim, norm: _squared(fg.fft.rfft(x, n=n, dim=dim, norm=norm)),
       lambda x, n, dim, norm: _squared(jnp.fft.rfft(x, n=n, axis=dim, norm=norm)), RFFT_CASES),
    _e("irfft", lambda x, n, dim, norm: _squared(fg.fft.irfft(x, n=n, dim=dim, norm=norm)),
       lambda x, n, dim, norm: _squared(jnp.fft.irfft(x, n=n, axis=dim, norm=norm)), IRFFT_CASES),
    _e("rfftn", lambda x, s, dim, norm: _squared(fg.fft.rfftn(x, s=s, dim=dim, norm=norm)),
       lambda x, s, dim, norm: _squared(jnp.fft.rfftn(x, s=s, axes=dim, norm=norm)), RFFTN_CASES),
    _e("irfftn", lambda x, s, dim, norm: _squared(fg.fft.irfftn(x, s=s, dim=dim, norm=norm)),
       lambda x, s, dim, norm: _squared(jnp.fft.irfftn(x, s=s, axes=dim, norm=norm)), IRFFTN_CASES),
    _e("hfft", lambda x, n, dim, norm: _squared(fg.fft.hfft(x, n=n, dim=dim, norm=norm)),
       lambda x, n, dim, norm: _squared(jnp.fft.hfft(x, n=n, axis=dim, norm=norm)), HFFT_CASES),
    _e("ihfft", lambda x, n, dim, norm: _squared(fg.fft.ihfft(x, n=n, dim=dim, norm=norm)),
       lambda x, n, dim, norm: _squared(jnp.fft.ihfft(x, n=n, axis=dim, norm=norm)), HFFT_CASES),
    _e("fftshift", lambda x, dim: fg.fft.ifftshift(fg.fft.fftshift(x, dim) * x, dim),
       lambda x, dim: jnp.fft.ifftshift(jnp.fft.fftshift(x, dim) * x, dim), SHIFT_CASES),
]

TORCH = {
    "fft": lambda x, n, dim, norm: _squared(torch.fft.fft(x, n=n, dim=dim, norm=norm)),
    "fftn": lambda x, s, dim, norm: _squared(torch.fft.fftn(x, s=s, dim=dim, norm=norm)),
    "ifftn": lambda x, s, dim, norm: _squared(torch.fft.ifftn(x, s=s, dim=dim, norm=norm)),
    "rfft": lambda x, n, dim, norm: _squared(torch.fft.rfft(x, n=n, dim=dim, norm=norm)),
    "irfft": lambda x, n, dim, norm: _squared(torch.fft.irfft(x, n=n, dim=dim, norm=norm)),
    "rfftn": lambda x, s, dim, norm: _squared(torch.fft.rfftn(x, s=s, dim=dim, norm=norm)),
    "irfftn": lambda x, s, dim, norm: _squared(torch.fft.irfftn(x, s=s, dim=dim, norm=norm)),
    "hfft": lambda x, n, dim, norm: _squared(torch.fft.hfft(x, n=n, dim=dim, norm=norm)),
    "ihfft": lambda x, n, dim, norm: _squared(torch.fft.ihfft(x, n=n, dim=dim, norm=norm)),
    "fftshift": lambda x, dim: torch.fft.ifftshift(torch.fft.fftshift(x, dim) * x, dim),
}

#: The real-to-complex transforms refuse complex inputs (an OpError), as PyTorch's do.
REAL_ONLY = {"rfft", "rfftn", "ihfft"}
#: ... and so do PyTorch's (checked: a torch error too).
TORCH_TAKES_COMPLEX: set = set()
