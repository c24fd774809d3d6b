"""``fg.cpu.amp``: PyTorch's deprecated spellings of ``fg.amp`` for the CPU, kept so ported code runs.

``fg.cpu.amp.autocast(...)`` is ``fg.amp.autocast("cpu", ...)`` (bfloat16 by default) and
``fg.cpu.amp.GradScaler(...)`` is ``fg.amp.GradScaler("cpu", ...)``; each warns a ``FutureWarning`` with
PyTorch's message, naming the new spelling.

Example:
    >>> import warnings, fgraph as fg
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", FutureWarning)
    ...     with fg.cpu.amp.autocast():
    ...         (fg.ones(2, 2) @ fg.ones(2, 2)).dtype
    dtype(bfloat16)
"""
from __future__ import annotations

from fgraph._deprecated_amp import deprecated_amp

autocast, GradScaler, _custom_fwd, _custom_bwd = deprecated_amp("cpu")

__all__ = ["autocast", "GradScaler"]
