"""The Tensor record (its creation functions are in ``fgraph/_tensor_creation.py``, re-exported here).

A :class:`Tensor` is an immutable record around a ``jax.Array`` (or a JAX tracer
while traced). Its autograd fields are ``requires_grad``, ``grad_fn`` and
``output_nr``; ``is_leaf`` is derived. Every op returns a new record.

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([1.0, 2.0], requires_grad=True)
    >>> y = x * 3
    >>> y
    tensor([3., 6.], grad_fn=<MulBackward0>)
    >>> y.is_leaf, x.is_leaf
    (False, True)
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence
from weakref import ref as _weakref
from warnings import warn as _warn

import jax
import jax.numpy as jnp
import numpy as np

from fgraph._checks import array_ufunc, check_bool, index_of, traced_read
from fgraph._dtypes import default_float_dtype, host_for_jax, is_differentiable_dtype, x64_enabled
from fgraph.autograd.graph import AccumulateGrad, GradientEdge, Node, RemovableHandle, make_edge
from fgraph.device import device_of
from fgraph.lazy import _array as _lazy_array
from fgraph.lazy._array import LazyArray

__all__ = [
    "Tensor",
    "tensor",
    "as_tensor",
    "zeros",
    "ones",
    "full",
    "arange",
    "zeros_like",
    "ones_like",
    "full_like",
]

_new_object = object.__new__


class Tensor:
    """An immutable n-dimensional array that can take part in the backward graph.

    Fields: ``array`` (the raw ``jax.Array``; a JAX tracer while traced), ``grad_fn`` (the
    :class:`Node` that made it, ``None`` for leaves), ``output_nr`` (which output of ``grad_fn``
    it is). ``data`` is PyTorch's: a detached Tensor (``x.detach()``), not the array.
    Assigning any attribute raises ``AttributeError``.

    ``Tensor(data, requires_grad=False)`` makes a leaf, with ``torch.Tensor``'s dtype rule: NumPy arrays,
    lists and tuples become the default float dtype (``fg.Tensor(np.array([1, 2]))`` is float32, as are
    float64 arrays), while Tensors, JAX arrays and torch tensors keep theirs. ``Tensor(2, 3)`` (ints) is
    torch's size form: zeros of that shape. ``fg.tensor(data)`` infers the dtype from the data instead.
    """

    __slots__ = ("_array", "grad_fn", "output_nr", "_edge", "__weakref__")
    __array_priority__ = 1000
    __array_ufunc__ = array_ufunc  # arr + t gives a Tensor; np.exp(t) on a tensor that requires grad raises

    _array: Any  # the array, or the placeholder of a value deferred dispatch holds pending (read .array)
    grad_fn: Optional[Node]
    output_nr: int

    def __init__(self, *data: Any, requires_grad: bool = False) -> None:
        if len(data) == 1 and isinstance(data[0], Tensor):
            _init_leaf(self, data[0]._array, requires_grad)
        else:
            _init_leaf(self, _constructor_array(data), requires_grad)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Tensor is immutable: cannot assign '{name}'. " + _ASSIGN_HINTS.get(
            name, "Ops return new tensors; use detach(), requires_grad_(), or an op to make a new record."))

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup fails, never on the hot path: point PyTorch habits to the fgraph way.
        raise AttributeError(_missing_attribute(type(self), name), name=name, obj=self)

    def __setitem__(self, index: Any, value: Any) -> None:
        raise TypeError(
            "Tensor does not support item assignment (x[...] = v): fgraph tensors are immutable. Make a new "
            "tensor and rebind the name: x = x.at[idx].set(v) (x = x.at[idx].add(v) for x[idx] += v; also "
            ".mul, .min, .max), or x = x.index_put((fg.tensor([i]),), v) (also fg.index_put; "
            "accumulate=True for x[...] += v), x = fg.where(mask, v, x) or x = x.masked_fill(mask, v)."
        )

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Tensor is immutable: cannot delete '{name}'.")

    # -- derived fields ----------------------------------------------------------------
    @property
    def array(self) -> jax.Array:
        """The raw ``jax.Array`` (a JAX tracer while traced).

        Under deferred dispatch (``fg.lazy.set_deferred(True)``) a value may still be pending; reading
        ``array`` runs what is pending first, so it is always a ``jax.Array`` (fgraph's own code reads the
        pending placeholder, ``_array``, and keeps recording).

        Example:
            >>> import jax, fgraph as fg
            >>> isinstance((fg.tensor([1.0, 2.0]) * 2).array, jax.Array)
            True
        """
        a = self._array
        return a.value() if type(a) is LazyArray else a

    @property
    def data(self) -> "Tensor":
        """PyTorch's ``x.data``: a new leaf with the same values, off the graph (``x.detach()``).

        The raw ``jax.Array`` is ``x.array``.

        Example:
            >>> import fgraph as fg
            >>> x = fg.tensor([1.0, 3.0], requires_grad=True)
            >>> d = (x * 2).data
            >>> d.tolist(), d.requires_grad, d.grad_fn is None, d.is_leaf
            ([2.0, 6.0], False, True, True)
        """
        return self.detach()

    @property
    def requires_grad(self) -> bool:
        return self._edge is not None

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def shape(self) -> tuple[int, ...]:
        return self._array.shape

    def size(self, dim: Optional[int] = None) -> Any:
        return self.shape if dim is None else self.shape[dim]

    @property
    def dtype(self) -> np.dtype:
        return self._array.dtype

    @property
    def ndim(self) -> int:
        return self._array.ndim

    def dim(self) -> int:
        return self._array.ndim

    def numel(self) -> int:
        return int(self._array.size)

    @property
    def device(self) -> Any:
        """The :class:`fgraph.device` holding the data (``device(type='cpu')``, ``device(type='cuda', index=0)``;
        the first device of a sharded array; JAX's default device while traced, where the compiler places
        values). The JAX device itself is ``x.device.jax_device`` (or ``x.array.devices()``)."""
        return device_of(self._array)

    @property
    def is_cuda(self) -> bool:
        """Whether the data is on a GPU (``x.device.type == 'cuda'``)."""
        return device_of(self._array).type == "cuda"

    def __len__(self) -> int:
        if self._array.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._array.shape[0]

    def __iter__(self) -> Any:
        if self._array.ndim == 0:
            raise TypeError("iteration over a 0-d tensor: it has no rows; read its value with t.item().")
        return (self[i] for i in range(self._array.shape[0]))

    # -- leaving the graph -----------------------------------------------------------------
    def detach(self) -> "Tensor":
        """A new leaf with the same data that does not require grad (traced: ``lax.stop_gradient``
        too, so a fused create_graph pass, ``jax.vjp`` of the rules, sees the cut as node by node)."""
        data = self._array
        return _wrap(jax.lax.stop_gradient(data) if isinstance(data, jax.core.Tracer) else data)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Return a new leaf with the same data and the given ``requires_grad``.

        Unlike PyTorch this does not modify ``self`` (records are immutable).
        """
        if self.grad_fn is not None:
            raise RuntimeError(
                "requires_grad_: only leaf tensors can be re-marked; call detach() first "
                "to make a leaf from a computed tensor."
            )
        out = _new_object(Tensor)
        _init_leaf(out, self._array, requires_grad)
        return out

    def numpy(self) -> np.ndarray:
        """The data as a NumPy array (not available while traced)."""
        if isinstance(self._array, jax.core.Tracer):
            raise traced_read("numpy()")
        return np.asarray(self._array)

    def tolist(self) -> Any:
        return self.numpy().tolist()

    def item(self) -> Any:
        """The value of a one-element tensor as a Python scalar."""
        if self._array.size != 1:
            raise ValueError(f"item(): tensor has {self.array.size} elements, expected 1 (shape {self.shape}).")
        if isinstance(self._array, jax.core.Tracer):
            raise traced_read("item()")
        return self.numpy().reshape(()).item()

    def __jax_array__(self) -> jax.Array:
        """The data, so ``jnp.sin(t)``, ``jnp.asarray(t)`` take a Tensor; the result is an array, off the graph."""
        return self._array

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Optional[bool] = None) -> Any:
        """Export the data through DLPack (zero-copy where JAX allows); a Tensor that requires grad warns."""
        if isinstance(self._array, jax.core.Tracer):
            raise TypeError("__dlpack__: this tensor is traced (inside jax.jit, vmap or fg.compile) and has no "
                            "buffer to share; export the tensors the traced function returns.")
        if self._edge is not None:
            _warn("__dlpack__: exporting a tensor that requires grad shares its values only; the autograd graph is "
                  "not carried, so gradients will not flow back to it. Export t.detach() to silence this warning.",
                  UserWarning, stacklevel=2)
        return self._array.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple:
        return self._array.__dlpack_device__()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if isinstance(self._array, jax.core.Tracer):
            raise traced_read("np.asarray()")
        arr = np.asarray(self._array)
        return arr if dtype is None else arr.astype(dtype)

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __bool__(self) -> bool:
        if isinstance(self._array, jax.core.Tracer):
            raise traced_read("bool() (an `if` or `while` on a tensor)")
        if self._array.size != 1:
            raise RuntimeError(
                f"bool(): the truth value of a tensor with {self.array.size} elements is ambiguous; "
                "use .any() or .all()."
            )
        return bool(self.item())

    def __index__(self) -> int:
        index_of(self._array.dtype, self._array.size)
        return int(self.item())

    __hash__ = object.__hash__  # identity, so tensors work as dict keys (see Gradients)

    # -- copying -----------------------------------------------------------------------
    def __copy__(self) -> "Tensor":
        return self  # immutable: a shallow copy is the record itself

    def __reduce_ex__(self, protocol: Any) -> tuple:
        """Pickle as values (a NumPy array), type and ``requires_grad``: torch's rule, a computed tensor
        comes back as a leaf. Unpickled arrays are on JAX's default device."""
        return _rebuild_tensor, (type(self), _host_values(self, "pickle"), self._edge is not None)

    def __deepcopy__(self, memo: dict) -> "Tensor":
        """A new leaf of the same type, data and ``requires_grad`` (its own ``AccumulateGrad``).

        As in PyTorch, only leaves can be deep-copied: ``copy.deepcopy(model)`` gives a
        model whose parameters are new leaves, independent of the original's.
        """
        if self.grad_fn is not None:
            raise RuntimeError(
                "deepcopy: only tensors created by the user (graph leaves) support deepcopy; "
                "call .detach() first to copy the values of a computed tensor."
            )
        out = _new_object(type(self))
        _init_leaf(out, self._array, self._edge is not None)
        memo[id(self)] = out
        return out

    # -- hooks -------------------------------------------------------------------------
    def register_hook(self, fn: Callable[["Tensor"], Optional["Tensor"]]) -> RemovableHandle:
        """Register ``fn(grad)`` to run when the gradient for this tensor is computed.

        Returning a tensor replaces the gradient. The hook lives on the graph (this
        tensor's ``grad_fn`` for its ``output_nr``, or the leaf's ``AccumulateGrad``),
        so it fires for every backward pass that reaches that edge.
        """
        if self._edge is None:
            raise RuntimeError(
                "register_hook: cannot register a hook on a tensor that doesn't require gradient."
            )
        node, output_nr = self._edge
        return node._register_tensor_prehook(output_nr, fn)

    def register_post_accumulate_grad_hook(self, fn: Callable[["Tensor", "Tensor"], Any]) -> RemovableHandle:
        """Register ``fn(leaf, grad)`` run after ``backward`` accumulated this leaf's gradient."""
        if self._edge is None or self.grad_fn is not None:
            raise RuntimeError(
                "register_post_accumulate_grad_hook: only leaf tensors that require grad have an AccumulateGrad."
            )
        return self._edge[0].register_post_accumulate_grad_hook(fn)

    # -- autograd entry points ---------------------------------------------------------
    def backward(
        self,
        gradient: Optional["Tensor"] = None,
        retain_graph: Optional[bool] = None,
        create_graph: bool = False,
        inputs: Optional[Sequence["Tensor"]] = None,
    ) -> Any:
        """Same as ``fgraph.backward(self, gradient, ...)``: returns :class:`fgraph.Gradients`."""
        from fgraph.autograd.engine import backward

        return backward(self, gradient, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs)

    # -- printing ----------------------------------------------------------------------
    def __repr__(self) -> str:
        if isinstance(self._array, jax.core.Tracer):
            body = f"Traced<{self.array.aval.str_short()}>"
        else:
            host = np.asarray(self._array)
            if host.dtype.kind == "V" or host.dtype.name == "bfloat16":  # ml_dtypes: print via float32
                host = host.astype(np.float32)
            body = np.array2string(host, separator=", ", prefix="tensor(", precision=4, suppress_small=True)
        extras = []
        if self._array.dtype not in (np.dtype("float32"), np.dtype("int32"), np.dtype("bool")):
            extras.append(f"dtype={self.array.dtype}")
        if self.grad_fn is not None:
            extras.append(f"grad_fn=<{self.grad_fn.name()}>")
        elif self._edge is not None:
            extras.append("requires_grad=True")
        return "tensor(" + body + "".join(", " + e for e in extras) + ")"


