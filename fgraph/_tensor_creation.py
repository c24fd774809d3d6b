"""Creation functions for :class:`fgraph.Tensor`: ``tensor``, ``as_tensor``, ``zeros``, ``ones``, ``full``,
``arange`` and the ``*_like`` ones (PyTorch's names and dtype rules; ``device=`` placement).

``fgraph.tensor`` re-exports them (``from fgraph.tensor import zeros`` keeps working).

Example:
    >>> import fgraph as fg
    >>> fg.zeros(2, 3).shape, fg.arange(0, 4, dtype=fg.long).tolist()
    ((2, 3), [0, 1, 2, 3])
"""
from __future__ import annotations

from typing import Any, Sequence

import jax.numpy as jnp
import numpy as np

from fgraph._dtypes import canonical_dtype, default_float_dtype, int_overflow, x64_enabled
from fgraph.device import put as _put
from fgraph.tensor import Tensor, _data, _init_leaf, _new_object, _to_array


def tensor(data: Any, dtype: Any = None, requires_grad: bool = False, *, device: Any = None) -> Tensor:
    """Make a leaf tensor from nested lists, scalars, NumPy or JAX arrays.

    Python floats become float32 (PyTorch's default); ints follow JAX's default
    integer. ``dtype`` overrides both. ``device`` (``"cpu"``, ``"cuda"``, an :class:`fgraph.device`...)
    places the data there (see ``docs/devices.md``).

    Example:
        >>> import fgraph as fg
        >>> fg.tensor([[1, 2], [3, 4]], dtype=fg.float32).shape
        (2, 2)
    """
    dt = canonical_dtype(dtype, "tensor")
    array = _to_array(data, dt, "tensor")
    if device is not None:
        array = _put(array, device)
    t = _new_object(Tensor)
    _init_leaf(t, array, requires_grad)
    return t


def _place(t: Tensor, device: Any) -> Tensor:
    """The new leaf ``t`` with its data on ``device`` (``t`` itself when the data is there already)."""
    data = _put(t._array, device)
    if data is t._array:
        return t
    out = _new_object(Tensor)
    _init_leaf(out, data, t._edge is not None)
    return out


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """Return ``data`` unchanged if it is a Tensor of the right dtype, else ``tensor(data, dtype)``; with
    ``device``, on that device (a Tensor of the right dtype moves with ``x.to(device)``, staying on the graph)."""
    if isinstance(data, Tensor) and (dtype is None or data.dtype == canonical_dtype(dtype, "as_tensor")):
        return data if device is None else data.to(device)
    return tensor(data, dtype=dtype, device=device)


def _shape_arg(shape: tuple, op: str = "zeros") -> tuple[int, ...]:
    """Sizes given as varargs (``2, 3``) or one sequence (``(2, 3)``), checked: non-negative ints."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    for s in shape:
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)):
            raise TypeError(
                f"{op}: size must be integers, given as varargs (2, 3) or a tuple ((2, 3),); "
                f"got {shape!r} ({type(s).__name__} {s!r})."
            )
        if s < 0:
            from fgraph.errors import OpError

            raise OpError(f"{op}: negative dimension {s} in size {tuple(int(d) for d in shape)}; sizes must be >= 0.")
    return tuple(int(s) for s in shape)


def _creation_dtype(dtype: Any, op: str) -> np.dtype:
    dt = canonical_dtype(dtype, op)
    return default_float_dtype() if dt is None else dt


def zeros(*shape: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros. ``fg.zeros(2, 3)`` or ``fg.zeros((2, 3))``.

    Example:
        >>> import fgraph as fg
        >>> fg.zeros(2, 3).shape
        (2, 3)
    """
    t = tensor(jnp.zeros(_shape_arg(shape, "zeros"), _creation_dtype(dtype, "zeros")), requires_grad=requires_grad)
    return t if device is None else _place(t, device)


