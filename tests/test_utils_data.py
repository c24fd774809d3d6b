"""``fgraph.utils.data`` against ``torch.utils.data``: batches, dtypes, lengths, samplers, splits, argument checks.

Worker tests (threads and processes) live in ``test_utils_data_workers.py``. torch is the oracle where it
is deterministic (sequential batches, batch and distributed samplers, split sizes, error texts); shuffles
are checked for being reproducible permutations (fgraph's generator is not torch's).
"""
from __future__ import annotations

import collections
import contextlib
import pathlib
import re

import numpy as np
import pytest

import fgraph as fg
from fgraph._dtypes import x64_enabled
from fgraph.utils.data import (BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset, DistributedSampler,
                               IterableDataset, RandomSampler, SequentialSampler, StackDataset, Subset,
                               SubsetRandomSampler, TensorDataset, WeightedRandomSampler, default_collate,
                               default_convert, random_split)

Point = collections.namedtuple("Point", ["x", "y"])
DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "data.md"


# -- comparing a batch with torch's ---------------------------------------------------------------------------------
def _expected_dtype(torch_dtype) -> np.dtype:
    """torch's dtype as fgraph stores it: 64-bit dtypes narrow to 32 bits without JAX's x64 mode."""
    name = str(torch_dtype).replace("torch.", "")
    if not x64_enabled():
        name = {"float64": "float32", "int64": "int32", "complex128": "complex64"}.get(name, name)
    return np.dtype(name)


