"""Segmented fusion: a graph over :data:`fusion.MAX_NODES` runs as segments of at most that many nodes.

The engine's execution order (the ready heap's, found first without running any
kernel) is cut into consecutive segments. Each segment is one program: it takes
the gradients pending for nodes it has not run yet (carried in from the segments
before it) and its nodes' saved arrays, runs its nodes in order, and returns the
gradients still pending (carried out), the captured gradients and the leaf
gradients it produced. Nodes outside a segment are named relative to it, so the
segments of a long repetitive graph (an unrolled loop) share one compiled program.
Segments are compiled like whole graphs (the second sighting, in the background,
in the same LRU cache); a segment whose program is not ready runs node by node, so
mixing is fine.

Only the plain case is segmented: one root, hook-free declared ops, no saved-tensor
hooks, no ``create_graph``, and no pruning (every reachable node executes, which is
the case when the inputs are leaves).
"""
from __future__ import annotations

import heapq
from typing import Any, Optional

from fgraph.autograd import fusion
from fgraph.autograd._ready_heap import SUM_ARITY, _finish_sums, _GradSum, _sum_grads
from fgraph.autograd.graph import AccumulateGrad, GraphRoot, Node
from fgraph.autograd.saved_tensors import Packed
from fgraph.autograd.structure import StructureKey
from fgraph.tensor import _wrap

__all__: list = []


class _Segment:
    """One segment's run: its nodes, what it carries in and out, and its arrays."""

    __slots__ = ("nodes", "infos", "layout", "carried_in", "out_slots", "accumulate", "arrays")

    def __init__(self, nodes: list, infos: list, layout: list, carried_in: list, out_slots: list,
                 accumulate: bool, arrays: list) -> None:
        self.nodes = nodes
        self.infos = infos
        self.layout = layout
        self.carried_in = carried_in
        self.out_slots = out_slots
        self.accumulate = accumulate
        self.arrays = arrays


def try_run(graph_root: Node, root_nr: int, seeds: list, dependencies: dict, exec_info: Optional[dict],
            n_captured: int, accumulate: bool, min_topo: int) -> Optional[tuple[list, dict]]:
    """Run a large backward pass segment by segment; ``None`` if this graph is not eligible."""
    if not fusion.is_enabled() or type(graph_root) is GraphRoot or min_topo != 0 or len(seeds) != 1:
        return None
    if fusion._traced([seeds[0]._array]):
        return None
    if exec_info is not None:
        executes = {fn for fn, info in exec_info.items() if info.should_execute()}
        if not executes.issuperset(dependencies):
            return None
    order = _execution_order(graph_root, dependencies, exec_info)
    if order is None:
        return None
    position = {node: i for i, node in enumerate(order)}
    size = fusion.MAX_NODES
    pending: dict = {graph_root: [None] * graph_root.num_inputs}
    pending[graph_root][root_nr] = seeds[0]
    captured: list = [None] * n_captured
    leaf_grads: dict = {}
    for start in range(0, len(order), size):
        nodes = order[start:start + size]
        key, segment = _plan(nodes, pending, position, exec_info, accumulate)
        program, fresh = fusion._program_for(key, len(nodes), _segment_body)
        result = None
        if program is not None:
            result = fusion._run_program(program, fresh, segment)
        if result is None:
            result = _run_segment(segment, segment.arrays)  # node by node
        carried_out, captures, leaves = result
        pending = {}
        for (node, slot), value in zip(segment.out_slots, carried_out):
            if value is not None:
                buf = pending.get(node)
                if buf is None:
                    buf = pending[node] = [None] * node.num_inputs
                buf[slot] = _wrap(value)
        capture_ids = [index for info in segment.infos if info is not None and info.captures is not None
                       for _, index in info.captures]
        for index, value in zip(capture_ids, captures):
            captured[index] = None if value is None else _wrap(value)
        accumulators = [node for node, info in zip(nodes, segment.infos)
                        if type(node) is AccumulateGrad and (info is None or info.needed)]
        for node, value in zip(accumulators, leaves):
            if value is not None:
                leaf_grads[node] = _wrap(value)
    return captured, leaf_grads


def _execution_order(root: Node, dependencies: dict, exec_info: Optional[dict]) -> Optional[list]:
    """The ready heap's order, without running anything; ``None`` if a node is not eligible."""
    from fgraph.ops._declare import OpNode

    remaining = dict(dependencies)
    packing = Packed.ever_made
    heap = [(-root.sequence_nr, 0, root)]
    tie = 1
    order = []
    while heap:
        fn = heapq.heappop(heap)[2]
        order.append(fn)
        if fn._hooks is not None or len(fn.next_edges) > fusion.MAX_NODE_EDGES:
            return None
        if type(fn) is AccumulateGrad:
            continue
        if not isinstance(fn, OpNode) or fn.op.rule is None or (packing and Packed in fn.saved_kinds()):
            return None
        if exec_info is not None and not exec_info[fn].needed:
            continue
        for edge in fn.next_edges:
            if edge is not None:
                nxt = edge[0]
                left = remaining[nxt] - 1
                if left:
                    remaining[nxt] = left
                else:
                    del remaining[nxt]
                    heapq.heappush(heap, (-nxt.sequence_nr, tie, nxt))
                    tie += 1
    return order


