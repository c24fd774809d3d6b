"""How a primitive op is declared and run: one forward kernel, one derivative rule.

A primitive is an :class:`OpDef`: a pure JAX ``forward(*arrays, **params)`` and a
derivative ``rule(ctx, grad)`` written in fgraph's own ops. The rule's vocabulary
is fixed — it sees only :class:`RuleContext`:

* ``ctx.inputs``  — the saved inputs (Tensors, or the Python scalars passed),
* ``ctx.result``  — the saved output (a Tensor, or a tuple for multi-output ops),
* ``ctx.params``  — the static parameters (a named tuple),
* ``ctx.needs``   — which inputs need a gradient,
* ``ctx.shapes``  — the shapes of the inputs that need one (``None`` elsewhere),

and ``grad`` (the gradient of the output, or a tuple of them for multi-output
ops; missing ones are zeros). It returns one gradient per input (``None`` for
inputs that need none), in the broadcast shape of the computation; the single
helper :func:`fgraph.ops._broadcast.reduce_grad` sums them to each input's shape.

Complex numbers: a rule is the plain transpose of its op (for a holomorphic op ``g * f'(z)``,
the real formula); PyTorch's convention (``dL/dx + i dL/dy``) is applied here and only here,
by conjugating a complex ``grad`` before the rule and each complex input's gradient after it
(:mod:`fgraph.ops._complex`). Ops defined on real numbers only are declared ``real_only``.

The same rule serves both backward paths:

* ``create_graph=True``: it runs on Tensors with grad mode on, so it records
  nodes and higher derivatives come free;
* otherwise it is traced once per shape signature into one jitted kernel on raw
  arrays (:meth:`OpDef.rule_kernel`).
"""
from __future__ import annotations

import functools
from collections import namedtuple
from typing import Any, Callable, Optional, Sequence, Union

import jax
import jax.numpy as jnp

from fgraph._kernel_jit import kernel_jit, placed, traced
from fgraph._numbers import _at_top_level, constants
from fgraph.amp.autocast_mode import ACTIVE as _AMP_ON
from fgraph.amp.autocast_mode import cast_op_args
from fgraph.autograd._record_state import RECORD_EXTRAS
from fgraph.autograd._forward_rules import apply_dual, apply_dual_tensors, propagate
from fgraph.ops._saved_inputs import kept_by, pair_keep
from fgraph.autograd.anomaly import forward_stack
from fgraph.autograd.forward_ad import OPEN as _FW_OPEN
from fgraph.autograd.forward_ad import open_levels, with_result_tangents
from fgraph.autograd.grad_mode import _GRAD_ENABLED
from fgraph.autograd.saved_tensors import Packed, pack_saved, unpack_saved
from fgraph.autograd.graph import Node, next_sequence_nr
from fgraph.lazy._array import LazyArray
from fgraph.lazy._state import LAZY
from fgraph.ops._complex import RealOnly
from fgraph.ops._complex import conj_grad as _conj
from fgraph.ops._natural_sharding import resolving
from fgraph.ops._op_errors import explain as _explain
from fgraph.ops._rule_run import RuleContext, _default_needs, _fill_zeros, _finish, _traced_rule
from fgraph.tensor import Tensor, _wrap, _wrap_output

__all__ = ["OpDef", "RuleContext", "declare", "apply_op", "apply_unary", "registry"]

_new_object = object.__new__

#: Every declared primitive, by name.
registry: dict[str, "OpDef"] = {}

Rule = Callable[["RuleContext", Any], Sequence[Optional[Tensor]]]


