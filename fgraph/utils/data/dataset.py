"""Datasets with torch's names: map-style (``__getitem__`` + ``__len__``) and iterable-style (``__iter__``).

A ``DataLoader`` takes any object with ``__getitem__``/``__len__`` (a list, a NumPy array, a torch
``Dataset``) or any iterable; these classes add torch's conveniences: :class:`TensorDataset`,
:class:`Subset`, :class:`ConcatDataset`, :class:`StackDataset`, :class:`ChainDataset` and
:func:`random_split`.

:class:`TensorDataset` (and a :class:`Subset` of one, as :func:`random_split` makes) collates a batch
with one gather per tensor instead of one index op per sample: the batch is the same as stacking the
samples, at the cost of one fgraph op.

Example:
    >>> import fgraph as fg
    >>> from fgraph.utils.data import TensorDataset, random_split
    >>> ds = TensorDataset(fg.arange(10), fg.arange(10) * 2)
    >>> x, y = ds[3]
    >>> int(x), int(y), len(ds)
    (3, 6, 10)
    >>> [len(s) for s in random_split(ds, [0.7, 0.3], generator=fg.Generator(0))]
    [7, 3]
"""
from __future__ import annotations

import bisect
import itertools
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, Optional, TypeVar, Union

import numpy as np

from fgraph.random import Generator, default_generator
from fgraph.tensor import Tensor, _is_torch_tensor, tensor
from fgraph.utils.data import _collate
from fgraph.utils.data.sampler import numpy_rng

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset", "Subset",
           "random_split"]

T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map-style dataset: subclasses define ``__getitem__(index)`` and ``__len__()``. ``a + b`` concatenates.

    Example:
        >>> from fgraph.utils.data import Dataset
        >>> class Squares(Dataset):
        ...     def __getitem__(self, i): return i * i
        ...     def __len__(self): return 4
        >>> ds = Squares() + Squares()
        >>> len(ds), ds[5]
        (8, 1)
    """

    def __getitem__(self, index: Any) -> T_co:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: "Dataset[T_co]") -> "ConcatDataset[T_co]":
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co], Iterable[T_co]):
    """An iterable-style dataset: subclasses define ``__iter__``. ``a + b`` chains.

    With ``num_workers > 0`` every worker iterates its own copy: split the work in ``__iter__`` with
    :func:`~fgraph.utils.data.get_worker_info` (or in ``worker_init_fn``), else each sample comes once per worker.

    Example:
        >>> from fgraph.utils.data import IterableDataset, get_worker_info
        >>> class Range(IterableDataset):
        ...     def __init__(self, n): self.n = n
        ...     def __iter__(self):
        ...         info = get_worker_info()
        ...         first, step = (0, 1) if info is None else (info.id, info.num_workers)
        ...         return iter(range(first, self.n, step))
        >>> list(Range(3) + Range(2))
        [0, 1, 2, 0, 1]
    """

    def __add__(self, other: Dataset[T_co]) -> "ChainDataset":
        return ChainDataset([self, other])


def _length(t: Any, i: int) -> int:
    shape = getattr(t, "shape", None)
    if shape is None or len(shape) == 0:
        raise ValueError(f"TensorDataset: tensor {i} has no first dimension (shape {tuple(shape or ())}, "
                         f"{type(t).__name__}); pass tensors or arrays whose first dimension indexes the samples.")
    return int(shape[0])


class TensorDataset(Dataset[tuple]):
    """Samples ``(t[i] for t in tensors)``: the rows of tensors (or NumPy arrays, torch tensors) of equal length.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.utils.data import TensorDataset
        >>> ds = TensorDataset(fg.ones(5, 3), fg.zeros(5))
        >>> [t.shape for t in ds[0]], len(ds)
        ([(3,), ()], 5)
    """

    def __init__(self, *tensors: Any) -> None:
        if not tensors:
            raise ValueError("TensorDataset: pass at least one tensor, e.g. TensorDataset(inputs, targets).")
        lengths = [_length(t, i) for i, t in enumerate(tensors)]
        if any(n != lengths[0] for n in lengths):
            raise ValueError(f"TensorDataset: size mismatch between tensors: their first dimensions are {lengths}; "
                             "every tensor needs one row per sample.")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return _length(self.tensors[0], 0)


def _gather(t: Any, indices: list, collate_fn_map: dict) -> Any:
    """The rows ``indices`` of ``t`` as one collated leaf (what stacking ``t[i]`` for each index gives)."""
    host = collate_fn_map is _collate._host_collate_fn_map
    if isinstance(t, Tensor):
        rows = t[tensor(np.asarray(indices, dtype=np.int32))]
        return _collate.HostBatch(np.asarray(rows._array), "array") if host else rows
    if _is_torch_tensor(t):
        rows = t.detach()[np.asarray(indices, dtype=np.int64)]
    else:
        rows = np.asarray(t)[np.asarray(indices, dtype=np.int64)]
    return _collate.HostBatch(rows, "array") if host else _collate.make_tensor(rows, "array")


def collated_rows(dataset: Any, indices: list, collate_fn_map: dict) -> Optional[list]:
    """What ``collate([dataset[i] for i in indices])`` gives, by one gather per tensor, when ``dataset`` is a
    :class:`TensorDataset` or a :class:`Subset` of one (exact types: a subclass may index differently); else ``None``.
    """
    while type(dataset) is Subset:
        indices = [dataset.indices[i] for i in indices]
        dataset = dataset.dataset
    if type(dataset) is not TensorDataset:
        return None
    return [_gather(t, indices, collate_fn_map) for t in dataset.tensors]


class StackDataset(Dataset):
    """Samples that combine several datasets of equal length: a tuple (``StackDataset(a, b)``) or a dict
    (``StackDataset(image=a, label=b)``) of their items.

    Example:
        >>> from fgraph.utils.data import StackDataset
        >>> StackDataset(x=[1, 2], y="ab")[1]
        {'x': 2, 'y': 'b'}
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        datasets = args if args else kwargs
        parts = list(datasets.values()) if kwargs else list(args)
        self._length = len(parts[0])
        if any(self._length != len(d) for d in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets: Union[tuple, dict] = datasets

    def __getitem__(self, index: Any) -> Any:
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list) -> list:
        def column(d: Any) -> list:
            if callable(getattr(d, "__getitems__", None)):
                items = d.__getitems__(indices)
                if len(items) != len(indices):
                    raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, "
                                     f"got {len(items)}")
                return list(items)
            return [d[i] for i in indices]

        if isinstance(self.datasets, dict):
            columns = {k: column(d) for k, d in self.datasets.items()}
            return [{k: columns[k][j] for k in columns} for j in range(len(indices))]
        columns = [column(d) for d in self.datasets]
        return [tuple(c[j] for c in columns) for j in range(len(indices))]

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset[T_co]):
    """Map-style datasets one after the other.

    Example:
        >>> from fgraph.utils.data import ConcatDataset
        >>> ds = ConcatDataset([[1, 2], [3, 4, 5]])
        >>> len(ds), ds[2], ds[-1], ds.cumulative_sizes
        (5, 3, 5, [2, 5])
    """

    @staticmethod
    def cumsum(sequence: Iterable) -> list:
        return list(itertools.accumulate(len(e) for e in sequence))

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset; chain iterable datasets with "
                                "ChainDataset (or a + b).")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> T_co:
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """Iterable datasets one after the other.

    Example:
        >>> from fgraph.utils.data import ChainDataset
        >>> list(ChainDataset([range(2), range(3)]))
        [0, 1, 0, 1, 2]
    """

    def __init__(self, datasets: Iterable[Any]) -> None:
        self.datasets = datasets

    def __iter__(self) -> Iterator:
        for d in self.datasets:
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)


