"""``fgraph.compile``: a whole eager step (forward, ``fg.grad``, ``opt.step``) as one ``jax.jit`` program.

A call splits its arguments into *arrays* (tensors, and the state of every Module,
Optimizer and Generator it reaches: :mod:`fgraph.compile._state`) and a *structure*
(everything else, hashed). The structure is a static argument of one ``jax.jit``
function, so JAX's own cache decides when to trace: new shapes, dtypes, static values
or module structure. The traced program runs the user's function on the real objects
with stand-ins holding traced arrays in their slots, reads what the step left there,
and puts the originals back; after the program ran, its results are written into the
objects as the eager step would have.

A training loop calls the same step on the same objects again and again, so a call first
tries the previous call's work (``_reuse``): same argument structure, same objects, an equal
structure fingerprint. The write-back also works out the next call's program inputs while
the program runs (``StateTable.settle``); when the slots still hold exactly what it left
there, the next call starts its program without working them out again.
"""
from __future__ import annotations

import functools
import inspect
import logging
from typing import Any, Callable, NamedTuple, Optional, Sequence

import jax
import numpy as np

from fgraph._kernel_jit import kernel_jit, placed
from fgraph.autograd.engine import Gradients
from fgraph.compile._errors import translating_tracer_errors
from fgraph.compile._explain import describe_retrace, signature
from fgraph.compile._keep_shardings import keep_input_shardings
from fgraph.compile._outputs import mark_tree
from fgraph.compile._state import StateTable, capture, distinct, is_stateful, value_kinds
from fgraph.func._tree import flatten, key_orders, unflatten, with_key_orders
from fgraph.lazy._deferred import eager_section
from fgraph.lazy._state import LAZY
from fgraph.optim.optimizer import Optimizer
from fgraph.tensor import Tensor, _init_leaf, _new_object, _wrap

__all__ = ["CompiledFunction"]

logger = logging.getLogger("fgraph.compile")


class _Spec:
    """The static argument of the jitted program: compared by ``key``, carrying the call's objects."""

    __slots__ = ("key", "hash", "table", "treedef", "kinds", "which", "donated")

    def __init__(self, key: tuple, table: StateTable, treedef: Any, kinds: tuple, which: tuple, donated: tuple) -> None:
        self.key, self.hash = key, hash(key)
        self.table, self.treedef, self.kinds, self.which, self.donated = table, treedef, kinds, which, donated

    def __eq__(self, other: object) -> bool:
        return other is self or isinstance(other, _Spec) and self.hash == other.hash and self.key == other.key

    def __hash__(self) -> int:
        return self.hash


class _LastCall(NamedTuple):
    """What a call worked out that the next one reuses when nothing about its structure changed."""

    treedef: Any
    static_flags: tuple  # per leaf: whether it is a static argument
    positions: list      # per leaf: its positional index, or its keyword
    object_index: dict   # id -> index of the objects in the table (which keeps them alive)
    spec: _Spec
    fingerprint: tuple   # StateTable.snapshot's, when the call was prepared
    kinds: tuple         # value_kinds of the slots' values then


class _Static:
    """An output pytree node with no leaves: carries static data out of the traced program."""

    def __init__(self, value: Any) -> None:
        self.value = value


class _GradientsOut:
    """A ``Gradients`` leaving the program: its keys as references to the call's tensors, its values as leaves."""

    def __init__(self, keys: tuple, values: list) -> None:
        self.keys, self.values = keys, values


jax.tree_util.register_pytree_node(_Static, lambda s: ((), s.value), lambda value, _: _Static(value))
jax.tree_util.register_pytree_node(
    _GradientsOut, lambda g: (g.values, g.keys), lambda keys, values: _GradientsOut(keys, list(values)))


def _is_leaf(value: Any) -> bool:
    return isinstance(value, Tensor) or is_stateful(value)


_FLAT_ARGS: dict = {}  # number of positional leaves -> the treedef of ``(args, {})``


