"""fgraph.distributed.checkpoint (torch DCP's save/load on orbax): round trips, shardings kept or changed, 2 processes.

The sharded cases run in subprocesses with simulated CPU devices (the XLA flag must be set before
JAX starts); the two-process case starts two local processes on one coordinator, saves, then a
fresh pair loads and trains on.
"""
from __future__ import annotations

import collections
import json
import math
import os
import socket
import subprocess
import sys

import jax
import numpy as np
import pytest

import fgraph as fg

pytest.importorskip("orbax.checkpoint")

import fgraph.distributed.checkpoint as dcp  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# -- one device, in process --------------------------------------------------------------------------
def _mlp(seed: int) -> fg.nn.Module:
    fg.manual_seed(seed)
    return fg.nn.Sequential(fg.nn.Linear(4, 8), fg.nn.ReLU(), fg.nn.Linear(8, 2))


def _batches(n: int) -> list:
    rng = np.random.default_rng(0)
    return [(fg.tensor(rng.normal(size=(6, 4)).astype(np.float32)),
             fg.tensor(rng.normal(size=(6, 2)).astype(np.float32))) for _ in range(n)]


def _train(model, opt, batches) -> list:
    losses = []
    for x, y in batches:
        loss = ((model(x) - y) ** 2).mean()
        opt.step(loss.backward())
        losses.append(loss.item())
    return losses


@pytest.fixture(params=["eager", "deferred"])
def dispatch(request):
    """Op by op, and under deferred dispatch (the state saved is then pending when save reads it)."""
    fg.lazy.set_deferred(request.param == "deferred")
    yield request.param
    fg.lazy.set_deferred(False)


def test_state_dicts_round_trip_and_training_resumes_exactly(tmp_path, dispatch):
    batches = _batches(5)
    model = _mlp(0)
    opt = fg.optim.Adam(model.parameters(), lr=1e-2)
    _train(model, opt, batches[:2])
    extra = {"name": "run-1", "none": None, "rate": 0.25, "flags": [True, (1, 2.5)], 7: "int key"}
    dcp.save({"model": model.state_dict(), "optim": opt.state_dict(), "step": 2, "extra": extra},
             checkpoint_id=tmp_path / "ckpt")
    uninterrupted = _train(model, opt, batches[2:])

    fresh = _mlp(1)
    fresh_opt = fg.optim.Adam(fresh.parameters(), lr=0.5)  # the saved lr comes back with param_groups
    sd = {"model": fresh.state_dict(), "optim": fresh_opt.state_dict(), "step": 0,
          "extra": {"name": None, "none": 3, "rate": 0.0, "flags": [False, (0, 0.0)], 7: ""}}
    assert sd["optim"]["state"] == {}  # a fresh optimizer: load fills the empty dict from the checkpoint
    dcp.load(sd, checkpoint_id=str(tmp_path / "ckpt"))
    assert sd["step"] == 2 and sd["extra"] == extra and isinstance(sd["extra"]["flags"][1], tuple)
    assert sorted(sd["optim"]["state"]) == [0, 1, 2, 3]
    assert sorted(sd["optim"]["state"][0]) == ["exp_avg", "exp_avg_sq", "step"]
    fresh.load_state_dict(sd["model"])
    fresh_opt.load_state_dict(sd["optim"])
    assert fresh_opt.param_groups[0]["lr"] == 1e-2
    np.testing.assert_array_equal(_train(fresh, fresh_opt, batches[2:]), uninterrupted)


def test_stateful_objects_and_get_set_state_dict_resume_exactly(tmp_path):
    batches = _batches(4)
    model = _mlp(0)
    opt = fg.optim.AdamW(model.parameters(), lr=1e-2)
    _train(model, opt, batches[:2])
    dcp.save({"app": {"model": model, "optim": opt}}, checkpoint_id=tmp_path / "a")  # Stateful, torch DCP's way
    model_sd, optim_sd = dcp.get_state_dict(model, opt)
    assert list(optim_sd["state"]) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=tmp_path / "b")
    uninterrupted = _train(model, opt, batches[2:])

    fresh = _mlp(1)
    fresh_opt = fg.optim.AdamW(fresh.parameters(), lr=1e-2)
    dcp.load({"app": {"model": fresh, "optim": fresh_opt}}, checkpoint_id=tmp_path / "a")
    np.testing.assert_array_equal(_train(fresh, fresh_opt, batches[2:]), uninterrupted)

    other = _mlp(2)
    other_opt = fg.optim.AdamW(other.parameters(), lr=1e-2)
    model_sd, optim_sd = dcp.get_state_dict(other, other_opt)  # state made, so every array has a target
    assert float(optim_sd["state"]["0.weight"]["step"]) == 0.0 and other_opt.state == {}
    target = {"model": model_sd, "optim": optim_sd}
    dcp.load(target, checkpoint_id=tmp_path / "b")
    assert float(target["optim"]["state"]["0.weight"]["step"]) == 2.0
    dcp.set_state_dict(other, other_opt, model_state_dict=target["model"], optim_state_dict=target["optim"])
    np.testing.assert_array_equal(_train(other, other_opt, batches[2:]), uninterrupted)


