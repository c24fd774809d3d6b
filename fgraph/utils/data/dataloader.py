"""``DataLoader``: batches from a dataset, with torch's arguments, checks and order.

``DataLoader(dataset, batch_size=1, shuffle=False, ...)`` iterates over batches collated into fgraph
Tensors (:func:`~fgraph.utils.data.default_collate`). The dataset is any object with ``__getitem__``
and ``__len__`` (map-style: an fgraph :class:`~fgraph.utils.data.Dataset`, a list, a torch ``Dataset``)
or any iterable (an :class:`~fgraph.utils.data.IterableDataset`, a torch ``IterableDataset``).

``num_workers > 0`` loads ahead of the training loop in worker processes (``worker_method=
"multiprocessing"``, the default, as torch) or worker threads (``worker_method="thread"``, an fgraph
extension). Processes start with the ``forkserver`` method (``spawn`` where it is missing): JAX does not
survive ``fork``, so ``multiprocessing_context="fork"`` is refused. They run on JAX's CPU backend and send
NumPy batches that the main process turns into Tensors; a script that uses them needs the usual
``if __name__ == "__main__":`` guard. Threads start at once, share the dataset (each worker gets a shallow
copy) and need nothing picklable, but Python code in them holds the GIL: they overlap the training step
when the per-sample work is NumPy or I/O, or while the step waits on the device. Batches come in the same
order with any number of workers, of either kind.

Shuffles draw from ``generator=`` (an fgraph :class:`~fgraph.Generator`) or fgraph's default generator, so
``fg.manual_seed(s)`` repeats a run. ``pin_memory`` is accepted and has no effect (JAX moves the data).

Example:
    >>> import fgraph as fg
    >>> from fgraph.utils.data import DataLoader, TensorDataset
    >>> ds = TensorDataset(fg.arange(10).float(), fg.arange(10))
    >>> loader = DataLoader(ds, batch_size=4, shuffle=True, generator=fg.Generator(0))
    >>> [x.shape for x, y in loader], len(loader)
    ([(4,), (4,), (2,)], 3)
"""
from __future__ import annotations

import math
import multiprocessing
import os
import warnings
from typing import Any, Callable, Iterable, Optional

from fgraph.random import Generator
from fgraph.utils.data._collate import default_collate, default_convert
from fgraph.utils.data._iterators import BaseIter, MultiWorkerIter, SingleProcessIter, worker_context
from fgraph.utils.data._worker import ITERABLE, MAP
from fgraph.utils.data.dataset import IterableDataset
from fgraph.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader"]

_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")
_WORKER_METHODS = ("multiprocessing", "thread")


class _InfiniteConstantSampler(Sampler):
    """The sampler of an iterable dataset: ``None`` forever (the dataset decides when to stop)."""

    def __iter__(self) -> Any:
        while True:
            yield None


def _is_torch_iterable_dataset(dataset: Any) -> bool:
    return any(c.__name__ == "IterableDataset" and c.__module__.startswith("torch.utils.data")
               for c in type(dataset).__mro__)


def _dataset_kind(dataset: Any) -> int:
    if isinstance(dataset, IterableDataset) or _is_torch_iterable_dataset(dataset):
        return ITERABLE
    if hasattr(dataset, "__getitem__"):
        return MAP
    if hasattr(dataset, "__iter__"):
        return ITERABLE
    raise TypeError(f"DataLoader: the dataset must be map-style (__getitem__ and __len__) or iterable (__iter__), "
                    f"got {type(dataset).__name__}.")


def _usable_cpus() -> Optional[int]:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count()