class OpDef:
    """A primitive op: forward kernel, derivative rule and what the rule needs saved.

    Args:
        name: the op's name (``'mul'``).
        forward: pure JAX function ``forward(*arrays, **params)``.
        rule: derivative rule, or ``None`` for an op that has none yet.
        params: names of the static parameters, in call order.
        save_inputs: the rule reads ``ctx.inputs``: ``True`` saves every input; a tuple of
            positions (or a ``slice``) saves only those, the others read ``None`` in
            ``ctx.inputs`` (their shapes stay in ``ctx.shapes``), so a node does not keep
            alive an input whose values its rule never reads (``x`` in ``x[idx]``).
            A dict ``{position: positions}`` saves input ``position`` only when one of
            ``positions`` needs a gradient (``mul``: ``{0: (1,), 1: (0,)}``: ``x * c`` with a
            constant ``c`` saves ``c`` alone, as PyTorch does).
        save_result: the rule reads ``ctx.result``.
        differentiable: ``False`` for ops whose outputs never carry gradients
            (comparisons, argmax...).
        num_outputs: number of outputs ``forward`` returns (as a tuple when > 1);
            ``0`` when it depends on the parameters (``split``): the tuple's length.
        node_name: PyTorch-style node name (default ``NameBackward0``).
        hint: ``hint(args, params) -> str`` explaining a failed call.
        fuse_rule: ``True`` traces the rule into one jitted kernel per signature (the
            ``create_graph=False`` path); ``False`` runs it op by op, each op its own cached
            kernel, for rules whose traced kernel would have an output per input (``cat`` of
            thousands of tensors compiles for seconds per arity).
        real_only: the op is defined on real numbers only (orderings, rounding, most special
            functions, as in PyTorch): a complex input raises an :class:`~fgraph.errors.OpError` naming the op.
            Checked when the kernel is traced, so it costs nothing per call.
        complex_fix: what the error for a complex input suggests instead (``real_only`` ops).
        tangent: how forward-mode AD gets the op's tangent: ``"kernel"`` (``jax.jvp`` of the forward
            kernel) or ``"rule"`` (the transpose of the reverse rule), for an op whose kernel's JAX
            derivative is missing or not PyTorch's (see :mod:`fgraph.autograd._forward_rules`). With
            ``"rule"`` the jitted kernel is a ``jax.custom_jvp`` of that tangent, so JAX differentiating
            it anywhere (a traced rule, ``interop.to_jax``, ``fg.compile``) follows the rule too.
    """

    def __init__(
        self,
        name: str,
        forward: Callable[..., Any],
        rule: Optional[Rule],
        *,
        params: Sequence[str] = (),
        save_inputs: Union[bool, Sequence[int], slice] = False,
        save_result: bool = False,
        differentiable: bool = True,
        num_outputs: int = 1,
        node_name: Optional[str] = None,
        hint: Optional[Callable[[tuple, Any], str]] = None,
        fuse_rule: bool = True,
        real_only: bool = False,
        complex_fix: Optional[str] = None,
        tangent: str = "kernel",
    ) -> None:
        self.name = name
        self.forward = forward
        self.rule = rule
        self.param_names = tuple(params)
        self.Params = namedtuple(f"{name}_params", self.param_names) if params else None
        self.save_inputs = bool(save_inputs)
        self.saved_positions: Union[None, frozenset, slice, dict] = (
            None if isinstance(save_inputs, bool) else
            save_inputs if isinstance(save_inputs, (slice, dict)) else frozenset(save_inputs)
        )
        self.pair_keep = pair_keep(self.saved_positions)
        self.save_result = save_result
        self.differentiable = differentiable
        self.num_outputs = num_outputs
        self.hint = hint
        self.fuse_rule = fuse_rule
        self.real_only = real_only
        self.complex_fix = complex_fix
        self.tangent = tangent
        self._kernels: dict[Any, Callable] = {}
        self._rule_kernels: dict[Any, Callable] = {}
        node_name = node_name or "".join(p.capitalize() for p in name.split("_")) + "Backward0"
        namespace = {"__slots__": (), "op": self, "__module__": __name__}
        if num_outputs == 1:
            base, namespace["num_inputs"] = OpNode, 1
        else:
            base = MultiOutputOpNode  # num_inputs comes from the node's out_meta
        self.node_cls: type[OpNode] = type(node_name, (base,), namespace)

    def __repr__(self) -> str:
        return f"<op {self.name}: {self.node_cls.__name__}, rule={getattr(self.rule, '__name__', None)}>"

    def kernel(self, params: Any) -> Callable:
        """The jitted forward kernel for these static parameters (compiled once, then cached)."""
        fn = self._kernels.get(params)
        if fn is None:
            if self.tangent == "rule":  # JAX differentiating the kernel (traced rules, derived ops) uses the rule
                from fgraph.autograd._forward_rules import rule_forward

                forward = rule_forward(self, params)
            else:
                forward = functools.partial(self.forward, **params._asdict()) if params else self.forward
            if self.real_only:
                forward = RealOnly(forward)
            fn = self._kernels[params] = kernel_jit(resolving(forward))  # resolving: Explicit mesh axes
        return fn

    def rule_kernel(self, params: Any, in_meta: tuple, needs: Optional[tuple], out_meta: Optional[tuple]) -> Callable:
        """The rule traced on raw arrays into one jitted kernel for this signature."""
        key = (params, in_meta, needs, out_meta)
        fn = self._rule_kernels.get(key)
        if fn is None:
            fn = functools.partial(_traced_rule, self, params, in_meta, needs, out_meta)
            fn = self._rule_kernels[key] = kernel_jit(fn) if self.fuse_rule else fn
        return fn


