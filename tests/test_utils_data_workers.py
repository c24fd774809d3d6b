"""``DataLoader`` with ``num_workers > 0``: worker threads and worker processes give the main process's batches,
in the same order; iterable datasets shard as torch's do; worker errors carry the worker's traceback.

Worker processes start with the forkserver method: the first loader of the session pays for the server
(it imports fgraph once), later ones for their own start only, so the process tests are few and reuse loaders.
"""
from __future__ import annotations

import random
import threading
import warnings

import numpy as np
import pytest

import fgraph as fg
from fgraph.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info


# -- datasets (module level: worker processes unpickle them) ---------------------------------------------------------
class Samples(Dataset):
    """Sample ``i``: ``(float32 row of i's, i)``; raises at index ``bad``."""

    def __init__(self, n: int, bad: int = -1) -> None:
        self.n, self.bad = n, bad

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple:
        if i == self.bad:
            _load_sample_that_fails(i)
        return np.full(3, i, np.float32), i


def _load_sample_that_fails(i: int) -> None:
    raise ValueError(f"sample {i} is corrupt")


def shard(n: int, worker_id: int, num_workers: int) -> range:
    """Worker ``worker_id``'s contiguous share of ``range(n)`` (uneven: the last worker runs dry first)."""
    per = -(-n // num_workers)
    return range(worker_id * per, min(n, (worker_id + 1) * per))


class Sharded(IterableDataset):
    def __init__(self, n: int, sharded: bool = True) -> None:
        self.n, self.sharded = n, sharded

    def __iter__(self):
        info = get_worker_info()
        if info is None or not self.sharded:
            return iter(range(self.n))
        return iter(shard(self.n, info.id, info.num_workers))


class WhoAmI(Dataset):
    """Each sample says which worker made it, with the worker's seed and a draw of NumPy's global generator."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int) -> tuple:
        info = get_worker_info()
        return info.id, info.num_workers, info.seed, float(np.random.random()), random.random()


class TwoArgumentError(Exception):
    def __init__(self, code: int, detail: str) -> None:
        super().__init__(code, detail)


class FailsOddly(Dataset):
    def __len__(self) -> int:
        return 2

    def __getitem__(self, i: int) -> int:
        raise TwoArgumentError(3, "no")


def a_lock_per_batch(batch: list) -> object:
    """A collate_fn whose batches cannot be pickled back to the main process."""
    return threading.Lock()


def _batches(loader) -> list:
    return [(x.numpy().tolist(), y.tolist()) for x, y in loader]


def _torch_batches(torch, dataset, **kwargs) -> list:
    with warnings.catch_warnings():  # JAX warns about any fork; torch's workers never touch JAX
        warnings.simplefilter("ignore", RuntimeWarning)
        return [np.asarray(b).tolist() for b in torch.utils.data.DataLoader(dataset, **kwargs)]


def _torch_sharded(torch, n: int, sharded: bool = True):
    class TorchSharded(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            if info is None or not sharded:
                return iter(range(n))
            return iter(shard(n, info.id, info.num_workers))

    return TorchSharded()


# -- worker threads ----------------------------------------------------------------------------------------------------
def test_thread_workers_give_the_main_process_order():
    seen, lock = [], threading.Lock()

    def init(worker_id: int) -> None:
        with lock:
            seen.append((worker_id, get_worker_info().num_workers, get_worker_info().worker_method))

    ds = Samples(23)
    main = DataLoader(ds, batch_size=4, shuffle=True, generator=fg.Generator(5))
    expected = [_batches(main), _batches(main)]
    for kwargs in (dict(), dict(prefetch_factor=1), dict(persistent_workers=True), dict(in_order=False)):
        loader = DataLoader(ds, batch_size=4, shuffle=True, generator=fg.Generator(5), num_workers=2,
                            worker_method="thread", worker_init_fn=init, **kwargs)
        epochs = [_batches(loader), _batches(loader)]
        if kwargs.get("in_order") is False:
            assert [sorted(e) for e in epochs] == [sorted(e) for e in expected]
        else:
            assert epochs == expected, kwargs
    assert sorted(seen) == sorted([(0, 2, "thread"), (1, 2, "thread")] * 7), "persistent workers start once"
    assert get_worker_info() is None


def test_manual_seed_order_is_the_same_with_and_without_workers():
    def epoch(**kwargs):
        fg.manual_seed(11)
        return _batches(DataLoader(Samples(9), batch_size=2, shuffle=True, **kwargs))

    assert epoch() == epoch(num_workers=2, worker_method="thread")


def test_iterable_dataset_sharded_across_threads_equals_torch():
    torch = pytest.importorskip("torch")
    for batch_size, drop_last in ((3, False), (2, True)):  # uneven shards: worker 1 runs dry first
        theirs = _torch_batches(torch, _torch_sharded(torch, 11), batch_size=batch_size, drop_last=drop_last,
                                num_workers=2)
        ours = [b.tolist() for b in DataLoader(Sharded(11), batch_size=batch_size, drop_last=drop_last, num_workers=2,
                                               worker_method="thread")]
        assert ours == theirs
    # without sharding, each worker yields all of it (torch's documented behaviour)
    theirs = _torch_batches(torch, _torch_sharded(torch, 3, sharded=False), batch_size=2, num_workers=2)
    assert theirs == [[0, 1], [0, 1], [2], [2]]
    assert [b.tolist() for b in DataLoader(Sharded(3, sharded=False), batch_size=2, num_workers=2,
                                           worker_method="thread")] == theirs


def test_worker_errors_carry_the_worker_traceback():
    loader = DataLoader(Samples(8, bad=5), batch_size=2, num_workers=2, worker_method="thread")
    with pytest.raises(ValueError) as info:
        list(loader)
    message = str(info.value)
    assert "Caught ValueError in DataLoader worker thread 0" in message
    assert "_load_sample_that_fails" in message and "sample 5 is corrupt" in message
    with pytest.raises(RuntimeError, match="Caught TwoArgumentError in DataLoader worker thread"):
        list(DataLoader(FailsOddly(), num_workers=1, worker_method="thread"))


def test_timeout_and_setup_errors():
    class Slow(Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            threading.Event().wait(1.0)
            return i

    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.05 seconds"):
        next(iter(DataLoader(Slow(), num_workers=1, worker_method="thread", timeout=0.05)))

    def broken_init(worker_id):
        raise KeyError("no such shard")

    with pytest.raises(KeyError, match="(?s)in DataLoader worker thread 0.*broken_init"):
        list(DataLoader(Samples(2), num_workers=1, worker_method="thread", worker_init_fn=broken_init))


def test_unpicklable_arguments_are_named_before_any_process_starts():
    with pytest.raises(TypeError, match="collate_fn cannot be pickled.*worker_method='thread'"):
        iter(DataLoader(Samples(2), num_workers=1, collate_fn=lambda batch: batch))


# -- worker processes --------------------------------------------------------------------------------------------------
def test_worker_processes():
    loader = DataLoader(Samples(13, bad=11), batch_size=3, shuffle=True, generator=fg.Generator(2), num_workers=2,
                        persistent_workers=True)
    main = DataLoader(Samples(13), batch_size=3, shuffle=True, generator=fg.Generator(2))
    failures = 0
    for _ in range(2):  # two epochs on the same (persistent) workers: the main process's order
        expected, got = iter(main), iter(loader)
        for want in expected:
            try:
                batch = next(got)
            except ValueError as exc:  # the batch holding sample 11 fails in its worker
                assert "in DataLoader worker process" in str(exc) and "_load_sample_that_fails" in str(exc)
                assert 11 in want[1].tolist()
                failures += 1
                continue
            assert isinstance(batch[0], fg.Tensor) and batch[1].dtype == fg.tensor([1]).dtype
            assert _batches([batch]) == _batches([want])
    assert failures == 2
    loader._iterator._shutdown_workers()

    rows = [list(sample) for sample in DataLoader(WhoAmI(), batch_size=None, num_workers=2)]  # samples 0-3
    assert [row[0] for row in rows] == [0, 1, 0, 1], "tasks go round-robin"
    by_worker = {row[0]: row for row in rows}
    assert sorted(by_worker) == [0, 1] and all(row[1] == 2 for row in rows)
    assert by_worker[1][2] == by_worker[0][2] + 1, "worker seeds are base_seed + id"
    assert by_worker[0][3] != by_worker[1][3] and by_worker[0][4] != by_worker[1][4], "each worker reseeds its RNGs"


def test_iterable_dataset_sharded_across_processes_equals_torch():
    torch = pytest.importorskip("torch")
    ours = [b.tolist() for b in DataLoader(Sharded(11), batch_size=3, num_workers=2)]
    assert ours == _torch_batches(torch, _torch_sharded(torch, 11), batch_size=3, num_workers=2)


def test_a_batch_that_cannot_be_pickled_is_an_error_not_a_hang():
    with pytest.raises(RuntimeError, match="(?s)worker process 0.*cannot be pickled to the main process.*lock"):
        list(DataLoader(Samples(2), num_workers=1, collate_fn=a_lock_per_batch, timeout=60))
