"""Deferred dispatch's cold steps: a training step whose kernels never compiled compiles as one program at once.

Kernel by kernel, each of those kernels (and each rule kernel of the pass) would compile on its own, paying
XLA's fixed cost every time: ResNet-8's first step took 5.1 s so (119 compiles) and 2.5 s as one program.
The kernels here are ``leaky_relu``'s with slopes no other test uses: each is a ``jax.jit`` never compiled.
"""
import itertools

import numpy as np
import pytest

import fgraph as fg
from fgraph.autograd import _compile_rent
from fgraph.lazy import _deferred

_FRESH = itertools.count()


def _slopes(n):
    """``n`` slopes no kernel of this process has been made for (each is a static parameter of its kernel)."""
    base = 0.01 + 1e-6 * next(_FRESH)
    return [base + 1e-3 * i for i in range(n)]


def _net(x, slopes):
    h = x
    for s in slopes:
        h = fg.nn.functional.leaky_relu(h * 1.5, s)
    return h


@pytest.fixture
def deferred(monkeypatch):
    monkeypatch.setattr(_deferred, "_STEPS", type(_deferred._STEPS)())  # no step another test recorded
    fg.lazy.reset_stats()
    fg.lazy.set_deferred(True)
    yield
    fg.lazy.set_deferred(False)
    _deferred.set_cold_compile(True)


def _expected(slopes, x):
    with fg.lazy.op_by_op():
        xt = fg.tensor(x, requires_grad=True)
        return fg.grad(_net(xt, slopes).sum(), [xt])[0].numpy()


@pytest.mark.parametrize("cold_compile", [True, False])
def test_a_step_of_kernels_never_compiled_is_recorded_and_compiled_whole_at_its_first_sighting(deferred,
                                                                                             cold_compile):
    _deferred.set_cold_compile(cold_compile)
    slopes, x = _slopes(12), np.random.default_rng(0).standard_normal(16)
    xt = fg.tensor(x, requires_grad=True)
    grads = [fg.grad(_net(xt, slopes).sum(), [xt])[0] for _ in range(2)]
    stats = fg.lazy.stats()
    if cold_compile:  # the first step's trace and pass: one program, compiled then; the second replays it
        assert (stats["cold"], stats["steps_recorded"], stats["one_by_one"], stats["hits"]) == (1, 2, 0, 1)
    else:  # kernel by kernel, its pass node by node, until the step has paid its rent
        assert (stats["cold"], stats["steps_recorded"]) == (0, 0) and stats["one_by_one"] >= 1
    for g in grads:
        np.testing.assert_allclose(g.numpy(), _expected(slopes, x), rtol=1e-12, atol=1e-12)


def test_a_trace_cut_by_a_read_runs_kernel_by_kernel_even_cold(deferred):
    # The first step of a model often reads a value mid-forward that later steps do not (a check cached after
    # its first run): its cut trace does not recur, and the uncut one needs the kernels compiled one by one.
    slopes = _slopes(12)
    x = fg.tensor(np.random.default_rng(1).standard_normal(16))
    value = _net(x, slopes).sum().item()
    assert fg.lazy.stats()["cold"] == 0 and fg.lazy.stats()["one_by_one"] == 1
    with fg.lazy.op_by_op():
        assert value == pytest.approx(_net(x, slopes).sum().item(), rel=1e-12)


def test_a_step_with_a_few_cold_kernels_among_many_runs_kernel_by_kernel(deferred, monkeypatch):
    # Compiling the whole step (~600 records and nodes) costs more than compiling three kernels one by one
    # (_compile_rent's model, here before any compile of this process has taught it a rate).
    monkeypatch.setattr(_compile_rent, "_rate", [0.0, 0, 0])
    warm = _slopes(1) * 150  # one kernel, used 150 times: compiled by the op-by-op run below
    x = fg.tensor(np.random.default_rng(2).standard_normal(16), requires_grad=True)
    with fg.lazy.op_by_op():
        fg.grad(_net(x, warm[:2]).sum(), [x])
    fg.grad(_net(x, warm + _slopes(3)).sum(), [x])
    assert fg.lazy.stats()["cold"] == 0 and fg.lazy.stats()["steps_recorded"] == 0
    fg.grad(_net(x, _slopes(3) + warm[:6]).sum(), [x])  # the same three, in a short step: cold
    assert fg.lazy.stats()["cold"] == 1
