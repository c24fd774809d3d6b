"""The backward graph: nodes, edges, hooks.

A :class:`Node` is recorded for every differentiable op as it runs. Its
``next_edges`` point at the nodes that produced the op's inputs, so the graph is
built define-by-run, exactly as in PyTorch. Leaves that require grad own one
:class:`AccumulateGrad` node for their whole life.

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([0.5, 0.75], requires_grad=True)
    >>> y = fg.exp(x).sum()
    >>> y.grad_fn.name()
    'SumBackward0'
    >>> [fn.name() for fn, _ in y.grad_fn.next_functions]
    ['ExpBackward0']
"""
from __future__ import annotations

import functools
import itertools
import threading
import weakref
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Optional, Sequence

if TYPE_CHECKING:
    from fgraph.tensor import Tensor

__all__ = [
    "Node",
    "NodeHooks",
    "GradientEdge",
    "AccumulateGrad",
    "GraphRoot",
    "RemovableHandle",
    "get_gradient_edge",
    "register_multi_grad_hook",
    "saved_tensors_hooks",
    "save_on_cpu",
    "disable_saved_tensors_hooks",
]

#: ``AccumulateGrad`` gets the largest sequence number so it runs as soon as it is ready.
MAX_SEQUENCE_NR = 2**64 - 1

_sequence_counter = itertools.count()
next_sequence_nr = _sequence_counter.__next__

GradList = Sequence[Optional["Tensor"]]


class GradientEdge(NamedTuple):
    """An edge of the backward graph: gradient flows into input ``output_nr`` of ``node``.

    ``output_nr`` is the index of the forward output of ``node`` that the edge stands for.
    """

    node: "Node"
    output_nr: int


_new_edge = tuple.__new__


def make_edge(node: "Node", output_nr: int) -> GradientEdge:
    """Fast constructor for :class:`GradientEdge` used on the hot path."""
    return _new_edge(GradientEdge, (node, output_nr))


def get_gradient_edge(tensor: "Tensor") -> GradientEdge:
    """Return the edge gradients of ``tensor`` flow into (its ``grad_fn`` or its ``AccumulateGrad``).

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([1.0], requires_grad=True)
        >>> fg.autograd.graph.get_gradient_edge(x).node.name()
        'AccumulateGrad'
    """
    edge = tensor._edge
    if edge is None:
        raise RuntimeError(
            "get_gradient_edge: the tensor does not require grad and has no grad_fn; "
            "create it with requires_grad=True or compute it from one that does."
        )
    return edge


class RemovableHandle:
    """Returned by every hook registration; ``remove()`` unregisters the hook.

    ``extra`` are dicts that hold flags for the hook under the same id (a Module's
    ``with_kwargs``/``always_call`` marks); ``remove()`` clears those too. Also a
    context manager that removes the hook on exit.
    """

    __slots__ = ("_hooks_ref", "_extra_refs", "id")
    _next_id = itertools.count()

    def __init__(self, hooks: dict, extra: Sequence[dict] = ()) -> None:
        self._hooks_ref = weakref.ref(hooks)
        self._extra_refs = tuple(weakref.ref(d) for d in extra)  # per-hook flags kept beside the hooks
        self.id = next(RemovableHandle._next_id)

    def remove(self) -> None:
        for ref in (self._hooks_ref,) + self._extra_refs:
            hooks = ref()
            if hooks is not None:
                hooks.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


class _HookDict(dict):
    """A dict that can be weakly referenced by :class:`RemovableHandle`."""

    __slots__ = ("__weakref__",)


#: Guards the lazy creation of hook tables (registration is rare; the engine never takes it).
_hooks_lock = threading.Lock()


