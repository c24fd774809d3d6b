"""Selecting reductions: amax, amin, max, min, argmax, argmin, all, any.

Gradients follow PyTorch:

* ``amax``/``amin`` (any ``dim``) and ``max``/``min`` without ``dim`` split the gradient
  evenly among tied extreme elements (``AmaxBackward0``, ``MaxBackward1``);
* ``max``/``min`` with ``dim`` return ``(values, indices)`` (a named tuple, like
  ``torch.return_types.max``); the gradient of ``values`` goes to the element at the
  returned index only (the first extreme one), ``indices`` is an integer tensor and
  never requires grad (``MaxBackward0``);
* ``max(a, b)``/``min(a, b)`` are :func:`maximum`/:func:`minimum`;
* ``argmax``, ``argmin``, ``all`` and ``any`` are not differentiable.

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([[1.0, 5.0], [5.0, 2.0]], requires_grad=True)
    >>> values, indices = fg.max(x, dim=1)
    >>> values.tolist(), indices.tolist()
    ([5.0, 5.0], [1, 0])
    >>> (gx,) = fg.grad(fg.max(x), [x])  # two tied maxima share the gradient
    >>> gx.tolist()
    [[0.0, 0.5], [0.5, 0.0]]
"""
from __future__ import annotations

from collections import namedtuple
from typing import Any, Optional, Union

import jax.numpy as jnp
from jax import lax

from fgraph.errors import OpError
from fgraph.ops._declare import apply_op, apply_unary, declare
from fgraph.ops.reduction import Dim, check_tensor, expand_reduced, normalize_dims
from fgraph.tensor import Tensor

__all__ = ["amax", "amin", "max", "min", "argmax", "argmin", "all", "any"]

#: ``max(input, dim)``'s result, like ``torch.return_types.max``: ``(values, indices)``.
MaxResult = namedtuple("max", ("values", "indices"))
#: ``min(input, dim)``'s result, like ``torch.return_types.min``.
MinResult = namedtuple("min", ("values", "indices"))


def _index_dtype() -> Any:
    return jnp.dtype(jnp.result_type(int))  # int64 (int32 without JAX's x64 mode)


# -- amax / amin / max() / min(): ties share the gradient evenly ---------------------------------------
def _amax_forward(x, *, dims, keepdim):
    return jnp.max(x, axis=dims, keepdims=keepdim)


def _amin_forward(x, *, dims, keepdim):
    return jnp.min(x, axis=dims, keepdims=keepdim)


def _evenly_rule(ctx, g):
    from fgraph.ops.elementwise import eq, logical_and, logical_or, ne, to_dtype, where
    from fgraph.ops.reduction import sum

    (x,) = ctx.inputs
    dims, keepdim = ctx.params
    shape = x.shape
    y = expand_reduced(ctx.result, shape, dims, keepdim)
    # The selected elements: equal to the result, or NaN where the result is NaN.
    mask = logical_or(eq(x, y), logical_and(ne(x, x), ne(y, y)))
    count = sum(to_dtype(mask, g.dtype), dims, keepdim=True)
    return (where(mask, expand_reduced(g, shape, dims, keepdim) / count, 0.0),)


AMAX = declare("amax", _amax_forward, _evenly_rule, params=("dims", "keepdim"), save_inputs=True, save_result=True,
               real_only=True)
AMIN = declare("amin", _amin_forward, _evenly_rule, params=("dims", "keepdim"), save_inputs=True, save_result=True,
               real_only=True)
MAX_ALL = declare("max", _amax_forward, _evenly_rule, params=("dims", "keepdim"), save_inputs=True,
                  save_result=True, node_name="MaxBackward1", real_only=True)
MIN_ALL = declare("min", _amin_forward, _evenly_rule, params=("dims", "keepdim"), save_inputs=True,
                  save_result=True, node_name="MinBackward1", real_only=True)


def _nonempty(input: Tensor, dims: tuple[int, ...], op: str) -> None:
    for d in dims:
        if input.shape[d] == 0:
            raise IndexError(
                f"{op}: expected reduction dim {d} to have non-zero size (input shape {tuple(input.shape)}); "
                f"{op} of no elements is undefined. Reduce over non-empty dimensions only."
            )


def _extreme_all(op_name: str, op: Any, input: Tensor, dim: Dim, keepdim: bool) -> Tensor:
    check_tensor(input, op_name)
    dims = normalize_dims(None if dim == () else dim, input.ndim, op_name)
    _nonempty(input, dims, op_name)
    return apply_unary(op, input, op.Params(dims, bool(keepdim)))


def amax(input: Tensor, dim: Dim = (), keepdim: bool = False) -> Tensor:
    """Largest value over ``dim`` (int or tuple; all dimensions by default).

    Ties split the gradient evenly among the tied elements.

    Example:
        >>> import fgraph as fg
        >>> fg.amax(fg.tensor([[1.0, 4.0], [3.0, 2.0]]), dim=0).tolist()
        [3.0, 4.0]
    """
    return _extreme_all("amax", AMAX, input, dim, keepdim)


