"""``fgraph.utils.data``: datasets, samplers and the ``DataLoader``, with ``torch.utils.data``'s names.

Example:
    >>> import fgraph as fg
    >>> from fgraph.utils.data import DataLoader, TensorDataset
    >>> x, y = fg.randn(8, 3, generator=fg.Generator(0)), fg.arange(8)
    >>> for xb, yb in DataLoader(TensorDataset(x, y), batch_size=4):
    ...     print(xb.shape, yb.tolist())
    (4, 3) [0, 1, 2, 3]
    (4, 3) [4, 5, 6, 7]

See ``docs/data.md``.
"""
from fgraph.utils.data._collate import default_collate, default_convert
from fgraph.utils.data._worker import WorkerInfo, get_worker_info
from fgraph.utils.data.dataloader import DataLoader
from fgraph.utils.data.dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset,
                                       TensorDataset, random_split)
from fgraph.utils.data.distributed import DistributedSampler
from fgraph.utils.data.sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                                       WeightedRandomSampler)

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "StackDataset",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "WorkerInfo",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "random_split",
]
