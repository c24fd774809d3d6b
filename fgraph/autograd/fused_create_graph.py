"""Fused ``create_graph`` passes: a repeated differentiable backward as one node with a JAX rule.

Under ``create_graph=True`` the engine records every rule's ops, so that the gradients can
be differentiated again: the backward of a two-layer ``tanh`` network records ~15 ops, one
dispatch and one node each. When such a pass's structure repeats, it runs instead as the
fused program of :mod:`fgraph.autograd.fusion` (one dispatch: the very program a plain pass
of that structure uses) and records one node, ``FusedBackward``. Its inputs are the pass's
seeds and every value its rules read: saved inputs on their own edges, and saved outputs as
outputs of the nodes that saved them (as the node-by-node pass rewraps them). Its rule is
``jax.vjp`` of the program, a second jitted kernel compiled in the background with it.
Under ``create_graph`` that rule records another such node, whose rule is the vjp of the
vjp, so derivatives of any order go through (a third-order vjp compiles on the caller's
thread the first time). A later plain pass over a graph holding ``FusedBackward`` nodes
fuses like any other: a Hessian-vector product is then four dispatches and a few ops.

Only what :func:`fgraph.autograd.structure.find` accepts is fused (hook-free declared
ops and ``FusedBackward`` nodes), without saved-tensor hooks and not under JAX tracing;
until a structure's program and its vjp are compiled, passes run node by node. Values
equal the node-by-node pass up to floating-point reassociation. The gradients' ``grad_fn``
is ``FusedBackward`` instead of the rules' own ops (``fusion.set_enabled(False)`` records
the ops again, for debugging).
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Optional, Sequence

import jax
import jax.numpy as jnp

from fgraph._kernel_jit import kernel_jit, placed
from fgraph.autograd import fusion
from fgraph.autograd.structure import make_plan
from fgraph.autograd._jax_vjp import Vjp
from fgraph.autograd.grad_mode import _GRAD_ENABLED
from fgraph.autograd.graph import Node, make_edge, next_sequence_nr
from fgraph.tensor import Tensor, _rewrap, _wrap, _wrap_output

__all__ = ["FusedBackward"]

_lock = threading.Lock()  # guards FlatProgram._vjps and the vjp compile requests


_INEXACT: dict = {}  # dtype -> whether it is a float or complex type (jnp.issubdtype is slow)


def _inexact(a: Any) -> bool:
    dtype = getattr(a, "dtype", None)
    if dtype is None:
        return False
    known = _INEXACT.get(dtype)
    if known is None:
        known = _INEXACT[dtype] = bool(jnp.issubdtype(dtype, jnp.inexact))
    return known


class _FlatBody:
    """A fused program's body with its outputs flattened: ``(*captured, *leaf)`` grads, ``None`` dropped."""

    __slots__ = ("fused",)

    def __init__(self, fused: Any) -> None:
        self.fused = fused

    def __call__(self, *arrays: Any) -> tuple:
        captured, leaves = fusion._fused_body(self.fused, *arrays)
        return tuple(a for a in (*captured, *leaves) if a is not None)


