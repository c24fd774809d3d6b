"""``fgraph.amp``: automatic mixed precision (``torch.amp``'s names): :class:`autocast` and :class:`GradScaler`.

See ``docs/amp.md``.

Example:
    >>> import fgraph as fg
    >>> with fg.amp.autocast("cpu", dtype=fg.bfloat16):
    ...     (fg.ones(2, 3) @ fg.ones(3, 2)).dtype
    dtype(bfloat16)
"""
from fgraph.amp.autocast_mode import (
    autocast, custom_bwd, custom_fwd, get_autocast_dtype, is_autocast_available, is_autocast_enabled,
)
from fgraph.amp.grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd", "is_autocast_enabled", "get_autocast_dtype",
           "is_autocast_available"]