def _flatten_arguments(args: tuple, kwargs: dict) -> tuple[list, Any]:
    """``flatten((args, kwargs))``; the usual step's arguments (Tensors and objects, no keywords) without
    JAX's walk and its callback per node."""
    if not kwargs and all(map(_is_leaf, args)):
        treedef = _FLAT_ARGS.get(len(args))
        if treedef is None:
            treedef = _FLAT_ARGS[len(args)] = flatten((args, kwargs), is_leaf=_is_leaf)[1]
        return list(args), treedef
    return flatten((args, kwargs), is_leaf=_is_leaf)


class CompiledFunction:
    """The callable :func:`fgraph.compile` returns. ``traces`` counts traces; ``retrace_reasons`` says why."""

    def __init__(self, fn: Callable, *, static_argnums: Sequence[int] = (), static_argnames: Sequence[str] = (),
                 donate_argnums: Sequence[int] = (), in_shardings: Any = None, out_shardings: Any = None,
                 explain: bool = False) -> None:
        if not callable(fn):
            raise TypeError(f"fgraph.compile: expected a function, got {type(fn).__name__}.")
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.static_argnums = _int_tuple(static_argnums, "static_argnums")
        self.static_argnames = tuple(static_argnames) if not isinstance(static_argnames, str) else (static_argnames,)
        self.donate_argnums = _int_tuple(donate_argnums, "donate_argnums")
        overlap = set(self.static_argnums) & set(self.donate_argnums)
        if overlap:
            raise ValueError(f"fgraph.compile: arguments {sorted(overlap)} are both static and donated; a static "
                             "argument is not an array.")
        self.in_shardings, self.out_shardings, self.explain = in_shardings, out_shardings, explain
        self.traces = 0
        self.retrace_reasons: list[str] = []
        self._name = getattr(fn, "__qualname__", getattr(fn, "__name__", type(fn).__name__))
        self._closure_values = _closure_values(fn)
        self._closure_objects = [v for v in self._closure_values if is_stateful(v)]
        self._pending: Optional[tuple] = None
        self._last: Optional[_LastCall] = None  # what the previous call worked out (see _reuse)
        self._last_traced: Optional[tuple] = None
        self._jitted: Optional[Callable] = None  # made at the first call: kernel_jit asks which devices exist

    def __repr__(self) -> str:
        return f"<fgraph.compile({self._name}): traced {self.traces} time(s)>"

    # -- a call -----------------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        current = LAZY.get()
        if current is not None and current.deferred:  # deferred dispatch: run what is pending; trace op by op
            with eager_section():
                return self._call(args, kwargs)
        return self._call(args, kwargs)

    def _call(self, args: tuple, kwargs: dict) -> Any:
        leaves, treedef = _flatten_arguments(args, kwargs)
        call = self._reuse(leaves, treedef)
        primed: list = []
        try:
            if call is None:
                primed = _prime_optimizers([leaf for leaf in leaves if is_stateful(leaf)] + self._closure_objects)
                call = self._prepare(args, kwargs, leaves, treedef)
            spec, state_inputs, arg_inputs, positions = call
            self._pending = call
            if self._jitted is None:
                self._jitted = kernel_jit(self._program, static_argnums=(0,), donate_argnums=(1, 3))
            try:
                new_state, placement, outputs = placed(self._jitted)(
                    spec, *_split(state_inputs, spec.donated[0]), *_split(arg_inputs, spec.donated[1]))
            finally:
                self._pending = None
            table = spec.table
            plan, out_orders = placement.value
            final = table.write_back(plan, new_state)
            result = with_key_orders(_import(outputs, table, leaves), out_orders, _is_output_leaf)
            table.settle(plan, final)
        finally:
            for opt, params in primed:  # a stepped parameter's state has moved to its successor
                opt._unprime(params)
        mark_tree(result, self._name)  # so result.backward() names the fix (results are detached)
        return result

    def _prepare(self, args: tuple, kwargs: dict, leaves: list, treedef: Any) -> tuple:
        """Capture the objects' state and work out the program's static argument (and remember it)."""
        statics = {i for i in self.static_argnums if -len(args) <= i < len(args)}
        statics = {i % len(args) for i in statics}
        positions = _arg_positions(args, kwargs)  # per leaf: its positional index, or its keyword
        objects = [leaf for leaf in leaves if is_stateful(leaf)]
        table = capture(objects + self._closure_objects)
        state_inputs, which = table.leaves()
        object_index = {id(obj): i for i, obj in enumerate(table.objects)}
        static_flags = tuple(p in statics or p in self.static_argnames for p in positions)
        kinds, arg_inputs, arg_mask = [], [], []
        donate = set(self.donate_argnums)
        for leaf, static, position in zip(leaves, static_flags, positions):
            kind, value = _classify(leaf, static, object_index, position)
            kinds.append(kind)
            if value is not _NO_INPUT:
                arg_inputs.append(_placed(value, self.in_shardings, position))
                arg_mask.append(position in donate)
        donated_objects = {object_index[id(leaf)] for leaf, p in zip(leaves, positions)
                           if p in donate and is_stateful(leaf)}
        donated_inputs = {which[i] for i, slot in enumerate(table.slots) if slot.owner in donated_objects}
        state_mask = tuple(i in donated_inputs for i in range(len(state_inputs)))
        arg_mask = tuple(arg_mask)
        key = (treedef, tuple(kinds), table.structure(), which, arg_mask, state_mask)
        spec = _Spec(key, table, treedef, tuple(kinds), which, (state_mask, arg_mask))
        fingerprint, values = table.snapshot()
        self._last = _LastCall(treedef, static_flags, positions, object_index, spec, fingerprint, value_kinds(values))
        return spec, state_inputs, arg_inputs, positions

    def _reuse(self, leaves: list, treedef: Any) -> Optional[tuple]:
        """The previous call's table and static argument, when this call has the same argument structure
        and the objects the same structure (the usual training loop); ``None`` otherwise."""
        last = self._last
        if last is None or treedef != last.treedef:
            return None
        kinds, arg_inputs = [], []
        for leaf, static, position in zip(leaves, last.static_flags, last.positions):
            try:
                kind, value = _classify(leaf, static, last.object_index, position)
            except KeyError:  # an object the previous call did not hold
                return None
            kinds.append(kind)
            if value is not _NO_INPUT:
                arg_inputs.append(_placed(value, self.in_shardings, position))
        spec = last.spec
        if tuple(kinds) != spec.kinds:
            return None
        fingerprint, values = spec.table.snapshot()
        if fingerprint != last.fingerprint:
            return None
        state_inputs, which = spec.table.known_inputs(values), spec.which
        if state_inputs is None:
            if value_kinds(values) != last.kinds:
                return None
            state_inputs, which = distinct(values)
            if which != spec.which:
                return None
        spec.table.reuse(values, which)
        return spec, state_inputs, arg_inputs, last.positions

    # -- the traced program -------------------------------------------------------------------------------
    def _program(self, spec: _Spec, state_donated: list, state_kept: list, donated_inputs: list,
                 inputs: list) -> tuple:
        # Positions 1 and 3 are donated (jit's donate_argnums); the masks in the spec put each input back.
        self._note_trace(spec)
        table = spec.table
        state = _merge(state_donated, state_kept, spec.donated[0])
        arg_values = _merge(donated_inputs, inputs, spec.donated[1])
        table.install(state, spec.which)
        try:
            leaves, made = _rebuild_leaves(spec, arg_values, table)
            args, kwargs = unflatten(spec.treedef, leaves)
            schedulers = _schedulers(list(leaves) + self._closure_values)
            epochs = [s.last_epoch for s in schedulers]
            with translating_tracer_errors(self._name):
                result = self.fn(*args, **kwargs)
            _check_schedulers(schedulers, epochs)
            plan, new_state = table.read()
            new_state = keep_input_shardings(plan, new_state, table.slots, spec.which,
                                             None if self._pending is None else self._pending[1])
            outputs = _export(result, table, made)
            out_orders = key_orders(result, _is_output_leaf)  # JAX rebuilds the result's dicts sorted
        finally:
            table.restore()
        if self.out_shardings is not None:
            outputs = jax.tree.map(_constrain, self.out_shardings, outputs, is_leaf=_is_sharding)
        return new_state, _Static((plan, out_orders)), outputs

    def _note_trace(self, spec: _Spec) -> None:
        self.traces += 1
        if self._pending is None:
            return
        now = signature(*self._pending, self.fn)
        if self._last_traced is not None:
            reason = describe_retrace(self._last_traced, now)
            self.retrace_reasons.append(reason)
            (logger.warning if self.explain else logger.debug)("fgraph.compile(%s) retraced: %s", self._name, reason)
        self._last_traced = now