_lazy_array._OWNER_SETTER[0] = Tensor.__dict__["_array"].__set__

# -- record construction (hot path) ------------------------------------------------------
_set_data = Tensor.__dict__["_array"].__set__
_set_grad_fn = Tensor.__dict__["grad_fn"].__set__
_set_output_nr = Tensor.__dict__["output_nr"].__set__
_set_edge = Tensor.__dict__["_edge"].__set__


def _wrap(data: Any) -> Tensor:
    """A record that does not require grad (no checks; ``data`` is already an array)."""
    t = _new_object(Tensor)
    _set_data(t, data)
    _set_grad_fn(t, None)
    _set_output_nr(t, 0)
    _set_edge(t, None)
    if type(data) is LazyArray:
        _own(data, t)
    return t


def _wrap_output(data: Any, node: Node, output_nr: int) -> Tensor:
    """A record produced by ``node`` as its output ``output_nr``."""
    t = _new_object(Tensor)
    _set_data(t, data)
    _set_grad_fn(t, node)
    _set_output_nr(t, output_nr)
    _set_edge(t, make_edge(node, output_nr))
    if type(data) is LazyArray:
        _own(data, t)
    return t


def _own(placeholder: LazyArray, t: Tensor) -> None:
    """``t`` holds a pending placeholder: it gets the concrete array when its trace runs (``LazyArray.resolve``)."""
    if placeholder._concrete is None:
        placeholder._tensor = _weakref(t)


