"""Tensor methods and Python operators: tables of delegations to ops.

Python operators are listed here; each op family module lists its own methods
in ``TENSOR_METHODS``.

Kept apart from ``tensor.py`` so the Tensor record does not import the op
families (which themselves build on the record).
"""
from __future__ import annotations

from typing import Any

import jax


from fgraph.device import is_device_like, jax_device, put
from fgraph.ops import elementwise as ew
from fgraph.ops import indexing, linalg, rounding, shape
from fgraph.tensor import Tensor, _rewrap


def _radd(self: Tensor, other: Any) -> Tensor:
    return ew.add(other, self)


def _rsub(self: Tensor, other: Any) -> Tensor:
    return ew.sub(other, self)


def _rmul(self: Tensor, other: Any) -> Tensor:
    return ew.mul(other, self)


def _rtruediv(self: Tensor, other: Any) -> Tensor:
    return ew.div(other, self)


def _rpow(self: Tensor, other: Any) -> Tensor:
    return ew.pow(other, self)


def _rmatmul(self: Tensor, other: Any) -> Tensor:
    return linalg.matmul(other, self)


def _rand(self: Tensor, other: Any) -> Tensor:
    return rounding.bitwise_and(other, self)


def _ror(self: Tensor, other: Any) -> Tensor:
    return rounding.bitwise_or(other, self)


def _pos(self: Tensor) -> Tensor:
    return self


def _format(self: Tensor, spec: str) -> str:
    """``f"{loss:.4f}"``: a 0-d tensor formats its value, as in PyTorch; other tensors take no format spec."""
    if self.ndim == 0:
        return format(self.item(), spec)
    if not spec:
        return str(self)
    raise TypeError(f"unsupported format string {spec!r} passed to Tensor.__format__: only a 0-d tensor formats "
                    f"its value (this one has shape {tuple(self.shape)}); format x.item() or the x.tolist() values.")


def _to(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """``x.to(dtype)``, ``x.to(device)``, ``x.to(device, dtype)`` or ``x.to(other_tensor)`` (its dtype and device).

    A device is an :class:`fgraph.device`, a string (``'cpu'``, ``'cuda'``, ``'cuda:1'``, ``'gpu'``), a JAX
    device or a ``jax.sharding.Sharding``; moving data is ``jax.device_put``, which keeps the record on the
    graph. ``non_blocking=`` and ``copy=`` are accepted (JAX transfers are asynchronous already, and an
    immutable tensor needs no copy); ``x.to(...)`` returns ``x`` itself when nothing changes.
    """
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    for name in ("non_blocking", "copy", "memory_format"):
        kwargs.pop(name, None)
    if kwargs:
        raise TypeError(f"to: unexpected arguments {sorted(kwargs)}")
    for arg in args:
        if isinstance(arg, Tensor):
            dtype, device = arg.dtype, arg.device
        elif is_device(arg):
            device = arg
        elif isinstance(arg, bool) or arg is None:  # positional non_blocking / copy
            continue
        else:
            dtype = arg
    out = self if dtype is None else ew.to_dtype(self, dtype)
    return out if device is None else _to_device(out, device)


def resolve_device(device: Any) -> Any:
    """A ``jax.Device`` from a device or a device string (``'cpu'``, ``'gpu:1'``, ``'cuda'``); a
    ``jax.sharding.Sharding`` is returned as it is. A device this machine lacks raises
    :class:`fgraph.errors.DeviceUnavailableError`."""
    return jax_device(device)


def is_device(arg: Any) -> bool:
    """Whether ``arg`` names a device (an :class:`fgraph.device`, JAX device or device string) rather than a dtype."""
    return is_device_like(arg)


def _to_device(t: Tensor, device: Any) -> Tensor:
    data = put(t._array, device)
    return t if data is t._array else _rewrap(data, t._edge)


def _caster(dtype: str):
    def cast(self: Tensor) -> Tensor:
        return ew.to_dtype(self, dtype)

    cast.__name__ = cast.__qualname__ = dtype
    cast.__doc__ = f"Cast to {dtype}."
    return cast


def _long(self: Tensor) -> Tensor:
    """Cast to int64 (``x.to(fg.long)``): int32 with JAX's x64 mode off, by the rule of ``docs/dtypes.md``."""
    return ew.to_dtype(self, "int64")


OPERATORS = {
    "__add__": ew.add, "__radd__": _radd,
    "__sub__": ew.sub, "__rsub__": _rsub,
    "__mul__": ew.mul, "__rmul__": _rmul,
    "__truediv__": ew.div, "__rtruediv__": _rtruediv,
    "__pow__": ew.pow, "__rpow__": _rpow,
    "__matmul__": linalg.matmul, "__rmatmul__": _rmatmul,
    "__neg__": ew.neg, "__pos__": _pos, "__abs__": ew.abs,
    "__eq__": ew.eq, "__ne__": ew.ne, "__lt__": ew.lt, "__le__": ew.le, "__gt__": ew.gt, "__ge__": ew.ge,
    "__and__": rounding.bitwise_and, "__rand__": _rand,
    "__or__": rounding.bitwise_or, "__ror__": _ror,
    "__invert__": rounding.bitwise_not,
    "__getitem__": indexing.getitem,
    "__format__": _format,
}

DTYPE_METHODS = {
    "to": _to, "float": _caster("float32"), "double": _caster("float64"), "half": _caster("float16"),
    "bfloat16": _caster("bfloat16"), "short": _caster("int16"), "char": _caster("int8"), "byte": _caster("uint8"),
    "int": _caster("int32"), "long": _long, "bool": _caster("bool"),
}

PROPERTIES = {
    "mT": shape.matrix_transpose,
}


def install() -> None:
    """Attach operators, every op family's ``TENSOR_METHODS``, and the dtype methods to Tensor."""
    from fgraph.nn.functional import activation
    from fgraph.ops import FAMILIES

    methods = dict(OPERATORS)
    for family in FAMILIES + (activation,):  # activation: x.softmax(dim), x.log_softmax(dim)
        methods.update(getattr(family, "TENSOR_METHODS", {}))
    methods.update(DTYPE_METHODS)
    for name, fn in methods.items():
        type.__setattr__(Tensor, name, fn)
    properties = dict(PROPERTIES)
    for family in FAMILIES:
        properties.update(getattr(family, "TENSOR_PROPERTIES", {}))
    for name, fn in properties.items():
        type.__setattr__(Tensor, name, property(fn))
    type.__setattr__(Tensor, "__hash__", object.__hash__)
