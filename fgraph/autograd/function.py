"""Custom autograd Functions: your own forward and backward, recorded as one graph node.

A :class:`Function` subclass defines a static ``forward`` and a static
``backward``; ``MyFn.apply(*args)`` runs ``forward`` under ``no_grad`` and, when
an input requires grad, records one node named ``MyFnBackward`` whose ``apply``
calls your ``backward``. This is PyTorch's ``torch.autograd.Function``:

* ``forward(ctx, *args, **kwargs)``, or ``forward(*args, **kwargs)`` plus
  ``setup_context(ctx, inputs, output)``;
* ``ctx.save_for_backward(*tensors)`` / ``ctx.saved_tensors``,
  ``ctx.needs_input_grad``, ``ctx.mark_non_differentiable(*outputs)``,
  ``ctx.set_materialize_grads(bool)`` and any attributes of your own;
* ``backward(ctx, *grad_outputs)`` returns one gradient per positional input
  (``None`` for inputs that are not Tensors or need no gradient);
* for forward-mode AD, ``jvp(ctx, *tangents)`` returns one tangent per output from one
  per positional input (zeros for a Tensor without one, ``None`` for other inputs), reading
  what ``ctx.save_for_forward(*tensors)`` kept through ``ctx.saved_tensors``.

``backward`` runs with grad mode as the engine set it: on under
``create_graph=True``, so a backward written in fgraph ops is differentiable
again for free. Decorate it with :func:`once_differentiable` when it is not.

Example:
    >>> import fgraph as fg
    >>> class Cube(fg.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x * x
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return g * 3.0 * x * x
    >>> x = fg.tensor(2.0, requires_grad=True)
    >>> y = Cube.apply(x)
    >>> y.grad_fn.name()
    'CubeBackward'
    >>> (g,) = fg.grad(y, [x], create_graph=True)
    >>> (gg,) = fg.grad(g, [x])
    >>> g.item(), gg.item()
    (12.0, 12.0)
"""
from __future__ import annotations

import functools
import inspect
import weakref
from typing import Any, Callable, Optional, Sequence, TypeVar

import jax
import jax.numpy as jnp

from fgraph._dtypes import is_differentiable_dtype
from fgraph.autograd._forward_rules import propagate_function
from fgraph.autograd._record_state import RECORD_EXTRAS
from fgraph.autograd.forward_ad import masked_to, open_levels
from fgraph.autograd.anomaly import forward_stack
from fgraph.autograd.grad_mode import _GRAD_ENABLED
from fgraph.autograd.graph import GradientEdge, Node, next_sequence_nr
from fgraph.autograd.saved_tensors import Packed, pack_saved
from fgraph.errors import GradError
from fgraph.tensor import Tensor, _wrap, _wrap_output

__all__ = ["Function", "FunctionCtx", "FunctionBackward", "once_differentiable"]

F = TypeVar("F", bound=Callable[..., Any])

_ONCE_MESSAGE = "trying to differentiate twice a function that was marked with @once_differentiable"


