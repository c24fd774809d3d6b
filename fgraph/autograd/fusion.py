"""Whole-graph backward compilation: when a graph repeats, run its backward as one XLA program.

Eagerly, the engine dispatches one jitted rule kernel per node. A training loop
builds a graph of the same *structure* every step, though, so once a structure has
come back often enough to pay for its compile (:mod:`fgraph.autograd._compile_rent`: its
node-by-node passes have cost twice its expected compile time; :func:`set_compile_rent`) the
engine traces itself — the very same ``_run_ready_heap``, over tracers — into one ``jax.jit``
program keyed by that structure, and later passes are one dispatch (graphs over
:data:`MAX_NODES`: one dispatch per segment, see :mod:`fgraph.autograd.segments`, compiled
at their second sighting).

The program is compiled off the caller's thread: a background worker traces and
compiles it (in a copy of the caller's ``contextvars`` context) while the
node-by-node engine serves the passes, and the first pass after it is ready runs
fused. A small graph's first program (every array at most :data:`QUICK_MAX_ELEMENTS` elements:
dispatch-bound) is compiled for compile speed (on the CPU ~4x faster, at the same run time on such
sizes), so a new structure leaves the node-by-node engine sooner; once its runs have cost
:data:`OPTIMIZE_RENT` times its compile, the worker recompiles it at XLA's full optimisation and
swaps it in. (The worker's tracing and lowering are Python: while they run, each of the caller's
kernel dispatches waits a thread switch for the GIL, ~10x slower. Run on the caller's thread
instead, they cost one call ~80 ms for 200 nodes, the same in total over the first 50 calls but
one long stall: the spread-out slowdown was kept.)
A compile that fails leaves the structure node by node for good. Under JAX
tracing (``fgraph.compile``, ``jax.jit`` of an fgraph program) compiles stay in the
foreground. Compiled programs live in a bounded LRU cache (:func:`set_cache_size`);
:func:`stats` counts hits, misses, compiles and compile seconds.

The structure key (:mod:`fgraph.autograd.structure`) records, per node in discovery order:
its op and static parameters, input shapes/dtypes, which saved values are tensors or Python
scalars, and its edges (as indices); then where the inputs' gradients are captured. It is
found before the engine's ``dependencies`` and ``exec_info``, which it determines: a pass
whose program is compiled skips both. Only graphs made of declared ops (and
``FusedBackward`` nodes), without hooks, are fused; the rest run node by node.
``create_graph`` passes use the same programs through :mod:`fgraph.autograd.fused_create_graph`.
Results equal the node-by-node engine up to floating-point reassociation inside XLA.

Example:
    >>> import fgraph as fg
    >>> fg.autograd.fusion.set_enabled(False)   # node by node, e.g. to debug a rule
    >>> fg.autograd.fusion.set_enabled(True)
    >>> sorted(k for k in fg.autograd.fusion.stats() if k in ("hits", "misses", "compiles"))
    ['compiles', 'hits', 'misses']
"""
from __future__ import annotations

import atexit
import functools
import threading
import time
import warnings
from collections import OrderedDict
from typing import Any, Callable, Optional

import jax

from fgraph._kernel_jit import kernel_jit, placed
from fgraph.autograd import _compile_rent
from fgraph.autograd._compile_worker import CompileWorker
from fgraph.autograd.graph import GraphRoot, Node
from fgraph.autograd.structure import Plan, Structure, find, make_plan
from fgraph.tensor import _wrap

__all__ = ["set_enabled", "is_enabled", "set_background", "set_cache_size", "set_compile_rent", "stats",
           "reset_stats", "clear_cache", "wait_for_compiles"]