_Pair = collections.namedtuple("_Pair", "a b")


def test_every_kind_of_value_comes_back_as_it_was(tmp_path):
    import jax.numpy as jnp

    model = fg.nn.Sequential(fg.nn.Embedding(5, 3), fg.nn.Linear(3, 5, bias=False))
    model[1].weight = model[0].weight  # tied: stored once, both places get it back
    frozen = fg.nn.Parameter(fg.ones(2), requires_grad=False)
    key = jax.random.key(3)
    state = {"model": model.state_dict(), "frozen": frozen, "grad_leaf": fg.ones(2, requires_grad=True),
             "bf16": fg.ones(3, dtype=fg.bfloat16), "ints": jnp.arange(4, dtype=jnp.int32), "key": key,
             "np": np.arange(6.0).reshape(2, 3), "np_scalar": np.float32(1.5), "nan": math.nan,
             "pair": _Pair(fg.ones(1), 2)}
    dcp.save(state, checkpoint_id=tmp_path / "kinds")
    target = {"model": fg.nn.Sequential(fg.nn.Embedding(5, 3), fg.nn.Linear(3, 5, bias=False)).state_dict(),
              "frozen": fg.nn.Parameter(fg.zeros(2), requires_grad=False), "grad_leaf": fg.zeros(2),
              "bf16": fg.zeros(3, dtype=fg.bfloat16), "ints": jnp.zeros(4, jnp.int32), "key": jax.random.key(0),
              "np": np.zeros((2, 3)), "np_scalar": np.float32(0), "nan": 0.0, "pair": _Pair(fg.zeros(1), 0)}
    dcp.load(target, checkpoint_id=tmp_path / "kinds")
    np.testing.assert_array_equal(target["model"]["0.weight"].numpy(), model[0].weight.numpy())
    np.testing.assert_array_equal(target["model"]["1.weight"].numpy(), model[0].weight.numpy())
    assert isinstance(target["frozen"], fg.nn.Parameter) and not target["frozen"].requires_grad
    assert target["frozen"].tolist() == [1.0, 1.0]
    assert not isinstance(target["grad_leaf"], fg.nn.Parameter) and not target["grad_leaf"].requires_grad  # target's
    assert target["bf16"].dtype == fg.bfloat16 and target["bf16"].tolist() == [1.0, 1.0, 1.0]
    assert isinstance(target["ints"], jax.Array) and target["ints"].tolist() == [0, 1, 2, 3]
    assert jax.random.key_impl(target["key"]) == jax.random.key_impl(key)
    np.testing.assert_array_equal(jax.random.key_data(target["key"]), jax.random.key_data(key))
    assert isinstance(target["np"], np.ndarray) and target["np"].tolist() == state["np"].tolist()
    assert isinstance(target["np_scalar"], np.floating) and target["np_scalar"] == 1.5
    assert math.isnan(target["nan"])
    assert isinstance(target["pair"], _Pair) and target["pair"].a.tolist() == [1.0] and target["pair"].b == 2
    # A target that does not hold a value yet (an empty dict) takes the saved kind: Parameter, grad flag and all.
    filled = {"frozen": {}}
    dcp.save({"frozen": {"p": frozen, "leaf": fg.ones(1, requires_grad=True), "s": "x"}}, checkpoint_id=tmp_path / "e")
    dcp.load(filled, checkpoint_id=tmp_path / "e")
    assert isinstance(filled["frozen"]["p"], fg.nn.Parameter) and not filled["frozen"]["p"].requires_grad
    assert filled["frozen"]["leaf"].requires_grad and filled["frozen"]["s"] == "x"
    dcp.save({"only": "plain values", "n": [1, None]}, checkpoint_id=tmp_path / "plain")  # no arrays at all
    plain = {"only": None, "n": [0, 0]}
    dcp.load(plain, checkpoint_id=tmp_path / "plain")
    assert plain == {"only": "plain values", "n": [1, None]}