def declare(name: str, forward: Callable[..., Any], rule: Optional[Rule], **options: Any) -> OpDef:
    """Declare a primitive and add it to :data:`registry`."""
    if name in registry:
        raise ValueError(f"op '{name}' is declared twice")
    op = registry[name] = OpDef(name, forward, rule, **options)
    return op


# -- running an op forward (hot path) ---------------------------------------------------
def apply_op(op: OpDef, args: tuple, params: Any = None) -> Any:
    """Run ``op`` on ``args`` (Tensors, Python scalars or index arrays); record its node if needed."""
    if _AMP_ON[0]:  # an autocast region: PyTorch's per-op casts (fgraph/amp/)
        args = cast_op_args(op.name, args)
    arrays = []
    edges = []
    recording = False
    numbers = False
    for a in args:
        if isinstance(a, Tensor):
            arrays.append(a._array)
            edge = a._edge
            edges.append(edge)
            if edge is not None:
                recording = True
        else:
            arrays.append(a)
            edges.append(None)
            if a is not None:
                numbers = True
    lazy = LAZY.get()
    if numbers and lazy is None:
        arrays = constants(arrays)  # x * 0.5: no copy of 0.5 from the host on every call
    if _FW_OPEN[0] and lazy is None:  # one open level: value and tangent in one dispatch (forward_ad.py)
        result = apply_dual(op, args, arrays, params, tuple(edges), recording)
        if result is not None:
            return result
    kernel = op._kernels.get(params)
    if kernel is None:
        kernel = op.kernel(params)
    try:
        if lazy is not None:
            out = lazy.call(kernel, arrays)
        else:  # in a trace (jax.jit, vmap, shard_map of user code): the plain form, see fgraph/_kernel_jit.py
            out = (kernel if _at_top_level() else traced(kernel))(*arrays)
    except (TypeError, ValueError, IndexError) as exc:
        raise _explain(op, args, params, exc) from None
    if recording and op.differentiable and _GRAD_ENABLED.get():
        result = _record(op, args, arrays, params, tuple(edges), out)
    else:
        result = _wrap(out) if op.num_outputs == 1 else tuple([_wrap(o) for o in out])
    return result if not _FW_OPEN[0] else propagate(op, args, params, result)  # tangents: forward_ad.py


