"""Module: registration, names and order, state_dict, rebinding, conversions, containers, pytrees.

Names and orders are compared with PyTorch on the same nested model when torch is
installed; every test also asserts the expected values itself.
"""
import copy
from collections import OrderedDict

import jax
import numpy as np
import pytest

import fgraph as fg
from fgraph import nn
from fgraph.nn.parameter import owners, rebind


def build_net(nn, ones, zeros):
    """A nested model with containers, a tied weight, a Parameter list and buffers (one non-persistent)."""

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(3, 4)
            self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(4, 4), nn.ReLU()) for _ in range(2)])
            self.heads = nn.ModuleDict({"b": nn.Linear(4, 2), "a": nn.Linear(4, 3, bias=False)})
            self.scale = nn.Parameter(ones(1))
            self.register_buffer("steps", zeros(()))
            self.register_buffer("cache", zeros(2), persistent=False)
            self.extra = nn.ParameterList([nn.Parameter(ones(2)), nn.Parameter(zeros(3))])
            self.tied = nn.Linear(3, 4)
            self.tied.weight = self.embed.weight
            self.shared = self.blocks[0]  # the same submodule under two names

        def forward(self, x):
            h = self.embed(x) + self.tied(x)
            for block in self.blocks:
                h = block(h)
            return self.heads["b"](h) * self.scale

    return Net()


def fg_net():
    return build_net(nn, fg.ones, fg.zeros)


def test_names_and_order():
    net = fg_net()
    params = [n for n, _ in net.named_parameters()]
    assert params == ["scale", "embed.weight", "embed.bias", "blocks.0.0.weight", "blocks.0.0.bias",
                      "blocks.1.0.weight", "blocks.1.0.bias", "heads.b.weight", "heads.b.bias", "heads.a.weight",
                      "extra.0", "extra.1", "tied.bias"]
    assert [n for n, _ in net.named_buffers()] == ["steps", "cache"]
    assert list(net.state_dict()) == [
        "scale", "steps", "embed.weight", "embed.bias", "blocks.0.0.weight", "blocks.0.0.bias", "blocks.1.0.weight",
        "blocks.1.0.bias", "heads.b.weight", "heads.b.bias", "heads.a.weight", "extra.0", "extra.1", "tied.weight",
        "tied.bias", "shared.0.weight", "shared.0.bias"]
    assert [n for n, _ in net.named_modules()] == ["", "embed", "blocks", "blocks.0", "blocks.0.0", "blocks.0.1",
                                                   "blocks.1", "blocks.1.0", "blocks.1.1", "heads", "heads.b",
                                                   "heads.a", "extra", "tied"]
    assert len(list(net.parameters())) == 13
    assert [n for n, _ in net.named_children()] == ["embed", "blocks", "heads", "extra", "tied", "shared"]
    assert len(list(net.named_parameters(remove_duplicate=False))) == 16
    assert [n for n, _ in net.named_parameters(prefix="model", recurse=False)] == ["model.scale"]
    assert net.get_submodule("blocks.1.0") is net.blocks[1][0]
    assert net.get_parameter("heads.a.weight") is net.heads["a"].weight
    assert net.get_buffer("steps") is net.steps
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        net.get_submodule("blocks.nope")


