"""Randomness: explicit JAX keys, and a seeded default generator for convenience.

Every random op takes ``key=`` (a ``jax.random`` key). Given the same key it
returns the same values, eagerly or traced, so programs stay reproducible and
JAX-traceable. Without ``key=`` the op draws the next key from the default
generator, which :func:`manual_seed` resets. Inside ``jax.jit`` the default
generator's key is a trace-time constant, so traced code should pass ``key=``.

Example:
    >>> import fgraph as fg
    >>> _ = fg.manual_seed(0)
    >>> k1 = fg.random.next_key()
    >>> _ = fg.manual_seed(0)
    >>> bool((fg.random.next_key() == k1).all())
    True
"""
from __future__ import annotations

import threading
from typing import Any, Optional

import jax

__all__ = ["Generator", "default_generator", "manual_seed", "next_key", "get_rng_state", "set_rng_state", "resolve_key"]


class Generator:
    """A stream of JAX PRNG keys: each :meth:`next_key` splits off a fresh key."""

    def __init__(self, seed: int = 0) -> None:
        self._lock = threading.Lock()
        self._key = jax.random.PRNGKey(seed)

    def manual_seed(self, seed: int) -> "Generator":
        with self._lock:
            self._key = jax.random.PRNGKey(int(seed))
        return self

    def next_key(self) -> jax.Array:
        with self._lock:
            self._key, key = jax.random.split(self._key)
        return key

    def get_state(self) -> jax.Array:
        return self._key

    def set_state(self, state: jax.Array) -> None:
        with self._lock:
            self._key = state


default_generator = Generator(0)


def manual_seed(seed: int) -> Generator:
    """Reseed the default generator (like ``torch.manual_seed``)."""
    return default_generator.manual_seed(seed)


def next_key() -> jax.Array:
    """A fresh key from the default generator."""
    return default_generator.next_key()


def get_rng_state() -> jax.Array:
    """The default generator's state (a key), for :func:`set_rng_state`."""
    return default_generator.get_state()


def set_rng_state(state: jax.Array) -> None:
    """Restore the default generator to a state from :func:`get_rng_state`."""
    default_generator.set_state(state)


def resolve_key(key: Optional[Any], generator: Optional[Generator] = None) -> jax.Array:
    """``key`` itself (a Tensor's data is unwrapped), or the next key of ``generator``/the default."""
    if key is None:
        return (generator or default_generator).next_key()
    return getattr(key, "data", key)
