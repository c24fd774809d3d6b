"""The backward engine: ``grad`` and ``backward`` as pure functions of the graph.

The algorithm is PyTorch's (see ``engine-execution.md`` in the design seeds):

1. The roots become one ``GraphRoot`` (or the single root's node is used directly).
2. ``_compute_dependencies`` counts, for every node reachable from the root, how
   many edges arrive at it. The walk is cut below the minimum ``topological_nr``
   of the requested inputs: no node there can reach an input.
3. With ``inputs``, ``_init_to_execute`` fills ``exec_info``: which nodes must run
   (they reach an input) and where gradients are captured (the input edges).
4. A ready heap, ordered by ``sequence_nr`` (newest first), runs nodes whose
   dependencies reached zero; per-node input buffers sum the gradients that
   arrive on several edges.

First, though, the pass's structure is found (:mod:`fgraph.autograd.structure`, one
walk). When a program for that structure is compiled (:mod:`fgraph.autograd.fusion`),
steps 2-4 were traced into it: the pass is one call of the program, and steps 2 and 3,
whose results the structure determines, are not run again.

Everything is iterative, so a 100,000-node chain is fine, and nothing is stored
on tensors: gradients are returned.
"""
from __future__ import annotations

import contextvars
import threading
import warnings
from typing import Any, Callable, Optional, Sequence, Union

import jax
import jax.numpy as jnp

from fgraph.autograd import _hook_calls, fused_create_graph, fused_dual, fused_lazy, fusion, interpreted, segments
from fgraph.autograd._record_state import RECORD_EXTRAS
from fgraph.autograd.anomaly import anomaly_apply
from fgraph.autograd.grad_mode import _GRAD_ENABLED
from fgraph.autograd.gradients import Gradients
from fgraph.autograd._leaf_sharding import like_input
from fgraph.autograd._ready_heap import _compute_dependencies, _init_to_execute, _run_ready_heap
from fgraph.autograd.forward_ad import open_levels
from fgraph.autograd.graph import AccumulateGrad, GradientEdge, GraphRoot, Node
from fgraph.errors import GradError
from fgraph.lazy._state import LAZY
from fgraph.tensor import Tensor, _is_torch_tensor, _wrap, type_name

__all__ = ["grad", "backward", "Gradients"]

TensorOrTensors = Union[Tensor, Sequence[Tensor]]

#: Callbacks queued by hooks for the end of the running backward pass (None outside one).
_CALLBACKS: contextvars.ContextVar[Optional[list]] = contextvars.ContextVar("fgraph_backward_callbacks", default=None)