def apply_unary(op: OpDef, x: Tensor, params: Any = None) -> Tensor:
    """:func:`apply_op` for one Tensor input and one output: the common case, kept lean."""
    if _FW_OPEN[0] and isinstance(x, Tensor) and not _AMP_ON[0] and LAZY.get() is None:
        result = apply_dual_tensors(op, (x,), params)  # a dual input: value and tangent in one dispatch
        if result is not None:
            return result
    if not isinstance(x, Tensor) or _FW_OPEN[0] or _AMP_ON[0]:
        return apply_op(op, (x,), params)
    kernel = op._kernels.get(params)
    if kernel is None:
        kernel = op.kernel(params)
    data = x._array
    try:
        lazy = LAZY.get()
        if lazy is not None:
            out = lazy.call(kernel, (data,))
        else:  # in a trace (jax.jit, vmap, shard_map of user code): the plain form, see fgraph/_kernel_jit.py
            out = (kernel if _at_top_level() else traced(kernel))(data)
    except (TypeError, ValueError, IndexError) as exc:
        raise _explain(op, (x,), params, exc) from None
    edge = x._edge
    if edge is None or not op.differentiable or not _GRAD_ENABLED.get():
        return _wrap(out)
    node = _new_object(op.node_cls)
    node.next_edges = (edge,)
    node.sequence_nr = next_sequence_nr()
    node.topological_nr = edge[0].topological_nr + 1
    node._hooks = None
    node._metadata = None
    node.params = params
    aval = data.aval
    node.in_meta = ((aval.shape, aval.dtype),)
    node.saved_inputs = None if not op.save_inputs else (x,) if op.saved_positions is None else _kept(op, (x,), node.next_edges)
    node.saved_result = out if op.save_result else None
    if RECORD_EXTRAS.get() is not None:
        _apply_record_extras(node)
    return _wrap_output(out, node, 0)


def apply_binary(op: OpDef, a: Any, b: Any, params: Any = None) -> Tensor:
    """:func:`apply_op` for two inputs and one output (``a * b``, ``a + b``, ...), kept lean."""
    if _FW_OPEN[0] and isinstance(a, Tensor) and isinstance(b, Tensor) and not _AMP_ON[0] and LAZY.get() is None:
        result = apply_dual_tensors(op, (a, b), params)  # a dual input: value and tangent in one dispatch
        if result is not None:
            return result
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)) or _FW_OPEN[0] or _AMP_ON[0]:
        return apply_op(op, (a, b), params)
    kernel = op._kernels.get(params)
    if kernel is None:
        kernel = op.kernel(params)
    da = a._array
    db = b._array
    try:
        lazy = LAZY.get()
        if lazy is not None:
            out = lazy.call(kernel, (da, db))
        else:  # in a trace (jax.jit, vmap, shard_map of user code): the plain form, see fgraph/_kernel_jit.py
            out = (kernel if _at_top_level() else traced(kernel))(da, db)
    except (TypeError, ValueError, IndexError) as exc:
        raise _explain(op, (a, b), params, exc) from None
    ea = a._edge
    eb = b._edge
    if (ea is None and eb is None) or not op.differentiable or not _GRAD_ENABLED.get():
        return _wrap(out)
    node = _new_object(op.node_cls)
    node.next_edges = (ea, eb)
    node.sequence_nr = next_sequence_nr()
    if ea is None:
        node.topological_nr = eb[0].topological_nr + 1
        node.in_meta = (None, _meta(db))
    elif eb is None:
        node.topological_nr = ea[0].topological_nr + 1
        node.in_meta = (_meta(da), None)
    else:
        ta = ea[0].topological_nr
        tb = eb[0].topological_nr
        node.topological_nr = (ta if ta > tb else tb) + 1
        node.in_meta = (_meta(da), _meta(db))
    node._hooks = None
    node._metadata = None
    node.params = params
    if not op.save_inputs:
        node.saved_inputs = None
    elif op.saved_positions is None:
        node.saved_inputs = (a, b)
    else:
        keep_a, keep_b = op.pair_keep[ea is None][eb is None]
        node.saved_inputs = (a if keep_a else None, b if keep_b else None)
    node.saved_result = out if op.save_result else None
    if RECORD_EXTRAS.get() is not None:
        _apply_record_extras(node)
    return _wrap_output(out, node, 0)