def _prime_optimizers(objects: list) -> list:
    """``[(optimizer, parameters primed)]``: the optimizers among ``objects`` make their first state before
    the trace (see :meth:`Optimizer._prime_state`), so the state's structure is the same at every call.
    Not beside a GradScaler: a skipped first step must leave no state, which the scaler's traced select
    does for state the step made, not for state that was there before it."""
    from fgraph.amp.grad_scaler import GradScaler

    if any(isinstance(obj, GradScaler) for obj in objects):
        return []
    primed = []
    for obj in objects:
        if isinstance(obj, Optimizer):
            params = obj._prime_state()
            if params:
                primed.append((obj, params))
    return primed


# -- arguments in and results out ---------------------------------------------------------------------------
_NO_INPUT = object()


def _classify(leaf: Any, static: bool, object_index: dict, position: Any) -> tuple[tuple, Any]:
    if is_stateful(leaf):
        return ("object", object_index[id(leaf)]), _NO_INPUT
    if static:
        _check_hashable(leaf, position)
        return ("static", leaf), _NO_INPUT
    if isinstance(leaf, Tensor):
        return ("tensor", leaf.requires_grad), leaf._array
    if isinstance(leaf, (jax.Array, np.ndarray, np.generic)):
        return ("array",), leaf
    if isinstance(leaf, (bool, int, float, complex)):
        return ("scalar", type(leaf)), leaf
    _check_hashable(leaf, position)
    return ("static", leaf), _NO_INPUT