def ones(*shape: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones. ``fg.ones(2, 3)`` or ``fg.ones((2, 3))``.

    Example:
        >>> import fgraph as fg
        >>> fg.ones(3).tolist()
        [1.0, 1.0, 1.0]
    """
    t = tensor(jnp.ones(_shape_arg(shape, "ones"), _creation_dtype(dtype, "ones")), requires_grad=requires_grad)
    return t if device is None else _place(t, device)


def full(shape: Sequence[int], fill_value: Any, dtype: Any = None, requires_grad: bool = False, *,
         device: Any = None) -> Tensor:
    """A tensor filled with ``fill_value``.

    Example:
        >>> import fgraph as fg
        >>> fg.full((2,), 7.0).tolist()
        [7.0, 7.0]
    """
    dt = canonical_dtype(dtype, "full")
    _check_python_ints((fill_value,), dt or _default_int_dtype(), "full")
    if dt is None:
        dt = np.asarray(fill_value).dtype
        dt = default_float_dtype() if dt.kind == "f" else jnp.asarray(fill_value).dtype
    size = _shape_arg((shape,), "full")  # an int, or one sequence of ints
    t = tensor(jnp.full(size, fill_value, dt), requires_grad=requires_grad)
    return t if device is None else _place(t, device)


def arange(start: Any, end: Any = None, step: Any = 1, dtype: Any = None, requires_grad: bool = False, *,
           device: Any = None) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive) by ``step``, like ``torch.arange``.

    Example:
        >>> import fgraph as fg
        >>> fg.arange(4).tolist()
        [0, 1, 2, 3]
    """
    if end is None:
        start, end = 0, start
    if not isinstance(step, Tensor) and step == 0:
        from fgraph.errors import OpError

        raise OpError(f"arange: step must be nonzero, got {step!r} (start={start!r}, end={end!r}); "
                      "for n evenly spaced values use fg.linspace(start, end, n).")
    dt = canonical_dtype(dtype, "arange")
    if dt is None and any(isinstance(v, float) for v in (start, end, step)):
        dt = default_float_dtype()
    _check_python_ints((start, end, step), dt or _default_int_dtype(), "arange")
    t = tensor(jnp.arange(start, end, step, dtype=dt), requires_grad=requires_grad)
    return t if device is None else _place(t, device)


def _default_int_dtype() -> np.dtype:
    """The dtype of tensors made from Python ints: int64, or int32 with JAX's x64 mode off."""
    return np.dtype("int64") if x64_enabled() else np.dtype("int32")


def _check_python_ints(values: tuple, dtype: np.dtype, op: str) -> None:
    """Python int arguments (fill values, bounds) must fit an integer ``dtype`` rather than wrap around."""
    if dtype.kind not in "iu":
        return
    info = np.iinfo(dtype)
    for v in values:
        if isinstance(v, int) and not isinstance(v, bool) and not info.min <= v <= info.max:
            raise int_overflow(v, dtype, op)


def zeros_like(t: Tensor, dtype: Any = None, requires_grad: bool = False, *,
               device: Any = None) -> Tensor:
    """Zeros with the shape (and dtype and device, unless given) of ``t``."""
    out = tensor(jnp.zeros_like(_data(t), dtype=canonical_dtype(dtype, "zeros_like")), requires_grad=requires_grad)
    return out if device is None else _place(out, device)


def ones_like(t: Tensor, dtype: Any = None, requires_grad: bool = False, *,
              device: Any = None) -> Tensor:
    """Ones with the shape (and dtype and device, unless given) of ``t``."""
    out = tensor(jnp.ones_like(_data(t), dtype=canonical_dtype(dtype, "ones_like")), requires_grad=requires_grad)
    return out if device is None else _place(out, device)


def full_like(t: Tensor, fill_value: Any, dtype: Any = None, requires_grad: bool = False, *,
              device: Any = None) -> Tensor:
    """``fill_value`` with the shape (and dtype and device, unless given) of ``t``."""
    out = tensor(
        jnp.full_like(_data(t), fill_value, dtype=canonical_dtype(dtype, "full_like")), requires_grad=requires_grad
    )
    return out if device is None else _place(out, device)
