"""``jax.jit`` for fgraph's own programs: one XLA compile per signature, whichever arrays are committed.

``jax.jit`` keys its caches on each argument's *committed-ness* (an array placed with ``device_put`` or made
by a program from a committed input is committed; ``jnp.asarray`` data is not). A kernel called once with
``(committed, uncommitted)`` and once with ``(uncommitted, committed)`` arrays is lowered with other sharding
annotations and compiled twice -- 30-60 ms each on a CPU, for the same program -- and fgraph's saved tensors,
leaves and gradients mix both kinds (a notebook's first Hessian-vector product stalled 60-80 ms in one such
compile). In a process with a single device every array lives on that device, so :func:`kernel_jit` gives the
program that device as its explicit input and output placement: a new pattern is then a cached lowering
(~0.3 ms), not a compile, and jit's C++ dispatch path is kept (measured: no slower per call). With more than one
device the placement is the caller's to choose (arrays on another device stay there), and ``jax.jit`` is used
as it is.

Inside a JAX trace the placement buys nothing (the kernel is inlined into the outer program) and JAX refuses
it under manual axes (``shard_map``, ``pmap``): a call that may run inside a trace takes :func:`traced`'s form
of the kernel there, the plain ``jax.jit``.

Example:
    >>> import jax, jax.numpy as jnp
    >>> from fgraph._kernel_jit import kernel_jit, traced
    >>> double = kernel_jit(lambda v: 2 * v)
    >>> committed = jax.device_put(jnp.ones(3), jax.devices()[0])
    >>> double(committed).tolist() == double(jnp.ones(3)).tolist() == [2.0, 2.0, 2.0]
    True
    >>> jax.vmap(traced(double))(jnp.ones((2, 3))).shape
    (2, 3)
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import jax
from jax.sharding import SingleDeviceSharding

from fgraph._numbers import _at_top_level

__all__ = ["kernel_jit", "traced", "placed", "only_device"]

_ONLY: list = []  # [the process's single device's sharding, or None], once the backends are up


def only_device() -> Optional[SingleDeviceSharding]:
    """The placement of the process's one device, or ``None`` when there are several."""
    if not _ONLY:
        from jax.extend.backend import backends

        devices = [d for backend in backends().values() for d in backend.local_devices()]
        _ONLY.append(SingleDeviceSharding(devices[0]) if len(devices) == 1 and jax.process_count() == 1 else None)
    return _ONLY[0]


def kernel_jit(fn: Callable, **options: Any) -> Callable:
    """``jax.jit(fn, **options)``, placed on the process's only device when it has one (module docstring).

    Call it when the program is first needed, not at import: it asks JAX which devices exist."""
    placement = only_device()
    if placement is None or "in_shardings" in options or "out_shardings" in options:
        return jax.jit(fn, **options)
    pinned = jax.jit(fn, **options, in_shardings=placement, out_shardings=placement)
    pinned._fgraph_unplaced = (fn, options)  # traced() makes the plain jit from it, the first time a trace needs it
    return pinned


def traced(kernel: Callable) -> Callable:
    """The form of ``kernel`` to call inside a JAX trace: without a placement of its own."""
    recipe = getattr(kernel, "_fgraph_unplaced", None)
    if recipe is None:
        return kernel
    if type(recipe) is tuple:
        fn, options = recipe
        recipe = kernel._fgraph_unplaced = jax.jit(fn, **options)
    return recipe


def placed(kernel: Callable) -> Callable:
    """``kernel`` at the top level, :func:`traced`'s form inside a JAX trace (~0.2 us to tell which)."""
    return kernel if _at_top_level() else traced(kernel)