def grad(
    outputs: TensorOrTensors,
    inputs: TensorOrTensors,
    grad_outputs: Optional[TensorOrTensors] = None,
    retain_graph: Optional[bool] = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: Optional[bool] = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple[Optional[Tensor], ...]:
    """Gradients of ``outputs`` with respect to ``inputs``, as a tuple (``torch.autograd.grad``).

    ``retain_graph`` is accepted for compatibility: records are immutable, so a
    graph can be differentiated any number of times (under deferred dispatch, a pass
    without it lets the step's program keep saved values inside; a later pass over the
    same graph recomputes them). With ``create_graph=True``
    the returned gradients carry their own graph, for higher derivatives.
    With ``is_grads_batched=True`` the first dimension of every ``grad_outputs``
    entry is a batch: the backward pass runs under ``jax.vmap`` and each result
    gains that leading dimension. ``only_inputs`` is accepted and ignored, as in PyTorch
    (``False`` warns that it is deprecated).

    ``outputs`` and ``inputs`` may hold :class:`~fgraph.autograd.graph.GradientEdge` s
    (``fg.autograd.graph.get_gradient_edge(t)``): an output edge is seeded with its
    ``grad_outputs`` entry, which is required (fgraph's nodes do not record their
    outputs' shapes; a leaf's edge of size 1 is seeded with ones, as in torch).

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor(2.0, requires_grad=True)
        >>> (g,) = fg.grad(x ** 3, [x], create_graph=True)
        >>> (gg,) = fg.grad(g, [x])
        >>> g.item(), gg.item()
        (12.0, 12.0)
    """
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). To get the "
                      "gradients of every leaf, use fg.backward (it returns them).", FutureWarning, stacklevel=2)
    outputs_t = _as_tuple(outputs, "grad", "outputs", edges=True)
    inputs_t = _as_inputs(inputs, "grad")
    if not inputs_t:
        raise GradError("grad: 'inputs' cannot be empty.")
    if materialize_grads and allow_unused is False:
        raise GradError("grad: materialize_grads=True needs allow_unused to be True or None.")
    allow_unused = bool(allow_unused) or materialize_grads
    if materialize_grads:
        for i, x in enumerate(inputs_t):
            if not isinstance(x, Tensor):
                raise GradError(
                    f"grad: materialize_grads cannot be used when the given input is a GradientEdge (input {i}, "
                    f"into {x[0].name()}); pass the tensor itself."
                )
    if is_grads_batched:
        captured = _batched_grad(outputs_t, inputs_t, grad_outputs, create_graph)
    else:
        seeds = _make_seeds(outputs_t, grad_outputs, "grad")
        captured, _ = _execute(outputs_t, seeds, inputs_t, create_graph, accumulate=False, release=not retain_graph)
    result = []
    for i, (x, g) in enumerate(zip(inputs_t, captured)):
        g = like_input(g, x)
        if g is None:
            if materialize_grads:
                # Under create_graph the zeros require grad (as in PyTorch), so they can be differentiated again.
                g = _wrap(jnp.zeros(x.shape, x.dtype))
                if create_graph:
                    g = g.requires_grad_(True)
            elif not allow_unused:
                raise GradError(
                    f"grad: input {i} ({_describe_input(x)}) was not used in the graph of the outputs. "
                    "Pass allow_unused=True to get None for it (or materialize_grads=True for zeros)."
                )
        result.append(g)
    return tuple(result)


def backward(
    tensors: TensorOrTensors,
    grad_tensors: Optional[TensorOrTensors] = None,
    retain_graph: Optional[bool] = None,
    create_graph: bool = False,
    inputs: Optional[TensorOrTensors] = None,
) -> Gradients:
    """Gradients of ``tensors`` with respect to every leaf they reach (or only ``inputs``).

    Returns :class:`Gradients` instead of storing ``.grad``. ``inputs`` may hold
    leaves or intermediate tensors.

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([0.5, 0.75], requires_grad=True)
        >>> y = fg.tensor([0.1, 0.9], requires_grad=True)
        >>> grads = fg.backward(fg.exp(x * y).sum(), inputs=[x])
        >>> x in grads, y in grads
        (True, False)
    """
    tensors_t = _as_tuple(tensors, "backward", "tensors")
    inputs_t = _as_inputs(inputs, "backward") if inputs is not None else None
    if inputs_t is not None and not inputs_t:
        raise GradError("backward: 'inputs' cannot be empty; pass None to differentiate all leaves.")
    seeds = _make_seeds(tensors_t, grad_tensors, "backward")
    hook_calls = _hook_calls.calls()
    captured, leaf_grads = _execute(tensors_t, seeds, inputs_t, create_graph, accumulate=True,
                                    release=not retain_graph)
    items: dict = {}
    for acc, g in leaf_grads.items():
        leaf = acc.variable
        if leaf is not None:
            items[id(leaf)] = (leaf, like_input(g, leaf))
    if inputs_t is not None:
        for x, g in zip(inputs_t, captured):
            if g is not None and isinstance(x, Tensor) and x.grad_fn is not None:
                items[id(x)] = (x, like_input(g, x))
    # A pass whose hooks ran may have been wanted for them alone; otherwise unread gradients are a mistake.
    return Gradients(items, watch=_hook_calls.calls() == hook_calls)