class Subset(Dataset[T_co]):
    """The samples of ``dataset`` at ``indices``, in that order.

    Example:
        >>> from fgraph.utils.data import Subset
        >>> s = Subset("abcde", [4, 0])
        >>> len(s), s[0], s[1]
        (2, 'e', 'a')
    """

    def __init__(self, dataset: Any, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices
        if type(self).__getitem__ is not Subset.__getitem__ and type(self).__getitems__ is Subset.__getitems__:
            raise NotImplementedError(
                f"{type(self).__name__} overrides __getitem__ but not __getitems__. When subclassing Subset and "
                "overriding __getitem__, you must also override __getitems__ to ensure DataLoader works correctly "
                "with your custom logic. A simple implementation:\n\n"
                "def __getitems__(self, indices):\n    return [self.__getitem__(idx) for idx in indices]")

    def __getitem__(self, idx: Any) -> T_co:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list) -> list:
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


def _split_lengths(n: int, lengths: Sequence[Union[int, float]]) -> list:
    """Fractions to lengths by torch's rule: floor each, then hand out the remainder one by one from the first."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        out = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            out.append(math.floor(n * frac))
        for i in range(n - sum(out)):
            out[i % len(out)] += 1
        for i, length in enumerate(out):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=3)
        return out
    for i, length in enumerate(lengths):
        if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 0:
            raise ValueError(f"random_split: length at index {i} is {length!r}; pass non-negative integer lengths "
                             "that sum to len(dataset), or fractions that sum to 1.")
    return [int(length) for length in lengths]


def random_split(dataset: Any, lengths: Sequence[Union[int, float]],
                 generator: Optional[Generator] = default_generator) -> list:
    """Split ``dataset`` into non-overlapping :class:`Subset` s of the given lengths (or fractions), at random.

    Fractions summing to 1 become ``floor(len * f)`` each, the remainder added one by one from the first
    split (torch's rule). The shuffle draws one key from ``generator`` (fgraph's default generator unless given).

    Example:
        >>> import fgraph as fg
        >>> from fgraph.utils.data import random_split
        >>> parts = random_split(range(10), [3, 7], generator=fg.Generator(42))
        >>> [len(p) for p in parts], sorted(list(parts[0]) + list(parts[1])) == list(range(10))
        ([3, 7], True)
    """
    n = len(dataset)
    lengths = _split_lengths(n, lengths)
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = numpy_rng(generator, "random_split").permutation(n).tolist()
    return [Subset(dataset, order[end - length:end]) for end, length in zip(itertools.accumulate(lengths), lengths)]