def assert_same_batch(ours, theirs, torch):
    """Same structure (container types, keys), same values, torch's dtypes mapped."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, fg.Tensor), type(ours)
        assert ours.dtype == _expected_dtype(theirs.dtype), (ours.dtype, theirs.dtype)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    elif isinstance(theirs, dict):
        assert type(ours) is type(theirs) and list(ours) == list(theirs)
        for key in theirs:
            assert_same_batch(ours[key], theirs[key], torch)
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert_same_batch(a, b, torch)
    else:
        assert ours == theirs


class Records(Dataset):
    """Samples of every leaf kind default_collate knows, as a tuple, a dict or a namedtuple."""

    def __init__(self, n: int, form: str) -> None:
        self.n, self.form = n, form

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        fields = {"image": np.arange(6, dtype=np.float32).reshape(2, 3) + i, "wide": np.full(2, i / 3),
                  "label": i, "weight": i * 0.25, "flag": i % 2 == 0, "name": f"s{i}",
                  "scalar": np.int16(i), "nested": [i, (np.float32(i), 2 * i)]}
        if self.form == "dict":
            return fields
        if self.form == "namedtuple":
            return Point(fields["image"], fields["label"])
        return tuple(fields.values())


@pytest.mark.parametrize("form", ["tuple", "dict", "namedtuple"])
def test_sequential_batches_equal_torch(form):
    torch = pytest.importorskip("torch")
    ds = Records(7, form)
    for batch_size, drop_last in ((3, False), (3, True), (7, False)):
        ours = list(DataLoader(ds, batch_size=batch_size, drop_last=drop_last))
        theirs = list(torch.utils.data.DataLoader(ds, batch_size=batch_size, drop_last=drop_last))
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert_same_batch(a, b, torch)


def test_tensor_datasets_equal_torch_and_the_gather_path_equals_stacking():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).normal(size=(10, 3)).astype(np.float32)
    y = np.arange(10)
    ours = DataLoader(TensorDataset(fg.tensor(x), fg.tensor(y)), batch_size=4, shuffle=False)
    theirs = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y)),
                                         batch_size=4)
    one_by_one = DataLoader(TensorDataset(fg.tensor(x), fg.tensor(y)), batch_size=4,
                            collate_fn=lambda batch: default_collate(batch))  # not the default: no gather
    for a, b, c in zip(ours, theirs, one_by_one):
        assert_same_batch(a, b, torch)
        assert_same_batch(a, [torch.tensor(t.numpy()) for t in c], torch)
    # NumPy arrays and torch tensors in a TensorDataset, and a Subset of one, gather the same rows
    subset = Subset(TensorDataset(x, torch.tensor(y)), [9, 2, 5])
    (xb, yb), = list(DataLoader(subset, batch_size=3))
    np.testing.assert_array_equal(xb.numpy(), x[[9, 2, 5]])
    assert yb.tolist() == [9, 2, 5] and yb.dtype == _expected_dtype(torch.int64)


def test_torch_datasets_by_duck_typing():
    torch = pytest.importorskip("torch")
    tds = torch.utils.data.TensorDataset(torch.arange(6.0).reshape(3, 2), torch.tensor([1, 0, 1]))
    ours = list(DataLoader(tds, batch_size=2))
    for a, b in zip(ours, torch.utils.data.DataLoader(tds, batch_size=2)):
        assert_same_batch(a, b, torch)

    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(torch.arange(5))

    assert [b.tolist() for b in DataLoader(Stream(), batch_size=2)] == [[0, 1], [2, 3], [4]]
    with pytest.raises(ValueError, match="shuffle"):
        DataLoader(Stream(), shuffle=True)
    assert [b.tolist() for b in DataLoader(iter(range(3)), batch_size=2)] == [[0, 1], [2]]  # any iterable


def test_default_collate_and_convert_rules():
    torch = pytest.importorskip("torch")
    from torch.utils.data import default_collate as torch_collate
    from torch.utils.data import default_convert as torch_convert

    for batch in ([1.5, 2.5], [True, False], [3, 4], ["a", "b"], [b"x", b"y"], [np.float64(1), np.float64(2)],
                  [{"k": Point(1, [2.0])}, {"k": Point(3, [4.0])}], [[1, 2], [3, 4]]):
        assert_same_batch(default_collate(batch), torch_collate(batch), torch)
    sample = {"a": np.arange(3), "b": (np.float32(2), "s"), "c": [1, np.zeros(2)]}
    assert_same_batch(default_convert(sample), torch_convert(sample), torch)
    assert_same_batch(list(DataLoader([np.arange(2)], batch_size=None)), list(torch.utils.data.DataLoader(
        [np.arange(2)], batch_size=None)), torch)


def test_default_collate_errors():
    with pytest.raises(RuntimeError, match=r"array 1 of the batch has shape \(3,\) but array 0 has shape \(2,\)"):
        default_collate([np.zeros(2), np.zeros(3)])
    with pytest.raises(RuntimeError, match="pad_sequence"):
        default_collate([fg.zeros(2), fg.zeros(3)])
    with pytest.raises(TypeError, match="found <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(TypeError, match="found <class 'object'>"):
        default_collate([object(), object()])
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [3]])


def test_fgraph_tensor_samples_stay_on_the_graph():
    w = fg.tensor([1.0, 2.0], requires_grad=True)
    batch = default_collate([w * 2, w * 3])
    (g,) = fg.grad(batch.sum(), [w])
    assert g.tolist() == [5.0, 5.0]


@pytest.mark.parametrize("n, batch_size", [(10, 3), (9, 3), (1, 4), (0, 2)])
def test_lengths_and_drop_last_equal_torch(n, batch_size):
    torch = pytest.importorskip("torch")
    for drop_last in (False, True):
        ours = DataLoader(list(range(n)), batch_size=batch_size, drop_last=drop_last)
        theirs = torch.utils.data.DataLoader(list(range(n)), batch_size=batch_size, drop_last=drop_last)
        assert len(ours) == len(theirs) == len(list(ours)) == len(list(theirs))


class Counting(IterableDataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self) -> int:
        return self.n


def test_iterable_dataset_batches_and_length_equal_torch():
    torch = pytest.importorskip("torch")

    class TorchCounting(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(7))

        def __len__(self):
            return 7

    for kwargs in (dict(batch_size=3), dict(batch_size=3, drop_last=True), dict(batch_size=None)):
        ours, theirs = DataLoader(Counting(7), **kwargs), torch.utils.data.DataLoader(TorchCounting(), **kwargs)
        assert len(ours) == len(theirs)
        assert [np.asarray(b).tolist() for b in ours] == [np.asarray(b).tolist() for b in theirs]
    loader = DataLoader(Counting(3), batch_size=None)
    assert len(loader) == 3
    loader.dataset.n = 5  # reported 3 samples, yields 5: torch's warning
    with pytest.warns(UserWarning, match="was reported to be 3"):
        list(loader)


# -- argument checks: torch's exceptions and texts -----------------------------------------------------------------
MISUSES = [
    dict(num_workers=-1),
    dict(timeout=-1),
    dict(prefetch_factor=2),
    dict(num_workers=1, prefetch_factor=-1),
    dict(persistent_workers=True),
    dict(sampler=[0, 1], shuffle=True),
    dict(batch_sampler=[[0]], batch_size=2),
    dict(batch_sampler=[[0]], shuffle=True),
    dict(batch_sampler=[[0]], sampler=[0]),
    dict(batch_sampler=[[0]], drop_last=True),
    dict(batch_size=None, drop_last=True),
    dict(batch_size=0),
    dict(batch_size=2, drop_last="yes"),
    dict(multiprocessing_context="spawn"),
    dict(num_workers=1, multiprocessing_context="no-such-method"),
]


@pytest.mark.parametrize("kwargs", MISUSES, ids=lambda kw: ",".join(kw))
def test_argument_checks_equal_torch(kwargs):
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as theirs:
        torch.utils.data.DataLoader(list(range(4)), **kwargs)
    with pytest.raises(type(theirs.value)) as ours:
        DataLoader(list(range(4)), **kwargs)
    assert str(ours.value) == str(theirs.value)


def test_iterable_dataset_argument_checks_equal_torch():
    torch = pytest.importorskip("torch")

    class TorchCounting(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(3))

    for kwargs in (dict(shuffle=True), dict(sampler=[0]), dict(batch_sampler=[[0]])):  # reprs: plain lists
        with pytest.raises(ValueError) as theirs:
            torch.utils.data.DataLoader(TorchCounting(), **kwargs)
        with pytest.raises(ValueError) as ours:
            DataLoader(Counting(3), **kwargs)
        assert str(ours.value) == str(theirs.value)


def test_fgraph_specific_checks():
    with pytest.raises(ValueError, match="fork.*deadlock.*forkserver"):
        DataLoader([1], num_workers=1, multiprocessing_context="fork")
    with pytest.raises(ValueError, match="worker_method"):
        DataLoader([1], num_workers=1, worker_method="greenlet")
    with pytest.raises(TypeError, match="fgraph.Generator"):
        DataLoader([1], shuffle=True, generator=np.random.default_rng(0))
    loader = DataLoader([1, 2])
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        loader.batch_size = 3
    with pytest.raises(TypeError, match="map-style .* or iterable"):
        DataLoader(42)


# -- shuffling -------------------------------------------------------------------------------------------------------
def _epoch(loader) -> list:
    return [i for batch in loader for i in batch.tolist()]


def test_shuffles_are_reproducible_permutations():
    loader = DataLoader(list(range(20)), batch_size=6, shuffle=True, generator=fg.Generator(7))
    first, second = _epoch(loader), _epoch(loader)
    assert sorted(first) == sorted(second) == list(range(20))
    assert first != second, "each epoch reshuffles"
    again = DataLoader(list(range(20)), batch_size=6, shuffle=True, generator=fg.Generator(7))
    assert [_epoch(again), _epoch(again)] == [first, second]
    other = DataLoader(list(range(20)), batch_size=6, shuffle=True, generator=fg.Generator(8))
    assert _epoch(other) != first


def test_manual_seed_repeats_a_run():
    def run():
        fg.manual_seed(3)
        loader = DataLoader(list(range(12)), batch_size=5, shuffle=True)
        noise = fg.rand(2).tolist()  # other draws interleave with the loader's, deterministically
        return _epoch(loader), _epoch(loader), noise, list(RandomSampler(range(5))), list(SubsetRandomSampler([4, 5]))

    assert run() == run()
    first = run()[0]
    fg.manual_seed(4)
    assert _epoch(DataLoader(list(range(12)), batch_size=5, shuffle=True)) != first


def test_random_samplers():
    g = fg.Generator(1)
    with_replacement = list(RandomSampler(range(3), replacement=True, num_samples=50, generator=g))
    assert len(with_replacement) == 50 and set(with_replacement) <= {0, 1, 2}
    long_run = list(RandomSampler(range(4), num_samples=10, generator=g))  # chained permutations
    assert sorted(long_run[:4]) == sorted(long_run[4:8]) == [0, 1, 2, 3] and len(long_run) == 10
    assert sorted(SubsetRandomSampler([5, 9, 11], generator=g)) == [5, 9, 11]
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler([])
    with pytest.raises(TypeError, match="replacement should be a boolean value"):
        RandomSampler(range(3), replacement=1)


def test_weighted_random_sampler_statistics():
    weights = [0.1, 0.0, 0.3, 0.6]
    draws = np.array(list(WeightedRandomSampler(weights, 20000, generator=fg.Generator(0))))
    freq = np.bincount(draws, minlength=4) / draws.size
    np.testing.assert_allclose(freq, weights, atol=0.015)  # ~4.5 standard deviations of the largest share
    once = list(WeightedRandomSampler(weights, 3, replacement=False, generator=fg.Generator(0)))
    assert sorted(once) == [0, 2, 3], "without replacement: each positive-weight index once"
    torch = pytest.importorskip("torch")
    for args in ((weights, 0), (weights, 2, 1), ([[1.0, 2.0]], 2)):
        with pytest.raises(ValueError) as theirs:
            torch.utils.data.WeightedRandomSampler(*args)
        with pytest.raises(ValueError) as ours:
            WeightedRandomSampler(*args)
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError, match="without replacement from 3 indices"):
        WeightedRandomSampler(weights, 4, replacement=False)
    with pytest.raises(ValueError, match="non-negative"):
        WeightedRandomSampler([1.0, -1.0], 2)


def test_sequential_and_batch_samplers_equal_torch():
    torch = pytest.importorskip("torch")
    tud = torch.utils.data
    assert list(SequentialSampler(range(5))) == list(tud.SequentialSampler(range(5)))
    for n, size, drop_last in ((10, 3, False), (10, 3, True), (9, 3, True), (2, 5, False), (2, 5, True)):
        ours = BatchSampler(SequentialSampler(range(n)), size, drop_last)
        theirs = tud.BatchSampler(tud.SequentialSampler(range(n)), size, drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


@pytest.mark.parametrize("n, replicas", [(10, 3), (10, 5), (4, 3), (2, 5)])
def test_distributed_sampler_equals_torch_without_shuffle(n, replicas):
    torch = pytest.importorskip("torch")
    for drop_last in (False, True):
        if drop_last and n < replicas:
            continue  # torch would give every rank 0 samples of a negative-sized split
        for rank in range(replicas):
            ours = DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
            theirs = torch.utils.data.DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
            assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_distributed_sampler_shuffle():
    shares = [list(DistributedSampler(range(11), 3, rank, seed=5)) for rank in range(3)]
    assert set(sum(shares, [])) == set(range(11)) and sum(map(len, shares)) == 12
    assert shares == [list(DistributedSampler(range(11), 3, rank, seed=5)) for rank in range(3)], "same in every run"
    sampler = DistributedSampler(range(11), 3, 0, seed=5)
    sampler.set_epoch(1)
    assert list(sampler) != shares[0]
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        DistributedSampler(range(4), 3, 3)
    assert len(DistributedSampler(range(4))) == 4  # one JAX process: all of it


# -- datasets ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n, lengths", [(10, [3, 7]), (11, [0.3, 0.7]), (11, [0.33, 0.33, 0.34]),
                                        (3, [0.5, 0.5, 0.0]), (11, [0.1] * 10)])
def test_random_split_sizes_equal_torch(n, lengths):
    torch = pytest.importorskip("torch")
    empty = 0.0 in lengths
    with pytest.warns(UserWarning, match="Length of split at index 2 is 0") if empty else contextlib.nullcontext():
        ours = random_split(range(n), lengths, generator=fg.Generator(0))
    with pytest.warns(UserWarning) if empty else contextlib.nullcontext():
        theirs = torch.utils.data.random_split(range(n), lengths)
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    assert sorted(i for s in ours for i in s) == list(range(n))


def test_random_split_reproducible_and_checked():
    a = random_split(range(10), [4, 6], generator=fg.Generator(1))
    b = random_split(range(10), [4, 6], generator=fg.Generator(1))
    assert [list(s) for s in a] == [list(s) for s in b]
    fg.manual_seed(2)
    c = [list(s) for s in random_split(range(10), [4, 6])]
    fg.manual_seed(2)
    assert c == [list(s) for s in random_split(range(10), [4, 6])]
    torch = pytest.importorskip("torch")
    for lengths in ([3, 3], [1.5, -0.5]):
        with pytest.raises(ValueError) as theirs:
            torch.utils.data.random_split(range(10), lengths)
        with pytest.raises(ValueError) as ours:
            random_split(range(10), lengths)
        assert str(ours.value) == str(theirs.value)


def test_dataset_classes_equal_torch():
    torch = pytest.importorskip("torch")
    tud = torch.utils.data
    a, b = list("abc"), list("de")
    assert [ConcatDataset([a, b])[i] for i in range(-5, 5)] == [tud.ConcatDataset([a, b])[i] for i in range(-5, 5)]
    assert ConcatDataset([a, b]).cumulative_sizes == tud.ConcatDataset([a, b]).cumulative_sizes
    assert list(ChainDataset([Counting(2), Counting(3)])) == [0, 1, 0, 1, 2]
    assert list(Counting(2) + Counting(1)) == [0, 1, 0]
    assert StackDataset(a, a)[1] == tud.StackDataset(a, a)[1]
    assert StackDataset(x=a, y=a).__getitems__([0, 2]) == tud.StackDataset(x=a, y=a).__getitems__([0, 2])
    assert Subset(a, [2, 0]).__getitems__([0, 1]) == tud.Subset(a, [2, 0]).__getitems__([0, 1])
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(a, b)
    with pytest.raises(ValueError, match="size mismatch between tensors"):
        TensorDataset(fg.zeros(3), fg.zeros(4))
    with pytest.raises(TypeError, match="ChainDataset"):
        ConcatDataset([Counting(2)])


def test_docs_example_runs():
    """The runnable example of docs/data.md (its first python block) runs as written."""
    text = DOC.read_text()
    block = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    namespace: dict = {"__name__": "docs_example"}
    exec(compile(block, str(DOC), "exec"), namespace)