class FunctionCtx:
    """The ``ctx`` a :class:`Function`'s ``forward`` and ``backward`` share.

    Set any attribute you like on it (``ctx.dim = dim``). Tensors for backward go
    through :meth:`save_for_backward`: they are kept by the graph node, not by the
    ctx, so they live exactly as long as the graph does.

    Example:
        >>> import fgraph as fg
        >>> class Scale(fg.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x, factor):
        ...         ctx.factor = factor
        ...         return x * factor
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         return g * ctx.factor, None
        >>> x = fg.tensor([1.0, 2.0], requires_grad=True)
        >>> fg.grad(Scale.apply(x, 3.0).sum(), [x])[0].tolist()
        [3.0, 3.0]
    """

    def __init__(self) -> None:
        self._fg_to_save: Optional[tuple] = None
        self._fg_for_forward: Optional[tuple] = None  # save_for_forward's; saved_tensors inside jvp
        self._fg_in_jvp = False
        self._fg_node_ref: Optional[weakref.ref] = None
        self._fg_non_differentiable: tuple = ()
        self._fg_materialize = True
        #: One bool per positional input: is it a Tensor that requires grad?
        self.needs_input_grad: tuple[bool, ...] = ()

    def save_for_backward(self, *tensors: Optional[Tensor]) -> None:
        """Keep ``tensors`` (Tensors or ``None``) for ``backward``; call it once, in forward/setup_context."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    f"save_for_backward can only save Tensors or None, but argument {i} is a {type(t).__name__}; "
                    "keep other values as ctx attributes (ctx.name = value)."
                )
        self._fg_to_save = tensors

    def save_for_forward(self, *tensors: Optional[Tensor]) -> None:
        """Keep ``tensors`` for ``jvp`` (forward-mode AD), where ``ctx.saved_tensors`` returns them."""
        self._fg_for_forward = tensors

    @property
    def saved_tensors(self) -> tuple[Optional[Tensor], ...]:
        """The tensors given to :meth:`save_for_backward`, as they were saved.

        A saved output comes back as a record whose ``grad_fn`` is this Function's
        node (so double backward flows through it); saved inputs are the records
        that were passed in.
        """
        if self._fg_in_jvp:
            return tuple(self._fg_for_forward or ())
        ref = self._fg_node_ref
        if ref is None:  # still in forward/setup_context, or nothing was recorded
            return tuple(self._fg_to_save or ())
        node = ref()
        if node is None:
            raise RuntimeError(
                "saved_tensors: the graph of this Function no longer exists (its outputs were freed), so "
                "its saved tensors are gone; keep the outputs alive while you need the ctx."
            )
        return node.saved_tensors

    def mark_non_differentiable(self, *outputs: Tensor) -> None:
        """Mark outputs (the objects ``forward`` returns) as not requiring grad.

        ``backward`` still receives a gradient slot for them (zeros, or ``None``
        with ``set_materialize_grads(False)``).
        """
        self._fg_non_differentiable = tuple(self._fg_non_differentiable) + tuple(outputs)

    def set_materialize_grads(self, value: bool) -> None:
        """With ``False``, ``backward`` sees ``None`` for outputs that got no gradient (default: zeros)."""
        self._fg_materialize = bool(value)

    def mark_dirty(self, *tensors: Tensor) -> None:
        """Not supported: fgraph tensors are immutable, so there are no in-place ops to mark."""
        raise RuntimeError(
            "mark_dirty: fgraph tensors are immutable records and cannot be modified in place; "
            "return a new tensor from forward instead."
        )


class _SavedOutput:
    """A saved output of the Function, kept as its raw array: the node never holds its outputs."""

    __slots__ = ("index", "data")

    def __init__(self, index: int, data: Any) -> None:
        self.index = index
        self.data = data


class FunctionBackward(Node):
    """Base of the node each :class:`Function` subclass records (``MyFnBackward``).

    ``ctx`` is the Function's :class:`FunctionCtx`; ``in_meta[i]`` is
    ``(shape, dtype)`` of positional input ``i`` if it is a Tensor, else ``None``;
    ``out_meta[j]`` likewise for output ``j``.
    """

    __slots__ = ("num_inputs", "ctx", "in_meta", "out_meta", "_saved")
    _function: type

    def __init__(self, ctx: FunctionCtx, next_edges: Sequence[Optional[GradientEdge]], in_meta: tuple,
                 out_meta: tuple) -> None:
        self._set_edges(tuple(next_edges), next_sequence_nr())
        self.num_inputs = len(out_meta)
        self.ctx = ctx
        self.in_meta = in_meta
        self.out_meta = out_meta
        self._saved: tuple = ()

    @property
    def saved_tensors(self) -> tuple[Optional[Tensor], ...]:
        """The Function's saved tensors (saved outputs rewrapped as outputs of this node)."""
        result = []
        for entry in self._saved:
            if type(entry) is _SavedOutput:
                data = entry.data.get()._array if type(entry.data) is Packed else entry.data
                result.append(_wrap_output(data, self, entry.index))
            else:
                result.append(entry.get() if type(entry) is Packed else entry)
        return tuple(result)

    def apply(self, grad_outputs: Sequence[Optional[Tensor]], needs: Optional[tuple[bool, ...]]) -> tuple:
        fn = self._function
        ctx = self.ctx
        grads = list(grad_outputs)
        if ctx._fg_materialize:
            for i, meta in enumerate(self.out_meta):
                if grads[i] is None and meta is not None:
                    grads[i] = _wrap(jnp.zeros(meta[0], meta[1]))
        if _overrides(fn, "backward"):
            if _overrides(fn, "vjp"):
                raise RuntimeError(
                    f"function {fn.__name__}: implementing both 'backward' and 'vjp' for a custom Function is not "
                    "allowed. You should only implement one of them."
                )
            backward = fn.backward
        else:
            backward = fn.vjp
        return _check_grads(self, backward(ctx, *grads), needs)