class FlatProgram:
    """A JAX program on flat arrays (returning a tuple of arrays), jitted, with its vjps.

    ``fused`` is the :class:`fusion._FusedProgram` whose body the program runs: tracing it
    reads that program's plan, which :meth:`run` binds.
    """

    __slots__ = ("fn", "jitted", "fused", "float_out", "out_meta", "ready", "failed", "requests", "_vjps", "_reads",
                 "__weakref__")

    def __init__(self, fn: Callable, fused: Any) -> None:
        self.fn = fn
        self.jitted = kernel_jit(fn)
        self.fused = fused
        self.float_out: Optional[tuple] = None  # the top program's inexact outputs, once it has run
        self.out_meta: Optional[tuple] = None
        self.ready = False  # the top program: it has run; a vjp: it is compiled
        self.requests: set = set()  # float_in selections whose vjp compile was asked for
        self.failed = False
        self._vjps: dict = {}
        self._reads: dict = {}  # float_in -> those of its inputs the outputs depend on

    def vjp(self, float_in: tuple, float_out: tuple, n: int) -> "FlatProgram":
        """The program ``(*xs, *cts) -> cotangents of xs[float_in]`` (one per input/output selection)."""
        key = (float_in, float_out)
        program = self._vjps.get(key)
        if program is None:
            with _lock:
                program = self._vjps.get(key)
                if program is None:
                    program = self._vjps[key] = FlatProgram(Vjp(self.fn, float_in, float_out, n), self.fused)
        return program

    def reads(self, plan: Any, arrays: Sequence[Any], float_in: tuple) -> tuple:
        """The inputs among ``float_in`` that the outputs depend on (worked out once per selection)."""
        read = self._reads.get(float_in)
        if read is None:
            calls = self.fused._calls
            previous = getattr(calls, "plan", None)
            calls.plan = plan
            try:
                read = self._reads[float_in] = inputs_read(self.fn, arrays, float_in)
            finally:
                calls.plan = previous
        return read

    def run(self, plan: Any, arrays: Sequence[Any]) -> tuple:
        calls = self.fused._calls
        previous = getattr(calls, "plan", None)
        calls.plan = plan  # read only if this call traces
        try:
            return placed(self.jitted)(*arrays)
        finally:
            calls.plan = previous


class FusedBackward(Node):
    """One node for a whole fused ``create_graph`` pass; its rule is ``jax.vjp`` of the pass's program.

    ``arrays`` are the program's inputs (seeds and saved values), ``next_edges`` their
    edges (``None`` where no gradient flows: integers, constants); ``out_meta`` the shapes
    and dtypes of the gradients it produced.
    """

    __slots__ = ("program", "plan", "arrays", "float_in", "float_out", "out_meta")

    def __init__(self, program: FlatProgram, plan: Any, arrays: list, edges: tuple, float_in: tuple,
                 float_out: tuple, out_meta: tuple) -> None:
        self._set_edges(edges, next_sequence_nr())
        self.program, self.plan, self.arrays = program, plan, arrays
        self.float_in, self.float_out, self.out_meta = float_in, float_out, out_meta

    @property
    def num_inputs(self) -> int:  # type: ignore[override]
        return len(self.out_meta)

    def apply(self, grad_outputs: Sequence[Optional[Tensor]], needs: Optional[tuple]) -> tuple:
        cts = [self._cotangent(grad_outputs[j], j) for j in self.float_out]
        vjp = self.program.vjp(self.float_in, self.float_out, len(self.arrays))
        if _GRAD_ENABLED.get():  # create_graph: the vjp is recorded, with the vjp of the vjp as its rule
            inputs = [_rewrap(a, e) if isinstance(a, jax.Array) else a for a, e in zip(self.arrays, self.next_edges)]
            outs = run_recorded(vjp, self.plan, inputs + cts)
        else:
            outs = [_wrap(o) for o in vjp.run(self.plan, [*self.arrays, *[c._array for c in cts]])]
        return self._scatter(outs)

    def _cotangent(self, g: Optional[Tensor], j: int) -> Tensor:
        return _wrap(jnp.zeros(*self.out_meta[j])) if g is None else g

    def _scatter(self, outs: Sequence[Any]) -> tuple:
        result: list = [None] * len(self.arrays)
        for i, g in zip(self.float_in, outs):
            result[i] = g
        return tuple(result)

    # -- fusion protocol (see structure.find): a later plain pass traces this node -------------------
    def fusion_signature(self) -> tuple:
        return (FusedBackward, self.program, self.float_in, self.float_out, self.out_meta)

    def saved_kinds(self) -> tuple:
        return tuple(map(type, self.arrays))

    def saved_arrays(self) -> list:
        return list(self.arrays)

    def apply_kernel(self, grad_outputs: Sequence[Optional[Tensor]], needs: Optional[tuple], saved: list) -> tuple:
        cts = [self._cotangent(grad_outputs[j], j)._array for j in self.float_out]
        vjp = self.program.vjp(self.float_in, self.float_out, len(saved))
        return self._scatter([_wrap(o) for o in vjp.run(self.plan, [*saved, *cts])])