def test_names_order_and_repr_match_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = fg_net(), build_net(torch.nn, torch.ones, torch.zeros)
    for method in ("named_parameters", "named_buffers", "named_modules", "named_children"):
        assert [n for n, _ in getattr(ours, method)()] == [n for n, _ in getattr(theirs, method)()], method
    assert [n for n, _ in ours.named_parameters(remove_duplicate=False)] == \
        [n for n, _ in theirs.named_parameters(remove_duplicate=False)]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs).replace("torch.float32", "float32")
    ours.load_state_dict(theirs.state_dict())  # a torch state dict loads unchanged
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_allclose(ours(fg.tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_tied_parameters_stay_tied():
    net = fg_net()
    assert net.tied.weight is net.embed.weight
    grads = fg.backward(net(fg.ones(2, 3)).sum())
    assert net.embed.weight in grads  # one leaf, one gradient summing both uses
    state = net.state_dict()
    new = {k: v * 0 + 1 for k, v in state.items()}
    new["tied.weight"] = fg.full((4, 3), 7.0)  # the last key loaded wins, as in torch's in-place copies
    net.load_state_dict(new)
    assert net.tied.weight is net.embed.weight
    assert net.embed.weight.tolist() == [[7.0] * 3] * 4
    assert net.shared is net.blocks[0]
    net.requires_grad_(False)
    assert net.tied.weight is net.embed.weight and not net.embed.weight.requires_grad
    net.to(fg.float64) if jax.config.jax_enable_x64 else None
    assert net.tied.weight is net.embed.weight
    clone = copy.deepcopy(net)
    assert clone.tied.weight is clone.embed.weight and clone.embed.weight is not net.embed.weight
    assert clone.shared is clone.blocks[0]


def test_rebind_and_owners():
    a, b = nn.Linear(2, 2), nn.Linear(2, 2)
    b.weight = a.weight
    assert sorted((type(m).__name__, n) for m, n in owners(a.weight)) == [("Linear", "weight")] * 2
    old = a.weight
    new = rebind({old: fg.zeros(2, 2)})[old]
    assert a.weight is new and b.weight is new and isinstance(new, nn.Parameter) and new.requires_grad
    assert owners(old) == []
    b.weight = nn.Parameter(fg.ones(2, 2))  # reassigning untracks b from the old one
    assert [(m is a, n) for m, n in owners(new)] == [(True, "weight")]
    del a.weight
    assert owners(new) == [] and "weight" not in a._parameters
    with pytest.raises(TypeError, match="as parameter 'bias'"):
        b.bias = fg.ones(2)  # a plain tensor on a parameter slot: torch's error, with the fix
    b.bias = None
    assert b.bias is None and list(dict(b.named_parameters())) == ["weight"]


def test_frozen_parameters_get_no_gradient():
    net = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 1))
    net[0].requires_grad_(False)
    grads = fg.backward(net(fg.ones(2, 3)).sum())
    assert net[0].weight not in grads and net[0].bias not in grads
    assert net[1].weight in grads
    assert [p.requires_grad for p in net.parameters()] == [False, False, True, True]


def test_state_dict_values_and_keep_vars():
    lin = nn.Linear(2, 3)
    sd = lin.state_dict()
    assert isinstance(sd, OrderedDict) and not sd["weight"].requires_grad
    assert sd["weight"].tolist() == lin.weight.tolist()
    assert lin.state_dict(keep_vars=True)["weight"] is lin.weight
    assert list(lin.state_dict(prefix="m.")) == ["m.weight", "m.bias"]


def test_load_state_dict_errors_name_the_keys():
    lin = nn.Linear(2, 3)
    good = lin.state_dict()
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "bias"'):
        lin.load_state_dict({"weight": good["weight"]})
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "extra"'):
        lin.load_state_dict(dict(good, extra=fg.ones(1)))
    with pytest.raises(RuntimeError, match=r"size mismatch for weight: copying a param with shape \(3, 3\)"):
        lin.load_state_dict(dict(good, weight=fg.ones(3, 3)))
    with pytest.raises(RuntimeError, match="size mismatch for weight"):
        lin.load_state_dict(dict(good, weight=fg.ones(3, 3)), strict=False)  # shapes must always match
    with pytest.raises(RuntimeError, match="expected an fgraph Tensor, jax.Array, NumPy array"):
        lin.load_state_dict(dict(good, bias=[1.0, 2.0, 3.0]))
    result = lin.load_state_dict({"weight": np.ones((3, 2)), "junk": np.ones(1)}, strict=False)
    assert result.missing_keys == ["bias"] and result.unexpected_keys == ["junk"]
    assert lin.weight.tolist() == [[1.0, 1.0]] * 3


def test_load_state_dict_accepts_arrays_and_casts():
    lin = nn.Linear(2, 1)
    w = np.array([[1.0, 2.0]], dtype=np.float64)
    lin.load_state_dict({"weight": w, "bias": jax.numpy.ones(1)})
    assert lin.weight.dtype == np.float32 and lin.weight.tolist() == [[1.0, 2.0]]
    w[0, 0] = 5.0  # the model holds a copy
    assert lin.weight.tolist() == [[1.0, 2.0]]
    assert lin.weight.requires_grad and isinstance(lin.weight, nn.Parameter)
    lin.load_state_dict({"weight": w, "bias": np.ones(1)}, assign=True)
    assert lin.weight.dtype == np.float64