#: Larger graphs run in segments of at most this many nodes (:mod:`fgraph.autograd.segments`).
#: XLA's compile time grows faster than the graph: for the elementwise chain of ``benchmarks/``
#: on a 2-core CPU, 200 nodes compile in 1.6 s, 800 in 6 s, 1,200 in 13 s and 1,600 in 160 s
#: (one giant fused loop).
MAX_NODES = 512
#: Graphs with a wider node (``cat`` of many tensors) also run node by node: every edge is one
#: more output slice of the program, and a 300-way ``cat`` alone compiled for 6 s.
MAX_NODE_EDGES = 64
#: A structure is compiled at the earliest the second time it is seen (then when its rent is paid).
COMPILE_AFTER = 2
#: A graph whose arrays all have at most this many elements is dispatch-bound, not compute-bound: its first
#: program is built for compile speed (:func:`quick_compile_options`, ~4x faster to compile, and as fast to run on
#: such sizes; on large arrays its loops run ~4x slower, so larger graphs compile at full optimisation at once).
QUICK_MAX_ELEMENTS = 4096
#: A quick program is recompiled at XLA's full optimisation (by the worker, swapped in when ready) once it has run
#: at least OPTIMIZE_AFTER times and its runs have taken OPTIMIZE_RENT times what compiling it took: what the
#: slower loops can have cost by then pays for the new compile (~3-4x the quick one). Tiny graphs never get there.
OPTIMIZE_AFTER = 8
OPTIMIZE_RENT = 3.0
#: Python's thread switch interval (seconds) while the background worker traces and compiles.
COMPILE_SWITCH_INTERVAL = 1e-4

_state = {"enabled": True, "background": True, "cache_size": 128}
_seen: "OrderedDict[tuple, list]" = OrderedDict()  # key -> [sightings, seconds its node-by-node passes took]
_compiled: "OrderedDict[tuple, _FusedProgram]" = OrderedDict()
_stats = {"hits": 0, "misses": 0, "compiles": 0, "compile_failures": 0, "compile_seconds": 0.0}
_lock = threading.Lock()  # guards _seen, _compiled and _stats (passes may run on several threads)


def set_enabled(enabled: bool) -> None:
    """Turn whole-graph backward compilation on or off (it is on by default)."""
    _state["enabled"] = bool(enabled)


def is_enabled() -> bool:
    """Whether whole-graph backward compilation is on."""
    return _state["enabled"]


def set_background(background: bool) -> None:
    """Compile fused programs on a background thread (the default) or on the caller's thread.

    In the background, the passes that arrive while a program compiles run node by node,
    so no call stalls on XLA; in the foreground, the pass that triggers the compile waits
    for it and runs fused.
    """
    _state["background"] = bool(background)


def set_cache_size(size: int) -> None:
    """Keep at most ``size`` compiled programs (least recently used are dropped first; default 128).

    Example:
        >>> import fgraph as fg
        >>> fg.autograd.fusion.set_cache_size(64)
        >>> fg.autograd.fusion.stats()["cache_size"]
        64
        >>> fg.autograd.fusion.set_cache_size(128)
    """
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise ValueError(f"set_cache_size: size must be a non-negative int, got {size!r}.")
    with _lock:
        _state["cache_size"] = size
        _trim()


def set_compile_rent(rent: float) -> None:
    """Compile a structure once its node-by-node passes have cost ``rent`` times its expected compile time
    (default 2; ``0``: at its second sighting, as before 2026-11). See :mod:`fgraph.autograd._compile_rent`.

    Example:
        >>> import fgraph as fg
        >>> before = fg.autograd.fusion.stats()["compile_rent"]
        >>> fg.autograd.fusion.set_compile_rent(0)    # every repeated structure compiles at once
        >>> fg.autograd.fusion.stats()["compile_rent"]
        0.0
        >>> fg.autograd.fusion.set_compile_rent(before)
    """
    _compile_rent.set_rent(rent)