def run_recorded(program: FlatProgram, plan: Any, inputs: Sequence[Any]) -> list:
    """Run ``program`` on ``inputs`` (Tensors or plain values); record a :class:`FusedBackward` if needed."""
    arrays = [t._array if isinstance(t, Tensor) else t for t in inputs]
    outs = program.run(plan, arrays)
    edges = tuple(t._edge if isinstance(t, Tensor) else None for t in inputs)
    return _outputs(program, plan, arrays, edges, outs)


def _outputs(program: FlatProgram, plan: Any, arrays: list, edges: tuple, outs: Sequence[Any],
             float_in: Optional[tuple] = None) -> list:
    """The program's outputs as Tensors, recorded on one :class:`FusedBackward` when a gradient can flow
    back (``float_in``: the inputs it flows to, worked out here unless the caller has them)."""
    if float_in is None:
        float_in = program.reads(plan, arrays, _float_inputs(arrays, edges))
    if not float_in:
        return [_wrap(o) for o in outs]
    float_out = tuple(j for j, o in enumerate(outs) if _inexact(o))
    edges = tuple(e if i in float_in else None for i, e in enumerate(edges))
    out_meta = tuple((o.shape, o.dtype) for o in outs)
    node = FusedBackward(program, plan, arrays, edges, float_in, float_out, out_meta)
    return [_wrap_output(o, node, j) if j in float_out else _wrap(o) for j, o in enumerate(outs)]


# -- the engine's entry point ----------------------------------------------------------------------
def try_run(found: Any, graph_root: Node, root_nr: int, seeds: list, output_edges: list, accumulate: bool,
            min_topo: int) -> Optional[tuple[list, dict]]:
    """Run a ``create_graph`` pass (of structure ``found``) fused if its program and vjp are compiled; else
    ``None`` (node by node)."""
    if found.packed:
        return None
    plan = make_plan(found, graph_root, root_nr, seeds, output_edges, accumulate, min_topo)
    if fusion._traced(plan.arrays):  # under jax.jit the pass is one program anyway
        return None
    program, fresh = fusion._program_for(found.key, len(found.order))
    if program is None:
        return None
    edges = tuple(_saved_edges(found.order, found.layout, seeds))
    float_in = _float_inputs(plan.arrays, edges)
    flat = _flat(program)
    if _ready_vjp(flat, float_in, len(plan.arrays)) is None:
        if not _request_compile(program, flat, plan, float_in, fresh):
            return None  # compiling in the background: node by node meanwhile
    captured_arrays, leaf_arrays = program(plan)
    with fusion._lock:
        fusion._stats["hits"] += 1
    outs = iter(_outputs(flat, plan, plan.arrays, edges,
                         [a for a in (*captured_arrays, *leaf_arrays) if a is not None], float_in))
    captured = [None if a is None else next(outs) for a in captured_arrays]
    leaf_grads = {acc: next(outs) for acc, a in zip(found.leaves, leaf_arrays) if a is not None}
    return captured, leaf_grads


def inputs_read(fn: Callable, arrays: Sequence[Any], float_in: tuple) -> tuple:
    """The inputs among ``float_in`` that ``fn``'s outputs depend on. ``mul``'s rule for ``x`` alone, ``g * c``,
    does not read ``x``: recorded op by op its result would not depend on ``x``, so it must not here either (a
    gradient that does not depend on an input is ``None`` for it, and ``strict`` checks rely on that)."""
    if not float_in:
        return float_in
    jaxpr = jax.make_jaxpr(fn)(*arrays).jaxpr
    try:
        from jax._src.interpreters.partial_eval import dce_jaxpr

        _, used = dce_jaxpr(jaxpr, [True] * len(jaxpr.outvars))
    except Exception:  # pragma: no cover - JAX moved its dead-code pass: every input counts as read
        return float_in
    positions = [i for i, a in enumerate(arrays) if a is not None]  # the jaxpr's inputs (None is no input)
    read = {i for i, u in zip(positions, used) if u}
    return tuple(i for i in float_in if i in read)


