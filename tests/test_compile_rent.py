"""Fusion's rent rule (fgraph/autograd/_compile_rent.py): a repeated structure compiles once its node-by-node
passes have cost ``rent`` times its expected compile, not at its second sighting. The rest of the suite runs
with rent 0 (tests/conftest.py); each test here sets the rent it needs and puts 0 back."""
from __future__ import annotations

import threading

import pytest

import fgraph as fg
from fgraph.autograd import _compile_rent, fusion

# Fusion's own counters (sightings, compiles, hits of a pass run fused): checked with op-by-op dispatch; under
# deferred dispatch a recurring step's passes are recorded into its program instead (tests/test_deferred.py).
pytestmark = pytest.mark.eager_dispatch


@pytest.fixture
def rent():
    """Fusion with a clean cache and counters; yields ``set_compile_rent``; rent 0 again afterwards."""
    fusion.wait_for_compiles(60.0)
    fusion.clear_cache()
    fusion.reset_stats()
    try:
        yield fusion.set_compile_rent
    finally:
        fusion.wait_for_compiles(60.0)
        fusion.set_compile_rent(0)


def _chain_pass(x: fg.Tensor, kinds: tuple) -> fg.Tensor:
    h = x
    for k in kinds:
        h = fg.sin(h) if k else h * 1.5
    (g,) = fg.grad(h.sum(), [x])
    return g


def _structure_entry(kinds: tuple) -> list:
    """The ``[sightings, paid seconds]`` of the one structure fusion has seen."""
    entries = list(fusion._seen.values())
    assert len(entries) == 1, entries
    return entries[0]


def test_due_follows_the_rent_rule():
    expected = _compile_rent.expected_compile_seconds(100)
    assert expected > 0
    assert not _compile_rent.due(1, 10.0, 100, after=2, rent=0.0)  # never before COMPILE_AFTER sightings
    assert _compile_rent.due(2, 0.0, 100, after=2, rent=0.0)  # rent 0: the second sighting
    assert not _compile_rent.due(50, 0.99 * 2 * expected, 100, after=2, rent=2.0)
    assert _compile_rent.due(50, 2 * expected, 100, after=2, rent=2.0)
    assert _compile_rent.expected_compile_seconds(400) > _compile_rent.expected_compile_seconds(100)


def test_expected_compile_follows_the_measured_compiles(monkeypatch):
    monkeypatch.setattr(_compile_rent, "_rate", [0.0, 0, 0])
    prior = _compile_rent.expected_compile_seconds(100)
    assert prior == pytest.approx(_compile_rent.FIXED_SECONDS + 100 * _compile_rent.PRIOR_SECONDS_PER_NODE)
    _compile_rent.record_compile(_compile_rent.FIXED_SECONDS + 0.5, 100)  # a slow compile: 5 ms per node
    assert _compile_rent.expected_compile_seconds(100) == pytest.approx(_compile_rent.FIXED_SECONDS + 0.5)
    assert _compile_rent.expected_compile_seconds(200) == pytest.approx(_compile_rent.FIXED_SECONDS + 1.0)


def test_set_compile_rent_checks_its_argument(rent):
    for bad in (-1, "2", True, float("nan"), None):
        with pytest.raises(ValueError, match="set_compile_rent"):
            rent(bad)
    rent(3)
    assert fusion.stats()["compile_rent"] == 3.0


def test_a_structure_runs_node_by_node_until_its_passes_pay_for_the_compile(rent):
    kinds = (1, 0, 1, 1, 0, 1)
    x = fg.tensor([0.1, 0.2, 0.3], requires_grad=True)
    expected = _chain_pass(x, kinds).tolist()
    rent(1e9)  # a compile that never pays: every pass node by node, each one charged
    paid = []
    for _ in range(6):
        assert _chain_pass(x, kinds).tolist() == expected
        paid.append(_structure_entry(kinds)[1])
    fusion.wait_for_compiles(60.0)
    assert fusion.stats()["compiles"] == 0 and fusion.stats()["hits"] == 0
    assert _structure_entry(kinds)[0] == 7  # the first pass and these six
    assert all(b > a for a, b in zip(paid, paid[1:])), paid  # every node-by-node pass paid its time
    rent(1e-9)  # now the rent paid covers the compile: the next pass compiles it (in the background)
    assert _chain_pass(x, kinds).tolist() == expected
    fusion.wait_for_compiles(60.0)
    assert fusion.stats()["compiles"] == 1
    got = _chain_pass(x, kinds)
    assert fusion.stats()["hits"] == 1
    assert got.tolist() == pytest.approx(expected, rel=1e-6)


def test_rent_zero_compiles_at_the_second_sighting(rent):
    rent(0)
    kinds = (0, 1, 1, 0)
    x = fg.tensor([0.5, -0.25], requires_grad=True)
    _chain_pass(x, kinds)
    _chain_pass(x, kinds)
    fusion.wait_for_compiles(60.0)
    assert fusion.stats()["compiles"] == 1
    _chain_pass(x, kinds)
    assert fusion.stats()["hits"] == 1


def test_rent_is_charged_per_thread_to_the_pass_that_ran_node_by_node(rent):
    rent(1e9)
    kinds = (1, 1, 0)
    x = fg.tensor([0.3, 0.7], requires_grad=True)
    _chain_pass(x, kinds)
    before = _structure_entry(kinds)[1]
    errors = []

    def work():
        try:
            for _ in range(3):
                _chain_pass(x, kinds)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    entry = _structure_entry(kinds)
    assert entry[0] == 10 and entry[1] > before
    assert _compile_rent._stack() == []  # every pass this thread started has ended


def test_a_pass_that_raises_still_ends_its_rent_account(rent):
    rent(1e9)
    x = fg.tensor([1.0, 2.0], requires_grad=True)

    def hook(grad):
        raise RuntimeError("boom")

    y = fg.sin(x) * 2
    y.register_hook(hook)
    with pytest.raises(RuntimeError, match="boom"):
        fg.grad(y.sum(), [x])
    assert _compile_rent._stack() == []
