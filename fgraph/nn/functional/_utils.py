"""Argument checks and reductions shared by the ``fgraph.nn.functional`` modules.

Everything here runs in the public functions, before any kernel: it looks only at
shapes, dtypes and static arguments, never at values, so it is safe under tracing.

Example:
    >>> import fgraph as fg
    >>> from fgraph.nn.functional._utils import reduce_loss
    >>> reduce_loss(fg.tensor([1.0, 3.0]), "mean", "l1_loss").item()
    2.0
"""
from __future__ import annotations

import warnings
from typing import Any, Optional, Sequence, Union

import jax
import jax.numpy as jnp
import numpy as np

from fgraph.errors import OpError
from fgraph.lazy._array import LazyArray
from fgraph.ops.reduction import mean, sum
from fgraph.tensor import Tensor, _is_torch_tensor, _torch_message

__all__: list[str] = []

REDUCTIONS = ("none", "mean", "sum")


IntOrTuple = Union[int, Sequence[int]]


def int_tuple(v: IntOrTuple, n: int, op: str, name: str) -> tuple[int, ...]:
    """``v`` as ``n`` ints (an int or a 1-tuple is repeated), or a clear error naming ``op`` and ``name``."""
    if isinstance(v, int) and not isinstance(v, bool):
        return (v,) * n
    t = tuple(v)
    if len(t) == 1:
        t = t * n
    if len(t) != n or not all(isinstance(i, int) and not isinstance(i, bool) for i in t):
        raise OpError(f"{op}: '{name}' must be an int or a tuple of {n} ints, got {v!r}.")
    return t


def is_traced(t: Any) -> bool:
    """Whether ``t`` (a Tensor or array) holds a JAX tracer (inside jit/vmap/compile)."""
    data = t._array if isinstance(t, Tensor) else t
    return isinstance(data, jax.core.Tracer) or (type(data) is LazyArray and data.abstract)


def check_tensor(x: Any, op: str, name: str = "input") -> Tensor:
    """``x`` itself if it is a Tensor, else a TypeError naming the op and the argument."""
    if not isinstance(x, Tensor):
        if _is_torch_tensor(x):
            raise TypeError(_torch_message(op, f"argument '{name}'", x))
        raise TypeError(f"{op}: argument '{name}' must be a Tensor, not {type(x).__name__}; wrap it with fg.tensor(...).")
    return x


_KIND: dict = {}  # dtype -> (inexact, integer); jnp.issubdtype costs microseconds per call


def _kind(dtype: Any) -> tuple[bool, bool]:
    kind = _KIND.get(dtype)
    if kind is None:
        kind = _KIND[dtype] = (bool(jnp.issubdtype(dtype, jnp.inexact)),
                               dtype != np.bool_ and bool(jnp.issubdtype(dtype, jnp.integer)))
    return kind


def check_float(x: Any, op: str, name: str = "input") -> Tensor:
    """``x`` if it is a floating-point Tensor, else an error naming the dtype and the fix."""
    check_tensor(x, op, name)
    if not _kind(x.dtype)[0]:
        raise OpError(
            f"{op}: '{name}' must be a floating-point tensor, got dtype {x.dtype} (shape {tuple(x.shape)}); "
            "convert it with .float() or .double()."
        )
    return x


def check_integer(x: Any, op: str, name: str) -> Tensor:
    """``x`` if it is an integer Tensor (class indices), else an error naming the dtype and the fix."""
    check_tensor(x, op, name)
    if not _kind(x.dtype)[1]:
        raise OpError(
            f"{op}: '{name}' must be an integer tensor of class indices, got dtype {x.dtype} "
            f"(shape {tuple(x.shape)}); convert it with .long()."
        )
    return x


def no_inplace(op: str, inplace: bool) -> None:
    """fgraph tensors are immutable records: ``inplace=True`` cannot be honoured."""
    if inplace:
        raise OpError(
            f"{op}: inplace=True is not supported, fgraph tensors are immutable records. "
            f"Use the returned tensor instead (x = F.{op}(x))."
        )


def dim_index(dim: int, ndim: int, op: str) -> int:
    """``dim`` normalised into ``[0, ndim)`` (a 0-d tensor accepts ``0`` and ``-1``)."""
    size = max(ndim, 1)
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"{op}: dim must be an int, got {type(dim).__name__}.")
    if not -size <= dim < size:
        raise IndexError(
            f"{op}: dim {dim} is out of range for a tensor with {ndim} dimensions "
            f"(expected a value in [{-size}, {size - 1}])."
        )
    return int(dim) % size


def broadcast_shape(op: str, *tensors: Tensor) -> tuple[int, ...]:
    """The broadcast shape of ``tensors``, or an OpError naming every shape."""
    shapes = [tuple(t.shape) for t in tensors]
    try:
        return tuple(jnp.broadcast_shapes(*shapes))
    except ValueError:
        raise OpError(
            f"{op}: shapes {shapes} do not broadcast: align them from the right, where each pair of sizes "
            "must be equal or one of them 1."
        ) from None


def broadcasts_to(t: Tensor, shape: tuple[int, ...]) -> bool:
    """Whether ``t`` broadcasts to exactly ``shape``: no more dimensions, each 1 or equal (from the right)."""
    own = tuple(t.shape)
    if len(own) > len(shape):
        return False
    return all(a == 1 or a == b for a, b in zip(reversed(own), reversed(tuple(shape))))


def legacy_reduction(size_average: Optional[bool], reduce: Optional[bool], reduction: str) -> str:
    """Map PyTorch's deprecated ``size_average``/``reduce`` flags onto ``reduction``."""
    if size_average is None and reduce is None:
        return reduction
    warnings.warn(
        "size_average and reduce args will be deprecated, please use reduction instead.", UserWarning, stacklevel=3
    )
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def check_reduction(reduction: str, op: str, allowed: tuple[str, ...] = REDUCTIONS) -> str:
    if reduction not in allowed:
        raise OpError(f"{op}: {reduction!r} is not a valid value for reduction; expected one of {list(allowed)}.")
    return reduction


def reduce_loss(loss: Tensor, reduction: str, op: str) -> Tensor:
    """Apply ``reduction`` ('none', 'mean' or 'sum') to an elementwise loss."""
    check_reduction(reduction, op)
    if reduction == "mean":
        return mean(loss)
    if reduction == "sum":
        return sum(loss)
    return loss


def warn_target_size(op: str, input: Tensor, target: Tensor) -> None:
    """PyTorch's warning for a target whose shape differs from the input's (the loss then broadcasts)."""
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            f"{op}: using a target size {tuple(target.shape)} that is different to the input size "
            f"{tuple(input.shape)}. This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            UserWarning,
            stacklevel=3,
        )
