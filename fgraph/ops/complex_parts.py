"""Complex numbers' parts: ``real``, ``imag``, ``complex``, ``conj`` (and ``Tensor.real`` / ``.imag``).

These connect complex tensors to real ones. Gradients of complex tensors follow PyTorch's
convention (for a real loss ``L`` of ``z = x + iy``, the gradient is ``dL/dx + i dL/dy``),
which :mod:`fgraph.ops._declare` applies around every rule; the rules below are written, as
all rules are, as the plain transpose of the op (no conjugation). What a user sees:

* ``real(z)``: ``gz = g + 0i``;  ``imag(z)``: ``gz = 0 + ig``;  ``conj(z)``: ``gz = conj(g)``;
* ``complex(x, y)``: ``gx = real(g)``, ``gy = imag(g)``.

The four rules use only each other, so derivatives of any order stay consistent.

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


# Plain transposes (JAX's vjps; the engine adds PyTorch's convention): real takes g to g + 0i, imag
# takes g to -ig, complex(x, y) takes g to (real(g), -imag(g)), conj takes g to conj(g).
def _real_rule(ctx, g):
    return (apply_op(COMPLEX, (g, g * 0.0)),)


def _imag_rule(ctx, g):
    return (apply_op(COMPLEX, (g * 0.0, -g)),)


def _complex_rule(ctx, g):
    return apply_unary(REAL, g), -apply_unary(IMAG, g)


def _conj_rule(ctx, g):
    return (apply_unary(CONJ, g),)


REAL = declare("real", jnp.real, _real_rule)
IMAG = declare("imag", jnp.imag, _imag_rule)
CONJ = declare("conj", jnp.conj, _conj_rule)


def _complex_forward(re, im):
    re, im = jnp.broadcast_arrays(re, im)
    return lax.complex(re, im)


COMPLEX = declare("complex", _complex_forward, _complex_rule, real_only=True,
                  complex_fix="real and imag must be real tensors; a complex z already is real + i imag")


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


def conj(input: Tensor) -> Tensor:
    """The complex conjugate ``real - i imag``; a real tensor is returned as it is (as ``torch.conj``).

    fgraph tensors are immutable, so there is no lazy conjugate bit: the result is a new tensor
    (``torch.conj_physical``'s) and ``resolve_conj`` has nothing to resolve. Its node is ``ConjBackward0``.

    Example:
        >>> import fgraph as fg
        >>> z = fg.complex(fg.tensor([1.0]), fg.tensor([2.0]))
        >>> fg.imag(fg.conj(z)).tolist(), fg.conj(fg.tensor([3.0])).tolist()
        ([-2.0], [3.0])
    """
    check_tensor(input, "conj")
    if not _is_complex(input):
        return input
    return apply_unary(CONJ, input)


def _real_property(self: Tensor) -> Tensor:
    return real(self)


def _imag_property(self: Tensor) -> Tensor:
    return imag(self)


__all__ = ["real", "imag", "complex", "conj"]
#: Installed on Tensor: ``x.real`` and ``x.imag`` are properties, as in PyTorch.
TENSOR_METHODS = {"real": property(_real_property), "imag": property(_imag_property), "conj": conj}