def amin(input: Tensor, dim: Dim = (), keepdim: bool = False) -> Tensor:
    """Smallest value over ``dim`` (int or tuple; all dimensions by default); ties share the gradient.

    Example:
        >>> import fgraph as fg
        >>> fg.amin(fg.tensor([[1.0, 4.0], [3.0, 2.0]]), dim=(0, 1)).item()
        1.0
    """
    return _extreme_all("amin", AMIN, input, dim, keepdim)


# -- max(dim) / min(dim): (values, indices), gradient to the selected index ---------------------------
def _max_dim_forward(x, *, dim, keepdim):
    if x.ndim == 0:
        return x, jnp.zeros((), _index_dtype())
    return jnp.max(x, axis=dim, keepdims=keepdim), jnp.argmax(x, axis=dim, keepdims=keepdim)


def _min_dim_forward(x, *, dim, keepdim):
    if x.ndim == 0:
        return x, jnp.zeros((), _index_dtype())
    return jnp.min(x, axis=dim, keepdims=keepdim), jnp.argmin(x, axis=dim, keepdims=keepdim)


def _index_mask_forward(indices, *, dim, keepdim, shape):
    if not keepdim:
        indices = jnp.expand_dims(indices, dim)
    return lax.broadcasted_iota(indices.dtype, shape, dim) == indices


INDEX_MASK = declare("index_mask", _index_mask_forward, None, params=("dim", "keepdim", "shape"),
                     differentiable=False)


def _select_rule(ctx, g):
    from fgraph.ops.elementwise import where

    dim, keepdim = ctx.params
    shape = ctx.shapes[0]
    g_values = g[0]
    if not shape:
        return (g_values,)
    mask = apply_op(INDEX_MASK, (ctx.result[1],), INDEX_MASK.Params(dim, keepdim, shape))
    return (where(mask, expand_reduced(g_values, shape, (dim,), keepdim), 0.0),)


MAX_DIM = declare("max_dim", _max_dim_forward, _select_rule, params=("dim", "keepdim"), save_result=True,
                  num_outputs=2, node_name="MaxBackward0", real_only=True, tangent="rule")
MIN_DIM = declare("min_dim", _min_dim_forward, _select_rule, params=("dim", "keepdim"), save_result=True,
                  num_outputs=2, node_name="MinBackward0", real_only=True, tangent="rule")


def _one_dim(input: Tensor, dim: Any, op: str) -> int:
    if isinstance(dim, bool) or not isinstance(dim, int):
        fix = {"max": "amax(x, dim) reduces over several dimensions",
               "min": "amin(x, dim) reduces over several dimensions"}.get(op, "dim=None takes the flattened input")
        raise OpError(f"{op}: dim must be an int, got {type(dim).__name__} {dim!r}; {fix}.")
    normalize_dims(dim, input.ndim, op)  # range check ([-1, 0] for a 0-d tensor)
    return dim % input.ndim if input.ndim else 0


def _extreme(name: str, ops: tuple, binary: Any, result: Any, input: Tensor, dim: Any, keepdim: Optional[bool],
             other: Any) -> Any:
    check_tensor(input, name)
    if isinstance(dim, Tensor):  # max(a, b): the elementwise form
        dim, other = None, dim
    if other is not None:
        if dim is not None or keepdim is not None:
            raise OpError(f"{name}: the elementwise form {name}(input, other) takes no dim or keepdim.")
        return binary(input, other)
    if dim is None:
        if keepdim is not None:
            raise OpError(f"{name}: keepdim needs dim; use {name}(x, dim, keepdim=True) or a{name}(x, keepdim=True).")
        if 0 in input.shape:
            raise OpError(
                f"{name}: the input of shape {tuple(input.shape)} has no elements, so {name}() is undefined; "
                f"specify a non-empty reduction dim with {name}(x, dim)."
            )
        op = ops[0]
        return apply_unary(op, input, op.Params(tuple(range(input.ndim)), False))
    d = _one_dim(input, dim, name)
    if input.ndim:
        _nonempty(input, (d,), name)
    op = ops[1]
    values, indices = apply_op(op, (input,), op.Params(d, bool(keepdim)))
    return result(values, indices)


def max(input: Tensor, dim: Union[int, Tensor, None] = None, keepdim: Optional[bool] = None, *,
        other: Optional[Tensor] = None) -> Any:
    """``torch.max``: the largest element, or ``(values, indices)`` along ``dim``, or ``maximum(input, other)``.

    * ``max(x)``: a 0-d tensor; tied maxima share the gradient evenly.
    * ``max(x, dim, keepdim=False)``: a named tuple ``(values, indices)``; the
      gradient goes to the returned (first) index, ``indices`` never requires grad.
    * ``max(x, other)``: elementwise :func:`maximum`.

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([[1.0, 3.0], [4.0, 2.0]])
        >>> fg.max(x).item(), fg.max(x, 1).indices.tolist(), fg.max(x, fg.tensor(2.5)).tolist()
        (4.0, [1, 0], [[2.5, 3.0], [4.0, 2.5]])
    """
    from fgraph.ops.elementwise import maximum

    return _extreme("max", (MAX_ALL, MAX_DIM), maximum, MaxResult, input, dim, keepdim, other)