def _rewrap(data: Any, edge: Optional[GradientEdge]) -> Tensor:
    """A record for ``data`` that sits on ``edge`` of the graph (a leaf alias if it is an AccumulateGrad)."""
    if edge is None:
        return _wrap(data)
    node, output_nr = edge
    if type(node) is AccumulateGrad:
        t = _new_object(Tensor)
        _set_data(t, data)
        _set_grad_fn(t, None)
        _set_output_nr(t, 0)
        _set_edge(t, edge)
        return t
    return _wrap_output(data, node, output_nr)


def _init_leaf(t: Tensor, data: Any, requires_grad: bool) -> None:
    _set_data(t, data)
    if type(data) is LazyArray:
        _own(data, t)
    _set_grad_fn(t, None)
    _set_output_nr(t, 0)
    if requires_grad is not False and requires_grad is not True:
        requires_grad = check_bool(requires_grad, "tensor", "requires_grad")
    if requires_grad:
        if not is_differentiable_dtype(data.dtype):
            raise TypeError(
                f"requires_grad=True needs a floating point or complex tensor, got dtype {data.dtype}. "
                "Only floating point and complex tensors can require gradients; convert with "
                ".float() (or pass dtype=fgraph.float32)."
            )
        _set_edge(t, make_edge(AccumulateGrad(t), 0))
    else:
        _set_edge(t, None)


