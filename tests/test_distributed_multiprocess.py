"""Multi-process runs and placement on global meshes: ``fg.distributed.initialize``, ranks, barriers,
``put_array``/``replicate``/``shard_batch`` on a mesh spanning two processes, and ``shard_batch``'s arguments.

The two-process test starts three programs at once: two processes on localhost with two simulated CPU
devices each (one global mesh of four), and a reference process with four devices; the losses must agree.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time

import jax
import numpy as np
import pytest

import fgraph as fg
from fgraph.distributed import NamedSharding, PartitionSpec as P

dist = fg.distributed


# -- one process ------------------------------------------------------------------------------------------------------
def test_shard_batch_takes_a_mesh_axis_name_in_place_of_the_tensor_axis():
    mesh = dist.mesh(axis_name="batch")
    n = len(jax.devices())
    x = fg.arange(2.0 * n * 3).reshape(2 * n, 3)
    by_name = dist.shard_batch(x, mesh, "batch")  # was: TypeError: not all arguments converted during string formatting
    assert by_name.array.sharding.spec == P("batch", None)
    assert dist.shard_batch(x, mesh, 0, mesh_axis="batch").array.sharding == by_name.array.sharding
    assert dist.shard_batch(x, mesh, ("batch",)).array.sharding.spec == P("batch", None)
    np.testing.assert_array_equal(by_name.numpy(), x.numpy())


def test_shard_batch_argument_errors_name_the_fix():
    mesh = dist.mesh()
    x = fg.ones(2 * len(jax.devices()), 3)
    with pytest.raises(TypeError, match=r"shard_batch: got mesh axis 'data' in place of the tensor axis and "
                                        r"mesh_axis='model'; pass one of them"):
        dist.shard_batch(x, mesh, "data", mesh_axis="model")
    with pytest.raises(TypeError, match="axis must be an int .* or a mesh-axis name, got float 1.0"):
        dist.shard_batch(x, mesh, 1.0)
    with pytest.raises(ValueError, match=r"mesh has axes \('data',\), not 'model'"):
        dist.shard_batch(x, mesh, "model")
    with pytest.raises(ValueError, match=r"shape \(6,\) has no dimension 1 to split"):
        dist.shard_batch(fg.ones(6), mesh, 1)


def test_rank_world_size_and_barrier_in_one_process():
    assert (dist.get_rank(), dist.get_world_size(), dist.is_initialized(), dist.is_available()) == (0, 1, False, True)
    dist.barrier()
    sampler = fg.utils.data.DistributedSampler(range(6), shuffle=False)
    assert (sampler.rank, sampler.num_replicas, list(sampler)) == (0, 1, list(range(6)))


def test_initialize_refuses_clearly_once_devices_are_in_use(monkeypatch):
    jax.devices()  # the devices have started: initialize must not try to join a run
    with pytest.raises(RuntimeError, match="must run before anything touches a device"):
        dist.initialize("localhost:1", num_processes=2, process_id=0)
    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(ValueError, match="WORLD_SIZE='two' is not an integer"):
        dist.initialize()
    monkeypatch.delenv("WORLD_SIZE")
    monkeypatch.setenv("MASTER_ADDR", "localhost")
    monkeypatch.delenv("MASTER_PORT", raising=False)
    with pytest.raises(ValueError, match="MASTER_ADDR and MASTER_PORT must be set together"):
        dist.initialize()
    with pytest.raises(ValueError, match="init_method 'file:///tmp/x' is not supported; use 'env://' or 'tcp://"):
        dist.init_process_group("gloo", "file:///tmp/x")
    with pytest.raises(ValueError, match="backend 'ucc' is not supported"):
        dist.init_process_group("ucc", "tcp://localhost:1", world_size=2, rank=0)


def test_put_array_within_one_process_is_device_put():
    sharding = NamedSharding(dist.mesh(), P())
    a = dist.put_array(np.arange(6, dtype=np.float32).reshape(2, 3), sharding)
    assert a.sharding == sharding and a.committed
    assert dist.put_array(a, sharding) is a
    np.testing.assert_array_equal(np.asarray(a), np.arange(6).reshape(2, 3))
    key = dist.put_array(jax.random.key(0), sharding)
    assert key.sharding == sharding and jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key)


def test_place_replicates_an_optimizers_scalar_step_beside_sharded_moments():
    mesh = dist.mesh()
    lin = fg.nn.Linear(2 * len(jax.devices()), 4 * len(jax.devices()))
    adam = fg.optim.Adam(lin.parameters())
    adam.step(lin(fg.ones(2, lin.in_features)).sum().backward())
    dist.place(adam, NamedSharding(mesh, P("data")))  # was: ValueError: One of device_put args is incompatible
    state = adam.state[lin.weight]
    assert state["exp_avg"].array.sharding.spec == P("data") and state["step"].array.sharding.spec == P()


def test_shard_batch_on_a_mesh_with_explicit_axes():
    explicit = jax.make_mesh((len(jax.devices()),), ("data",))
    x = dist.shard_batch(fg.ones(2 * len(jax.devices()), 3), explicit, "data")
    assert x.array.sharding.spec == P("data", None) and x.array.sharding.mesh == explicit


# -- two processes against one ----------------------------------------------------------------------------------------
_PROGRAM = r"""
import json, sys
import numpy as np
import fgraph as fg
import fgraph.nn.functional as F
from fgraph.distributed import NamedSharding, PartitionSpec as P
from fgraph.utils.data import DataLoader, DistributedSampler, TensorDataset