class NodeHooks:
    """The hooks of one node, by kind, in registration order.

    ``tensor_pre``: ``(output_nr, fn(grad))`` registered through ``Tensor.register_hook``;
    ``pre``: ``fn(grad_outputs)``; ``post``: ``fn(grad_inputs, grad_outputs)``;
    ``post_accumulate``: ``fn(leaf, grad)`` (``AccumulateGrad`` only).
    An empty kind is ``None`` so the engine checks it with one comparison.
    """

    __slots__ = ("tensor_pre", "pre", "post", "post_accumulate")

    def __init__(self) -> None:
        self.tensor_pre: Optional[_HookDict] = None
        self.pre: Optional[_HookDict] = None
        self.post: Optional[_HookDict] = None
        self.post_accumulate: Optional[_HookDict] = None

    def add(self, kind: str, fn: Any) -> RemovableHandle:
        hooks = getattr(self, kind)
        if hooks is None:
            with _hooks_lock:  # two threads adding the first hook of a kind must share one dict
                hooks = getattr(self, kind)
                if hooks is None:
                    hooks = _HookDict()
                    setattr(self, kind, hooks)
        handle = RemovableHandle(hooks)
        hooks[handle.id] = fn
        return handle


class Node:
    """A backward function in the graph.

    Attributes:
        next_edges: one :class:`GradientEdge` per forward input, ``None`` where the
            input needs no gradient.
        sequence_nr: creation order; larger runs first when several nodes are ready.
        topological_nr: 0 for ``AccumulateGrad``, else 1 + the maximum over children.
            Fixed at construction, so it never changes once the node has a parent.
    """

    __slots__ = ("next_edges", "sequence_nr", "topological_nr", "_hooks", "_metadata", "__weakref__")

    #: Number of gradients the node receives (forward outputs of the op).
    num_inputs: int = 1

    def __init__(self, next_edges: Sequence[Optional[GradientEdge]], sequence_nr: Optional[int] = None) -> None:
        self._set_edges(tuple(next_edges), next_sequence_nr() if sequence_nr is None else sequence_nr)

    def _set_edges(self, next_edges: tuple, sequence_nr: int) -> None:
        self.next_edges = next_edges
        self.sequence_nr = sequence_nr
        topo = 0
        for edge in next_edges:
            if edge is not None:
                child = edge[0].topological_nr
                if child >= topo:
                    topo = child + 1
        self.topological_nr = topo
        self._hooks = None
        self._metadata = None

    # -- introspection -------------------------------------------------------------
    def name(self) -> str:
        """PyTorch-style name, e.g. ``'MulBackward0'``."""
        return type(self).__name__

    @property
    def next_functions(self) -> tuple[tuple[Optional["Node"], int], ...]:
        """``((node, output_nr), ...)``, with ``(None, 0)`` for inputs that need no gradient."""
        return tuple((None, 0) if e is None else (e[0], e[1]) for e in self.next_edges)

    @property
    def metadata(self) -> dict:
        """A dict for user annotations (anomaly mode stores the forward stack here)."""
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self))}>"

    # -- hooks ---------------------------------------------------------------------
    def register_hook(self, fn: Callable[[tuple, tuple], Any]) -> RemovableHandle:
        """Register ``fn(grad_inputs, grad_outputs)`` to run after the node.

        ``grad_inputs`` are the gradients the node computed (one per next edge);
        ``grad_outputs`` are the gradients it received. Returning a tuple replaces
        ``grad_inputs``.
        """
        return self._hook_table().add("post", fn)

    def register_prehook(self, fn: Callable[[tuple], Any]) -> RemovableHandle:
        """Register ``fn(grad_outputs)`` to run before the node; returning a tuple replaces them."""
        return self._hook_table().add("pre", fn)

    def _register_tensor_prehook(self, output_nr: int, fn: Callable) -> RemovableHandle:
        return self._hook_table().add("tensor_pre", (output_nr, fn))

    def _hook_table(self) -> "NodeHooks":
        if self._hooks is None:
            with _hooks_lock:  # created once even when threads register hooks on one node at once
                if self._hooks is None:
                    self._hooks = NodeHooks()
        return self._hooks

    # -- execution -----------------------------------------------------------------
    def apply(self, grad_outputs: GradList, needs: Optional[tuple[bool, ...]]) -> tuple[Optional["Tensor"], ...]:
        """Map gradients of the forward outputs to gradients of the forward inputs.

        Returns one entry per ``next_edges``. ``needs[i]`` says whether the gradient
        for ``next_edges[i]`` is wanted (unwanted entries may be ``None``);
        ``needs=None`` means every edge that is not ``None``. Missing gradients in
        ``grad_outputs`` are ``None`` and stand for zeros.
        """
        raise NotImplementedError(f"{self.name()}.apply")


