"""The GraphTask's loop: dependencies, ``exec_info`` and the ready heap (see :mod:`fgraph.autograd.engine`).

Gradients arriving at one node input on several edges are summed in one kernel when
the node runs (or every :data:`SUM_ARITY` arrivals, which bounds the memory held),
instead of one ``add`` dispatch per arrival: a leaf used by 2,500 ops costs ~360
dispatches, not 2,499. Under ``create_graph`` the sums are recorded ``add`` ops, so
they can be differentiated again.
"""
from __future__ import annotations

import heapq
import operator
from typing import Any, Callable, Optional


from fgraph._kernel_jit import kernel_jit, placed
from fgraph.autograd._hook_calls import call_post_hooks, call_pre_hooks, call_tensor_pre_hooks, hook_name
from fgraph.autograd.forward_ad import open_levels
from fgraph.autograd.grad_mode import _GRAD_ENABLED
from fgraph.autograd.graph import AccumulateGrad, GraphRoot, Node
from fgraph.errors import GradError
from fgraph.lazy._state import LAZY
from fgraph.tensor import Tensor, _wrap

#: Gradients summed by one kernel call (at most this many are held per node input).
SUM_ARITY = 8


def _compute_dependencies(root: Node, min_topo: int) -> dict:
    """Number of edges arriving at each node reachable from ``root`` (iterative DFS)."""
    dependencies: dict = {}
    seen = {root}
    stack = [root]
    while stack:
        fn = stack.pop()
        if fn.topological_nr < min_topo:
            continue
        for edge in fn.next_edges:
            if edge is not None:
                nxt = edge[0]
                dependencies[nxt] = dependencies.get(nxt, 0) + 1
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
    return dependencies


class _ExecInfo:
    __slots__ = ("needed", "captures")

    def __init__(self) -> None:
        self.needed = False
        self.captures: Optional[list] = None  # [(input_nr, output_index)]

    def should_execute(self) -> bool:
        return self.needed or self.captures is not None


_NEEDED = _ExecInfo()
_NEEDED.needed = True


def _init_to_execute(root: Node, output_edges: list, accumulate: bool, min_topo: int,
                     dependencies: dict) -> dict:
    """Mark the nodes on a path from ``root`` to an input edge, and where to capture gradients.

    A node's ``topological_nr`` exceeds each of its children's, so one pass over the
    reachable nodes (the keys of ``dependencies``) in ascending ``topological_nr`` sees
    every child before its parents: a node is needed if a child should execute.
    """
    exec_info: dict = {root: _ExecInfo()}
    # A GraphRoot joins several outputs and always runs (it only hands out the seeds); a single
    # output's own node is marked below like any other, so it is pruned when it reaches no input.
    exec_info[root].needed = type(root) is GraphRoot
    for index, (node, input_nr) in enumerate(output_edges):
        info = exec_info.get(node)
        if info is None:
            info = exec_info[node] = _ExecInfo()
        if accumulate and isinstance(node, AccumulateGrad):
            info.needed = True  # backward(inputs=[leaf]) accumulates through the leaf's node
        else:
            if info.captures is None:
                info.captures = []
            info.captures.append((input_nr, index))

    executes = {fn for fn, info in exec_info.items() if info.should_execute()}
    candidates = [fn for fn in dependencies if fn.topological_nr >= min_topo]
    if root not in dependencies:
        candidates.append(root)
    candidates.sort(key=_topological_nr)
    get = exec_info.get
    add = executes.add
    for fn in candidates:
        for edge in fn.next_edges:
            if edge is not None and edge[0] in executes:
                add(fn)
                info = get(fn)
                if info is None:
                    exec_info[fn] = _NEEDED  # shared: nodes without captures only need the mark
                else:
                    info.needed = True
                break
    return exec_info


_topological_nr = operator.attrgetter("topological_nr")


