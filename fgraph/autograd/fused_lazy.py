"""The fused backward in lazy mode: a pass records one kernel call instead of one per node.

Under ``fg.lazy()`` (and ``fgraph.func.vmap``'s recorded path) kernels record instead of
running, and the records replay as one program, so fusion's compiled programs are not what
a lazy pass needs; but recording node by node costs the engine's Python per node and a
record each. A pass whose structure fusion can fuse (:func:`fusion.structure_of`) records
one call of a kernel made by tracing the engine once over abstract values of that structure:
a jaxpr, cached per structure, holding no graph and no values.
"""
from __future__ import annotations

import functools
from collections import OrderedDict
from typing import Any, Callable, Optional

import jax
from jax.extend.core import jaxpr_as_fun

from fgraph._kernel_jit import kernel_jit
from fgraph.autograd import fusion
from fgraph.autograd.structure import make_plan
from fgraph.autograd.graph import Node
from fgraph.lazy._recorder import _scalar_array
from fgraph.lazy._state import LAZY
from fgraph.tensor import _wrap

__all__ = ["try_run", "clear_cache"]

_KERNELS: "OrderedDict[tuple, Optional[Callable]]" = OrderedDict()  # None: the structure failed to trace
_UNSEEN = object()


def clear_cache() -> None:
    """Drop the traced kernels (they are traced again on the next lazy pass of each structure)."""
    _KERNELS.clear()


def try_run(found: Any, graph_root: Node, root_nr: int, seeds: list, output_edges: list, accumulate: bool,
            min_topo: int, recorder: Any) -> Optional[tuple[list, dict]]:
    """Record this pass (of structure ``found``) as one kernel call on ``recorder``; ``None`` if it has
    saved tensors packed (their unpack hooks run user code once per pass, node by node)."""
    if found.packed:
        return None
    plan = make_plan(found, graph_root, root_nr, seeds, output_edges, accumulate, min_topo)
    kernel = _KERNELS.get(found.key, _UNSEEN)
    if kernel is _UNSEEN:
        try:
            kernel = _trace(plan)
        except Exception:  # as fusion does: a structure that fails to trace runs node by node for good
            kernel = None
        _KERNELS[found.key] = kernel
        if len(_KERNELS) > max(fusion._state["cache_size"], 1):
            _KERNELS.popitem(last=False)
    else:
        _KERNELS.move_to_end(found.key)
    if kernel is None:
        return None
    captured_arrays, leaf_arrays = recorder.call(kernel, plan.arrays)
    captured = [None if a is None else _wrap(a) for a in captured_arrays]
    leaf_grads = {acc: _wrap(a) for acc, a in zip(found.leaves, leaf_arrays) if a is not None}
    return captured, leaf_grads


def _trace(plan: Any) -> Callable:
    """The engine's run of ``plan``'s structure as a jitted function of its arrays (traced now, once)."""
    program = fusion._FusedProgram(len(plan.order))  # its body runs the engine over the plan's nodes
    token = LAZY.set(None)  # the rule kernels are traced into the program, not recorded
    try:
        program._calls.plan = plan
        traced = program.jitted.trace(*[_abstract(a) for a in plan.arrays])
    finally:
        program._calls.plan = None
        LAZY.reset(token)
    out_tree = jax.tree_util.tree_structure(traced.out_info)
    return kernel_jit(functools.partial(_run_traced, jaxpr_as_fun(traced.jaxpr), out_tree))


def _run_traced(run: Callable, out_tree: Any, *arrays: Any) -> Any:
    return out_tree.unflatten(run(*jax.tree_util.tree_leaves(arrays)))


def _abstract(a: Any) -> Any:
    """What the recorder will pass for ``a``: arrays as they are, Python scalars as weakly typed 0-d arrays."""
    if a is None:
        return None
    if type(a) in (bool, int, float, complex):
        a = _scalar_array(type(a), a)
    return jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=getattr(a, "weak_type", False))  # NumPy: False
