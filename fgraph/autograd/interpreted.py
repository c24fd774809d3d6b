"""A backward pass of a structure without a fused program, as one call of a shared interpreter program.

A structure's own fused program (:mod:`fgraph.autograd.fusion`) compiles only once the structure has
recurred often enough to pay for it; until then its passes ran node by node, one kernel dispatch per
node and per gradient sum. Here such a pass is written once per structure as an instruction tape (one
instruction per node rule and per gradient sum, over registers: the engine's ready heap run on the
host with registers for gradients) and run by :mod:`fgraph.autograd._interpreter`'s program, compiled
for the *kinds* of node the tape uses -- op, static parameters, shapes, which gradients flow -- not for
the structure. A notebook cell edited into a new arrangement of ops it has used before runs each pass as
one dispatch from its first call.

A program for a set of kinds is compiled (on fusion's background worker) once a structure that needs it
has run node by node twice and its own fused program is not on its way; it is merged with the program of
the same avals so far (up to :data:`~fgraph.autograd._interpreter.MAX_KINDS` kinds), so a session's programs grow to cover its kinds. A
rule's saved Python numbers are baked into its kind (another value: another tape, and another program
once that value has recurred). Taken: passes fusion could fuse (declared ops whose rules fuse, no hooks,
nothing packed) on the CPU whose arrays have at most :data:`~fgraph.autograd._interpreter.MAX_ELEMENTS`
elements each. Gradients equal the node-by-node engine's: the same rule kernels, sums in the same order.
:func:`set_enabled` turns it off (``fusion.set_enabled(False)`` does too).

Example:
    >>> import fgraph as fg
    >>> from fgraph.autograd import interpreted
    >>> rent = fg.autograd.fusion.stats()["compile_rent"]
    >>> fg.autograd.fusion.set_compile_rent(1e9)   # no structure earns a program of its own here
    >>> x = fg.tensor([0.5, 1.0], requires_grad=True)
    >>> for _ in range(2):   # the second node-by-node pass asks for the program of these kinds
    ...     (g,) = fg.grad(fg.tanh(x).sin().sum(), [x])
    >>> fg.autograd.fusion.wait_for_compiles()
    True
    >>> before = interpreted.stats()["runs"]
    >>> (g,) = fg.grad(fg.sin(x).tanh().sum(), [x])   # a new arrangement of the same kinds
    >>> interpreted.stats()["runs"] - before
    1
    >>> fg.autograd.fusion.set_compile_rent(rent)
"""
from __future__ import annotations

import functools
import os
import threading
from collections import OrderedDict
from typing import Any, Optional

import jax
import jax.numpy as jnp

from fgraph.autograd import _interpreter as interp, fusion
from fgraph.autograd.fused_create_graph import FusedBackward
from fgraph.autograd._ready_heap import _run_ready_heap
from fgraph.autograd.graph import GraphRoot, Node
from fgraph.autograd.structure import Structure, make_plan
from fgraph.lazy._recorder import array_type
from fgraph.tensor import _wrap

__all__ = ["set_enabled", "is_enabled", "stats", "clear"]

#: A structure's tape is written, and a program for its kinds asked for, at this many node-by-node passes.
COMPILE_AFTER = 2
#: Structures remembered (their tapes, or that they cannot be interpreted).
MAX_TAPES = 256

_state = {"enabled": os.environ.get("FGRAPH_INTERPRETER", "1") != "0"}  # FGRAPH_INTERPRETER=0: off
_STATS = {"runs": 0, "tapes": 0, "refused": 0}
_TAPES: "OrderedDict[Any, Any]" = OrderedDict()  # structure key -> _Entry
_KINDS: dict = {}  # kind key -> Kind, or None when its rule cannot be interpreted
_lock = threading.Lock()
_NOT_YET = object()


def set_enabled(enabled: bool) -> None:
    """Run passes of uncompiled structures through the interpreter (the default) or node by node."""
    _state["enabled"] = bool(enabled)


def is_enabled() -> bool:
    return _state["enabled"]


def stats() -> dict:
    """``runs``: passes run by the interpreter; ``tapes``: structures written as tapes; ``refused``: structures
    it cannot run; and the interpreter programs' counters (:func:`fgraph.autograd._interpreter.stats`)."""
    with _lock:
        return dict(_STATS, **interp.stats())


def clear() -> None:
    """Forget every tape and program (``fusion.clear_cache`` calls this)."""
    with _lock:
        _TAPES.clear()
        _KINDS.clear()
    interp.clear()


