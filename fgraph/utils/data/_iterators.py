"""The iterators a ``DataLoader`` hands out: one loading in the calling thread, one feeding worker threads or processes.

The multi-worker iterator follows torch's protocol step for step, so batches come out in the same order:
task numbers are handed to the workers round-robin (skipping exhausted ones), at most
``prefetch_factor * num_workers`` tasks are outstanding, and results are yielded in task order
(``in_order=False``: as they arrive). An iterable dataset's worker that runs dry says so once and gets
no more tasks. Worker processes are started with ``forkserver`` (or ``spawn``), never ``fork``.
"""
from __future__ import annotations

import atexit
import contextlib
import copy
import itertools
import multiprocessing
import os
import pickle
import queue
import threading
import warnings
from typing import Any

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

from fgraph._dtypes import default_float_dtype, x64_enabled
from fgraph.utils.data import _collate
from fgraph.utils.data._worker import (ITERABLE, STATUS_CHECK_INTERVAL, IterableStop, ResumeIteration, WorkerError,
                                       make_fetcher, process_main, worker_loop)
from fgraph.utils.data.sampler import draw_seed

__all__ = ["SingleProcessIter", "MultiWorkerIter"]

_EXITING = [False]  # at interpreter exit, workers are left to multiprocessing's own clean-up


@atexit.register
def _mark_exiting() -> None:
    _EXITING[0] = True


class BaseIter:
    """What both iterators share: the sampler's iterator, the epoch's base seed, the length warning."""

    def __init__(self, loader: Any) -> None:
        self._dataset = loader.dataset
        self._kind = loader._dataset_kind
        self._reported_len = loader._reported_len
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = draw_seed(loader.generator)  # drawn for every epoch, workers or not, as torch does
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self) -> "BaseIter":
        return self

    def _reset(self, loader: Any, first_iter: bool = False) -> None:
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._reported_len = loader._reported_len

    def _next_index(self) -> Any:
        return next(self._sampler_iter)  # may raise StopIteration

    def _next_data(self) -> Any:
        raise NotImplementedError

    def __next__(self) -> Any:
        data = self._next_data()
        self._num_yielded += 1
        if self._kind == ITERABLE and self._reported_len is not None and self._num_yielded > self._reported_len:
            message = (f"Length of IterableDataset {self._dataset} was reported to be {self._reported_len} (when "
                       f"accessing len(dataloader)), but {self._num_yielded} samples have been fetched. ")
            if self._num_workers > 0:
                message += ("For multi-worker loading, this could be caused by not configuring the IterableDataset "
                            "replica of each worker: split the data with fgraph.utils.data.get_worker_info().")
            warnings.warn(message, stacklevel=2)
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self) -> None:
        raise NotImplementedError(f"{type(self).__name__} cannot be pickled")


class SingleProcessIter(BaseIter):
    """``num_workers=0``: every batch is fetched and collated in the calling thread when asked for."""

    def __init__(self, loader: Any) -> None:
        super().__init__(loader)
        self._fetcher = make_fetcher(self._kind, self._dataset, self._auto_collation, self._collate_fn,
                                     self._drop_last)

    def _next_data(self) -> Any:
        index = self._next_index()
        return self._fetcher.fetch(index)  # may raise StopIteration (an exhausted iterable dataset)


