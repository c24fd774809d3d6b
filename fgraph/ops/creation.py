"""Creation ops: empty, linspace, logspace, eye, and the ``Tensor.new_*`` methods.

(``tensor``, ``zeros``, ``ones``, ``full``, ``arange`` and their ``*_like`` forms
live in :mod:`fgraph.tensor`; random tensors in :mod:`fgraph.ops.random_ops`.)

None of these ops is differentiable: their outputs are new leaves, which require
grad only when asked with ``requires_grad=True`` (floating dtypes only). Sizes
are given as varargs (``fg.empty(2, 3)``) or one tuple (``fg.empty((2, 3))``).
Without ``dtype=`` floating results take the default dtype
(:func:`fgraph.get_default_dtype`, float32 unless changed). ``device=`` places the result
(``"cpu"``, ``"cuda"``, an :class:`fgraph.device`; see ``docs/devices.md``); ``empty_like`` and
``Tensor.new_*`` default to the device of the tensor they follow, as in PyTorch.

``linspace``/``logspace`` take their ``start``/``end`` as kernel inputs (Python
numbers or 0-d tensors, traced ones included), so one kernel is compiled per
``(steps, dtype)`` and reused for every range; they follow PyTorch's
algorithm (the first half counts up from ``start``, the second half down from
``end``, computed in the output dtype, or in the widest float for integer
outputs, which are then truncated toward zero).

Example:
    >>> import fgraph as fg
    >>> fg.linspace(0, 1, 5).tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    >>> fg.eye(2, 3, dtype=fg.int32).tolist()
    [[1, 0, 0], [0, 1, 0]]
"""
from __future__ import annotations

from typing import Any, Optional

import jax.numpy as jnp
import numpy as np

from fgraph._dtypes import canonical_dtype, default_float_dtype, x64_enabled
from fgraph.errors import OpError
from fgraph.ops._declare import apply_op, declare
from fgraph.device import like_device
from fgraph.tensor import full, ones, Tensor, tensor, type_name, zeros, zeros_like, _place, _shape_arg

__all__ = ["empty", "empty_like", "linspace", "logspace", "eye"]


def size_arg(size: tuple, op: str) -> tuple[int, ...]:
    """``size`` as varargs (``2, 3``) or one sequence (``(2, 3)``), checked: a tuple of non-negative ints."""
    return _shape_arg(size, op)


def float_dtype(dtype: Any, op: str) -> np.dtype:
    """``dtype`` (default: the default float dtype), checked to be floating point."""
    dt = canonical_dtype(dtype, op)
    if dt is None:
        return default_float_dtype()
    if not jnp.issubdtype(dt, jnp.floating):
        raise TypeError(f"{op}: dtype {dt} is not a floating point dtype; pass e.g. dtype=fgraph.float32.")
    return dt


def leaf(out: Tensor, requires_grad: bool, device: Any = None) -> Tensor:
    """``out`` itself, or a new leaf over its data that requires grad; on ``device`` if given."""
    out = Tensor(out._array, requires_grad=True) if requires_grad else out
    return out if device is None else _place(out, device)


def _creation_dtype(dtype: Any, op: str) -> np.dtype:
    dt = canonical_dtype(dtype, op)
    return default_float_dtype() if dt is None else dt


