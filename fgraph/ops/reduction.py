"""Reductions over ``dim`` (int, tuple or all) with ``keepdim``: sum, mean, prod,
logsumexp, var, std (and var_mean, std_mean).

Max/min-like reductions live in :mod:`fgraph.ops.reduction_minmax`, norms in
:mod:`fgraph.ops.reduction_norm`, scans (cumsum, cumprod) in :mod:`fgraph.ops.scan`.
Every rule here is written in fgraph ops, so all of them differentiate twice:

* ``prod``'s gradient is ``grad * prod_{j != i} x_j``, computed from exclusive
  cumulative products (PyTorch's ``prod_safe_zeros_backward``): exact with one
  zero or several, no division, and differentiable again.
* ``std``'s gradient is 0 where the result is 0, as in PyTorch.

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> fg.sum(x, dim=0).tolist(), x.mean().item()
    ([4.0, 6.0], 2.5)
    >>> fg.prod(x, 1).tolist(), fg.var(x, dim=0).tolist()
    ([2.0, 12.0], [2.0, 2.0])
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

import jax.numpy as jnp

from fgraph._dtypes import canonical_dtype
from fgraph.errors import OpError
from fgraph.ops._declare import apply_unary, declare
from fgraph.tensor import Tensor, type_name

Dim = Union[int, Sequence[int], None]


def normalize_dims(dim: Dim, ndim: int, op: str) -> tuple[int, ...]:
    """``dim`` as a sorted tuple of non-negative axes (all axes for ``None``)."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, Tensor) or not isinstance(dim, (int, tuple, list)):
        raise OpError(f"{op}: dim must be an int or a tuple of ints, got {type(dim).__name__} {dim!r}.")
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    out = []
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, int):
            raise OpError(f"{op}: dim must be an int or a tuple of ints, got {dims!r}.")
        if not -max(ndim, 1) <= d < max(ndim, 1):
            raise IndexError(
                f"{op}: dim {d} is out of range for a tensor with {ndim} dimensions "
                f"(expected a value in [{-max(ndim, 1)}, {max(ndim, 1) - 1}])."
            )
        out.append(d % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise OpError(f"{op}: dim {dims} names a dimension twice; list each dimension once.")
    return tuple(sorted(out)) if ndim else ()


def check_tensor(input: Any, op: str) -> None:
    """Raise a clear error when ``input`` is not a Tensor."""
    if not isinstance(input, Tensor):
        raise OpError(f"{op}: expected a Tensor as input, got {type_name(input)}; wrap it with fgraph.tensor(...).")


def check_floating(input: Tensor, op: str) -> None:
    """Raise a clear error unless ``input`` is floating point (mean, var, std, norm...)."""
    check_tensor(input, op)
    if not jnp.issubdtype(input.dtype, jnp.inexact):
        raise OpError(
            f"{op}: input has dtype {input.dtype} (shape {tuple(input.shape)}) but {op} needs a floating "
            "point tensor; convert it first, e.g. x.float() or x.double()."
        )


def accumulation_input(input: Tensor, dtype: Any, op: str) -> Tensor:
    """The input cast as PyTorch's sum-like ops do: to ``dtype`` if given, else bools and
    narrow integers to the widest integer type (int64, or int32 without x64)."""
    from fgraph.ops.elementwise import to_dtype

    check_tensor(input, op)
    if dtype is not None:
        return to_dtype(input, canonical_dtype(dtype, op))
    wide = jnp.dtype(jnp.result_type(int))
    dt = input.dtype
    if dt == jnp.bool_ or (jnp.issubdtype(dt, jnp.integer) and dt.itemsize < wide.itemsize):
        return to_dtype(input, wide)
    return input


def reduced_count(shape: tuple[int, ...], dims: tuple[int, ...]) -> int:
    """How many elements each output element reduces over."""
    return math.prod(shape[d] for d in dims)


def expand_reduced(g: Tensor, shape: tuple[int, ...], dims: tuple[int, ...], keepdim: bool) -> Tensor:
    """Broadcast a reduced gradient back to the input ``shape``."""
    from fgraph.ops.shape import expand, reshape

    if not keepdim:
        kept = tuple(1 if i in dims else s for i, s in enumerate(shape))
        g = reshape(g, kept)
    return expand(g, shape)


def _sum_forward(x, *, dims, keepdim):
    return jnp.sum(x, axis=dims, keepdims=keepdim)


def _mean_forward(x, *, dims, keepdim):
    return jnp.mean(x, axis=dims, keepdims=keepdim)


def _sum_rule(ctx, g):
    p = ctx.params
    return (expand_reduced(g, ctx.shapes[0], p.dims, p.keepdim),)


def _mean_rule(ctx, g):
    p = ctx.params
    shape = ctx.shapes[0]
    count = math.prod(shape[d] for d in p.dims)
    return (expand_reduced(g, shape, p.dims, p.keepdim) / max(count, 1),)


SUM = declare("sum", _sum_forward, _sum_rule, params=("dims", "keepdim"))
MEAN = declare("mean", _mean_forward, _mean_rule, params=("dims", "keepdim"))


def sum(input: Tensor, dim: Dim = None, keepdim: bool = False) -> Tensor:
    """Sum over ``dim`` (all dimensions by default).

    Example:
        >>> import fgraph as fg
        >>> fg.sum(fg.ones(2, 3), dim=1).tolist()
        [3.0, 3.0]
    """
    if not isinstance(input, Tensor):
        check_tensor(input, "sum")
    return apply_unary(SUM, input, SUM.Params(normalize_dims(dim, input.ndim, "sum"), bool(keepdim)))


def mean(input: Tensor, dim: Dim = None, keepdim: bool = False) -> Tensor:
    """Mean over ``dim`` (all dimensions by default); the input must be floating point.

    Example:
        >>> import fgraph as fg
        >>> fg.mean(fg.tensor([[1.0, 2.0], [3.0, 5.0]]), dim=1).tolist()
        [1.5, 4.0]
    """
    check_floating(input, "mean")
    return apply_unary(MEAN, input, MEAN.Params(normalize_dims(dim, input.ndim, "mean"), bool(keepdim)))


# -- prod -----------------------------------------------------------------------------------------
def _prod_forward(x, *, dims, keepdim):
    return jnp.prod(x, axis=dims, keepdims=keepdim)


def _prod_rule(ctx, g):
    from fgraph.ops.scan import exclusive_products
    from fgraph.ops.shape import permute, reshape

    (x,) = ctx.inputs
    dims, keepdim = ctx.params
    shape = x.shape
    g = expand_reduced(g, shape, dims, keepdim)
    if not dims or 0 in shape:
        return (g,)
    if len(dims) == 1:
        return (g * exclusive_products(x, dims[0]),)
    # Several dimensions: move them last, flatten them into one, and take the products there.
    kept = tuple(d for d in range(len(shape)) if d not in dims)
    order = kept + dims
    moved = permute(x, order) if order != tuple(range(len(shape))) else x
    flat = reshape(moved, tuple(shape[d] for d in kept) + (reduced_count(shape, dims),))
    others = reshape(exclusive_products(flat, len(kept)), moved.shape)
    if moved is not x:
        others = permute(others, tuple(order.index(d) for d in range(len(shape))))
    return (g * others,)


PROD = declare("prod", _prod_forward, _prod_rule, params=("dims", "keepdim"), save_inputs=True)
PROD_DIM = declare("prod_dim", _prod_forward, _prod_rule, params=("dims", "keepdim"), save_inputs=True,
                   node_name="ProdBackward1")


def prod(input: Tensor, dim: Dim = None, keepdim: bool = False, *, dtype: Optional[Any] = None) -> Tensor:
    """Product over ``dim`` (all dimensions by default).

    The gradient is exact when the input holds zeros (``prod_{j != i} x_j``, no
    division) and can be differentiated again. Bool and integer inputs multiply
    as int64, as in PyTorch; ``dtype`` casts the input first. Unlike
    ``torch.prod``, ``dim`` may also be a tuple.

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([2.0, 0.0, 3.0], requires_grad=True)
        >>> (gx,) = fg.grad(fg.prod(x), [x])
        >>> gx.tolist()
        [0.0, 6.0, 0.0]
    """
    x = accumulation_input(input, dtype, "prod")
    op = PROD if dim is None else PROD_DIM
    return apply_unary(op, x, op.Params(normalize_dims(dim, x.ndim, "prod"), bool(keepdim)))


# -- logsumexp --------------------------------------------------------------------------------------
def _logsumexp_forward(x, *, dims, keepdim):
    if not dims:
        return x
    m = jnp.max(x, axis=dims, keepdims=True, initial=-jnp.inf)
    m = jnp.where(jnp.isinf(m), jnp.zeros_like(m), m)  # all -inf (or +inf) slices: no shift
    out = jnp.log(jnp.sum(jnp.exp(x - m), axis=dims, keepdims=True)) + m
    return out if keepdim else jnp.squeeze(out, axis=dims)


def _logsumexp_rule(ctx, g):
    from fgraph.ops.elementwise import exp

    (x,) = ctx.inputs
    dims, keepdim = ctx.params
    shape = x.shape
    return (expand_reduced(g, shape, dims, keepdim) * exp(x - expand_reduced(ctx.result, shape, dims, keepdim)),)


LOGSUMEXP = declare("logsumexp", _logsumexp_forward, _logsumexp_rule, params=("dims", "keepdim"),
                    save_inputs=True, save_result=True)


def logsumexp(input: Tensor, dim: Dim, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(input)))`` over ``dim``, computed stably (shifted by the maximum).

    Integer inputs are converted to float32 first, as in PyTorch.

    Example:
        >>> import fgraph as fg
        >>> round(fg.logsumexp(fg.tensor([1000.0, 1000.0]), 0).item(), 2)  # 1000 + log(2)
        1000.69
    """
    check_tensor(input, "logsumexp")
    if not jnp.issubdtype(input.dtype, jnp.inexact):
        from fgraph.ops.elementwise import to_dtype

        input = to_dtype(input, "float32")
    dims = normalize_dims(dim, input.ndim, "logsumexp")
    return apply_unary(LOGSUMEXP, input, LOGSUMEXP.Params(dims, bool(keepdim)))


# -- var / std --------------------------------------------------------------------------------------
def _dof(shape: tuple[int, ...], dims: tuple[int, ...], correction: Any) -> Any:
    """``max(n - correction, 0)``: the divisor of var (0 gives inf or nan, as in PyTorch)."""
    dof = reduced_count(shape, dims) - correction
    return dof if dof > 0 else 0


def _var_forward(x, *, dims, correction, keepdim):
    centered = x - jnp.mean(x, axis=dims, keepdims=True)
    squares = jnp.real(centered * jnp.conj(centered))  # |x - mean|^2: real for complex x too, as in PyTorch
    return jnp.sum(squares, axis=dims, keepdims=keepdim) / _dof(x.shape, dims, correction)


def _std_forward(x, *, dims, correction, keepdim):
    return jnp.sqrt(_var_forward(x, dims=dims, correction=correction, keepdim=keepdim))


def _var_grad(g: Tensor, x: Tensor, params: Any) -> Tensor:
    """d var / d x applied to ``g``: ``2 conj(x - mean) / (n - correction) * g`` (the transpose of
    ``d|c|^2 = 2 Re(conj(c) dc)``; ``conj`` changes nothing for real ``x``)."""
    from fgraph.ops.complex_parts import conj

    dims, correction, keepdim = params
    dof = _dof(x.shape, dims, correction)
    scale = 2.0 / dof if dof else math.inf
    return expand_reduced(g, x.shape, dims, keepdim) * conj(x - mean(x, dims, keepdim=True)) * scale


def _var_rule(ctx, g):
    return (_var_grad(g, ctx.inputs[0], ctx.params),)


def _std_rule(ctx, g):
    from fgraph.ops.elementwise import eq, where

    y = ctx.result
    zero = eq(y, 0)
    # d std = d var / (2 std), and 0 where std == 0 (as PyTorch), without a 0/0 in higher derivatives.
    gv = where(zero, 0.0, g / (where(zero, 1.0, y) * 2))
    return (_var_grad(gv, ctx.inputs[0], ctx.params),)


VAR = declare("var", _var_forward, _var_rule, params=("dims", "correction", "keepdim"), save_inputs=True)
STD = declare("std", _std_forward, _std_rule, params=("dims", "correction", "keepdim"), save_inputs=True,
              save_result=True)


def _var_params(op: str, input: Tensor, dim: Any, unbiased: Optional[bool], keepdim: bool,
                correction: Any) -> tuple:
    """``(dims, correction, keepdim)`` from var/std's PyTorch-style arguments."""
    check_floating(input, op)
    if isinstance(dim, bool):  # var(x, True): the legacy unbiased flag in dim's position
        if unbiased is not None:
            raise OpError(f"{op}: got a bool for dim and unbiased={unbiased}; pass dim as an int or tuple.")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise OpError(f"{op}: pass either unbiased={unbiased} or correction={correction}, not both "
                      "(unbiased=True means correction=1, unbiased=False means correction=0).")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    if isinstance(correction, Tensor) or not isinstance(correction, (int, float)) or isinstance(correction, bool):
        raise OpError(f"{op}: correction must be a Python int or float, got {correction!r}.")
    return normalize_dims(dim, input.ndim, op), correction, bool(keepdim)


