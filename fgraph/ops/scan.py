"""Scans: cumulative sums and products along one dimension.

``cumsum`` and ``cumprod`` follow ``torch.cumsum``/``torch.cumprod`` (``dim`` is
required, ``dtype=`` casts the input first). Their derivative rules are written
in fgraph ops, so they differentiate any number of times:

* ``cumsum``'s gradient is the reversed cumulative sum of the output gradient;
* ``cumprod``'s gradient is exact when the input holds zeros (one or several),
  with no division: ``grad_k = (prod_{i<k} x_i) * S_k`` where
  ``S_k = g_k + x_{k+1} * S_{k+1}`` is a linear recurrence, run in ``O(n)`` by
  the internal primitive ``linear_recurrence`` (an associative scan), whose own
  rule is again a linear recurrence. This computes the same gradient as PyTorch's
  ``cumprod_backward`` (its zero-safe branch), at ``O(n)`` cost for every order.

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([2.0, 0.0, 3.0], requires_grad=True)
    >>> fg.cumprod(x, 0).tolist()
    [2.0, 0.0, 0.0]
    >>> (gx,) = fg.grad(fg.cumprod(x, 0).sum(), [x])
    >>> gx.tolist()
    [1.0, 8.0, 0.0]
"""
from __future__ import annotations

from typing import Any, Optional

import jax.numpy as jnp
from jax import lax

from fgraph.errors import OpError
from fgraph.ops._declare import apply_op, apply_unary, declare
from fgraph.ops.reduction import accumulation_input
from fgraph.tensor import Tensor, type_name

__all__ = ["cumsum", "cumprod"]


def _scan_dim(input: Tensor, dim: Any, op: str) -> int:
    """``dim`` as a non-negative axis (``0`` for a 0-d tensor, as in PyTorch)."""
    if not isinstance(input, Tensor):
        raise OpError(f"{op}: expected a Tensor, got {type_name(input)}; wrap it with fgraph.tensor(...).")
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise OpError(f"{op}: dim must be an int, got {type(dim).__name__} {dim!r}; scan one dimension, "
                      f"e.g. {op}(x, dim=0).")
    nd = max(input.ndim, 1)
    if not -nd <= dim < nd:
        raise IndexError(
            f"{op}: dim {dim} is out of range for a tensor of shape {tuple(input.shape)} "
            f"(expected a value in [{-nd}, {nd - 1}])."
        )
    return dim % nd


# -- shift by one along a dimension (internal, linear) ------------------------------------------
def _shift_forward(x, *, dim, offset, fill):
    n = x.shape[dim]
    if n == 0:
        return x
    pad = jnp.full(x.shape[:dim] + (1,) + x.shape[dim + 1:], fill, x.dtype)
    if offset > 0:
        return jnp.concatenate([pad, lax.slice_in_dim(x, 0, n - 1, axis=dim)], axis=dim)
    return jnp.concatenate([lax.slice_in_dim(x, 1, n, axis=dim), pad], axis=dim)


def _shift_rule(ctx, g):
    p = ctx.params
    return (shift(g, p.dim, -p.offset, 0),)


SHIFT = declare("scan_shift", _shift_forward, _shift_rule, params=("dim", "offset", "fill"))


def shift(x: Tensor, dim: int, offset: int, fill: Any) -> Tensor:
    """``x`` moved by ``offset`` (+1 or -1) along ``dim`` (non-negative), the vacated slot set to ``fill``.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.ops.scan import shift
        >>> shift(fg.tensor([1.0, 2.0, 3.0]), 0, 1, 7.0).tolist()
        [7.0, 1.0, 2.0]
    """
    return apply_unary(SHIFT, x, SHIFT.Params(dim, offset, fill))


# -- first-order linear recurrence (internal) -------------------------------------------------------
def _combine(earlier, later):
    a1, b1 = earlier
    a2, b2 = later
    return a1 * a2, a2 * b1 + b2


def _linrec_forward(a, b, *, dim, reverse):
    a, b = jnp.broadcast_arrays(a, b)
    if b.shape[dim] == 0:
        return b
    return lax.associative_scan(_combine, (a, b), reverse=reverse, axis=dim)[1]


def _linrec_rule(ctx, u):
    # forward:  h_k = a_k h_{k-1} + b_k  ->  adjoint l_k = u_k + a_{k+1} l_{k+1},  da_k = l_k h_{k-1}
    # reverse:  h_k = a_k h_{k+1} + b_k  ->  adjoint l_k = u_k + a_{k-1} l_{k-1},  da_k = l_k h_{k+1}
    a, _ = ctx.inputs
    h = ctx.result
    dim, reverse = ctx.params
    step = 1 if reverse else -1
    lam = linear_recurrence(shift(a, dim, step, 0), u, dim, not reverse)
    da = lam * shift(h, dim, -step, 0) if ctx.needs[0] else None
    return da, lam


LINREC = declare("linear_recurrence", _linrec_forward, _linrec_rule, params=("dim", "reverse"),
                 save_inputs=True, save_result=True)


