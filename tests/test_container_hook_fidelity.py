"""Issue 33: containers and full backward hooks behave as PyTorch's.

Each scenario is written once against a small adapter (``FG`` or ``Torch``) and returns
what it observed (types, keys, error classes, warnings). The plain tests assert the
expected observations on fgraph alone (they run without torch); the ``*_matches_torch``
tests check that PyTorch, where installed, observes the same.
"""
import collections
import collections.abc as abc
import warnings

import numpy as np
import pytest

import fgraph as fg

Pair = collections.namedtuple("Pair", "first second")


class FG:
    nn = fg.nn

    @staticmethod
    def ones(*shape, requires_grad=False):
        return fg.ones(*shape, requires_grad=requires_grad)

    @staticmethod
    def index(i):
        return fg.tensor(i)


class Torch:
    def __init__(self):
        self.torch = pytest.importorskip("torch")
        self.nn = self.torch.nn

    def ones(self, *shape, requires_grad=False):
        return self.torch.ones(*shape, requires_grad=requires_grad)

    def index(self, i):
        return self.torch.tensor(i)


def _error(fn):
    """The class name of what ``fn()`` raises, or ``None``."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the class is the observation
        return type(exc).__name__
    return None


def _warned(fn):
    """``fn()``'s result and the ``(category, message)`` of each warning it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    return result, [(w.category.__name__, str(w.message)) for w in caught]


# -- item 1: a namedtuple output keeps its type with backward hooks -------------------------------------

def _output_types(lib):
    class Two(lib.nn.Module):
        def forward(self, x):
            return Pair(x * 2, x * 3)

    class AsList(lib.nn.Module):
        def forward(self, x):
            return [x * 2, x * 3]

    class Plain(lib.nn.Module):
        def forward(self, x):
            return (x * 2, x * 3)

    seen = {}
    calls = []
    x = lib.ones(3, requires_grad=True)
    for kind in ("hook", "pre_hook", "both"):
        model = Two()
        if kind in ("hook", "both"):
            model.register_full_backward_hook(lambda m, gi, go: calls.append((kind, len(gi), len(go))))
        if kind in ("pre_hook", "both"):
            model.register_full_backward_pre_hook(lambda m, go: calls.append((kind, len(go))))
        out = model(x)
        seen[kind] = (type(out).__name__, out._fields, tuple(out.first.shape))
        (out.first.sum() + out.second.sum()).backward()
    plain = Plain()
    plain.register_full_backward_hook(lambda m, gi, go: None)
    seen["tuple"] = type(plain(x)).__name__
    as_list = AsList()
    as_list.register_full_backward_hook(lambda m, gi, go: None)
    out, _ = _warned(lambda: as_list(x))
    seen["list"] = type(out).__name__
    # no input requires grad: the namedtuple still comes back as one
    frozen = Two()
    frozen.register_full_backward_hook(lambda m, gi, go: None)
    seen["no_grad_input"] = type(frozen(lib.ones(3))).__name__
    return seen, sorted(calls, key=str)


def test_namedtuple_output_survives_backward_hooks():
    seen, calls = _output_types(FG)
    for kind in ("hook", "pre_hook", "both"):
        assert seen[kind] == ("Pair", ("first", "second"), (3,)), kind
    assert seen["tuple"] == "tuple" and seen["list"] == "list" and seen["no_grad_input"] == "Pair"
    assert calls == [("both", 1, 2), ("both", 2), ("hook", 1, 2), ("pre_hook", 2)]


def test_namedtuple_output_matches_torch():
    assert _output_types(Torch()) == _output_types(FG)