def _payload(loader: Any) -> bytes:
    """The dataset, collate_fn and worker_init_fn pickled for worker processes, or a clear error."""
    parts = (loader._dataset_kind, loader.dataset, loader._auto_collation, loader.collate_fn, loader.drop_last,
             loader.worker_init_fn)
    try:
        return pickle.dumps(parts, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        names = ("dataset kind", "dataset", "auto-collation flag", "collate_fn", "drop_last", "worker_init_fn")
        culprit = "the dataset"
        for name, part in zip(names, parts):
            try:
                pickle.dumps(part)
            except Exception:
                culprit = name
                break
        raise TypeError(
            f"DataLoader: worker processes get the dataset, collate_fn and worker_init_fn by pickling, and "
            f"{culprit} cannot be pickled ({type(exc).__name__}: {exc}). Define it at module level (no lambdas, "
            "local functions or classes), or pass worker_method='thread' (worker threads share this process's "
            "objects, nothing is pickled)."
        ) from exc


class MultiWorkerIter(BaseIter):
    """``num_workers > 0``: worker threads or processes fetch ahead of the training loop."""

    def __init__(self, loader: Any) -> None:
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        self._threads = loader.worker_method == "thread"
        self._shutdown = False
        self._workers: list = []
        self._index_queues: list = []
        if self._threads:
            self._start_threads(loader)
        else:
            self._start_processes(loader)
        self._reset(loader, first_iter=True)

    def _start_threads(self, loader: Any) -> None:
        self._result_queue: Any = queue.Queue()
        self._done_event: Any = threading.Event()
        for i in range(self._num_workers):
            index_queue: queue.Queue = queue.Queue()
            try:
                dataset = copy.copy(self._dataset)  # each worker's own copy, as a process would have
            except Exception:
                dataset = self._dataset
            worker = threading.Thread(
                target=worker_loop, name=f"fgraph DataLoader worker {i}", daemon=True,
                args=(self._kind, dataset, index_queue, self._result_queue, self._done_event, self._auto_collation,
                      self._collate_fn, self._drop_last, self._base_seed + i, loader.worker_init_fn, i,
                      self._num_workers, "thread"))
            worker.start()
            self._index_queues.append(index_queue)
            self._workers.append(worker)

    def _start_processes(self, loader: Any) -> None:
        context = loader._worker_context()
        payload = _payload(loader)
        settings = {"x64": x64_enabled(), "default_float": str(default_float_dtype())}
        self._result_queue = context.Queue()
        _widen_pipe(self._result_queue)
        self._done_event = context.Event()
        for i in range(self._num_workers):
            index_queue = context.Queue()
            index_queue.cancel_join_thread()
            worker = context.Process(
                target=process_main, name=f"fgraph DataLoader worker {i}", daemon=True,
                args=(payload, index_queue, self._result_queue, self._done_event, i, self._num_workers,
                      self._base_seed, settings))
            with _cpu_only_environment():
                worker.start()
            self._index_queues.append(index_queue)
            self._workers.append(worker)

    def _reset(self, loader: Any, first_iter: bool = False) -> None:
        super()._reset(loader, first_iter)
        self._send_idx = 0  # the next task number to hand out
        self._rcvd_idx = 0  # the next task number to yield
        self._task_info: dict = {}  # task number -> (worker,) while outstanding, (worker, data) once here early
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:  # persistent workers: start them on a new epoch and wait until each has
            # Keep the generator's stream where a fresh iterator leaves it (torch skips this draw), so the
            # shuffles of every epoch are the same with persistent workers, other workers or none.
            draw_seed(loader.generator)
            for index_queue in self._index_queues:
                index_queue.put(ResumeIteration())
            pending = self._num_workers
            while pending > 0:
                idx, _ = self._get_data()
                if isinstance(idx, ResumeIteration):
                    pending -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_get_data(self, timeout: float = STATUS_CHECK_INTERVAL) -> tuple:
        try:
            message = self._result_queue.get(timeout=timeout)
            return True, message if self._threads else pickle.loads(message)  # processes pickle their own
        except queue.Empty:
            failed = [i for i, w in enumerate(self._workers) if self._workers_status[i] and not w.is_alive()]
            if failed:
                for i in failed:
                    self._mark_worker_as_unavailable(i)
                if self._threads:
                    raise RuntimeError(f"DataLoader worker thread(s) {failed} exited unexpectedly") from None
                pids = ", ".join(str(self._workers[i].pid) for i in failed)
                raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly") from None
            return False, None

    def _get_data(self) -> tuple:
        if self._timeout > 0:
            success, data = self._try_get_data(self._timeout)
            if success:
                return data
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
        while True:
            success, data = self._try_get_data()
            if success:
                return data

    def _next_data(self) -> Any:
        while True:
            # skip the tasks of workers that went away (an exhausted iterable dataset's) without data
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info:
                    if len(info) == 2 or self._workers_status[info[0]]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:  # it arrived earlier, out of order
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if self._kind == ITERABLE and isinstance(data, IterableStop):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                if not self._in_order:
                    worker_id = self._task_info.pop(idx)[0]
                    return self._process_data(data, worker_id)
                self._task_info[idx] += (data,)  # keep it until its turn
            else:
                worker_id = self._task_info.pop(idx)[0]
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

    def _try_put_index(self) -> None:
        max_tasks = self._prefetch_factor * self._num_workers
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next active worker, if any
            worker_id = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_id]:
                if self._in_order or self._workers_num_tasks[worker_id] < max_tasks // sum(self._workers_status):
                    break
        else:
            return
        self._index_queues[worker_id].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._workers_num_tasks[worker_id] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _process_data(self, data: Any, worker_id: int) -> Any:
        self._workers_num_tasks[worker_id] -= 1
        self._try_put_index()
        if isinstance(data, WorkerError):
            data.reraise()
        return data if self._threads else _collate.from_host(data)

    def _mark_worker_as_unavailable(self, worker_id: int, shutdown: bool = False) -> None:
        self._index_queues[worker_id].put(None)  # the worker's signal to stop
        if hasattr(self, "_workers_status"):
            self._workers_status[worker_id] = False

    def _shutdown_workers(self) -> None:
        if self._shutdown or _EXITING[0]:
            return
        self._shutdown = True
        self._done_event.set()
        status = getattr(self, "_workers_status", [True] * len(self._workers))  # unset if a start failed
        for worker_id in range(len(self._workers)):
            if self._persistent_workers or status[worker_id]:
                self._mark_worker_as_unavailable(worker_id, shutdown=True)
        for worker in self._workers:
            worker.join(timeout=STATUS_CHECK_INTERVAL)
        if self._threads:
            return
        for index_queue in self._index_queues:
            index_queue.cancel_join_thread()
            index_queue.close()
        for worker in self._workers:
            if worker.is_alive():
                worker.terminate()
                worker.join(timeout=STATUS_CHECK_INTERVAL)

    def __del__(self) -> None:
        if getattr(self, "_workers", None) is not None and hasattr(self, "_done_event"):
            self._shutdown_workers()


