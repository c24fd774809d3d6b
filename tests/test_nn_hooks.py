"""Module hooks: call order, replaced values, always_call, removal, and grad_input/grad_output against PyTorch.

Each scenario is written once against a small adapter (``FG`` or ``Torch``), so the same
code runs on both libraries and the recorded events and values are compared; the
scenarios also assert their own expectations, so they check fgraph without torch.
"""
import numpy as np
import pytest

import fgraph as fg
from fgraph.errors import GradError


class FG:
    nn = fg.nn
    hooks = fg.nn.modules.module

    @staticmethod
    def tensor(a, requires_grad=False):
        return fg.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)

    @staticmethod
    def grad(y, xs):
        return fg.grad(y, list(xs), allow_unused=True)

    @staticmethod
    def numpy(t):
        return None if t is None else np.asarray(t.numpy())

    @staticmethod
    def tanh(t):
        return fg.tanh(t)

    @staticmethod
    def load(module, torch_module):
        if torch_module is not None:
            module.load_state_dict(torch_module.state_dict())
        return module


class Torch:
    def __init__(self, torch):
        self.torch = torch
        self.nn = torch.nn
        self.hooks = torch.nn.modules.module

    def tensor(self, a, requires_grad=False):
        return self.torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)

    def grad(self, y, xs):
        return self.torch.autograd.grad(y, list(xs), allow_unused=True)

    @staticmethod
    def numpy(t):
        return None if t is None else t.detach().numpy()

    def tanh(self, t):
        return self.torch.tanh(t)

    @staticmethod
    def load(module, torch_module):
        if torch_module is not None:
            module.load_state_dict(torch_module.state_dict())
        return module


def block_class(lib):
    """A module with a tensor input that needs grad, one that does not, a float, and two outputs."""

    class Block(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 2).double()

        def forward(self, x, y, scale):
            return self.lin(x) * y, lib.tanh(x).sum(-1) * scale

    return Block


def _inputs(lib):
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    y = lib.tensor(rng.standard_normal((4, 2)))
    return x, y


def scenario_order(lib, torch_twin=None):
    """Every hook kind, module and global, with prepend; returns the events in call order."""
    events = []
    Block = block_class(lib)
    block = lib.load(Block(), torch_twin)

    def rec(label, ret=None):
        def hook(*args):
            events.append(label)
            return ret
        return hook

    handles = [
        block.register_forward_pre_hook(rec("pre1")),
        block.register_forward_pre_hook(rec("pre0"), prepend=True),
        block.register_forward_pre_hook(lambda m, a, k: events.append("pre_kw"), with_kwargs=True),
        block.register_forward_hook(rec("fwd1")),
        block.register_forward_hook(rec("fwd0"), prepend=True),
        block.register_forward_hook(lambda m, a, k, o: events.append("fwd_kw"), with_kwargs=True),
        block.register_full_backward_pre_hook(rec("bpre1")),
        block.register_full_backward_pre_hook(rec("bpre0"), prepend=True),
        block.register_full_backward_hook(rec("bwd1")),
        block.register_full_backward_hook(rec("bwd0"), prepend=True),
        block.lin.register_forward_hook(rec("lin_fwd")),
        block.lin.register_full_backward_hook(rec("lin_bwd")),
        lib.hooks.register_module_forward_pre_hook(rec("gpre")),
        lib.hooks.register_module_forward_hook(rec("gfwd")),
        lib.hooks.register_module_full_backward_pre_hook(rec("gbpre")),
        lib.hooks.register_module_full_backward_hook(rec("gbwd")),
    ]
    try:
        x, y = _inputs(lib)
        a, b = block(x, y, 2.0)
        events.append("--backward--")
        lib.grad((a.sum() + b.sum()), [x])
    finally:
        for h in handles:
            h.remove()
    return events


def test_hook_order():
    events = scenario_order(FG)
    forward, backward = events[: events.index("--backward--")], events[events.index("--backward--") + 1:]
    assert forward == ["gpre", "pre0", "pre1", "pre_kw", "gpre", "gfwd", "lin_fwd", "gfwd", "fwd0", "fwd1", "fwd_kw"]
    assert backward == ["gbpre", "bpre0", "bpre1", "gbpre", "gbwd", "lin_bwd", "gbwd", "bwd0", "bwd1"]


def test_hook_order_against_torch():
    torch = pytest.importorskip("torch")
    theirs = Torch(torch)
    twin = block_class(theirs)()
    assert scenario_order(FG, twin) == scenario_order(theirs, twin)