dist = fg.distributed
role, port = sys.argv[1], sys.argv[2]
assert (dist.get_rank(), dist.get_world_size(), dist.is_initialized()) == (0, 1, False)  # touches no device
if role == "reference":
    try:
        dist.initialize(cluster_detection_method="deactivate")  # no Slurm/MPI detection on a CI machine
        raise AssertionError("initialize() joined a run without a coordinator")
    except ValueError as e:
        assert "no coordinator to join. Pass coordinator_address='host:port'" in str(e), e
    import jax
    jax.config.update("jax_num_cpu_devices", 4)
    rank, world = 0, 1
elif role == "0":
    rank, world = 0, 2
    dist.initialize(f"localhost:{port}", num_processes=2, process_id=0, num_cpu_devices=2,
                    initialization_timeout=60, heartbeat_timeout_seconds=30)
else:  # torch's spelling, the rest from torchrun's variables MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK
    import datetime
    rank, world = 1, 2
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60), num_cpu_devices=2,
                            heartbeat_timeout_seconds=30)
import jax
assert (dist.get_rank(), dist.get_world_size(), dist.is_initialized()) == (rank, world, world == 2)
assert len(jax.devices()) == 4 and len(jax.local_devices()) == 4 // world
dist.barrier()

rng = np.random.default_rng(0)
X, Y = rng.normal(size=(40, 6)).astype(np.float32), rng.integers(0, 3, size=40).astype(np.int32)
mesh = dist.mesh()
everywhere = NamedSharding(mesh, P())
fg.manual_seed(0)
model = fg.nn.Sequential(fg.nn.Linear(6, 16), fg.nn.BatchNorm1d(16), fg.nn.ReLU(), fg.nn.Linear(16, 3))
opt = fg.optim.Adam(model.parameters(), lr=1e-2)
dist.replicate(model, mesh)  # was: ValueError ... does not support cross-host device transfers
for t in list(model.parameters()) + list(model.buffers()):
    assert t.array.sharding.is_fully_replicated and len(t.array.sharding.device_set) == 4, t.array.sharding

# one global batch (X[:8], its rows in some order) six ways: this process's share (the default), the mesh
# axis as third argument, the whole batch with local=False, a share split over one or both axes of a 2-D
# mesh, a share on a mesh with Explicit axes (jax.make_mesh's default)
sampler = DistributedSampler(TensorDataset(fg.tensor(X), fg.tensor(Y)), shuffle=False)
assert (sampler.rank, sampler.num_replicas) == (rank, world)
share = X[rank:8:world]
whole = np.concatenate([X[r:8:world] for r in range(world)])
grid = jax.sharding.Mesh(np.array(jax.devices()).reshape(2, 2), ("data", "model"))
batches = [dist.shard_batch(fg.tensor(share), mesh), dist.shard_batch(fg.tensor(share), mesh, "data"),
           dist.shard_batch(fg.tensor(whole), mesh, local=False),
           dist.shard_batch(fg.tensor(share), grid, ("data", "model")), dist.shard_batch(fg.tensor(share), grid),
           dist.shard_batch(fg.tensor(share), jax.make_mesh((4,), ("data",)))]  # Explicit axes
