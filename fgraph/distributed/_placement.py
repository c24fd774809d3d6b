"""Placement: meshes, replicating a model, sharding a batch, putting arrays under a sharding.

fgraph reaches many devices through JAX's own sharding: place the arrays, and a
compiled step (:func:`fgraph.compile`) runs where its data is (computation follows
data). A data-parallel step is a replicated model and optimizer plus a batch sharded
along its first axis; XLA inserts the gradient all-reduce. Multi-process runs call
:func:`fgraph.distributed.initialize` first and build the mesh over ``jax.devices()``
(every process's devices); every placement then goes through :func:`put_array`, which
builds global arrays from host values instead of moving a local array across hosts.

The package's docstring (:mod:`fgraph.distributed`) shows a data-parallel placement; each function here
has its own example.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from fgraph.lazy._array import concrete
from fgraph.tensor import Tensor

__all__ = ["mesh", "replicate", "shard_batch", "place", "put_array"]

MeshAxes = Union[str, Sequence[str]]


def mesh(devices: Optional[Sequence[Any]] = None, axis_name: str = "data") -> Mesh:
    """A one-axis mesh over ``devices`` (default: every device JAX sees, every process's in a multi-process run).

    Example:
        >>> import fgraph as fg
        >>> fg.distributed.mesh().axis_names
        ('data',)
    """
    devices = list(jax.devices() if devices is None else devices)
    return Mesh(np.array(devices), (axis_name,))


def put_array(array: Any, sharding: jax.sharding.Sharding) -> Any:
    """``array`` under ``sharding``: the one function through which fgraph places arrays.

    Within one process (every device of ``sharding`` is this process's) this is ``jax.device_put``. When
    ``sharding`` spans other processes' devices (a global mesh after :func:`fgraph.distributed.initialize`),
    a local array cannot be sent there; the global array is built from this process's host copy with
    ``jax.make_array_from_callback``, each process filling its own devices. Every process must then hold
    the same value (the same seed, the same checkpoint), as every process of a JAX program runs the same
    code. An array already on the global mesh is resharded there (``jax.device_put``). JAX tracers (inside
    :func:`fgraph.compile`) are returned unchanged: placement is an eager operation. Returns ``array``
    itself when it is placed so already.

    Example:
        >>> import jax, numpy as np
        >>> from fgraph.distributed import NamedSharding, PartitionSpec, mesh, put_array
        >>> on_all = NamedSharding(mesh(), PartitionSpec())
        >>> put_array(np.ones((2, 3), np.float32), on_all).sharding.is_fully_replicated
        True
    """
    array = concrete(array)  # a value deferred dispatch holds pending runs now
    if isinstance(array, jax.core.Tracer):
        return array
    if not isinstance(array, jax.Array):
        if sharding.is_fully_addressable:
            return jax.device_put(array, sharding)
        return _from_host(np.asarray(array), sharding)
    if array.sharding == sharding:
        return array
    if array.is_fully_addressable and not sharding.is_fully_addressable:  # a local array onto a global mesh
        if jax.dtypes.issubdtype(array.dtype, jax.dtypes.prng_key):  # typed PRNG keys: place the key bits
            bits = put_array(jax.random.key_data(array), sharding)
            return jax.random.wrap_key_data(bits, impl=jax.random.key_impl(array))
        return _from_host(np.asarray(array), sharding)
    if not array.is_fully_addressable and sharding.is_fully_addressable:
        raise ValueError(
            f"put_array: an array of shape {array.shape} spans other processes' devices and cannot move onto "
            f"this process's devices alone ({sharding}); gather it first with "
            "jax.experimental.multihost_utils.process_allgather, or place it on a sharding over the global mesh.")
    return jax.device_put(array, sharding)


def _from_host(host: np.ndarray, sharding: jax.sharding.Sharding) -> jax.Array:
    """The global array whose value is ``host`` (the same in every process), each process filling its devices."""
    return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])


def replicate(obj: Any, mesh: Mesh) -> Any:
    """Place a Module's parameters and buffers, an Optimizer's state or a Tensor on every device of ``mesh``.

    A module or optimizer is updated in place (parameters rebound) and returned. On a multi-process mesh
    every process must hold the same values (build the model after the same ``fg.manual_seed``).

    Example:
        >>> import fgraph as fg
        >>> lin = fg.distributed.replicate(fg.nn.Linear(2, 2), fg.distributed.mesh())
        >>> lin.weight.array.sharding.is_fully_replicated
        True
    """
    return place(obj, NamedSharding(mesh, PartitionSpec()))


def _batch_mesh_axes(mesh: Mesh, axis: Any, mesh_axis: Optional[MeshAxes]) -> tuple[int, tuple[str, ...]]:
    """The tensor axis and the mesh axes of ``shard_batch``'s arguments (a mesh-axis name may come third)."""
    if isinstance(axis, (str, tuple, list)):  # shard_batch(x, mesh, "data"): the mesh axis, tensor axis 0
        if mesh_axis is not None and _names(axis) != _names(mesh_axis):
            raise TypeError(f"shard_batch: got mesh axis {axis!r} in place of the tensor axis and mesh_axis="
                            f"{mesh_axis!r}; pass one of them: shard_batch(x, mesh, axis=0, mesh_axis={axis!r}).")
        axis, mesh_axis = 0, axis
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"shard_batch: axis must be an int (the tensor dimension to split) or a mesh-axis name, "
                        f"got {type(axis).__name__} {axis!r}.")
    names = (mesh.axis_names[0],) if mesh_axis is None else _names(mesh_axis)
    for name in names:
        if name not in mesh.axis_names:
            raise ValueError(f"shard_batch: mesh has axes {mesh.axis_names}, not {name!r}.")
    return int(axis), names


def _names(mesh_axis: MeshAxes) -> tuple[str, ...]:
    return (mesh_axis,) if isinstance(mesh_axis, str) else tuple(mesh_axis)


def _local_parts(mesh: Mesh, names: tuple[str, ...]) -> int:
    """How many distinct slices along the mesh axes ``names`` this process's devices of ``mesh`` hold."""
    me = jax.process_index()
    dims = [mesh.axis_names.index(n) for n in names]
    coords = {tuple(c[d] for d in dims) for c in np.ndindex(mesh.devices.shape)
              if mesh.devices[c].process_index == me}
    return len(coords)


def shard_batch(tensor: Any, mesh: Mesh, axis: Union[int, str] = 0, mesh_axis: Optional[MeshAxes] = None, *,
                local: bool = True) -> Tensor:
    """``tensor`` split along ``axis`` over the mesh's ``mesh_axis`` (default: its first axis).

    ``mesh_axis`` is an axis name or a tuple of names (the batch split over their product, e.g.
    ``("data", "fsdp")``). A mesh-axis name in place of ``axis`` means that mesh axis and tensor axis 0:
    ``shard_batch(x, mesh, "data")`` is ``shard_batch(x, mesh, 0, mesh_axis="data")``.

    ``local`` says what ``tensor`` is when ``mesh`` spans several processes. ``local=True`` (the default):
    the batch this process loaded (for instance through a :class:`fgraph.utils.data.DistributedSampler`);
    the processes' batches together make the global batch, in the order of their devices on the mesh
    (process order on :func:`mesh`), built with ``jax.make_array_from_process_local_data``.
    ``local=False``: the whole global batch, the same in every process; each process keeps its devices'
    slices. In one process both mean the same: the process's batch is the global batch. A tensor already on
    the global mesh is resharded as it is. The split size must divide evenly over the devices (over this
    process's devices, for a local batch).

    Example:
        >>> import jax
        >>> import fgraph as fg
        >>> n = len(jax.devices())
        >>> mesh = fg.distributed.mesh()
        >>> fg.distributed.shard_batch(fg.ones(2 * n, 3), mesh).shape
        (2, 3)
        >>> fg.distributed.shard_batch(fg.ones(2 * n, 3), mesh, "data").array.sharding.spec
        P('data', None)
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"shard_batch: expected a Tensor, got {type(tensor).__name__}.")
    axis, names = _batch_mesh_axes(mesh, axis, mesh_axis)
    if tensor.ndim == 0 or not -tensor.ndim <= axis < tensor.ndim:
        raise ValueError(f"shard_batch: a tensor of shape {tuple(tensor.shape)} has no dimension {axis} to split "
                         f"over mesh axes {names}.")
    axis %= tensor.ndim
    spec: list[Any] = [None] * tensor.ndim
    spec[axis] = names[0] if len(names) == 1 else names
    sharding = NamedSharding(mesh, PartitionSpec(*spec))
    parts = math.prod(mesh.shape[n] for n in names)
    array = concrete(tensor._array)
    from_local = (local and not sharding.is_fully_addressable and not isinstance(array, jax.core.Tracer)
                  and isinstance(array, jax.Array) and array.is_fully_addressable)
    if from_local:
        parts = _local_parts(mesh, names)
        if parts == 0:
            raise ValueError(f"shard_batch: process {jax.process_index()} holds none of the mesh's devices, so it has "
                             "no share of the batch to give; build the mesh over every process's devices, or pass "
                             "local=False with the global batch.")
    where = f"{parts} devices of this process" if from_local else f"{parts} devices"
    if tensor.shape[axis] % parts:
        raise ValueError(
            f"shard_batch: dimension {axis} of a tensor of shape {tuple(tensor.shape)} does not split evenly over "
            f"{where} on mesh axes {names}; use a batch size divisible by {parts}.")
    if not from_local:
        return tensor.to(sharding)
    if tensor.requires_grad:
        raise ValueError("shard_batch: a process-local batch becomes a new global array, which cannot carry the "
                         "graph of a tensor that requires grad; pass x.detach(), or local=False with the global "
                         "batch.")
    from fgraph.tensor import _wrap

    return _wrap(jax.make_array_from_process_local_data(sharding, np.asarray(array)))


def _state_sharding(sharding: jax.sharding.Sharding, value: Any) -> jax.sharding.Sharding:
    """``sharding`` for an optimizer state, replicated on its mesh when the state has fewer dimensions
    than the spec names (the scalar step count beside sharded moments)."""
    if isinstance(sharding, NamedSharding) and len(sharding.spec) > np.ndim(value):
        return NamedSharding(sharding.mesh, PartitionSpec())
    return sharding


def place(obj: Any, sharding: jax.sharding.Sharding) -> Any:
    """Put every array of ``obj`` (a Tensor, Module or Optimizer) under ``sharding``; returns ``obj`` or the new Tensor.

    An optimizer's states with fewer dimensions than ``sharding``'s spec names (the step count) are
    replicated on its mesh instead.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.distributed import NamedSharding, PartitionSpec, mesh, place
        >>> place(fg.ones(2), NamedSharding(mesh(), PartitionSpec())).shape
        (2,)
    """
    from fgraph.nn.modules.module import Module
    from fgraph.optim.optimizer import Optimizer
    from fgraph.tensor import _wrap

    if isinstance(obj, Tensor):
        return obj.to(sharding)
    if isinstance(obj, Module):
        return obj.to(sharding)
    if isinstance(obj, Optimizer):
        for p, state in obj.state.items():
            obj.state[p] = {k: None if v is None else _wrap(put_array(v._array, _state_sharding(sharding, v._array)))
                            for k, v in state.items()}
        return obj
    raise TypeError(f"place: expected a Tensor, Module or Optimizer, got {type(obj).__name__}.")