def test_load_state_dict_places_buffers_and_parameters_as_the_tensors_they_replace():
    # A buffer loaded from NumPy was left uncommitted while the module's own was committed: at its first update
    # it became committed, and every jax.jit it fed (a deferred training step's program) compiled a second time.
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))
    before = {k: v.array.committed for k, v in model.state_dict().items()}
    model.load_state_dict({k: v.numpy() for k, v in model.state_dict().items()})
    assert {k: v.array.committed for k, v in model.state_dict().items()} == before
    assert all(before.values())


def test_load_state_dict_non_persistent_buffer_is_unexpected():
    m = nn.Module()
    m.register_buffer("tmp", fg.zeros(1), persistent=False)
    m.register_buffer("kept", fg.zeros(1))
    assert list(m.state_dict()) == ["kept"]
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "tmp"'):
        m.load_state_dict({"kept": fg.ones(1), "tmp": fg.ones(1)})


def test_state_dict_hooks():
    lin = nn.Linear(1, 1)
    calls = []
    lin.register_state_dict_pre_hook(lambda m, prefix, keep_vars: calls.append(("pre", prefix)))
    lin.register_load_state_dict_post_hook(lambda m, keys: keys.missing_keys.clear())
    lin.state_dict(prefix="x.")
    assert calls == [("pre", "x.")]
    assert lin.load_state_dict({"weight": fg.ones(1, 1)}).missing_keys == []


def test_registration_rules():
    m = nn.Module()
    m.register_buffer("b", fg.zeros(2))
    m.b = fg.ones(2)  # assigning a tensor to a buffer name rebinds the buffer
    assert m.b.tolist() == [1.0, 1.0] and "b" in m._buffers
    m.count = nn.Buffer(fg.zeros(()), persistent=False)
    assert "count" in m._buffers and list(m.state_dict()) == ["b"]
    with pytest.raises(KeyError, match=r"name can.*t contain"):
        m.register_parameter("a.b", None)
    with pytest.raises(KeyError, match="already exists"):
        m.register_buffer("training", fg.zeros(1))
    with pytest.raises(TypeError, match="Parameter or None required"):
        m.register_parameter("p", fg.ones(1))

    class NoInit(nn.Module):
        def __init__(self):
            self.lin = nn.Linear(1, 1)

    with pytest.raises(AttributeError, match=r"before Module.__init__\(\) call"):
        NoInit()
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(fg.ones(1))
    with pytest.raises(AttributeError, match="'Linear' object has no attribute 'nope'"):
        nn.Linear(1, 1).nope


def test_train_eval_apply():
    net = fg_net()
    assert all(m.training for m in net.modules())
    net.eval()
    assert not any(m.training for m in net.modules())
    net.train()
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Net" and seen.count("Linear") == 7  # `shared` is visited under both names, as torch


def test_zero_grad_points_to_returned_gradients():
    with pytest.raises(RuntimeError, match=r"grads = loss.backward\(\)"):
        nn.Linear(1, 1).zero_grad()


def test_to_dtype_and_device():
    jax.config.update("jax_enable_x64", True)
    m = nn.Module()
    m.lin = nn.Linear(2, 2)
    m.register_buffer("idx", fg.tensor([1, 2]))
    old = m.lin.weight
    m.to(fg.float64)
    assert m.lin.weight.dtype == np.float64 and m.lin.weight is not old and m.lin.weight.requires_grad
    assert m.idx.dtype == fg.tensor([1]).dtype  # integer buffers keep their dtype
    m.half()
    assert m.lin.bias.dtype == np.float16
    m.to("cpu").float()
    assert m.lin.weight.device.platform == "cpu" and m.lin.weight.dtype == np.float32
    with pytest.raises(TypeError, match="floating point or complex"):
        m.to(fg.int32)


