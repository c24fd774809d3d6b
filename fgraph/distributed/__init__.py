"""``fgraph.distributed``: JAX's meshes and shardings under PyTorch's distributed names.

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
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from fgraph.distributed._placement import mesh, place, replicate, shard_batch

__all__ = ["mesh", "replicate", "shard_batch", "place", "Mesh", "NamedSharding", "PartitionSpec"]