def linear_recurrence(a: Tensor, b: Tensor, dim: int, reverse: bool = False) -> Tensor:
    """``h_k = a_k * h_{k-1} + b_k`` along ``dim`` (``h_{k+1}`` with ``reverse``), starting from 0.

    ``a`` and ``b`` have the same shape; ``dim`` is non-negative. Runs as one
    associative scan (``O(log n)`` depth), and is differentiable any number of times.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.ops.scan import linear_recurrence
        >>> linear_recurrence(fg.tensor([5.0, 2.0, 3.0]), fg.tensor([1.0, 1.0, 1.0]), 0).tolist()
        [1.0, 3.0, 10.0]
    """
    return apply_op(LINREC, (a, b), LINREC.Params(dim, bool(reverse)))


# -- cumsum ----------------------------------------------------------------------------------------------
def _cumsum_forward(x, *, dim, reverse):
    if x.ndim == 0:
        return x
    return lax.cumsum(x, axis=dim, reverse=reverse)


def _cumsum_rule(ctx, g):
    p = ctx.params
    return (apply_unary(CUMSUM, g, CUMSUM.Params(p.dim, not p.reverse)),)


CUMSUM = declare("cumsum", _cumsum_forward, _cumsum_rule, params=("dim", "reverse"))


def cumsum(input: Tensor, dim: int, *, dtype: Optional[Any] = None) -> Tensor:
    """Cumulative sum along ``dim``: ``out_k = sum_{i<=k} input_i``.

    Integer and bool inputs accumulate as integers; ``dtype`` casts the input first.

    Example:
        >>> import fgraph as fg
        >>> fg.cumsum(fg.tensor([[1.0, 2.0], [3.0, 4.0]]), dim=1).tolist()
        [[1.0, 3.0], [3.0, 7.0]]
    """
    d = _scan_dim(input, dim, "cumsum")
    x = accumulation_input(input, dtype, "cumsum")
    return apply_unary(CUMSUM, x, CUMSUM.Params(d, False))


# -- cumprod ---------------------------------------------------------------------------------------------
def _cumprod_forward(x, *, dim, reverse):
    if x.ndim == 0:
        return x
    return lax.cumprod(x, axis=dim, reverse=reverse)


def _cumprod_rule(ctx, g):
    (x,) = ctx.inputs
    y = ctx.result
    dim, reverse = ctx.params
    if x.ndim == 0 or x.shape[dim] <= 1:
        return (g,)
    # y_j = prod_{i<=j} x_i.  d y_j / d x_k = prod_{i<k} x_i * prod_{k<i<=j} x_i  (j >= k), so
    # grad_k = E_k * S_k with E_k = y_{k-1} (1 for k = 0) and S_k = g_k + x_{k+1} S_{k+1}.
    # No division: exact with zeros, and every factor is differentiable again.
    step = 1 if reverse else -1  # the reversed scan mirrors every index
    before = shift(y, dim, -step, 1)
    after = linear_recurrence(shift(x, dim, step, 0), g, dim, not reverse)
    return (before * after,)


CUMPROD = declare("cumprod", _cumprod_forward, _cumprod_rule, params=("dim", "reverse"),
                  save_inputs=True, save_result=True)


def cumprod(input: Tensor, dim: int, *, dtype: Optional[Any] = None) -> Tensor:
    """Cumulative product along ``dim``: ``out_k = prod_{i<=k} input_i``.

    The gradient is exact when ``input`` holds zeros and can be differentiated again.

    Example:
        >>> import fgraph as fg
        >>> fg.cumprod(fg.tensor([1.0, 2.0, 3.0]), 0).tolist()
        [1.0, 2.0, 6.0]
    """
    d = _scan_dim(input, dim, "cumprod")
    x = accumulation_input(input, dtype, "cumprod")
    return apply_unary(CUMPROD, x, CUMPROD.Params(d, False))


def _cumprod_reversed(x: Tensor, dim: int) -> Tensor:
    """``out_k = prod_{i>=k} x_i`` along non-negative ``dim`` (used by ``prod``'s rule)."""
    return apply_unary(CUMPROD, x, CUMPROD.Params(dim, True))


def exclusive_products(x: Tensor, dim: int) -> Tensor:
    """``out_k = prod_{i != k} x_i`` along non-negative ``dim``, exact with zeros, differentiable.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.ops.scan import exclusive_products
        >>> exclusive_products(fg.tensor([2.0, 0.0, 3.0]), 0).tolist()
        [0.0, 6.0, 0.0]
    """
    if x.shape[dim] <= 1:
        from fgraph.ops.elementwise import zeros_of

        return zeros_of(x) + 1
    before = shift(apply_unary(CUMPROD, x, CUMPROD.Params(dim, False)), dim, 1, 1)
    after = shift(_cumprod_reversed(x, dim), dim, -1, 1)
    return before * after


#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {"cumsum": cumsum, "cumprod": cumprod}
