"""fully_shard (FSDP), parallelize_module (tensor parallel) and partition rules on 4 simulated devices.

One subprocess (the XLA flag must be set before JAX starts) trains small models under each layout,
compiled (``fg.compile``) and eager, with Adam, and checks the losses against the one-device run and
the shardings of parameters and optimizer state after the last step. Each scenario reports on its own
line, so one failing layout does not hide the others; the tests below read that report.
"""
from __future__ import annotations

import re

import jax
import numpy as np
import pytest
from devices_harness import run_scenarios
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import fgraph as fg
from fgraph.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel

_PROGRAM = r'''
import json, time, traceback
import numpy as np, jax
import fgraph as fg
import fgraph.nn.functional as F
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from fgraph.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, SequenceParallel, parallelize_module
from fgraph.distributed._rules import entries, make_spec

STEPS = 5
devices = np.array(jax.devices())
assert len(devices) == 4, devices

def report(name, **fields):
    print("RESULT " + json.dumps(dict(name=name, **fields)), flush=True)

class MLP(fg.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = fg.nn.Linear(6, 16)
        self.fc2 = fg.nn.Linear(16, 8)
        self.head = fg.nn.Linear(8, 3)    # (3, 8): dim 0 does not divide by 4
    def forward(self, x):
        return self.head(fg.relu(self.fc2(fg.relu(self.fc1(x)))))

class TiedLM(fg.nn.Module):
    """Embedding + Linear with the output projection tied to the embedding."""
    def __init__(self):
        super().__init__()
        self.embed = fg.nn.Embedding(12, 8)
        self.norm = fg.nn.LayerNorm(8)
        self.fc = fg.nn.Linear(8, 8)
        self.out = fg.nn.Linear(8, 12, bias=False)
        self.out.weight = self.embed.weight
    def forward(self, tokens):
        h = self.norm(self.embed(tokens))
        return self.out(fg.tanh(self.fc(h)) + h)

def mlp_batches():
    rng = np.random.default_rng(0)
    return [(rng.normal(size=(8, 6)).astype(np.float32), rng.integers(0, 3, size=8)) for _ in range(STEPS)]

def lm_batches():
    rng = np.random.default_rng(1)
    return [(rng.integers(0, 12, size=(4, 4)), rng.integers(0, 12, size=(4, 4))) for _ in range(STEPS)]

def loss_fn(model, x, y):
    logits = model(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))

def spec_of(array):  # trailing Nones dropped: Explicit meshes spell out every dimension
    sharding = array.sharding
    return str(make_spec(entries(sharding.spec, array.ndim))) if hasattr(sharding, "spec") else "single device"

def train(make, batches, layout, compiled, batch_sharding=None):
    fg.manual_seed(0)
    model = make()
    if layout is not None:
        layout(model)
    placed = {n: (spec_of(p.array), len(p.array.sharding.device_set))
              for n, p in model.named_parameters()}
    opt = fg.optim.Adam(model.parameters(), lr=1e-2)   # made after sharding
    def step(model, opt, x, y):
        loss = loss_fn(model, x, y)
        opt.step(loss.backward())
        return loss
    if compiled:
        step = fg.compile(step)
    losses = []
    for x, y in batches:
        x, y = fg.tensor(x), fg.tensor(y)
        if batch_sharding is not None:
            x, y = x.to(batch_sharding(x.ndim)), y.to(batch_sharding(y.ndim))
        losses.append(step(model, opt, x, y).item())
    return np.array(losses), model, opt, placed

def specs(model, opt):
    out = {}
    for name, p in model.named_parameters():
        out[name] = spec_of(p.array)
        state = opt.state[p]
        for key in ("exp_avg", "exp_avg_sq"):
            out[f"{name}:{key}"] = spec_of(state[key].array)
    return out

references = {}

def scenario(name, make, batches, layout, batch_sharding=None, modes=("compiled", "eager")):
    if make not in references:  # one eager run on one device per model
        losses, model, _, _ = train(make, batches, None, False)
        references[make] = losses, {n: np.asarray(p.array) for n, p in model.named_parameters()}
    reference, reference_params = references[make]
    for mode in modes:
        label = f"{name}/{mode}"
        start = time.perf_counter()
        try:
            losses, model, opt, placed = train(make, batches, layout, mode == "compiled", batch_sharding)
            after = specs(model, opt)
            diff = max(float(np.abs(np.asarray(p.array) - reference_params[n]).max())
                       for n, p in model.named_parameters())
            tied = getattr(model, "out", None) is not None and model.out.weight is model.embed.weight
            report(label, ok=True, reference=reference.tolist(), losses=losses.tolist(),
                   before={n: s for n, (s, _) in placed.items()}, devices={n: d for n, (_, d) in placed.items()},
                   after=after, param_diff=diff, tied=tied, seconds=time.perf_counter() - start)
        except Exception as e:
            report(label, ok=False, error=f"{type(e).__name__}: {e}", trace=traceback.format_exc()[-3000:])

# -- layouts --------------------------------------------------------------------------------------------
fsdp_mesh = Mesh(devices, ("fsdp",))
tp_mesh = Mesh(devices, ("tp",))
mesh_2d = Mesh(devices.reshape(2, 2), ("fsdp", "tp"))
explicit_2d = jax.make_mesh((2, 2), ("data", "model"))   # Explicit axes, the default of jax.make_mesh
explicit_tp = jax.make_mesh((4,), ("model",))

def batch_on(mesh, axis):
    return lambda ndim: NamedSharding(mesh, P(axis, *([None] * (ndim - 1))))

mlp_plan = {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()}
lm_plan = {"embed": RowwiseParallel(), "fc": ColwiseParallel(), "out": ColwiseParallel()}

scenario("mlp_fsdp", MLP, mlp_batches(), lambda m: fg.distributed.fully_shard(m, fsdp_mesh),
         batch_on(fsdp_mesh, "fsdp"))
scenario("mlp_tp", MLP, mlp_batches(), lambda m: parallelize_module(m, tp_mesh, mlp_plan))
scenario("mlp_fsdp_tp", MLP, mlp_batches(),
         lambda m: fg.distributed.fully_shard(parallelize_module(m, mesh_2d, mlp_plan), mesh_2d),
         batch_on(mesh_2d, "fsdp"))
scenario("mlp_rules", MLP, mlp_batches(),
         lambda m: fg.distributed.shard(m, mesh_2d, [("fc1.*", P("tp")), ("fc2.weight", P("fsdp", "tp")),
                                                     ("head.weight", P(None, ("fsdp", "tp")))]),
         batch_on(mesh_2d, "fsdp"), modes=("eager",))
scenario("lm_fsdp_tp", TiedLM, lm_batches(),
         lambda m: fg.distributed.fully_shard(parallelize_module(m, mesh_2d, lm_plan), mesh_2d),
         batch_on(mesh_2d, "fsdp"))
scenario("lm_tp", TiedLM, lm_batches(), lambda m: parallelize_module(m, tp_mesh, lm_plan), modes=("compiled",))
scenario("lm_sequence_parallel", TiedLM, lm_batches(),
         lambda m: parallelize_module(m, tp_mesh, {"embed": RowwiseParallel(), "norm": SequenceParallel(),
                                                   "fc": ColwiseParallel(), "out": ColwiseParallel()}))
scenario("mlp_tp_partial", MLP, mlp_batches(), lambda m: parallelize_module(m, tp_mesh, {"fc1": ColwiseParallel()}),
         modes=("compiled",))   # fc2 and head replicated: XLA must not re-shard them in the compiled step
scenario("lm_sequence_parallel_explicit_mesh", TiedLM, lm_batches(),
         lambda m: parallelize_module(m, explicit_tp, {"embed": RowwiseParallel(), "norm": SequenceParallel(),
                                                       "fc": ColwiseParallel(), "out": ColwiseParallel()}),
         modes=("compiled",))
scenario("mlp_tp_explicit_mesh", MLP, mlp_batches(), lambda m: parallelize_module(m, explicit_tp, mlp_plan),
         modes=("compiled",))
scenario("mlp_fsdp_tp_explicit_mesh", MLP, mlp_batches(),
         lambda m: fg.distributed.fully_shard(parallelize_module(m, explicit_2d, mlp_plan), explicit_2d),
         batch_on(explicit_2d, "data"))

# -- Module.to with a spec that does not divide --------------------------------------------------------
try:
    MLP().to(NamedSharding(fsdp_mesh, P("fsdp")))
    report("module_to_indivisible", ok=False, error="no error")
except Exception as e:
    report("module_to_indivisible", ok=True, type=type(e).__name__, message=str(e))
print("DONE", flush=True)
'''