def test_async_save_returns_a_future_and_overwrites_an_old_checkpoint(tmp_path):
    path = tmp_path / "ckpt"
    dcp.save({"w": fg.zeros(3)}, checkpoint_id=path)
    future = dcp.async_save({"w": fg.arange(3.0), "step": 9}, checkpoint_id=path)
    sd = {"w": fg.ones(3), "step": 0}
    dcp.load(sd, checkpoint_id=path)  # waits for the write still going on there
    assert sd["w"].tolist() == [0.0, 1.0, 2.0] and sd["step"] == 9
    assert future.result(timeout=60) is None and future.done()


def test_mistakes_get_clear_errors(tmp_path, monkeypatch):
    path = tmp_path / "ckpt"
    dcp.save({"model": fg.nn.Linear(3, 2).state_dict()}, checkpoint_id=path)
    with pytest.raises(fg.serialization.CheckpointError, match=r"no entry for 'model.extra'"):
        dcp.load({"model": {**fg.nn.Linear(3, 2).state_dict(), "extra": fg.ones(1)}}, checkpoint_id=path)
    with pytest.raises(fg.serialization.CheckpointError, match=r"'model.weight' has shape \(2, 3\) in .* has shape "
                                                               r"\(4, 3\)"):
        dcp.load({"model": fg.nn.Linear(3, 4).state_dict()}, checkpoint_id=path)
    with pytest.raises(fg.serialization.CheckpointError, match="holds an array at 'model'"):
        dcp.load({"model": fg.ones(2)}, checkpoint_id=path)
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        dcp.load({"model": {}}, checkpoint_id=tmp_path / "nowhere")
    with pytest.raises(ValueError, match="pass checkpoint_id="):
        dcp.save({"a": 1})
    with pytest.raises(TypeError, match="state_dict must be a dict"):
        dcp.save(fg.ones(2), checkpoint_id=tmp_path / "t")
    with pytest.raises(TypeError, match=r"cannot store the object at 'a.b'"):
        dcp.save({"a": {"b": object()}}, checkpoint_id=tmp_path / "t")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not a checkpoint .*notes.txt"):
        dcp.save({"a": fg.ones(1)}, checkpoint_id=busy)
    assert (busy / "notes.txt").read_text() == "mine"
    import orbax.checkpoint as ocp

    foreign = tmp_path / "foreign"
    with ocp.StandardCheckpointer() as checkpointer:
        checkpointer.save(foreign, {"w": np.ones(2)})
    with pytest.raises(fg.serialization.CheckpointError, match="not written by fgraph.distributed.checkpoint"):
        dcp.load({"w": fg.zeros(2)}, checkpoint_id=foreign)
    monkeypatch.setitem(sys.modules, "orbax.checkpoint", None)  # as if the extra were not installed
    with pytest.raises(ImportError, match=r"needs orbax-checkpoint: pip install 'fgraph\[distributed\]'"):
        dcp.save({"a": fg.ones(1)}, checkpoint_id=tmp_path / "x")


# -- simulated devices and processes (subprocesses) ----------------------------------------------
_COMMON = """
import numpy as np
import jax
import fgraph as fg
import fgraph.distributed.checkpoint as dcp
from jax.sharding import NamedSharding, PartitionSpec as P

class Affine(fg.nn.Module):
    def __init__(self, rng, n_in, n_out):
        super().__init__()
        self.weight = fg.nn.Parameter(fg.tensor(rng.normal(size=(n_out, n_in)).astype(np.float32) / n_in ** 0.5))
        self.bias = fg.nn.Parameter(fg.tensor(rng.normal(size=n_out).astype(np.float32) * 0.1))

    def forward(self, x):
        return x @ self.weight.mT + self.bias

class Net(fg.nn.Module):   # initialised from NumPy: a fresh process compiles no initialisation kernels
    def __init__(self, seed):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.hidden, self.out = Affine(rng, 8, 16), Affine(rng, 16, 4)

    def forward(self, x):
        return self.out(fg.tanh(self.hidden(x)))

build = Net

def batches(n):
    rng = np.random.default_rng(0)
    return [(rng.normal(size=(8, 8)).astype(np.float32), rng.normal(size=(8, 4)).astype(np.float32))
            for _ in range(n)]

@fg.compile
def step(model, opt, x, y):
    loss = ((model(x) - y) ** 2).mean()
    opt.step(loss.backward())
    return loss

def with_state(model, opt):
    # The state made up front, placed like the parameters: the compiled step then traces once, not twice.
    model_sd, optim_sd = dcp.get_state_dict(model, opt)
    dcp.set_state_dict(model, opt, model_state_dict=model_sd, optim_state_dict=optim_sd)
    return model, opt

def arrays(tree):
    if isinstance(tree, dict):
        return [a for v in tree.values() for a in arrays(v)]
    if isinstance(tree, (list, tuple)):
        return [a for v in tree for a in arrays(v)]
    return [tree.array] if isinstance(tree, fg.Tensor) else []
"""

