"""PyTorch's factory keywords for layers: ``device=`` and ``dtype=`` of new parameters and buffers."""
from __future__ import annotations

from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from fgraph._dtypes import canonical_dtype, default_float_dtype
from fgraph._methods import resolve_device
from fgraph.nn.parameter import Parameter, _make_parameter
from fgraph.tensor import Tensor, _wrap

__all__ = ["empty_parameter", "zeros_buffer", "full_buffer", "register_affine", "reset_affine"]


def _array(shape: Sequence[int], fill: Any, dtype: Any, device: Any, op: str) -> jax.Array:
    dt = canonical_dtype(dtype, op)
    host = np.full(tuple(shape), fill, default_float_dtype() if dt is None else dt)  # no kernel to compile
    return jnp.asarray(host) if device is None else jax.device_put(host, resolve_device(device))


def empty_parameter(shape: Sequence[int], dtype: Any = None, device: Any = None, op: str = "Module",
                    requires_grad: bool = True) -> Parameter:
    """A Parameter of zeros, to be filled by the layer's ``reset_parameters`` (``torch.empty``'s role)."""
    return _make_parameter(_array(shape, 0, dtype, device, op), requires_grad)


def zeros_buffer(shape: Sequence[int], dtype: Any = None, device: Any = None, op: str = "Module") -> Tensor:
    """A buffer of zeros."""
    return _wrap(_array(shape, 0, dtype, device, op))


def full_buffer(shape: Sequence[int], fill: Any, dtype: Any = None, device: Any = None,
                op: str = "Module") -> Tensor:
    """A buffer filled with ``fill``."""
    return _wrap(_array(shape, fill, dtype, device, op))


def check_positive_int(value: Any, name: str, op: str, allow_zero: bool = False) -> int:
    """``value`` as an int > 0 (>= 0 with ``allow_zero``), or a ``ValueError`` naming the layer and argument."""
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if allow_zero else 1):
        bound = "non-negative" if allow_zero else "positive"
        raise ValueError(f"{op}: {name} must be a {bound} integer, got {value!r}.")
    return value



def register_affine(module: Any, shape: Sequence[int], affine: bool, bias: bool, dtype: Any, device: Any,
                    op: str) -> None:
    """A normalisation layer's ``weight`` and ``bias`` of ``shape`` (``None`` where absent, as torch registers them)."""
    module.register_parameter("weight", empty_parameter(shape, dtype, device, op) if affine else None)
    module.register_parameter("bias", empty_parameter(shape, dtype, device, op) if affine and bias else None)


def reset_affine(module: Any) -> None:
    """``weight`` to ones and ``bias`` to zeros, where present (torch's initialisation of normalisation layers)."""
    from fgraph.nn import init

    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)