@pytest.fixture(scope="module")
def four_devices() -> dict:
    found = run_scenarios(_PROGRAM, devices=4)
    assert found["_returncode"] == 0 and "DONE" in found["_stdout"], found["_stdout"][-4000:] + found["_stderr"]
    return found


MLP_FSDP = {"fc1.weight": "P('fsdp',)", "fc1.bias": "P('fsdp',)", "fc2.weight": "P('fsdp',)", "fc2.bias": "P('fsdp',)",
            "head.weight": "P(None, 'fsdp')", "head.bias": "P()"}     # (3, 8): the dimension that divides
MLP_TP = {"fc1.weight": "P('tp',)", "fc1.bias": "P('tp',)", "fc2.weight": "P(None, 'tp')", "fc2.bias": "P()",
          "head.weight": "P()"}
MLP_FSDP_TP = {"fc1.weight": "P('tp', 'fsdp')", "fc1.bias": "P(('tp', 'fsdp'),)", "fc2.weight": "P('fsdp', 'tp')",
               "fc2.bias": "P('fsdp',)", "head.weight": "P(None, 'fsdp')", "head.bias": "P()"}
MLP_RULES = {"fc1.weight": "P('tp',)", "fc1.bias": "P('tp',)", "fc2.weight": "P('fsdp', 'tp')", "fc2.bias": "P()",
             "head.weight": "P(None, ('fsdp', 'tp'))"}
