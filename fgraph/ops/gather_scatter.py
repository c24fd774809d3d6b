"""Gather and scatter along a dimension: gather, scatter, scatter_add, scatter_reduce, take_along_dim.

``index`` is an int32/int64 tensor with as many dimensions as ``input``; element
``i = (i0, ..., ik, ...)`` of ``index`` addresses position ``i`` of ``input`` with
coordinate ``dim`` replaced by ``index[i]``. Out-of-range indices raise
``IndexError`` eagerly (the check is skipped under tracing).

Derivatives (all written in fgraph ops, so every order works):

* ``gather``: ``scatter_add`` of the gradient into zeros; its own gradient is ``gather`` again.
* ``scatter``: ``input`` gets the gradient with the scattered positions zeroed,
  ``src`` gets ``gather`` of the gradient (duplicate indices are undefined, as in PyTorch).
* ``scatter_add``: ``input`` gets the gradient, ``src`` gets its ``gather``.
* ``scatter_reduce``: as PyTorch for ``sum``/``mean``/``prod``; zeros in the
  product are handled exactly, second derivatives included (PyTorch refuses the
  double backward when two zeros meet at one position); for ``amax``/``amin`` the gradient is split evenly
  between all elements equal to the result. Unlike PyTorch (which also counts an
  excluded ``input`` element that happens to equal the result), with
  ``include_self=False`` only the ``src`` elements that took part are counted,
  so the gradient always sums to the output gradient.

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> fg.gather(x, 1, fg.tensor([[1, 0], [0, 0]])).tolist()
    [[2.0, 1.0], [3.0, 3.0]]
    >>> fg.zeros(3).scatter_add(0, fg.tensor([0, 0, 2]), fg.ones(3)).tolist()
    [2.0, 0.0, 1.0]
"""
from __future__ import annotations

from typing import Any, Optional

import jax.numpy as jnp
import numpy as np
from jax import lax

from fgraph.errors import OpError
from fgraph.ops._declare import apply_op, declare
from fgraph.ops._index_checks import check_bounds, check_tensor, hashable_scalar, index_array, norm_dim
from fgraph.ops._complex import refuse_complex
from fgraph.ops.elementwise import div, eq, logical_and, logical_not, mul, sub, to_dtype, where
from fgraph.ops.shape import expand, reshape
from fgraph.tensor import Tensor, _wrap

REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


# -- kernels ------------------------------------------------------------------------------------------
def _grid(index, dim):
    """The index tuple that addresses, for each element of ``index``, its own coordinates with
    coordinate ``dim`` replaced by its value (``iota`` grids elsewhere)."""
    shape = index.shape
    return tuple(index if d == dim else lax.broadcasted_iota(index.dtype, shape, d) for d in range(index.ndim))


def _gather_forward(x, index, *, dim):
    return x[_grid(index, dim)]


def _scatter_forward(x, index, src, *, dim):
    return x.at[_grid(index, dim)].set(jnp.asarray(src).astype(x.dtype))


def _scatter_add_forward(x, index, src, *, dim):
    return x.at[_grid(index, dim)].add(src)


