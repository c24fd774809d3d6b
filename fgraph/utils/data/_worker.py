"""The DataLoader's workers: the loop each worker runs, fetching batches, and what a worker knows about itself.

A worker runs :func:`worker_loop`: it takes ``(task number, index)`` pairs from its index queue, fetches
and collates that batch, and puts ``(task number, batch)`` on the shared result queue. The same loop
runs in a thread (``worker_method="thread"``) or in a process (:func:`process_main`, started with the
``forkserver`` or ``spawn`` method: JAX does not survive ``fork``). A process worker is pinned to
JAX's CPU backend before it unpickles anything, reseeds Python's, NumPy's, fgraph's (and torch's, if
loaded) global generators with its seed, and sends NumPy batches (``_collate.to_host``); the main
process turns them into Tensors.

An exception in a worker travels as a :class:`WorkerError` holding the worker's traceback text, and is
raised again in the main process with that traceback in its message.

Example:
    >>> from fgraph.utils.data import get_worker_info
    >>> get_worker_info() is None  # the main process
    True
"""
from __future__ import annotations

import pickle
import queue
import random
import sys
import threading
import traceback
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from fgraph.utils.data import _collate
from fgraph.utils.data.dataset import collated_rows

__all__ = ["WorkerInfo", "get_worker_info", "WorkerError", "worker_loop", "process_main", "MapFetcher",
           "IterableFetcher", "ResumeIteration", "IterableStop", "STATUS_CHECK_INTERVAL"]

#: Seconds between checks that the other side (main process or workers) is still alive.
STATUS_CHECK_INTERVAL = 5.0
MAP, ITERABLE = 0, 1  # the dataset kinds

_local = threading.local()


@dataclass(frozen=True)
class WorkerInfo:
    """What a DataLoader worker knows about itself (:func:`get_worker_info`).

    ``id`` (0 to ``num_workers - 1``), ``num_workers``, ``seed`` (``base_seed + id``: seed your own
    generators with it in thread workers), ``dataset`` (this worker's copy of the dataset) and
    ``worker_method`` (``"multiprocessing"`` or ``"thread"``).
    """

    id: int
    num_workers: int
    seed: int
    dataset: Any
    worker_method: str = "multiprocessing"


def get_worker_info() -> Optional[WorkerInfo]:
    """The calling worker's :class:`WorkerInfo`; ``None`` in the main process.

    Use it in an :class:`~fgraph.utils.data.IterableDataset`'s ``__iter__`` (or ``worker_init_fn``) to give
    each worker its own share of the data.

    Example:
        >>> from fgraph.utils.data import get_worker_info
        >>> print(get_worker_info())
        None
    """
    return getattr(_local, "info", None)


@dataclass(frozen=True)
class ResumeIteration:
    """Sent to persistent workers at the start of a new epoch; echoed back as an acknowledgement."""


@dataclass(frozen=True)
class IterableStop:
    """A worker's iterable dataset is exhausted."""

    worker_id: int


class WorkerError:
    """An exception raised in a worker, with its traceback as text (exceptions' tracebacks do not pickle)."""

    def __init__(self, exc_type: type, where: str, text: str, name: Optional[str] = None) -> None:
        self.exc_type = exc_type
        self.where = where
        self.text = text
        self.name = name or exc_type.__name__  # the original type's name, if exc_type stands in for it

    @classmethod
    def capture(cls, where: str) -> "WorkerError":
        exc_type, exc, _ = sys.exc_info()
        return cls(exc_type, where, "".join(traceback.format_exception(exc)))

    def reraise(self) -> None:
        """Raise the worker's exception again here, its message holding the worker's traceback."""
        detail = f"Original {self.text}" if self.text.startswith("Traceback") else self.text
        message = f"Caught {self.name} {self.where}.\n{detail}"
        if self.exc_type is KeyError:
            message = _KeyErrorMessage(message)
        try:
            exc = self.exc_type(message)
        except Exception:  # an exception type that wants other arguments
            raise RuntimeError(message) from None
        raise exc


class _KeyErrorMessage(str):
    """KeyError quotes its argument with repr(); this keeps the traceback readable."""

    def __repr__(self) -> str:
        return str(self)


# -- fetching one batch ------------------------------------------------------------------------------------------
class MapFetcher:
    """Fetch the samples at an index (or a list of indices) of a map-style dataset and collate them."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Any, drop_last: bool) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self._rows_map = None  # with a default collate_fn, a TensorDataset batch is one gather per tensor
        if auto_collation and collate_fn is _collate.default_collate:
            self._rows_map = _collate.default_collate_fn_map
        elif auto_collation and collate_fn is _collate.host_collate:
            self._rows_map = _collate._host_collate_fn_map

    def fetch(self, index: Any) -> Any:
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if self._rows_map is not None:
            batch = collated_rows(self.dataset, index, self._rows_map)
            if batch is not None:
                return batch
        getitems = getattr(self.dataset, "__getitems__", None)
        data = getitems(index) if callable(getitems) else [self.dataset[i] for i in index]
        return self.collate_fn(data)


class IterableFetcher:
    """Take the next sample (or the next ``len(index)`` samples) of an iterable dataset and collate them."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Any, drop_last: bool) -> None:
        self.dataset_iter = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, index: Any) -> Any:
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        data = []
        for _ in index:
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


def make_fetcher(kind: int, dataset: Any, auto_collation: bool, collate_fn: Any, drop_last: bool) -> Any:
    fetcher = MapFetcher if kind == MAP else IterableFetcher
    return fetcher(dataset, auto_collation, collate_fn, drop_last)


