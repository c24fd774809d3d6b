"""``vmap``: torch.func's vectorizing map, built on ``jax.vmap`` over the fgraph program.

The common call takes the recorded path (``_recorded.py``): ``func`` runs on per-sample
placeholders, its ops record kernel calls, and the records run as one cached
``jax.jit(jax.vmap(...))`` program. The general path, for the rest (see
:func:`_recordable`, and a ``func`` that reads per-sample values): the Tensor leaves of
the arguments that are mapped (``in_dims`` not ``None``) enter ``jax.vmap`` as arrays;
inside, ``func`` sees graph-free Tensors wrapping JAX's batch tracers, so every fgraph op
(forward kernels, and the engine when ``func`` calls ``fg.grad`` or a :mod:`fgraph.func`
transform) runs once, batched. Unmapped arguments (``None``) and non-Tensor arguments are
passed as they are.

Gradients: inside ``func`` every Tensor is graph-free; take gradients inside
(``vmap(grad(f))``). Outside, when a mapped or unmapped input requires grad and
grad mode is on, the call is recorded as one ``VmapBackward`` node whose
backward is itself a ``vmap`` of per-sample vector-Jacobian products (the
function is re-run), so ``grad(vmap(f))`` and ``fg.grad`` through a vmapped
call work, to any order.

Randomness (draws from fgraph's default generator inside ``func``; random ops
given ``key=`` are pure and always allowed): ``"error"`` raises, ``"same"``
gives every batch element the same draw, ``"different"`` a draw per element
(one key per element, split from the default generator).

Example:
    >>> import fgraph as fg
    >>> from fgraph.func import vmap
    >>> x, y = fg.tensor([[1.0, 2.0], [3.0, 4.0]]), fg.tensor([10.0, 20.0])
    >>> vmap(fg.dot)(x, fg.tensor([[1.0, 1.0], [1.0, 0.0]])).tolist()
    [3.0, 3.0]
    >>> vmap(fg.mul, in_dims=(1, None))(x, y).tolist()
    [[10.0, 60.0], [20.0, 80.0]]
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp

from fgraph import random as _random
from fgraph._dtypes import is_differentiable_dtype
from fgraph.autograd.function import Function
from fgraph.autograd.grad_mode import enable_grad, is_grad_enabled
from fgraph.errors import DimOutOfRangeError, TracedValueError, TransformValueError, VmapSpecError, VmapTracedValueError
from fgraph.func._recorded import BatchRecorder, ValuesNeeded
from fgraph.func._tree import flatten, key_orders, tensor_leaves, tree_map, unflatten, with_key_orders
from fgraph.lazy._state import LAZY
from fgraph.lazy._recorder import array_type
from fgraph.tensor import Tensor, _wrap

__all__ = ["vmap"]

_RANDOMNESS = ("error", "different", "same")


def _is_dim_leaf(x: Any) -> bool:
    return x is None or isinstance(x, int)


def _dims_per_leaf(dims: Any, tree: Any, what: str) -> list:
    """One dim per Tensor-leaf of ``tree``, from ``dims`` (an int/None or a prefix pytree of them)."""
    n = len(tensor_leaves(tree)[0])
    if _is_dim_leaf(dims):
        return [dims] * n
    dim_leaves, dim_def = jax.tree_util.tree_flatten(dims, is_leaf=_is_dim_leaf)
    for d in dim_leaves:
        if not _is_dim_leaf(d) or isinstance(d, bool):
            raise ValueError(f"vmap: {what} must be made of ints and None, found {d!r} in {dims!r}.")
    try:
        subtrees = dim_def.flatten_up_to(tree)
    except (ValueError, TypeError) as e:
        raise ValueError(f"vmap: {what}={dims!r} is not compatible with the structure of the values it "
                         f"describes ({jax.tree_util.tree_structure(tree, is_leaf=_is_tensor_leaf)}): {e}") from None
    out = []
    for d, sub in zip(dim_leaves, subtrees):
        out.extend([d] * len(tensor_leaves(sub)[0]))
    return out


def _is_tensor_leaf(x: Any) -> bool:
    return isinstance(x, Tensor)


def _flat_in_dims(in_dims: Any, args: tuple) -> list:
    if _is_dim_leaf(in_dims):
        return _dims_per_leaf(in_dims, args, "in_dims")
    if not isinstance(in_dims, tuple):  # torch.func: a list (or set, str) is a ValueError
        raise VmapSpecError(
            f"vmap: in_dims must be an int, None, or a tuple with one entry per positional argument, got "
            f"{type(in_dims).__name__} {in_dims!r}. As in torch.func, a list is not accepted: write a tuple.")
    if len(in_dims) != len(args):
        raise ValueError(
            f"vmap(f, in_dims={in_dims!r}, ...)(<inputs>): in_dims is not compatible with the structure of "
            f"`inputs`: in_dims has {len(in_dims)} entries but {len(args)} positional arguments were given. "
            "Give one in_dim per positional argument (None for an argument that is not mapped).")
    dims = []
    for i, (d, a) in enumerate(zip(in_dims, args)):
        dims.extend(_dims_per_leaf(d, a, f"in_dims[{i}]"))
    return dims


class _Plan:
    """What one vmapped call maps: the flat leaves, their in_dims and the batch size."""

    __slots__ = ("leaves", "treedef", "dims", "batched", "size")

    def __init__(self, args: tuple, in_dims: Any) -> None:
        self.leaves, self.treedef = tensor_leaves(args)
        dims = _flat_in_dims(in_dims, args)
        self.batched = []
        sizes = []
        for i, (leaf, d) in enumerate(zip(self.leaves, dims)):
            if d is None:
                continue
            if not isinstance(leaf, Tensor):
                raise ValueError(
                    f"vmap(f, in_dims={in_dims!r}, ...)(<inputs>): Got in_dim={d} for an input but the input is of "
                    f"type {type(leaf).__name__}. We cannot vmap over non-Tensor arguments, please use None as the "
                    "respective in_dim.")
            if not -leaf.ndim <= d < max(leaf.ndim, 1) or leaf.ndim == 0:
                raise ValueError(
                    f"vmap(f, in_dims={in_dims!r}, ...)(<inputs>): Got in_dim={d} for some input, but that input is "
                    f"a Tensor of dimensionality {leaf.ndim} (shape {leaf.shape}) so expected in_dim to satisfy "
                    f"-{leaf.ndim} <= in_dim < {leaf.ndim}.")
            self.batched.append(i)
            sizes.append(leaf.shape[d])
        self.dims = dims
        if not self.batched:
            raise ValueError(f"vmap(f, in_dims={in_dims!r}, ...)(<inputs>): at least one input must be a Tensor "
                             "mapped over a dimension, but in_dims maps none (all None, or no Tensor inputs).")
        if len(set(sizes)) != 1:
            raise ValueError(
                f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes {sizes} for "
                f"the mapped dimension (in_dims={in_dims!r}, shapes "
                f"{[self.leaves[i].shape for i in self.batched]}).")
        self.size = sizes[0]


class _Runner:
    """The pure function handed to ``jax.vmap``: batched arrays (and keys) in, a pytree of arrays out."""

    __slots__ = ("func", "plan", "kwargs", "randomness", "out_dims", "finished", "orders", "single")

    def __init__(self, func: Callable, plan: _Plan, kwargs: dict, randomness: str, out_dims: Any = 0) -> None:
        self.func, self.plan, self.kwargs, self.randomness = func, plan, kwargs, randomness
        self.out_dims = out_dims
        self.finished = False
        self.orders: Optional[tuple] = None  # the key orders of func's output
        self.single = False  # func returned one Tensor for a 1-tuple out_dims: returned as a 1-tuple, unwrapped

    def __call__(self, arrays: list, key: Any) -> Any:
        leaves = [_detached(x) for x in self.plan.leaves]
        for i, a in zip(self.plan.batched, arrays):
            leaves[i] = _wrap(a)
        args = unflatten(self.plan.treedef, leaves)
        generator = _random.default_generator
        before = generator.get_state()
        if key is not None:
            generator.set_state(key)
        try:
            out = self.func(*args, **self.kwargs)
        except TracedValueError as e:
            if self.randomness == "error" and generator.get_state() is not before:
                raise RuntimeError(_RANDOM_ERROR) from e
            if isinstance(e, RuntimeError):
                raise
            raise VmapTracedValueError(*e.args).with_traceback(e.__traceback__) from None
        except Exception as e:
            if self.randomness == "error" and generator.get_state() is not before:
                raise RuntimeError(_RANDOM_ERROR) from e
            raise
        finally:
            drew = generator.get_state() is not (before if key is None else key)
            generator.set_state(before)
        if self.randomness == "error" and drew:
            raise RuntimeError(_RANDOM_ERROR)
        self.orders = key_orders(out, _is_tensor_leaf)  # jax.vmap rebuilds dicts sorted: see _vmap_once
        out = jax.tree_util.tree_map(_to_array, out, is_leaf=_is_tensor_leaf)
        _check_out_range(self.out_dims, out)
        if isinstance(out, jax.Array) and _fit_out_dims(self.out_dims, out) is not self.out_dims:
            self.single = True
            out = (out,)  # matches the 1-tuple out_dims jax.vmap was given
        self.finished = True
        return out


_RANDOM_ERROR = ("vmap: called random operations while in randomness error mode (they drew from fgraph's default "
                 "generator). Please either use the 'same' or 'different' randomness flags on vmap, pass key= to "
                 "the random op, or perform the randomness operation out of vmap.")


def _detached(x: Any) -> Any:
    return x.detach() if isinstance(x, Tensor) and x.requires_grad else x


def _fit_out_dims(out_dims: Any, out: Any) -> Any:
    """``out_dims`` for the output ``out``: a 1-tuple for a single output stands for its one entry (as in torch)."""
    if isinstance(out_dims, tuple) and len(out_dims) == 1 and not isinstance(out, (tuple, list, dict)):
        return out_dims[0]
    return out_dims


def _check_out_range(out_dims: Any, out: Any) -> None:
    """Raise :class:`DimOutOfRangeError` for an out_dim beyond the batched output's dimensions."""
    fitted = _fit_out_dims(out_dims, out)
    leaves = jax.tree_util.tree_leaves(out, is_leaf=_is_tensor_leaf)
    dims = [fitted] * len(leaves) if _is_dim_leaf(fitted) else _dims_per_leaf(fitted, out, "out_dims")
    for d, leaf in zip(dims, leaves):
        if d is None or isinstance(d, bool) or not hasattr(leaf, "ndim"):
            continue
        rank = leaf.ndim + 1  # the output with its batch dimension
        if not -rank <= d < rank:
            raise DimOutOfRangeError(
                f"vmap: out_dims={out_dims!r}: Dimension out of range (expected to be in range of [{-rank}, "
                f"{rank - 1}], but got {d}) for an output of per-sample shape {tuple(leaf.shape)}.")