def _float_inputs(arrays: Sequence[Any], edges: tuple) -> tuple:
    """The inputs a gradient flows back to: inexact arrays on an edge."""
    return tuple(i for i, (a, e) in enumerate(zip(arrays, edges)) if e is not None and _inexact(a))


def _flat(program: Any) -> FlatProgram:
    if program.flat is None:
        with _lock:
            if program.flat is None:
                program.flat = FlatProgram(_FlatBody(program), program)
    return program.flat


def _saved_edges(order: list, layout: list, seeds: list) -> list:
    """The edge of every program input, aligned with ``make_plan``'s arrays (``None``: no gradient)."""
    edges = [s._edge for s in seeds]
    for node, span in zip(order, layout):
        if span is None:
            continue
        if isinstance(node, FusedBackward):
            edges.extend(node.next_edges)
            continue
        saved = node.saved_inputs
        if saved is not None:
            edges.extend(a._edge if isinstance(a, Tensor) else None for a in saved)
        if node.op.save_result:
            n = span[1] - span[0] - (0 if saved is None else len(saved))
            edges.extend(make_edge(node, i) for i in range(n))
    return edges


def _ready_vjp(flat: FlatProgram, float_in: tuple, n: int) -> Optional[FlatProgram]:
    if not flat.ready:
        return None
    vjp = flat.vjp(float_in, flat.float_out, n)
    return vjp if vjp.ready else None


def _request_compile(program: Any, flat: FlatProgram, plan: Any, float_in: tuple, fresh: bool) -> bool:
    """Compile ``program`` (if ``fresh``) and its vjp for ``float_in``: in the background (returns
    ``False``), or on this thread when fusion compiles in the foreground (``True`` if that worked)."""
    with _lock:
        if flat.failed or float_in in flat.requests:
            return False
        flat.requests.add(float_in)
    job = _CompileJob(program, flat, plan, float_in, fresh)
    if fusion._state["background"]:
        fusion._worker.submit(job)
        return False
    job()
    return _ready_vjp(flat, float_in, len(plan.arrays)) is not None


class _CompileJob:
    """Compile a structure's program (if new) and the vjp that a ``create_graph`` pass of it needs."""

    __slots__ = ("program", "flat", "plan", "float_in", "fresh")

    def __init__(self, program: Any, flat: FlatProgram, plan: Any, float_in: tuple, fresh: bool) -> None:
        self.program, self.flat, self.plan, self.float_in, self.fresh = program, flat, plan, float_in, fresh

    def __call__(self) -> None:
        program, flat, plan = self.program, self.flat, self.plan
        try:
            result = program.compile(plan) if self.fresh else program(plan)
            if result is None:  # the program failed to compile: the structure stays node by node
                flat.failed = True
                return
            if not flat.ready:
                outs = [a for a in (*result[0], *result[1]) if a is not None]
                flat.float_out = tuple(j for j, o in enumerate(outs) if _inexact(o))
                flat.out_meta = tuple((o.shape, o.dtype) for o in outs)
                flat.ready = True
            vjp = flat.vjp(self.float_in, flat.float_out, len(plan.arrays))
            cts = [jnp.zeros(*flat.out_meta[j]) for j in flat.float_out]
            jax.block_until_ready(vjp.run(plan, [*plan.arrays, *cts]))
            vjp.ready = True
        except Exception:  # a vjp that does not trace or compile: create_graph passes stay node by node
            flat.failed = True