def _record(op: OpDef, args: tuple, arrays: list, params: Any, edges: tuple, out: Any) -> Any:
    node = _new_object(op.node_cls)
    node.next_edges = edges
    node.sequence_nr = next_sequence_nr()
    topo = 0
    in_meta = []
    for edge, x in zip(edges, arrays):
        if edge is None:
            in_meta.append(None)
        else:
            aval = x.aval
            in_meta.append((aval.shape, aval.dtype))
            child = edge[0].topological_nr
            if child >= topo:
                topo = child + 1
    node.topological_nr = topo
    node._hooks = None
    node._metadata = None
    node.params = params
    node.in_meta = tuple(in_meta)
    node.saved_inputs = None if not op.save_inputs else args if op.saved_positions is None else _kept(op, args, edges)
    if op.num_outputs == 1:
        node.saved_result = out if op.save_result else None
        if RECORD_EXTRAS.get() is not None:
            _apply_record_extras(node)
        return _wrap_output(out, node, 0)
    node.saved_result = tuple(out) if op.save_result else None
    node.out_meta = tuple((o.aval.shape, o.aval.dtype) for o in out)
    if RECORD_EXTRAS.get() is not None:
        _apply_record_extras(node)
    return tuple(
        _wrap_output(o, node, i) if jnp.issubdtype(o.dtype, jnp.inexact) else _wrap(o) for i, o in enumerate(out)
    )


def _kept(op: OpDef, args: tuple, edges: tuple) -> tuple:
    """``args`` with the inputs the rule does not read replaced by ``None``."""
    return kept_by(op.saved_positions, args, edges)


def _meta(x: Any) -> tuple:
    aval = x.aval
    return (aval.shape, aval.dtype)


def _apply_record_extras(node: "OpNode") -> None:
    """Saved-tensor hooks pack what the node saves; anomaly mode stores the forward stack."""
    extras = RECORD_EXTRAS.get()
    if extras.saved_hooks is not None:
        if node.saved_inputs is not None:
            node.saved_inputs = pack_saved(node.saved_inputs, extras.saved_hooks)
        if node.saved_result is not None:
            results = node.saved_result if node.op.num_outputs != 1 else (node.saved_result,)
            packed = pack_saved(tuple(_wrap(r) for r in results), extras.saved_hooks)
            node.saved_result = packed if node.op.num_outputs != 1 else packed[0]
            for p in packed:
                p.edge = None  # the node's own output: re-attached to the node at backward
    if extras.anomaly is not None:
        node.metadata["traceback_"] = forward_stack()


