"""Fused passes on dual values: a backward pass under forward mode as one op, its tangent as one program.

Forward-over-reverse (``jvp`` of ``grad``: the cheapest Hessian-vector product) runs a backward
pass while a dual level is open: the gradients must carry tangents. Node by node, every rule
runs on dual Tensors, so each of its ops dispatches twice (value and tangent) with Python in
between. When the pass's structure is fused (:mod:`fgraph.autograd.fusion`), its program is a
pure JAX function of the seeds and saved values, so here it runs as one *derived op*
(:mod:`fgraph.autograd._forward_rules`) whose inputs are those values as Tensors, carrying the
tangents they had when they were made (saved inputs their own, saved results the ones their
node remembered). Forward mode then gives the gradients' tangents as ``jax.jvp`` of that one
program (one dispatch), and a ``create_graph`` pass records the op like any other: its reverse
rule is ``jax.vjp`` of the program, so every mix of orders goes through.

The op's kernel traces the engine over a *template* plan (the first pass of the structure):
the structure key guarantees every pass of it has the same graph, and a kernel derived later
(the tangent's, a reverse rule's) may trace when no pass is running.
"""
from __future__ import annotations

import threading
from typing import Any, Optional

import jax

from fgraph._kernel_jit import placed
from fgraph.autograd import fusion
from fgraph.autograd._forward_rules import _PAIRS, PairKernel, _derived_def, run_dual
from fgraph.autograd.forward_ad import attach, open_levels, result_tangents, tangent_at
from fgraph.autograd.fused_create_graph import FusedBackward
from fgraph.autograd.grad_mode import _GRAD_ENABLED
from fgraph.autograd.graph import make_edge
from fgraph.autograd.structure import make_plan
from fgraph.tensor import Tensor, _rewrap, _wrap

__all__ = ["try_run"]

_lock = threading.Lock()


class FusedPassKernel:
    """A fused pass's program on flat arrays, ``(*seeds, *saved) -> (*captured, *leaf)`` gradients (``None``
    dropped; one alone is returned bare, as derived kernels with one output do), tracing the engine over
    ``template`` unless a pass supplies its own plan."""

    __slots__ = ("name", "program", "template", "present", "_vjps", "op", "params", "__weakref__")

    def __init__(self, program: Any, template: Any) -> None:
        self.name = "fused_pass"
        self.program, self.template = program, template
        self.present: Optional[tuple] = None  # which captured and leaf gradients exist (set by a trace)
        self._vjps: dict = {}  # positions -> VjpKernel (see _forward_rules._derived_rule)
        self.op: Any = None  # the derived op running this kernel, and its params (set once `present` is)
        self.params: Any = None

    def __call__(self, *arrays: Any) -> tuple:
        calls = self.program._calls
        previous = getattr(calls, "plan", None)
        if previous is None:
            calls.plan = self.template
        try:
            captured, leaves = fusion._fused_body(self.program, *arrays)
        finally:
            calls.plan = previous
        self.present = (tuple(a is not None for a in captured), tuple(a is not None for a in leaves))
        outs = tuple(a for a in (*captured, *leaves) if a is not None)
        return outs[0] if len(outs) == 1 else outs

    @property
    def single(self) -> bool:
        return sum(self.present[0]) + sum(self.present[1]) == 1


def try_run(found: Any, graph_root: Any, root_nr: int, seeds: list, output_edges: list, accumulate: bool,
            min_topo: int) -> Optional[tuple[list, dict]]:
    """Run a pass (of structure ``found``) under open dual levels as one derived op; ``None``: node by node."""
    if found.packed:
        return None
    plan = make_plan(found, graph_root, root_nr, seeds, output_edges, accumulate, min_topo)
    if fusion._traced(plan.arrays):
        return None
    program, fresh = fusion._program_for(found.key, len(found.order))
    if program is None or fresh and fusion._run_program(program, fresh, plan) is None:
        return None  # not seen often enough yet, or compiling in the background
    level = open_levels()
    level = level[0] if len(level) == 1 else None
    kernel = _kernel(program, plan)
    if level is not None and not _GRAD_ENABLED.get():  # nothing to record: arrays in, records out
        untaped = _run_untaped(found, kernel, plan, seeds, level)
        if untaped is not None:
            return untaped
    found_inputs = _inputs(found, seeds, plan.arrays, level)
    if found_inputs is None:
        return None
    inputs, positions, tangents = found_inputs
    op, params = kernel.op, kernel.params
    calls = program._calls
    previous = getattr(calls, "plan", None)
    calls.plan = plan  # a first call traces this pass
    try:
        if level is None or not positions:  # nested levels (tangents level by level), or no tangents here
            from fgraph.ops._declare import apply_op

            outs = apply_op(op, tuple(inputs), params)
        else:
            edges = tuple(t._edge if isinstance(t, Tensor) else None for t in inputs)
            outs = run_dual(op, tuple(inputs), plan.arrays, params, edges, any(e is not None for e in edges), level,
                            positions, tangents)
            if outs is None:
                return None
    finally:
        calls.plan = previous
    return _split(found, kernel, (outs,) if kernel.single else outs)


