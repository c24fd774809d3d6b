"""Tangents of every primitive from what it already has: ``jax.jvp`` of its kernel, run as an op.

A primitive is declared once (its forward kernel and its reverse rule); its tangent is not
written a second time. ``jvp_op(op, ...)`` is a derived op whose kernel is ``jax.jvp`` of
``op``'s kernel restricted to the inputs that carry tangents. For an op declared with
``tangent="rule"`` the kernel is instead the transpose of its reverse rule (traced; the rule
is linear in the cotangents, so the transpose is its ``jax.vjp``): the tangent is then the
rule's own Jacobian, with its conventions, and the op's jitted kernel is a ``jax.custom_jvp``
with that tangent (:func:`rule_forward`), so JAX differentiating it anywhere follows the rule.
That is for ops whose kernel's JAX derivative is missing or follows another convention than
PyTorch's, which the rule encodes: ties of ``max(dim)``/``sort``/``mode`` (the tangent of the
selected element, not JAX's average), ``xlogy`` at 0, kernels JAX differentiates wrongly (the
Bessel functions' series; ``jnp.hypot``'s second derivative where ``|a| == |b|``), and
kernels JAX has no JVP for (``svd`` with full matrices, ``scatter_reduce``'s product,
``eig``'s eigenvectors). Applying a derived op like any op means
it is recorded on the autograd graph (``fg.grad`` of a tangent: reverse-over-forward) and has
tangents of its own (an outer level's: forward-over-forward). A derived op's reverse rule is
``jax.vjp`` of its kernel, itself a derived op, and so on, so every order is available and
every one is computed by JAX from the same forward kernel. Node names say what they are:
``MulJvpBackward0`` is the backward of ``mul``'s tangent computation.

:func:`propagate` runs after an op has made its outputs, while a dual level is open: for
each level (outermost first) at which an input is dual, it applies the jvp op to the inputs
and their tangents, with only the outer levels open (a level-``k`` tangent is dual at the
outer levels, never at its own: nested ``jax.jvp``), and attaches the result to the outputs.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from fgraph._kernel_jit import kernel_jit, placed, traced
from fgraph.autograd.forward_ad import attach, masked_to, open_levels, remember_result, tangent_at, tangents_of
from fgraph.autograd.grad_mode import _GRAD_ENABLED
from fgraph.tensor import Tensor, _wrap

__all__ = ["apply_dual", "run_dual", "propagate", "propagate_function", "jvp_op"]

_INEXACT: dict = {}


def _inexact(dtype: Any) -> bool:
    known = _INEXACT.get(dtype)
    if known is None:
        known = _INEXACT[dtype] = bool(jnp.issubdtype(dtype, jnp.inexact))
    return known


# -- derived kernels: pure JAX functions of the op's arrays ------------------------------------------
class JvpKernel:
    """``(*args, *tangents) -> tangents of the float outputs``: ``jax.jvp`` of ``forward`` in the inputs
    ``positions`` (the other arguments held as they are)."""

    __slots__ = ("name", "forward", "positions", "float_out", "n", "single", "_vjps", "__weakref__")

    def __init__(self, name: str, forward: Callable, positions: tuple, float_out: tuple, n: int,
                 single: bool) -> None:
        self.name, self.forward, self.positions, self.float_out, self.n = name, forward, positions, float_out, n
        self.single = single
        self._vjps: dict = {}  # positions -> VjpKernel

    def __call__(self, *arrays: Any) -> Any:
        args, tangents = arrays[: self.n], arrays[self.n:]
        restricted = _Restricted(self.forward, args, self.positions, self.float_out, self.single)
        _, out = jax.jvp(restricted, tuple(args[i] for i in self.positions), tuple(tangents))
        return out[0] if len(self.float_out) == 1 else out


class _Restricted:
    """``forward`` as a function of the arguments ``positions`` only, returning its float outputs only."""

    __slots__ = ("forward", "args", "positions", "float_out", "single")

    def __init__(self, forward: Callable, args: tuple, positions: tuple, float_out: tuple, single: bool) -> None:
        self.forward, self.args, self.positions, self.float_out, self.single = (
            forward, args, positions, float_out, single)

    def __call__(self, *values: Any) -> tuple:
        full = list(self.args)
        for i, v in zip(self.positions, values):
            full[i] = v
        out = self.forward(*full)
        outs = (out,) if self.single else tuple(out)
        return tuple(outs[j] for j in self.float_out)


class RuleJvpKernel:
    """``(*args, *tangents) -> tangents of the float outputs``: the transpose of ``op``'s reverse rule at ``args``
    (its linear map from the outputs' cotangents to the inputs' ``positions``), applied to the tangents."""

    __slots__ = ("name", "op", "params", "positions", "float_out", "n", "_vjps", "__weakref__")

    def __init__(self, name: str, op: Any, params: Any, positions: tuple, float_out: tuple, n: int) -> None:
        self.name, self.op, self.params, self.positions, self.float_out, self.n = (
            name, op, params, positions, float_out, n)
        self._vjps: dict = {}

    def __call__(self, *arrays: Any) -> Any:
        from fgraph.ops._declare import _traced_rule

        op, params, positions = self.op, self.params, self.positions
        args, tangents = arrays[: self.n], arrays[self.n:]
        out = rule_forward(op, params)(*args)  # differentiated by JAX (higher orders): through the rule
        single = op.num_outputs == 1
        outs = (out,) if single else tuple(out)
        in_meta = tuple((jnp.shape(a), jnp.result_type(a)) if i in positions else None for i, a in enumerate(args))
        needs = tuple(i in positions for i in range(self.n))
        out_meta = None if single else tuple((o.shape, o.dtype) for o in outs)
        saved = (args if op.save_inputs else ()) + (outs if op.save_result else ())

        def plain_vjp(*cts: Any) -> tuple:  # the rule in the plain convention: conj(torch's(conj(ct)))
            full: list = [None] * len(outs)
            for j, ct in zip(self.float_out, cts):
                full[j] = jnp.conj(ct)
            grads = _traced_rule(op, params, in_meta, needs, out_meta, *full, *saved)
            return tuple(jnp.conj(grads[i]) for i in positions)

        # The rule is linear in the cotangents, so its vjp at any point is its transpose. Not
        # jax.linear_transpose: rules test the cotangent (xlogy's `where(g == 0, ...)`), which is
        # linear piecewise only; ones keep every such test on its general branch.
        at = [jnp.ones(outs[j].shape, outs[j].dtype) for j in self.float_out]
        t_out = jax.vjp(plain_vjp, *at)[1](tuple(tangents))
        return t_out[0] if len(self.float_out) == 1 else tuple(t_out)


_RULE_FORWARDS: dict = {}  # (op, params) -> custom_jvp


def rule_forward(op: Any, params: Any) -> Callable:
    """``op``'s forward kernel as a JAX function whose JVP is :class:`RuleJvpKernel`: JAX differentiating a
    derived kernel of a ``tangent="rule"`` op follows the rule at every order, never the kernel."""
    key = (op, params)
    found = _RULE_FORWARDS.get(key)
    if found is None:
        found = jax.custom_jvp(functools.partial(op.forward, **params._asdict()) if params else op.forward)
        found.defjvp(functools.partial(_rule_forward_jvp, op, params))
        _RULE_FORWARDS[key] = found
    return found


def _rule_forward_jvp(op: Any, params: Any, primals: tuple, tangents: tuple) -> tuple:
    out = rule_forward(op, params)(*primals)
    outs = (out,) if op.num_outputs == 1 else tuple(out)
    positions = tuple(i for i, p in enumerate(primals) if p is not None and _inexact(jnp.result_type(p)))
    float_out = tuple(j for j, o in enumerate(outs) if _inexact(o.dtype))
    kernel = RuleJvpKernel(f"{op.name}_jvp", op, params, positions, float_out, len(primals))
    found = kernel(*primals, *(tangents[i] for i in positions))
    found = (found,) if len(float_out) == 1 else tuple(found)
    t_outs = [np.zeros(o.shape, jax.dtypes.float0) for o in outs]
    for j, t in zip(float_out, found):
        t_outs[j] = t
    return out, (t_outs[0] if op.num_outputs == 1 else tuple(t_outs))


class VjpKernel:
    """``(*args, *cotangents) -> cotangents of args[positions]``: ``jax.vjp`` of a derived kernel, in the
    rules' plain convention (no conjugation: :mod:`fgraph.ops._declare` applies PyTorch's around it)."""

    __slots__ = ("name", "fn", "positions", "n_out", "n", "_vjps", "__weakref__")

    def __init__(self, fn: Any, positions: tuple, n_out: int, n: int) -> None:
        self.name = fn.name + "_backward"
        self.fn, self.positions, self.n_out, self.n = fn, positions, n_out, n
        self._vjps: dict = {}

    def __call__(self, *arrays: Any) -> Any:
        args, cts = arrays[: self.n], arrays[self.n:]
        restricted = _Restricted(self.fn, args, self.positions, tuple(range(self.n_out)), self.n_out == 1)
        _, pullback = jax.vjp(restricted, *[args[i] for i in self.positions])
        out = pullback(tuple(cts))
        return out[0] if len(self.positions) == 1 else tuple(out)


def _run(*arrays: Any, fn: Callable) -> Any:
    return fn(*arrays)


# -- derived ops ---------------------------------------------------------------------------------------
_DEFS: dict = {}  # (name, single) -> OpDef


def _derived_def(name: str, single: bool) -> Any:
    """The OpDef that runs derived kernels named ``name`` (the kernel is its static parameter ``fn``)."""
    key = (name, single)
    found = _DEFS.get(key)
    if found is None:
        from fgraph.ops._declare import OpDef

        found = _DEFS[key] = OpDef(name, _run, _derived_rule, params=("fn",), save_inputs=True,
                                   num_outputs=1 if single else 0)
    return found


def _derived_rule(ctx: Any, g: Any) -> tuple:
    """The reverse rule of a derived op: ``jax.vjp`` of its kernel, applied as another derived op."""
    from fgraph.ops._declare import apply_op

    fn = ctx.params.fn
    positions = tuple(i for i, need in enumerate(ctx.needs) if need)
    grads = g if isinstance(g, tuple) else (g,)
    vjp = fn._vjps.get(positions)
    if vjp is None:
        vjp = fn._vjps[positions] = VjpKernel(fn, positions, len(grads), len(ctx.inputs))
    op = _derived_def(vjp.name, len(positions) == 1)
    out = apply_op(op, (*ctx.inputs, *grads), op.Params(vjp))
    out = (out,) if len(positions) == 1 else out
    result: list = [None] * len(ctx.inputs)
    for i, o in zip(positions, out):
        result[i] = o
    return tuple(result)


_KERNELS: dict = {}  # (op, params, positions, float_out, n) -> JvpKernel


def jvp_op(op: Any, params: Any, positions: tuple, float_out: tuple, n: int) -> tuple:
    """``(OpDef, params)`` computing the tangents of ``op``'s float outputs ``float_out`` from its ``n``
    arguments and the tangents of those at ``positions`` (cached per signature: compiled once)."""
    key = (op, params, positions, float_out, n)
    kernel = _KERNELS.get(key)
    if kernel is None and op.tangent == "rule":
        kernel = _KERNELS[key] = RuleJvpKernel(f"{op.name}_jvp", op, params, positions, float_out, n)
    elif kernel is None:
        forward = functools.partial(op.forward, **params._asdict()) if params else op.forward
        kernel = _KERNELS[key] = JvpKernel(f"{op.name}_jvp", forward, positions, float_out, n,
                                          op.num_outputs == 1)
    derived = _derived_def(kernel.name, len(float_out) == 1)
    return derived, derived.Params(kernel)


# -- one open level: value and tangent in one dispatch ----------------------------------------------------
class PairKernel:
    """``(*args, *tangents) -> (op's outputs, tangents of its float outputs or None)``: one jitted program
    for a dual op's value and tangent (the tangent is :func:`jvp_op`'s kernel, so it is the one recorded).
    ``derived`` caches, per output dtypes, the float outputs and the derived op that records the tangent."""

    __slots__ = ("op", "params", "positions", "n", "jitted", "derived")

    def __init__(self, op: Any, params: Any, positions: tuple, n: int) -> None:
        self.op, self.params, self.positions, self.n = op, params, positions, n
        self.jitted = kernel_jit(self._body)
        self.derived: dict = {}

    def _body(self, *arrays: Any) -> tuple:
        op = self.op
        out = traced(op.kernel(self.params))(*arrays[: self.n])  # in this pair's trace
        outs = (out,) if op.num_outputs == 1 else tuple(out)
        float_out = tuple(j for j, o in enumerate(outs) if _inexact(o.dtype))
        if not float_out:
            return out, None
        return out, jvp_op(op, self.params, self.positions, float_out, self.n)[1].fn(*arrays)

    def derived_for(self, outs: tuple) -> tuple:
        """``(float_out, derived op, its params)`` for output arrays ``outs`` (one array: a single output)."""
        key = outs.dtype if self.op.num_outputs == 1 else tuple(o.dtype for o in outs)
        found = self.derived.get(key)
        if found is None:
            dtypes = (key,) if self.op.num_outputs == 1 else key
            float_out = tuple(j for j, d in enumerate(dtypes) if _inexact(d))
            found = self.derived[key] = (float_out, *jvp_op(self.op, self.params, self.positions, float_out, self.n))
        return found


_PAIRS: dict = {}  # (op, params, positions, n) -> PairKernel
_RECORD: list = []  # fgraph.ops._declare._record, imported on first use (it imports this module)


def apply_dual(op: Any, args: tuple, arrays: list, params: Any, edges: tuple, recording: bool) -> Any:
    """``op`` on ``args`` with its tangent attached, both from one dispatch, when exactly one level is open and
    an input is dual at it (:func:`fgraph.ops._declare.apply_op`'s arrays and edges); else ``None``."""
    levels = open_levels()
    if len(levels) != 1 or not op.differentiable or op.rule is None:
        return None
    level = levels[0]
    positions, tangents = [], []
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            t = tangent_at(a, level)
            if t is not None:
                positions.append(i)
                tangents.append(t)
    if not positions:
        return None
    return run_dual(op, args, arrays, params, edges, recording, level, tuple(positions), tangents)


def apply_dual_tensors(op: Any, args: tuple, params: Any) -> Any:
    """:func:`apply_dual` for ``args`` that are all Tensors (the lean one- and two-input paths of
    :mod:`fgraph.ops._declare`), without building the generic path's lists first; ``None`` as there."""
    levels = open_levels()
    if len(levels) != 1 or not op.differentiable or op.rule is None:
        return None
    level = levels[0]
    positions = []
    tangents = []
    arrays = []
    edges = []
    recording = False
    for i, a in enumerate(args):
        t = tangent_at(a, level)
        if t is not None:
            positions.append(i)
            tangents.append(t)
        arrays.append(a._array)
        edge = a._edge
        edges.append(edge)
        if edge is not None:
            recording = True
    if not positions:
        return None
    return run_dual(op, args, arrays, params, tuple(edges), recording, level, tuple(positions), tangents)


def run_dual(op: Any, args: tuple, arrays: list, params: Any, edges: tuple, recording: bool, level: Any,
             positions: tuple, tangents: list) -> Any:
    """:func:`apply_dual` once the dual inputs are known: ``tangents`` (Tensors) of ``args[positions]``."""
    key = (op, params, positions, len(args))
    pair = _PAIRS.get(key)
    if pair is None:
        pair = _PAIRS[key] = PairKernel(*key)
    t_arrays = [t._array for t in tangents]
    try:
        out, t_out = placed(pair.jitted)(*arrays, *t_arrays)
    except (TypeError, ValueError, IndexError):
        return None  # the plain path explains the error
    if not _RECORD:
        from fgraph.ops._declare import _record

        _RECORD.append(_record)
    record = _RECORD[0]
    grad_on = _GRAD_ENABLED.get()
    if recording and grad_on:
        result = record(op, args, arrays, params, edges, out)
    else:
        result = _wrap(out) if op.num_outputs == 1 else tuple([_wrap(o) for o in out])
    if t_out is None:
        return result
    float_out, derived, derived_params = pair.derived_for(out)
    tangent_recorded = recording
    if grad_on and not recording:
        for t in tangents:
            if t._edge is not None:
                tangent_recorded = True
                break
    if grad_on and tangent_recorded:
        t_edges = (*edges, *[t._edge for t in tangents])
        t_result = record(derived, (*args, *tangents), [*arrays, *t_arrays], derived_params, t_edges, t_out)
    else:
        t_result = _wrap(t_out) if len(float_out) == 1 else tuple([_wrap(t) for t in t_out])
    if op.num_outputs == 1:  # the common case, without the tuples
        tangents = {level: t_result}
        attach(result, tangents)
        if op.save_result and result.grad_fn is not None:
            remember_result(result.grad_fn, 0, tangents)
        return result
    _attach_tangents(op, result, float_out, level, t_result, fresh=True)
    return result


def _attach_tangents(op: Any, outs: tuple, float_out: tuple, level: Any, t_out: Any, fresh: bool = False) -> None:
    """Give ``outs[float_out]`` their tangents ``t_out`` at ``level`` (``fresh``: they have none yet)."""
    t_out = t_out if isinstance(t_out, tuple) else (t_out,)
    for j, t in zip(float_out, t_out):
        out = outs[j]
        tangents = {level: t} if fresh else {**(tangents_of(out) or {}), level: t}
        attach(out, tangents)
        if op.save_result and out.grad_fn is not None:  # its rule reads the result: keep its tangent
            remember_result(out.grad_fn, out.output_nr, tangents)


# -- propagation ---------------------------------------------------------------------------------------
def propagate(op: Any, args: tuple, params: Any, result: Any) -> Any:
    """Attach to ``result`` (``op``'s output, or tuple of outputs) its tangents at every open level."""
    levels = open_levels()
    if not levels or not op.differentiable:
        return result
    outs = result if isinstance(result, tuple) else (result,)
    for k, level in enumerate(levels):
        positions = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor) and tangent_at(a, level) is not None)
        if not positions:
            continue
        float_out = tuple(j for j, o in enumerate(outs) if _inexact(o.dtype))
        if not float_out:  # integer and bool outputs carry no tangent
            continue
        if op.rule is None:
            raise RuntimeError(
                f"the derivative for '{op.name}' is not implemented, so its output has no tangent; a dual input "
                f"reached it (forward-mode AD). Detach that input or use a differentiable op.")
        derived, derived_params = jvp_op(op, params, positions, float_out, len(args))
        tangents = [tangent_at(args[i], level) for i in positions]
        from fgraph.ops._declare import apply_op

        with masked_to(levels[:k]):
            t_out = apply_op(derived, (*args, *tangents), derived_params)
        _attach_tangents(op, outs, float_out, level, t_out)
    return result