def _batched_grad(outputs: tuple, inputs: tuple, grad_outputs: Any, create_graph: bool) -> list:
    if create_graph:
        raise GradError("grad: is_grads_batched=True does not support create_graph=True yet; "
                        "loop over the batch or use fg.autograd.functional.jacobian(..., create_graph=True).")
    if grad_outputs is None:
        raise GradError("grad: is_grads_batched=True needs grad_outputs with a leading batch dimension.")
    if any(type(out) is GradientEdge for out in outputs):
        raise GradError("grad: is_grads_batched=True is not supported with GradientEdge outputs (as in torch); "
                        "pass the output tensors, or loop over the batch.")
    given = (grad_outputs,) if isinstance(grad_outputs, Tensor) else tuple(grad_outputs)
    if len(given) != len(outputs):
        raise GradError(f"grad: got {len(given)} gradients for {len(outputs)} outputs.")
    batch_sizes = set()
    for i, (out, g) in enumerate(zip(outputs, given)):
        if g.shape[1:] != out.shape:
            raise GradError(
                f"grad: with is_grads_batched=True, grad_outputs[{i}] must have shape (batch, *{out.shape}), "
                f"got {g.shape}."
            )
        batch_sizes.add(g.shape[0])
    if len(batch_sizes) != 1:
        raise GradError(f"grad: grad_outputs have different batch sizes {sorted(batch_sizes)}.")

    def one(*seed_arrays: Any) -> tuple:
        seeds = [_wrap(a) for a in seed_arrays]
        captured, _ = _execute(outputs, seeds, inputs, False, accumulate=False)
        return tuple(None if g is None else g._array for g in captured)

    batched = jax.vmap(one)(*[g._array for g in given])
    return [None if a is None else _wrap(a) for a in batched]


# -- argument checks -------------------------------------------------------------------------------
def _as_inputs(value: Any, fn: str) -> tuple:
    """``inputs`` as a tuple of Tensors and :class:`GradientEdge` s (an edge is a tuple: not a sequence here)."""
    items = (value,) if isinstance(value, (Tensor, GradientEdge)) else tuple(value)
    for i, t in enumerate(items):
        if not isinstance(t, (Tensor, GradientEdge)):
            raise TypeError(
                f"{fn}: inputs[{i}] is a {type_name(t)}, expected an fgraph Tensor or a GradientEdge "
                "(fg.autograd.graph.get_gradient_edge(t))."
            )
    return items


def _describe_input(x: Any) -> str:
    return f"shape {x.shape}" if isinstance(x, Tensor) else f"GradientEdge into {x[0].name()}"


def _as_tuple(value: Any, fn: str, what: str, edges: bool = False) -> tuple:
    """``value`` as a tuple of Tensors (and of :class:`GradientEdge` s with ``edges``)."""
    if isinstance(value, Tensor) or (edges and isinstance(value, GradientEdge)):
        return (value,)
    try:
        items = tuple(value) if not _is_torch_tensor(value) else None
    except TypeError:
        items = None
    if items is None:
        raise TypeError(f"{fn}: {what} must be an fgraph Tensor or a sequence of them, got {type_name(value)}.")
    for i, t in enumerate(items):
        if not isinstance(t, Tensor) and not (edges and isinstance(t, GradientEdge)):
            raise TypeError(f"{fn}: {what}[{i}] is a {type_name(t)}, expected an fgraph Tensor"
                            + (" or a GradientEdge." if edges else "."))
    return items