def _to_array(data: Any, dtype: Optional[np.dtype], op: str) -> jax.Array:
    if isinstance(data, Tensor):
        array = data._array
        return array if dtype is None else array.astype(dtype)
    if isinstance(data, (jax.Array, jax.core.Tracer, LazyArray)):  # LazyArray: a value pending in fg.lazy()
        return data if dtype is None else data.astype(dtype)
    if isinstance(data, np.ndarray) or np.isscalar(data):
        host = np.asarray(data)
    elif _is_torch_tensor(data):
        if data.requires_grad:
            _warn(f"{op}: the torch.Tensor requires grad, but its torch graph stays behind: the result is a new "
                  "fgraph leaf. Say which you mean: interop.from_torch(t) (keeps requires_grad) or t.detach().",
                  UserWarning, stacklevel=3)
        array = _array_from_torch(data, op)  # keeps torch's dtype (float64, bfloat16...), as for NumPy input
        return array if dtype is None else array.astype(dtype)
    else:
        try:
            host = np.asarray(_unwrap_nested(data))
        except (ValueError, TypeError) as exc:
            raise TypeError(f"{op}: cannot make a tensor from {type(data).__name__}: {exc}") from None
    if dtype is None and host.dtype.kind == "f" and not isinstance(data, np.ndarray):
        dtype = default_float_dtype()  # Python floats -> float32, as in PyTorch
    if host.dtype.kind in "OUS":
        what = "strings" if host.dtype.kind in "US" else "objects"
        raise TypeError(f"{op}: cannot make a tensor from {what} ({type(data).__name__} of {host.dtype}); "
                        "tensors hold numbers: convert first, e.g. [float(s) for s in values].")
    host_for_jax(host, dtype, op, user_data=isinstance(data, (np.ndarray, np.generic)))  # no silent wrap-around
    if dtype is not None and dtype != host.dtype and host.dtype.kind in "biu" and dtype.kind in "iu":
        host, dtype = host.astype(dtype), None  # checked to fit: NumPy's cast, not a JAX dispatch (~50 µs)
    return jnp.array(host, dtype=dtype)  # a copy: jnp.asarray may alias a NumPy buffer the caller can still write


