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

from fgraph.distributed import checkpoint, tensor
from fgraph.distributed._fsdp import fully_shard
from fgraph.distributed._rules import shard
from fgraph.distributed.tensor.parallel import parallelize_module
from fgraph.distributed._placement import mesh, place, put_array, replicate, shard_batch
from fgraph.distributed._process import (barrier, destroy_process_group, get_rank, get_world_size, init_process_group,
                                         initialize, is_available, is_initialized)

__all__ = ["mesh", "replicate", "shard_batch", "place", "put_array",
           "fully_shard", "shard", "parallelize_module", "tensor", "checkpoint",
           "initialize", "init_process_group", "is_available", "is_initialized", "get_rank", "get_world_size",
           "barrier", "destroy_process_group", "Mesh", "NamedSharding", "PartitionSpec"]