def _make_seeds(outputs: tuple, grad_outputs: Any, fn: str) -> list:
    if grad_outputs is None:
        given: tuple = (None,) * len(outputs)
    else:
        if not isinstance(grad_outputs, (Tensor, tuple, list)):
            raise TypeError(
                f"{fn}: grad_outputs must be a Tensor or a list/tuple with one Tensor (or None) per output, got "
                f"{type_name(grad_outputs)} {grad_outputs!r}; write e.g. grad_outputs=[fg.ones_like(out)]."
            )
        given = (grad_outputs,) if isinstance(grad_outputs, Tensor) else tuple(grad_outputs)
        if len(given) != len(outputs):
            raise GradError(
                f"{fn}: got {len(given)} gradients for {len(outputs)} outputs; pass one per output "
                "(None for scalar outputs)."
            )
    seeds = []
    for i, (out, g) in enumerate(zip(outputs, given)):
        if type(out) is GradientEdge:
            seeds.append(_edge_seed(out, g, i, fn))
            continue
        if out._edge is None:
            raise GradError(
                f"{fn}: output {i} does not require grad and does not have a grad_fn; " + (
                    _detached_hint(out)
                    or "it was computed from tensors without requires_grad=True (or under no_grad).")
            )
        if g is None:
            if out._array.size != 1:
                raise GradError(
                    f"{fn}: grad can be implicitly created only for scalar outputs, but output {i} has shape "
                    f"{out.shape}; pass grad_outputs with that shape (e.g. fg.ones_like(out)) or reduce it first."
                )
            if out._array.dtype.kind == "c":  # (jnp.iscomplexobj costs microseconds per call)
                raise GradError(
                    f"{fn}: grad can be implicitly created only for real scalar outputs, but output {i} is {out.dtype}; "
                    "pass grad_outputs explicitly (e.g. fg.ones_like(out)), or differentiate a real value such as "
                    "out.real or out.abs()."
                )
            g = _wrap(_implicit_seed(out._array))
        else:
            if not isinstance(g, Tensor):
                g = _wrap(jnp.asarray(g, out.dtype))
            if g.shape != out.shape:
                raise GradError(
                    f"{fn}: mismatch in shape: grad_output[{i}] has shape {g.shape} and output[{i}] has shape "
                    f"{out.shape}; they must be equal."
                )
        seeds.append(g)
    return seeds


def _edge_seed(edge: GradientEdge, g: Any, i: int, fn: str) -> Tensor:
    """The seed for an output given as a :class:`GradientEdge`: its ``grad_outputs`` entry.

    Only an ``AccumulateGrad`` edge knows its tensor (the leaf): there, a missing seed of a
    size-1 leaf is ones and the given seed's shape is checked, as torch does for every edge.
    """
    leaf = edge[0].variable if isinstance(edge[0], AccumulateGrad) else None
    if g is None:
        if leaf is None or leaf._array.size != 1:
            raise GradError(
                f"{fn}: output {i} is a GradientEdge into {edge[0].name()}; pass its gradient in grad_outputs "
                "(grad can be implicitly created only for scalar outputs, and fgraph's nodes do not record "
                "the shapes of their outputs)."
            )
        return _wrap(_implicit_seed(leaf._array))
    if not isinstance(g, Tensor):
        g = _wrap(jnp.asarray(g) if leaf is None else jnp.asarray(g, leaf.dtype))
    if leaf is not None and g.shape != leaf.shape:
        raise GradError(
            f"{fn}: mismatch in shape: grad_output[{i}] has shape {g.shape} and output[{i}] (a GradientEdge into "
            f"a leaf) has shape {leaf.shape}; they must be equal."
        )
    return g


def _root_edge(root: Any) -> GradientEdge:
    """The edge a root (a Tensor or a :class:`GradientEdge`) seeds."""
    return root if type(root) is GradientEdge else root._edge


_SEEDS: dict = {}  # (shape, dtype, sharding) -> ones: arrays are immutable, so one serves every pass


def _implicit_seed(data: Any) -> Any:
    """``ones_like(data)`` for a size-1 output; concrete seeds are cached (creating one costs a dispatch)."""
    if isinstance(data, jax.core.Tracer):
        return jnp.ones(data.shape, data.dtype)
    sharding = data.sharding if isinstance(data, jax.Array) else None  # None: lazy, placed on the default device
    key = (data.shape, data.dtype, sharding)
    seed = _SEEDS.get(key)
    if seed is None:
        seed = _SEEDS[key] = jnp.ones(data.shape, data.dtype, device=sharding)
    return seed


# -- reentrant passes -----------------------------------------------------------------------------
#: Nested (reentrant) backward passes one thread runs before the next nested pass moves to a new
#: thread, as PyTorch's engine does: each level costs ~10 Python frames, and Python's recursion
#: limit (1,000 by default) is per thread, so depth is unbounded (PyTorch's test runs 2,000 deep).
MAX_REENTRANT_DEPTH_PER_THREAD = 32

_REENTRANT_DEPTH: contextvars.ContextVar[int] = contextvars.ContextVar("fgraph_reentrant_depth", default=0)