def stats() -> dict:
    """Counters since start-up (or :func:`reset_stats`).

    ``hits``: passes that ran fused; ``misses``: eligible passes that ran node by node (first sightings,
    programs still compiling or failed); ``compiles`` and ``compile_failures``: programs compiled;
    ``compile_seconds``: time spent compiling (on whichever thread); ``pending``: compiles under way;
    ``cached_programs`` and ``cache_size``: the LRU cache. ``fused_runs`` is ``hits`` (its older name).
    ``compile_rent``: see :func:`set_compile_rent`."""
    with _lock:
        pending = sum(1 for p in _compiled.values() if p.state is _PENDING)
        return dict(_stats, fused_runs=_stats["hits"], pending=pending, cached_programs=len(_compiled),
                    cache_size=_state["cache_size"], compile_rent=_compile_rent.rent())


def reset_stats() -> None:
    """Zero the counters of :func:`stats`."""
    with _lock:
        _stats.update(hits=0, misses=0, compiles=0, compile_failures=0, compile_seconds=0.0)


def clear_cache() -> None:
    """Forget every structure seen and every compiled program (node rules' too)."""
    from fgraph.autograd import fused_node_rule, interpreted

    with _lock:
        _seen.clear()
        _compiled.clear()
    fused_node_rule.clear()
    interpreted.clear()


def wait_for_compiles(timeout: Optional[float] = None) -> bool:
    """Block until the background compiles queued so far are done; ``False`` if ``timeout`` ran out."""
    return _worker.wait_idle(timeout)


def is_compiled(key: tuple) -> bool:
    """Whether the structure ``key`` (``structure_of(...).key``) has a compiled fused program."""
    program = _compiled.get(key)
    return program is not None and program.state is _READY


def is_coming(key: Any) -> bool:
    """Whether the structure ``key`` has a fused program compiled or compiling (not one that failed)."""
    program = _compiled.get(key)
    return program is not None and program.state is not _FAILED


def _trim() -> None:
    while len(_compiled) > _state["cache_size"]:
        _compiled.popitem(last=False)


_PENDING, _READY, _FAILED = "pending", "ready", "failed"


def quick_compile_options() -> Optional[dict]:
    """XLA options for a structure's first program: on the CPU, optimisation level 0 and the classic elemental
    emitters (a 200-node elementwise backward: 2.0 s -> 0.5 s to compile, the same run time; products and
    convolutions call the same library kernels either way); ``None`` elsewhere (full optimisation from the start).
    """
    if _quick_options[0] is None:
        options: dict = {}
        if jax.default_backend() == "cpu":
            options["xla_backend_optimization_level"] = 0
            if _jaxlib_version() == (0, 10):  # verified on 0.10; jaxlib 0.11 rejects it (tests/conftest.py)
                options["xla_cpu_use_fusion_emitters"] = False
        _quick_options[0] = options
    return _quick_options[0] or None


_quick_options: list = [None]


def _jaxlib_version() -> tuple:
    import jaxlib

    return tuple(int(p) for p in jaxlib.__version__.split(".")[:2] if p.isdigit())