def _constructor_array(args: tuple) -> Any:
    """The array of ``Tensor(*args)``, by ``torch.Tensor``'s rules (see the class docstring)."""
    if args and all(isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_)) for a in args):
        return jnp.zeros(_shape_arg(args, "Tensor"), default_float_dtype())  # torch's uninitialised memory
    if len(args) > 1:
        raise TypeError(f"Tensor: expected one data argument or integer sizes, got {len(args)} arguments "
                        f"({', '.join(type(a).__name__ for a in args)}); pass requires_grad= by keyword.")
    data = args[0] if args else []
    if isinstance(data, (jax.Array, jax.core.Tracer, LazyArray)) or _is_torch_tensor(data):
        return _to_array(data, None, "Tensor")  # arrays of a framework keep their dtype, as torch.Tensor(tensor)
    if isinstance(data, (bool, float, complex, np.bool_, np.inexact)):
        raise TypeError(f"Tensor: data must be a sequence (got {type(data).__name__}), as in torch.Tensor; for a "
                        f"0-d tensor write fg.tensor({data!r}).")
    if isinstance(data, np.ndarray) and data.dtype.kind == "c":
        _warn("Tensor: casting complex values to real discards the imaginary part (as torch.Tensor does); "
              "use fg.tensor(data) to keep them complex.", UserWarning, stacklevel=3)
        data = data.real
    return _to_array(data, default_float_dtype(), "Tensor")