def _to_array(x: Any) -> Any:
    if isinstance(x, Tensor):
        return x._array
    raise VmapSpecError(f"vmap: `func` must only return Tensors (or pytrees of Tensors), got a {type(x).__name__}. "
                        "Return Python values from outside vmap, or wrap them with fg.tensor.")


def _run_vmapped(func: Callable, plan: _Plan, kwargs: dict, out_dims: Any, randomness: str,
                 chunk_size: Optional[int], keys: Any) -> Any:
    """The batched result as a pytree of arrays (``keys``: a key batch, one key, or None)."""
    arrays = [plan.leaves[i]._array for i in plan.batched]
    axes = [plan.dims[i] for i in plan.batched]
    key_axis = 0 if randomness == "different" else None
    if chunk_size is None or chunk_size >= plan.size:
        return _vmap_once(func, plan, kwargs, out_dims, randomness, arrays, axes, keys, key_axis)
    results = []
    for start in range(0, plan.size, chunk_size):
        stop = min(start + chunk_size, plan.size)
        chunk = [jax.lax.slice_in_dim(a, start, stop, axis=ax % a.ndim) for a, ax in zip(arrays, axes)]
        chunk_keys = keys[start:stop] if key_axis == 0 else keys
        results.append(_vmap_once(func, plan, kwargs, out_dims, randomness, chunk, axes, chunk_keys, key_axis))
    first = results[0]
    leaves0, treedef = flatten(first)
    flat_dims = _dims_per_leaf(_fit_out_dims(out_dims, first), first, "out_dims")
    per_chunk = [jax.tree_util.tree_leaves(r) for r in results]
    joined = []
    for j, d in enumerate(flat_dims):
        if d is None:
            joined.append(leaves0[j])
        else:
            joined.append(jnp.concatenate([leaves[j] for leaves in per_chunk], axis=d % leaves0[j].ndim))
    return unflatten(treedef, joined)


