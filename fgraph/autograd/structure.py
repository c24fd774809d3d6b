"""The structure of a backward pass, found in one walk: what fused programs are cached by.

A pass's structure is its graph up to the values flowing through it: per node, in the
order a breadth-first walk from the root discovers them, the node's op, static
parameters, input shapes/dtypes and saved-value kinds, and its edges as indices into
that order; then the seeds' shapes, and where the requested inputs' gradients are
captured. Two passes with equal keys run the same program.

The key determines the pass's ``dependencies`` and ``exec_info`` (edges, pruned nodes,
captures and the accumulate flag are all in it), so a pass whose program is compiled
needs neither: :class:`Plan` works them out only if the program is traced.

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([1.0, 2.0], requires_grad=True)
    >>> y = (x.sin() * x).sum()
    >>> seeds = [fg.ones_like(y)]
    >>> found = find(y.grad_fn, 0, seeds, [x._edge], accumulate=False, min_topo=0, max_nodes=512, max_edges=64)
    >>> len(found.order)   # SumBackward, MulBackward, SinBackward and x's AccumulateGrad
    4
"""
from __future__ import annotations

from typing import Any, Optional

from fgraph.autograd._ready_heap import _compute_dependencies, _init_to_execute
from fgraph.autograd.graph import AccumulateGrad, GraphRoot, Node
from fgraph.autograd.saved_tensors import Packed
from fgraph.lazy._array import LazyArray
from fgraph.lazy._recorder import array_type as _array_type

__all__ = ["Structure", "Plan", "find", "make_plan"]

# A node's entry in the key starts with one of these tags, or with its op (or fusion_signature()):
_LEAF, _PRUNED, _ROOT = 0, 1, 2
_OpNode: Any = None  # fgraph.ops._declare.OpNode, bound on first use (the ops import the autograd package)


class StructureKey:
    """A structure's flat key, hashed once: a cache lookup and its LRU update both hash it."""

    __slots__ = ("items", "hash")

    def __init__(self, items: tuple) -> None:
        self.items = items
        self.hash = hash(items)

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        return self is other or (type(other) is StructureKey and self.hash == other.hash
                                 and self.items == other.items)


class Structure:
    """A pass's key and what running it fused needs (see :func:`find`).

    ``layout[i]``: ``(start, stop)`` of node ``order[i]``'s saved arrays among the program's
    arguments (``None``: it saves nothing the program reads); ``leaves``: the ``AccumulateGrad``
    nodes, in that order (the program returns their gradients so); ``arrays``: those arguments
    (seeds first), when they could be read during the walk (nothing packed anywhere yet:
    reading runs no hook), else ``None``.
    """

    __slots__ = ("key", "order", "layout", "leaves", "packed", "arrays")

    def __init__(self, key: StructureKey, order: list, layout: list, leaves: list, packed: bool,
                 arrays: Optional[list]) -> None:
        self.key, self.order, self.layout, self.leaves = key, order, layout, leaves
        self.packed, self.arrays = packed, arrays

    def ran(self) -> None:
        """Its deferred arrays' trace has run: take their values (plain arrays, as a program's arguments)."""
        if self.arrays is not None:
            self.arrays = [a._concrete if type(a) is LazyArray and a._concrete is not None else a
                           for a in self.arrays]


class Plan:
    """One pass of a structure, ready to run fused: its nodes, arrays and engine inputs.

    ``dependencies`` and ``exec_info`` are worked out on first use: only tracing the
    program reads them, and a compiled structure is not traced again.
    """

    __slots__ = ("order", "graph_root", "root_nr", "seeds", "output_edges", "accumulate", "min_topo", "arrays",
                 "layout", "leaves", "_dependencies", "_exec_info")

    def __init__(self, found: Structure, graph_root: Node, root_nr: int, seeds: list, output_edges: list,
                 accumulate: bool, min_topo: int, arrays: list) -> None:
        self.order, self.layout, self.leaves, self.arrays = found.order, found.layout, found.leaves, arrays
        self.graph_root, self.root_nr, self.seeds = graph_root, root_nr, seeds
        self.output_edges, self.accumulate, self.min_topo = output_edges, accumulate, min_topo
        self._dependencies: Optional[dict] = None
        self._exec_info: Optional[dict] = None

    @property
    def n_captured(self) -> int:
        return len(self.output_edges)

    @property
    def dependencies(self) -> dict:
        """Edges arriving at each node (a fresh run consumes a copy of it)."""
        if self._dependencies is None:
            self._dependencies = _compute_dependencies(self.graph_root, self.min_topo)
        return self._dependencies

    @property
    def exec_info(self) -> Optional[dict]:
        if self._exec_info is None and self.output_edges:
            self._exec_info = _init_to_execute(self.graph_root, self.output_edges, self.accumulate, self.min_topo,
                                               self.dependencies)
        return self._exec_info


