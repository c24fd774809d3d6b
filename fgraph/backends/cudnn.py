"""``fg.backends.cudnn``: ``torch.backends.cudnn``'s flags, accepted and recorded with no effect.

XLA chooses (and autotunes) its own convolution algorithms, so ``benchmark`` changes nothing; on a GPU,
``XLA_FLAGS=--xla_gpu_deterministic_ops=true`` gives deterministic results (``deterministic`` does not).
"""
from __future__ import annotations

from typing import Optional

__all__ = ["benchmark", "deterministic", "enabled", "allow_tf32", "is_available", "version"]

#: Accepted; no effect (XLA autotunes its convolution algorithms itself).
benchmark = False
#: Accepted; no effect (see the module docstring for XLA's flag).
deterministic = False
#: Accepted; no effect.
enabled = True
#: Accepted; no effect (see ``fg.backends.cuda.matmul``).
allow_tf32 = True


def is_available() -> bool:
    """Whether there is a GPU (XLA calls cuDNN itself where it helps)."""
    from fgraph.cuda import is_available as gpu

    return gpu()


def version() -> Optional[int]:
    """``None``: fgraph does not call cuDNN directly."""
    return None
