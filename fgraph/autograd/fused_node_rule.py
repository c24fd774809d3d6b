"""A node's rule under ``create_graph`` as one kernel and one node, whatever the pass's structure.

Under ``create_graph=True`` every rule records its ops, so that the gradients can be
differentiated again: ``tanh``'s rule records three (two products and a difference), a
matrix-vector product's five (the matrix product between an ``unsqueeze`` and a
``squeeze``). A pass whose structure recurs runs as one fused program
(:mod:`fgraph.autograd.fused_create_graph`), but a pass of a structure not seen before -- a
notebook cell just edited, a network built anew -- runs node by node, each op its own
dispatch, and the second pass then runs each recorded op's rule, one dispatch each.

Here a node of such a pass whose kind was seen before runs its rule as the rule kernel a
plain pass dispatches (one dispatch) and records one
:class:`~fgraph.autograd.fused_create_graph.FusedBackward` node, whose rule is ``jax.vjp``
of that kernel: compiled once per kind -- op, static parameters, shapes and dtypes, which
inputs need a gradient and which inputs a gradient flows back to -- and shared by every
structure built of that kind, as PyTorch's double-differentiable backward ops
(``tanh_backward``) are. A Hessian-vector product of a new two-layer network then records 5
nodes instead of ~20, and its second pass dispatches 5 kernels instead of ~20.

A kind's vjp compiles at its second sighting, on fusion's background worker (on the
caller's thread under ``fusion.set_background(False)``); until it is compiled the rule
records its ops as before, and a kind whose vjp fails to trace or compile keeps doing so.
Only real floating-point rules of declared ops are taken, and not those of ops whose forward
derivative comes from their rule (``tangent="rule"``: JAX's derivative of their kernels is
missing or not PyTorch's); no saved-tensor hooks, not under anomaly mode, forward-mode AD,
``fg.lazy`` recording or a JAX trace; ``fusion.set_enabled(False)``
records the rules' ops again, for debugging. Values equal the op-by-op rules' up to
floating-point reassociation.

Example:
    >>> import fgraph as fg
    >>> from fgraph.autograd import fused_node_rule
    >>> x = fg.tensor([0.5, 1.0], requires_grad=True)
    >>> for _ in range(2):  # the second sighting of tanh's kind compiles its vjp
    ...     (g,) = fg.grad(fg.tanh(x).sum(), [x], create_graph=True)
    >>> fg.autograd.fusion.wait_for_compiles()
    True
    >>> (g,) = fg.grad(fg.tanh(x).sum(), [x], create_graph=True)
    >>> g.grad_fn.name()   # tanh's whole rule, one node
    'FusedBackward'
    >>> (h,) = fg.grad(g.sum(), [x])
    >>> bool(fg.allclose(h, -2 * fg.tanh(x) * (1 - fg.tanh(x) ** 2)))
    True
"""
from __future__ import annotations

import threading
from typing import Any, Optional, Sequence

import jax
import jax.numpy as jnp

from fgraph._kernel_jit import placed
from fgraph._numbers import constants
from fgraph.autograd import fusion
from fgraph.autograd._record_state import RECORD_EXTRAS
from fgraph.autograd.fused_create_graph import FlatProgram, FusedBackward
from fgraph.autograd.graph import make_edge
from fgraph.autograd.saved_tensors import Packed
from fgraph.lazy._array import LazyArray
from fgraph.lazy._recorder import array_type
from fgraph.lazy._state import LAZY
from fgraph.tensor import Tensor, _wrap, _wrap_output

__all__ = ["try_apply", "STATS"]

#: A kind's vjp compiles once it has been seen this many times.
COMPILE_AFTER = 2
#: Kinds remembered (least recently added dropped first: a kind is a few dict entries and, once compiled, a program).
MAX_KINDS = 4096
#: ``applied``: nodes whose rule ran as one kernel and one node; ``compiles``, ``failures``: vjps compiled or not.
STATS: dict = {"applied": 0, "compiles": 0, "failures": 0}