LM_TP = {"embed.weight": "P('tp',)", "fc.weight": "P('tp',)", "fc.bias": "P('tp',)", "norm.weight": "P()"}
MLP_EXPLICIT = {"fc1.weight": "P('model', 'data')", "fc2.weight": "P('data', 'model')", "head.bias": "P()"}
LM_FSDP_TP = {"embed.weight": "P('tp', 'fsdp')", "fc.weight": "P('tp', 'fsdp')", "norm.weight": "P('fsdp',)"}

@pytest.mark.parametrize("scenario, expected", [
    ("mlp_fsdp/compiled", MLP_FSDP), ("mlp_fsdp/eager", MLP_FSDP),
    ("mlp_tp/compiled", MLP_TP), ("mlp_tp/eager", MLP_TP),
    ("mlp_fsdp_tp/compiled", MLP_FSDP_TP), ("mlp_fsdp_tp/eager", MLP_FSDP_TP),
    ("mlp_rules/eager", MLP_RULES),
    ("lm_fsdp_tp/compiled", LM_FSDP_TP), ("lm_fsdp_tp/eager", LM_FSDP_TP),
    ("lm_sequence_parallel/compiled", LM_TP), ("lm_sequence_parallel/eager", LM_TP),
    ("mlp_tp_partial/compiled", {"fc1.weight": "P('tp',)", "fc2.weight": "P()"}),
    ("lm_sequence_parallel_explicit_mesh/compiled", {"embed.weight": "P('model',)", "norm.weight": "P()"}),
    ("mlp_tp_explicit_mesh/compiled", {"fc1.weight": "P('model',)", "fc2.weight": "P(None, 'model')"}),
    ("mlp_fsdp_tp_explicit_mesh/compiled", MLP_EXPLICIT), ("mlp_fsdp_tp_explicit_mesh/eager", MLP_EXPLICIT),
])
def test_sharded_adam_training_equals_one_device_and_keeps_shardings(four_devices, scenario, expected):
    entry = four_devices[scenario]
    assert entry["ok"], entry["error"] + "\n" + entry["trace"]
    np.testing.assert_allclose(entry["losses"], entry["reference"], rtol=2e-5, atol=2e-6)
    assert entry["param_diff"] < 1e-4, entry["param_diff"]
    for param, spec in expected.items():
        assert entry["before"][param] == spec, (param, entry["before"])
    assert max(entry["devices"].values()) == 4, entry["devices"]
    for param, spec in entry["before"].items():  # after 5 steps: the parameter and both Adam moments
        assert entry["after"][param] == spec, (param, entry["after"])
        assert entry["after"][f"{param}:exp_avg"] == spec, (param, entry["after"])
        assert entry["after"][f"{param}:exp_avg_sq"] == spec, (param, entry["after"])
    if scenario.startswith("lm"):
        assert entry["tied"], "the output projection is no longer the embedding's Parameter"