def _vmap_once(func: Callable, plan: _Plan, kwargs: dict, out_dims: Any, randomness: str, arrays: list,
               axes: list, keys: Any, key_axis: Optional[int]) -> Any:
    runner = _Runner(func, plan, kwargs, randomness, out_dims)
    mapped = jax.vmap(runner, in_axes=(axes, key_axis), out_axes=out_dims)
    try:
        out = mapped(arrays, keys)
    except (ValueError, TypeError) as e:
        if not runner.finished:
            raise
        raise _out_dims_error(out_dims, e) from None
    return out[0] if runner.single else with_key_orders(out, runner.orders)


def _out_dims_error(out_dims: Any, e: Exception) -> ValueError:
    return ValueError(f"vmap: out_dims={out_dims!r} does not fit the output of `func`: {_jax_reason(e)} "
                      "out_dims must be an int, or a tuple/pytree of ints and None matching the output's "
                      "structure; None is only allowed for outputs that do not depend on the mapped inputs.")


def _recordable(plan: _Plan, randomness: str, chunk_size: Optional[int]) -> bool:
    """Whether a call can take the recorded path: concrete inputs, outside lazy mode and traces, no keys."""
    current = LAZY.get()
    if current is not None:
        if not current.deferred:
            return False
        current.flush()  # deferred dispatch: the inputs' pending values run first (then they are plain arrays)
    if randomness != "error" or chunk_size is not None:
        return False
    array_class = array_type()
    return all(type(leaf._array) is array_class for leaf in plan.leaves if isinstance(leaf, Tensor))


