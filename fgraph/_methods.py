"""Tensor methods and Python operators: tables of delegations to ops.

Python operators are listed here; each op family module lists its own methods
in ``TENSOR_METHODS``.

Kept apart from ``tensor.py`` so the Tensor record does not import the op
families (which themselves build on the record).
"""
from __future__ import annotations

from typing import Any


from fgraph.ops import elementwise as ew
from fgraph.ops import indexing, linalg, reduction, shape
from fgraph.tensor import Tensor


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


def _pos(self: Tensor) -> Tensor:
    return self


def _to(self: Tensor, dtype: Any = None, **kwargs: Any) -> Tensor:
    """Cast to ``dtype`` (``x.to(fg.float64)``). Devices are JAX's to manage (see ``interop``)."""
    dtype = kwargs.pop("dtype", dtype)
    if kwargs:
        raise TypeError(f"to: unexpected arguments {sorted(kwargs)}")
    return self if dtype is None else ew.to_dtype(self, dtype)


def _caster(dtype: str):
    def cast(self: Tensor) -> Tensor:
        return ew.to_dtype(self, dtype)

    cast.__name__ = cast.__qualname__ = dtype
    cast.__doc__ = f"Cast to {dtype}."
    return cast


def _long(self: Tensor) -> Tensor:
    """Cast to the widest integer type JAX allows (int64 with x64, else int32)."""
    from fgraph._dtypes import x64_enabled

    return ew.to_dtype(self, "int64" if x64_enabled() else "int32")


OPERATORS = {
    "__add__": ew.add, "__radd__": _radd,
    "__sub__": ew.sub, "__rsub__": _rsub,
    "__mul__": ew.mul, "__rmul__": _rmul,
    "__truediv__": ew.div, "__rtruediv__": _rtruediv,
    "__pow__": ew.pow, "__rpow__": _rpow,
    "__matmul__": linalg.matmul, "__rmatmul__": _rmatmul,
    "__neg__": ew.neg, "__pos__": _pos, "__abs__": ew.abs,
    "__eq__": ew.eq, "__ne__": ew.ne, "__lt__": ew.lt, "__le__": ew.le, "__gt__": ew.gt, "__ge__": ew.ge,
    "__and__": ew.logical_and, "__or__": ew.logical_or, "__invert__": ew.logical_not,
    "__getitem__": indexing.getitem,
}

DTYPE_METHODS = {
    "to": _to, "float": _caster("float32"), "double": _caster("float64"), "half": _caster("float16"),
    "int": _caster("int32"), "long": _long, "bool": _caster("bool"),
}

PROPERTIES = {
    "mT": shape.matrix_transpose,
}


def install() -> None:
    """Attach operators, every op family's ``TENSOR_METHODS``, and the dtype methods to Tensor."""
    from fgraph.ops import FAMILIES

    methods = dict(OPERATORS)
    for family in FAMILIES:
        methods.update(getattr(family, "TENSOR_METHODS", {}))
    methods.update(DTYPE_METHODS)
    for name, fn in methods.items():
        type.__setattr__(Tensor, name, fn)
    for name, fn in PROPERTIES.items():
        type.__setattr__(Tensor, name, property(fn))
    type.__setattr__(Tensor, "__hash__", object.__hash__)