_NEEDED_MARKS = (True, None)
_SKIPPED_MARKS = (False, None)
_NO_EDGE = (-1, 0, 0)


def _plan(nodes: list, pending: dict, position: dict, exec_info: Optional[dict], accumulate: bool) -> tuple:
    """The segment's structure key (nodes outside it named relative to it) and its run.

    The key is flat, as :func:`fgraph.autograd.structure.find`'s: the carried-in gradients (count,
    then where, index, slot and aval of each), then per node its op, parameters, input metadata,
    saved kinds (count, then types), edges (count, then where, index, output number; where is 0 for
    a node of the segment, 1 for one outside it, -1 for no edge) and ``exec_info`` marks.
    """
    local = {node: j for j, node in enumerate(nodes)}
    carried_nodes = sorted(pending, key=position.__getitem__)
    ext: dict = {}
    for node in carried_nodes:
        if node not in local:
            ext[node] = len(ext)
    carried_in = []
    arrays = []
    carried_key: list = []
    for node in carried_nodes:
        where, at = (0, local[node]) if node in local else (1, ext[node])
        for slot, g in enumerate(pending[node]):
            if g is not None:
                carried_in.append((node, slot))
                arrays.append(g._array)
                carried_key += (where, at, slot, g._array.aval)
    key: list = ["segment", accumulate, len(carried_in)]
    key += carried_key
    append = key.append
    infos = []
    layout = []
    local_index = local.get
    for node in nodes:
        info = None if exec_info is None else exec_info[node]
        infos.append(info)
        if info is None:
            marks = None
        elif info.captures is None:
            marks = _NEEDED_MARKS if info.needed else _SKIPPED_MARKS
        else:
            marks = (info.needed, tuple(info.captures))
        if type(node) is AccumulateGrad:
            layout.append(None)
            append(0)
            append(marks)
            continue
        append(node.op)
        append(node.params)
        append(node.in_meta)
        saved = node.saved_arrays()
        start = len(arrays)
        arrays += saved
        layout.append((start, len(arrays)))
        append(len(saved))
        for value in saved:  # the kinds (= node.saved_kinds(): nothing here is packed, see _execution_order)
            append(type(value))
        append(len(node.next_edges))
        for edge in node.next_edges:
            if edge is None:
                key += _NO_EDGE
                continue
            nxt, output_nr = edge
            j = local_index(nxt)
            if j is None:
                k = ext.get(nxt)
                if k is None:
                    k = ext[nxt] = len(ext)
                append(1)
                append(k)
            else:
                append(0)
                append(j)
            append(output_nr)
        append(marks)
    out_slots = [(node, slot) for node in sorted(ext, key=position.__getitem__) for slot in range(node.num_inputs)]
    append(tuple([ext[node] for node, _ in out_slots]))
    segment = _Segment(nodes, infos, layout, carried_in, out_slots, accumulate, arrays)
    return StructureKey(tuple(key)), segment


def _segment_body(program: Any, *arrays: Any) -> tuple:
    """What a segment's program computes (traced by ``jax.jit``)."""
    return _run_segment(program.plan, arrays)


def _run_segment(segment: _Segment, arrays: Any) -> tuple:
    """Run the segment's nodes in order on ``arrays`` (concrete: node by node; tracers: the program)."""
    buffers: dict = {}
    n_in = len(segment.carried_in)
    for (node, slot), value in zip(segment.carried_in, arrays[:n_in]):
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * node.num_inputs
        buf[slot] = _wrap(value)
    captures = []
    leaves = []
    for node, info, span in zip(segment.nodes, segment.infos, segment.layout):
        grads = buffers.pop(node, None)
        if grads is None:
            grads = [None] * node.num_inputs
        else:
            _finish_sums(grads, _sum_grads)
        if info is not None:
            if info.captures is not None:
                captures.extend(None if grads[i] is None else grads[i]._array for i, _ in info.captures)
            if not info.needed:
                continue
        if type(node) is AccumulateGrad:
            g = grads[0]
            leaves.append(g._array if segment.accumulate and g is not None else None)
            continue
        outputs = node.apply_kernel(grads, None, list(arrays[span[0]:span[1]]))
        for edge, g in zip(node.next_edges, outputs):
            if edge is None or g is None:
                continue
            nxt, slot = edge
            buf = buffers.get(nxt)
            if buf is None:
                buf = buffers[nxt] = [None] * nxt.num_inputs
            prev = buf[slot]
            if prev is None:
                buf[slot] = g
            elif type(prev) is _GradSum:
                prev.append(g)
                if len(prev) == SUM_ARITY:
                    buf[slot] = _sum_grads(prev)
            else:
                buf[slot] = _GradSum((prev, g))
    carried_out = []
    for node, slot in segment.out_slots:
        buf = buffers.get(node)
        g = None if buf is None else buf[slot]
        if type(g) is _GradSum:
            g = _sum_grads(g)
        carried_out.append(None if g is None else g._array)
    return tuple(carried_out), tuple(captures), tuple(leaves)