def _overrides(cls: type, name: str) -> bool:
    return getattr(cls, name) is not getattr(Function, name)


def _check_grads(node: FunctionBackward, result: Any, needs: Optional[tuple]) -> tuple:
    """Validate what ``backward`` returned and bring each gradient to its input's shape and dtype."""
    from fgraph.ops._broadcast import reduce_grad

    name = node.name()
    if result is None or isinstance(result, Tensor):
        result = (result,)
    elif not isinstance(result, (tuple, list)):
        raise TypeError(
            f"function {name}: backward must return a Tensor, None, or a tuple of them (one per forward input), "
            f"got a {type(result).__name__}."
        )
    expected = len(node.next_edges)
    if len(result) > expected and all(g is None for g in result[expected:]):
        result = result[:expected]  # extra trailing Nones are allowed, as in PyTorch
    if len(result) != expected:
        raise GradError(
            f"function {name} returned an incorrect number of gradients (expected {expected}, got {len(result)}); "
            "backward must return one gradient per positional input of forward (None where there is none)."
        )
    out = []
    for i, (g, edge, meta) in enumerate(zip(result, node.next_edges, node.in_meta)):
        if meta is None:
            if g is not None:
                raise GradError(
                    f"function {name} returned a gradient different than None at position {i + 1}, but the "
                    "corresponding forward input was not a Tensor; return None for it."
                )
            out.append(None)
            continue
        if g is None or edge is None or (needs is not None and not needs[i]):
            out.append(None)
            continue
        if not isinstance(g, Tensor):
            raise TypeError(
                f"function {name} returned a {type(g).__name__} as the gradient at index {i}; "
                "gradients must be fgraph Tensors (or None)."
            )
        shape, dtype = meta
        if g.shape != shape and not _sums_to(g.shape, shape):
            raise GradError(
                f"Function {name} returned an invalid gradient at index {i} - got {list(g.shape)} but expected "
                f"shape compatible with {list(shape)} (the shape of forward input {i})."
            )
        out.append(reduce_grad(g, shape, dtype))
    return tuple(out)


def _sums_to(gshape: tuple, shape: tuple) -> bool:
    """Whether a gradient of ``gshape`` is a broadcast of ``shape`` (so it can be summed back)."""
    lead = len(gshape) - len(shape)
    return lead >= 0 and all(s == 1 or s == gs for s, gs in zip(shape, gshape[lead:]))