class AccumulateGrad(Node):
    """The sink node of a leaf tensor that requires grad.

    ``variable`` is the leaf. The node holds it weakly, so the leaf's lifetime is
    the user's to decide; the leaf holds its ``AccumulateGrad`` for its whole life.
    """

    __slots__ = ("_variable_ref",)

    num_inputs = 1

    def __init__(self, variable: "Tensor") -> None:
        self._set_edges((), MAX_SEQUENCE_NR)
        self._variable_ref = weakref.ref(variable)

    @property
    def variable(self) -> Optional["Tensor"]:
        """The leaf tensor this node accumulates into (``None`` once it is garbage)."""
        return self._variable_ref()

    def apply(self, grad_outputs: GradList, needs: Optional[tuple[bool, ...]]) -> tuple:
        return ()

    def register_post_accumulate_grad_hook(self, fn: Callable[["Tensor", "Tensor"], Any]) -> RemovableHandle:
        """Register ``fn(variable, accumulated_grad)`` run after ``backward`` accumulates into the leaf."""
        return self._hook_table().add("post_accumulate", fn)


class GraphRoot(Node):
    """Joins several roots into one node whose outputs are the seed gradients."""

    __slots__ = ("seeds",)
    num_inputs = 0

    def __init__(self, roots: Sequence[GradientEdge], seeds: Sequence["Tensor"]) -> None:
        super().__init__(roots)
        self.seeds = tuple(seeds)

    def apply(self, grad_outputs: GradList, needs: Optional[tuple[bool, ...]]) -> tuple:
        return self.seeds


class _HandleGroup:
    """Removes several hooks at once (returned by :func:`register_multi_grad_hook`)."""

    __slots__ = ("handles",)

    def __init__(self, handles: Sequence[RemovableHandle]) -> None:
        self.handles = tuple(handles)

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()

    def __enter__(self) -> "_HandleGroup":
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def register_multi_grad_hook(tensors: Sequence["Tensor"], fn: Callable, *, mode: str = "all") -> _HandleGroup:
    """Call ``fn`` once per backward pass that computes gradients for ``tensors``.

    ``mode="all"``: ``fn(grads)`` when the pass ends, ``grads`` holding one entry per
    tensor (``None`` for those the pass did not reach). ``mode="any"``: ``fn(grad)``
    with the first of those gradients computed. Returns a handle removing the hooks.

    Example:
        >>> import fgraph as fg
        >>> a = fg.tensor(1.0, requires_grad=True); b = fg.tensor(2.0, requires_grad=True)
        >>> seen = []
        >>> _ = fg.autograd.graph.register_multi_grad_hook((a, b), lambda gs: seen.append([g.item() for g in gs]))
        >>> _ = fg.backward(a * 3.0 + b * 4.0)
        >>> seen
        [[3.0, 4.0]]
    """
    from fgraph.autograd.engine import _CALLBACKS, queue_callback

    if mode not in ("all", "any"):
        raise ValueError(f"register_multi_grad_hook: mode must be 'all' or 'any', got {mode!r}.")
    tensors = tuple(tensors)
    for i, t in enumerate(tensors):
        if t._edge is None:
            raise RuntimeError(f"register_multi_grad_hook: tensor {i} does not require grad.")
    key = next(_multi_hook_ids)  # never reused: per-pass state lives on the running pass, under this key

    def hook_for(index: int) -> Callable:
        def multi_grad_hook(grad: "Tensor") -> None:
            per_pass = _CALLBACKS.get().state
            if mode == "any":
                if key not in per_pass:
                    per_pass[key] = True
                    fn(grad)
                return None
            grads = per_pass.get(key)
            if grads is None:
                grads = per_pass[key] = [None] * len(tensors)
                queue_callback(functools.partial(_finish_multi_grad, per_pass, key, fn))
            grads[index] = grad
            return None

        return multi_grad_hook

    return _HandleGroup([t.register_hook(hook_for(i)) for i, t in enumerate(tensors)])


_multi_hook_ids = itertools.count()


def _finish_multi_grad(per_pass: dict, key: int, fn: Callable) -> None:
    fn(tuple(per_pass.pop(key)))


from fgraph.autograd.saved_tensors import (  # noqa: E402  (re-exported here, as torch.autograd.graph does)
    disable_saved_tensors_hooks,
    save_on_cpu,
    saved_tensors_hooks,
)
