"""``Module.to(...)``: parse PyTorch's argument forms into one array conversion."""
from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp

from fgraph._dtypes import canonical_dtype
from fgraph._methods import is_device, resolve_device
from fgraph.tensor import Tensor

__all__ = ["converter"]


def converter(args: tuple, kwargs: dict) -> Callable[[Any], Any]:
    """``fn(array) -> array`` for ``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(tensor)``.

    The dtype applies to floating point and complex arrays only, as in PyTorch.
    """
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    for name in ("non_blocking", "copy", "memory_format"):
        kwargs.pop(name, None)
    if kwargs:
        raise TypeError(f"Module.to: unexpected arguments {sorted(kwargs)}")
    for arg in args:
        if isinstance(arg, Tensor):
            dtype = arg.dtype
            device = arg.device
        elif is_device(arg):
            device = arg
        elif isinstance(arg, bool) or arg is None:  # positional non_blocking
            continue
        else:
            dtype = arg
    if dtype is not None:
        dtype = canonical_dtype(dtype, "Module.to")
        if not jnp.issubdtype(dtype, jnp.inexact):
            raise TypeError(
                f"Module.to only accepts floating point or complex dtypes, but got desired dtype={dtype}; "
                "integer buffers keep their dtype."
            )
    device = None if device is None else resolve_device(device)

    def convert(array: Any) -> Any:
        out = array
        if dtype is not None and jnp.issubdtype(array.dtype, jnp.inexact) and array.dtype != dtype:
            out = out.astype(dtype)
        if device is None or getattr(out, "devices", None) is None:
            return out
        if isinstance(device, jax.sharding.Sharding):
            from fgraph.distributed._placement import put_array  # also builds arrays on multi-process meshes

            return put_array(out, device)
        return out if device in out.devices() and len(out.devices()) == 1 else jax.device_put(out, device)

    return convert
