"""Numerically careful scans and reductions: ``logcumsumexp cummax cummin nansum nanmean
renorm aminmax``.

* ``logcumsumexp``'s gradient ``grad_k = sum_{j>=k} g_j exp(x_k - out_j)`` is computed
  without overflow as ``exp(x_k - out_k) * S_k`` with ``S_k = g_k + exp(out_k - out_{k+1}) S_{k+1}``
  (every factor is at most 1), a reversed linear recurrence, differentiable again. Leading
  ``-inf`` inputs give ``-inf`` outputs and NaN gradients there, as in PyTorch.
* ``cummax``/``cummin`` return ``(values, indices)`` named results; ties pick the latest
  index and NaN propagates (its latest index), as in PyTorch. The gradient of ``values``
  goes to the selected positions.
* ``nansum``/``nanmean`` skip NaNs (gradient 0 there); ``aminmax`` splits the gradient
  evenly among ties, like ``amin``/``amax``.

Example:
    >>> import fgraph as fg
    >>> fg.cummax(fg.tensor([1.0, 3.0, 3.0, 2.0]), 0).indices.tolist()
    [0, 1, 2, 2]
"""
from __future__ import annotations

import math
from collections import namedtuple
from typing import Any, Optional

import jax.numpy as jnp
from jax import lax

from fgraph.errors import OpError
from fgraph.ops._declare import apply_op, apply_unary, declare
from fgraph.ops._math_helpers import check_number
from fgraph.ops.elementwise import abs as _abs, exp, gt, logical_not, to_dtype, where
from fgraph.ops.gather_scatter import scatter_add
from fgraph.ops.reduction import Dim, accumulation_input, check_tensor, normalize_dims, sum as _sum
from fgraph.ops.reduction_minmax import amax, amin
from fgraph.ops.rounding import isnan
from fgraph.ops.scan import _scan_dim, linear_recurrence, shift
from fgraph.tensor import Tensor, _wrap

#: ``cummax``'s result, like ``torch.return_types.cummax``.
CummaxResult = namedtuple("cummax", ("values", "indices"))
#: ``cummin``'s result, like ``torch.return_types.cummin``.
CumminResult = namedtuple("cummin", ("values", "indices"))
#: ``aminmax``'s result, like ``torch.return_types.aminmax``.
AminmaxResult = namedtuple("aminmax", ("min", "max"))


def _index_dtype() -> Any:
    return jnp.dtype(jnp.result_type(int))


# -- logcumsumexp -------------------------------------------------------------------------------------------
def _logcumsumexp_forward(x, *, dim):
    x = x if jnp.issubdtype(x.dtype, jnp.inexact) else x.astype(jnp.float32)
    if x.ndim == 0 or x.shape[dim] == 0:
        return x
    return lax.cumlogsumexp(x, axis=dim)


def _logcumsumexp_rule(ctx, g):
    (x,) = ctx.inputs
    out = ctx.result
    dim = ctx.params.dim
    if x.ndim == 0 or x.shape[dim] <= 1:
        return (g * exp(x - out),)
    # a_k = exp(out_k - out_{k+1}) <= 1; the last slot (out_n = +inf) is 0 and never read. Where
    # out_k = out_{k+1} = +-inf, a_k = 0 (as PyTorch: the NaN stays at the infinite positions).
    d = out - shift(out, dim, -1, math.inf)
    a = exp(where(isnan(d), -math.inf, d))
    return (exp(x - out) * linear_recurrence(a, g, dim, True),)


LOGCUMSUMEXP = declare("logcumsumexp", _logcumsumexp_forward, _logcumsumexp_rule, params=("dim",),
                       save_inputs=True, save_result=True)


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """``log(cumsum(exp(input), dim))``, computed stably (integers give float32).

    Example:
        >>> import fgraph as fg
        >>> [round(v, 4) for v in fg.logcumsumexp(fg.tensor([0.0, 0.0, float("-inf")]), 0).tolist()]
        [0.0, 0.6931, 0.6931]
    """
    d = _scan_dim(input, dim, "logcumsumexp")
    return apply_unary(LOGCUMSUMEXP, input, LOGCUMSUMEXP.Params(d))


# -- cummax, cummin -------------------------------------------------------------------------------------------
def _cumextreme_forward(x, *, dim, largest):
    idx_dtype = _index_dtype()
    if x.ndim == 0:
        return x, jnp.zeros((), idx_dtype)
    idx = lax.broadcasted_iota(idx_dtype, x.shape, dim)
    if x.shape[dim] == 0:
        return x, idx

    def combine(earlier, later):
        va, ia = earlier
        vb, ib = later
        # The later element wins ties and every NaN (PyTorch: x >= running or isnan(x)).
        take = jnp.isnan(vb) | (vb >= va if largest else vb <= va) if jnp.issubdtype(x.dtype, jnp.inexact) else (
            vb >= va if largest else vb <= va)
        return jnp.where(take, vb, va), jnp.where(take, ib, ia)

    return lax.associative_scan(combine, (x, idx), axis=dim)


def _cumextreme_rule(ctx, grads):
    g = grads[0]
    indices = ctx.result[1]
    dim = ctx.params.dim
    if g.ndim == 0:
        return (g,)
    zeros = _wrap(jnp.zeros(g.shape, g.dtype))
    return (scatter_add(zeros, dim, indices, g),)


CUMMAX = declare("cummax", _cumextreme_forward, _cumextreme_rule, params=("dim", "largest"), save_result=True,
                 num_outputs=2, real_only=True, tangent="rule")
CUMMIN = declare("cummin", _cumextreme_forward, _cumextreme_rule, params=("dim", "largest"), save_result=True,
                 num_outputs=2, real_only=True, tangent="rule")