# -- the worker loop ---------------------------------------------------------------------------------------------
def worker_loop(kind: int, dataset: Any, index_queue: Any, result_queue: Any, done_event: Any, auto_collation: bool,
                collate_fn: Any, drop_last: bool, seed: int, init_fn: Any, worker_id: int, num_workers: int,
                method: str, setup_error: Optional[WorkerError] = None, parent_alive: Any = None) -> None:
    """Serve batches until told to stop (``None`` on the index queue) or the main process is gone."""
    where = f"in DataLoader worker {'thread' if method == 'thread' else 'process'} {worker_id}"
    _local.info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset, worker_method=method)
    fetcher = None
    if setup_error is None:
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = make_fetcher(kind, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            setup_error = WorkerError.capture(where)
    host = method != "thread"  # a process: batches go out as NumPy, pickled here
    iteration_end = False
    while parent_alive is None or parent_alive():
        try:
            task = index_queue.get(timeout=STATUS_CHECK_INTERVAL)
        except queue.Empty:
            continue
        if isinstance(task, ResumeIteration):
            result_queue.put(_pickled((task, None), where) if host else (task, None))
            iteration_end = False
            if setup_error is None:
                try:
                    fetcher = make_fetcher(kind, dataset, auto_collation, collate_fn, drop_last)
                except Exception:
                    setup_error = WorkerError.capture(where)
            continue
        if task is None:
            break
        if done_event.is_set() or iteration_end:
            continue
        idx, index = task
        if setup_error is not None:
            data: Any = setup_error  # every task answers with it: this worker cannot fetch anything
        else:
            try:
                data = fetcher.fetch(index)
                if host:
                    data = _collate.to_host(data)
            except StopIteration:
                if kind != ITERABLE:
                    data = WorkerError.capture(where)
                else:
                    data = IterableStop(worker_id)
                    iteration_end = True
            except Exception:
                data = WorkerError.capture(where)
        result_queue.put(_pickled((idx, data), where) if host else (idx, data))
        del data, task, index


# -- a worker process ---------------------------------------------------------------------------------------------
def _pickled(message: tuple, where: str) -> bytes:
    """``message`` pickled for the result queue; what cannot be pickled becomes an error for the main process
    (a queue's own pickling would fail in its feeder thread and leave the main process waiting)."""
    try:
        return pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        idx, data = message
        if isinstance(data, WorkerError):  # an exception type that does not pickle: a RuntimeError with its text
            error = WorkerError(RuntimeError, where, data.text, name=data.name)
        else:
            error = WorkerError(RuntimeError, where, f"The batch cannot be pickled to the main process "
                                f"({type(exc).__name__}: {exc}); make collate_fn return tensors, NumPy arrays, "
                                "numbers, strings and containers of them, or use worker_method='thread'.\n")
        return pickle.dumps((idx, error), protocol=pickle.HIGHEST_PROTOCOL)


def _configure_jax(settings: dict) -> None:
    """Pin this worker process to JAX's CPU backend and the main process's x64/default-dtype settings."""
    import jax

    for name, value in (("jax_platforms", "cpu"), ("jax_enable_x64", settings["x64"])):
        try:  # the CPU backend only: a worker never takes an accelerator (or its memory)
            jax.config.update(name, value)
        except Exception:  # a backend already started (by the main module's top level): keep it
            pass
    if settings["default_float"] != "float32":
        from fgraph._dtypes import set_default_float_dtype

        set_default_float_dtype(settings["default_float"])


def seed_worker(base_seed: int, worker_id: int) -> int:
    """Seed this process's global generators for worker ``worker_id`` (torch's scheme); return the seed."""
    from fgraph.random import manual_seed

    seed = base_seed + worker_id
    random.seed(seed)
    np.random.seed(np.random.SeedSequence([worker_id, base_seed]).generate_state(4))
    manual_seed(seed % 2**64)
    return seed


def _host_version(collate_fn: Any) -> Any:
    """The default collate functions' NumPy-producing twins; any other function as it is."""
    if collate_fn is _collate.default_collate:
        return _collate.host_collate
    if collate_fn is _collate.default_convert:
        return _collate.host_convert
    return collate_fn


def _parent_alive() -> bool:
    import multiprocessing

    parent = multiprocessing.parent_process()
    return parent is None or parent.is_alive()


def process_main(payload: bytes, index_queue: Any, result_queue: Any, done_event: Any, worker_id: int,
                 num_workers: int, base_seed: int, settings: dict) -> None:
    """The body of a worker process: configure JAX, seed, unpickle the dataset, then :func:`worker_loop`."""
    try:
        _configure_jax(settings)
        seed = seed_worker(base_seed, worker_id)
        setup_error = None
        kind = auto_collation = collate_fn = drop_last = init_fn = dataset = None
        try:
            kind, dataset, auto_collation, collate_fn, drop_last, init_fn = pickle.loads(payload)
            if "torch" in sys.modules:  # a torch dataset: give torch's generator this worker's seed too
                sys.modules["torch"].manual_seed(seed)
        except Exception:
            setup_error = WorkerError.capture(f"in DataLoader worker process {worker_id} (unpickling the dataset)")
        collate_fn = _host_version(collate_fn)
        worker_loop(kind, dataset, index_queue, result_queue, done_event, auto_collation, collate_fn, drop_last, seed,
                    init_fn, worker_id, num_workers, "multiprocessing", setup_error, _parent_alive)
    except KeyboardInterrupt:
        pass
    if done_event.is_set():
        result_queue.cancel_join_thread()
        result_queue.close()