def test_deepcopy_makes_independent_leaves():
    lin = nn.Linear(2, 2)
    clone = copy.deepcopy(lin)
    assert clone.weight is not lin.weight and clone.weight.tolist() == lin.weight.tolist()
    assert clone.weight.grad_fn is None and clone.weight._edge[0] is not lin.weight._edge[0]
    x = fg.ones(1, 2)
    grads = fg.backward(clone(x).sum() + lin(x).sum())
    assert clone.weight in grads and lin.weight in grads
    nn.init.zeros_(clone.weight)  # rebinding the clone leaves the original alone
    assert lin.weight.tolist() != clone.weight.tolist()


def test_module_is_a_pytree_of_named_arrays():
    net = fg_net()
    net.extra[1] = net.extra[1].requires_grad_(False)
    leaves_with_path, treedef = jax.tree_util.tree_flatten_with_path(net)
    names = [jax.tree_util.keystr(p) for p, _ in leaves_with_path]
    assert names == ["." + n for n, _ in net.named_parameters()] + ["." + n for n, _ in net.named_buffers()]
    leaves = [leaf for _, leaf in leaves_with_path]
    assert all(type(leaf) is type(net.scale.array) for leaf in leaves)  # arrays, not Tensors
    assert leaves[0] is net.scale.array
    doubled = jax.tree_util.tree_unflatten(treedef, [leaf * 2 for leaf in leaves])
    assert doubled is not net and type(doubled) is type(net)
    assert doubled.tied.weight is doubled.embed.weight  # one leaf, still tied
    assert doubled.shared is doubled.blocks[0]
    assert isinstance(doubled.embed.weight, nn.Parameter) and doubled.embed.weight.requires_grad
    assert isinstance(doubled.extra[1], nn.Parameter) and not doubled.extra[1].requires_grad  # remembered
    assert not isinstance(doubled.steps, nn.Parameter) and not doubled.steps.requires_grad
    assert [n for n, _ in doubled.named_parameters()] == [n for n, _ in net.named_parameters()]
    np.testing.assert_allclose(doubled.embed.weight.numpy(), 2 * net.embed.weight.numpy())
    assert net.embed.weight.tolist() != doubled.embed.weight.tolist()  # original untouched
    assert owners(doubled.embed.weight)  # the copy's new Parameters are tracked, so rebind reaches them
    mapped = jax.tree_util.tree_map(lambda a: a * 0, net)
    assert all(float(abs(p).sum()) == 0 for p in mapped.parameters())
    # Tensors are accepted too: a Tensor that requires grad is kept as it is (gradients flow to it).
    w = fg.ones(4, 3, requires_grad=True)
    subst = jax.tree_util.tree_unflatten(treedef, [w if n == ".embed.weight" else leaf
                                                   for n, leaf in zip(names, leaves)])
    assert subst.embed.weight is w and subst.tied.weight is w
    assert jax.tree_util.tree_structure(net) == treedef
    net.eval()
    assert jax.tree_util.tree_structure(net) != treedef  # a change of mode is a change of structure
    net.train()
    net.scale = net.scale.requires_grad_(False)
    assert jax.tree_util.tree_structure(net) != treedef  # so is a change of requires_grad


def test_module_pytree_under_jax_jit_grad_and_vmap():
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    x = fg.tensor(np.linspace(-1.0, 1.0, 15, dtype=np.float32).reshape(5, 3))
    expected = model(x).numpy()
    np.testing.assert_allclose(jax.jit(lambda m, x: m(x).array)(model, x), expected, rtol=1e-6)

    def ref(w1, b1, w2, b2, x):
        return (jax.numpy.tanh(x @ w1.T + b1) @ w2.T + b2).sum()

    params = [p.array for p in model.parameters()]
    expected_grads = jax.grad(ref, argnums=(0, 1, 2, 3))(*params, x.array)
    grads = jax.jit(jax.grad(lambda m, x: m(x).sum().array))(model, x)
    assert type(grads) is nn.Sequential and grads is not model
    for got, want in zip(grads.parameters(), expected_grads):
        np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-5, atol=1e-6)
    batched = jax.vmap(lambda m, x: m(x).array, in_axes=(None, 0))(model, fg.stack([x, 2 * x]))
    np.testing.assert_allclose(batched[1], model(2 * x).numpy(), rtol=1e-5, atol=1e-6)