# -- empty --------------------------------------------------------------------------------------
def empty(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """An "uninitialised" tensor of ``size``: JAX has no uninitialised memory, so it holds zeros.

    Code must not rely on the zeros (PyTorch leaves the memory as it is).

    Example:
        >>> import fgraph as fg
        >>> fg.empty(2, 3).shape, fg.empty((4,), dtype=fg.int32).dtype
        ((2, 3), dtype('int32'))
    """
    return zeros(size_arg(size, "empty"), dtype=dtype, device=device, requires_grad=requires_grad)


def empty_like(input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """:func:`empty` with the shape (and dtype, unless given) of ``input`` (zeros, see :func:`empty`).

    Example:
        >>> import fgraph as fg
        >>> fg.empty_like(fg.ones(2, dtype=fg.float16)).dtype
        dtype('float16')
    """
    _check_tensor(input, "empty_like")
    return zeros_like(input, dtype=dtype, device=device, requires_grad=requires_grad)


# -- linspace / logspace ------------------------------------------------------------------------
def _compute_dtype(dtype: np.dtype) -> np.dtype:
    if jnp.issubdtype(dtype, jnp.inexact):
        return dtype
    return np.dtype("float64") if x64_enabled() else np.dtype("float32")


def _spaced(start, end, steps: int, cdt: np.dtype):
    """PyTorch's linspace: counts up from ``start`` for the first half, down from ``end`` for the rest."""
    start = jnp.asarray(start, cdt)
    end = jnp.asarray(end, cdt)
    if steps == 1:
        return jnp.reshape(start, (1,))
    step = (end - start) / (steps - 1)
    i = jnp.arange(steps, dtype=cdt)
    return jnp.where(i < steps // 2, start + i * step, end - (steps - 1 - i) * step)


def _linspace_forward(start, end, *, steps, dtype):
    return _spaced(start, end, steps, _compute_dtype(dtype)).astype(dtype)


def _logspace_forward(start, end, *, steps, base, dtype):
    cdt = _compute_dtype(dtype)
    return jnp.power(jnp.asarray(base, cdt), _spaced(start, end, steps, cdt)).astype(dtype)


LINSPACE = declare("linspace", _linspace_forward, None, params=("steps", "dtype"), differentiable=False)
LOGSPACE = declare("logspace", _logspace_forward, None, params=("steps", "base", "dtype"), differentiable=False)


def _endpoint(v: Any, name: str, op: str) -> Any:
    if isinstance(v, Tensor):
        if v.ndim != 0:
            raise OpError(f"{op}: {name} must be a number or a 0-dimensional tensor, got a tensor of shape {v.shape}.")
        return v._array
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"{op}: {name} must be a real number or a 0-dimensional tensor, got {type(v).__name__} {v!r}.")
    return v


def _steps(steps: Any, op: str) -> int:
    if isinstance(steps, (bool, np.bool_)) or not isinstance(steps, (int, np.integer)):
        raise TypeError(f"{op}: steps must be an int, got {type(steps).__name__} {steps!r}.")
    if steps < 0:
        raise OpError(f"{op}: number of steps must be non-negative, got {steps}.")
    return int(steps)


def linspace(start: Any, end: Any, steps: int, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end``, both included.

    ``start``/``end`` are numbers or 0-d tensors (not differentiated through, as in
    PyTorch). ``steps=1`` gives ``[start]``; ``steps=0`` an empty tensor.

    Example:
        >>> import fgraph as fg
        >>> fg.linspace(-1, 1, 3).tolist(), fg.linspace(0, 10, 4, dtype=fg.int32).tolist()
        ([-1.0, 0.0, 1.0], [0, 3, 6, 10])
    """
    n = _steps(steps, "linspace")
    dt = _creation_dtype(dtype, "linspace")
    a, b = _endpoint(start, "start", "linspace"), _endpoint(end, "end", "linspace")
    return leaf(apply_op(LINSPACE, (a, b), LINSPACE.Params(n, dt)), requires_grad, device)


def logspace(start: Any, end: Any, steps: int, base: float = 10.0, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """``base ** linspace(start, end, steps)``: ``steps`` values spaced evenly on a log scale.

    Example:
        >>> import fgraph as fg
        >>> fg.logspace(0, 2, 3).tolist(), fg.logspace(0, 3, 4, base=2).tolist()
        ([1.0, 10.0, 100.0], [1.0, 2.0, 4.0, 8.0])
    """
    n = _steps(steps, "logspace")
    if isinstance(base, (bool, np.bool_)) or not isinstance(base, (int, float, np.integer, np.floating)):
        raise TypeError(f"logspace: base must be a real number, got {type(base).__name__} {base!r}.")
    dt = _creation_dtype(dtype, "logspace")
    a, b = _endpoint(start, "start", "logspace"), _endpoint(end, "end", "logspace")
    return leaf(apply_op(LOGSPACE, (a, b), LOGSPACE.Params(n, float(base), dt)), requires_grad, device)


# -- eye ------------------------------------------------------------------------------------------
def _eye_forward(*, n, m, dtype):
    return jnp.eye(n, m, dtype=dtype)


EYE = declare("eye", _eye_forward, None, params=("n", "m", "dtype"), differentiable=False)


def eye(n: int, m: Optional[int] = None, *, dtype: Any = None, device: Any = None,
        requires_grad: bool = False) -> Tensor:
    """An ``n x m`` matrix (``m`` defaults to ``n``) with ones on the diagonal and zeros elsewhere.

    Example:
        >>> import fgraph as fg
        >>> fg.eye(2).tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    n, m = size_arg((n, n if m is None else m), "eye")
    dt = _creation_dtype(dtype, "eye")
    return leaf(apply_op(EYE, (), EYE.Params(n, m, dt)), requires_grad, device)


# -- Tensor.new_* -------------------------------------------------------------------------------------
def _check_tensor(t: Any, op: str) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type_name(t)}.")


def new_tensor(self: Tensor, data: Any, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    """A new leaf from ``data`` with ``self``'s dtype and device unless given (``Tensor.new_tensor``).

    Example:
        >>> import fgraph as fg
        >>> fg.ones(2, dtype=fg.float16).new_tensor([1, 2]).dtype
        dtype('float16')
    """
    return tensor(data, dtype=self.dtype if dtype is None else dtype, requires_grad=requires_grad,
                  device=like_device(self._array, device))


def new_zeros(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    """Zeros of ``size`` with ``self``'s dtype unless ``dtype`` is given (``Tensor.new_zeros``).

    Example:
        >>> import fgraph as fg
        >>> fg.arange(3).new_zeros(2).tolist()
        [0, 0]
    """
    return zeros(size_arg(size, "new_zeros"), dtype=self.dtype if dtype is None else dtype,
                device=like_device(self._array, device),
                 requires_grad=requires_grad)


def new_ones(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    """Ones of ``size`` with ``self``'s dtype unless ``dtype`` is given (``Tensor.new_ones``).

    Example:
        >>> import fgraph as fg
        >>> fg.arange(2).new_ones(3).tolist()
        [1, 1, 1]
    """
    return ones(size_arg(size, "new_ones"), dtype=self.dtype if dtype is None else dtype,
                device=like_device(self._array, device),
                requires_grad=requires_grad)


def new_empty(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    """:func:`empty` (zeros) of ``size`` with ``self``'s dtype unless ``dtype`` is given.

    Example:
        >>> import fgraph as fg
        >>> fg.ones(1, dtype=fg.float16).new_empty(2, 2).dtype
        dtype('float16')
    """
    return zeros(size_arg(size, "new_empty"), dtype=self.dtype if dtype is None else dtype,
                device=like_device(self._array, device),
                 requires_grad=requires_grad)


def new_full(self: Tensor, size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """``fill_value`` of ``size`` with ``self``'s dtype unless ``dtype`` is given (``Tensor.new_full``).

    Example:
        >>> import fgraph as fg
        >>> fg.ones(1).new_full((2,), 3).tolist()
        [3.0, 3.0]
    """
    return full(size, fill_value, dtype=self.dtype if dtype is None else dtype, requires_grad=requires_grad,
                device=like_device(self._array, device))


#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {
    "new_tensor": new_tensor,
    "new_zeros": new_zeros,
    "new_ones": new_ones,
    "new_empty": new_empty,
    "new_full": new_full,
}