class _Entry:
    """A structure's state here: its sightings, then its tape (``None``: it cannot be interpreted)."""

    __slots__ = ("sightings", "tape", "program", "requested", "numbers")

    def __init__(self) -> None:
        self.sightings = 0
        self.tape: Any = _NOT_YET
        self.numbers: tuple = ()  # the Python numbers (and Nones) among the saved values the tape was written for
        self.program: Optional[interp.Program] = None
        self.requested: Any = None  # the device a program was asked for


def try_run(found: Structure, graph_root: Node, root_nr: int, seeds: list, output_edges: list, accumulate: bool,
            min_topo: int) -> Optional[tuple[list, dict]]:
    """Run this pass through an interpreter program, if one serves its kinds; else ``None`` (node by node)."""
    if not _state["enabled"] or found.packed or not _on_cpu():
        return None
    entry = _entry(found.key)
    if entry.tape is None:
        return None
    arrays = found.arrays
    if arrays is None:
        arrays = make_plan(found, graph_root, root_nr, seeds, output_edges, accumulate, min_topo).arrays
    concrete = array_type()
    numbers: Any = ()
    for a in arrays:
        if type(a) is not concrete:
            if a is not None and type(a) not in _NUMBER_TYPES:
                return None  # a deferred value not run, a tracer
            numbers = None
    if numbers is None:  # saved numbers (or Nones): the tape takes the arrays alone
        numbers = _numbers_of(arrays, concrete)
        arrays = [a for a in arrays if type(a) is concrete]
    if not arrays:
        return None
    if numbers != entry.numbers:  # the tape bakes the saved numbers in: other values, another tape
        entry.tape, entry.program, entry.numbers = _NOT_YET, None, numbers
        entry.sightings, entry.requested = 0, None  # a factor that changes every call never asks for a compile
    placement = interp.placement_of(arrays[0])
    if placement is None:
        return None  # sharded over several devices: node by node
    program = entry.program
    if program is None or program.placement != placement:
        entry.sightings += 1
        if entry.tape is _NOT_YET:
            if entry.sightings < COMPILE_AFTER and not interp.stats()["programs"]:
                return None
            entry.tape = _Encoder(found, graph_root, root_nr, seeds, output_edges, accumulate, min_topo).tape()
            with _lock:
                _STATS["tapes" if entry.tape is not None else "refused"] += 1
            if entry.tape is None:
                return None
        program = entry.program = interp.serving(entry.tape.need(), placement)
        if program is None:
            if entry.sightings >= COMPILE_AFTER and entry.requested != placement and not fusion.is_coming(found.key):
                entry.requested = placement if interp.request(entry.tape, arrays) else None
            return None
    try:
        outs = program.run(entry.tape, arrays)
    except Exception:  # arrays the program cannot take together (devices, shardings): node by node from now on
        entry.tape = None
        return None
    with _lock:
        _STATS["runs"] += 1
    results = iter(outs)
    captured = [None if r is None else _wrap(next(results)) for r in entry.tape.captured]
    leaf_grads = {}
    for leaf, r in zip(found.leaves, entry.tape.leaf_registers):
        if r is not None:
            leaf_grads[leaf] = _wrap(next(results))
    return captured, leaf_grads


_NUMBER_TYPES = frozenset((int, float, bool))


def _numbers_of(arrays: list, concrete: type) -> tuple:
    """The saved values that are not arrays, by position: ``repr`` tells ``-0.0`` from ``0.0`` and matches NaN."""
    return tuple((i, type(a), repr(a)) for i, a in enumerate(arrays) if type(a) is not concrete)


def _entry(key: Any) -> _Entry:
    with _lock:
        entry = _TAPES.get(key)
        if entry is None:
            entry = _TAPES[key] = _Entry()
            if len(_TAPES) > MAX_TAPES:
                _TAPES.popitem(last=False)
        return entry


_CPU: list = []


def _on_cpu() -> bool:
    if not _CPU:
        _CPU.append(jax.default_backend() == "cpu")
    return _CPU[0]


# -- writing a pass as a tape ---------------------------------------------------------------------------------------
class _BackwardTape(interp.Tape):
    """A pass's tape, and where its captured gradients and leaf gradients are among the outputs."""

    __slots__ = ("captured", "leaf_registers")


class _Register:
    """A gradient in the tape writer's run of the engine loop: the register that will hold it."""

    __slots__ = ("register",)
    _edge = None  # never recorded (the loop asks when it sums under create_graph)

    def __init__(self, register: tuple) -> None:
        self.register = register


class _Refused(Exception):
    """The pass cannot be interpreted (a node kind, an array or a sum the interpreter does not take)."""


def _aval(value: Any) -> tuple:
    aval = interp.aval_of(value)
    if aval is None or aval[2]:  # too large for a register; a weakly typed gradient (left node by node)
        raise _Refused
    return aval