def _run_ready_heap(graph_root: Node, buffers: dict, dependencies: dict, exec_info: Optional[dict],
                    captured: list, leaf_grads: dict, accumulate: bool,
                    apply: Optional[Callable[[Node, list, Optional[tuple]], tuple]] = None,
                    traced: bool = False, sum_grads: Optional[Callable[[list], Any]] = None) -> None:
    """The ready-heap loop. ``apply`` replaces ``fn.apply`` (the fused tracer, anomaly mode and the interpreter's
    tape writer use it); ``traced``: the loop traces a fused program or writes a tape, and runs no hooks;
    ``sum_grads`` replaces :func:`_sum_grads` (the tape writer's sums are instructions)."""
    if sum_grads is None:
        sum_grads = _sum_grads
    executes = None if exec_info is None else {fn for fn, info in exec_info.items() if info.should_execute()}
    # When every reachable node executes (the usual case), nothing is pruned: skip the per-node checks.
    prune = executes is not None and not executes.issuperset(dependencies)
    pending = set()  # nodes with an input slot holding a _GradSum
    heap = [(-graph_root.sequence_nr, 0, graph_root)]
    tie = 1
    pop, push = heapq.heappop, heapq.heappush
    while heap:
        fn = pop(heap)[2]
        grads = buffers.pop(fn)
        if fn in pending:
            pending.discard(fn)
            _finish_sums(grads, sum_grads)
        # A traced run is a fused program of a structure found without hooks: a hook registered since
        # (the worker may trace while the caller goes on) must not run on its tracers.
        hooks = None if traced else fn._hooks
        if hooks is not None and hooks.tensor_pre is not None:
            grads = call_tensor_pre_hooks(fn, hooks.tensor_pre, grads)

        needs = None
        if exec_info is not None:
            info = exec_info[fn]
            if info.captures is not None:
                for input_nr, index in info.captures:
                    captured[index] = grads[input_nr]
            if not info.needed:
                continue
            if prune:
                needs = tuple([e is not None and e[0] in executes for e in fn.next_edges])

        if hooks is not None and hooks.pre is not None:
            grads = call_pre_hooks(fn, hooks.pre, grads)
        if type(fn) is AccumulateGrad:
            # As in PyTorch: tensor hooks, pre-hooks, accumulation (post-accumulate hooks), post-hooks.
            if accumulate and grads[0] is not None:
                _accumulate(fn, grads[0], leaf_grads)
            if hooks is not None and hooks.post is not None:
                call_post_hooks(fn, hooks.post, (), grads)
            continue
        outputs = fn.apply(grads, needs) if apply is None else apply(fn, grads, needs)
        if hooks is not None and hooks.post is not None:
            outputs = call_post_hooks(fn, hooks.post, outputs, grads)

        for edge, g in zip(fn.next_edges, outputs):
            if edge is None:
                continue
            nxt, input_nr = edge
            if prune and nxt not in executes:
                continue
            buf = buffers.get(nxt)
            if buf is None:
                buf = buffers[nxt] = [None] * nxt.num_inputs
            if g is not None:
                prev = buf[input_nr]
                if prev is None:
                    buf[input_nr] = g
                elif type(prev) is _GradSum:
                    prev.append(g)
                    if len(prev) == SUM_ARITY:
                        buf[input_nr] = sum_grads(prev)
                else:
                    buf[input_nr] = _GradSum((prev, g))
                    pending.add(nxt)
            remaining = dependencies[nxt] - 1
            if remaining:
                dependencies[nxt] = remaining
            else:
                del dependencies[nxt]
                push(heap, (-nxt.sequence_nr, tie, nxt))
                tie += 1


class _GradSum(list):
    """Gradients that arrived at one node input, summed when the node runs."""

    __slots__ = ()


def _finish_sums(grads: list, sum_grads: Callable[[list], Any]) -> None:
    for i, g in enumerate(grads):
        if type(g) is _GradSum:
            grads[i] = sum_grads(g)


def _sum_arrays(*arrays: Any) -> Any:
    total = arrays[0]
    for a in arrays[1:]:
        total = total + a
    return total


_SUM_KERNEL: list = []  # built at the first sum: kernel_jit asks which devices exist, which import must not


def _sum_kernel() -> Callable:
    if not _SUM_KERNEL:
        _SUM_KERNEL.append(kernel_jit(_sum_arrays))
    return _SUM_KERNEL[0]


def _sum_grads(grads: list) -> Tensor:
    """The sum of ``grads`` (left to right, as repeated ``add``), one kernel when nothing is recorded."""
    if open_levels():  # dual gradients: added as ops, so their tangents add too
        total = grads[0]
        for g in grads[1:]:
            total = _accumulate_buffer(total, g)
        return total
    if _GRAD_ENABLED.get():
        for g in grads:
            if g._edge is not None:  # create_graph: record the sum so it can be differentiated again
                total = grads[0]
                for g in grads[1:]:
                    total = _accumulate_buffer(total, g)
                return total
    arrays = [g._array for g in grads]
    lazy = LAZY.get()
    if lazy is not None:
        return _wrap(lazy.call(_sum_kernel(), arrays))
    # Kernels of 2, 4 and 8 arguments only, folding left to right (the running total is the next
    # call's first argument): a new graph structure then meets kernels already compiled, where one
    # kernel per count of arrivals would compile the odd counts (2..7) of each shape on first sight.
    kernel = placed(_sum_kernel())
    while len(arrays) > 1:
        k = 8 if len(arrays) >= 8 else 4 if len(arrays) >= 4 else 2
        arrays[:k] = [kernel(*arrays[:k])]
    return _wrap(arrays[0])


def _accumulate_buffer(prev: Tensor, g: Tensor) -> Tensor:
    from fgraph.ops.elementwise import add

    return add(prev, g)


def _accumulate(fn: AccumulateGrad, g: Tensor, leaf_grads: dict) -> None:
    prev = leaf_grads.get(fn)
    total = g if prev is None else _accumulate_buffer(prev, g)
    leaf_grads[fn] = total
    hooks = fn._hooks
    if hooks is not None and hooks.post_accumulate is not None:
        leaf = fn.variable
        for hook in tuple(hooks.post_accumulate.values()):
            if hook(leaf, total) is not None:
                raise GradError(
                    f"post-accumulate-grad hook '{hook_name(hook)}' returned a value; post accumulate grad hooks "
                    "should return None (they observe the accumulated gradient, they cannot replace it)."
                )
