"""The three FFT primitives behind :mod:`fgraph.fft`: complex-to-complex, real-to-complex, complex-to-real.

As in PyTorch (``_fft_c2c``, ``_fft_r2c``, ``_fft_c2r``, whose nodes are ``FftC2CBackward0``,
``FftR2CBackward0``, ``FftC2RBackward0``), every public transform is one of these over a
tuple of ``dims`` with a normalisation ``norm``; resizing to ``n``/``s`` happens before, in
ordinary ops. Each rule is written in FFTs, so derivatives of every order are FFTs too.

Rules are plain transposes (the engine adds PyTorch's complex convention, see
:mod:`fgraph.ops._complex`). A DFT matrix is symmetric, so:

* c2c: the transpose of ``fftn``/``ifftn`` is the same transform with the same ``norm``;
* r2c (``rfftn``: a real-to-complex cast, ``fftn``, then keeping ``n // 2 + 1`` entries of the
  last dim): zero-pad the cotangent back to ``n`` on the last dim, ``fftn``, real part;
* c2r (``irfftn``: ``ifftn`` over the other dims, then the Hermitian inverse on the last): the
  last dim's bins ``0 < k < n / 2`` stand for two (``X_k`` and its mirror ``conj(X_k)``), so the
  transpose is ``ifftn`` of the cotangent, the first ``n // 2 + 1`` entries of the last dim,
  those bins doubled.

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    >>> fg.fft.rfft(x).grad_fn.name()
    'FftR2CBackward0'
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from fgraph.ops._declare import apply_op, declare
from fgraph.ops.complex_parts import real
from fgraph.tensor import Tensor, _wrap

__all__ = ["fft_c2c", "fft_r2c", "fft_c2r", "to_complex", "real_dtype", "complex_dtype"]


def real_dtype(dtype) -> np.dtype:
    """float32 for complex64 (and float32), float64 for complex128 (and float64)."""
    return np.dtype(jnp.finfo(dtype).dtype)


def complex_dtype(dtype) -> np.dtype:
    """complex64 for float32 (and complex64), complex128 for float64 (and complex128)."""
    return np.dtype(np.complex128 if real_dtype(dtype) == np.float64 else np.complex64)


def to_complex(x: Tensor) -> Tensor:
    """``x`` as a complex tensor of its precision (a differentiable cast; complex ``x`` as it is)."""
    target = complex_dtype(x.dtype)
    return x if x.dtype == target else x.to(target)


def _c2c_forward(x, *, dims, norm, forward):
    return (jnp.fft.fftn if forward else jnp.fft.ifftn)(x, axes=dims, norm=norm)


def _r2c_forward(x, *, dims, norm, onesided):
    if onesided:
        return jnp.fft.rfftn(x, axes=dims, norm=norm)
    return jnp.fft.fftn(x, axes=dims, norm=norm)


def _c2r_forward(x, *, dims, norm, last_dim_size):
    sizes = [x.shape[d] for d in dims[:-1]] + [last_dim_size]
    return jnp.fft.irfftn(x, s=sizes, axes=dims, norm=norm)


def _c2c_rule(ctx, g):
    p = ctx.params
    return (fft_c2c(g, p.dims, p.norm, p.forward),)


def _r2c_rule(ctx, g):
    p = ctx.params
    if p.onesided:
        last = p.dims[-1]
        n = ctx.shapes[0][last]
        g = _zero_pad(g, last, n)
    return (real(fft_c2c(g, p.dims, p.norm, True)),)


def _c2r_rule(ctx, g):
    p = ctx.params
    last = p.dims[-1]
    m = ctx.shapes[0][last]
    spectrum = fft_c2c(to_complex(g), p.dims, p.norm, False)
    if spectrum.shape[last] != m:
        spectrum = spectrum.narrow(last, 0, m)
    return (spectrum * _hermitian_weights(m, p.last_dim_size, last, spectrum),)


def _hermitian_weights(m: int, n: int, dim: int, like: Tensor) -> Tensor:
    """``1`` for the bins of the last dim that stand for themselves only (0, and n / 2 for even n), else ``2``."""
    w = np.full(m, 2.0)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    shape = [1] * like.ndim
    shape[dim] = m
    return _wrap(jnp.asarray(w.reshape(shape), dtype=real_dtype(like.dtype)))


def _zero_pad(g: Tensor, dim: int, n: int) -> Tensor:
    from fgraph.ops.shape import cat

    missing = n - g.shape[dim]
    if missing <= 0:
        return g
    shape = list(g.shape)
    shape[dim] = missing
    return cat([g, _wrap(jnp.zeros(shape, g.dtype))], dim)


FFT_C2C = declare("fft_c2c", _c2c_forward, _c2c_rule, params=("dims", "norm", "forward"),
                  node_name="FftC2CBackward0")
FFT_R2C = declare("fft_r2c", _r2c_forward, _r2c_rule, params=("dims", "norm", "onesided"),
                  node_name="FftR2CBackward0", real_only=True,
                  complex_fix="the real-to-complex FFT (rfft) takes real inputs; use fft.fft for complex ones")
FFT_C2R = declare("fft_c2r", _c2r_forward, _c2r_rule, params=("dims", "norm", "last_dim_size"),
                  node_name="FftC2RBackward0")


def fft_c2c(x: Tensor, dims: tuple, norm: str, forward: bool) -> Tensor:
    """``fftn`` (``forward``) or ``ifftn`` of complex ``x`` over ``dims`` (non-negative, sorted as given)."""
    return apply_op(FFT_C2C, (x,), FFT_C2C.Params(tuple(dims), norm, bool(forward)))


def fft_r2c(x: Tensor, dims: tuple, norm: str, onesided: bool) -> Tensor:
    """``rfftn`` (``onesided``) or ``fftn`` of real ``x`` over ``dims``."""
    return apply_op(FFT_R2C, (x,), FFT_R2C.Params(tuple(dims), norm, bool(onesided)))


def fft_c2r(x: Tensor, dims: tuple, norm: str, last_dim_size: int) -> Tensor:
    """``irfftn`` of complex ``x`` over ``dims``; the last dim holds ``last_dim_size // 2 + 1`` bins."""
    return apply_op(FFT_C2R, (x,), FFT_C2R.Params(tuple(dims), norm, int(last_dim_size)))
