"""``DistributedSampler``'s structure with shuffling (torch's indices differ: torch.Generator drives its
permutation), its defaults from ``fg.distributed``, and a ``DataLoader`` per replica. The exact indices
without shuffling are compared with torch in tests/test_utils_data.py."""
from __future__ import annotations

import pytest

import fgraph as fg
from fgraph.utils.data import DataLoader, DistributedSampler, TensorDataset

CASES = [(10, 3, False), (10, 3, True), (12, 4, False), (12, 4, True), (2, 5, False), (7, 1, True), (0, 2, False)]


def _interleaved(shares: list[list[int]]) -> list[int]:
    """The one list every replica took every ``len(shares)``-th index of."""
    return [share[i] for i in range(len(shares[0])) for share in shares]


@pytest.mark.parametrize("n, replicas, drop_last", CASES)
def test_shuffled_shares_follow_torchs_layout(n, replicas, drop_last):
    torch = pytest.importorskip("torch")
    for epoch in (0, 3):
        samplers = [DistributedSampler(range(n), replicas, rank, seed=7, drop_last=drop_last)
                    for rank in range(replicas)]
        theirs = [torch.utils.data.DistributedSampler(range(n), replicas, rank, seed=7, drop_last=drop_last)
                  for rank in range(replicas)]
        for ours, other in zip(samplers, theirs):
            ours.set_epoch(epoch)
            assert (len(ours), ours.num_samples, ours.total_size) == (len(other), other.num_samples, other.total_size)
        shares = [list(s) for s in samplers]
        assert all(len(share) == len(samplers[0]) for share in shares)
        order = _interleaved(shares) if n else []
        if drop_last:  # the first total_size indices of one permutation
            assert len(set(order)) == len(order) == samplers[0].total_size <= n
        else:  # a permutation of every index, padded by wrapping around from its start
            assert sorted(order[:n]) == list(range(n))
            assert order[n:] == (order[:n] * (len(order) // max(n, 1) + 1))[:len(order) - n]


def test_shuffle_depends_on_seed_and_epoch_only():
    def shares(seed, epoch):
        out = []
        for rank in range(3):
            sampler = DistributedSampler(range(50), 3, rank, seed=seed)
            sampler.set_epoch(epoch)
            out.append(list(sampler))
        return out

    fg.manual_seed(123)  # the global generator plays no part
    first = shares(1, 0)
    fg.manual_seed(456)
    assert first == shares(1, 0)
    assert first != shares(1, 1) and first != shares(2, 0)
    assert shares(1, 1) == shares(0, 2)  # torch's rule: the permutation of seed + epoch
    assert _interleaved(first) != list(range(51))


def test_defaults_come_from_the_process_group():
    assert (fg.distributed.get_rank(), fg.distributed.get_world_size()) == (0, 1)
    sampler = DistributedSampler(range(5), shuffle=False)
    assert (sampler.rank, sampler.num_replicas, list(sampler)) == (0, 1, [0, 1, 2, 3, 4])
    assert DistributedSampler(range(5), num_replicas=2, shuffle=False).rank == 0
    with pytest.raises(ValueError, match=r"Invalid rank 1, rank should be in the interval \[0, 0\]"):
        DistributedSampler(range(5), rank=1)


def test_replicas_loaders_cover_the_dataset_once_per_epoch():
    data = TensorDataset(fg.arange(12))
    samplers = [DistributedSampler(data, 3, rank, seed=3) for rank in range(3)]
    loaders = [DataLoader(data, batch_size=2, sampler=s) for s in samplers]
    seen = []
    for epoch in range(2):
        for s in samplers:
            s.set_epoch(epoch)
        batches = [[b[0].tolist() for b in loader] for loader in loaders]
        assert all(len(b) == 2 for b in batches)
        seen.append(sorted(i for replica in batches for batch in replica for i in batch))
        assert seen[-1] == list(range(12))
    assert [list(s) for s in samplers] != [list(DistributedSampler(data, 3, r, seed=3)) for r in range(3)]