class Function:
    """Base class of custom differentiable operations (``torch.autograd.Function``).

    Subclass it with static ``forward`` and ``backward`` methods and call
    ``MyFn.apply(*args)``. See the module docstring for the full contract.

    Example:
        >>> import fgraph as fg
        >>> class Exp(fg.autograd.Function):
        ...     @staticmethod
        ...     def forward(x):
        ...         return fg.exp(x)
        ...     @staticmethod
        ...     def setup_context(ctx, inputs, output):
        ...         ctx.save_for_backward(output)
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         (y,) = ctx.saved_tensors
        ...         return g * y
        >>> x = fg.tensor([0.0, 1.0], requires_grad=True)
        >>> [round(v, 4) for v in fg.grad(Exp.apply(x).sum(), [x])[0].tolist()]
        [1.0, 2.7183]
    """

    _backward_cls: type = FunctionBackward

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._backward_cls = type(
            f"{cls.__name__}Backward",
            (FunctionBackward,),
            {"__slots__": (), "_function": cls, "__module__": cls.__module__},
        )
        cls._signature_cache = None

    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        """``forward(ctx, *args)`` (or ``forward(*args)`` with :meth:`setup_context`): the outputs."""
        raise NotImplementedError("You must implement the forward function for a custom fgraph.autograd.Function.")

    @staticmethod
    def setup_context(ctx: FunctionCtx, inputs: tuple, output: Any) -> None:
        """Optional: fill ``ctx`` from the inputs and the output of a ``forward`` that takes no ctx."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Any) -> Any:
        """Gradients of the inputs from the gradients of the outputs (one per positional input)."""
        raise NotImplementedError(
            "You must implement either the backward or the vjp method of your custom fgraph.autograd.Function "
            "to use it with backward mode AD."
        )

    vjp = backward

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run ``forward`` under ``no_grad`` and record a ``<Name>Backward`` node if an input requires grad."""
        setup = _overrides(cls, "setup_context")
        if kwargs or setup:
            args, kwargs = _bind(cls, args, kwargs, setup)
        recording = _GRAD_ENABLED.get()
        edges = []
        in_meta = []
        needs = []
        any_edge = False
        for a in args:
            if isinstance(a, Tensor):
                edge = a._edge if recording else None
                edges.append(edge)
                in_meta.append((a.shape, a.dtype))
                needs.append(edge is not None)
                any_edge = any_edge or edge is not None
            else:
                edges.append(None)
                in_meta.append(None)
                needs.append(False)
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(needs)
        levels = open_levels()
        token = _GRAD_ENABLED.set(False)
        try:
            with masked_to(()):  # forward sees primals; the tangents come from jvp
                if setup:
                    output = cls.forward(*args, **kwargs)
                    cls.setup_context(ctx, args, output)
                else:
                    output = cls.forward(ctx, *args, **kwargs)
        finally:
            _GRAD_ENABLED.reset(token)
        is_tuple = isinstance(output, tuple)
        outputs = output if is_tuple else (output,)
        _check_outputs(cls, outputs)
        if any_edge:
            result = _record(cls, ctx, args, tuple(edges), tuple(in_meta), outputs)
        else:
            result = tuple([_plain(o) for o in outputs])
            ctx._fg_to_save = None
        ctx._fg_non_differentiable = ()
        if levels:
            propagate_function(cls, ctx, args, result, levels)
        return result if is_tuple else result[0]

    @staticmethod
    def jvp(ctx: FunctionCtx, *tangents: Any) -> Any:
        """Tangents of the outputs from the tangents of the inputs (forward-mode AD), one per output."""
        raise NotImplementedError(
            "You must implement the jvp function for custom fgraph.autograd.Function to use it with forward mode "
            "AD (jvp(ctx, *tangents) returns one tangent per output; ctx.save_for_forward keeps what it needs).")


def _bind(cls: type, args: tuple, kwargs: dict, setup: bool) -> tuple[tuple, dict]:
    """Bind keyword arguments to ``forward``'s positional parameters where possible (and defaults with
    ``setup_context``, as PyTorch does), so they get gradient slots."""
    sig = cls.__dict__.get("_signature_cache")
    if sig is None:
        sig = inspect.signature(cls.forward)
        cls._signature_cache = sig
    try:
        if setup:
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            return tuple(bound.args), dict(bound.kwargs)
        bound = sig.bind(None, *args, **kwargs)  # None stands for ctx
        return tuple(bound.args[1:]), dict(bound.kwargs)
    except TypeError as exc:
        raise TypeError(f"{cls.__name__}.apply: {exc} (forward's signature is {sig})") from None


def _check_outputs(cls: type, outputs: tuple) -> None:
    for i, o in enumerate(outputs):
        if isinstance(o, (jax.Array, jax.core.Tracer)):
            raise TypeError(
                f"{cls.__name__}.forward returned a jax.Array as output {i}; wrap it in an fgraph Tensor "
                "(fg.tensor(array) or fgraph.tensor._wrap) so it can take part in the graph."
            )


def _plain(o: Any) -> Any:
    """An output with no graph: a fresh record if ``o`` carries one, else ``o`` itself."""
    if isinstance(o, Tensor) and o._edge is not None:
        return _wrap(o._array)
    return o