def _identity(reduce, dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if jnp.issubdtype(dtype, jnp.inexact):
        return -jnp.inf if reduce == "amax" else jnp.inf
    info = jnp.iinfo(dtype) if jnp.issubdtype(dtype, jnp.integer) else None
    if info is None:  # bool
        return reduce == "amin"
    return info.min if reduce == "amax" else info.max


def _scatter_reduce_forward(x, index, src, *, dim, reduce, include_self):
    idx = _grid(index, dim)
    hit = None
    if not include_self:
        hit = jnp.zeros(x.shape, bool).at[idx].set(True)
        x = jnp.where(hit, jnp.asarray(_identity(reduce, x.dtype), x.dtype), x)
    at = x.at[idx]
    if reduce in ("sum", "mean"):
        out = at.add(src)
    elif reduce == "prod":
        out = at.multiply(src)
    elif reduce == "amax":
        out = at.max(src)
    else:
        out = at.min(src)
    if reduce == "mean":
        base = jnp.ones(x.shape, x.dtype) if include_self else (~hit).astype(x.dtype)
        count = base.at[idx].add(jnp.ones(index.shape, x.dtype))
        out = out / count if jnp.issubdtype(x.dtype, jnp.inexact) else out // count
    return out


# -- derivative rules ------------------------------------------------------------------------------------
def _zeros(shape: tuple, dtype: Any) -> Tensor:
    return _wrap(jnp.zeros(shape, dtype))


def _gather_rule(ctx, g):
    index = ctx.inputs[1]
    return _scatter_add(_zeros(ctx.shapes[0], g.dtype), ctx.params.dim, index, g), None


def _scatter_rule(ctx, g):
    index = ctx.inputs[1]
    dim = ctx.params.dim
    gx = _scatter(g, dim, index, 0) if ctx.needs[0] else None
    gsrc = _gather(g, dim, index) if ctx.needs[2] else None
    return gx, None, gsrc


def _scatter_value_rule(ctx, g):
    return _scatter(g, ctx.params.dim, ctx.inputs[1], 0), None, None


def _scatter_add_rule(ctx, g):
    index = ctx.inputs[1]
    gsrc = _gather(g, ctx.params.dim, index) if ctx.needs[2] else None
    return g, None, gsrc


def _hit_mask(shape: tuple, dim: int, index: Any) -> Tensor:
    """Where ``scatter`` along ``dim`` at ``index`` writes (a constant bool tensor)."""
    return _scatter(_zeros(shape, bool), dim, index, True)


def _scatter_reduce_rule(ctx, g):
    x, index, src = ctx.inputs
    p = ctx.params
    dim, reduce, include_self = p.dim, p.reduce, p.include_self
    needs_x, needs_src = ctx.needs[0], ctx.needs[2]
    excluded = None if include_self else _hit_mask(x.shape, dim, index)  # input positions left out
    if reduce in ("sum", "mean"):
        if reduce == "mean":
            base = _wrap(jnp.ones(x.shape, g.dtype)) if include_self else to_dtype(logical_not(excluded), g.dtype)
            g = div(g, _scatter_add(base, dim, index, _wrap(jnp.ones(index.shape, g.dtype))))
        gx = g if needs_x else None
        gsrc = _gather(g, dim, index) if needs_src else None
    elif reduce == "prod":
        gx, gsrc = _prod_grads(ctx, g, x, index, src, excluded)
    else:  # amax / amin: split evenly between the elements equal to the result
        result = ctx.result
        x_is = eq(x, result)
        if excluded is not None:
            x_is = logical_and(x_is, logical_not(excluded))
        src_is = eq(src, _gather(result, dim, index))
        count = _scatter_add(to_dtype(x_is, g.dtype), dim, index, to_dtype(src_is, g.dtype))
        g = div(g, count)
        gx = where(x_is, g, 0.0) if needs_x else None  # x_is is already false where x is excluded
        gsrc = where(src_is, _gather(g, dim, index), 0.0) if needs_src else None
        return gx, None, gsrc
    if gx is not None and excluded is not None:
        gx = where(excluded, 0.0, gx)
    return gx, None, gsrc


def _prod_grads(ctx, g, x, index, src, excluded):
    """d prod / d factor = the product of the other factors, exactly and differentiably with zeros.

    A non-zero factor ``f`` gets ``result / f``. At a zero factor, with ``P`` the
    product of the non-zero factors at its position and ``z`` the number of zero
    factors there: ``P`` if ``z == 1``; if ``z == 2``, ``(S - f) * P`` where ``S``
    is the sum of the zero factors (value 0, but its derivative picks out the
    other zero, so second derivatives are right too); 0 if ``z > 2``.
    """
    dim, include_self = ctx.params.dim, ctx.params.include_self
    result = ctx.result
    x_zero, src_zero = eq(x, 0), eq(src, 0)
    x_counted = x_zero if excluded is None else logical_and(x_zero, logical_not(excluded))
    x_safe, src_safe = where(x_zero, 1.0, x), where(src_zero, 1.0, src)
    nonzero_prod = _scatter_reduce(x_safe, dim, index, src_safe, "prod", include_self)
    zeros = _scatter_add(to_dtype(x_counted, g.dtype), dim, index, to_dtype(src_zero, g.dtype))
    zero_sum = _scatter_add(where(x_counted, x, 0.0), dim, index, where(src_zero, src, 0.0))

    def others(f, f_zero, f_safe, result_at, prod_at, zeros_at, zero_sum_at):
        at_zero = where(eq(zeros_at, 1), prod_at, where(eq(zeros_at, 2), mul(sub(zero_sum_at, f), prod_at), 0.0))
        return where(f_zero, at_zero, div(result_at, f_safe))

    gx = mul(g, others(x, x_zero, x_safe, result, nonzero_prod, zeros, zero_sum)) if ctx.needs[0] else None
    gsrc = None
    if ctx.needs[2]:
        at = [_gather(t, dim, index) for t in (g, result, nonzero_prod, zeros, zero_sum)]
        gsrc = mul(at[0], others(src, src_zero, src_safe, *at[1:]))
    return gx, gsrc


GATHER = declare("gather", _gather_forward, _gather_rule, params=("dim",), save_inputs=(1,))
SCATTER = declare("scatter", _scatter_forward, _scatter_rule, params=("dim",), save_inputs=(1,))
SCATTER_VALUE = declare("scatter_value", _scatter_forward, _scatter_value_rule, params=("dim",), save_inputs=(1,),
                        node_name="ScatterBackward1")
SCATTER_ADD = declare("scatter_add", _scatter_add_forward, _scatter_add_rule, params=("dim",), save_inputs=(1,))
SCATTER_REDUCE = declare("scatter_reduce", _scatter_reduce_forward, _scatter_reduce_rule,
                         params=("dim", "reduce", "include_self"), save_inputs=True, save_result=True, tangent="rule")


# Unchecked appliers, for rules and composites (arguments already validated).
def _gather(x: Tensor, dim: int, index: Any) -> Tensor:
    return apply_op(GATHER, (x, index), GATHER.Params(dim))


def _scatter(x: Tensor, dim: int, index: Any, src: Any) -> Tensor:
    op = SCATTER if isinstance(src, Tensor) else SCATTER_VALUE
    return apply_op(op, (x, index, src), op.Params(dim))


def _scatter_add(x: Tensor, dim: int, index: Any, src: Tensor) -> Tensor:
    return apply_op(SCATTER_ADD, (x, index, src), SCATTER_ADD.Params(dim))


def _scatter_reduce(x: Tensor, dim: int, index: Any, src: Tensor, reduce: str, include_self: bool) -> Tensor:
    return apply_op(SCATTER_REDUCE, (x, index, src), SCATTER_REDUCE.Params(dim, reduce, include_self))


# -- argument checks ------------------------------------------------------------------------------------
def _shape1(shape: tuple) -> tuple:
    return shape if shape else (1,)  # PyTorch treats 0-d tensors as 1-d here


def _check_gather_like(op: str, input: Tensor, dim: Any, index: Any, src: Optional[Tensor] = None) -> tuple:
    """Validate a gather/scatter call; return ``(dim, index array)`` (0-d tensors lifted to 1-d)."""
    check_tensor(input, op)
    idx = index_array(index, op)
    shape, ishape = _shape1(input.shape), _shape1(tuple(idx.shape))
    d = norm_dim(dim, input.ndim, op)
    if len(ishape) != len(shape):
        raise OpError(
            f"{op}: index must have as many dimensions as input, got index of shape {tuple(idx.shape)} "
            f"for input of shape {input.shape}; unsqueeze or reshape the index."
        )
    sshape = None if src is None else _shape1(src.shape)
    if sshape is not None and len(sshape) != len(shape):
        raise OpError(
            f"{op}: src must have as many dimensions as input, got src of shape {src.shape} "
            f"for input of shape {input.shape}."
        )
    for k, n in enumerate(ishape):
        too_big = (k != d and n > shape[k]) or (sshape is not None and n > sshape[k])
        if too_big:
            against = f"input {input.shape} apart from dimension {d}"
            if sshape is not None:
                against += f", and no larger than src {src.shape}"
            raise OpError(f"{op}: index of shape {tuple(idx.shape)} must be no larger than {against} (dimension {k}).")
    if src is not None and src.dtype != input.dtype:
        raise OpError(
            f"{op}: src dtype {src.dtype} does not match input dtype {input.dtype}; "
            f"cast one of them with .to({input.dtype})."
        )
    check_bounds(op, idx, shape[d], d, negative=False)
    return d, (idx if idx.ndim else idx.reshape(ishape))


def _lifted(input: Tensor) -> Tensor:
    return reshape(input, (1,)) if input.ndim == 0 else input


def _fit_src(src: Tensor, ishape: tuple) -> Tensor:
    """``src`` cut to the index's shape (PyTorch lets ``src`` be larger; the gradient pads it back)."""
    src = _lifted(src)
    if src.shape == ishape:
        return src
    return src[tuple(slice(0, n) for n in ishape)]


def _finish(out: Tensor, shape: tuple) -> Tensor:
    return reshape(out, shape) if out.shape != shape else out


# -- public functions --------------------------------------------------------------------------------------
def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """``out[i] = input[i with coordinate dim replaced by index[i]]``; the output has ``index``'s shape.

    ``index`` needs as many dimensions as ``input`` and may be smaller than it
    outside ``dim``. ``sparse_grad`` is accepted for compatibility (gradients are dense).

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        >>> fg.gather(x, 1, fg.tensor([[2], [0]])).tolist()
        [[3.0], [4.0]]
    """
    d, idx = _check_gather_like("gather", input, dim, index)
    out = _gather(_lifted(input), d, idx)
    return _finish(out, tuple(index.shape))


def scatter(input: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None,
            reduce: Optional[str] = None) -> Tensor:
    """A copy of ``input`` with ``src[i]`` (or the number ``value``) written at each position ``index`` names.

    ``out[i with coordinate dim replaced by index[i]] = src[i]``. With duplicate
    indices the written value is undefined, as in PyTorch. The deprecated
    ``reduce='add'|'multiply'`` maps to :func:`scatter_reduce` (``sum``/``prod``).

    Example:
        >>> import fgraph as fg
        >>> fg.scatter(fg.zeros(2, 3), 1, fg.tensor([[2], [0]]), fg.tensor([[7.0], [8.0]])).tolist()
        [[0.0, 0.0, 7.0], [8.0, 0.0, 0.0]]
        >>> fg.zeros(3).scatter(0, fg.tensor([1]), value=5.0).tolist()
        [0.0, 5.0, 0.0]
    """
    if (src is None) == (value is None):
        raise TypeError("scatter: pass exactly one of src (a Tensor or a number) or value (a number).")
    if src is None:
        src = value
    if reduce is not None:
        modes = {"add": "sum", "multiply": "prod"}
        if reduce not in modes:
            raise OpError(f"scatter: reduce must be 'add' or 'multiply', got {reduce!r}; see scatter_reduce.")
        check_tensor(input, "scatter")
        if not isinstance(src, Tensor):
            src = expand(_wrap(jnp.asarray(src, input.dtype)), tuple(index.shape))
        return scatter_reduce(input, dim, index, src, modes[reduce])
    if isinstance(src, Tensor):
        d, idx = _check_gather_like("scatter", input, dim, index, src)
        out = _scatter(_lifted(input), d, idx, _fit_src(src, tuple(idx.shape)))
    else:
        d, idx = _check_gather_like("scatter", input, dim, index)
        out = _scatter(_lifted(input), d, idx, hashable_scalar(src, "scatter"))
    return _finish(out, input.shape)


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of ``input`` with each ``src[i]`` added at the position ``index`` names (duplicates add up).

    Example:
        >>> import fgraph as fg
        >>> fg.scatter_add(fg.zeros(2, 2), 0, fg.tensor([[1, 1]]), fg.tensor([[1.0, 2.0]])).tolist()
        [[0.0, 0.0], [1.0, 2.0]]
    """
    check_tensor(src, "scatter_add", "src")
    d, idx = _check_gather_like("scatter_add", input, dim, index, src)
    out = _scatter_add(_lifted(input), d, idx, _fit_src(src, tuple(idx.shape)))
    return _finish(out, input.shape)


def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """Reduce the ``src`` elements that ``index`` sends to each position (``sum``, ``prod``, ``mean``,
    ``amax`` or ``amin``), together with ``input``'s own value unless ``include_self=False``.

    Positions no index names keep ``input``'s value.

    Example:
        >>> import fgraph as fg
        >>> x, src = fg.tensor([1.0, 2.0, 3.0]), fg.tensor([4.0, 5.0, 6.0])
        >>> fg.scatter_reduce(x, 0, fg.tensor([0, 0, 1]), src, "amax").tolist()
        [5.0, 6.0, 3.0]
        >>> x.scatter_reduce(0, fg.tensor([0, 0, 1]), src, "mean", include_self=False).tolist()
        [4.5, 6.0, 3.0]
    """
    if reduce not in REDUCTIONS:
        raise OpError(f"scatter_reduce: reduce must be one of {REDUCTIONS}, got {reduce!r}.")
    check_tensor(src, "scatter_reduce", "src")
    if reduce in ("amax", "amin"):
        refuse_complex(f"scatter_reduce(reduce={reduce!r})", input, src)
    d, idx = _check_gather_like("scatter_reduce", input, dim, index, src)
    out = _scatter_reduce(_lifted(input), d, idx, _fit_src(src, tuple(idx.shape)), reduce, bool(include_self))
    return _finish(out, input.shape)


def take_along_dim(input: Tensor, indices: Tensor, dim: Optional[int] = None) -> Tensor:
    """Pick values along ``dim`` at ``indices`` (negative ones count from the end), broadcasting
    ``input`` and ``indices`` in the other dimensions; with ``dim=None`` both are flattened.

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([[10.0, 30.0, 20.0], [60.0, 40.0, 50.0]])
        >>> fg.take_along_dim(x, fg.tensor([[1], [0]]), dim=1).tolist()
        [[30.0], [60.0]]
        >>> fg.take_along_dim(x, fg.tensor([5, 0])).tolist()
        [50.0, 10.0]
    """
    op = "take_along_dim"
    check_tensor(input, op)
    idx = index_array(indices, op, "indices")
    if dim is None:
        flat = reshape(input, (-1,))
        check_bounds(op, idx, flat.shape[0], 0, negative=False)
        return _gather(flat, 0, idx.reshape(-1))
    if idx.ndim != input.ndim:
        raise OpError(
            f"{op}: input and indices should have the same number of dimensions, got input of shape "
            f"{input.shape} and indices of shape {tuple(idx.shape)}."
        )
    d = norm_dim(dim, input.ndim, op)
    if input.ndim == 0:
        return _finish(gather(input, 0, idx), ())
    size = input.shape[d]
    check_bounds(op, idx, size, d, negative=True)
    try:
        x_shape = np.broadcast_shapes(input.shape[:d] + (1,) + input.shape[d + 1:],
                                      tuple(idx.shape[:d]) + (1,) + tuple(idx.shape[d + 1:]))
    except ValueError:
        raise OpError(
            f"{op}: input of shape {input.shape} and indices of shape {tuple(idx.shape)} must broadcast "
            f"in every dimension except dim {d}."
        ) from None
    x_shape = x_shape[:d] + (size,) + x_shape[d + 1:]
    i_shape = x_shape[:d] + (idx.shape[d],) + x_shape[d + 1:]
    if tuple(idx.shape) != i_shape:
        idx = jnp.broadcast_to(idx, i_shape)
    return _gather(expand(input, x_shape), d, idx)  # the kernel's indexing wraps negative indices


#: Exported as ``fgraph.<name>``.
__all__ = ["gather", "scatter", "scatter_add", "scatter_reduce", "take_along_dim"]
#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {
    "gather": gather, "scatter": scatter, "scatter_add": scatter_add, "scatter_reduce": scatter_reduce,
    "take_along_dim": take_along_dim,
}
