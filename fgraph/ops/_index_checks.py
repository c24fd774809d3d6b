"""Argument checks shared by the indexing and gather/scatter ops.

Everything here runs in the public functions, before an op is applied, so a bad
call fails with a message that names the op, the shapes, the dtypes and the fix
instead of a JAX traceback. Value checks (index bounds) need the index on the
host: they run eagerly only, and are skipped while the index is a JAX tracer
(inside ``jax.jit``, ``vmap`` or ``fg.compile``), where out-of-range indices
follow JAX's rules (gathers clamp, scatters drop) -- as in PyTorch on an
accelerator, such indices are then the caller's responsibility.

Example:
    >>> import fgraph as fg
    >>> from fgraph.ops._index_checks import index_array
    >>> index_array(fg.tensor([0, 2]), "gather").tolist()
    [0, 2]
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from fgraph.errors import OpError
from fgraph.lazy._array import LazyArray
from fgraph.tensor import Tensor, type_name

__all__ = ["is_traced", "index_array", "check_bounds", "norm_dim", "check_tensor", "bool_mask", "hashable_scalar"]

_INDEX_DTYPES = (np.dtype("int32"), np.dtype("int64"))


def is_traced(x: Any) -> bool:
    """Whether ``x`` (a Tensor or an array) is a JAX tracer, i.e. its values are unknown."""
    data = x._array if isinstance(x, Tensor) else x
    return isinstance(data, jax.core.Tracer) or (type(data) is LazyArray and data.abstract)


def check_tensor(x: Any, op: str, what: str = "input") -> Tensor:
    """``x`` itself if it is a Tensor, else a ``TypeError`` naming the op and argument."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {what} must be a Tensor, got {type_name(x)}; wrap it with fg.tensor(...).")
    return x


def index_array(index: Any, op: str, what: str = "index") -> jax.Array:
    """The array of an integer index (int32 or int64), or a clear error for anything else."""
    if isinstance(index, Tensor):
        data = index._array
    elif isinstance(index, (jax.Array, np.ndarray)):
        data = jnp.asarray(index)
    else:
        raise TypeError(
            f"{op}: {what} must be an integer Tensor (int32 or int64), got {type_name(index)}; "
            f"wrap it with fg.tensor(..., dtype=fg.int64)."
        )
    if np.dtype(data.dtype) not in _INDEX_DTYPES:
        raise OpError(
            f"{op}: expected {what} of dtype int32 or int64, got {what} of shape {tuple(data.shape)} "
            f"and dtype {data.dtype}; convert it with {what}.long()."
        )
    return data


def check_bounds(op: str, data: Any, size: int, dim: int, *, negative: bool) -> None:
    """Eagerly check that every value of ``data`` indexes a dimension of ``size``.

    ``negative``: whether ``-size <= i < 0`` counts from the end (take, index_put)
    or is an error (gather, scatter, index_select, as in PyTorch). Skipped under tracing.
    """
    if isinstance(data, jax.core.Tracer) or data.size == 0:
        return
    host = np.asarray(data)
    lo, hi = int(host.min()), int(host.max())
    low = -size if negative else 0
    if lo < low or hi >= size:
        bad = lo if lo < low else hi
        allowed = f"[{low}, {size - 1}]" if size else "none (the dimension is empty)"
        raise IndexError(
            f"{op}: index {bad} is out of bounds for dimension {dim} with size {size} (valid index values: {allowed})."
        )


def norm_dim(dim: Any, ndim: int, op: str) -> int:
    """``dim`` as a non-negative axis; 0-d tensors accept ``dim`` 0 and -1, as in PyTorch."""
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"{op}: dim must be an int, got {type(dim).__name__}.")
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"{op}: dim {dim} is out of range for a tensor with {ndim} dimensions "
            f"(expected a value in [{-n}, {n - 1}])."
        )
    return int(dim) % n


def bool_mask(mask: Any, op: str) -> Tensor:
    """``mask`` as a bool Tensor, or a clear error (PyTorch only takes bool masks)."""
    if not isinstance(mask, Tensor):
        raise TypeError(f"{op}: mask must be a bool Tensor, got {type(mask).__name__}.")
    if mask.dtype != np.bool_:
        raise OpError(
            f"{op}: only bool masks are supported, got a mask of shape {mask.shape} and dtype {mask.dtype}; "
            f"convert it with mask.bool() or compare first (e.g. x > 0)."
        )
    return mask


def hashable_scalar(value: Any, op: str) -> Any:
    """A Python number (``bool``, ``int``, ``float``) from a scalar argument, for static parameters."""
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, (np.generic, np.ndarray)) and np.ndim(value) == 0:
        return np.asarray(value).item()
    raise TypeError(f"{op}: expected a Python number, got {type(value).__name__}.")