def _record(cls: type, ctx: FunctionCtx, args: tuple, edges: tuple, in_meta: tuple, outputs: tuple) -> tuple:
    non_diff = ctx._fg_non_differentiable
    out_meta = []
    differentiable = []
    for o in outputs:
        if isinstance(o, Tensor):
            out_meta.append((o.shape, o.dtype))
            differentiable.append(is_differentiable_dtype(o.dtype) and not any(o is m for m in non_diff))
        else:
            out_meta.append(None)
            differentiable.append(False)
    node = cls._backward_cls(ctx, edges, in_meta, tuple(out_meta))
    result = []
    for i, o in enumerate(outputs):
        if differentiable[i]:
            result.append(_wrap_output(o._array, node, i))  # always a new record, even if `o` is an input
        else:
            result.append(_plain(o))
    saved = []
    for t in ctx._fg_to_save or ():
        entry: Any = t
        if t is not None and not any(t is a for a in args):
            for j, o in enumerate(outputs):
                if t is o:
                    entry = _SavedOutput(j, t._array) if differentiable[j] else result[j]
                    break
        saved.append(entry)
    extras = RECORD_EXTRAS.get()
    if extras is not None:
        saved = _apply_record_extras(node, saved, extras)
    node._saved = tuple(saved)
    ctx._fg_to_save = None
    ctx._fg_node_ref = weakref.ref(node)
    return tuple(result)


def _apply_record_extras(node: FunctionBackward, saved: list, extras: Any) -> list:
    """Saved-tensor hooks pack what the node saves; anomaly mode records the forward stack."""
    if extras.anomaly is not None:
        node.metadata["traceback_"] = forward_stack()
    if extras.saved_hooks is None:
        return saved
    packed = []
    for entry in saved:
        if type(entry) is _SavedOutput:
            (value,) = pack_saved((_wrap(entry.data),), extras.saved_hooks)
            value.edge = None  # the node's own output: re-attached to the node at backward
            entry = _SavedOutput(entry.index, value)
        elif isinstance(entry, Tensor):
            (entry,) = pack_saved((entry,), extras.saved_hooks)
        packed.append(entry)
    return packed


# -- once_differentiable ---------------------------------------------------------------------------
class DelayedError(Node):
    """Grad_fn of the results of a :func:`once_differentiable` backward: differentiating them raises."""

    __slots__ = ("num_inputs", "message")

    def __init__(self, message: str, next_edges: Sequence[GradientEdge], num_outputs: int) -> None:
        self._set_edges(tuple(next_edges), next_sequence_nr())
        self.num_inputs = num_outputs
        self.message = message

    def apply(self, grad_outputs: Sequence[Optional[Tensor]], needs: Optional[tuple[bool, ...]]) -> tuple:
        raise GradError(self.message)


def once_differentiable(fn: F) -> F:
    """Decorate a Function's ``backward`` that cannot itself be differentiated.

    It runs under ``no_grad``. Under ``create_graph=True`` its results get a
    ``DelayedError`` node, so differentiating them again raises a clear error
    instead of silently returning a wrong (zero) second derivative.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.autograd.function import once_differentiable
        >>> class Square(fg.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x * x
        ...     @staticmethod
        ...     @once_differentiable
        ...     def backward(ctx, g):
        ...         (x,) = ctx.saved_tensors
        ...         return g * 2.0 * x
        >>> x = fg.tensor(3.0, requires_grad=True)
        >>> fg.grad(Square.apply(x), [x])[0].item()
        6.0
    """

    @functools.wraps(fn)
    def wrapper(ctx: FunctionCtx, *grad_outputs: Any) -> Any:
        token = _GRAD_ENABLED.set(False)
        try:
            outputs = fn(ctx, *grad_outputs)
        finally:
            _GRAD_ENABLED.reset(token)
        if not _GRAD_ENABLED.get():
            return outputs
        edges = [g._edge for g in grad_outputs if isinstance(g, Tensor) and g._edge is not None]
        node = ctx._fg_node_ref() if ctx._fg_node_ref is not None else None
        label = "backward"
        if node is not None:
            edges.extend(e for e in node.next_edges if e is not None)
            label = node.name()
        if not edges:
            return outputs
        single = not isinstance(outputs, (tuple, list))
        items = (outputs,) if single else tuple(outputs)
        err = DelayedError(f"{label}: {_ONCE_MESSAGE}", edges, len(items))
        wrapped = tuple(
            _wrap_output(o._array, err, i) if isinstance(o, Tensor) and is_differentiable_dtype(o.dtype) else o
            for i, o in enumerate(items)
        )
        return wrapped[0] if single else wrapped

    return wrapper  # type: ignore[return-value]
