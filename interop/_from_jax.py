"""``from_jax``: a JAX function as an fgraph op, differentiable to any order.

Each ``from_jax`` makes one :class:`fgraph.autograd.Function` subclass per static
configuration (the input tree and the static leaves). Its forward runs the jitted JAX
function on the Tensors' arrays and records one node, ``<Name>Backward0``. Its backward is
the same kind of op built on ``jax.vjp`` of the function (so it is recorded under
``create_graph=True``), and that op's backward is ``jax.vjp`` of the vjp, and so on: fgraph
gets derivatives of any order, each one computed by JAX.
"""
from __future__ import annotations

import functools
import re
from typing import Any, Callable, Sequence, Union

import jax
import jax.numpy as jnp
import numpy as np

from fgraph.autograd._jax_vjp import Jvp as _Jvp
from fgraph.autograd._jax_vjp import Vjp as _Vjp
from fgraph.autograd.function import Function, FunctionBackward
from fgraph.tensor import Tensor, _wrap

__all__ = ["from_jax"]


def _is_tensor(x: Any) -> bool:
    return isinstance(x, Tensor)


def _is_float(dtype: Any) -> bool:
    return bool(jnp.issubdtype(dtype, jnp.inexact))


def _is_dynamic(x: Any) -> bool:
    """Tensors and arrays are traced inputs; every other leaf (numbers, strings...) is static."""
    return isinstance(x, (Tensor, jax.Array, np.ndarray))


def _node_prefix(name: str) -> str:
    """``'ode_step'`` -> ``'OdeStep'``; names that are not identifiers give ``'JaxFunction'``."""
    parts = [p for p in re.split(r"[^0-9A-Za-z]+", name) if p]
    if not parts or not name.isidentifier():
        return "JaxFunction"
    return "".join(p[0].upper() + p[1:] for p in parts)


# -- flat JAX programs and their vjps --------------------------------------------------------------
class _Call:
    """``jax_fn`` on flat dynamic leaves: rebuilds the arguments, flattens the outputs."""

    __slots__ = ("jax_fn", "treedef", "leaves", "positions", "label", "out_tree", "__weakref__")

    def __init__(self, jax_fn: Callable, treedef: Any, leaves: list, positions: tuple, label: str) -> None:
        self.jax_fn, self.treedef, self.leaves, self.positions, self.label = jax_fn, treedef, leaves, positions, label
        self.out_tree = None

    def __call__(self, *arrays: Any) -> tuple:
        leaves = list(self.leaves)
        for p, a in zip(self.positions, arrays):
            leaves[p] = a
        args, kwargs = jax.tree_util.tree_unflatten(self.treedef, leaves)
        out = self.jax_fn(*args, **kwargs)
        flat, self.out_tree = jax.tree_util.tree_flatten_with_path(out)
        for path, leaf in flat:
            if not isinstance(leaf, (jax.Array, np.ndarray, np.generic, float, int, complex)):
                raise TypeError(
                    f"from_jax({self.label}): the JAX function returned a {type(leaf).__name__} at "
                    f"{jax.tree_util.keystr(path) or 'the output'}; it must return arrays in a pytree "
                    "(tuple, list, dict)."
                )
        return tuple(jnp.asarray(leaf) for _, leaf in flat)


# -- the fgraph op ---------------------------------------------------------------------------------
def _op(fn: Callable, prefix: str) -> type:
    """A Function subclass running the flat JAX program ``fn`` (jitted), node ``<prefix>Backward0``."""
    jitted = jax.jit(fn)

    def forward(ctx: Any, *tensors: Tensor) -> tuple:
        ctx.save_for_backward(*tensors)
        ctx.save_for_forward(*tensors)
        outs = jitted(*[t.array for t in tensors])
        ctx.float_out = tuple(j for j, o in enumerate(outs) if _is_float(o.dtype))
        ctx.n_out = len(outs)
        return tuple(_wrap(o) for o in outs)

    def backward(ctx: Any, *grads: Tensor) -> tuple:
        xs = ctx.saved_tensors
        float_in = tuple(i for i, x in enumerate(xs) if _is_float(x.dtype))
        key = (float_in, ctx.float_out)
        vjp_op = cls._vjp_ops.get(key)
        if vjp_op is None:
            vjp_op = _op(_Vjp(fn, float_in, ctx.float_out, len(xs)), prefix + "Backward")
            cls._vjp_ops[key] = vjp_op
        cts = vjp_op.apply(*xs, *[grads[j] for j in ctx.float_out])
        result: list = [None] * len(xs)
        for i, g in zip(float_in, cts):
            result[i] = g
        return tuple(result)

    def jvp(ctx: Any, *tangents: Tensor) -> tuple:  # forward-mode AD: jax.jvp of the function, as an op
        xs = ctx.saved_tensors
        float_in = tuple(i for i, (x, t) in enumerate(zip(xs, tangents)) if t is not None and _is_float(x.dtype))
        key = ("jvp", float_in, ctx.float_out)
        jvp_op = cls._vjp_ops.get(key)
        if jvp_op is None:
            jvp_op = cls._vjp_ops[key] = _op(_Jvp(fn, float_in, ctx.float_out, len(xs)), prefix + "Jvp")
        outs = jvp_op.apply(*xs, *[tangents[i] for i in float_in])
        outs = outs if isinstance(outs, tuple) else (outs,)
        result: list = [None] * ctx.n_out
        for j, t in zip(ctx.float_out, outs):
            result[j] = t
        return tuple(result)

    cls = type(prefix, (Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward),
                                     "jvp": staticmethod(jvp), "__module__": __name__})
    cls._backward_cls = type(f"{prefix}Backward0", (FunctionBackward,),
                             {"__slots__": (), "_function": cls, "__module__": __name__})
    cls._vjp_ops = {}
    return cls


