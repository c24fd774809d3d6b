"""``fg.cuda.amp``: PyTorch's deprecated spellings of ``fg.amp`` for CUDA, kept so ported code runs.

``fg.cuda.amp.autocast(...)`` is ``fg.amp.autocast("cuda", ...)`` and ``fg.cuda.amp.GradScaler(...)`` is
``fg.amp.GradScaler("cuda", ...)``; each warns a ``FutureWarning`` with PyTorch's message, naming the
new spelling. ``custom_fwd``/``custom_bwd`` likewise.

Example:
    >>> import warnings, fgraph as fg
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     scaler = fg.cuda.amp.GradScaler()
    >>> caught[0].category.__name__, scaler.get_scale()
    ('FutureWarning', 65536.0)
"""
from __future__ import annotations

from fgraph._deprecated_amp import deprecated_amp

autocast, GradScaler, custom_fwd, custom_bwd = deprecated_amp("cuda")

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]