_KINDS: dict = {}
_lock = threading.Lock()
_REAL_FLOAT: dict = {}  # dtype -> whether it is a real floating type (jnp.issubdtype is slow)


def _real_float(dtype: Any) -> bool:
    known = _REAL_FLOAT.get(dtype)
    if known is None:
        known = _REAL_FLOAT[dtype] = bool(jnp.issubdtype(dtype, jnp.floating))
    return known


class _NoPlan:
    """What a :class:`FlatProgram` binds its plan on: a node's rule reads none."""

    def __init__(self) -> None:
        self._calls = threading.local()


_NO_PLAN = _NoPlan()


class _FlatRule:
    """A node kind's rule kernel with its missing gradients dropped: the function whose vjp is taken."""

    __slots__ = ("kernel", "__weakref__")

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    def __call__(self, *arrays: Any) -> tuple:
        return tuple(o for o in placed(self.kernel)(*arrays) if o is not None)


class _Kind:
    """One node kind: its rule kernel, the flat program whose vjp a later pass runs, and that vjp's state."""

    __slots__ = ("kernel", "node_cls", "program", "float_in", "float_out", "vjp", "sightings", "requested", "failed")

    def __init__(self, kernel: Any, node_cls: type) -> None:
        self.kernel, self.node_cls = kernel, node_cls
        self.program = FlatProgram(_FlatRule(kernel), _NO_PLAN)
        self.float_in: tuple = ()  # the inputs a gradient flows back to: on an edge, and read by the outputs
        self.float_out: Optional[tuple] = None
        self.vjp: Optional[FlatProgram] = None  # set once compiled
        self.sightings = 0
        self.requested = False
        self.failed = False

    def compile(self, arrays: list, float_in: tuple) -> None:
        """Run the rule once, then compile its vjp for ``float_in`` (on fusion's worker, or here)."""
        try:
            outs = self.program.fn(*arrays)
            if not all(_real_float(o.dtype) for o in outs):
                raise TypeError("a gradient that is not real floating-point")
            float_out = tuple(range(len(outs)))
            float_in = self.program.reads(None, arrays, float_in)
            vjp = self.program.vjp(float_in, float_out, len(arrays))
            if float_in:
                cts = [jnp.zeros(outs[j].shape, outs[j].dtype) for j in float_out]
                jax.block_until_ready(vjp.run(None, [*arrays, *cts]))
            vjp.ready = True
        except Exception:  # a rule JAX cannot differentiate: this kind records its ops, as before
            self.failed = True
            STATS["failures"] += 1
            return
        self.float_in, self.float_out, self.vjp = float_in, float_out, vjp
        STATS["compiles"] += 1


def try_apply(node: Any, grad_outputs: Sequence[Optional[Tensor]], needs: Optional[tuple]) -> Optional[tuple]:
    """Run ``node``'s rule as one kernel recorded on one node, if its kind's vjp is compiled; else ``None`` (the
    rule records its ops). Counts a sighting of the kind, and asks for its vjp at :data:`COMPILE_AFTER`."""
    op = node.op
    if not op.fuse_rule or not fusion._state["enabled"] or LAZY.get() is not None or RECORD_EXTRAS.get() is not None:
        return None
    gathered = _arrays_and_edges(node, grad_outputs)
    if gathered is None:
        return None
    arrays, edges = gathered
    float_in = tuple(i for i, e in enumerate(edges) if e is not None)
    out_meta = node._out_meta()
    key = (op, node.params, node.in_meta, needs, out_meta, float_in)
    kind = _KINDS.get(key)
    if kind is None:
        if op.rule is None or op.tangent != "kernel" or not _real_meta(node.in_meta):
            return None
        kernel = op._rule_kernels.get(key[1:5]) or op.rule_kernel(*key[1:5])
        kind = _new_kind(key, kernel)
    if kind.vjp is None:
        if kind.failed:
            return None
        kind.sightings += 1
        if kind.sightings >= COMPILE_AFTER and not kind.requested:
            _request(kind, arrays, float_in)  # in the foreground: compiled when it returns
        if kind.vjp is None:
            return None
    outs = placed(kind.kernel)(*arrays)
    STATS["applied"] += 1
    flat = [o for o in outs if o is not None]
    float_in = kind.float_in
    if not float_in:
        wrapped = iter([_wrap(o) for o in flat])
    else:
        edges = tuple(e if i in float_in else None for i, e in enumerate(edges))
        fused = kind.node_cls(kind.program, None, arrays, edges, float_in, kind.float_out,
                              tuple((o.shape, o.dtype) for o in flat))
        wrapped = iter([_wrap_output(o, fused, j) if j in kind.float_out else _wrap(o) for j, o in enumerate(flat)])
    return tuple([None if o is None else next(wrapped) for o in outs])