def _is_torch_tensor(obj: Any) -> bool:
    """Whether ``obj`` is a ``torch.Tensor`` (or a subclass), checked by type without importing torch."""
    return any(c.__name__ == "Tensor" and c.__module__ == "torch" for c in type(obj).__mro__)


def type_name(obj: Any) -> str:
    """``obj``'s type for an error message; a torch.Tensor also says how to convert it."""
    if _is_torch_tensor(obj):
        return "torch.Tensor (convert it with interop.from_torch(t))"
    return type(obj).__name__


def _torch_message(op: str, what: str, obj: Any) -> str:
    """The error for a torch.Tensor given to an fgraph op: name the conversion."""
    return (
        f"{op}: {what} is a torch.Tensor (shape {tuple(obj.shape)}, {obj.dtype}); fgraph ops take fgraph "
        "Tensors. Convert it first with interop.from_torch(t) (`import interop`; it copies the values and keeps "
        "the dtype, bfloat16 included), and back with interop.to_torch(x)."
    )


_TORCH_64_BIT = frozenset({"torch.int64", "torch.uint64", "torch.float64", "torch.complex128"})


def _array_from_torch(t: Any, op: str = "from_torch") -> jax.Array:
    """A JAX copy of a torch.Tensor's values, through DLPack (torch is not imported here): safe against later
    in-place changes of ``t``. A CPU tensor lands on JAX's default device, like a NumPy array. With JAX's x64
    mode off, 64-bit dtypes become 32-bit by fgraph's rule (``docs/dtypes.md``: values checked, one warning)."""
    t = t.detach().resolve_conj().resolve_neg()
    if str(t.dtype) in _TORCH_64_BIT and not x64_enabled():  # JAX's DLPack import would wrap int64 silently
        host = t.cpu().numpy()
        return jnp.array(host_for_jax(host, None, op, user_data=True))
    if not t.is_contiguous():
        t = t.contiguous()  # DLPack export to JAX needs compact strides
    if t.device.type != "cpu":
        try:
            return jnp.array(jax.dlpack.from_dlpack(t), copy=True)
        except (RuntimeError, TypeError, ValueError, BufferError):  # no JAX backend for that device
            t = t.cpu()
    return jnp.array(np.asarray(jax.dlpack.from_dlpack(t)), copy=True)


_ASSIGN_HINTS = {
    "data": "Make a new tensor instead (x = fg.tensor(values)). For a module's parameter assign a new one "
            "(module.weight = fg.nn.Parameter(new)), or use module.load_state_dict(...) or "
            "fgraph.nn.parameter.rebind({old: new}), which update every module holding it.",
    "requires_grad": "x = x.requires_grad_() returns a new leaf that requires grad (x.detach() one that does "
                     "not); for a module's parameters call module.requires_grad_(False).",
    "grad": "fgraph does not store gradients on tensors: they are returned (grads = loss.backward(); grads[x]) "
            "and passed on (opt.step(grads)).",
    "grad_fn": "It is set by the op that made the tensor; x.detach() gives a new leaf.",
}
_ASSIGN_HINTS["output_nr"] = _ASSIGN_HINTS["is_leaf"] = _ASSIGN_HINTS["grad_fn"]
_ASSIGN_HINTS["array"] = _ASSIGN_HINTS["data"]

_GRADIENTS_RETURNED = ("fgraph tensors do not store gradients: backward returns them. Write "
                       "grads = loss.backward(); grads[x]  (or (gx,) = fg.grad(loss, [x])); this works for "
                       "non-leaf tensors too, no retain_grad() needed.")
