"""Argument checks and messages for common mistakes, shared by the Tensor record and the engine.

Each helper either returns the checked value or builds the exception to raise: the
message names the function or argument, what was given, and the fix.

Example:
    >>> from fgraph._checks import check_bool
    >>> check_bool(True, "tensor", "requires_grad")
    True
"""
from __future__ import annotations

from typing import Any

import jax
import numpy as np

from fgraph.errors import TracedValueError

__all__ = ["check_bool", "traced_read", "index_of", "array_ufunc"]


def check_bool(value: Any, fn: str, name: str) -> bool:
    """``value`` if it is a bool (Python or NumPy), else a TypeError: ``"False"`` and ``0.5`` are truthy."""
    if value is True or value is False:
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    raise TypeError(f"{fn}: {name} must be a bool (True or False), got {type(value).__name__} {value!r}; "
                    f"a string such as 'False' would count as True. Pass {name}=True or {name}=False.")


def traced_read(what: str) -> TracedValueError:
    """The error for reading a traced tensor's value on the host (``item()``, ``bool()``, ``numpy()``...)."""
    return TracedValueError(
        f"{what}: this tensor is traced (inside jax.jit, jax.vmap, fg.func's transforms or a fused program) and has "
        "no concrete value to read on the host. Keep the value a Tensor: fg.where(cond, a, b) instead of "
        "`if t > 0:`, return the tensor instead of t.item(), or read it after the traced function returns."
    )


def index_of(dtype: np.dtype, size: int) -> None:
    """Raise unless a tensor of ``dtype`` and ``size`` elements can serve as a Python index (``__index__``)."""
    if size != 1 or not (np.issubdtype(dtype, np.integer) or dtype == np.bool_):
        raise TypeError(
            f"only integer tensors of a single element can be converted to an index; got dtype {dtype} with {size} "
            "element(s). A float would be truncated silently: convert explicitly with int(t) or t.long()."
        )



#: NumPy ufuncs that are Python operators, with the Tensor method for ``ndarray <op> tensor``.
_REFLECTED = {
    np.add: "__radd__", np.subtract: "__rsub__", np.multiply: "__rmul__", np.true_divide: "__rtruediv__",
    np.floor_divide: "__rfloordiv__", np.remainder: "__rmod__", np.power: "__rpow__", np.matmul: "__rmatmul__",
    np.less: "__gt__", np.less_equal: "__ge__", np.greater: "__lt__", np.greater_equal: "__le__",
    np.equal: "__eq__", np.not_equal: "__ne__",
}
_FORWARD = {
    np.add: "__add__", np.subtract: "__sub__", np.multiply: "__mul__", np.true_divide: "__truediv__",
    np.floor_divide: "__floordiv__", np.remainder: "__mod__", np.power: "__pow__", np.matmul: "__matmul__",
    np.less: "__lt__", np.less_equal: "__le__", np.greater: "__gt__", np.greater_equal: "__ge__",
    np.equal: "__eq__", np.not_equal: "__ne__",
}


def array_ufunc(self: Any, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
    """``Tensor.__array_ufunc__``: NumPy operators on a Tensor stay on the graph, other ufuncs refuse to drop it.

    ``ndarray + t`` (and ``np.add(a, t)``) run the Tensor's operator and return a Tensor. Any other
    ufunc (``np.exp(t)``) computes on the values and returns an ndarray, unless a Tensor input
    requires grad: then the gradient would be lost without a word, so it raises (PyTorch
    raises for every NumPy conversion of such a tensor).
    """
    from fgraph.tensor import Tensor

    if method == "__call__" and not kwargs and len(inputs) == 2 and ufunc in _FORWARD:
        a, b = inputs
        if isinstance(a, Tensor):
            return getattr(a, _FORWARD[ufunc])(b)
        return getattr(b, _REFLECTED[ufunc])(a)
    tensors = [x for x in inputs if isinstance(x, Tensor)]
    if any(t._edge is not None for t in tensors):
        name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
        raise RuntimeError(
            f"np.{name}: NumPy cannot differentiate, so calling it on a Tensor that requires grad would drop the graph "
            f"and the gradient without a word. Use the fgraph op (fg.{ufunc.__name__}(t) or the Tensor method), "
            "which keeps the graph, or pass t.detach() for the values only."
        )
    for t in tensors:
        if isinstance(t._array, jax.core.Tracer):
            raise traced_read(f"np.{ufunc.__name__}")
    arrays = [np.asarray(x._array) if isinstance(x, Tensor) else x for x in inputs]
    return getattr(ufunc, method)(*arrays, **kwargs)