def _run_recorded(func: Callable, plan: _Plan, kwargs: dict, out_dims: Any) -> Any:
    """``func`` recorded on per-sample placeholders and run as one cached vectorized program (``_recorded.py``)."""
    rec = BatchRecorder()
    leaves = [_detached(x) for x in plan.leaves]
    for i in plan.batched:
        leaves[i] = _wrap(rec.add_input(plan.leaves[i]._array, plan.dims[i]))
    generator = _random.default_generator
    before = generator.get_state()
    token = LAZY.set(rec)
    try:
        out = func(*unflatten(plan.treedef, leaves), **kwargs)
    except BaseException:
        rec.discard()  # placeholders kept by the caller can no longer be read
        raise
    finally:
        LAZY.reset(token)
        drew = generator.get_state() is not before
        generator.set_state(before)
    if drew:
        raise RuntimeError(_RANDOM_ERROR)
    out_leaves, treedef = flatten(out, is_leaf=_is_tensor_leaf)
    arrays = [_to_array(x) for x in out_leaves]
    _check_out_range(out_dims, out)
    dims = _dims_per_leaf(_fit_out_dims(out_dims, out), out, "out_dims")
    try:
        batched = rec.run(arrays, dims)
    except (ValueError, TypeError) as e:
        raise _out_dims_error(out_dims, e) from None
    return unflatten(treedef, batched)


