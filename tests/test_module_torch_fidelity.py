"""Module core behaves as torch.nn.Module: pickling, per-module state-dict overrides, extra state,
buffer assignment, set_submodule, global registration hooks, private state-dict hooks, call_super_init.

Each test asserts fgraph's behaviour on its own; where torch is installed the same scenario is run
on torch (an oracle only) and the two are compared.
"""
import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import fgraph as fg
from fgraph import nn
from fgraph.nn.modules import module as fg_module


# -- picklable models: classes must live at module level, so they are made per framework here -------
def _net_class(ns_nn, make, tag):
    """A model with a child, a tied weight, persistent and non-persistent buffers, an eval-mode child."""
    def __init__(self):
        ns_nn.Module.__init__(self)
        self.fc = ns_nn.Linear(3, 2)
        self.head = ns_nn.Linear(3, 2)
        self.head.weight = self.fc.weight
        self.drop = ns_nn.Dropout(0.5)
        self.register_buffer("steps", make([3.0]))
        self.register_buffer("cache", make([1.0, 2.0]), persistent=False)
        self.note = "hello"

    def forward(self, x):
        return self.drop(self.fc(x)) + self.head(x)

    cls = type(f"Net_{tag}", (ns_nn.Module,), {"__init__": __init__, "forward": forward, "__module__": __name__})
    globals()[cls.__name__] = cls
    return cls


def double_output(module, args, output):  # a picklable hook
    return output * 2


def load_pre_hook_with_module(module, state_dict, prefix, *rest):
    module.seen_prefixes.append(prefix)


FgNet = _net_class(nn, lambda v: fg.tensor(v), "fg")


def _torch_net():
    torch = pytest.importorskip("torch")
    cls = globals().get("Net_torch") or _net_class(torch.nn, lambda v: torch.tensor(v), "torch")
    return torch, cls


def _roundtrip(obj):
    return pickle.loads(pickle.dumps(obj))


# -- 1. pickling -----------------------------------------------------------------------------------
def test_tensor_and_parameter_pickle():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = _roundtrip(x * 3)  # torch: a computed tensor comes back as a leaf that requires grad
    assert type(y) is fg.Tensor and y.tolist() == [3.0, 6.0] and y.requires_grad and y.is_leaf
    assert _roundtrip(fg.arange(4)).dtype == fg.arange(4).dtype
    assert _roundtrip(fg.ones(2, dtype=fg.bfloat16)).dtype == fg.bfloat16
    p = _roundtrip(nn.Parameter(fg.ones(2), requires_grad=False))
    assert type(p) is nn.Parameter and not p.requires_grad and p.tolist() == [1.0, 1.0]
    assert _roundtrip(nn.Parameter(fg.ones(2))).requires_grad
    b = _roundtrip(nn.Buffer(fg.ones(2), persistent=False))
    assert type(b) is nn.Buffer and b.persistent is False


def test_tensor_and_parameter_pickle_matches_torch():
    torch = pytest.importorskip("torch")
    ty = _roundtrip(torch.tensor([1.0, 2.0], requires_grad=True) * 3)
    assert (ty.requires_grad, ty.is_leaf) == (True, True)  # as fgraph's above
    tp = _roundtrip(torch.nn.Parameter(torch.ones(2), requires_grad=False))
    assert type(tp) is torch.nn.Parameter and tp.requires_grad is False


def _check_unpickled(net, net2):
    assert type(net2) is type(net) and net2 is not net
    assert [n for n, _ in net2.named_parameters()] == [n for n, _ in net.named_parameters()]
    assert net2.head.weight is net2.fc.weight  # ties survive (pickle's memo)
    assert net2.training is True and net2.drop.training is False and net2.note == "hello"
    assert list(net2.state_dict()) == list(net.state_dict())
    assert [n for n, _ in net2.named_buffers()] == ["steps", "cache"]
    assert "cache" in net2._non_persistent_buffers_set