def scenario_values(lib, torch_twin=None, replace=False):
    """grad_input/grad_output of a full backward hook; with ``replace``, hooks change them."""
    Block = block_class(lib)
    fg.manual_seed(0)
    block = lib.load(Block(), torch_twin)
    seen = {}

    def pre(module, grad_output):
        seen["pre"] = [lib.numpy(g) for g in grad_output]
        if replace:
            return (grad_output[0] * 2, grad_output[1])

    def post(module, grad_input, grad_output):
        seen["grad_input"] = [lib.numpy(g) for g in grad_input]
        seen["grad_output"] = [lib.numpy(g) for g in grad_output]
        if replace:
            return (grad_input[0] * 3,) + tuple(grad_input[1:])

    block.register_full_backward_pre_hook(pre)
    block.register_full_backward_hook(post)
    x, y = _inputs(lib)
    a, b = block(x, y, 2.0)
    weight = block.lin.weight
    gx, gw = lib.grad((a * a).sum() + b.sum(), [x, weight])
    seen["gx"], seen["gw"] = lib.numpy(gx), lib.numpy(gw)
    return seen


@pytest.mark.parametrize("replace", [False, True])
def test_backward_hook_values(replace):
    plain = scenario_values(FG)
    seen = scenario_values(FG, replace=replace)
    assert len(seen["grad_input"]) == 3 and seen["grad_input"][1] is None and seen["grad_input"][2] is None
    assert [g.shape for g in seen["grad_output"]] == [(4, 2), (4,)]
    np.testing.assert_allclose(seen["grad_output"][1], np.ones(4))  # d(b.sum())/db
    if replace:
        # grad_output[0] doubled before the module's backward: the weight's gradient doubles too;
        # grad_input[0] tripled after it: that is what reaches x.
        np.testing.assert_allclose(seen["gw"], 2 * plain["gw"], rtol=1e-12)
        np.testing.assert_allclose(seen["grad_output"][0], 2 * plain["grad_output"][0], rtol=1e-12)
        np.testing.assert_allclose(seen["gx"], 3 * seen["grad_input"][0], rtol=1e-12)
    else:
        np.testing.assert_allclose(seen["gx"], seen["grad_input"][0], rtol=1e-12)


@pytest.mark.parametrize("replace", [False, True])
def test_backward_hook_values_against_torch(replace):
    torch = pytest.importorskip("torch")
    theirs = Torch(torch)
    twin = block_class(theirs)()
    ours, expected = scenario_values(FG, twin, replace), scenario_values(theirs, twin, replace)
    # One chosen difference: torch hands a hook zeros for a tensor input that needs no gradient
    # (y here); fgraph hands None, as for non-tensor inputs.
    assert ours["grad_input"][1] is None and not expected["grad_input"][1].any()
    expected["grad_input"][1] = None
    for key, values in expected.items():
        mine = ours[key] if isinstance(values, list) else [ours[key]]
        values = values if isinstance(values, list) else [values]
        assert len(mine) == len(values), key
        for o, e in zip(mine, values):
            if e is None:
                assert o is None, key
            else:
                np.testing.assert_allclose(o, e, rtol=1e-12, atol=1e-14, err_msg=key)


def test_forward_hooks_replace_args_and_output():
    lin = fg.nn.Linear(2, 2)
    x = fg.ones(1, 2)
    h1 = lin.register_forward_pre_hook(lambda m, args: args[0] * 0)  # a bare tensor is wrapped in a tuple
    h2 = lin.register_forward_hook(lambda m, args, out: out + 1)
    np.testing.assert_allclose(lin(x).numpy(), lin.bias.numpy()[None] + 1, rtol=1e-6)
    h1.remove()
    h2.remove()
    h3 = lin.register_forward_pre_hook(lambda m, args, kwargs: ((args[0] * 2,), kwargs), with_kwargs=True)
    np.testing.assert_allclose(lin(x).numpy(), fg.nn.functional.linear(x * 2, lin.weight, lin.bias).numpy())
    h3.remove()
    with lin.register_forward_pre_hook(lambda m, args, kwargs: "bad", with_kwargs=True):
        with pytest.raises(RuntimeError, match="new_args, new_kwargs"):
            lin(x)
    np.testing.assert_allclose(lin(x).numpy(), fg.nn.functional.linear(x, lin.weight, lin.bias).numpy())