def _jax_reason(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def _draw_keys(randomness: str, size: int) -> Any:
    if randomness == "error":
        return None
    key = _random.default_generator.next_key()
    return jax.random.split(key, size) if randomness == "different" else key


class Vmap(Function):
    """A vmapped call on the backward graph (node ``VmapBackward``); backward is a vmap of per-sample VJPs."""

    @staticmethod
    def forward(ctx: Any, spec: "_Spec", *tensors: Tensor) -> tuple:
        ctx.spec = spec
        ctx.save_for_backward(*tensors)
        out = _run_vmapped(spec.func, spec.plan, spec.kwargs, spec.out_dims, spec.randomness, spec.chunk_size,
                           spec.keys)
        leaves, spec.out_def = flatten(out)
        spec.out_dims_flat = _dims_per_leaf(_fit_out_dims(spec.out_dims, out), out, "out_dims")
        return tuple(_wrap(a) for a in leaves)

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Optional[Tensor]) -> tuple:
        spec = ctx.spec
        tensors = ctx.saved_tensors
        needs = ctx.needs_input_grad[1:]
        used = [i for i, g in enumerate(grad_outputs) if g is not None]
        per_sample = _PerSampleVjp(spec, used, needs)
        key_dim = 0 if spec.randomness == "different" else None
        keys = _wrap(jnp.zeros(spec.plan.size) if spec.keys is None else spec.keys)
        in_dims = (tuple(spec.tensor_dims), tuple(spec.out_dims_flat[i] for i in used),
                   0 if spec.keys is None else key_dim)
        out_dims = tuple(0 if d is None else d for d in spec.tensor_dims)
        batched = vmap(per_sample, in_dims=in_dims, out_dims=out_dims, randomness=spec.vjp_randomness,
                       chunk_size=spec.chunk_size)(tensors, tuple(grad_outputs[i] for i in used), keys)
        result = []
        for g, d, need in zip(batched, spec.tensor_dims, needs):
            result.append(None if not need else (g.sum(0) if d is None else g))
        return (None, *result)


class _Spec:
    """Everything a recorded vmapped call needs to run again in backward."""

    __slots__ = ("func", "plan", "kwargs", "out_dims", "randomness", "chunk_size", "keys", "tensor_pos",
                 "tensor_dims", "out_def", "out_dims_flat", "vjp_randomness")

    def __init__(self, func: Callable, plan: _Plan, kwargs: dict, out_dims: Any, randomness: str,
                 chunk_size: Optional[int], keys: Any) -> None:
        self.func, self.plan, self.kwargs, self.out_dims = func, plan, kwargs, out_dims
        self.randomness, self.chunk_size, self.keys = randomness, chunk_size, keys
        self.tensor_pos = [i for i, leaf in enumerate(plan.leaves) if isinstance(leaf, Tensor)]
        self.tensor_dims = [plan.dims[i] for i in self.tensor_pos]
        self.out_def = None
        self.out_dims_flat: list = []
        # The backward re-runs func with the forward's keys, set explicitly per sample.
        self.vjp_randomness = "error" if randomness == "error" else "same"


