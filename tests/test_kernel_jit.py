"""fgraph's programs compile once per signature, whether their arrays are committed to the device or not.

``jax.jit`` compiles a program again for each new pattern of committed / uncommitted arguments; saved tensors,
leaves and gradients mix both kinds (``fg.tensor`` data is uncommitted, a program's output from a committed
input is committed), so a notebook's first Hessian-vector product of a new network stalled 60-80 ms in such a
compile. ``fgraph/_kernel_jit.py`` places the programs of a one-device process on that device.
"""
import os
import subprocess
import sys

import jax
import jax.extend
import numpy as np
import pytest

import fgraph as fg
from fgraph._kernel_jit import only_device
from fgraph.autograd import fusion, interpreted
from fgraph.lazy import _xla_compiles

pytestmark = pytest.mark.eager_dispatch  # op-by-op kernels: their own jit caches are what is counted


@pytest.fixture
def no_programs():
    """Nothing compiles but the kernels themselves: no structure's fused program, no interpreter program."""
    fusion.wait_for_compiles()
    rent = fusion.stats()["compile_rent"]
    fusion.set_compile_rent(1e9)
    interpreted.set_enabled(False)
    try:
        yield
    finally:
        fusion.set_compile_rent(rent)
        interpreted.set_enabled(True)


def _uncommitted(values):
    return fg.tensor(values, requires_grad=True)


def _committed(values):
    placed = jax.device_put(np.asarray(values), jax.devices()[0])
    assert placed.committed
    return fg.Tensor(placed).requires_grad_()


def _step(a, b):
    """A forward and a backward pass: the forward kernels, the rule kernels and a gradient sum all run."""
    loss = (fg.sin(a * b) + a).sum()
    return fg.grad(loss, [a, b])


def test_the_one_device_is_known_exactly_when_the_process_has_one():
    devices = [d for backend in jax.extend.backend.backends().values() for d in backend.local_devices()]
    if len(devices) == 1:
        assert only_device() is not None and only_device().device_set == {jax.devices()[0]}
    else:
        assert only_device() is None


def _one_device_process():
    """The placement scenarios below are about a one-device process: the suite's (conftest runs JAX on one CPU)."""
    assert only_device() is not None, "these tests need a one-device process (JAX_PLATFORMS=cpu, no forced devices)"


@pytest.mark.parametrize("width", [23])  # a shape no other test uses: its kernels start cold here
def test_a_new_pattern_of_committed_arrays_compiles_nothing(no_programs, width):
    _one_device_process()
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 5, width)).astype(np.float32)
    expected = [np.cos(x * y) * y + 1, np.cos(x * y) * x]
    first = _step(_uncommitted(x), _uncommitted(y))  # compiles this shape's kernels
    for g, e in zip(first, expected):
        np.testing.assert_allclose(g.numpy(), e, rtol=1e-5, atol=1e-6)
    before = _xla_compiles.count()
    for make_a, make_b in [(_committed, _uncommitted), (_uncommitted, _committed), (_committed, _committed)]:
        grads = _step(make_a(x), make_b(y))
        for g, e in zip(grads, expected):
            np.testing.assert_allclose(g.numpy(), e, rtol=1e-5, atol=1e-6)
    assert _xla_compiles.count() == before, "a kernel compiled again for committed arguments"


def test_a_compiled_step_does_not_trace_or_compile_again_for_a_committed_batch(no_programs):
    _one_device_process()
    layer = fg.nn.Linear(6, 3)
    opt = fg.optim.SGD(layer.parameters(), lr=0.1)

    @fg.compile
    def step(x):
        loss = layer(x).square().sum()
        opt.step(loss.backward())
        return loss

    batch = np.linspace(-1, 1, 12, dtype=np.float32).reshape(2, 6)
    losses = [step(fg.tensor(batch)).item()]
    before = _xla_compiles.count()
    placed = jax.device_put(batch, jax.devices()[0])
    losses += [step(fg.Tensor(placed)).item(), step(fg.tensor(batch)).item()]
    assert _xla_compiles.count() == before and step.traces == 1
    assert losses[2] < losses[1] < losses[0]  # three SGD steps on one batch, whichever way it was placed


def _grad_of_network(x):
    """Forward ops, a backward pass (rule kernels, a gradient sum) and forward mode, on whatever ``x`` is."""
    t = fg.Tensor(x).requires_grad_()
    h = fg.tanh(t * 1.5) + fg.sin(t)
    loss = (h * h).sum() + (h * t).sum()
    (g,) = fg.grad(loss, [t])
    _, tangent = fg.func.jvp(lambda v: fg.sin(v) * v, (fg.Tensor(x),), (fg.ones_like(fg.Tensor(x)),))
    return g.array, tangent.array


@pytest.mark.parametrize("deferred", [True, False])
def test_fgraph_code_runs_inside_shard_map_and_pmap(deferred):
    """Manual axes refuse a placed program inside them: kernels called in a trace take their plain form."""
    from jax import shard_map
    from jax.sharding import NamedSharding, PartitionSpec

    x = np.linspace(-1.0, 1.0, 8, dtype=np.float32)
    was = fg.lazy.is_deferred()
    fg.lazy.set_deferred(deferred)
    try:
        expected = [np.asarray(a) for a in _grad_of_network(x)]
        mesh = jax.make_mesh((1,), ("batch",))
        spec = PartitionSpec("batch")
        sharded = jax.device_put(x, NamedSharding(mesh, spec))
        for _ in range(3):  # a structure seen again: fused programs may serve it, inside the trace too
            mapped = jax.jit(shard_map(_grad_of_network, mesh=mesh, in_specs=spec, out_specs=(spec, spec)))(sharded)
            per_device = jax.pmap(_grad_of_network)(x[None])
            for got in (mapped, [a[0] for a in per_device]):
                for g, e in zip(got, expected):
                    np.testing.assert_allclose(np.asarray(g), e, rtol=1e-5, atol=1e-6)
        offset = fg.exp(fg.tensor(x)) * 2  # eager, maybe still pending: read inside the trace, run outside it
        shifted = jax.pmap(lambda v: (fg.Tensor(v) + offset).array)(x[None])
        np.testing.assert_allclose(np.asarray(shifted[0]), x + 2 * np.exp(x), rtol=1e-6)
    finally:
        fg.lazy.set_deferred(was)


_TWO_DEVICES = r"""
import jax, numpy as np
import fgraph as fg
from fgraph._kernel_jit import only_device
assert len(jax.devices()) == 2 and only_device() is None
second = jax.devices()[1]
a = fg.Tensor(jax.device_put(np.arange(3.0, dtype=np.float32), second)).requires_grad_()
b = fg.Tensor(jax.device_put(np.ones(3, np.float32), second))
(g,) = fg.grad((fg.sin(a) * b).sum(), [a])
assert (a * b).array.devices() == {second} and g.array.devices() == {second}, ((a * b).array.devices(), g.array.devices())
np.testing.assert_allclose(g.numpy(), np.cos(np.arange(3.0)), rtol=1e-6)
model = fg.nn.Linear(2, 2)
step = fg.compile(lambda x: (model(x) * fg.rand(2)).sum())
step(fg.ones(2)), step(fg.ones(2))
assert not fg.rand(2).array.committed  # the default stream, advanced by the program, still meets device 1:
assert (fg.rand(3) + b).array.devices() == {second}
print("ok")
"""


def test_with_two_devices_the_kernels_keep_their_arrays_where_they_are():
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env["XLA_FLAGS"] = env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
    done = subprocess.run([sys.executable, "-c", _TWO_DEVICES], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