class DataLoader:
    """Iterate over a dataset in batches (torch's ``DataLoader``; see the module docstring).

    Arguments as torch's: ``batch_size``, ``shuffle``, ``sampler``, ``batch_sampler``, ``num_workers``,
    ``collate_fn``, ``pin_memory`` (no effect), ``drop_last``, ``timeout``, ``worker_init_fn``,
    ``multiprocessing_context`` (``"forkserver"``, ``"spawn"`` or a context; not ``"fork"``), ``generator``
    (an fgraph ``Generator``), ``prefetch_factor``, ``persistent_workers``, ``pin_memory_device`` (ignored),
    ``in_order``; and ``worker_method`` (``"multiprocessing"`` or ``"thread"``).

    Example:
        >>> from fgraph.utils.data import DataLoader
        >>> [b.tolist() for b in DataLoader(range(5), batch_size=2)]
        [[0, 1], [2, 3], [4]]
        >>> DataLoader(range(5), batch_size=2, drop_last=True).__len__()
        2
    """

    def __init__(self, dataset: Any, batch_size: Optional[int] = 1, shuffle: Optional[bool] = None,
                 sampler: Optional[Iterable] = None, batch_sampler: Optional[Iterable] = None, num_workers: int = 0,
                 collate_fn: Optional[Callable[[list], Any]] = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn: Optional[Callable[[int], None]] = None,
                 multiprocessing_context: Any = None, generator: Optional[Generator] = None, *,
                 prefetch_factor: Optional[int] = None, persistent_workers: bool = False, pin_memory_device: str = "",
                 in_order: bool = True, worker_method: str = "multiprocessing") -> None:
        if isinstance(num_workers, bool) or not isinstance(num_workers, int):
            raise TypeError(f"DataLoader: num_workers must be an int, got {type(num_workers).__name__} "
                            f"{num_workers!r}.")
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        elif num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if worker_method not in _WORKER_METHODS:
            raise ValueError(f"DataLoader: worker_method must be 'multiprocessing' (worker processes, torch's kind) "
                             f"or 'thread' (worker threads), got {worker_method!r}.")
        if generator is not None and not isinstance(generator, Generator):
            raise TypeError(f"DataLoader: generator must be an fgraph.Generator (fg.Generator(seed)), got "
                            f"{type(generator).__module__}.{type(generator).__qualname__}.")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.worker_method = worker_method
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self._dataset_kind = _dataset_kind(dataset)

        if self._dataset_kind == ITERABLE:
            if shuffle not in {False, None}:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but got "
                                 f"batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")

        if sampler is None:
            if self._dataset_kind == ITERABLE:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._reported_len: Optional[int] = None  # len(self) of an iterable dataset, for the overrun warning
        self._iterator: Optional[BaseIter] = None
        object.__setattr__(self, "_initialized", True)
        self.check_worker_number_rationality()

    # -- torch's attribute rules -------------------------------------------------------------------------------
    def __setattr__(self, attr: str, value: Any) -> None:
        if getattr(self, "_initialized", False) and attr in _FROZEN:
            raise ValueError(f"{attr} attribute should not be set after {type(self).__name__} is initialized")
        object.__setattr__(self, attr, value)

    @property
    def multiprocessing_context(self) -> Any:
        return self._multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context: Any) -> None:
        if context is not None:
            if self.num_workers == 0:
                raise ValueError("multiprocessing_context can only be used with multi-process loading (num_workers > "
                                 f"0), but got num_workers={self.num_workers}")
            if self.worker_method == "thread":
                raise ValueError("DataLoader: multiprocessing_context applies to worker processes; with "
                                 "worker_method='thread' leave it unset.")
            if isinstance(context, str):
                methods = multiprocessing.get_all_start_methods()
                if context not in methods:
                    raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                                     f"{methods!r}, but got multiprocessing_context={context!r}")
                context = multiprocessing.get_context(context)
            if not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError("multiprocessing_context option should be a valid context object or a string "
                                f"specifying the start method, but got multiprocessing_context={context}")
            if context.get_start_method() == "fork":
                raise ValueError("DataLoader: multiprocessing_context='fork' is refused: JAX is multithreaded and a "
                                 "forked worker can deadlock. Use 'forkserver' (the default) or 'spawn', or "
                                 "worker_method='thread'.")
        object.__setattr__(self, "_multiprocessing_context", context)

    def _worker_context(self) -> Any:
        return worker_context(self._multiprocessing_context)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Any:
        return self.batch_sampler if self._auto_collation else self.sampler

    # -- iteration -----------------------------------------------------------------------------------------------
    def _get_iterator(self) -> BaseIter:
        if self.num_workers == 0:
            return SingleProcessIter(self)
        self.check_worker_number_rationality()
        return MultiWorkerIter(self)

    def __iter__(self) -> BaseIter:
        """A new pass over the data (persistent workers are reused from the last pass)."""
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self) -> int:
        """The number of batches: the batch sampler's length, or, for an iterable dataset, ``len(dataset)``
        divided by ``batch_size`` (rounded by ``drop_last``)."""
        if self._dataset_kind == ITERABLE:
            length = len(self.dataset)
            object.__setattr__(self, "_reported_len", length)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)

    def check_worker_number_rationality(self) -> None:
        """Warn when ``num_workers`` exceeds the cores this process may use (torch's warning)."""
        if not self.num_workers:
            return
        suggested = _usable_cpus()
        if suggested is None or self.num_workers > suggested:
            what = (f"Our suggested max number of worker in current system is {suggested}, which is smaller than what "
                    "this DataLoader is going to create." if suggested is not None else
                    "DataLoader is not able to compute a suggested max number of worker in current system.")
            warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. {what} Please be "
                          "aware that excessive worker creation might get DataLoader running slow or even freeze, "
                          "lower the worker number to avoid potential slowness/freeze if necessary.", stacklevel=2)