def var(input: Tensor, dim: Dim = None, unbiased: Optional[bool] = None, keepdim: bool = False, *,
        correction: Optional[Any] = None) -> Tensor:
    """Variance over ``dim``: ``sum((x - mean)**2) / max(n - correction, 0)``.

    ``correction`` defaults to 1 (Bessel's correction); the legacy ``unbiased``
    flag means ``correction=1`` (True) or ``0`` (False). As in PyTorch, ``n <=
    correction`` gives inf or nan.

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([1.0, 2.0, 3.0, 4.0, 5.0])
        >>> fg.var(x).item(), fg.var(x, correction=0).item(), x.var(unbiased=False).item()
        (2.5, 2.0, 2.0)
    """
    return apply_unary(VAR, input, VAR.Params(*_var_params("var", input, dim, unbiased, keepdim, correction)))


def std(input: Tensor, dim: Dim = None, unbiased: Optional[bool] = None, keepdim: bool = False, *,
        correction: Optional[Any] = None) -> Tensor:
    """Standard deviation over ``dim``: ``sqrt(var(input, dim, correction=correction))``.

    The gradient is 0 where the result is 0 (a constant slice), as in PyTorch.

    Example:
        >>> import fgraph as fg
        >>> fg.std(fg.tensor([[1.0, 3.0], [2.0, 2.0]]), dim=1, correction=0).tolist()
        [1.0, 0.0]
    """
    return apply_unary(STD, input, STD.Params(*_var_params("std", input, dim, unbiased, keepdim, correction)))


