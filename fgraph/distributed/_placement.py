"""Placement: meshes, replicating a model, sharding a batch, putting arrays under a sharding.

fgraph reaches many devices through JAX's own sharding: place the arrays, and a
compiled step (:func:`fgraph.compile`) runs where its data is (computation follows
data). A data-parallel step is a replicated model and optimizer plus a batch sharded
along its first axis; XLA inserts the gradient all-reduce. Multi-host runs call
``jax.distributed.initialize()`` first and build the mesh over ``jax.devices()``.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> mesh = fg.distributed.mesh()                       # every device, one "data" axis
    >>> model = fg.distributed.replicate(fg.nn.Linear(4, 2), mesh)
    >>> x = fg.distributed.shard_batch(fg.ones(len(jax.devices()) * 2, 4), mesh)
    >>> model(x).shape
    (2, 2)
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from fgraph.tensor import Tensor

__all__ = ["mesh", "replicate", "shard_batch", "place"]


def mesh(devices: Optional[Sequence[Any]] = None, axis_name: str = "data") -> Mesh:
    """A one-axis mesh over ``devices`` (default: every device JAX sees).

    Example:
        >>> import fgraph as fg
        >>> fg.distributed.mesh().axis_names
        ('data',)
    """
    devices = list(jax.devices() if devices is None else devices)
    return Mesh(np.array(devices), (axis_name,))


def replicate(obj: Any, mesh: Mesh) -> Any:
    """Place a Module's parameters and buffers, an Optimizer's state or a Tensor on every device of ``mesh``.

    A module or optimizer is updated in place (parameters rebound) and returned.

    Example:
        >>> import fgraph as fg
        >>> lin = fg.distributed.replicate(fg.nn.Linear(2, 2), fg.distributed.mesh())
        >>> lin.weight.array.sharding.is_fully_replicated
        True
    """
    return place(obj, NamedSharding(mesh, PartitionSpec()))


def shard_batch(tensor: Any, mesh: Mesh, axis: int = 0, mesh_axis: Optional[str] = None) -> Tensor:
    """``tensor`` split along ``axis`` over the mesh's ``mesh_axis`` (default: its first axis).

    The size along ``axis`` must divide evenly by the number of devices on that mesh axis.

    Example:
        >>> import jax
        >>> import fgraph as fg
        >>> n = len(jax.devices())
        >>> fg.distributed.shard_batch(fg.ones(2 * n, 3), fg.distributed.mesh()).shape
        (2, 3)
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"shard_batch: expected a Tensor, got {type(tensor).__name__}.")
    name = mesh.axis_names[0] if mesh_axis is None else mesh_axis
    if name not in mesh.axis_names:
        raise ValueError(f"shard_batch: mesh has axes {mesh.axis_names}, not {name!r}.")
    axis = axis % max(tensor.ndim, 1)
    parts = mesh.shape[name]
    if tensor.ndim == 0 or tensor.shape[axis] % parts:
        raise ValueError(
            f"shard_batch: dimension {axis} of a tensor of shape {tensor.shape} does not split evenly over {parts} "
            f"devices on mesh axis {name!r}; use a batch size divisible by {parts}."
        )
    spec = [None] * tensor.ndim
    spec[axis] = name
    return tensor.to(NamedSharding(mesh, PartitionSpec(*spec)))


def place(obj: Any, sharding: jax.sharding.Sharding) -> Any:
    """Put every array of ``obj`` (a Tensor, Module or Optimizer) under ``sharding``; returns ``obj`` (or the new Tensor)."""
    from fgraph.nn.modules.module import Module
    from fgraph.optim.optimizer import Optimizer
    from fgraph.tensor import _wrap

    if isinstance(obj, Tensor):
        return obj.to(sharding)
    if isinstance(obj, Module):
        return obj.to(sharding)
    if isinstance(obj, Optimizer):
        for p, state in obj.state.items():
            obj.state[p] = {k: None if v is None else _wrap(jax.device_put(v.array, sharding)) for k, v in state.items()}
        return obj
    raise TypeError(f"replicate: expected a Tensor, Module or Optimizer, got {type(obj).__name__}.")