_FOUR_DEVICES = _COMMON + """
import sys, os
path = sys.argv[1]
assert "orbax.checkpoint" not in sys.modules, "import fgraph must not import orbax"

mesh = fg.distributed.mesh(axis_name="fsdp")
assert len(mesh.devices.flat) == 4
fsdp, replicated = NamedSharding(mesh, P("fsdp")), NamedSharding(mesh, P())

def run(model, opt, data):
    return [step(model, opt, fg.distributed.shard_batch(fg.tensor(x), mesh),
                 fg.distributed.shard_batch(fg.tensor(y), mesh)).item() for x, y in data]

data = batches(5)
model = build(0).to(fsdp)                      # every first dimension divides by 4: sharded like FSDP
model, opt = with_state(model, fg.optim.Adam(model.parameters(), lr=1e-2))
run(model, opt, data[:2])
model_sd, optim_sd = dcp.get_state_dict(model, opt)
dcp.save({"model": model_sd, "optim": optim_sd, "step": 2}, checkpoint_id=path)
dcp.save({"model": model, "optim": opt}, checkpoint_id=path + "_objects")  # torch DCP's Stateful objects
saved_weight = np.asarray(model.hidden.weight.array)
uninterrupted = run(model, opt, data[2:])

def resume(sharding, how):
    fresh = build(1).to(sharding)
    fresh_opt = fg.optim.Adam(fresh.parameters(), lr=1e-2)
    model_sd, optim_sd = dcp.get_state_dict(fresh, fresh_opt)
    made = [a.sharding for a in arrays(optim_sd["state"])]
    sd = {"model": model_sd, "optim": optim_sd, "step": 0}
    dcp.load(sd, checkpoint_id=path)
    assert sd["step"] == 2
    for name, t in sd["model"].items():
        assert t.array.sharding == sharding, (how, name, t.array.sharding)
    for a, before in zip(arrays(sd["optim"]["state"]), made):
        assert a.sharding == before, (how, a.sharding, before)
        assert a.sharding == (sharding if a.ndim else replicated), (how, a.sharding)
    np.testing.assert_array_equal(np.asarray(sd["model"]["hidden.weight"].array), saved_weight)
    dcp.set_state_dict(fresh, fresh_opt, model_state_dict=sd["model"], optim_state_dict=sd["optim"])
    for name, p in fresh.named_parameters():
        assert p.array.sharding == sharding, (how, name, p.array.sharding)
    losses = run(fresh, fresh_opt, data[2:])
    np.testing.assert_allclose(losses, uninterrupted, rtol=1e-5, atol=1e-7, err_msg=how)
    for name, p in fresh.named_parameters():
        assert p.array.sharding.is_equivalent_to(sharding, p.ndim), (how, "after steps", name, p.array.sharding)
    return losses

kept = resume(fsdp, "fsdp target keeps the saved sharding")
np.testing.assert_array_equal(kept, uninterrupted)
resume(replicated, "replicated target reshards")

# Targets on a mesh made the modern way (jax.make_mesh: Explicit axes) get their shardings too.
explicit = jax.make_mesh((4,), ("fsdp",))
on_explicit = NamedSharding(explicit, P("fsdp"))
fresh = build(1).to(on_explicit)
model_sd, optim_sd = dcp.get_state_dict(fresh, fg.optim.Adam(fresh.parameters(), lr=1e-2))
sd = {"model": model_sd, "optim": optim_sd}
dcp.load(sd, checkpoint_id=path)
for a in arrays(sd):
    assert a.sharding == (on_explicit if a.ndim else NamedSharding(explicit, P())), a.sharding
np.testing.assert_array_equal(np.asarray(sd["model"]["hidden.weight"].array), saved_weight)

# A fresh optimizer (its state still empty) fills it with the moments as they were saved, shardings too.
fresh = build(1)
sd = {"model": fresh.state_dict(), "optim": fg.optim.Adam(fresh.parameters(), lr=1e-2).state_dict()}
dcp.load(sd, checkpoint_id=path + "_objects")
assert sorted(sd["optim"]["state"]) == [0, 1, 2, 3]
for a in arrays(sd["optim"]["state"]):
    assert a.sharding == (fsdp if a.ndim else replicated), a.sharding
fresh.load_state_dict(sd["model"])
np.testing.assert_array_equal(np.asarray(fresh.hidden.weight.array), saved_weight)
print("OK", uninterrupted)
"""