def _execute(roots: tuple, seeds: list, inputs: Optional[tuple], create_graph: bool,
             accumulate: bool, release: bool = False) -> tuple[list, dict]:
    """Run the graph; return (captured gradients per input, {AccumulateGrad: grad}). ``release``: the
    caller does not retain the graph (``retain_graph`` unset)."""
    depth = _REENTRANT_DEPTH.get()
    if depth >= MAX_REENTRANT_DEPTH_PER_THREAD and not any(isinstance(s._array, jax.core.Tracer) for s in seeds):
        # JAX's tracing state is per thread, so traced passes stay on their thread (and are
        # limited by the recursion limit).
        return _ReentrantThread(roots, seeds, inputs, create_graph, accumulate, release).run()
    token = _REENTRANT_DEPTH.set(depth + 1)
    try:
        return _execute_pass(roots, seeds, inputs, create_graph, accumulate, release)
    finally:
        _REENTRANT_DEPTH.reset(token)


class _ReentrantThread:
    """Runs one nested backward pass on a fresh thread, in a copy of the caller's context, and waits."""

    def __init__(self, *args: Any) -> None:
        self.args = args
        self.context = contextvars.copy_context()  # grad mode, hooks, the running pass's callbacks
        self.result: Any = None
        self.error: Optional[BaseException] = None

    def run(self) -> Any:
        thread = threading.Thread(target=self._main, name="fgraph-reentrant-backward", daemon=True)
        thread.start()
        thread.join()
        if self.error is not None:
            raise self.error
        return self.result

    def _main(self) -> None:
        try:
            self.result = self.context.run(self._fresh)
        except BaseException as exc:  # re-raised on the caller's thread
            self.error = exc

    def _fresh(self) -> Any:
        _REENTRANT_DEPTH.set(1)
        return _execute_pass(*self.args)


def _detached_hint(t: Tensor) -> str:
    """The fix when ``t`` was returned by an ``fg.compile``d function (its graph stayed in the program)."""
    from fgraph.compile._outputs import detached_hint

    return detached_hint(t)


# -- the GraphTask --------------------------------------------------------------------------------
def _execute_pass(roots: tuple, seeds: list, inputs: Optional[tuple], create_graph: bool,
                  accumulate: bool, release: bool = False) -> tuple[list, dict]:
    """One backward pass on this thread (see :func:`_execute`)."""
    output_edges = []
    if inputs is not None:
        for i, x in enumerate(inputs):
            edge = x if type(x) is GradientEdge else x._edge
            if edge is None:
                raise GradError(
                    f"input {i} (shape {x.shape}) does not require grad; "
                    + (_detached_hint(x) or "create it with requires_grad=True.")
                )
            output_edges.append(edge)

    if len(roots) == 1:
        graph_root, root_nr = _root_edge(roots[0])
    else:
        graph_root, root_nr = GraphRoot([_root_edge(r) for r in roots], seeds), 0

    min_topo = min(e[0].topological_nr for e in output_edges) if output_edges else 0
    extras = RECORD_EXTRAS.get()
    anomaly = None if extras is None else extras.anomaly
    token = _GRAD_ENABLED.set(bool(create_graph))
    callbacks = _PassCallbacks()
    task_token = _CALLBACKS.set(callbacks)
    fusion.pass_started()
    dual = bool(open_levels())  # dual values: the pass runs as one op (fused_dual) or node by node
    deferred = eager_state = None
    try:
        lazy = LAZY.get()
        found = None
        if lazy is not None and lazy.deferred:  # deferred dispatch: record the pass, or run the trace and go eager
            if anomaly is None and not dual and not create_graph:
                found = fusion.structure_of(graph_root, root_nr, seeds, output_edges, accumulate, min_topo)
                if found is not None and lazy.records_pass(found):
                    fused = fused_lazy.try_run(found, graph_root, root_nr, seeds, output_edges, accumulate, min_topo,
                                               lazy)
                    if fused is not None:
                        lazy.pass_recorded(found if release else None)
                        return fused
            deferred, lazy = lazy, None
            eager_state = deferred.go_eager()
            if found is not None:
                found.ran()  # its saved arrays have their values now
        if anomaly is None and not dual and (lazy is None or not create_graph):
            fused = _run_fused(graph_root, root_nr, seeds, output_edges, accumulate, min_topo, create_graph, lazy,
                               found)
            if fused is not None:
                return fused
        elif anomaly is None and dual and lazy is None:
            found = fusion.structure_of(graph_root, root_nr, seeds, output_edges, accumulate, min_topo)
            fused = None if found is None else fused_dual.try_run(found, graph_root, root_nr, seeds, output_edges,
                                                                   accumulate, min_topo)
            if fused is not None:
                return fused
        if len(roots) == 1:  # the gradients arriving at each node, summed when it runs
            buffers: dict = {graph_root: [None] * graph_root.num_inputs}
            buffers[graph_root][root_nr] = seeds[0]
        else:
            buffers = {graph_root: []}
        dependencies = _compute_dependencies(graph_root, min_topo)
        exec_info = (_init_to_execute(graph_root, output_edges, accumulate, min_topo, dependencies)
                     if output_edges else None)
        captured: list = [None] * len(output_edges)
        leaf_grads: dict = {}
        if anomaly is not None:
            _run_ready_heap(graph_root, buffers, dependencies, exec_info, captured, leaf_grads, accumulate,
                            anomaly_apply(anomaly))
            _run_callbacks(callbacks)
            return captured, leaf_grads
        if not create_graph and not dual and lazy is None and len(dependencies) >= fusion.MAX_NODES:
            fused = segments.try_run(graph_root, root_nr, seeds, dependencies, exec_info, len(output_edges),
                                     accumulate, min_topo)
            if fused is not None:
                return fused
        _run_ready_heap(graph_root, buffers, dependencies, exec_info, captured, leaf_grads, accumulate)
        _run_callbacks(callbacks)
    finally:
        _CALLBACKS.reset(task_token)
        _GRAD_ENABLED.reset(token)
        fusion.pass_ended()
        if eager_state is not None:
            deferred.back(eager_state)
    return captured, leaf_grads


