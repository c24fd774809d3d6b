"""fgraph.distributed and a compiled data-parallel step on simulated devices (a subprocess sets the XLA flag)."""
from __future__ import annotations

import os
import subprocess
import sys

import jax
import numpy as np
import pytest

import fgraph as fg

def test_replicate_and_shard_batch_on_the_devices_there_are():
    mesh = fg.distributed.mesh()
    n = len(jax.devices())
    model = fg.distributed.replicate(fg.nn.Linear(3, 2), mesh)
    assert model.weight.array.sharding.is_fully_replicated and isinstance(model.weight, fg.nn.Parameter)
    x = fg.distributed.shard_batch(fg.ones(2 * n, 3), mesh)
    assert x.array.sharding.spec == fg.distributed.PartitionSpec("data", None)
    np.testing.assert_allclose(model(x).numpy(), (fg.ones(2 * n, 3) @ model.weight.mT + model.bias).numpy())


def test_shard_batch_refuses_an_uneven_split():
    mesh = fg.distributed.mesh()
    n = len(jax.devices())
    if n == 1:
        with pytest.raises(ValueError, match="mesh has axes"):
            fg.distributed.shard_batch(fg.ones(3), mesh, mesh_axis="model")
        return
    with pytest.raises(ValueError, match="divisible by"):
        fg.distributed.shard_batch(fg.ones(n + 1, 2), mesh)


def test_tensor_to_a_sharding_keeps_the_graph():
    w = fg.tensor([1.0, 2.0], requires_grad=True)
    sharding = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    moved = (w * 3).to(sharding)
    assert moved.array.sharding == sharding
    np.testing.assert_allclose(fg.grad(moved.sum(), [w])[0].numpy(), [3.0, 3.0])


_TWO_DEVICE_PROGRAM = """
import numpy as np
import fgraph as fg
import fgraph.nn.functional as F

def run(mesh):
    fg.manual_seed(0)
    model = fg.nn.Sequential(fg.nn.Linear(6, 16), fg.nn.BatchNorm1d(16), fg.nn.ReLU(), fg.nn.Dropout(0.2),
                             fg.nn.Linear(16, 3))
    opt = fg.optim.Adam(model.parameters(), lr=1e-2)
    if mesh is not None:
        fg.distributed.replicate(model, mesh)

    @fg.compile
    def step(model, opt, x, y):
        loss = F.cross_entropy(model(x), y)
        opt.step(loss.backward())
        return loss

    rng = np.random.default_rng(0)
    losses = []
    for _ in range(5):
        x, y = fg.tensor(rng.normal(size=(8, 6)).astype(np.float32)), fg.tensor(rng.integers(0, 3, size=8))
        if mesh is not None:
            x, y = fg.distributed.shard_batch(x, mesh), fg.distributed.shard_batch(y, mesh)
        losses.append(step(model, opt, x, y).item())
    return np.array(losses), model

single, _ = run(None)
parallel, model = run(fg.distributed.mesh())
assert len(model[0].weight.array.devices()) == 2, model[0].weight.array.sharding
np.testing.assert_allclose(parallel, single, rtol=1e-5, atol=1e-6)
print("agree", len(model[0].weight.array.devices()), single.tolist())
"""


def test_compiled_data_parallel_step_matches_one_device_on_two_simulated_devices():
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS="--xla_force_host_platform_device_count=2")
    result = subprocess.run([sys.executable, "-c", _TWO_DEVICE_PROGRAM], env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("agree 2")