def var_mean(input: Tensor, dim: Dim = None, unbiased: Optional[bool] = None, keepdim: bool = False, *,
             correction: Optional[Any] = None) -> tuple[Tensor, Tensor]:
    """``(var(input, ...), mean(input, ...))`` with the same arguments as :func:`var`.

    Example:
        >>> import fgraph as fg
        >>> v, m = fg.var_mean(fg.tensor([1.0, 3.0]))
        >>> v.item(), m.item()
        (2.0, 2.0)
    """
    dims, correction, keepdim = _var_params("var_mean", input, dim, unbiased, keepdim, correction)
    return (apply_unary(VAR, input, VAR.Params(dims, correction, keepdim)),
            apply_unary(MEAN, input, MEAN.Params(dims, keepdim)))


def std_mean(input: Tensor, dim: Dim = None, unbiased: Optional[bool] = None, keepdim: bool = False, *,
             correction: Optional[Any] = None) -> tuple[Tensor, Tensor]:
    """``(std(input, ...), mean(input, ...))`` with the same arguments as :func:`std`.

    Example:
        >>> import fgraph as fg
        >>> s, m = fg.std_mean(fg.tensor([1.0, 3.0]), correction=0)
        >>> s.item(), m.item()
        (1.0, 2.0)
    """
    dims, correction, keepdim = _var_params("std_mean", input, dim, unbiased, keepdim, correction)
    return (apply_unary(STD, input, STD.Params(dims, correction, keepdim)),
            apply_unary(MEAN, input, MEAN.Params(dims, keepdim)))


#: Exported as ``fgraph.<name>``.
__all__ = ["sum", "mean", "prod", "logsumexp", "var", "std", "var_mean", "std_mean"]
#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {"sum": sum, "mean": mean, "prod": prod, "logsumexp": logsumexp, "var": var, "std": std}