def _run_fused(graph_root: Node, root_nr: int, seeds: list, output_edges: list, accumulate: bool, min_topo: int,
               create_graph: bool, lazy: Any, found: Any = None) -> Optional[tuple[list, dict]]:
    """The pass as one fused program, if its structure can be fused and is compiled; else ``None``.

    The structure (``found``, unless given) is found before ``dependencies`` and ``exec_info``: it
    determines both, so a compiled structure's pass needs neither.
    """
    if found is None:
        found = fusion.structure_of(graph_root, root_nr, seeds, output_edges, accumulate, min_topo)
    if found is None:
        return None
    if create_graph:
        return fused_create_graph.try_run(found, graph_root, root_nr, seeds, output_edges, accumulate, min_topo)
    if lazy is not None:  # one record for the pass (the replay is one program)
        return fused_lazy.try_run(found, graph_root, root_nr, seeds, output_edges, accumulate, min_topo, lazy)
    fused = fusion.try_run(found, graph_root, root_nr, seeds, output_edges, accumulate, min_topo)
    if fused is None:  # no program for this structure (yet): one for its kinds of node may serve
        fused = interpreted.try_run(found, graph_root, root_nr, seeds, output_edges, accumulate, min_topo)
    return fused


class _PassCallbacks(list):
    """The callbacks queued during one backward pass, plus per-pass state of hooks (``state``).

    Hooks keep what they gather during a pass here, so it dies with the pass (a failed
    pass leaves nothing behind for a later one to trip over).
    """

    __slots__ = ("state",)

    def __init__(self) -> None:
        super().__init__()
        self.state: dict = {}


def queue_callback(callback: Callable[[], None]) -> None:
    """Run ``callback()`` when the backward pass that is executing now finishes (as in PyTorch).

    Only valid while a backward pass runs (from a hook or a custom backward).
    """
    callbacks = _CALLBACKS.get()
    if callbacks is None:
        raise RuntimeError("queue_callback: no backward pass is running; call it from a hook during backward.")
    callbacks.append(callback)


def _run_callbacks(callbacks: list) -> None:
    i = 0
    while i < len(callbacks):  # callbacks may queue more callbacks
        callbacks[i]()
        i += 1