def test_module_pickle_roundtrip():
    net = FgNet()
    net.drop.eval()
    handle = net.register_forward_hook(double_output)
    net2 = _roundtrip(net)
    _check_unpickled(net, net2)
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(np.asarray(net2.state_dict()[k].array), np.asarray(v.array))
    np.testing.assert_allclose(np.asarray(net2(fg.ones(1, 3)).array), np.asarray(net(fg.ones(1, 3)).array))
    assert list(net2._forward_hooks.values()) == [double_output]
    handle.remove()
    # the unpickled parameters are fully working: owners known, so an optimizer step rebinds them
    assert [(type(m).__name__, n) for m, n in nn.parameter.owners(net2.fc.weight)] == \
        [("Linear", "weight"), ("Linear", "weight")]
    old = net2.fc.weight
    opt = fg.optim.SGD(net2.parameters(), lr=0.5)
    opt.step(net2(fg.ones(1, 3)).sum().backward())
    assert net2.fc.weight is not old and net2.head.weight is net2.fc.weight
    assert not np.allclose(np.asarray(net2.fc.weight.array), np.asarray(old.array))
    assert net.fc.weight is not net2.fc.weight  # the original is untouched
    net2.to(fg.float16)
    assert net2.fc.weight.dtype == fg.float16 and net2.head.weight is net2.fc.weight
    assert net2.load_state_dict(net.state_dict(), strict=True).missing_keys == []



def test_module_pickle_roundtrip_matches_torch():
    torch, TNet = _torch_net()
    tnet = TNet()
    tnet.drop.eval()
    tnet.register_forward_hook(double_output)
    tnet2 = _roundtrip(tnet)
    _check_unpickled(tnet, tnet2)
    assert list(tnet2._forward_hooks.values()) == [double_output]


def test_module_pickle_bad_hook_and_load_pre_hook_on_copy():
    net = FgNet()
    net.register_forward_hook(lambda m, a, o: None)
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        pickle.dumps(net)
    net = FgNet()
    net.seen_prefixes = []
    net.register_load_state_dict_pre_hook(load_pre_hook_with_module)
    for clone in (_roundtrip(net), copy.deepcopy(net)):
        clone.load_state_dict(net.state_dict())
        assert clone.seen_prefixes == [""] and net.seen_prefixes == []


def test_module_pickle_bad_hook_and_load_pre_hook_on_copy_matches_torch():
    torch, TNet = _torch_net()
    tnet = TNet()
    tnet.register_forward_hook(lambda m, a, o: None)
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        pickle.dumps(tnet)
    tnet = TNet()
    tnet.seen_prefixes = []
    tnet.register_load_state_dict_pre_hook(load_pre_hook_with_module)
    tclone = _roundtrip(tnet)
    tclone.load_state_dict(tnet.state_dict())
    assert tclone.seen_prefixes == [""] and tnet.seen_prefixes == []


# -- 2. per-module _save_to_state_dict / _load_from_state_dict, extra state, metadata ------------------
def _renaming_linear(ns_nn):
    class Renamed(ns_nn.Linear):
        """Saves ``weight`` as ``w`` (transposed) and loads it back: an override of both methods."""
        _version = 3

        def _save_to_state_dict(self, destination, prefix, keep_vars):
            super()._save_to_state_dict(destination, prefix, keep_vars)
            destination[prefix + "w"] = destination.pop(prefix + "weight").T

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
            self.versions.append(local_metadata.get("version"))
            if prefix + "w" in state_dict:
                state_dict[prefix + "weight"] = state_dict.pop(prefix + "w").T
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing, unexpected, errors)

    return Renamed


def _extra_state_module(ns_nn, make):
    class Counter(ns_nn.Module):
        def __init__(self):
            super().__init__()
            self.steps = 0
            self.lin = ns_nn.Linear(2, 2)
            self.register_buffer("b", make([1.0]))

        def get_extra_state(self):
            return {"steps": self.steps}

        def set_extra_state(self, state):
            self.steps = state["steps"]

    return Counter


