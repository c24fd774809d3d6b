"""Helpers shared by the linear-algebra modules: argument checks and constant matrices.

Constants (identity, triangular masks) are built from static shapes, so they are
plain arrays folded into the traced kernels, never graph inputs. ``diagonal`` and
``diag_embed`` are written with fgraph ops (multiply by the identity, then sum), so
whatever uses them stays differentiable to any order.

Example:
    >>> import fgraph as fg
    >>> from fgraph.ops._linalg_util import diag_embed, diagonal
    >>> diagonal(diag_embed(fg.tensor([1.0, 2.0]))).tolist()
    [1.0, 2.0]
"""
from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from fgraph.errors import OpError
from fgraph.tensor import Tensor, type_name, _wrap

__all__ = ["check_tensor", "check_matrix", "check_same_dtype", "eye_like", "tril_mask", "diagonal", "diag_embed"]

_SUPPORTED = (np.dtype("float32"), np.dtype("float64"))
_COMPLEX = (np.dtype("complex64"), np.dtype("complex128"))


def check_tensor(x: Any, op: str, name: str = "input") -> Tensor:
    """``x`` if it is a Tensor, else a TypeError naming ``op``."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type_name(x)}; wrap it with fg.tensor(...).")
    return x


def check_matrix(x: Any, op: str, name: str = "A", *, square: bool = False, floating: bool = True,
                 complex_ok: bool = False) -> Tensor:
    """Check that ``x`` is a (batch of) matrices of float32/float64 (and square, if asked); with ``complex_ok``,
    complex64/complex128 too (the holomorphic ops, whose rules hold for complex matrices as written)."""
    check_tensor(x, op, name)
    if x.ndim < 2:
        raise OpError(
            f"{op}: {name} must have at least 2 dimensions (a matrix or a batch of matrices), got shape {x.shape}."
        )
    if square and x.shape[-1] != x.shape[-2]:
        raise OpError(
            f"{op}: {name} must be a batch of square matrices, but it has shape {x.shape} "
            f"({x.shape[-2]} rows, {x.shape[-1]} columns)."
        )
    if floating:
        check_floating(x, op, name, complex_ok)
    return x


def check_floating(x: Tensor, op: str, name: str = "input", complex_ok: bool = False) -> None:
    """float32 or float64 only (what the decompositions support); complex64/complex128 too with ``complex_ok``."""
    if x.dtype not in _SUPPORTED and not (complex_ok and x.dtype in _COMPLEX):
        if x.dtype.kind == "c":
            raise OpError(
                f"{op}: complex tensors are not supported yet (got {name} of shape {x.shape}, {x.dtype}); fgraph's "
                "decompositions and solvers take float32 or float64 (docs/linalg.md lists what takes complex); "
                "a complex n x n system is the real 2n x 2n one [[Re, -Im], [Im, Re]]."
            )
        kind = str(x.dtype)
        raise OpError(
            f"{op}: expected a float32 or float64 tensor as {name}, got {kind} (shape {x.shape}); "
            "convert with .float() or .double()."
        )


def check_same_dtype(a: Tensor, b: Tensor, op: str, names: tuple[str, str] = ("input", "other")) -> None:
    if a.dtype != b.dtype:
        raise OpError(
            f"{op}: expected {names[0]} and {names[1]} to have the same dtype, but got {a.dtype} "
            f"(shape {a.shape}) and {b.dtype} (shape {b.shape}); convert one with .to(dtype)."
        )


def broadcast_batch(a: tuple, b: tuple, op: str, names: tuple[str, str] = ("A", "B")) -> tuple:
    """The broadcast of two batch shapes, or an OpError naming both."""
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        raise OpError(
            f"{op}: the batch dimensions of {names[0]} {a} and {names[1]} {b} do not broadcast; "
            "they must be equal or 1, aligned from the right."
        ) from None


def eye_like(x: Tensor, n: int) -> Tensor:
    """The ``n x n`` identity in ``x``'s dtype (a constant, not a graph input)."""
    return _wrap(jnp.eye(n, dtype=x.dtype))


def tril_mask(x: Tensor, n: int, m: int | None = None, diagonal: float = 1.0, upper: bool = False) -> Tensor:
    """A lower (or upper) triangular mask of ones, with ``diagonal`` on the diagonal."""
    m = n if m is None else m
    mask = np.tril(np.ones((n, m))) if not upper else np.triu(np.ones((n, m)))
    mask[np.arange(min(n, m)), np.arange(min(n, m))] = diagonal
    return _wrap(jnp.asarray(mask, dtype=x.dtype))


def diagonal(a: Tensor) -> Tensor:
    """The main diagonal of the last two (square) dimensions, differentiably."""
    n = a.shape[-1]
    return (a * eye_like(a, n)).sum(-1)


def diag_embed(v: Tensor) -> Tensor:
    """Square matrices with ``v`` (``(..., n)``) on the diagonal, differentiably."""
    n = v.shape[-1]
    return v.unsqueeze(-1) * eye_like(v, n)