def _split(found: Any, kernel: FusedPassKernel, outs: Any) -> tuple[list, dict]:
    """The pass's ``(captured, leaf gradients)`` from the kernel's outputs ``outs`` (records)."""
    outs = iter(outs)
    captured_present, leaf_present = kernel.present
    captured = [next(outs) if present else None for present in captured_present]
    leaf_grads = {acc: next(outs) for acc, present in zip(found.leaves, leaf_present) if present}
    return captured, leaf_grads


def _run_untaped(found: Any, kernel: FusedPassKernel, plan: Any, seeds: list, level: Any) -> Optional[tuple]:
    """A pass without ``create_graph`` at one open level: nothing is recorded, so the program's value and
    tangent run as one dispatch on the plan's arrays, and only the gradients become records (no input
    records are built, as :func:`_inputs` must for a recorded op). ``None``: the general path."""
    positions, t_arrays = _tangent_arrays(found, seeds, len(plan.arrays), level)
    if not positions:
        return None
    key = (kernel.op, kernel.params, positions, len(plan.arrays))
    pair = _PAIRS.get(key)
    if pair is None:
        pair = _PAIRS[key] = PairKernel(*key)
    calls = kernel.program._calls
    previous = getattr(calls, "plan", None)
    calls.plan = plan  # a first call traces this pass
    try:
        out, t_out = placed(pair.jitted)(*plan.arrays, *t_arrays)
    except (TypeError, ValueError, IndexError):
        return None
    finally:
        calls.plan = previous
    float_out = pair.derived_for(out)[0]
    outs = [_wrap(out)] if kernel.single else [_wrap(o) for o in out]
    t_out = (t_out,) if len(float_out) == 1 else t_out
    for j, t in zip(float_out, t_out):
        attach(outs[j], {level: _wrap(t)})
    return _split(found, kernel, outs)


def _tangent_arrays(found: Any, seeds: list, n: int, level: Any) -> tuple[tuple, list]:
    """``(positions, tangent arrays)`` of the program's ``n`` inputs (see :func:`_inputs`) dual at ``level``;
    no positions when the layout does not match."""
    positions: list = []
    t_arrays: list = []
    for i, s in enumerate(seeds):
        t = tangent_at(s, level)
        if t is not None:
            positions.append(i)
            t_arrays.append(t._array)
    i = len(seeds)
    for node, span in zip(found.order, found.layout):
        if span is None:
            continue
        start, stop = span
        if not isinstance(node, FusedBackward):  # a FusedBackward's values have no tangents
            saved = node.saved_inputs or ()
            for a in saved:
                t = tangent_at(a, level) if isinstance(a, Tensor) else None
                if t is not None:
                    positions.append(i)
                    t_arrays.append(t._array)
                i += 1
            remembered = result_tangents(node)
            for k in range(stop - start - len(saved)):
                t = remembered.get(k, {}).get(level) if remembered else None
                if t is not None:
                    positions.append(i)
                    t_arrays.append(t._array)
                i += 1
        else:
            i += stop - start
    return (tuple(positions), t_arrays) if i == n else ((), [])


def _kernel(program: Any, plan: Any) -> FusedPassKernel:
    kernel = program.dual
    if kernel is None:
        with _lock:
            if program.dual is None:
                kernel = FusedPassKernel(program, plan)
                jax.eval_shape(kernel, *plan.arrays)  # which gradients the program returns: kernel.present
                kernel.op = _derived_def(kernel.name, kernel.single)
                kernel.params = kernel.op.Params(kernel)
                program.dual = kernel
            kernel = program.dual
    return kernel


def _inputs(found: Any, seeds: list, arrays: list, level: Any) -> Optional[tuple]:
    """``(inputs, positions, tangents)``: the program's inputs as records on their edges, and at ``level``
    (one open level; ``None``: several, the inputs then carry their tangents) the dual ones' tangents."""
    inputs: list = list(seeds)
    tangents_at: list = [None] * len(seeds) if level is not None else None
    if level is not None:
        for i, s in enumerate(seeds):
            tangents_at[i] = tangent_at(s, level)
    for node, span in zip(found.order, found.layout):
        if span is None:
            continue
        start, stop = span
        if isinstance(node, FusedBackward):  # its values have no tangents: made outside forward mode
            inputs.extend(_rewrap(a, e) if isinstance(a, jax.Array) else a
                          for a, e in zip(arrays[start:stop], node.next_edges))
            if level is not None:
                tangents_at.extend([None] * (stop - start))
            continue
        saved = node.saved_inputs or ()
        inputs.extend(saved)
        remembered = result_tangents(node) or {}
        if level is not None:
            tangents_at.extend(tangent_at(t, level) if isinstance(t, Tensor) else None for t in saved)
        for k, r in enumerate(arrays[start + len(saved):stop]):
            result = _rewrap(r, make_edge(node, k))
            if level is None:
                attach(result, remembered.get(k, {}))
            else:
                tangents_at.append(remembered.get(k, {}).get(level))
            inputs.append(result)
    if len(inputs) != len(arrays):
        return None
    if level is None:
        return inputs, (), []
    positions = tuple(i for i, t in enumerate(tangents_at) if t is not None)
    return inputs, positions, [tangents_at[i] for i in positions]