def test_copies_made_by_unflattening_share_the_structure_so_a_jitted_loop_traces_once():
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    x = fg.randn(5, 3)
    grad_fn = jax.jit(jax.grad(lambda m, x: m(x).sum().array))
    update = jax.jit(lambda m, g: jax.tree_util.tree_map(lambda p, d: p - 0.1 * d, m, g))
    for _ in range(3):
        grads = grad_fn(model, x)
        assert jax.tree_util.tree_structure(grads) == jax.tree_util.tree_structure(model)
        model = update(model, grads)
    assert grad_fn._cache_size() == 1 and update._cache_size() == 1
    twin = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))  # built separately: its own structure
    assert jax.tree_util.tree_structure(twin) != jax.tree_util.tree_structure(model)


def test_parameter_and_buffer_are_pytree_nodes():
    p = nn.Parameter(fg.ones(2), requires_grad=False)
    q = jax.tree_util.tree_map(lambda a: a + 1, p)
    assert type(q) is nn.Parameter and not q.requires_grad and q.tolist() == [2.0, 2.0]
    b = jax.tree_util.tree_map(lambda a: a * 3, nn.Buffer(fg.ones(1), persistent=False))
    assert type(b) is nn.Buffer and b.persistent is False and b.tolist() == [3.0]


def test_containers():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear) and isinstance(seq[1:], nn.Sequential)
    assert [n for n, _ in seq[1:].named_children()] == ["1", "2"]  # slices keep names, as torch
    seq.append(nn.Sigmoid())
    assert seq(fg.ones(4, 2)).shape == (4, 1)
    del seq[1]
    assert list(seq._modules) == ["0", "1", "2"]
    seq.insert(1, nn.Tanh())
    assert [type(m).__name__ for m in seq] == ["Linear", "Tanh", "Linear", "Sigmoid"]
    named = nn.Sequential(OrderedDict([("enc", nn.Linear(1, 2)), ("act", nn.ReLU())]))
    assert list(named.state_dict()) == ["enc.weight", "enc.bias"]
    assert len(seq + named) == 6 and len(named * 2) == 4
    with pytest.raises(IndexError, match="out of range"):
        seq[10]
    ml = nn.ModuleList([nn.Linear(1, 1)])
    ml += [nn.ReLU()]
    ml.extend([nn.Tanh()])
    assert len(ml) == 3 and isinstance(ml[1:], nn.ModuleList)
    md = nn.ModuleDict([("x", nn.ReLU())])
    md["y"] = nn.Tanh()
    assert list(md.keys()) == ["x", "y"] and "y" in md and md.pop("x") is not None
    pl = nn.ParameterList([fg.ones(1)])
    pl.append(fg.zeros(2))
    assert all(isinstance(p, nn.Parameter) for p in pl) and [p.shape for p in pl] == [(1,), (2,)]
    pd = nn.ParameterDict({"a": fg.ones(1)})
    pd["b"] = nn.Parameter(fg.zeros(1))
    assert list(pd) == ["a", "b"] and isinstance(pd["a"], nn.Parameter)


def test_container_reprs_match_torch():
    torch = pytest.importorskip("torch")
    def build(nn):
        return nn.Sequential(nn.Linear(2, 2), nn.ModuleList([nn.ReLU(), nn.ReLU(), nn.Tanh()]),
                             nn.ModuleDict({"a": nn.Linear(1, 1)}))
    assert repr(build(nn)) == repr(build(torch.nn))


def test_parameter_repr_and_identity():
    p = nn.Parameter(fg.tensor([1.0]))
    assert repr(p).startswith("Parameter containing:\ntensor([1.]") and p.is_leaf and p.requires_grad
    q = p.requires_grad_(False)
    assert isinstance(q, nn.Parameter) and not q.requires_grad and p.requires_grad
    x = fg.tensor([1.0], requires_grad=True) * 2
    assert nn.Parameter(x).is_leaf  # a computed tensor is detached
