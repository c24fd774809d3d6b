"""Diagonals and triangles: ``diagonal``, ``diag_embed``, ``diag``, ``diagflat``, ``tril``, ``triu``.

Primitives: ``diagonal`` (node ``DiagonalBackward0``), whose rule scatters the gradient
back onto the diagonal (``diagonal_backward``, whose own rule is ``diagonal`` again);
``diag_embed`` (the same scatter, node ``DiagEmbedBackward0``); ``tril`` and ``triu``
(their rules mask the gradient the same way). ``diag`` and ``diagflat`` are composites.

Example:
    >>> import fgraph as fg
    >>> x = fg.arange(9.0).reshape(3, 3)
    >>> x.diagonal().tolist(), x.diagonal(1).tolist(), fg.diag(fg.tensor([1.0, 2.0])).tolist()
    ([0.0, 4.0, 8.0], [1.0, 5.0], [[1.0, 0.0], [0.0, 2.0]])
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from fgraph.errors import OpError
from fgraph.ops._declare import apply_unary, declare
from fgraph.ops.shape import _dim, flatten
from fgraph.tensor import Tensor


def _diag_length(n1: int, n2: int, offset: int) -> int:
    return max(0, min(n1 - max(-offset, 0), n2 - max(offset, 0)))


def _diagonal_forward(x, *, offset, dim1, dim2):
    return jnp.diagonal(x, offset, dim1, dim2)


def _scatter_forward(g, *, shape, offset, dim1, dim2):
    """Zeros of ``shape`` with ``g``'s last dimension written onto the ``offset`` diagonal of (dim1, dim2)."""
    index = np.arange(_diag_length(shape[dim1], shape[dim2], offset))
    moved = jnp.moveaxis(jnp.zeros(shape, g.dtype), (dim1, dim2), (-2, -1))
    moved = moved.at[..., index + max(-offset, 0), index + max(offset, 0)].set(g)
    return jnp.moveaxis(moved, (-2, -1), (dim1, dim2))


def _diagonal_rule(ctx, g):
    p = ctx.params
    return (apply_unary(DIAGONAL_BACKWARD, g, DIAGONAL_BACKWARD.Params(ctx.shapes[0], p.offset, p.dim1, p.dim2)),)


def _scatter_rule(ctx, g):
    p = ctx.params
    return (apply_unary(DIAGONAL, g, DIAGONAL.Params(p.offset, p.dim1, p.dim2)),)


def _tril_forward(x, *, diagonal):
    return jnp.tril(x, diagonal)


def _triu_forward(x, *, diagonal):
    return jnp.triu(x, diagonal)


def _tril_rule(ctx, g):
    return (apply_unary(TRIL, g, ctx.params),)


def _triu_rule(ctx, g):
    return (apply_unary(TRIU, g, ctx.params),)


DIAGONAL = declare("diagonal", _diagonal_forward, _diagonal_rule, params=("offset", "dim1", "dim2"))
DIAGONAL_BACKWARD = declare("diagonal_backward", _scatter_forward, _scatter_rule,
                            params=("shape", "offset", "dim1", "dim2"))
DIAG_EMBED = declare("diag_embed", _scatter_forward, _scatter_rule, params=("shape", "offset", "dim1", "dim2"))
TRIL = declare("tril", _tril_forward, _tril_rule, params=("diagonal",))
TRIU = declare("triu", _triu_forward, _triu_rule, params=("diagonal",))


def _two_dims(dim1: int, dim2: int, ndim: int, op: str, shape: tuple) -> tuple[int, int]:
    d1, d2 = _dim(dim1, ndim, op), _dim(dim2, ndim, op)
    if d1 == d2:
        raise OpError(f"{op}: diagonal dimensions cannot be identical ({dim1}, {dim2}) for shape {shape}.")
    return d1, d2


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The ``offset`` diagonal of the planes (``dim1``, ``dim2``), appended as the last dimension.

    ``offset > 0`` is above the main diagonal, ``< 0`` below; out-of-range offsets give an
    empty diagonal.

    Example:
        >>> import fgraph as fg
        >>> fg.ones(2, 3, 4).diagonal(0, 1, 2).shape
        (2, 3)
    """
    if input.ndim < 2:
        raise OpError(f"diagonal: input must have at least 2 dimensions, got shape {input.shape}.")
    d1, d2 = _two_dims(dim1, dim2, input.ndim, "diagonal", input.shape)
    return apply_unary(DIAGONAL, input, DIAGONAL.Params(int(offset), d1, d2))


_diagonal_of = diagonal  # ``diag`` has a parameter named ``diagonal``


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Put the last dimension of ``input`` on the ``offset`` diagonal of new planes (``dim1``, ``dim2``).

    Example:
        >>> import fgraph as fg
        >>> fg.diag_embed(fg.tensor([[1.0, 2.0]])).tolist()
        [[[1.0, 0.0], [0.0, 2.0]]]
    """
    if input.ndim < 1:
        raise OpError(f"diag_embed: input must have at least 1 dimension, got shape {input.shape}.")
    nd = input.ndim + 1
    d1, d2 = _two_dims(dim1, dim2, nd, "diag_embed", input.shape)
    offset = int(offset)
    n = input.shape[-1] + abs(offset)
    batch = iter(input.shape[:-1])
    shape = tuple(n if i in (d1, d2) else next(batch) for i in range(nd))
    return apply_unary(DIAG_EMBED, input, DIAG_EMBED.Params(shape, offset, d1, d2))


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """1-d input: a square matrix with it on the ``diagonal``-th diagonal; 2-d input: that diagonal.

    Example:
        >>> import fgraph as fg
        >>> fg.diag(fg.tensor([1.0, 2.0]), 1).shape, fg.diag(fg.ones(2, 3)).tolist()
        ((3, 3), [1.0, 1.0])
    """
    if input.ndim == 1:
        return diag_embed(input, diagonal, 0, 1)
    if input.ndim == 2:
        return _diagonal_of(input, diagonal)
    raise OpError(f"diag: expected a 1-d or 2-d tensor, got shape {input.shape}; use diagonal or diag_embed.")


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """``diag`` of the flattened input: always a 2-d matrix.

    Example:
        >>> import fgraph as fg
        >>> fg.diagflat(fg.ones(2, 2)).shape
        (4, 4)
    """
    return diag_embed(flatten(input), offset, 0, 1)


def _triangle(op, input: Tensor, diagonal: int, name: str) -> Tensor:
    if input.ndim < 2:
        raise OpError(f"{name}: input must have at least 2 dimensions, got shape {input.shape}.")
    return apply_unary(op, input, op.Params(int(diagonal)))


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """Zero the elements above the ``diagonal``-th diagonal of the last two dimensions.

    Example:
        >>> import fgraph as fg
        >>> fg.tril(fg.ones(2, 2)).tolist()
        [[1.0, 0.0], [1.0, 1.0]]
    """
    return _triangle(TRIL, input, diagonal, "tril")


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """Zero the elements below the ``diagonal``-th diagonal of the last two dimensions.

    Example:
        >>> import fgraph as fg
        >>> fg.triu(fg.ones(2, 2)).tolist()
        [[1.0, 1.0], [0.0, 1.0]]
    """
    return _triangle(TRIU, input, diagonal, "triu")


#: Exported as ``fgraph.<name>``.
__all__ = ["diagonal", "diag_embed", "diag", "diagflat", "tril", "triu"]
#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {
    "diagonal": diagonal, "diag_embed": diag_embed, "diag": diag, "diagflat": diagflat, "tril": tril, "triu": triu,
}