def _state_dict_overrides(ns_nn, make):
    Renamed, Counter = _renaming_linear(ns_nn), _extra_state_module(ns_nn, make)
    outer = ns_nn.Sequential(Renamed(2, 3), ns_nn.ReLU())
    outer[0].versions = []
    sd = outer.state_dict()
    result = {"keys": list(sd), "w_shape": tuple(sd["0.w"].shape),
              "metadata": dict(sd._metadata) if hasattr(sd, "_metadata") else None}
    target = ns_nn.Sequential(Renamed(2, 3), ns_nn.ReLU())
    target[0].versions = []
    result["load"] = tuple(map(list, target.load_state_dict(sd)))
    result["versions"] = target[0].versions
    result["equal"] = np.allclose(np.asarray(target[0].weight.detach()), np.asarray(outer[0].weight.detach()))
    a, b = Counter(), Counter()
    a.steps = 5
    sd = a.state_dict()
    result["extra_keys"] = list(sd)
    result["extra_value"] = sd["_extra_state"]
    b.load_state_dict(sd)
    result["loaded_steps"] = b.steps
    del sd["_extra_state"]
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "_extra_state"'):
        b.load_state_dict(sd)
    result["lenient_missing"] = list(b.load_state_dict(sd, strict=False).missing_keys)
    plain = ns_nn.Linear(2, 2)
    extra = dict(plain.state_dict(), _extra_state=1)
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "_extra_state"'):
        plain.load_state_dict(extra)
    result["lenient_unexpected"] = list(plain.load_state_dict(extra, strict=False).unexpected_keys)
    return result


def test_state_dict_overrides_extra_state_and_metadata():
    got = _state_dict_overrides(nn, lambda v: fg.tensor(v))
    assert got["keys"] == ["0.bias", "0.w"] and got["w_shape"] == (2, 3)
    assert got["metadata"] == {"": {"version": 1}, "0": {"version": 3}, "1": {"version": 1}}
    assert got["load"] == ([], []) and got["versions"] == [3] and got["equal"]
    assert got["extra_keys"] == ["b", "_extra_state", "lin.weight", "lin.bias"]  # own entries first
    assert got["extra_value"] == {"steps": 5} and got["loaded_steps"] == 5
    # strict=False still reports them (torch passes strict=True to every _load_from_state_dict)
    assert got["lenient_missing"] == ["_extra_state"] and got["lenient_unexpected"] == ["_extra_state"]


def test_state_dict_overrides_extra_state_and_metadata_matches_torch():
    got = _state_dict_overrides(nn, lambda v: fg.tensor(v))
    torch = pytest.importorskip("torch")
    want = _state_dict_overrides(torch.nn, lambda v: torch.tensor(v))
    assert got == want


# -- 3. buffer assignment --------------------------------------------------------------------------
def _buffer_assignment(ns_nn, make):
    m = ns_nn.Module()
    m.register_buffer("b1", make([1.0, 2.0]))
    m.b2 = m.b1  # torch: a plain attribute (only names already in _buffers rebind a buffer)
    out = {"buffers": list(m._buffers), "plain": "b2" in m.__dict__,
           "named": [n for n, _ in m.named_buffers(remove_duplicate=False)], "state": list(m.state_dict())}
    m.register_buffer("b3", None)
    m.b3 = m.b1  # a declared buffer name: the same tensor registered twice
    out["dups"] = [n for n, _ in m.named_buffers(remove_duplicate=False)]
    out["dedup"] = [n for n, _ in m.named_buffers()]
    m.x = 3
    with pytest.raises(KeyError, match="attribute 'x' already exists"):
        m.x = ns_nn.Buffer(make([1.0]))
    m.y = make([1.0])
    with pytest.raises(KeyError, match="attribute 'y' already exists"):
        m.y = ns_nn.Buffer(make([1.0]))
    out["after"] = (m.x, list(m._buffers))
    return out


def test_buffer_assignment():
    got = _buffer_assignment(nn, lambda v: fg.tensor(v))
    assert got == {"buffers": ["b1"], "plain": True, "named": ["b1"], "state": ["b1"],
                   "dups": ["b1", "b3"], "dedup": ["b1"], "after": (3, ["b1", "b3"])}