def find(graph_root: Node, root_nr: int, seeds: list, output_edges: list, accumulate: bool, min_topo: int,
         max_nodes: int, max_edges: int) -> Optional[Structure]:
    """The structure of this pass, or ``None`` if it cannot be fused (hooks, custom Functions, over
    ``max_nodes`` nodes, a node with over ``max_edges`` edges).

    Nodes other than declared ops take part when they offer ``fusion_signature()`` (a hashable
    description of their kernel), ``saved_kinds()``, ``saved_arrays()`` and ``apply_kernel``.
    The walk is the engine's: a node below ``min_topo`` is not entered (it cannot reach an input).
    """
    global _OpNode
    if _OpNode is None:
        from fgraph.ops._declare import OpNode as _OpNode
    if graph_root.topological_nr - min_topo >= max_nodes:  # a path alone is that long
        return None
    order = [graph_root]
    index = {graph_root: 0}
    key: list = [accumulate, root_nr, len(output_edges)]
    append = key.append
    layout: list = []
    leaves: list = []
    n_saved = len(seeds)
    packed = False  # saved-tensor hooks: unpacking runs user code, so such graphs compile in the foreground
    # Until a saved tensor is packed anywhere, reading saved arrays runs no user code: read them now
    # (their kinds are their types) rather than walk the nodes again for the plan.
    arrays: Optional[list] = None if Packed.ever_made else [s._array for s in seeds]
    for node in order:  # grows as the walk discovers nodes: breadth first
        if node._hooks is not None:
            return None
        kind = type(node)
        if kind is AccumulateGrad:
            append(_LEAF)
            layout.append(None)
            leaves.append(node)
            continue
        if node.topological_nr < min_topo:
            append(_PRUNED)
            layout.append(None)
            continue
        next_edges = node.next_edges
        if len(next_edges) > max_edges:
            return None
        if kind is GraphRoot:
            append(_ROOT)
        elif isinstance(node, _OpNode) and node.op.rule is not None:
            append(node.op)
            append(node.params)
            append(node.in_meta)
        else:
            describe = getattr(node, "fusion_signature", None)
            if describe is None:
                return None
            append((describe(),))  # a tuple: never equal to a tag
        if kind is GraphRoot:
            layout.append(None)
        else:
            if arrays is not None:
                kinds: Any = node.saved_arrays()
                arrays += kinds
            else:
                # Kinds, not values: unpacking a saved tensor here would run its unpack hook a second
                # time whenever the pass then runs node by node (PyTorch unpacks once per backward).
                kinds = node.saved_kinds()
                if Packed in kinds:
                    packed = True
            n_kinds = len(kinds)
            append(n_kinds)
            for saved in kinds:
                kind = saved if arrays is None else type(saved)
                append(_array_type() if kind is LazyArray else kind)  # a deferred value: an array, once run
            layout.append((n_saved, n_saved + n_kinds))
            n_saved += n_kinds
        append(len(next_edges))
        for edge in next_edges:  # (index of the child, its input number), or (-1, 0)
            if edge is None:
                append(-1)
                append(0)
                continue
            child = edge[0]
            at = index.get(child)
            if at is None:
                at = index[child] = len(order)
                order.append(child)
            append(at)
            append(edge[1])
        if len(order) > max_nodes:
            return None
    key.append(tuple([s._array.aval if hasattr(s._array, "aval") else type(s._array) for s in seeds]))
    for node, input_nr in output_edges:
        key += (index.get(node, -1), input_nr)
    return Structure(StructureKey(tuple(key)), order, layout, leaves, packed, arrays)


def make_plan(found: Structure, graph_root: Node, root_nr: int, seeds: list, output_edges: list, accumulate: bool,
              min_topo: int) -> Plan:
    """The run of a pass of structure ``found``: the seeds' and saved arrays, in the program's order."""
    arrays = found.arrays
    if arrays is None:
        arrays = [s._array for s in seeds]
        for node, span in zip(found.order, found.layout):
            if span is not None:
                arrays += node.saved_arrays()
    return Plan(found, graph_root, root_nr, seeds, output_edges, accumulate, min_topo, arrays)