for x in batches:
    assert x.shape == (8, 6) and len(x.array.sharding.device_set) == 4, (x.shape, x.array.sharding)
    np.testing.assert_allclose([x.sum().item(), (x * x).sum().item()], [X[:8].sum(), (X[:8] ** 2).sum()],
                               rtol=1e-5)
assert batches[1].array.sharding.spec == P("data", None)
assert batches[3].array.sharding.spec == P(("data", "model"), None)
if world == 2:
    try:
        dist.shard_batch(fg.ones(3, 6), mesh)
        raise AssertionError("an uneven local batch was accepted")
    except ValueError as e:
        assert "over 2 devices of this process" in str(e), e

# global arrays: a local tensor onto the global mesh, a reshard between global layouts and back
spread = dist.put_array(fg.tensor(whole).to(everywhere).array, NamedSharding(mesh, P("data")))
assert spread.sharding.spec == P("data") and len(spread.addressable_shards) == 4 // world
np.testing.assert_array_equal(np.asarray(dist.put_array(spread, everywhere)), whole)

@fg.compile
def step(model, opt, x, y):
    loss = F.cross_entropy(model(x), y)
    opt.step(loss.backward())
    return loss

losses = []
if world == 2:  # each process loads its own share through the DataLoader
    for xb, yb in DataLoader(TensorDataset(fg.tensor(X), fg.tensor(Y)), batch_size=4, sampler=sampler):
        losses.append(step(model, opt, dist.shard_batch(xb, mesh), dist.shard_batch(yb, mesh)).item())
else:
    for k in range(5):
        x, y = fg.tensor(X[8 * k: 8 * k + 8]), fg.tensor(Y[8 * k: 8 * k + 8])
        losses.append(step(model, opt, dist.shard_batch(x, mesh), dist.shard_batch(y, mesh)).item())
for t in list(model.parameters()) + [v for s in opt.state.values() for v in s.values()]:
    assert t.array.sharding.is_fully_replicated and len(t.array.sharding.device_set) == 4, t.array.sharding

dist.barrier()
print("RESULT " + json.dumps({"rank": rank, "losses": losses}), flush=True)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _run_together(runs: list[tuple[list[str], dict]], timeout: float) -> list[tuple[int, str]]:
    """Run the program once per (arguments, environment) at once; (return code, output) of each. All are
    killed if one overruns ``timeout``."""
    base = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "MASTER_ADDR", "MASTER_PORT",
                                                               "WORLD_SIZE", "RANK")}  # each run sets its own
    logs = [tempfile.TemporaryFile(mode="w+") for _ in runs]
    procs = [subprocess.Popen([sys.executable, "-c", _PROGRAM, *argv], env=dict(base, JAX_PLATFORMS="cpu", **env),
                              stdout=log, stderr=subprocess.STDOUT, text=True) for (argv, env), log in zip(runs, logs)]
    deadline = time.monotonic() + timeout
    try:
        for p in procs:
            p.wait(timeout=max(deadline - time.monotonic(), 0.1))
    except subprocess.TimeoutExpired:
        pass
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    results = []
    for p, log in zip(procs, logs):
        log.seek(0)
        results.append((p.returncode, log.read()))
        log.close()
    return results


def _losses(output: str) -> list[float]:
    line = next(line for line in output.splitlines() if line.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])["losses"]


@pytest.mark.parametrize("deferred", ["0", "1"], ids=["eager", "deferred"])
def test_two_processes_train_like_one_process_with_four_devices(deferred):
    # Under deferred dispatch the DataLoader's batches are pending when shard_batch reads them (it took a
    # pending local batch for a global one).
    port = str(_free_port())
    torchrun = {"MASTER_ADDR": "localhost", "MASTER_PORT": port, "WORLD_SIZE": "2", "RANK": "1"}
    mode = {"FGRAPH_DEFERRED": deferred}
    results = _run_together([(["reference", "0"], mode), (["0", port], mode), (["1", "-"], dict(torchrun, **mode))],
                            timeout=180)
    report = "\n".join(f"--- {name} (exit {code}) ---\n{out[-4000:]}"
                       for name, (code, out) in zip(["reference", "rank 0", "rank 1"], results))
    assert all(code == 0 for code, _ in results), report
    reference, rank0, rank1 = (_losses(out) for _, out in results)
    assert len(reference) == 5 and len(set(reference)) == 5, reference
    np.testing.assert_allclose(rank0, reference, rtol=1e-5, atol=1e-6)
    assert rank1 == rank0  # one program: every process sees the same replicated loss