def test_module_to_a_spec_that_does_not_divide_names_the_parameter(four_devices):
    entry = four_devices["module_to_indivisible"]
    assert entry["ok"], entry
    assert entry["type"] == "ValueError", entry
    for part in ("Module.to", "'head.weight'", "(3, 8)", "fully_shard"):
        assert part in entry["message"], entry["message"]


# -- in this process (usually one device): layouts, dimension choice, errors --------------------------------------
def _mesh(*names: str) -> Mesh:
    shape = (len(jax.devices()),) + (1,) * (len(names) - 1)
    return Mesh(np.array(jax.devices()).reshape(shape), names)


def _specs(module) -> dict:
    return {name: p.array.sharding.spec for name, p in module.named_parameters()}


def test_fully_shard_default_axis_ignored_params_and_buffers():
    mesh = _mesh("data", "model")
    model = fg.nn.Sequential(fg.nn.Linear(4, 8), fg.nn.BatchNorm1d(8), fg.nn.Linear(8, 2))
    assert fg.distributed.fully_shard(model, mesh, ignored_params=[model[2].weight]) is model
    assert model[0].weight.array.sharding.spec == P("data")             # no "fsdp" axis: the mesh's first
    assert model[2].weight.array.sharding == NamedSharding(mesh, P())   # ignored: replicated on the mesh
    assert model[1].running_mean.array.sharding == NamedSharding(mesh, P())
    assert fg.distributed.fully_shard(model, mesh, axis="model")[0].weight.array.sharding.spec == P("data", "model")
    with pytest.raises(ValueError, match=r"fully_shard: the mesh has axes \('data', 'model'\), not \['fsdp'\]"):
        fg.distributed.fully_shard(model, mesh, axis="fsdp")
    with pytest.raises(TypeError, match="fully_shard: expected an fg.nn.Module"):
        fg.distributed.fully_shard(fg.ones(2), mesh)


def test_fully_shard_keeps_ties_and_an_optimizer_made_before_follows():
    a, b = fg.nn.Linear(4, 4), fg.nn.Linear(4, 4)
    b.weight = a.weight
    model = fg.nn.Sequential(a, b)
    opt = fg.optim.Adam(model.parameters(), lr=0.1)
    mesh = _mesh("fsdp")
    fg.distributed.fully_shard(model, mesh)
    placed = model[0].weight
    assert placed is model[1].weight and len(list(model.parameters())) == 3
    assert placed.array.sharding == NamedSharding(mesh, P("fsdp"))
    opt.step(model(fg.ones(2, 4)).sum().backward())
    assert model[0].weight is model[1].weight and model[0].weight is not placed      # the optimizer followed
    assert not np.allclose(model[0].weight.numpy(), placed.numpy())
    assert model[0].weight.array.sharding.is_equivalent_to(placed.array.sharding, 2)  # (spec: the 4-device test)


