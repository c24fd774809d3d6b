"""JAX interop both ways: :func:`to_jax` (an fgraph function as a JAX function) and
:func:`from_jax` (a JAX function as an fgraph op). See ``docs/jax-interop.md``.

Example:
    >>> import jax.numpy as jnp
    >>> import fgraph as fg
    >>> from interop.jax_bridge import from_jax, to_jax
    >>> sin = from_jax(jnp.sin)
    >>> f = to_jax(lambda x: sin(x).sum())
    >>> round(float(f(jnp.zeros(3))), 6)
    0.0
"""
from __future__ import annotations

from interop._from_jax import from_jax
from interop._to_jax import to_jax

__all__ = ["to_jax", "from_jax"]