class _Encoder:
    """A pass written as a tape: the engine's ready-heap loop (``_ready_heap._run_ready_heap``) run with
    registers for gradients, each node's rule and each sum an instruction."""

    def __init__(self, found: Structure, graph_root: Node, root_nr: int, seeds: list, output_edges: list,
                 accumulate: bool, min_topo: int) -> None:
        self.found, self.graph_root, self.root_nr = found, graph_root, root_nr
        self.accumulate = accumulate
        self.plan = make_plan(found, graph_root, root_nr, seeds, output_edges, accumulate, min_topo)
        self.arrays = self.plan.arrays
        self.n_seeds = len(seeds)
        self.instructions: list = []
        self.n_tmp: dict = {}

    def tape(self) -> Optional[_BackwardTape]:
        try:
            return self._tape()
        except _Refused:
            return None

    def _new(self, aval: tuple) -> tuple:
        n = self.n_tmp.get(aval, 0)
        self.n_tmp[aval] = n + 1
        return ("tmp", aval, n)

    def _tape(self) -> _BackwardTape:
        inputs, registers, count = [], [], {}
        concrete = array_type()
        for a in self.arrays:
            if type(a) is not concrete:  # a saved number (or None): a constant of the rule's kind
                registers.append(("const", a))
                continue
            aval = _aval(a)
            inputs.append(aval)
            registers.append(("in", aval, count.get(aval, 0)))
            count[aval] = count.get(aval, 0) + 1
        self.seeds = [_Register(r) for r in registers[:self.n_seeds]]
        self.saved = {node: registers[span[0]:span[1]] for node, span in zip(self.found.order, self.found.layout)
                      if span is not None}
        plan, root = self.plan, self.graph_root
        buffers: dict = {root: []} if type(root) is GraphRoot else {root: [None] * root.num_inputs}
        if type(root) is not GraphRoot:
            buffers[root][self.root_nr] = self.seeds[0]
        captured: list = [None] * plan.n_captured
        leaf_grads: dict = {}
        # The engine's own loop, on registers: its order of nodes and of sums is the tape's.
        _run_ready_heap(root, buffers, dict(plan.dependencies), plan.exec_info, captured, leaf_grads,
                        self.accumulate, self._node, traced=True, sum_grads=self._sum)
        if not self.instructions or len(self.instructions) > interp.MAX_STEPS:
            raise _Refused
        captured = [None if g is None else g.register for g in captured]
        leaf_registers = [leaf_grads[leaf].register if leaf in leaf_grads else None for leaf in self.found.leaves]
        outputs = [r for r in captured if r is not None] + [r for r in leaf_registers if r is not None]
        tape = _BackwardTape(self.instructions, inputs, outputs)
        if not tape.fits():
            raise _Refused
        tape.captured, tape.leaf_registers = captured, leaf_registers
        return tape

    def _node(self, fn: Node, grads: list, needs: Optional[tuple]) -> tuple:
        """``apply`` for the engine's loop: the instruction of node ``fn``, its outputs' registers."""
        from fgraph.ops._declare import OpNode

        registers = [None if g is None else g.register for g in grads]
        if type(fn) is GraphRoot:
            return tuple(self.seeds)
        if isinstance(fn, OpNode) and fn.op.rule is not None and fn.op.fuse_rule:
            outputs = self._rule(fn, registers, needs, self.saved[fn])
        elif isinstance(fn, FusedBackward) and fn.plan is None:  # a fused rule (fused_node_rule.py)
            outputs = self._fused(fn, registers, self.saved[fn])
        else:
            raise _Refused
        return tuple(None if r is None else _Register(r) for r in outputs)

    def _sum(self, arrivals: list) -> "_Register":
        """Gradients arriving at one input, added left to right (as the engine's sum kernels do)."""
        total = arrivals[0].register
        for g in arrivals[1:]:
            aval = total[1]
            if g.register[1] != aval:
                raise _Refused  # gradients of different shapes or dtypes: the engine broadcasts them
            out = self._new(aval)
            self.instructions.append((_add_kind(aval), [total, g.register], [out]))
            total = out
        return _Register(total)

    def _rule(self, fn: Any, grads: list, needs: Optional[tuple], saved: list) -> list:
        if all(g is None for g in grads):
            return [None] * len(fn.next_edges)  # nothing flowed in: nothing flows out (OpNode.apply_kernel)
        rule_key = (fn.params, fn.in_meta, needs, fn._out_meta())
        make = functools.partial(_RuleCall, fn.op.rule_kernel(*rule_key))
        return self._instruction((fn.op, *rule_key), grads, saved, make)

    def _fused(self, fn: Any, grads: list, saved: list) -> list:
        """A fused rule's node (``TanhBackwardBackward0``): ``jax.vjp`` of its kernel, missing gradients as zeros."""
        make = functools.partial(_FusedCall, fn.program, fn.float_in, fn.float_out, fn.out_meta)
        return self._instruction(fn.fusion_signature(), grads, saved, make)

    def _instruction(self, head: tuple, grads: list, saved: list, make: Any) -> list:
        """One instruction of the kind ``head`` on these registers; the registers of its outputs (``None`` where
        it gives none)."""
        grad_avals = tuple(None if g is None else g[1] for g in grads)
        saved_key = tuple((type(r[1]), repr(r[1])) if r[0] == "const" else r[1] for r in saved)
        key = (head, grad_avals, saved_key)
        kind = _KINDS.get(key, _NOT_YET)
        if kind is _NOT_YET:
            constants = tuple((r[1],) if r[0] == "const" else None for r in saved)
            ins = tuple(a for a in grad_avals if a is not None) + tuple(r[1] for r in saved if r[0] != "const")
            kind = _KINDS[key] = _kind(key, make(grad_avals, constants), ins)
        if kind is None:
            raise _Refused
        outs = [self._new(aval) for aval in kind.outs]
        arrays = [g for g in grads if g is not None] + [r for r in saved if r[0] != "const"]
        self.instructions.append((kind, arrays, outs))
        present = iter(outs)
        return [next(present) if p else None for p in kind.fn.present]