class _Wrapped:
    """The callable :func:`from_jax` returns."""

    def __init__(self, jax_fn: Callable, static_argnums: tuple, prefix: str, label: str) -> None:
        self.jax_fn, self.static_argnums, self.prefix, self.label = jax_fn, static_argnums, prefix, label
        self._ops: dict = {}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        for i in self.static_argnums:
            if i >= len(args):
                raise TypeError(
                    f"from_jax({self.label}): static_argnums names argument {i}, but the call has {len(args)} "
                    "positional arguments; pass the static argument positionally."
                )
        static = set(self.static_argnums)
        dyn_args = tuple(_Static(a) if i in static else a for i, a in enumerate(args))
        leaves, treedef = jax.tree_util.tree_flatten((dyn_args, kwargs), is_leaf=_is_tensor)
        leaves = [leaf.value if type(leaf) is _Static else leaf for leaf in leaves]
        positions = tuple(i for i, leaf in enumerate(leaves) if _is_dynamic(leaf))
        static_leaves = [None if i in positions else leaf for i, leaf in enumerate(leaves)]
        op, call = self._lookup(treedef, static_leaves, positions)
        tensors = [leaves[i] if isinstance(leaves[i], Tensor) else _wrap(jnp.asarray(leaves[i])) for i in positions]
        outs = op.apply(*tensors)
        return jax.tree_util.tree_unflatten(call.out_tree, outs)

    def _lookup(self, treedef: Any, static_leaves: list, positions: tuple) -> tuple:
        key: Any = (treedef, positions, tuple(static_leaves))
        try:
            hash(key)
        except TypeError:
            key = None  # unhashable static values: a fresh (re-jitted) op for this call
        entry = self._ops.get(key) if key is not None else None
        if entry is None:
            call = _Call(self.jax_fn, treedef, static_leaves, positions, self.label)
            entry = (_op(call, self.prefix), call)
            if key is not None:
                self._ops[key] = entry
        return entry


class _Static:
    """Marks a ``static_argnums`` argument as one pytree leaf, whatever it holds."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def from_jax(jax_fn: Callable[..., Any], static_argnums: Union[int, Sequence[int]] = (), *,
             name: Union[str, None] = None) -> Callable[..., Any]:
    """A JAX function as an fgraph op, differentiable by fgraph's engine to any order.

    The result takes pytrees (tuples, lists, dicts) of fgraph Tensors and returns the JAX
    function's output pytree with Tensor leaves. Tensor and array leaves are traced
    (Tensors that require grad get gradients); every other leaf (numbers, strings, ...)
    and every argument in ``static_argnums`` is passed to ``jax_fn`` unchanged, as a
    static argument. The forward runs ``jax.jit(jax_fn)``; one graph node is recorded,
    named ``<Name>Backward0`` where ``Name`` is ``name`` or ``jax_fn.__name__`` in
    CamelCase (``ode_step`` -> ``OdeStepBackward0``), or ``JaxFunctionBackward0`` for
    lambdas and nameless callables. Its backward uses ``jax.vjp`` and is itself such an
    op, so ``create_graph=True`` gives derivatives of any order.

    Example:
        >>> import jax
        >>> import fgraph as fg
        >>> from interop import from_jax
        >>> gammaln = from_jax(jax.scipy.special.gammaln)
        >>> x = fg.tensor(3.0, requires_grad=True)
        >>> y = gammaln(x)
        >>> y.grad_fn.name()
        'GammalnBackward0'
        >>> (g,) = fg.grad(y, [x], create_graph=True)
        >>> round(g.item(), 5)  # digamma(3)
        0.92278
    """
    if not callable(jax_fn):
        raise TypeError(f"from_jax: jax_fn must be a callable on JAX arrays, got a {type(jax_fn).__name__}.")
    nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    if not all(isinstance(i, int) and i >= 0 for i in nums):
        raise TypeError(f"from_jax: static_argnums must be non-negative ints, got {static_argnums!r}.")
    label = name or getattr(jax_fn, "__name__", type(jax_fn).__name__)
    prefix = _node_prefix(name) if name is not None else _node_prefix(getattr(jax_fn, "__name__", "<>"))
    wrapped = _Wrapped(jax_fn, nums, prefix, label)
    try:
        return functools.wraps(jax_fn)(wrapped)
    except (AttributeError, TypeError):
        return wrapped