class _FusedProgram:
    """A jitted engine run for one structure. ``plan`` is set only while a call is in flight.

    ``state``: ``_PENDING`` while the background worker compiles it, then ``_READY``, or
    ``_FAILED`` (with ``error``) if tracing or compiling raised.
    """

    __slots__ = ("_calls", "jitted", "state", "error", "n_nodes", "flat", "dual", "runs", "optimized", "body",
                 "seconds", "run_seconds", "__weakref__")

    def __init__(self, n_nodes: int, body: Optional[Callable] = None) -> None:
        self._calls = threading.local()  # the plan is per thread: threads may call one program at once
        self.body = functools.partial(_fused_body if body is None else body, self)
        self.jitted = kernel_jit(self.body)
        self.optimized = True  # whether ``jitted`` is (or is being replaced by) a fully optimised program
        self.runs = 0
        self.seconds = 0.0  # spent tracing, lowering and compiling it
        self.run_seconds = 0.0  # one run of the quick program, timed after its compile
        self.state = _PENDING
        self.error: Optional[BaseException] = None
        self.n_nodes = n_nodes
        self.flat: Any = None  # its differentiable form, made by fgraph.autograd.fused_create_graph
        self.dual: Any = None  # its form as a derived op, made by fgraph.autograd.fused_dual

    def __call__(self, plan: Plan) -> tuple:
        self._calls.plan = plan
        try:
            return placed(self.jitted)(*plan.arrays)
        except ValueError:
            if self.optimized:
                raise
            # Under an outer trace (fg.compile, jax.jit) the quick program is a nested jit, which may not carry
            # compiler options: it is inlined into the outer program anyway, so the plain jit serves.
            return jax.jit(self.body)(*plan.arrays)
        finally:
            self._calls.plan = None

    @property
    def plan(self) -> Optional[Any]:
        return getattr(self._calls, "plan", None)

    def count_run(self, plan: Plan) -> None:
        """One more fused run; at :data:`OPTIMIZE_AFTER` the structure recompiles at full optimisation."""
        self.runs += 1
        if self.optimized or self.runs < OPTIMIZE_AFTER or self.runs * self.run_seconds < OPTIMIZE_RENT * self.seconds:
            return
        self.optimized = True  # asked for once
        if _state["background"] and not _traced(plan.arrays):
            jitted = kernel_jit(self.body)
            lowered = self.lower(jitted, plan)  # jit's caches hold the trace: milliseconds
            if lowered is not None:
                _worker.submit(self.optimize, jitted, lowered, plan)

    def optimize(self, jitted: Any, lowered: Any, plan: Plan) -> None:
        """On the worker: compile ``lowered`` (this structure at XLA's full optimisation) and use ``jitted`` from
        then on; the quick program stays if that fails. Counted in :func:`stats` as a compile."""
        start = time.perf_counter()
        try:
            lowered.compile()
            jax.block_until_ready(jitted(*plan.arrays))  # fills jit's dispatch cache from the compiled program
        except Exception:  # pragma: no cover - the quick program keeps serving
            return
        self.jitted = jitted
        with _lock:
            _stats["compile_seconds"] += time.perf_counter() - start
            _stats["compiles"] += 1

    def lower(self, jitted: Any, plan: Plan) -> Optional[Any]:
        """Trace and lower ``jitted`` for ``plan`` on this (the caller's) thread; ``None`` if that failed. For the
        recompile at full optimisation, whose trace jit has cached: a few milliseconds here, where on the worker
        they would hold the GIL against every dispatch of the caller."""
        start = time.perf_counter()
        self._calls.plan = plan
        try:
            lowered = jitted.trace(*plan.arrays).lower()
        except Exception as exc:  # any failure leaves this structure node by node
            self.error = exc
            self.state = _FAILED
            lowered = None
        finally:
            self._calls.plan = None
        self.seconds += time.perf_counter() - start
        with _lock:
            _stats["compile_seconds"] += time.perf_counter() - start
            if lowered is None:
                _stats["compile_failures"] += 1
        return lowered

    def choose_tier(self, plan: Plan) -> None:
        """A small graph's first program is compiled for compile speed (see :data:`QUICK_MAX_ELEMENTS`)."""
        options = quick_compile_options()
        if options is not None and not _traced(plan.arrays) and _largest(plan.arrays) <= QUICK_MAX_ELEMENTS:
            self.jitted = kernel_jit(self.body, compiler_options=options)
            self.optimized = False

    def compile(self, plan: Plan) -> Optional[tuple]:
        """Trace, compile and run once (which fills jit's dispatch cache); ``None`` if that failed."""
        start = time.perf_counter()
        waited = _worker.waited
        self.choose_tier(plan)
        try:
            if threading.current_thread() is _worker.thread:
                self._calls.plan = plan
                try:
                    compile_politely(self.jitted, plan.arrays)
                finally:
                    self._calls.plan = None
            result = self(plan)
            if not _traced(plan.arrays):
                result = jax.block_until_ready(result)
                if not self.optimized:  # small by construction: a second run times the program alone
                    ran = time.perf_counter()
                    result = jax.block_until_ready(self(plan))
                    self.run_seconds = time.perf_counter() - ran
        except Exception as exc:  # any failure leaves this structure node by node
            self.error = exc
            self.state = _FAILED
            result = None
        elapsed = time.perf_counter() - start - (_worker.waited - waited)
        self.seconds += elapsed
        with _lock:
            _stats["compile_seconds"] += elapsed
            if self.state is not _FAILED:
                _compile_rent.record_compile(elapsed, self.n_nodes)
            _stats["compiles" if self.state is not _FAILED else "compile_failures"] += 1
        if self.state is _PENDING:
            self.state = _READY
        return result

    def warn_failed(self) -> None:
        if self.error is not None:
            error, self.error = self.error, None  # warn once per structure
            warnings.warn(
                f"fgraph.autograd.fusion: compiling the fused backward of a {self.n_nodes}-node graph failed "
                f"({type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}); "
                "this graph structure runs node by node from now on.",
                RuntimeWarning,
                stacklevel=4,
            )