# -- the node every primitive records ----------------------------------------------------
class OpNode(Node):
    """Backward node of a declared primitive. Each op gets a subclass named like ``MulBackward0``.

    ``in_meta[i]`` is ``(shape, dtype)`` of input ``i`` if it has an edge, else ``None``.
    """

    __slots__ = ("params", "in_meta", "saved_inputs", "saved_result", "result_tangents")  # the last: forward_ad.py
    op: OpDef

    def apply(self, grad_outputs: Sequence[Optional[Tensor]], needs: Optional[tuple[bool, ...]]) -> tuple:
        if _GRAD_ENABLED.get() or _FW_OPEN[0] and open_levels():  # dual values: the rule runs on Tensors
            return self._apply_recorded(grad_outputs, needs)
        return self.apply_kernel(grad_outputs, needs, self.saved_arrays())

    def saved_arrays(self) -> list:
        """What the rule kernel takes after the gradients: saved inputs, then saved outputs."""
        args = []
        saved = self.saved_inputs
        if saved is not None:
            for a in saved:
                if type(a) is Packed:
                    a = a.get()
                args.append(_ran(a._array) if isinstance(a, Tensor) else a)
        if self.op.save_result:
            if self.op.num_outputs == 1:
                args.append(_ran(_unpacked_array(self.saved_result)))
            else:
                args.extend(_ran(_unpacked_array(r)) for r in self.saved_result)
        return args

    def saved_kinds(self) -> tuple:
        """The types of :meth:`saved_arrays`, found without unpacking (so unpack hooks do not run)."""
        kinds = []
        saved = self.saved_inputs
        if saved is not None:
            for a in saved:
                if type(a) is Packed:
                    kinds.append(Packed)
                else:
                    kinds.append(type(a._array) if isinstance(a, Tensor) else type(a))
        if self.op.save_result:
            results = (self.saved_result,) if self.op.num_outputs == 1 else self.saved_result
            kinds.extend(Packed if type(r) is Packed else type(r) for r in results)
        return tuple(kinds)

    def apply_kernel(self, grad_outputs: Sequence[Optional[Tensor]], needs: Optional[tuple], saved: list) -> tuple:
        """Run the rule as one jitted kernel on ``saved`` arrays (see :meth:`saved_arrays`)."""
        op = self.op
        if op.rule is None:
            raise _missing_rule(self)
        if _all_none(grad_outputs):
            return (None,) * len(self.next_edges)  # nothing flowed in: nothing flows out
        key = (self.params, self.in_meta, needs, self._out_meta())
        kernel = op._rule_kernels.get(key)
        if kernel is None:
            kernel = op.rule_kernel(*key)
        args = [None if g is None else g._array for g in grad_outputs]
        lazy = LAZY.get()
        args.extend(saved if lazy is not None else constants(saved))  # saved numbers: see apply_op
        outs = placed(kernel)(*args) if lazy is None else lazy.call(kernel, args)
        return tuple([None if o is None else _wrap(o) for o in outs])

    def _out_meta(self) -> Optional[tuple]:
        return None

    def _apply_recorded(self, grad_outputs: Sequence[Optional[Tensor]], needs: Optional[tuple]) -> tuple:
        op = self.op
        if op.rule is None:
            raise _missing_rule(self)
        if _all_none(grad_outputs):
            return (None,) * len(self.next_edges)
        if not _FW_OPEN[0]:  # a kind seen before: its whole rule as one kernel and one node
            fused = _node_rules().try_apply(self, grad_outputs, needs)
            if fused is not None:
                return fused
        needs = _default_needs(self.in_meta) if needs is None else needs
        result = self.saved_result
        if result is not None:
            if op.num_outputs == 1:
                result = _wrap_output(_unpacked_array(result), self, 0)
            else:
                result = tuple(
                    _wrap_output(r, self, i) if jnp.issubdtype(r.dtype, jnp.inexact) else _wrap(r)
                    for i, r in enumerate(map(_unpacked_array, result))
                )
            if _FW_OPEN[0]:
                result = with_result_tangents(self, result)
        inputs = self.saved_inputs
        if inputs is not None:
            inputs = unpack_saved(inputs)
        ctx = RuleContext(inputs, result, self.params, needs, self.in_meta)
        if op.num_outputs == 1:
            grads: Any = _conj(grad_outputs[0])
        else:
            grads = tuple(map(_conj, _fill_zeros(grad_outputs, self._out_meta())))
        return _finish(op.rule(ctx, grads), needs, self.in_meta)


class MultiOutputOpNode(OpNode):
    """:class:`OpNode` of an op with several outputs; ``out_meta`` fills missing gradients with zeros."""

    __slots__ = ("out_meta",)

    @property
    def num_inputs(self) -> int:  # type: ignore[override]
        return len(self.out_meta)

    def _out_meta(self) -> Optional[tuple]:
        return self.out_meta


def _node_rules() -> Any:
    """:mod:`fgraph.autograd.fused_node_rule`, imported on first use (it imports the ops' Tensor machinery)."""
    global _NODE_RULES
    if _NODE_RULES is None:
        from fgraph.autograd import fused_node_rule

        _NODE_RULES = fused_node_rule
    return _NODE_RULES


_NODE_RULES: Any = None


def _all_none(grads: Sequence[Optional[Tensor]]) -> bool:
    for g in grads:  # identity checks only: Tensor.__eq__ is elementwise
        if g is not None:
            return False
    return True


def _ran(array: Any) -> Any:
    """``array``, or its value if it is a deferred value whose trace has run (a plain array for ``jax.jit``)."""
    if type(array) is LazyArray and array._concrete is not None:
        return array._concrete
    return array


def _unpacked_array(saved: Any) -> Any:
    return saved.get()._array if type(saved) is Packed else saved


def _missing_rule(node: OpNode) -> RuntimeError:
    wanted = [i for i, m in enumerate(node.in_meta) if m is not None]
    return RuntimeError(
        f"the derivative for '{node.op.name}' is not implemented (needed for input {wanted}); "
        f"{node.name()} cannot propagate gradients. Detach that input or use a differentiable op."
    )