def _check_hashable(value: Any, position: Any) -> None:
    try:
        hash(value)
    except TypeError:
        raise TypeError(
            f"fgraph.compile: argument {position!r} holds a {type(value).__name__}, which is neither an array nor "
            "hashable; pass tensors/arrays, or hashable settings (they become static: a new value retraces)."
        ) from None


def _rebuild_leaves(spec: _Spec, values: Any, table: StateTable) -> tuple[list, dict]:
    leaves, made = [], {}
    values = iter(values)
    for position, kind in enumerate(spec.kinds):
        if kind[0] == "object":
            leaves.append(table.objects[kind[1]])
        elif kind[0] == "static":
            leaves.append(kind[1])
        elif kind[0] == "tensor":
            t = _new_object(Tensor)
            _init_leaf(t, next(values), kind[1])
            made[id(t)] = position
            leaves.append(t)
        else:
            leaves.append(next(values))
    return leaves, made


def _split(values: list, mask: tuple) -> tuple[list, list]:
    """``(donated, kept)``: the values where ``mask`` is true, and the others, each in order."""
    return [v for v, d in zip(values, mask) if d], [v for v, d in zip(values, mask) if not d]


def _merge(donated: list, kept: list, mask: tuple) -> list:
    """Undo :func:`_split`."""
    d, k = iter(donated), iter(kept)
    return [next(d) if m else next(k) for m in mask]