def _arrays_and_edges(node: Any, grad_outputs: Sequence[Optional[Tensor]]) -> Optional[tuple]:
    """The rule kernel's arguments (gradients, saved inputs, saved outputs) and the edge a gradient flows back on
    from each (``None``: none does); ``None`` if any is not a plain real array (packed, deferred, traced, complex)."""
    concrete = array_type()
    arrays: list = []
    edges: list = []
    for g in grad_outputs:
        if g is None:
            arrays.append(None)
            edges.append(None)
            continue
        a = _concrete(g._array)
        if type(a) is not concrete or not _real_float(a.dtype):
            return None
        arrays.append(a)
        edges.append(g._edge)
    op = node.op
    if op.save_inputs:
        saved = node.saved_inputs
        if saved is None:  # freed: the recorded rule raises the error that says so
            return None
        numbers = False
        for s in saved:
            if isinstance(s, Tensor):
                a = _concrete(s._array)
                if type(a) is not concrete or a.dtype.kind == "c":
                    return None
                arrays.append(a)
                edges.append(s._edge if _real_float(a.dtype) else None)
            elif type(s) is Packed:
                return None
            else:  # a number or None the rule reads
                arrays.append(s)
                edges.append(None)
                numbers = numbers or s is not None
        if numbers:
            arrays = constants(arrays)
    if op.save_result:
        results = (node.saved_result,) if op.num_outputs == 1 else node.saved_result
        for i, r in enumerate(results):
            r = _concrete(r)
            if type(r) is not concrete or r.dtype.kind == "c":
                return None
            arrays.append(r)
            edges.append(make_edge(node, i) if _real_float(r.dtype) else None)
    return arrays, tuple(edges)


def _real_meta(in_meta: tuple) -> bool:
    """Whether every input with an edge is real floating-point (a complex input's gradient is complex)."""
    return all(m is None or _real_float(m[1]) for m in in_meta)


def _concrete(a: Any) -> Any:
    """``a``, or its value if it is a deferred value whose trace has run."""
    return a._concrete if type(a) is LazyArray and a._concrete is not None else a


def _new_kind(key: tuple, kernel: Any) -> _Kind:
    with _lock:
        kind = _KINDS.get(key)
        if kind is None:
            if len(_KINDS) >= MAX_KINDS:
                del _KINDS[next(iter(_KINDS))]
            kind = _KINDS[key] = _Kind(kernel, _node_class(key[0]))
    return kind


_NODE_CLASSES: dict = {}


def _node_class(op: Any) -> type:
    """The node recording ``op``'s fused rule, named as PyTorch names its backward's backward: ``TanhBackwardBackward0``."""
    cls = _NODE_CLASSES.get(op)
    if cls is None:
        name = op.node_cls.__name__.rstrip("0123456789") + "Backward0"
        cls = _NODE_CLASSES[op] = type(name, (FusedBackward,), {"__slots__": (), "__module__": __name__})
    return cls


def _request(kind: _Kind, arrays: list, float_in: tuple) -> None:
    kind.requested = True
    if fusion._state["background"]:
        fusion._worker.submit(kind.compile, arrays, float_in)
    else:
        kind.compile(arrays, float_in)


def clear() -> None:
    """Forget every kind (``fusion.clear_cache`` calls this)."""
    with _lock:
        _KINDS.clear()