def test_buffer_assignment_matches_torch():
    got = _buffer_assignment(nn, lambda v: fg.tensor(v))
    torch = pytest.importorskip("torch")
    assert _buffer_assignment(torch.nn, lambda v: torch.tensor(v)) == got


# -- 4. set_submodule ------------------------------------------------------------------------------
def _set_submodule(ns_nn):
    net = ns_nn.Sequential(ns_nn.Sequential(ns_nn.Linear(2, 2), ns_nn.ReLU()), ns_nn.Linear(2, 1))
    net.flag = 1
    net.set_submodule("0.1", ns_nn.Tanh())
    net.set_submodule("0.extra", ns_nn.Identity())
    net.set_submodule("1", ns_nn.Identity(), strict=True)
    out = {"names": [n for n, _ in net.named_modules()],
           "types": [type(m).__name__ for m in net.modules()]}
    errors = []
    for target, module, strict in [("", ns_nn.ReLU(), False), ("0.1", 3, False), ("0.missing", ns_nn.ReLU(), True),
                                   ("nope.x", ns_nn.ReLU(), False), ("flag", ns_nn.ReLU(), False),
                                   ("0.0.weight", ns_nn.ReLU(), False)]:
        with pytest.raises((ValueError, AttributeError)) as info:
            net.set_submodule(target, module, strict=strict)
        errors.append(info.type.__name__)
    out["errors"] = errors
    return out


def test_set_submodule():
    got = _set_submodule(nn)
    assert got["names"] == ["", "0", "0.0", "0.1", "0.extra", "1"]
    assert got["types"] == ["Sequential", "Sequential", "Linear", "Tanh", "Identity", "Identity"]
    assert got["errors"] == ["ValueError", "ValueError", "AttributeError", "AttributeError", "AttributeError",
                             "AttributeError"]


def test_set_submodule_matches_torch():
    got = _set_submodule(nn)
    torch = pytest.importorskip("torch")
    assert _set_submodule(torch.nn) == got


# -- 4. global registration hooks ------------------------------------------------------------------
def _registration_hooks(ns, ns_nn, module_mod, make):
    log = []
    handles = [
        module_mod.register_module_parameter_registration_hook(
            lambda m, n, p: log.append(("param", type(m).__name__, n, p is None))),
        module_mod.register_module_buffer_registration_hook(
            lambda m, n, b: log.append(("buffer", type(m).__name__, n, b is None))),
        module_mod.register_module_module_registration_hook(
            lambda m, n, s: log.append(("module", type(m).__name__, n, type(s).__name__))),
    ]
    try:
        net = ns_nn.Module()
        net.lin = ns_nn.Linear(2, 2, bias=False)
        net.register_buffer("b", make([1.0]))
        net.register_parameter("p", None)
        net.register_buffer("nb", None)
        net.add_module("act", ns_nn.ReLU())
        net.act = None
        net.b = make([2.0])
    finally:
        for h in handles:
            h.remove()
    net.extra = ns_nn.ReLU()
    # a hook's return value replaces what is registered
    h = module_mod.register_module_buffer_registration_hook(lambda m, n, b: b * 10)
    h2 = module_mod.register_module_module_registration_hook(lambda m, n, s: ns_nn.Tanh())
    try:
        m = ns_nn.Module()
        m.register_buffer("c", make([1.0]))
        m.add_module("a", ns_nn.ReLU())
        m.z = ns_nn.ReLU()
    finally:
        h.remove()
        h2.remove()
    return log, float(m.c[0]), type(m.a).__name__, type(m.z).__name__


