"""Eigendecomposition of general (non-symmetric) real matrices: ``linalg.eig`` and ``linalg.eigvals``.

The results are complex (``complex64`` for float32 input, ``complex128`` for float64); take
:func:`fgraph.real` / :func:`fgraph.imag` (or ``.abs()`` of them) to reach a real loss.
Eigenvectors are normalized to norm 1 (LAPACK's ``geev``, as PyTorch) and are defined up
to a phase ``e^{i phi}`` per column, so a loss must not depend on that phase.

The derivative is PyTorch's ``linalg_eig_backward`` (with ``E_ij = conj(L_j - L_i)``)::

    gA = Re( V^-H (diag(gL) + (V^H gV - V^H V Re(diag(V^H gV))) / E) V^H )

written on real and imaginary parts as separate real tensors (complex products as four
real ones, the solve with ``V^H`` as one real ``2n x 2n`` solve), so it differentiates
again. The formula is PyTorch's, for gradients in its convention; a rule receives the
conjugates (see :mod:`fgraph.ops._declare`), so it takes ``gL``'s and ``gV``'s imaginary
parts with the opposite sign (``A`` is real: its gradient is the real part either way).
It needs distinct eigenvalues; where two coincide the ``1/E`` terms are taken as 0
(as :func:`fgraph.linalg.eigh` does) instead of PyTorch's inf/nan. PyTorch also checks,
at run time, that the loss does not depend on the eigenvectors' phase; that would need a
host round trip, so it is not checked here.

The forward kernel is ``jax.numpy.linalg.eig``, which XLA implements on CPU only (per
JAX version): on another backend the call raises an error saying to move the input with
``A.to('cpu')``.

Example:
    >>> import fgraph as fg
    >>> L = fg.linalg.eigvals(fg.tensor([[0.0, -1.0], [1.0, 0.0]]))
    >>> sorted(L.imag.tolist())
    [-1.0, 1.0]
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from fgraph.errors import OpError
from fgraph.ops._declare import apply_op, declare
from fgraph.ops._linalg_util import check_matrix, diag_embed, eye_like
from fgraph.ops.complex_parts import imag, real
from fgraph.ops.elementwise import eq, where
from fgraph.ops.linalg import matmul
from fgraph.ops.linalg_solve import solve
from fgraph.ops.shape import cat
from fgraph.tensor import Tensor


def _eig_forward(a):
    w, v = jnp.linalg.eig(a)
    return w, v


def _cmatmul(ar: Tensor, ai: Tensor, br: Tensor, bi: Tensor) -> tuple[Tensor, Tensor]:
    """``(ar + i ai) @ (br + i bi)`` as its real and imaginary parts."""
    return matmul(ar, br) - matmul(ai, bi), matmul(ar, bi) + matmul(ai, br)


def _eig_rule(ctx, g):
    gl, gv = g
    w, v = ctx.result
    wr, wi = real(w), imag(w)
    vr, vi = real(v), imag(v)
    glr, gli = real(gl), -imag(gl)  # PyTorch's gL = conj(the rule's gl): see the module docstring
    gvr, gvi = real(gv), -imag(gv)
    vhr, vhi = vr.mT, -vi.mT  # V^H
    mr, mi = _cmatmul(vhr, vhi, gvr, gvi)  # V^H gV
    d = (mr * eye_like(mr, mr.shape[-1])).sum(-1).unsqueeze(-2)  # Re(diag(V^H gV)) as a row
    vvr, vvi = _cmatmul(vhr, vhi, vr, vi)  # V^H V
    mr, mi = mr - vvr * d, mi - vvi * d
    # divide by conj(E), E_ij = L_j - L_i (zero on the diagonal and for repeated eigenvalues: 0)
    er = wr.unsqueeze(-2) - wr.unsqueeze(-1)
    ei = -(wi.unsqueeze(-2) - wi.unsqueeze(-1))
    den = er * er + ei * ei
    zero = eq(den, 0)
    den = where(zero, 1.0, den)
    qr = where(zero, 0.0, (mr * er + mi * ei) / den) + diag_embed(glr)
    qi = where(zero, 0.0, (mi * er - mr * ei) / den) + diag_embed(gli)
    nr, ni = _cmatmul(qr, qi, vhr, vhi)  # (...) V^H
    # V^H X = N with X = xr + i xi: [[Re V^H, -Im V^H], [Im V^H, Re V^H]] [xr; xi] = [nr; ni]
    block = cat([cat([vhr, -vhi], -1), cat([vhi, vhr], -1)], -2)
    x = solve(block, cat([nr, ni], -2))
    return (x[..., : nr.shape[-2], :],)


EIG = declare("linalg_eig", _eig_forward, _eig_rule, save_result=True, num_outputs=2, real_only=True, tangent="rule")


class EigResult(NamedTuple):
    """``(eigenvalues, eigenvectors)``, like ``torch.return_types.linalg_eig``."""

    eigenvalues: Tensor
    eigenvectors: Tensor


def _run_eig(A: Tensor, op: str) -> tuple:
    check_matrix(A, op, "A", square=True)
    try:
        return apply_op(EIG, (A,))
    except OpError:
        raise
    except Exception:  # XLA's "not implemented on this platform"
        platforms = sorted({d.platform for d in A._array.devices()}) if isinstance(A._array, jax.Array) else []
        if platforms and platforms != ["cpu"]:
            raise OpError(
                f"{op}: the eigendecomposition of a non-symmetric matrix (jax.numpy.linalg.eig) is implemented on "
                f"CPU only, but A (shape {A.shape}) lives on {platforms}; move it with A.to('cpu') (and the "
                "results back with .to(device)). For symmetric matrices use fg.linalg.eigh, which runs everywhere."
            ) from None
        raise


def eig(A: Tensor) -> EigResult:
    """Eigenvalues and eigenvectors (columns, norm 1) of a square real ``A``: complex tensors with
    ``A V = V diag(L)``. Differentiable (to any order) for distinct eigenvalues and a loss that does
    not depend on the eigenvectors' phase; CPU only (see the module docstring).

    Example:
        >>> import fgraph as fg
        >>> A = fg.tensor([[2.0, 1.0], [0.0, 3.0]])
        >>> L, V = fg.linalg.eig(A)
        >>> L.real.tolist(), L.dtype, V.shape
        ([2.0, 3.0], dtype('complex64'), (2, 2))
    """
    w, v = _run_eig(A, "linalg.eig")
    return EigResult(w, v)


def eigvals(A: Tensor) -> Tensor:
    """The eigenvalues of a square real ``A`` (complex, in LAPACK's order); see :func:`eig`.

    Example:
        >>> import fgraph as fg
        >>> fg.linalg.eigvals(fg.tensor([[1.0, 2.0], [0.0, -1.0]])).real.tolist()
        [1.0, -1.0]
    """
    return _run_eig(A, "linalg.eigvals")[0]


__all__: list = []  # only in fgraph.linalg (torch has no top-level eig)
