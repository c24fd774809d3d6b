"""Tensor methods and Python operators, as one table of delegations to ops.

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


METHODS = {
    # operators
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
    # elementwise
    "add": ew.add, "sub": ew.sub, "mul": ew.mul, "div": ew.div, "neg": ew.neg, "pow": ew.pow,
    "exp": ew.exp, "log": ew.log, "sin": ew.sin, "cos": ew.cos, "tanh": ew.tanh, "sigmoid": ew.sigmoid,
    "relu": ew.relu, "sqrt": ew.sqrt, "abs": ew.abs, "sign": ew.sign,
    "maximum": ew.maximum, "minimum": ew.minimum, "clamp": ew.clamp, "clip": ew.clamp,
    "eq": ew.eq, "ne": ew.ne, "lt": ew.lt, "le": ew.le, "gt": ew.gt, "ge": ew.ge,
    # reductions and products
    "sum": reduction.sum, "mean": reduction.mean, "matmul": linalg.matmul,
    # shape
    "reshape": shape.reshape, "view": shape.reshape, "flatten": shape.flatten,
    "transpose": shape.transpose, "permute": shape.permute, "t": shape.t,
    "expand": shape.expand, "squeeze": shape.squeeze, "unsqueeze": shape.unsqueeze,
    # dtypes
    "to": _to, "float": _caster("float32"), "double": _caster("float64"), "half": _caster("float16"),
    "int": _caster("int32"), "long": _long, "bool": _caster("bool"),
}

PROPERTIES = {
    "mT": shape.matrix_transpose,
}


def install() -> None:
    for name, fn in METHODS.items():
        type.__setattr__(Tensor, name, fn)
    for name, fn in PROPERTIES.items():
        type.__setattr__(Tensor, name, property(fn))
    type.__setattr__(Tensor, "__hash__", object.__hash__)