def propagate_function(cls: Any, ctx: Any, args: tuple, outputs: tuple, levels: tuple) -> None:
    """A custom Function's tangents: its ``jvp(ctx, *tangents)`` at every level at which an input is dual."""
    for k, level in enumerate(levels):
        tangents = [tangent_at(a, level) if isinstance(a, Tensor) else None for a in args]
        if all(t is None for t in tangents):
            continue
        if cls.jvp is _base_jvp():
            cls.jvp(ctx)  # raises: the Function has no jvp
        tangents = [_zeros_like(a) if isinstance(a, Tensor) and t is None else t for a, t in zip(args, tangents)]
        ctx._fg_in_jvp = True
        try:
            with masked_to(levels[:k]):
                out = cls.jvp(ctx, *tangents)
        finally:
            ctx._fg_in_jvp = False
        out = out if isinstance(out, tuple) else (out,)
        if len(out) != len(outputs):
            raise RuntimeError(f"function {cls.__name__}.jvp returned {len(out)} tangents for {len(outputs)} outputs; "
                               "return one per output of forward (None for one that has none).")
        for o, t in zip(outputs, out):
            if t is not None and isinstance(o, Tensor) and _inexact(o.dtype):
                if not isinstance(t, Tensor) or t.shape != o.shape:
                    got = t.shape if isinstance(t, Tensor) else type(t).__name__
                    raise RuntimeError(f"function {cls.__name__}.jvp returned a tangent of shape {got} for an output "
                                       f"of shape {o.shape}; it must match its output.")
                attach(o, {**(tangents_of(o) or {}), level: t})


def _base_jvp() -> Any:
    from fgraph.autograd.function import Function

    return Function.jvp


def _zeros_like(t: Tensor) -> Tensor:
    from fgraph.tensor import _wrap

    return _wrap(jnp.zeros(t.shape, t.dtype))