def test_global_registration_hooks():
    log, c, a, z = _registration_hooks(fg, nn, fg_module, lambda v: fg.tensor(v))
    # torch runs parameter hooks for Parameters only (not for None: bias=False, register_parameter(n, None))
    assert log == [("param", "Linear", "weight", False),
                   ("module", "Module", "lin", "Linear"), ("buffer", "Module", "b", False),
                   ("buffer", "Module", "nb", True), ("module", "Module", "act", "ReLU"),
                   ("module", "Module", "act", "NoneType"), ("buffer", "Module", "b", False)]
    assert (c, a, z) == (10.0, "Tanh", "Tanh")


def test_global_registration_hooks_matches_torch():
    log, c, a, z = _registration_hooks(fg, nn, fg_module, lambda v: fg.tensor(v))
    torch = pytest.importorskip("torch")
    assert _registration_hooks(torch, torch.nn, torch.nn.modules.module, lambda v: torch.tensor(v)) == \
        (log, c, a, z)


# -- 4/5. state-dict hooks: private forms, and the public post-hook's return value ------------------------
def _state_dict_hooks(ns_nn):
    out = {}
    lin = ns_nn.Linear(2, 2)

    def public(m, sd, prefix, meta):
        return sd

    lin.register_state_dict_post_hook(public)
    with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
        lin.state_dict()
    lin = ns_nn.Linear(2, 2)
    lin._register_state_dict_hook(lambda m, sd, prefix, meta: OrderedDict(renamed=sd[prefix + "weight"]))
    out["private"] = list(lin.state_dict())
    with pytest.raises(RuntimeError, match="Cannot register the same function"):
        ns_nn.Linear(2, 2)._register_state_dict_hook(public)
    calls = []
    lin = ns_nn.Linear(2, 2)
    lin._register_load_state_dict_pre_hook(lambda sd, prefix, meta, strict, mk, uk, em: calls.append(("plain", prefix)))
    lin._register_load_state_dict_pre_hook(
        lambda m, sd, prefix, meta, strict, mk, uk, em: calls.append((type(m).__name__, prefix)), with_module=True)
    ns_nn.Sequential(lin).load_state_dict(ns_nn.Sequential(ns_nn.Linear(2, 2)).state_dict())
    out["pre_hooks"] = calls
    return out


def test_private_state_dict_hooks_and_post_hook_return_value():
    got = _state_dict_hooks(nn)
    assert got == {"private": ["renamed"], "pre_hooks": [("plain", "0."), ("Linear", "0.")]}


def test_private_state_dict_hooks_and_post_hook_return_value_matches_torch():
    got = _state_dict_hooks(nn)
    torch = pytest.importorskip("torch")
    assert _state_dict_hooks(torch.nn) == got


# -- 4. call_super_init ------------------------------------------------------------------------------
def _call_super_init(ns_nn):
    class Mixin:
        def __init__(self, *args, **kwargs):
            self.mixin_args = (args, kwargs)

    class Cooperative(ns_nn.Module, Mixin):
        call_super_init = True

    m = Cooperative(1, k=2)
    out = {"args": m.mixin_args, "has_params": isinstance(m._parameters, dict)}
    with pytest.raises(TypeError, match="takes 1 positional argument but 2 were given"):
        ns_nn.Module(1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'call_super_init'"):
        ns_nn.Module(call_super_init=True)
    return out


def test_call_super_init():
    got = _call_super_init(nn)
    assert got == {"args": ((1,), {"k": 2}), "has_params": True}


def test_call_super_init_matches_torch():
    got = _call_super_init(nn)
    torch = pytest.importorskip("torch")
    assert _call_super_init(torch.nn) == got


def test_layer_shape_errors_are_runtime_errors_as_in_torch():
    """torch raises RuntimeError for a shape mismatch in a layer; fgraph's OpError is one too (and still a
    ValueError and a TypeError)."""
    for call in (lambda: fg.nn.Linear(2, 2)(fg.zeros(3, 3)), lambda: fg.nn.Conv2d(1, 1, 3)(fg.zeros(3))):
        with pytest.raises(RuntimeError) as info:
            call()
        assert isinstance(info.value, (ValueError, TypeError)) and type(info.value).__name__ == "OpError"
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError):
        torch.nn.Linear(2, 2)(torch.zeros(3, 3))
