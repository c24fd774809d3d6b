"""Where an optimizer's state lives: with its parameter, whatever the parameter's sharding.

A buffer shaped like its parameter (Adam's moments, a momentum buffer) takes the parameter's
sharding, so an FSDP-sharded parameter has sharded moments; a state of another shape (the
``step`` count, NAdam's ``mu_product``) is replicated on the parameter's devices. The first
step's state is placed so (committed, as the kernel's later outputs are, so the first step's
kernel is reused), and so is a loaded state (``Optimizer.load_state_dict``), as PyTorch moves
loaded state to the parameter's device.
"""
from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

__all__ = ["state_sharding", "place_like_param", "replicated"]


def state_sharding(value: Any, param: jax.Array) -> jax.sharding.Sharding:
    """The sharding of an optimizer state ``value`` (anything with a ``shape``) of the parameter array ``param``.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from jax.sharding import NamedSharding, PartitionSpec as P
        >>> from fgraph.optim._state_placement import state_sharding
        >>> mesh = jax.make_mesh((len(jax.devices()),), ("fsdp",))
        >>> p = jax.device_put(jnp.zeros((2 * len(jax.devices()), 3)), NamedSharding(mesh, P("fsdp")))
        >>> state_sharding(jnp.zeros_like(p), p).spec, state_sharding(jnp.zeros(()), p).spec
        (P('fsdp',), P())
    """
    where = param.sharding
    if tuple(value.shape) == tuple(param.shape):
        return where
    if isinstance(where, NamedSharding):
        return NamedSharding(where.mesh, PartitionSpec(), memory_kind=where.memory_kind)
    if where.is_fully_replicated and len(where.device_set) == 1:
        return where
    devices = sorted(where.device_set, key=lambda d: d.id)  # another Sharding type: replicate on its devices
    return NamedSharding(Mesh(np.array(devices), ("devices",)), PartitionSpec())


def place_like_param(value: jax.Array, param: Any) -> jax.Array:
    """``value`` placed as :func:`state_sharding` says, when ``param`` (an array) is committed; else unchanged.

    Example:
        >>> import jax.numpy as jnp
        >>> from fgraph.optim._state_placement import place_like_param
        >>> place_like_param(jnp.ones(2), jnp.zeros(2)).tolist()   # an uncommitted parameter: nothing to match
        [1.0, 1.0]
    """
    if isinstance(param, jax.core.Tracer) or isinstance(value, jax.core.Tracer):
        return value
    if not param.committed:
        return value if isinstance(value, jax.Array) else jax.device_put(value)
    sharding = state_sharding(value, param)
    if isinstance(value, jax.Array) and value.committed and value.sharding == sharding:
        return value
    if sharding.is_fully_addressable:
        return jax.device_put(value, sharding)  # committed, as the kernel's later outputs are
    from fgraph.distributed._placement import put_array  # a mesh spanning other processes: built from the host

    return put_array(value, sharding)


def replicated(array: Any) -> Any:
    """``array`` replicated on the devices of its mesh when it is sharded over several (LBFGS's flat vectors);
    otherwise ``array`` itself.

    Example:
        >>> import jax.numpy as jnp
        >>> from fgraph.optim._state_placement import replicated
        >>> replicated(jnp.ones(2)).tolist()
        [1.0, 1.0]
    """
    if isinstance(array, jax.core.Tracer) or not isinstance(array, jax.Array) or not array.committed:
        return array
    sharding = array.sharding
    if sharding.is_fully_replicated:
        return array
    return jax.device_put(array, state_sharding(np.empty(()), array))