def test_fully_shard_splits_dim_zero_else_the_largest_dimension_that_divides():
    from jax.sharding import AbstractMesh

    from fgraph.distributed._fsdp import _add_axes

    mesh = AbstractMesh((4, 2), ("fsdp", "tp"))
    assert _add_axes([None, None], (8, 6), ("fsdp",), 4, mesh) == ["fsdp", None]          # PyTorch's dim 0
    assert _add_axes([None, None, None], (3, 4, 8), ("fsdp",), 4, mesh) == [None, None, "fsdp"]
    assert _add_axes([None], (3,), ("fsdp",), 4, mesh) == [None]                          # replicated
    assert _add_axes([], (), ("fsdp",), 4, mesh) == []
    assert _add_axes(["tp", None], (8, 6), ("fsdp",), 4, mesh) == [("tp", "fsdp"), None]   # no free one: joins
    assert _add_axes(["tp", None], (4, 6), ("fsdp",), 4, mesh) == ["tp", None]             # 4 % (2 x 4)
    assert _add_axes(["tp", None], (8, 12), ("fsdp",), 4, mesh) == ["tp", "fsdp"]          # the free dimension
    assert _add_axes(["fsdp", None], (8, 12), ("fsdp",), 4, mesh) == ["fsdp", None]        # already sharded
    assert _add_axes([None, None], (8, 8), ("fsdp", "tp"), 8, mesh) == [("fsdp", "tp"), None]


