"""Vector norms with ``torch.norm``'s arguments: ``p`` (``'fro'``, 2, 1, inf, -inf, 0 or any
number), ``dim`` (int, tuple or all) and ``keepdim``.

The derivative follows PyTorch's ``norm_backward``: 0 where the norm is 0 (``p >= 1``),
``sign(x)`` for ``p = 1``, the gradient split evenly among the tied largest (smallest)
magnitudes for ``p = inf`` (``-inf``), and zero for ``p = 0``. It is written in fgraph
ops, so it differentiates again.

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

import jax.numpy as jnp

from fgraph.errors import OpError
from fgraph.ops._declare import apply_unary, declare
from fgraph.ops.reduction import Dim, check_floating, check_tensor, expand_reduced, normalize_dims
from fgraph.tensor import Tensor

__all__ = ["norm"]


def _norm_forward(x, *, p, dims, keepdim):
    ax = jnp.abs(x)
    if p == math.inf:
        return jnp.max(ax, axis=dims, keepdims=keepdim)
    if p == -math.inf:
        return jnp.min(ax, axis=dims, keepdims=keepdim)
    if p == 0:
        return jnp.sum(x != 0, axis=dims, keepdims=keepdim).astype(ax.dtype)
    if p == 1:
        return jnp.sum(ax, axis=dims, keepdims=keepdim)
    if p == 2:
        return jnp.sqrt(jnp.sum(ax * ax, axis=dims, keepdims=keepdim))
    return jnp.sum(ax ** p, axis=dims, keepdims=keepdim) ** (1.0 / p)


def _norm_rule(ctx, g):
    from fgraph.ops.elementwise import abs, eq, logical_or, ne, pow, sign, to_dtype, where, zeros_of
    from fgraph.ops.reduction import sum

    (x,) = ctx.inputs
    p, dims, keepdim = ctx.params
    if p == 0:
        return (zeros_of(x),)
    shape = x.shape
    g = expand_reduced(g, shape, dims, keepdim)
    if p == 1:
        return (g * sign(x),)
    y = expand_reduced(ctx.result, shape, dims, keepdim)
    y_is_zero = eq(y, 0)
    y_safe = where(y_is_zero, 1.0, y)  # no 0/0 here, nor in the derivative of this rule
    if p == 2:
        return (g * x / y_safe,)  # x == 0 wherever y == 0: the gradient there is 0
    ax = abs(x)
    if math.isinf(p):
        # d max|x|: split evenly among the tied extreme magnitudes (NaNs count as extreme).
        mask = logical_or(eq(ax, y), ne(ax, ax))
        count = sum(to_dtype(mask, g.dtype), dims, keepdim=True)
        return (where(mask, sign(x) * g / count, 0.0),)
    if p < 1:
        x_is_zero = eq(x, 0)
        scaled = sign(x) * where(x_is_zero, 0.0, pow(where(x_is_zero, 1.0, ax), p - 1))
        return (scaled * g * pow(y, 1 - p),)
    scaled = sign(x) * pow(ax, p - 1) if p < 2 else x * pow(ax, p - 2)
    return (scaled * where(y_is_zero, 0.0, g / pow(y_safe, p - 1)),)


NORM = declare("norm", _norm_forward, _norm_rule, params=("p", "dims", "keepdim"), save_inputs=True,
               save_result=True, node_name="LinalgVectorNormBackward0")


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
    return apply_unary(NORM, input, NORM.Params(order, dims, bool(keepdim)))


#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {"norm": norm}