def min(input: Tensor, dim: Union[int, Tensor, None] = None, keepdim: Optional[bool] = None, *,
        other: Optional[Tensor] = None) -> Any:
    """``torch.min``: the smallest element, ``(values, indices)`` along ``dim``, or ``minimum(input, other)``.

    Example:
        >>> import fgraph as fg
        >>> values, indices = fg.min(fg.tensor([[1.0, 3.0], [4.0, 2.0]]), dim=0)
        >>> values.tolist(), indices.tolist()
        ([1.0, 2.0], [0, 1])
    """
    from fgraph.ops.elementwise import minimum

    return _extreme("min", (MIN_ALL, MIN_DIM), minimum, MinResult, input, dim, keepdim, other)


# -- argmax / argmin (not differentiable) ------------------------------------------------------------------
def _arg_forward(x, *, dim, keepdim, largest):
    pick = jnp.argmax if largest else jnp.argmin
    if dim is None:
        out = pick(x.reshape(-1))
        return out.reshape((1,) * x.ndim) if keepdim else out
    if x.ndim == 0:
        return jnp.zeros((), _index_dtype())
    return pick(x, axis=dim, keepdims=keepdim)


ARG_EXTREME = declare("arg_extreme", _arg_forward, None, params=("dim", "keepdim", "largest"), differentiable=False,
                      real_only=True)


def _arg(name: str, input: Tensor, dim: Optional[int], keepdim: bool, largest: bool) -> Tensor:
    check_tensor(input, name)
    if dim is None:
        if 0 in input.shape:
            raise IndexError(
                f"{name}: the input of shape {tuple(input.shape)} has no elements; "
                f"specify a non-empty reduction dim with {name}(x, dim)."
            )
        d = None
    else:
        d = _one_dim(input, dim, name)
        if input.ndim:
            _nonempty(input, (d,), name)
    return apply_op(ARG_EXTREME, (input,), ARG_EXTREME.Params(d, bool(keepdim), largest))


def argmax(input: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    """Index of the largest element along ``dim`` (of the flattened input when ``dim`` is None).

    Ties give the first index. Not differentiable.

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([[1.0, 7.0], [9.0, 2.0]])
        >>> fg.argmax(x).item(), fg.argmax(x, dim=1).tolist()
        (2, [1, 0])
    """
    return _arg("argmax", input, dim, keepdim, True)


def argmin(input: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    """Index of the smallest element along ``dim`` (of the flattened input when ``dim`` is None).

    Example:
        >>> import fgraph as fg
        >>> fg.argmin(fg.tensor([[1.0, 7.0], [0.0, 2.0]]), dim=0, keepdim=True).tolist()
        [[1, 1]]
    """
    return _arg("argmin", input, dim, keepdim, False)


# -- all / any (not differentiable) -------------------------------------------------------------------------
def _all_forward(x, *, dims, keepdim):
    return jnp.all(x, axis=dims, keepdims=keepdim)


def _any_forward(x, *, dims, keepdim):
    return jnp.any(x, axis=dims, keepdims=keepdim)


ALL = declare("all", _all_forward, None, params=("dims", "keepdim"), differentiable=False)
ANY = declare("any", _any_forward, None, params=("dims", "keepdim"), differentiable=False)


def all(input: Tensor, dim: Dim = None, keepdim: bool = False) -> Tensor:
    """Whether every element over ``dim`` is non-zero (True for no elements); a bool tensor.

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([[1.0, 0.0], [2.0, 3.0]])
        >>> fg.all(x).item(), fg.all(x, dim=1).tolist()
        (False, [False, True])
    """
    check_tensor(input, "all")
    return apply_op(ALL, (input,), ALL.Params(normalize_dims(dim, input.ndim, "all"), bool(keepdim)))


def any(input: Tensor, dim: Dim = None, keepdim: bool = False) -> Tensor:
    """Whether some element over ``dim`` is non-zero (False for no elements); a bool tensor.

    Example:
        >>> import fgraph as fg
        >>> fg.any(fg.tensor([[0.0, 0.0], [2.0, 0.0]]), dim=1).tolist()
        [False, True]
    """
    check_tensor(input, "any")
    return apply_op(ANY, (input,), ANY.Params(normalize_dims(dim, input.ndim, "any"), bool(keepdim)))


#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {
    "amax": amax, "amin": amin, "max": max, "min": min, "argmax": argmax, "argmin": argmin, "all": all, "any": any,
}