# -- the background worker, and the passes it yields to ---------------------------------------------
# Tracing and lowering a program are Python, holding the GIL (~30 ms for 200 nodes; XLA's compile
# itself releases it). On the caller's thread, each kernel dispatch lets the GIL go and then waits
# for it: run concurrently, a 3 ms node-by-node pass took 30-40 ms. So the worker traces and
# lowers only while no backward pass runs (deferring a job by QUIET_WAIT seconds at most, so
# a loop that never stops differentiating does not starve it), and runs with a short switch
# interval (COMPILE_SWITCH_INTERVAL) once it stops deferring.
#: Longest time (seconds) one job of the worker waits for the engine's passes to finish, in all.
QUIET_WAIT = 0.1
_quiet = threading.Condition()
_active_passes = [0]


def pass_started() -> None:
    """The engine's mark that a backward pass begins (the worker defers its Python work meanwhile)."""
    _compile_rent.pass_started()
    with _quiet:
        _active_passes[0] += 1


def pass_ended() -> None:
    _compile_rent.pass_ended()
    with _quiet:
        _active_passes[0] -= 1
        if not _active_passes[0]:
            _quiet.notify_all()


def _no_pass_running() -> bool:
    return not _active_passes[0]


def _yield_to_passes() -> None:
    """On the worker's thread: wait (bounded) until no backward pass runs; elsewhere nothing."""
    if not _active_passes[0] or _worker.deferrable <= 0 or threading.current_thread() is not _worker.thread:
        return
    start = time.perf_counter()
    with _quiet:
        _quiet.wait_for(_no_pass_running, _worker.deferrable)
    waited = time.perf_counter() - start
    _worker.waited += waited
    _worker.deferrable -= waited


def compile_politely(jitted: Any, args: Any) -> None:
    """Trace, lower and compile ``jitted`` for ``args`` ahead of time, yielding to passes between steps."""
    _yield_to_passes()
    traced = jitted.trace(*args)
    _yield_to_passes()
    traced.lower().compile()  # XLA releases the GIL: no need to yield during this part


_worker = CompileWorker(QUIET_WAIT, COMPILE_SWITCH_INTERVAL)
atexit.register(_worker.shutdown)


def structure_of(graph_root: Node, root_nr: int, seeds: list, output_edges: list, accumulate: bool,
                 min_topo: int) -> Optional[Structure]:
    """This pass's structure (:func:`fgraph.autograd.structure.find`), or ``None`` if it is not fused."""
    if not _state["enabled"]:
        return None
    return find(graph_root, root_nr, seeds, output_edges, accumulate, min_topo, MAX_NODES, MAX_NODE_EDGES)


def try_run(found: Structure, graph_root: Node, root_nr: int, seeds: list, output_edges: list, accumulate: bool,
            min_topo: int) -> Optional[tuple[list, dict]]:
    """Run this pass (of structure ``found``) fused if its program is compiled (or due); else ``None``."""
    program, fresh = _program_for(found.key, len(found.order))
    if program is None:
        return None
    plan = make_plan(found, graph_root, root_nr, seeds, output_edges, accumulate, min_topo)
    result = _run_program(program, fresh, plan, background=not found.packed)
    if result is None:
        return None
    captured_arrays, leaf_arrays = result
    captured = [None if a is None else _wrap(a) for a in captured_arrays]
    leaf_grads = {acc: _wrap(a) for acc, a in zip(found.leaves, leaf_arrays) if a is not None}
    return captured, leaf_grads