def test_namedtuple_output_gradients_flow_through_hook():
    model = fg.nn.Linear(2, 2)

    class Head(fg.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = model

        def forward(self, x):
            y = self.lin(x)
            return Pair(y, y * 2)

    head = Head()
    head.register_full_backward_pre_hook(lambda m, go: (go[0] * 0, go[1]))
    x = fg.ones(1, 2, requires_grad=True)
    out = head(x)
    g = fg.grad(out.first.sum() + out.second.sum(), [x])[0]
    expected = 2 * np.asarray(model.weight.numpy()).sum(0, keepdims=True)
    np.testing.assert_allclose(np.asarray(g.numpy()), expected, rtol=1e-6)


# -- item 2: ParameterList with a lone tensor, tensor indices -----------------------------------------

def _parameter_list(lib):
    nn = lib.nn
    seen = {}
    pl = nn.ParameterList([nn.Parameter(lib.ones(2))])
    lone = nn.Parameter(lib.ones(3, 2))

    def iadd():
        nonlocal pl
        pl += lone

    seen["iadd_lone"] = _error(iadd)
    seen["extend_lone"] = _error(lambda: pl.extend(lone))
    seen["extend_plain_tensor"] = _error(lambda: pl.extend(lib.ones(3, 2)))
    seen["len_after"] = len(pl)
    pl.extend([lib.ones(1), lib.ones(4)])
    pl += (lib.ones(5),)
    seen["names"] = [n for n, _ in pl.named_parameters()]
    new = nn.Parameter(lib.ones(7))
    pl[lib.index(2)] = new
    seen["tensor_index_set"] = ([n for n, _ in pl.named_parameters()], pl[2] is new, tuple(pl[lib.index(2)].shape))
    seen["tensor_index_negative"] = tuple(pl[lib.index(-1)].shape)
    seen["bad_index"] = [
        _error(lambda: pl.__setitem__(lib.index([1, 2]), new)),
        _error(lambda: pl.__setitem__(1.0, new)),
        _error(lambda: pl.__setitem__(9, new)),
        _error(lambda: pl[9]),
    ]
    seen["slice"] = (type(pl[1:3]).__name__, [tuple(p.shape) for p in pl[1:3]], pl[1:3][0] is pl[1])
    seen["reversed"] = [tuple(p.shape) for p in reversed(pl)]
    seen["called"] = _error(lambda: pl(1))
    return seen


def test_parameter_list_rejects_a_lone_tensor_and_indexes_by_tensor():
    seen = _parameter_list(FG)
    assert seen["iadd_lone"] == seen["extend_lone"] == seen["extend_plain_tensor"] == "TypeError"
    assert seen["len_after"] == 1
    assert seen["names"] == ["0", "1", "2", "3"]
    assert seen["tensor_index_set"] == (["0", "1", "2", "3"], True, (7,))
    assert seen["tensor_index_negative"] == (5,)
    assert seen["bad_index"] == ["TypeError", "TypeError", "IndexError", "IndexError"]
    assert seen["slice"] == ("ParameterList", [(1,), (7,)], True)
    assert seen["reversed"] == [(5,), (7,), (1,), (2,)]
    assert seen["called"] == "RuntimeError"


def test_parameter_list_matches_torch():
    assert _parameter_list(Torch()) == _parameter_list(FG)


def test_parameter_list_is_a_sequence():
    a, b = fg.nn.Parameter(fg.ones(2)), fg.nn.Parameter(fg.zeros(2))
    pl = fg.nn.ParameterList([a, b, a])
    assert isinstance(pl, abc.Sequence) and not isinstance(pl, abc.MutableMapping)
    assert a in pl and fg.nn.Parameter(fg.ones(2)) not in pl  # identity: no elementwise ==
    assert pl.index(b) == 1 and pl.index(a, 1) == 2 and pl.count(a) == 2
    with pytest.raises(ValueError):
        pl.index(fg.nn.Parameter(fg.ones(2)))
    with pytest.raises(TypeError, match="append"):
        pl.extend(fg.ones(3))
    hash(pl)  # still a hashable module



def test_module_list_is_a_sequence():
    relu, tanh = fg.nn.ReLU(), fg.nn.Tanh()
    ml = fg.nn.ModuleList([relu, tanh, relu])
    assert isinstance(ml, abc.Sequence)
    assert relu in ml and fg.nn.ReLU() not in ml
    assert ml.index(tanh) == 1 and ml.index(relu, 1) == 2 and ml.count(relu) == 2
    assert list(reversed(ml)) == [relu, tanh, relu][::-1]
    assert ml[fg.tensor(1)] is tanh
    with pytest.raises(ValueError):
        ml.index(fg.nn.Tanh())
    hash(ml)

# -- item 3: ModuleDict / ParameterDict as mappings, torch's methods and order -------------------------

def _module_dict(lib):
    nn = lib.nn
    seen = {}
    md = nn.ModuleDict({"b": nn.ReLU(), "a": nn.Tanh()})
    seen["plain_dict_order"] = list(md)
    other = nn.ModuleDict(collections.OrderedDict([("z", nn.ReLU())]))
    other.update(md)
    seen["update_from_moduledict"] = (list(other), other["b"] is md["b"])
    other.update([("y", nn.Sigmoid()), ["x", nn.ReLU()]])
    seen["update_from_pairs"] = list(other)
    seen["errors"] = [
        _error(lambda: nn.ModuleDict().update([nn.ReLU()])),
        _error(lambda: nn.ModuleDict().update([("a",)])),
        _error(lambda: nn.ModuleDict().update(3)),
    ]
    popped = other.pop("z")
    seen["pop"] = (type(popped).__name__, list(other))
    seen["params"] = [n for n, _ in nn.ModuleDict({"l": nn.Linear(2, 2)}).named_parameters()]
    return seen


def test_module_dict_update_and_errors():
    seen = _module_dict(FG)
    assert seen["plain_dict_order"] == ["b", "a"]
    assert seen["update_from_moduledict"] == (["z", "b", "a"], True)
    assert seen["update_from_pairs"] == ["z", "b", "a", "y", "x"]
    assert seen["errors"] == ["TypeError", "ValueError", "TypeError"]
    assert seen["pop"] == ("ReLU", ["b", "a", "y", "x"])
    assert seen["params"] == ["l.weight", "l.bias"]


def test_module_dict_matches_torch():
    assert _module_dict(Torch()) == _module_dict(FG)


def test_module_dict_is_a_mutable_mapping():
    md = fg.nn.ModuleDict({"a": fg.nn.ReLU()})
    assert isinstance(md, abc.MutableMapping) and isinstance(md, abc.Mapping)
    assert dict(md) == {"a": md["a"]}
    tanh = fg.nn.Tanh()
    assert md.setdefault("b", tanh) is tanh and md.setdefault("b", fg.nn.ReLU()) is tanh
    assert md.get("missing") is None and md.pop("missing", 7) == 7
    assert list(reversed(md)) == ["b", "a"]
    assert md.popitem() == ("b", tanh) and list(md) == ["a"]
    with pytest.raises(KeyError):
        md.pop("missing")
    hash(md)  # identity equality: still usable in sets and as dict keys
    assert md != fg.nn.ModuleDict({"a": md["a"]})


def _parameter_dict(lib):
    nn = lib.nn
    seen = {}
    pd = nn.ParameterDict({"b": lib.ones(1), "a": lib.ones(2)})
    seen["plain_dict_order"] = list(pd)
    ordered = collections.OrderedDict([("b", lib.ones(1)), ("a", lib.ones(1))])
    seen["ordered_dict_order"] = list(nn.ParameterDict(ordered))
    seen["pairs_order"] = list(nn.ParameterDict([("b", lib.ones(1)), ("a", lib.ones(1))]))
    pd.update({"d": lib.ones(1), "c": lib.ones(3)})
    seen["update_plain_dict"] = list(pd)
    copy = nn.ParameterDict()
    copy.update(pd)
    seen["update_from_parameterdict"] = (list(copy), copy["c"] is pd["c"])
    seen["reversed"] = list(reversed(pd))
    dup = pd.copy()
    seen["copy"] = (type(dup).__name__, list(dup), dup["a"] is pd["a"], dup is not pd)
    key, value = pd.popitem()
    seen["popitem"] = (key, tuple(value.shape), list(pd))
    seen["setdefault"] = (tuple(pd.setdefault("z", lib.ones(4)).shape), tuple(pd.setdefault("z", lib.ones(5)).shape))
    fresh = pd.fromkeys(["q", "p"], lib.ones(1))
    seen["fromkeys"] = (type(fresh).__name__, list(fresh), type(fresh["q"]).__name__)
    seen["or"] = list(pd | nn.ParameterDict({"y": lib.ones(1)}))
    seen["or_plain"] = list(pd | {"k": lib.ones(1)})
    ror = {"k": lib.ones(1)} | pd
    seen["ror_plain"] = (type(ror).__name__, list(ror))
    pd |= {"x": lib.ones(1), "w": lib.ones(1)}
    seen["ior"] = list(pd)
    seen["get"] = (pd.get("nope"), tuple(pd.get("a").shape))
    seen["errors"] = [
        _error(lambda: nn.ParameterDict().update(3)),
        _error(lambda: nn.ParameterDict().update([lib.ones(1)])),
        _error(lambda: nn.ParameterDict().update([3])),
        _error(lambda: nn.ParameterDict().__setitem__(1, lib.ones(1))),
        _error(lambda: pd(1)),
    ]
    pd.clear()
    seen["clear"] = (len(pd), list(pd.named_parameters()))
    return seen


def test_parameter_dict_methods_and_order():
    seen = _parameter_dict(FG)
    assert seen["plain_dict_order"] == ["a", "b"]  # PyTorch sorts a plain dict's keys
    assert seen["ordered_dict_order"] == seen["pairs_order"] == ["b", "a"]
    assert seen["update_plain_dict"] == ["a", "b", "c", "d"]
    assert seen["update_from_parameterdict"] == (["a", "b", "c", "d"], True)
    assert seen["reversed"] == ["d", "c", "b", "a"]
    assert seen["copy"] == ("ParameterDict", ["a", "b", "c", "d"], True, True)
    assert seen["popitem"] == ("d", (1,), ["a", "b", "c"])
    assert seen["setdefault"] == ((4,), (4,))
    assert seen["fromkeys"] == ("ParameterDict", ["q", "p"], "Parameter")
    assert seen["or"] == ["a", "b", "c", "z", "y"]
    assert seen["or_plain"] == ["a", "b", "c", "z", "k"]
    assert seen["ror_plain"] == ("dict", ["k", "a", "b", "c", "z"])
    assert seen["ior"] == ["a", "b", "c", "z", "w", "x"]
    assert seen["get"] == (None, (2,))
    assert seen["errors"] == ["TypeError", "ValueError", "TypeError", "TypeError", "RuntimeError"]
    assert seen["clear"] == (0, [])


def test_parameter_dict_matches_torch():
    assert _parameter_dict(Torch()) == _parameter_dict(FG)


def test_parameter_dict_is_a_mutable_mapping():
    pd = fg.nn.ParameterDict([("w", fg.ones(2)), ("b", fg.zeros(1))])
    assert isinstance(pd, abc.MutableMapping)
    assert list(dict(pd)) == ["w", "b"] and list(pd.state_dict()) == ["w", "b"]
    assert isinstance(pd.copy()["w"], fg.nn.Parameter)
    assert pd.pop("missing", None) is None  # MutableMapping's pop(key, default); torch's takes no default
    none_default = pd.fromkeys(["a"])
    assert none_default["a"] is None and list(none_default.named_parameters()) == []
    with pytest.raises(TypeError, match="string"):
        pd[0]
    with pytest.raises(KeyError):
        del pd["missing"]
    with pytest.raises(TypeError, match="Parameter or Tensor"):
        pd["x"] = 3.0
    hash(pd)


# -- item 4: the warnings of full backward hooks ------------------------------------------------------

def _hook_warnings(lib):
    nn = lib.nn
    seen = {}
    fired = []

    class DictOut(nn.Module):
        def forward(self, x):
            return {"y": x * 2}

    x = lib.ones(3, requires_grad=True)
    model = DictOut()
    model.register_full_backward_hook(lambda m, gi, go: fired.append("dict"))
    out, caught = _warned(lambda: model(x))
    seen["dict_output"] = (type(out).__name__, [c for c, _ in caught], any("module output should be a Tensor" in m and
                                                                          "dict" in m for _, m in caught))
    out["y"].sum().backward()
    seen["dict_hook_fired"] = fired == ["dict"]

    lin = nn.Linear(3, 2)
    lin.register_full_backward_hook(lambda m, gi, go: fired.append(("lin", gi[0] is None)))
    _, caught = _warned(lambda: lin(lib.ones(1, 3)).sum().backward())
    seen["no_input_grad"] = ([c for c, _ in caught], any("no inputs require gradients" in m for _, m in caught),
                             fired[-1])
    pre_only = nn.Linear(3, 2)
    pre_only.register_full_backward_pre_hook(lambda m, go: None)
    _, caught = _warned(lambda: pre_only(lib.ones(1, 3)).sum().backward())
    seen["no_input_grad_pre_hook_only"] = any("no inputs require gradients" in m for _, m in caught)
    quiet = nn.Linear(3, 2)
    quiet.register_full_backward_hook(lambda m, gi, go: None)
    _, caught = _warned(lambda: quiet(x.reshape(1, 3)).sum().backward())
    seen["input_needs_grad"] = caught
    return seen


def test_backward_hook_warnings():
    seen = _hook_warnings(FG)
    assert seen["dict_output"] == ("dict", ["UserWarning"], True)
    assert seen["dict_hook_fired"] is False
    assert seen["no_input_grad"] == (["UserWarning"], True, ("lin", True))
    assert seen["no_input_grad_pre_hook_only"] is True
    assert seen["input_needs_grad"] == []


def test_backward_hook_warnings_match_torch():
    assert _hook_warnings(Torch()) == _hook_warnings(FG)


def test_dict_output_warning_points_at_the_caller():
    class DictOut(fg.nn.Module):
        def forward(self, x):
            return {"y": x}

    model = DictOut()
    model.register_full_backward_pre_hook(lambda m, go: None)
    with pytest.warns(UserWarning, match="DictOut") as record:
        model(fg.ones(1, requires_grad=True))
    assert record[0].filename == __file__


def test_no_input_grad_warning_points_at_the_backward_call():
    lin = fg.nn.Linear(2, 1)
    lin.register_full_backward_hook(lambda m, gi, go: None)
    with pytest.warns(UserWarning, match="no inputs require gradients") as record:
        lin(fg.ones(1, 2)).sum().backward()
    assert record[0].filename == __file__