class _Call:
    """An instruction's function: ``full`` on its present gradients and saved arrays (its saved numbers baked
    in) gives the node's outputs, ``None`` where it gives none; called, the present ones."""

    __slots__ = ("grad_avals", "constants", "present", "__name__")

    def __init__(self, grad_avals: tuple, constants: tuple) -> None:
        self.grad_avals, self.constants = grad_avals, constants
        self.present: tuple = ()
        self.__name__ = type(self).__name__

    def arguments(self, arrays: tuple) -> tuple:
        """``(gradients, saved values)`` with their ``None`` gradients and numbers put back."""
        it = iter(arrays)
        grads = [None if a is None else next(it) for a in self.grad_avals]
        return grads, [next(it) if c is None else c[0] for c in self.constants]

    def full(self, *arrays: Any) -> tuple:
        raise NotImplementedError

    def __call__(self, *arrays: Any) -> tuple:
        return tuple(o for o in self.full(*arrays) if o is not None)


class _RuleCall(_Call):
    """A declared op's rule kernel."""

    __slots__ = ("kernel",)

    def __init__(self, kernel: Any, grad_avals: tuple, constants: tuple) -> None:
        super().__init__(grad_avals, constants)
        self.kernel = kernel

    def full(self, *arrays: Any) -> tuple:
        grads, saved = self.arguments(arrays)
        return self.kernel(*grads, *saved)


class _FusedCall(_Call):
    """A fused rule's ``jax.vjp`` (what ``FusedBackward.apply_kernel`` runs)."""

    __slots__ = ("program", "float_in", "float_out", "out_meta")

    def __init__(self, program: Any, float_in: tuple, float_out: tuple, out_meta: tuple, grad_avals: tuple,
                 constants: tuple) -> None:
        super().__init__(grad_avals, constants)
        self.program, self.float_in, self.float_out, self.out_meta = program, float_in, float_out, out_meta

    def full(self, *arrays: Any) -> tuple:
        grads, saved = self.arguments(arrays)
        cts = [jnp.zeros(*self.out_meta[j]) if grads[j] is None else grads[j] for j in self.float_out]
        outs = self.program.vjp(self.float_in, self.float_out, len(saved)).run(None, [*saved, *cts])
        result: list = [None] * len(saved)
        for i, o in zip(self.float_in, outs):
            result[i] = o
        return tuple(result)


def _kind(key: tuple, call: _Call, ins: tuple) -> Optional[interp.Kind]:
    try:
        shapes = jax.eval_shape(call.full, *map(interp.abstract, ins))
    except Exception:  # a rule that does not trace on abstract values: its passes run node by node
        return None
    call.present = tuple(o is not None for o in shapes)
    outs = []
    for o in shapes:
        if o is None:
            continue
        try:
            outs.append(_aval(o))
        except _Refused:
            return None
    return interp.Kind(key, call, ins, tuple(outs))


_ADD_KINDS: dict = {}


def _add(a: Any, b: Any) -> tuple:
    return (a + b,)


def _add_kind(aval: tuple) -> interp.Kind:
    kind = _ADD_KINDS.get(aval)
    if kind is None:
        kind = _ADD_KINDS[aval] = interp.Kind(("add", aval), _add, (aval, aval), (aval,))
    return kind