def test_parallelize_module_plan_forms_and_globs():
    class Block(fg.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = fg.nn.Linear(4, 8), fg.nn.Linear(8, 4)

    model = fg.nn.Module()
    model.blocks = fg.nn.ModuleList([Block(), Block()])
    model.embed = fg.nn.Embedding(10, 4)
    model.head = fg.nn.Linear(4, 10)
    mesh = _mesh("data", "model")
    plan = {"blocks.*.fc1": ColwiseParallel(), "blocks.*.fc2": RowwiseParallel(), "embed": ColwiseParallel(),
            "head": {"weight": P("model", None), "bias": P("model")}}
    assert fg.distributed.parallelize_module(model, mesh, plan) is model
    specs = _specs(model)
    for i in (0, 1):
        assert specs[f"blocks.{i}.fc1.weight"] == P("model") and specs[f"blocks.{i}.fc1.bias"] == P("model")
        assert specs[f"blocks.{i}.fc2.weight"] == P(None, "model") and specs[f"blocks.{i}.fc2.bias"] == P()
    assert specs["embed.weight"] == P(None, "model") and specs["head.bias"] == P("model")
    fg.distributed.parallelize_module(model.head, mesh, P(None, "model"))   # one spec: the module's weight
    assert model.head.weight.array.sharding.spec == P(None, "model")
    fg.distributed.parallelize_module(model.embed, mesh, RowwiseParallel(axis="data"))  # composes with 'model'
    assert model.embed.weight.array.sharding.spec == P("data", "model")
    with pytest.raises(ValueError, match=r"the plan key 'blocks\.\*\.fc3' matches no submodule.*one dotted part"):
        fg.distributed.parallelize_module(model, mesh, {"blocks.*.fc3": ColwiseParallel()})
    with pytest.raises(ValueError, match=r"'head\.weight' names a parameter; plan keys name modules"):
        fg.distributed.parallelize_module(model, mesh, {"head.weight": P("model")})
    with pytest.raises(TypeError, match="ColwiseParallel applies to Linear and Embedding modules, but module "
                                        "'blocks.0' is a Block"):  # '*' stays within one part: not blocks.0.fc1
        fg.distributed.parallelize_module(model, mesh, {"blocks.*": ColwiseParallel()})
    with pytest.raises(ValueError, match=r"which axis of the mesh \('a', 'b'\) is the tensor-parallel one"):
        fg.distributed.parallelize_module(fg.nn.Linear(2, 2), _mesh("a", "b"), ColwiseParallel())


def test_parallelize_module_refuses_conflicts():
    mesh = _mesh("fsdp", "tp")
    model = fg.nn.Sequential(fg.nn.Embedding(8, 4), fg.nn.Linear(4, 8, bias=False))
    model[1].weight = model[0].weight                                      # tied (8, 4)
    with pytest.raises(ValueError, match=r"parameter '1.weight' \(shape \(8, 4\), tied or named twice\) gets "
                                         r"P\(None, 'tp'\) from ColwiseParallel of module '0' \(Embedding\) but "
                                         r"P\('tp',\)"):
        fg.distributed.parallelize_module(model, mesh, {"0": ColwiseParallel(), "1": ColwiseParallel()})
    fg.distributed.parallelize_module(model, mesh, {"0": RowwiseParallel(), "1": ColwiseParallel()})  # agree
    assert model[0].weight is model[1].weight and model[1].weight.array.sharding.spec == P("tp")
    lin = fg.distributed.fully_shard(fg.nn.Linear(4, 8), mesh)
    with pytest.raises(ValueError, match="already split over .*call parallelize_module before fully_shard"):
        fg.distributed.parallelize_module(lin, mesh, ColwiseParallel())


def test_shard_rules_first_match_wins_and_the_rest_is_replicated():
    mesh = _mesh("data", "model")
    model = fg.nn.Sequential(fg.nn.Linear(4, 8), fg.nn.BatchNorm1d(8), fg.nn.Linear(8, 4))
    rules = [("0.weight", P(None, "model")), ("*.weight", P("model")), ("*.running_mean", P("data"))]
    assert fg.distributed.shard(model, mesh, rules) is model
    specs = _specs(model)
    assert specs["0.weight"] == P(None, "model") and specs["1.weight"] == P("model") and specs["2.weight"] == P("model")
    assert specs["0.bias"] == P() and specs["2.bias"] == P()
    assert model[1].running_mean.array.sharding.spec == P("data")
    assert model[1].running_var.array.sharding == NamedSharding(mesh, P())
    lin = fg.distributed.shard(fg.nn.Linear(4, 8), mesh, {"*.weight": P("model")})   # "*." matches at the top too
    assert lin.weight.array.sharding.spec == P("model") and lin.bias.array.sharding.spec == P()
    tied = fg.nn.Sequential(fg.nn.Linear(4, 4), fg.nn.Linear(4, 4))
    tied[1].weight = tied[0].weight
    with pytest.raises(ValueError, match=r"shard: the tied parameter named '0.weight' and '1.weight'"):
        fg.distributed.shard(tied, mesh, {"0.*": P("model"), "*": P(None, "model")})


@pytest.mark.parametrize("spec, message", [
    (P("nope"), "the mesh has no axis 'nope'"),
    (P("data", None, None), "the spec has 3 entries but the tensor only 2 dimensions"),
    (P("data", "data"), "mesh axis 'data' is used twice"),
    ("data", "must be a jax.sharding.PartitionSpec"),
])
def test_shard_names_the_parameter_of_a_bad_spec(spec, message):
    with pytest.raises((ValueError, TypeError), match=re.escape(message)) as info:
        fg.distributed.shard(fg.nn.Linear(4, 8), _mesh("data", "model"), {"weight": spec})
    assert str(info.value).startswith("shard: ") and "'weight'" in str(info.value)


def test_a_spec_that_does_not_divide_names_the_dimension():
    from jax.sharding import AbstractMesh

    from fgraph.distributed._rules import check_spec

    mesh = AbstractMesh((4, 2), ("fsdp", "tp"))
    with pytest.raises(ValueError, match=r"shard: parameter 'head.weight' of shape \(3, 8\) cannot take "
                                         r"P\('fsdp',\) .*dimension 0 \(size 3\) does not split into 4 equal parts "
                                         "over mesh axis 'fsdp'"):
        check_spec("shard", "parameter 'head.weight'", (3, 8), P("fsdp"), mesh)
    with pytest.raises(ValueError, match=r"does not split into 8 equal parts over mesh axes \('tp', 'fsdp'\)"):
        check_spec("shard", "parameter 'w'", (12,), P(("tp", "fsdp")), mesh)
    assert check_spec("shard", "w", (8, 6), P("fsdp", None), mesh) == P("fsdp")
