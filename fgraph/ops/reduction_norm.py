"""Vector norms with ``torch.norm``'s arguments: ``p`` (``'fro'``, 2, 1, inf, -inf, 0 or any
number), ``dim`` (int, tuple or all) and ``keepdim``.

It runs the one vector-norm primitive of ``fgraph.linalg.vector_norm``, whose rule is
PyTorch's ``norm_backward``: 0 where the norm is 0 (``p >= 1``), ``sign(x)`` for
``p = 1``, the gradient split evenly among the tied largest (smallest) magnitudes for
``p = inf`` (``-inf``), and zero for ``p = 0``.

Not supported: ``p='nuc'`` and ``'fro'`` over more than two dimensions, which are
matrix norms (``torch.linalg.matrix_norm``).

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([[3.0, -4.0], [0.0, 1.0]])
    >>> fg.norm(x, dim=1).tolist(), fg.norm(x, p=1).item(), x.norm(p=float("inf")).item()
    ([5.0, 1.0], 8.0, 4.0)
"""
from __future__ import annotations

import math
from typing import Any, Optional, Union

from fgraph.errors import OpError
from fgraph.ops.reduction import Dim, check_floating, check_tensor, normalize_dims
from fgraph.tensor import Tensor

__all__ = ["norm"]


def _order(p: Any, dim: Any) -> float:
    """``p`` as the float order of a vector norm, or a clear error."""
    if p is None:
        return 2.0
    if isinstance(p, str):
        if p == "fro":
            if dim is None or isinstance(dim, int) or len(dim) <= 2:
                return 2.0
            raise OpError(f"norm: p='fro' takes at most two dimensions, got dim={dim!r}; "
                          "use a numeric p (e.g. p=2) for a vector norm over more dimensions.")
        if p == "nuc":
            raise OpError("norm: p='nuc' (the nuclear norm, a sum of singular values) is not supported; "
                          "use p='fro', 2, 1, inf, or any number.")
        raise OpError(f"norm: unknown p={p!r}; use 'fro', 2, 1, float('inf'), -float('inf'), 0 or any number.")
    if isinstance(p, Tensor) or isinstance(p, bool) or not isinstance(p, (int, float)):
        raise OpError(f"norm: p must be a number or 'fro', got {type(p).__name__} {p!r}.")
    return float(p)


def norm(input: Tensor, p: Union[float, str, None] = "fro", dim: Dim = None, keepdim: bool = False,
         dtype: Optional[Any] = None) -> Tensor:
    """The vector ``p``-norm over ``dim`` (all dimensions by default), as ``torch.norm``.

    ``p``: ``'fro'`` (default) and ``2`` give ``sqrt(sum(x**2))``; ``1`` the sum of
    magnitudes; ``inf``/``-inf`` the largest/smallest magnitude; ``0`` the number of
    non-zeros; any other number ``sum(|x|**p)**(1/p)``. ``dtype`` casts the input first.

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([3.0, 4.0], requires_grad=True)
        >>> (gx,) = fg.grad(fg.norm(x), [x])
        >>> [round(v, 4) for v in gx.tolist()]
        [0.6, 0.8]
    """
    check_tensor(input, "norm")
    if dtype is not None:
        from fgraph.ops.elementwise import to_dtype

        input = to_dtype(input, dtype)
    check_floating(input, "norm")
    order = _order(p, dim)
    dims = normalize_dims(dim, input.ndim, "norm")
    if math.isinf(order) and any(input.shape[d] == 0 for d in dims):
        raise OpError(
            f"norm: cannot take the p={order} norm over an empty dimension of a tensor of shape "
            f"{tuple(input.shape)} (dim={dim!r}): max/min have no identity. Reduce over non-empty dimensions."
        )
    from fgraph.ops.linalg_norms import vector_norm_of

    return vector_norm_of(input, order, dims, keepdim)


#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {"norm": norm}
