"""``to_jax``: an fgraph function as a JAX function that ``jax.jit``/``vmap``/``grad``/``hessian`` accept.

Two modes (see ``docs/jax-interop.md``):

* ``mode="vjp"`` (default): a ``jax.custom_vjp``. The forward runs ``fn`` on Tensors that
  require grad; the backward **re-runs** ``fn`` (a JAX residual is a tuple of arrays and
  cannot carry a Python graph across a ``jit`` boundary, so the inputs are the residuals)
  and asks fgraph's engine for ``fg.grad(outputs, inputs, grad_outputs=cotangents)``. So
  custom ``Function`` backwards and tensor/node hooks take part when JAX differentiates.
  The backward is itself exported, as a ``jax.custom_jvp`` "tower" (:func:`_tower`) whose
  JVP rule is again an fgraph program (the double-backward trick) exported the same way;
  JAX can therefore differentiate the backward forwards (``jax.hessian`` is
  ``jacfwd(jacrev)``) or backwards (nested ``jax.grad``, by transposing that JVP) to any
  order, with every derivative rule coming from fgraph.
* ``mode="trace"``: ``fn`` runs on Tensors wrapping JAX's (traced) arrays, inputs do not
  require grad, and JAX differentiates fgraph's forward kernels itself.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

import fgraph as fg
from fgraph.tensor import Tensor, _wrap

__all__ = ["to_jax"]

_MODES = ("vjp", "trace")


def _is_tensor(x: Any) -> bool:
    return isinstance(x, Tensor)


def _is_float(dtype: Any) -> bool:
    return bool(jnp.issubdtype(dtype, jnp.inexact))


def _is_array_leaf(x: Any) -> bool:
    """Leaves that become Tensors: arrays of any kind and Python floats/complex (ints stay static)."""
    if isinstance(x, (bool, int, str)) or x is None:
        return False
    return isinstance(x, (Tensor, jax.Array, np.ndarray, np.generic, float, complex))


def _as_array(x: Any) -> Any:
    return x.array if isinstance(x, Tensor) else jnp.asarray(x)


# -- flat fgraph programs --------------------------------------------------------------------------
# A "flat program" takes Tensors positionally and returns a tuple of Tensors; the pytree layer lives
# only at the ``to_jax`` boundary. The programs below derive new flat programs from one.
class _VjpProgram:
    """``(*xs, *cts) -> cotangents of xs[float_in]``: one reverse pass of fgraph's engine.

    JAX's cotangents of complex arrays are the conjugates of fgraph's (PyTorch's convention), so
    they are conjugated on the way in and out (``conj`` of a real tensor is the tensor itself)."""

    __slots__ = ("fn", "float_in", "float_out", "n")

    def __init__(self, fn: Callable, float_in: tuple, float_out: tuple, n: int) -> None:
        self.fn, self.float_in, self.float_out, self.n = fn, float_in, float_out, n

    def __call__(self, *args: Tensor) -> tuple:
        xs, cts = list(args[: self.n]), args[self.n:]
        create_graph = any(a.requires_grad for a in args)
        with fg.enable_grad():
            leaves = _require_grad(xs, self.float_in)
            outs = self.fn(*xs)
            pairs = [(outs[j], fg.conj(ct)) for j, ct in zip(self.float_out, cts) if outs[j].requires_grad]
            if not pairs or not leaves:
                return tuple(_zeros(leaf) for leaf in leaves)
            grads = fg.grad([p[0] for p in pairs], leaves, grad_outputs=[p[1] for p in pairs],
                            create_graph=create_graph, allow_unused=True, materialize_grads=True)
            return tuple(fg.conj(g) for g in grads)


class _JvpProgram:
    """``(*xs, *tangents of xs[float_in]) -> tangents of outputs[float_out]``, by double backward."""

    __slots__ = ("fn", "float_in", "float_out", "n")

    def __init__(self, fn: Callable, float_in: tuple, float_out: tuple, n: int) -> None:
        self.fn, self.float_in, self.float_out, self.n = fn, float_in, float_out, n

    def __call__(self, *args: Tensor) -> tuple:
        xs, tangents = list(args[: self.n]), args[self.n:]
        create_graph = any(a.requires_grad for a in args)
        with fg.enable_grad():
            leaves = _require_grad(xs, self.float_in)
            outs = self.fn(*xs)
            result = [_zeros(outs[j]) for j in self.float_out]
            diff = [k for k, j in enumerate(self.float_out) if outs[j].requires_grad]
            if not diff or not leaves:
                return tuple(result)
            # J^T u is linear in the dummy u, so d/du <J^T u, t> = J t whatever u's value is.
            dummies = [fg.zeros_like(outs[self.float_out[k]]).requires_grad_() for k in diff]
            vjps = fg.grad([outs[self.float_out[k]] for k in diff], leaves, grad_outputs=dummies,
                           create_graph=True, allow_unused=True)
            pairs = [(g, t) for g, t in zip(vjps, tangents) if g is not None and g.requires_grad]
            if not pairs:
                return tuple(result)
            jvps = fg.grad([p[0] for p in pairs], dummies, grad_outputs=[p[1] for p in pairs],
                           create_graph=create_graph, allow_unused=True, materialize_grads=True)
            for k, g in zip(diff, jvps):
                result[k] = g
            return tuple(result)


def _require_grad(xs: list, float_in: tuple) -> list:
    """Make ``xs[i]`` (i in ``float_in``) require grad in place in the list; return those leaves."""
    for i in float_in:
        if not xs[i].requires_grad:
            xs[i] = xs[i].requires_grad_()
    return [xs[i] for i in float_in]


def _zeros(t: Tensor) -> Tensor:
    return _wrap(jnp.zeros(t.shape, t.dtype))


def _float_positions(arrays: Any) -> tuple:
    return tuple(i for i, a in enumerate(arrays) if _is_float(a.dtype))


def _float0_zeros(a: Any) -> Any:
    return np.zeros(np.shape(a), dtype=jax.dtypes.float0)


# -- exporting flat programs -----------------------------------------------------------------------
def _run(fn: Callable, arrays: tuple, requires_grad: bool) -> tuple:
    tensors = [_wrap(a) for a in arrays]
    if requires_grad:
        with fg.enable_grad():
            _require_grad(tensors, _float_positions(arrays))
            outs = fn(*tensors)
    else:
        outs = fn(*tensors)
    return tuple(o.array for o in outs)


def _tower(fn: Callable) -> Callable:
    """A ``jax.custom_jvp`` of the flat program ``fn`` whose JVP is ``_tower(_JvpProgram(fn))``."""
    run = _TowerPrimal(fn)
    exported = jax.custom_jvp(run)
    exported.defjvp(_TowerRule(fn, exported))
    return exported


class _TowerPrimal:
    __slots__ = ("fn",)

    def __init__(self, fn: Callable) -> None:
        self.fn = fn

    def __call__(self, *arrays: Any) -> tuple:
        return _run(self.fn, arrays, requires_grad=False)


class _TowerRule:
    __slots__ = ("fn", "exported")

    def __init__(self, fn: Callable, exported: Callable) -> None:
        self.fn, self.exported = fn, exported

    def __call__(self, primals: tuple, tangents: tuple) -> tuple:
        out = self.exported(*primals)
        float_in = _float_positions(primals)
        float_out = _float_positions(out)
        program = _JvpProgram(self.fn, float_in, float_out, len(primals))
        float_tangents = _tower(program)(*primals, *[tangents[i] for i in float_in])
        tangent_out = [_float0_zeros(o) for o in out]
        for j, t in zip(float_out, float_tangents):
            tangent_out[j] = t
        return out, tuple(tangent_out)


def _export_vjp(fn: Callable) -> Callable:
    """A ``jax.custom_vjp`` of the flat program ``fn`` whose backward runs fgraph's engine."""
    exported = jax.custom_vjp(_VjpPrimal(fn))
    exported.defvjp(_VjpForward(fn), _VjpBackward(fn))
    return exported


class _VjpPrimal:
    __slots__ = ("fn",)

    def __init__(self, fn: Callable) -> None:
        self.fn = fn

    def __call__(self, *arrays: Any) -> tuple:
        return _run(self.fn, arrays, requires_grad=True)


class _VjpForward(_VjpPrimal):
    __slots__ = ()

    def __call__(self, *arrays: Any) -> tuple:
        return _run(self.fn, arrays, requires_grad=True), arrays


class _VjpBackward(_VjpPrimal):
    __slots__ = ()

    def __call__(self, arrays: tuple, cts: tuple) -> tuple:
        float_in = _float_positions(arrays)
        float_out = tuple(j for j, c in enumerate(cts) if c.dtype != jax.dtypes.float0)
        program = _VjpProgram(self.fn, float_in, float_out, len(arrays))
        grads = _tower(program)(*arrays, *[cts[j] for j in float_out])
        result: list = [None] * len(arrays)
        for i, g in zip(float_in, grads):
            result[i] = g
        return tuple(result)


# -- the pytree boundary ---------------------------------------------------------------------------
class _Flat:
    """``fn`` as a flat program: array leaves in (Tensors), Tensor leaves out; records the output tree."""

    __slots__ = ("fn", "treedef", "leaves", "positions", "out_tree", "label")

    def __init__(self, fn: Callable, treedef: Any, leaves: list, positions: tuple, label: str) -> None:
        self.fn, self.treedef, self.leaves, self.positions, self.label = fn, treedef, leaves, positions, label
        self.out_tree = None

    def __call__(self, *tensors: Tensor) -> tuple:
        leaves = list(self.leaves)
        for p, t in zip(self.positions, tensors):
            leaves[p] = t
        args, kwargs = jax.tree_util.tree_unflatten(self.treedef, leaves)
        out = self.fn(*args, **kwargs)
        flat, self.out_tree = jax.tree_util.tree_flatten_with_path(out, is_leaf=_is_tensor)
        return tuple(_output_tensor(self.label, path, leaf) for path, leaf in flat)


def _output_tensor(label: str, path: tuple, leaf: Any) -> Tensor:
    if isinstance(leaf, Tensor):
        return leaf
    if isinstance(leaf, (jax.Array, np.ndarray, np.generic, float, complex)) and not isinstance(leaf, bool):
        return _wrap(jnp.asarray(leaf))  # a constant: no gradient flows through it
    where = jax.tree_util.keystr(path) or "the output"
    raise TypeError(
        f"to_jax({label}): the function returned a {type(leaf).__name__} at {where}; an exported function must "
        "return fgraph Tensors (or arrays), in any pytree (tuple, list, dict). Wrap numbers with fg.tensor(...)."
    )


def _label(fn: Callable) -> str:
    return getattr(fn, "__name__", type(fn).__name__)


def to_jax(fn: Callable[..., Any], *, mode: str = "vjp") -> Callable[..., Any]:
    """An fgraph function as a JAX function on ``jax.Array`` pytrees.

    ``fn`` takes and returns pytrees (tuples, lists, dicts) whose leaves are fgraph
    Tensors. The result takes the same pytrees with ``jax.Array``/NumPy leaves (Python
    floats become arrays; ints, bools, strings and other objects are passed through
    unchanged, like static arguments) and returns the same output pytree with
    ``jax.Array`` leaves. It works under ``jax.jit``, ``jax.vmap``, ``jax.grad``,
    ``jax.jacrev`` and ``jax.hessian``.

    ``mode="vjp"`` (default): when JAX differentiates the function, fgraph's engine
    computes the gradients (``fg.grad`` after re-running ``fn``), so custom ``Function``
    backwards and hooks take part; higher derivatives also come from fgraph.
    Forward-mode (``jax.jvp``, ``jax.jacfwd``) applied *directly* to the exported
    function is not available (JAX cannot forward-differentiate a ``custom_vjp``); it
    works on its derivatives, so ``jax.hessian`` is fine. ``mode="trace"``: JAX
    differentiates fgraph's forward kernels itself; hooks and custom backwards do not run.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> import fgraph as fg
        >>> from interop import to_jax
        >>> def loss(params, x):
        ...     return fg.tanh(x @ params["w"]).sum()
        >>> f = to_jax(loss)
        >>> params = {"w": jnp.ones((3, 2))}
        >>> g = jax.jit(jax.grad(f))(params, jnp.full((4, 3), 0.1))
        >>> g["w"].shape
        (3, 2)
    """
    if not callable(fn):
        raise TypeError(f"to_jax: fn must be a callable taking fgraph Tensors, got a {type(fn).__name__}.")
    if mode not in _MODES:
        raise ValueError(f"to_jax: mode must be one of {_MODES}, got {mode!r}.")
    return functools.wraps(fn)(_Exported(fn, mode))


class _Exported:
    """The callable :func:`to_jax` returns."""

    def __init__(self, fn: Callable, mode: str) -> None:
        self.fn, self.mode = fn, mode

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        leaves, treedef = jax.tree_util.tree_flatten((args, kwargs), is_leaf=_is_tensor)
        positions = tuple(i for i, leaf in enumerate(leaves) if _is_array_leaf(leaf))
        arrays = tuple(_as_array(leaves[i]) for i in positions)
        flat = _Flat(self.fn, treedef, leaves, positions, _label(self.fn))
        if self.mode == "trace":
            outs = tuple(o.array for o in flat(*[_wrap(a) for a in arrays]))
        else:
            outs = _export_vjp(flat)(*arrays)
        return jax.tree_util.tree_unflatten(flat.out_tree, outs)
