"""Real and imaginary parts: ``real``, ``imag``, ``complex`` (and ``Tensor.real`` / ``Tensor.imag``).

These are what connect complex results (``linalg.eig``, ``linalg.eigvals``) to a real loss.
Gradients of complex tensors follow PyTorch's convention: for a real loss ``L`` and
``z = x + iy``, the gradient is ``dL/dx + i dL/dy``. So

* ``real(z)``: ``gz = g + 0i``;  ``imag(z)``: ``gz = 0 + ig``;
* ``complex(x, y)``: ``gx = real(g)``, ``gy = imag(g)``.

The three rules use only each other, so derivatives of any order stay consistent.
Only these ops (and ``linalg.eig``/``eigvals``) are written for complex gradients; the
other ops' rules assume real tensors, so take ``real``/``imag`` of complex results
before further arithmetic.

Example:
    >>> import fgraph as fg
    >>> z = fg.complex(fg.tensor([1.0, 2.0]), fg.tensor([3.0, -1.0]))
    >>> z.real.tolist(), fg.imag(z).tolist()
    ([1.0, 2.0], [3.0, -1.0])
"""
from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from fgraph.errors import OpError
from fgraph.ops._declare import apply_op, apply_unary, declare
from fgraph.ops._linalg_util import check_tensor
from fgraph.tensor import Tensor


def _is_complex(x: Tensor) -> bool:
    return bool(jnp.issubdtype(x.dtype, jnp.complexfloating))


def _real_rule(ctx, g):
    return (apply_op(COMPLEX, (g, g * 0.0)),)


def _imag_rule(ctx, g):
    return (apply_op(COMPLEX, (g * 0.0, g)),)


def _complex_rule(ctx, g):
    return apply_unary(REAL, g), apply_unary(IMAG, g)


REAL = declare("real", jnp.real, _real_rule)
IMAG = declare("imag", jnp.imag, _imag_rule)


def _complex_forward(re, im):
    re, im = jnp.broadcast_arrays(re, im)
    return lax.complex(re, im)


COMPLEX = declare("complex", _complex_forward, _complex_rule)


def real(input: Tensor) -> Tensor:
    """The real part of a complex tensor (a real tensor is returned as it is), as ``torch.real``.

    Example:
        >>> import fgraph as fg
        >>> fg.real(fg.complex(fg.tensor([1.5]), fg.tensor([2.0]))).tolist()
        [1.5]
    """
    check_tensor(input, "real")
    if not _is_complex(input):
        return input
    return apply_unary(REAL, input)


def imag(input: Tensor) -> Tensor:
    """The imaginary part of a complex tensor, as ``torch.imag`` (an error for real tensors, as in PyTorch).

    Example:
        >>> import fgraph as fg
        >>> fg.imag(fg.complex(fg.tensor([1.5]), fg.tensor([2.0]))).tolist()
        [2.0]
    """
    check_tensor(input, "imag")
    if not _is_complex(input):
        raise OpError(f"imag: imag is not implemented for tensors with non-complex dtypes (got {input.dtype}, "
                      f"shape {input.shape}); a real tensor's imaginary part is zero: use fg.zeros_like(input).")
    return apply_unary(IMAG, input)


def complex(real: Tensor, imag: Tensor) -> Tensor:
    """The complex tensor ``real + i imag`` (same float32/float64 dtype, broadcast), as ``torch.complex``.

    Example:
        >>> import fgraph as fg
        >>> fg.complex(fg.tensor([1.0]), fg.tensor([2.0])).dtype
        dtype('complex64')
    """
    check_tensor(real, "complex", "real")
    check_tensor(imag, "complex", "imag")
    if real.dtype != imag.dtype or real.dtype not in (jnp.float32, jnp.float64):
        raise OpError(f"complex: expected real and imag to be both float32 or both float64, got {real.dtype} and "
                      f"{imag.dtype}; convert with .float() or .double().")
    return apply_op(COMPLEX, (real, imag))


def _real_property(self: Tensor) -> Tensor:
    return real(self)


def _imag_property(self: Tensor) -> Tensor:
    return imag(self)


__all__ = ["real", "imag", "complex"]
#: Installed on Tensor: ``x.real`` and ``x.imag`` are properties, as in PyTorch.
TENSOR_METHODS = {"real": property(_real_property), "imag": property(_imag_property)}
