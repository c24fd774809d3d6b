"""``DistributedSampler``: each of ``num_replicas`` processes reads its own share of a dataset (torch's rules).

Every replica sees the same order (a shuffle seeded by ``seed + epoch``, the same in every process),
padded by repeating its first indices until it divides evenly (or cut with ``drop_last``), and takes
every ``num_replicas``-th index from ``rank`` on. Without ``num_replicas``/``rank`` they come from the
multi-process run (:func:`fgraph.distributed.get_world_size` and :func:`~fgraph.distributed.get_rank`:
``jax.process_count()`` and ``jax.process_index()`` after :func:`fgraph.distributed.initialize`; 1 and 0
in one process). Each process's batches then go to :func:`fgraph.distributed.shard_batch`, which joins
them into the global batch.
Call :meth:`DistributedSampler.set_epoch` at the start of every epoch for a new shuffle.

Example:
    >>> from fgraph.utils.data import DistributedSampler
    >>> [list(DistributedSampler(range(5), num_replicas=2, rank=r, shuffle=False)) for r in (0, 1)]
    [[0, 2, 4], [1, 3, 0]]
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, Optional

from fgraph.random import Generator
from fgraph.utils.data.sampler import Sampler, numpy_rng

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler[int]):
    """The share of the dataset's indices that process ``rank`` of ``num_replicas`` reads.

    Example:
        >>> from fgraph.utils.data import DistributedSampler
        >>> s = DistributedSampler(range(10), num_replicas=3, rank=0, seed=1)
        >>> len(s), s.total_size
        (4, 12)
        >>> s.set_epoch(1)
    """

    def __init__(self, dataset: Any, num_replicas: Optional[int] = None, rank: Optional[int] = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            from fgraph.distributed import get_rank, get_world_size  # no device is touched before initialize

            num_replicas = get_world_size() if num_replicas is None else num_replicas
            rank = get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)  # cut to the nearest even split
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            indices = numpy_rng(Generator(self.seed + self.epoch), "DistributedSampler").permutation(n).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[: self.total_size]
        return iter(indices[self.rank: self.total_size: self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use epoch ``epoch``'s shuffle from now on (the same in every replica)."""
        self.epoch = epoch