class _PerSampleVjp:
    """One sample's vector-Jacobian product of a recorded vmapped call (re-runs ``func``)."""

    __slots__ = ("spec", "used", "needs")

    def __init__(self, spec: _Spec, used: list, needs: tuple) -> None:
        self.spec, self.used, self.needs = spec, used, needs

    def __call__(self, tensors: tuple, cotangents: tuple, key: Tensor) -> tuple:
        from fgraph.autograd.engine import grad as engine_grad

        spec = self.spec
        with enable_grad():
            fresh = [_differentiable(t, need) for t, need in zip(tensors, self.needs)]
            leaves = list(spec.plan.leaves)
            for pos, t in zip(spec.tensor_pos, fresh):
                leaves[pos] = t
            if spec.keys is not None:
                _random.default_generator.set_state(key._array)
            out = spec.func(*unflatten(spec.plan.treedef, leaves), **spec.kwargs)
            out_leaves = jax.tree_util.tree_leaves(out, is_leaf=_is_tensor_leaf)
            pairs = [(out_leaves[i], c) for i, c in zip(self.used, cotangents) if out_leaves[i].requires_grad]
            wrt = [t for t in fresh if t.requires_grad]
            grads: list = [None] * len(wrt)
            if pairs and wrt:
                grads = list(engine_grad(tuple(o for o, _ in pairs), tuple(wrt), tuple(c for _, c in pairs),
                                         create_graph=is_grad_enabled(), allow_unused=True))
        result = []
        it = iter(grads)
        for t in fresh:
            g = next(it) if t.requires_grad else None
            result.append(_wrap(jnp.zeros(t.shape, t.dtype)) if g is None else g)
        return tuple(result)


def _differentiable(t: Tensor, need: bool) -> Tensor:
    """``t`` as an input to differentiate: a view on its graph when it has one (nested backward), else a leaf."""
    if t.requires_grad:
        from fgraph.autograd.functional import _identity_view

        return _identity_view(t)
    return t.requires_grad_() if need and is_differentiable_dtype(t.dtype) else t


def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: Optional[int] = None) -> Callable:
    """Vectorize ``func`` over a dimension of its inputs (``torch.func.vmap``).

    ``in_dims``: an int or None for all positional arguments, or a tuple with
    one entry per argument (an int, None, or a pytree of them matching that
    argument). ``out_dims``: where the mapped dimension goes in each output (an
    int, or a pytree of ints and None matching the output). Keyword arguments
    are not mapped. ``randomness``: ``"error"``, ``"same"`` or ``"different"``.
    ``chunk_size`` runs the batch in chunks of that many elements.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.func import grad, vmap
        >>> w = fg.tensor([1.0, 2.0])
        >>> xs = fg.tensor([[1.0, 1.0], [2.0, 0.0], [0.0, 3.0]])
        >>> vmap(grad(lambda w, x: ((w * x).sum()) ** 2), in_dims=(None, 0))(w, xs).tolist()
        [[6.0, 6.0], [8.0, 0.0], [0.0, 36.0]]
    """
    if randomness not in _RANDOMNESS:
        raise TransformValueError(f'vmap: randomness must be "error", "different" or "same", got {randomness!r}.')
    if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(chunk_size, int)
                                   or chunk_size < 1):
        raise ValueError(f"vmap: chunk_size should be None or a positive int, got {chunk_size!r}.")
    if not callable(func):
        raise TypeError(f"vmap: func must be callable, got {type(func).__name__}.")

    records = [True]  # False once a call needed per-sample values: the general path from then on

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        plan = _Plan(args, in_dims)
        recording = is_grad_enabled() and any(isinstance(t, Tensor) and t.requires_grad for t in plan.leaves)
        if not recording and records[0] and _recordable(plan, randomness, chunk_size):
            try:
                return tree_map(_wrap, _run_recorded(func, plan, kwargs, out_dims))
            except ValuesNeeded:
                records[0] = False
        keys = _draw_keys(randomness, plan.size)
        if not recording:
            out = _run_vmapped(func, plan, kwargs, out_dims, randomness, chunk_size, keys)
            return tree_map(_wrap, out)
        spec = _Spec(func, plan, kwargs, out_dims, randomness, chunk_size, keys)
        tensors = tuple(plan.leaves[i] for i in spec.tensor_pos)
        outs = Vmap.apply(spec, *tensors)
        outs = outs if isinstance(outs, tuple) else (outs,)
        return unflatten(spec.out_def, outs)

    return wrapped