#: Linux's fcntl command that sets a pipe's capacity (``F_SETPIPE_SZ``; Python names it from 3.10 on, on Linux only).
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031) if fcntl is not None else None
_PIPE_BYTES = 1 << 20


def _widen_pipe(result_queue: Any) -> None:
    """Let the result queue's pipe hold a whole batch (1 MiB, Linux's default limit for unprivileged processes,
    instead of 64 KiB). A 64×784 float32 batch is 200 KB: through a 64 KiB pipe the worker writes it in four
    turns, each waiting for the main process to read the previous one, and both sides' cores idle in between."""
    reader = getattr(result_queue, "_reader", None)
    if _F_SETPIPE_SZ is None or reader is None:
        return
    try:
        fcntl.fcntl(reader.fileno(), _F_SETPIPE_SZ, _PIPE_BYTES)
    except OSError:  # a lower limit (/proc/sys/fs/pipe-max-size) or not a pipe: the default capacity stays
        pass


_ENVIRONMENT_LOCK = threading.Lock()


@contextlib.contextmanager
def _cpu_only_environment() -> Any:
    """``JAX_PLATFORMS=cpu`` while a worker process (or the forkserver, on first use) starts, so that JAX there
    never initialises an accelerator, not even from the main module's top level, which a worker runs again."""
    with _ENVIRONMENT_LOCK:
        before = os.environ.get("JAX_PLATFORMS")
        os.environ["JAX_PLATFORMS"] = "cpu"
        try:
            yield
        finally:
            if before is None:
                del os.environ["JAX_PLATFORMS"]
            else:
                os.environ["JAX_PLATFORMS"] = before


def worker_context(multiprocessing_context: Any) -> Any:
    """The multiprocessing context for worker processes: the user's, else ``forkserver`` (``spawn`` where it
    is missing), whose server preloads fgraph so that each worker starts in tens of milliseconds."""
    if multiprocessing_context is not None:
        return multiprocessing_context
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["fgraph.utils.data._worker"])
        return context
    return multiprocessing.get_context("spawn")