def _env(devices: int) -> dict:
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_sharded_checkpoint_on_four_simulated_devices_keeps_or_changes_shardings(tmp_path):
    proc = subprocess.run([sys.executable, "-c", _FOUR_DEVICES, str(tmp_path / "ckpt")], env=_env(4), cwd=ROOT,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    assert "OK" in proc.stdout


_TWO_PROCESSES = """
import sys
import json
rank, port, phase, path = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
import fgraph as fg
fg.distributed.initialize(f"localhost:{port}", num_processes=2, process_id=rank)  # before any device is touched
from jax.sharding import Mesh
from fgraph.nn.parameter import _make_parameter, rebind
""" + _COMMON + """
assert jax.process_count() == 2 and len(jax.devices()) == 4 and len(jax.local_devices()) == 2
mesh = Mesh(np.array(jax.devices()), ("fsdp",))   # the global mesh: two devices in each process
fsdp = NamedSharding(mesh, P("fsdp"))

def from_host(host, sharding):
    return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])

def place(model):   # every process builds the same values (same seed) and fills its own devices
    for p in list(model.parameters()):
        rebind({p: _make_parameter(from_host(np.asarray(p.array), fsdp), True, place=False)})
    return model

def run(model, opt, data):
    batch = NamedSharding(mesh, P("fsdp", None))
    return [step(model, opt, fg.Tensor(from_host(x, batch)), fg.Tensor(from_host(y, batch))).item()
            for x, y in data]

data = batches(5)
if phase == "save":
    model = place(build(0))
    model, opt = with_state(model, fg.optim.Adam(model.parameters(), lr=1e-2))
    run(model, opt, data[:2])
    model_sd, optim_sd = dcp.get_state_dict(model, opt)
    dcp.save({"model": model_sd, "optim": optim_sd, "step": 2}, checkpoint_id=path)
    losses = run(model, opt, data[2:])
else:
    model = place(build(1))
    opt = fg.optim.Adam(model.parameters(), lr=1e-2)
    model_sd, optim_sd = dcp.get_state_dict(model, opt)
    sd = {"model": model_sd, "optim": optim_sd, "step": 0}
    dcp.load(sd, checkpoint_id=path)
    assert sd["step"] == 2
    for a in arrays(sd):
        assert not a.is_fully_addressable and a.sharding.mesh == mesh, a.sharding
        assert a.sharding.spec == (P("fsdp") if a.ndim else P()), a.sharding
    dcp.set_state_dict(model, opt, model_state_dict=sd["model"], optim_state_dict=sd["optim"])
    losses = run(model, opt, data[2:])
    for p in model.parameters():
        assert p.array.sharding.is_equivalent_to(fsdp, p.ndim), p.array.sharding
print("LOSSES", json.dumps(losses), flush=True)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _two_processes(phase: str, path: str, cache: str) -> list:
    """Run the script in two local processes (ranks 0 and 1); returns rank 0's losses.

    The second pair reuses the first one's compiled programs (JAX's persistent cache): only time is saved.
    """
    port = str(_free_port())
    env = dict(_env(2), JAX_COMPILATION_CACHE_DIR=cache, JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
               JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0")
    procs = [subprocess.Popen([sys.executable, "-c", _TWO_PROCESSES, str(rank), port, phase, path], env=env,
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for rank in (0, 1)]
    outputs = []
    try:
        for proc in procs:
            outputs.append(proc.communicate(timeout=180))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, f"{phase}: a process failed:\n{out[-2000:]}\n{err[-6000:]}"
    losses = [json.loads(out.split("LOSSES", 1)[1]) for out, _ in outputs]
    assert losses[0] == losses[1]  # one program: every process sees the same replicated loss
    return losses[0]


def test_two_processes_save_their_own_shards_and_a_fresh_pair_resumes(tmp_path):
    path = str(tmp_path / "ckpt")
    cache = str(tmp_path / "jax_cache")
    uninterrupted = _two_processes("save", path, cache)
    assert {"ocdbt.process_0", "ocdbt.process_1"} <= set(os.listdir(path))  # each process wrote its own shards
    resumed = _two_processes("load", path, cache)
    np.testing.assert_allclose(resumed, uninterrupted, rtol=1e-6, atol=1e-8)
