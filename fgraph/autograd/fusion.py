"""Whole-graph backward compilation: when a graph repeats, run its backward as one XLA program.

Eagerly, the engine dispatches one jitted rule kernel per node. A training loop
builds a graph of the same *structure* every step, though, so from the second
time a structure is seen the engine traces itself — the very same
``_run_ready_heap``, over tracers — into one ``jax.jit`` program keyed by that
structure, and later passes are one dispatch.

The structure signature records, per node in discovery order: its op and static
parameters, input shapes/dtypes, which saved values are tensors or Python
scalars, its edges (as indices), and the ``exec_info`` marks. Only graphs made of
declared ops, without hooks, and not under ``create_graph`` are fused; the rest
run node by node. Results equal the node-by-node engine up to floating-point
reassociation inside XLA.

Example:
    >>> import fgraph as fg
    >>> fg.autograd.fusion.set_enabled(False)   # node by node, e.g. to debug a rule
    >>> fg.autograd.fusion.set_enabled(True)
"""
from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from typing import Any, Callable, Optional

import jax

from fgraph.autograd.graph import AccumulateGrad, GraphRoot, Node
from fgraph.tensor import Tensor, _wrap

__all__ = ["set_enabled", "is_enabled", "stats", "clear_cache"]

#: Larger graphs run node by node. XLA's compile time grows faster than the graph: for the
#: elementwise chain of ``benchmarks/`` on a 2-core CPU, 200 nodes compile in 1.6 s, 800 in
#: 6 s, 1,200 in 13 s and 1,600 in 160 s (one giant fused loop), while the fused pass saves
#: only ~7 us per node over the node-by-node engine.
MAX_NODES = 512
#: Graphs with a wider node (``cat`` of many tensors) also run node by node: every edge is one
#: more output slice of the program, and a 300-way ``cat`` alone compiled for 6 s.
MAX_NODE_EDGES = 64
#: A structure is compiled the second time it is seen.
COMPILE_AFTER = 2
_CACHE_SIZE = 128

_state = {"enabled": True}
_seen: "OrderedDict[tuple, int]" = OrderedDict()
_compiled: "OrderedDict[tuple, _FusedProgram]" = OrderedDict()
_stats = {"fused_runs": 0, "compiles": 0}
#: Guards the LRU bookkeeping of ``_seen``/``_compiled`` (threads run backward passes at once).
_cache_lock = threading.Lock()


def set_enabled(enabled: bool) -> None:
    """Turn whole-graph backward compilation on or off (it is on by default)."""
    _state["enabled"] = bool(enabled)


def is_enabled() -> bool:
    return _state["enabled"]


def stats() -> dict:
    """Counters: how many backward passes ran fused and how many programs were compiled."""
    return dict(_stats, cached_programs=len(_compiled))


def clear_cache() -> None:
    with _cache_lock:
        _seen.clear()
        _compiled.clear()


class _Plan:
    """One graph's backward, ready to run fused: its nodes, arrays and engine inputs."""

    __slots__ = ("order", "graph_root", "root_nr", "seeds", "dependencies", "exec_info", "n_captured",
                 "accumulate", "arrays", "layout")

    def __init__(self, **fields: Any) -> None:
        for name, value in fields.items():
            setattr(self, name, value)


class _FusedProgram:
    """A jitted engine run for one structure. ``plan`` is set only while a call is in flight.

    ``plan`` is per thread: threads may call (and trace) the same program at once, and
    each trace must read its own caller's plan.
    """

    def __init__(self) -> None:
        self._calls = threading.local()
        self.jitted = jax.jit(functools.partial(_fused_body, self))

    @property
    def plan(self) -> Optional[_Plan]:
        return getattr(self._calls, "plan", None)

    def __call__(self, plan: _Plan) -> tuple:
        self._calls.plan = plan
        try:
            return self.jitted(*plan.arrays)
        finally:
            self._calls.plan = None


def try_run(graph_root: Node, root_nr: int, seeds: list, dependencies: dict, exec_info: Optional[dict],
            n_captured: int, accumulate: bool) -> Optional[tuple[list, dict]]:
    """Run the backward fused if this structure is compiled (or due); else return ``None``."""
    if not _state["enabled"] or len(dependencies) >= MAX_NODES:
        return None
    from fgraph.ops._declare import OpNode

    order = [graph_root]
    order.extend(dependencies)
    index = {node: i for i, node in enumerate(order)}
    signature = [accumulate, root_nr, n_captured]
    arrays = [s.data for s in seeds]
    layout = []  # per node: (start, stop) of its saved arrays in `arrays`
    n_saved = len(arrays)
    for node in order:
        if node._hooks is not None or len(node.next_edges) > MAX_NODE_EDGES:
            return None
        kind = type(node)
        if kind is AccumulateGrad:
            signature.append(0)
            layout.append(None)
            continue
        try:
            edges = tuple([None if e is None else (index[e[0]], e[1]) for e in node.next_edges])
        except KeyError:  # a child below the minimum topological_nr: this node never runs
            signature.append(1)
            layout.append(None)
            continue
        if kind is GraphRoot:
            signature.append((2, edges))
            layout.append(None)
            continue
        if not isinstance(node, OpNode) or node.op.rule is None:
            return None
        # Kinds, not values: unpacking a saved tensor here would run its unpack hook a second time
        # whenever the pass then runs node by node (PyTorch unpacks once per backward).
        kinds = node.saved_kinds()
        start = n_saved
        n_saved += len(kinds)
        layout.append((start, n_saved))
        signature.append((node.op, node.params, node.in_meta, kinds, edges))
    signature.append(tuple(a.aval if hasattr(a, "aval") else type(a) for a in arrays[: len(seeds)]))
    if exec_info is not None:
        signature.append(tuple(
            None if info is None else (info.needed, None if info.captures is None else tuple(info.captures))
            for info in map(exec_info.get, order)
        ))
    key = tuple(signature)

    with _cache_lock:
        program = _compiled.get(key)
        if program is None:
            count = _seen.pop(key, 0) + 1
            _seen[key] = count
            if len(_seen) > _CACHE_SIZE:
                _seen.popitem(last=False)
            if count < COMPILE_AFTER:
                return None
            program = _compiled[key] = _FusedProgram()
            _stats["compiles"] += 1
            if len(_compiled) > _CACHE_SIZE:
                _compiled.popitem(last=False)
        else:
            _compiled.move_to_end(key)

    for node, span in zip(order, layout):
        if span is not None:
            arrays.extend(node.saved_arrays())
    plan = _Plan(order=order, graph_root=graph_root, root_nr=root_nr, seeds=seeds, dependencies=dependencies,
                 exec_info=exec_info, n_captured=n_captured, accumulate=accumulate, arrays=arrays, layout=layout)
    captured_arrays, leaf_arrays = program(plan)
    _stats["fused_runs"] += 1
    captured = [None if a is None else _wrap(a) for a in captured_arrays]
    accumulators = [node for node in order if type(node) is AccumulateGrad]
    leaf_grads = {acc: _wrap(a) for acc, a in zip(accumulators, leaf_arrays) if a is not None}
    return captured, leaf_grads


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
                    plan.accumulate, apply_traced)
    captured_arrays = tuple(None if g is None else g.data for g in captured)
    leaf_arrays = tuple(
        leaf_grads[node].data if node in leaf_grads else None
        for node in plan.order if type(node) is AccumulateGrad
    )
    return captured_arrays, leaf_arrays