_ATTRIBUTE_HINTS = {
    "grad": _GRADIENTS_RETURNED, "retain_grad": _GRADIENTS_RETURNED, "retains_grad": _GRADIENTS_RETURNED,
    "zero_": "fgraph tensors are immutable; write x = fg.zeros_like(x).",
    "fill_": "fgraph tensors are immutable; write x = fg.full_like(x, value).",
    "copy_": "fgraph tensors are immutable; rebind the name (x = src.to(x.dtype)); for a module's parameter "
             "use module.load_state_dict(...) or fgraph.nn.parameter.rebind({param: src}).",
    "detach_": "fgraph tensors are immutable; write x = x.detach().",
    "normal_": "fgraph tensors are immutable; write x = fg.nn.init.normal_(x, mean, std) (it returns the new "
               "tensor and rebinds a module's parameter) or x = fg.randn_like(x).",
    "uniform_": "fgraph tensors are immutable; write x = fg.nn.init.uniform_(x, a, b) (it returns the new "
                "tensor and rebinds a module's parameter) or x = fg.rand_like(x).",
}
_OPERATOR_OF = {"add": "x + other", "sub": "x - other", "mul": "x * other", "div": "x / other",
                "true_divide": "x / other", "pow": "x ** other", "matmul": "x @ other"}


def _missing_attribute(cls: type, name: str) -> str:
    """The AttributeError message for ``name``: a pointer for PyTorch habits (in-place ops, .grad...)."""
    message = f"'{cls.__name__}' object has no attribute '{name}'"
    hint = _ATTRIBUTE_HINTS.get(name)
    if hint is None and name.endswith("_") and not name.startswith("_"):
        base = name[:-1]
        if callable(getattr(cls, base, None)):
            hint = (f"fgraph tensors are immutable, there are no in-place ops: write x = x.{base}(...)"
                    + (f" (or x = {_OPERATOR_OF[base]})" if base in _OPERATOR_OF else "")
                    + "; the old tensor keeps its value. A module's parameters change by rebinding "
                    "(opt.step(grads), nn.init.*_, load_state_dict; a hand-written update such as "
                    "p.data.add_(u) is fgraph.nn.parameter.rebind({p: p.detach() + u})).")
        else:
            hint = "fgraph tensors are immutable: there are no in-place methods (name_); use the out-of-place op."
    return message if hint is None else f"{message}: {hint}"


def _unwrap_nested(data: Any) -> Any:
    if isinstance(data, Tensor):
        return np.asarray(data._array)
    if isinstance(data, (list, tuple)):
        return [_unwrap_nested(d) for d in data]
    return data


# -- creation functions ----------------------------------------------------------------------


def _data(t: Any) -> Any:
    return t._array if isinstance(t, Tensor) else jnp.asarray(t)


# The creation functions live in their own file; imported last, since they build on the record above.
from fgraph._tensor_creation import (  # noqa: E402  (re-exported: fgraph.tensor.zeros etc. keep working)
    _check_python_ints, _creation_dtype, _default_int_dtype, _place, _shape_arg, arange, as_tensor, full,
    full_like, ones, ones_like, tensor, zeros, zeros_like,
)


def _host_values(t: Tensor, what: str) -> np.ndarray:
    """``t``'s values as a NumPy array, for pickling (bfloat16 stays bfloat16, via ml_dtypes)."""
    if isinstance(t._array, jax.core.Tracer):
        raise TypeError(f"cannot {what} a Tensor inside a JAX trace (jit/grad/vmap): its values are not known "
                        "yet; return it from the traced function and pickle the result.")
    return np.asarray(t._array)


def _rebuild_tensor(cls: type, values: Any, requires_grad: bool) -> Tensor:
    """Unpickle a :class:`Tensor` (or a subclass with no extra state) saved by ``Tensor.__reduce_ex__``."""
    t = _new_object(cls)
    _init_leaf(t, jnp.asarray(values), requires_grad)
    return t