def cummax(input: Tensor, dim: int) -> CummaxResult:
    """Running maximum along ``dim`` and its index: ``(values, indices)``. Ties take the latest
    index; a NaN propagates. The gradient goes to the element at each index.

    Example:
        >>> import fgraph as fg
        >>> fg.cummax(fg.tensor([1.0, 0.0, 2.0]), dim=0).values.tolist()
        [1.0, 1.0, 2.0]
    """
    d = _scan_dim(input, dim, "cummax")
    return CummaxResult(*apply_op(CUMMAX, (input,), CUMMAX.Params(d, True)))


def cummin(input: Tensor, dim: int) -> CumminResult:
    """Running minimum along ``dim`` and its index: ``(values, indices)`` (ties: latest index).

    Example:
        >>> import fgraph as fg
        >>> fg.cummin(fg.tensor([1.0, 0.0, 2.0]), dim=0).indices.tolist()
        [0, 1, 1]
    """
    d = _scan_dim(input, dim, "cummin")
    return CumminResult(*apply_op(CUMMIN, (input,), CUMMIN.Params(d, False)))


# -- nansum, nanmean -------------------------------------------------------------------------------------------
def nansum(input: Tensor, dim: Dim = None, keepdim: bool = False, *, dtype: Optional[Any] = None) -> Tensor:
    """Sum over ``dim`` treating NaN as 0 (gradient 0 at NaNs); integers accumulate as in :func:`sum`.

    Example:
        >>> import fgraph as fg
        >>> fg.nansum(fg.tensor([1.0, float("nan"), 2.0])).item()
        3.0
    """
    check_tensor(input, "nansum")
    x = accumulation_input(input, dtype, "nansum")
    if jnp.issubdtype(x.dtype, jnp.inexact):
        x = where(isnan(x), 0.0, x)
    return _sum(x, dim, keepdim)


def nanmean(input: Tensor, dim: Dim = None, keepdim: bool = False, *, dtype: Optional[Any] = None) -> Tensor:
    """Mean over ``dim`` of the non-NaN elements (NaN where all are NaN); floating point only.

    Example:
        >>> import fgraph as fg
        >>> fg.nanmean(fg.tensor([1.0, float("nan"), 3.0])).item()
        2.0
    """
    check_tensor(input, "nanmean")
    x = input if dtype is None else to_dtype(input, dtype)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        raise OpError(f"nanmean: expected a floating point input, got {x.dtype}; cast it first, e.g. x.float(), "
                      "or pass dtype=fgraph.float32.")
    present = logical_not(isnan(x))
    count = _sum(to_dtype(present, x.dtype), dim, keepdim)
    return _sum(where(present, x, 0.0), dim, keepdim) / count


# -- renorm ---------------------------------------------------------------------------------------------------
def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """Each slice ``input.select(dim, i)`` whose ``p``-norm exceeds ``maxnorm`` scaled down to norm
    ``maxnorm`` (by ``maxnorm / (norm + 1e-7)``, as PyTorch); gradients flow through the norms too.

    Example:
        >>> import fgraph as fg
        >>> [round(v, 4) for v in fg.renorm(fg.tensor([[3.0, 4.0], [0.3, 0.4]]), 2, 0, 1.0)[:, 0].tolist()]
        [0.6, 0.3]
    """
    from fgraph.ops.linalg_norms import vector_norm_of

    check_tensor(input, "renorm")
    if not jnp.issubdtype(input.dtype, jnp.inexact):
        raise OpError(f"renorm: expected a floating point input, got {input.dtype}; cast it first, e.g. x.float().")
    p = check_number("renorm", "p", p)
    maxnorm = check_number("renorm", "maxnorm", maxnorm)
    if p <= 0:
        raise OpError(f"renorm: p must be positive (non-positive norms are not supported), got p={p}.")
    if maxnorm < 0:
        raise OpError(f"renorm: maxnorm must be non-negative, got maxnorm={maxnorm}.")
    if input.ndim == 0:
        raise OpError("renorm: input needs at least one dimension (got a 0-d tensor); the slices are "
                      "input.select(dim, i).")
    (d,) = normalize_dims(dim, input.ndim, "renorm")
    others = tuple(i for i in range(input.ndim) if i != d)
    norms = vector_norm_of(input, p, others, True) if others else _abs(input)
    over = gt(norms, maxnorm)
    factor = where(over, maxnorm / (where(over, norms, 1.0) + 1e-7), 1.0)
    return input * factor


# -- aminmax --------------------------------------------------------------------------------------------------
def aminmax(input: Tensor, *, dim: Optional[int] = None, keepdim: bool = False) -> AminmaxResult:
    """``(amin(input, dim), amax(input, dim))`` as a named result ``(min, max)``; over all
    elements when ``dim`` is None. Ties split the gradient evenly.

    Example:
        >>> import fgraph as fg
        >>> r = fg.aminmax(fg.tensor([[1.0, 4.0], [3.0, 2.0]]), dim=1)
        >>> r.min.tolist(), r.max.tolist()
        ([1.0, 2.0], [4.0, 3.0])
    """
    check_tensor(input, "aminmax")
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int)):
        raise OpError(f"aminmax: dim must be an int or None, got {type(dim).__name__} {dim!r}.")
    if dim is None:
        if keepdim:
            dims = tuple(range(input.ndim))
            return AminmaxResult(amin(input, dims, True), amax(input, dims, True))
        return AminmaxResult(amin(input), amax(input))
    return AminmaxResult(amin(input, dim, keepdim), amax(input, dim, keepdim))


#: Exported as ``fgraph.<name>``.
__all__ = ["logcumsumexp", "cummax", "cummin", "nansum", "nanmean", "renorm", "aminmax"]
#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {name: globals()[name] for name in __all__}