def test_always_call_runs_when_forward_raises():
    class Boom(fg.nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    calls = []
    m = Boom()
    m.register_forward_hook(lambda mod, args, out: calls.append(("always", out)), always_call=True)
    m.register_forward_hook(lambda mod, args, out: calls.append("normal"))
    with pytest.raises(ValueError, match="boom"):
        m(fg.ones(1))
    assert calls == [("always", None)]
    handle = fg.nn.modules.module.register_module_forward_hook(lambda mod, a, o: calls.append("global"),
                                                               always_call=True)
    try:
        with pytest.raises(ValueError):
            m(fg.ones(1))
    finally:
        handle.remove()
    assert calls[1:] == ["global", ("always", None)]


def test_removal_and_fast_path():
    lin = fg.nn.Linear(2, 2)
    calls = []
    handle = lin.register_full_backward_hook(lambda m, gi, go: calls.append(1))
    x = fg.ones(1, 2, requires_grad=True)
    out = lin(x)
    assert out.grad_fn.name() == "BackwardHookFunctionBackward"
    fg.grad(out.sum(), [x])
    handle.remove()
    out = lin(x)
    assert out.grad_fn.name() != "BackwardHookFunctionBackward"  # no hook: forward runs directly
    fg.grad(out.sum(), [x])
    assert calls == [1]
    with lin.register_forward_hook(lambda m, a, o: calls.append(2)):
        lin(x)
    lin(x)
    assert calls == [1, 2]


def test_backward_hook_without_input_requiring_grad():
    lin = fg.nn.Linear(2, 3)
    seen = []
    lin.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go[0].shape)))
    with pytest.warns(UserWarning, match="no inputs require gradients"):  # torch's warning
        grads = fg.backward(lin(fg.ones(4, 2)).sum())
    assert seen == [((None,), (4, 3))]
    assert grads[lin.weight].shape == (3, 2)


def test_backward_hook_fires_once_per_backward_and_for_each_call():
    lin = fg.nn.Linear(2, 2)
    count = []
    lin.register_full_backward_hook(lambda m, gi, go: count.append(gi[0].shape))
    x = fg.ones(3, 2, requires_grad=True)
    y = lin(lin(x))  # two calls: two hook firings per backward
    fg.grad(y.sum(), [x])
    fg.grad(y.sum(), [x])
    assert count == [(3, 2)] * 4


def test_backward_hook_with_create_graph():
    lin = fg.nn.Linear(2, 1)
    lin.register_full_backward_hook(lambda m, gi, go: (gi[0] * 2,))
    x = fg.tensor([[1.0, -2.0]], requires_grad=True)
    (g,) = fg.grad((lin(x) ** 2).sum(), [x], create_graph=True)
    w = lin.weight.numpy()[0]
    out = float(lin(x).item())
    np.testing.assert_allclose(g.numpy()[0], 2 * 2 * out * w, rtol=1e-6)
    # g = 2 * (2 * out) * w depends on x through the module's output, so the second backward passes
    # through the module again and the hook doubles once more (as in PyTorch): 8 * sum(w) * w.
    (gg,) = fg.grad(g.sum(), [x])
    np.testing.assert_allclose(gg.numpy()[0], 8 * w.sum() * w, rtol=1e-5)


def test_backward_hook_with_create_graph_against_torch():
    torch = pytest.importorskip("torch")
    theirs = torch.nn.Linear(2, 1).double()
    ours = fg.nn.Linear(2, 1).double()
    ours.load_state_dict(theirs.state_dict())
    results = []
    for lib, lin in ((FG, ours), (Torch(torch), theirs)):
        lin.register_full_backward_hook(lambda m, gi, go: (gi[0] * 2,))
        x = lib.tensor([[1.0, -2.0]], requires_grad=True)
        if lib is FG:
            (g,) = fg.grad((lin(x) ** 3).sum(), [x], create_graph=True)
            (gg,) = fg.grad(g.sum(), [x])
        else:
            (g,) = torch.autograd.grad((lin(x) ** 3).sum(), [x], create_graph=True)
            (gg,) = torch.autograd.grad(g.sum(), [x])
        results.append((lib.numpy(g), lib.numpy(gg)))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12)


def test_hook_returning_wrong_shape_is_an_error():
    lin = fg.nn.Linear(2, 2)
    lin.register_full_backward_hook(lambda m, gi, go: (fg.ones(7),))
    x = fg.ones(3, 2, requires_grad=True)
    with pytest.raises(GradError, match=r"changed grad_input\[0\] from shape \(3, 2\)"):
        fg.grad(lin(x).sum(), [x])
    lin2 = fg.nn.Linear(2, 2)
    lin2.register_full_backward_pre_hook(lambda m, go: (go[0], go[0]))
    with pytest.raises(GradError, match="returned 2 entries for grad_output, expected a tuple of 1"):
        fg.grad(lin2(x).sum(), [x])


def test_deprecated_backward_hook_points_to_full():
    with pytest.raises(NotImplementedError, match="register_full_backward_hook"):
        fg.nn.Linear(1, 1).register_backward_hook(lambda *a: None)
