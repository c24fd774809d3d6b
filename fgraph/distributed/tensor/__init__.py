"""``fgraph.distributed.tensor``: PyTorch's ``torch.distributed.tensor`` names over JAX shardings.

A sharded fgraph tensor is an ordinary Tensor whose ``jax.Array`` has a ``NamedSharding`` (JAX's
global arrays play the part of PyTorch's DTensor). :mod:`fgraph.distributed.tensor.parallel` holds the
tensor-parallel plan API: ``parallelize_module``, ``ColwiseParallel``, ``RowwiseParallel``,
``SequenceParallel``.

Example:
    >>> import fgraph as fg
    >>> from fgraph.distributed.tensor.parallel import ColwiseParallel
    >>> ColwiseParallel()
    ColwiseParallel()
"""
from fgraph.distributed.tensor import parallel

__all__ = ["parallel"]