def _program_for(key: tuple, n_nodes: int, body: Optional[Callable] = None) -> tuple:
    """``(program, fresh)`` for this structure, or ``(None, False)``: run node by node this time."""
    with _lock:
        program = _compiled.get(key)
        if program is None:
            entry = _seen.pop(key, None) or [0, 0.0]
            entry[0] += 1
            _seen[key] = entry
            if len(_seen) > _state["cache_size"]:
                _seen.popitem(last=False)
            # Segments of a large graph compile at their second sighting: their passes are not timed apart.
            due = entry[0] >= COMPILE_AFTER if body is not None else \
                _compile_rent.due(entry[0], entry[1], n_nodes, COMPILE_AFTER)
            if not due or _state["cache_size"] == 0:
                _stats["misses"] += 1
                _compile_rent.charge(entry)
                return None, False
            program = _compiled[key] = _FusedProgram(n_nodes, body)
            _trim()
            return program, True
        _compiled.move_to_end(key)
        if program.state is not _READY:
            _stats["misses"] += 1
    if program.state is _FAILED:
        program.warn_failed()
        return None, False
    if program.state is _PENDING:
        return None, False  # the worker is compiling it: node by node meanwhile
    return program, False


def _run_program(program: _FusedProgram, fresh: bool, plan: Any, background: bool = True) -> Optional[tuple]:
    """Run ``program`` on ``plan``; a fresh one is compiled first (queued, returning ``None``, in the background)."""
    if fresh:
        if _state["background"] and background and not _traced(plan.arrays):
            with _lock:
                _stats["misses"] += 1
            _worker.submit(program.compile, plan)
            return None
        result = program.compile(plan)
        if result is None:
            program.warn_failed()
            with _lock:
                _stats["misses"] += 1
            return None
    else:
        result = program(plan)
        program.count_run(plan)
    with _lock:
        _stats["hits"] += 1
    return result


def _largest(arrays: list) -> int:
    """The element count of the largest array among ``arrays`` (Python scalars and ``None`` count 0)."""
    return max((getattr(a, "size", 0) for a in arrays), default=0)


def _traced(arrays: list) -> bool:
    tracer = jax.core.Tracer
    for a in arrays:
        if isinstance(a, tracer):
            return True
    return False


def _fused_body(program: _FusedProgram, *arrays: Any) -> tuple:
    """The engine run over tracers: what the jitted program computes."""
    from fgraph.autograd.engine import _run_ready_heap

    plan = program.plan
    n_seeds = len(plan.seeds)
    seeds = [_wrap(a) for a in arrays[:n_seeds]]
    saved_by_node = {
        node: list(arrays[span[0]:span[1]]) for node, span in zip(plan.order, plan.layout) if span is not None
    }

    def apply_traced(fn: Node, grads: list, needs: Optional[tuple]) -> tuple:
        if type(fn) is GraphRoot:
            return tuple(seeds)
        _yield_to_passes()
        return fn.apply_kernel(grads, needs, saved_by_node[fn])

    root = plan.graph_root
    if type(root) is GraphRoot:
        buffers = {root: []}
    else:
        buffers = {root: [None] * root.num_inputs}
        buffers[root][plan.root_nr] = seeds[0]
    captured: list = [None] * plan.n_captured
    leaf_grads: dict = {}
    _run_ready_heap(root, buffers, dict(plan.dependencies), plan.exec_info, captured, leaf_grads,
                    plan.accumulate, apply_traced, traced=True)
    captured_arrays = tuple(None if g is None else g._array for g in captured)
    leaf_arrays = tuple(
        leaf_grads[node]._array if node in leaf_grads else None
        for node in plan.leaves
    )
    return captured_arrays, leaf_arrays
