"""``fg.backends.mps``: Apple's Metal backend, which JAX does not provide here."""
from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """``False``: no Metal backend."""
    return False


def is_built() -> bool:
    """``False``: no Metal backend."""
    return False