def _export(result: Any, table: StateTable, made: dict) -> Any:
    """The function's result as a pytree of arrays (a Gradients keeps its keys as references)."""
    given = table._given

    def convert(value: Any) -> Any:
        if isinstance(value, Gradients):
            keys, values = [], []
            for key in value:
                ref = ("state", given[id(key)]) if id(key) in given else ("arg", made[id(key)]) if id(key) in made else None
                keys.append(ref)
                values.append(value[key]._array)
            return _GradientsOut(tuple(keys), values)
        if isinstance(value, Tensor):
            return _wrap(value._array)
        if is_stateful(value):
            raise TypeError(f"fgraph.compile: the function returned a {type(value).__name__}; modules, optimizers "
                            "and generators are updated in place, return tensors (or nothing).")
        return value

    return jax.tree.map(convert, result, is_leaf=_is_output_leaf)


def _is_output_leaf(value: Any) -> bool:
    return isinstance(value, (Tensor, Gradients)) or is_stateful(value)


def _import(outputs: Any, table: StateTable, leaves: list) -> Any:
    if isinstance(outputs, Tensor):  # the usual step returns its loss: nothing to convert
        return outputs
    original = {}
    for value, index in zip(table.values, table._which):
        original.setdefault(index, value)

    def convert(value: Any) -> Any:
        if not isinstance(value, _GradientsOut):
            return value
        items = {}
        for ref, grad in zip(value.keys, value.values):
            key = original.get(ref[1]) if ref and ref[0] == "state" else leaves[ref[1]] if ref else _wrap(grad)
            items[id(key)] = (key, _wrap(grad))
        return Gradients(items)

    return jax.tree.map(convert, outputs, is_leaf=lambda v: isinstance(v, _GradientsOut))


def _placed(value: Any, in_shardings: Any, position: Any) -> Any:
    if in_shardings is None or not isinstance(position, int):
        return value
    sharding = in_shardings[position] if isinstance(in_shardings, (tuple, list)) else in_shardings
    return value if sharding is None else jax.device_put(value, sharding)


def _is_sharding(value: Any) -> bool:
    return isinstance(value, jax.sharding.Sharding)


def _constrain(sharding: Any, subtree: Any) -> Any:
    def one(leaf: Any) -> Any:
        if isinstance(leaf, Tensor):
            return _wrap(jax.lax.with_sharding_constraint(leaf._array, sharding))
        return jax.lax.with_sharding_constraint(leaf, sharding) if isinstance(leaf, jax.Array) else leaf

    if sharding is None:
        return subtree
    return jax.tree.map(one, subtree, is_leaf=lambda v: isinstance(v, Tensor))


def _arg_positions(args: tuple, kwargs: dict) -> list:
    positions = []
    for i, arg in enumerate(args):
        positions += [i] * len(jax.tree_util.tree_leaves(arg, is_leaf=_is_leaf))
    for name, value in kwargs.items():
        positions += [name] * len(jax.tree_util.tree_leaves(value, is_leaf=_is_leaf))
    return positions


def _closure_values(fn: Callable) -> list:
    """The values the function reaches through its closure or globals (modules, optimizers... among them)."""
    try:
        found = inspect.getclosurevars(fn)
    except (TypeError, ValueError):
        return []
    return list(found.nonlocals.values()) + list(found.globals.values())


def _schedulers(values: list) -> list:
    from fgraph.optim.lr_scheduler import LRScheduler

    return [v for v in values if isinstance(v, LRScheduler)]


def _check_schedulers(schedulers: list, epochs: list) -> None:
    for scheduler, epoch in zip(schedulers, epochs):
        if scheduler.last_epoch != epoch:
            scheduler.last_epoch = epoch
            raise RuntimeError(
                f"fgraph.compile: {type(scheduler).__name__}.step() ran inside the compiled function; Python state "
                "advances only while tracing, so the schedule would freeze. Call scheduler.step() outside the compiled "
                "step: learning rates are inputs of the program and a new value retraces nothing."
            )


def _int_tuple(value: Any, name: str) -> tuple:
    if isinstance(value, int):
        return (value,)
    try:
        return tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise TypeError(f"fgraph.compile: {name} must be an int or a sequence of ints, got {value!r}.") from None
