"""The deprecated ``fg.cuda.amp`` / ``fg.cpu.amp`` spellings (PyTorch's ``torch.cuda.amp``/``torch.cpu.amp``).

Each warns a ``FutureWarning`` with PyTorch's message, fgraph's names in place of torch's, and delegates to
``fg.amp.autocast(device_type, ...)`` / ``fg.amp.GradScaler(device_type, ...)``.
"""
from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, Optional

import jax.numpy as jnp

from fgraph.amp import GradScaler as _GradScaler
from fgraph.amp import autocast as _autocast
from fgraph.amp import custom_bwd as _custom_bwd
from fgraph.amp import custom_fwd as _custom_fwd

__all__ = ["deprecated_amp", "message"]

_DEFAULT_DTYPE = {"cuda": jnp.float16, "cpu": jnp.bfloat16}


def message(device_type: str, name: str) -> str:
    """PyTorch's deprecation message for ``torch.<device_type>.amp.<name>``, with fgraph's names."""
    if name in ("custom_fwd", "custom_bwd"):
        return (f"`fgraph.{device_type}.amp.{name}(args...)` is deprecated. "
                f"Please use `fgraph.amp.{name}(args..., device_type='{device_type}')` instead.")
    return (f"`fgraph.{device_type}.amp.{name}(args...)` is deprecated. "
            f"Please use `fgraph.amp.{name}('{device_type}', args...)` instead.")


def deprecated_amp(device_type: str) -> tuple:
    """``(autocast, GradScaler, custom_fwd, custom_bwd)`` for ``fg.<device_type>.amp``."""
    module = f"fgraph.{device_type}.amp"

    class autocast(_autocast):
        __doc__ = (f"``fg.{device_type}.amp.autocast(enabled=True, dtype=..., cache_enabled=True)``: deprecated, "
                   f"as in PyTorch; use ``fg.amp.autocast('{device_type}', ...)`` (this warns a FutureWarning "
                   "and delegates to it).")

        def __init__(self, enabled: bool = True, dtype: Any = _DEFAULT_DTYPE[device_type],
                     cache_enabled: bool = True) -> None:
            warnings.warn(message(device_type, "autocast"), FutureWarning, stacklevel=2)
            super().__init__(device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    class GradScaler(_GradScaler):
        __doc__ = (f"``fg.{device_type}.amp.GradScaler(init_scale=2.**16, ...)``: deprecated, as in PyTorch; use "
                   f"``fg.amp.GradScaler('{device_type}', ...)`` (this warns a FutureWarning and delegates to it).")

        def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                     growth_interval: int = 2000, enabled: bool = True) -> None:
            warnings.warn(message(device_type, "GradScaler"), FutureWarning, stacklevel=2)
            super().__init__(device_type, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)

    def custom_fwd(fwd: Optional[Callable] = None, *, cast_inputs: Any = None) -> Callable:
        warnings.warn(message(device_type, "custom_fwd"), FutureWarning, stacklevel=2)
        return functools.partial(_custom_fwd, device_type=device_type)(fwd=fwd, cast_inputs=cast_inputs)

    def custom_bwd(bwd: Callable) -> Callable:
        warnings.warn(message(device_type, "custom_bwd"), FutureWarning, stacklevel=2)
        return _custom_bwd(bwd, device_type=device_type)

    for obj in (autocast, GradScaler, custom_fwd, custom_bwd):
        obj.__module__ = module
        obj.__qualname__ = obj.__name__
    custom_fwd.__doc__ = (f"Deprecated, as in PyTorch: ``fg.amp.custom_fwd(..., device_type='{device_type}')`` "
                          "(warns a FutureWarning and delegates to it).")
    custom_bwd.__doc__ = (f"Deprecated, as in PyTorch: ``fg.amp.custom_bwd(..., device_type='{device_type}')`` "
                          "(warns a FutureWarning and delegates to it).")
    return autocast, GradScaler, custom_fwd, custom_bwd
