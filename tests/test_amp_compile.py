"""GradScaler inside fg.compile: the skip is a traced select, the scale and growth tracker are state of the
compiled step; a compiled loop with injected inf gradients equals the eager loop and torch.amp's."""
import numpy as np
import pytest

import fgraph as fg
import fgraph.nn.functional as F

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 3))
W = RNG.standard_normal((2, 3))
OPTIONS = dict(init_scale=256.0, growth_factor=2.0, backoff_factor=0.25, growth_interval=2)


def _setup(optimizer):
    layer = fg.nn.Linear(3, 2).double()
    layer.load_state_dict({"weight": fg.tensor(W), "bias": fg.zeros(2, dtype=fg.float64)})
    if optimizer == "sgd":
        opt = fg.optim.SGD(layer.parameters(), lr=0.1, momentum=0.9)
    else:
        opt = fg.optim.Adam(layer.parameters(), lr=0.1)
    return layer, opt, fg.amp.GradScaler("cpu", **OPTIONS)


def _loop(step, layer, opt, scaler, inf_at, steps=10):
    """Per step: (scale, growth tracker, weight, optimizer state); the loss is times inf at ``inf_at``."""
    record = []
    for i in range(steps):
        step(fg.tensor(X), fg.tensor(np.inf if i in inf_at else 1.0, dtype=fg.float64))
        state = {k: {name: v.numpy() for name, v in entry.items()} for k, entry in opt.state_dict()["state"].items()}
        record.append((scaler.get_scale(), scaler.state_dict()["_growth_tracker"], layer.weight.numpy().copy(), state))
    return record


def _step_of(layer, opt, scaler):
    def step(x, factor):
        loss = layer(x).pow(2).mean() * factor
        grads = scaler.scale(loss).backward()
        scaler.step(opt, grads)
        scaler.update()
        return loss
    return step


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_compiled_scaler_loop_equals_eager(optimizer):
    inf_at = (0, 3, 4, 7)  # the first step too: the state it would make is dropped
    objects = _setup(optimizer)
    eager = _loop(_step_of(*objects), *objects, inf_at)
    objects = _setup(optimizer)
    compiled_step = fg.compile(_step_of(*objects))
    compiled = _loop(compiled_step, *objects, inf_at)
    assert [r[0] for r in compiled] == [r[0] for r in eager] == [64.0, 64.0, 128.0, 32.0, 8.0, 8.0, 16.0, 4.0, 4.0, 8.0]
    assert [r[1] for r in compiled] == [r[1] for r in eager]
    for i, (a, b) in enumerate(zip(eager, compiled)):
        np.testing.assert_allclose(b[2], a[2], rtol=1e-12, atol=1e-15, err_msg=f"step {i}")
        assert b[3].keys() == a[3].keys(), f"step {i}"
        for k in a[3]:
            assert b[3][k].keys() == a[3][k].keys()
            for name in a[3][k]:
                np.testing.assert_allclose(b[3][k][name], a[3][k][name], rtol=1e-12, atol=1e-15,
                                           err_msg=f"step {i} state {k} {name}")
    np.testing.assert_array_equal(compiled[4][2], compiled[2][2])  # steps 3 and 4 were skipped
    assert compiled_step.traces == 2  # the skipped first step's program ran again at step 1
    assert objects[2].state_dict() == {"scale": 8.0, "_growth_tracker": 0, **{k: OPTIONS[k] for k in (
        "growth_factor", "backoff_factor", "growth_interval")}}
    if optimizer == "sgd":  # and torch.amp's, where torch is installed (test_amp.py checks the eager loop)
        try:
            theirs, state = _torch_loop(inf_at)
        except ImportError:
            return
        assert objects[2].state_dict() == state
        for i, (a, b) in enumerate(zip(theirs, compiled)):
            assert a[:2] == b[:2] and a[3].keys() == b[3].keys(), f"step {i}"
            np.testing.assert_allclose(b[2], a[2], rtol=1e-12, atol=1e-14, err_msg=f"step {i}")
            for k in a[3]:
                np.testing.assert_allclose(b[3][k]["momentum_buffer"], a[3][k]["momentum_buffer"], rtol=1e-12,
                                           atol=1e-14, err_msg=f"step {i} state {k}")


def _torch_loop(inf_at, steps=10):
    import torch

    layer = torch.nn.Linear(3, 2).double()
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(W))
        layer.bias.zero_()
    opt = torch.optim.SGD(layer.parameters(), lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler("cpu", **OPTIONS)
    record = []
    for i in range(steps):
        opt.zero_grad()
        loss = layer(torch.tensor(X)).pow(2).mean() * (float("inf") if i in inf_at else 1.0)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        state = {k: {name: v.numpy().copy() for name, v in entry.items()} for k, entry in opt.state_dict()["state"].items()}
        record.append((scaler.get_scale(), scaler.state_dict()["_growth_tracker"], layer.weight.detach().numpy().copy(),
                       state))
    return record, scaler.state_dict()


def test_autocast_float16_overflow_in_a_compiled_step_through_globals():
    """PyTorch's loop written as is (model, optimizer and scaler reached through the closure): a scale of 2**24
    overflows the float16 backward, the step is skipped, the scale backs off."""
    fg.manual_seed(0)
    model = fg.nn.Sequential(fg.nn.Linear(6, 16), fg.nn.ReLU(), fg.nn.Linear(16, 3))
    opt = fg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = fg.amp.GradScaler("cpu", init_scale=2.0 ** 24, backoff_factor=2.0 ** -6)

    @fg.compile
    def step(x, y):
        with fg.autocast("cpu", dtype=fg.float16):
            loss = F.cross_entropy(model(x), y)
        grads = scaler.scale(loss).backward()
        scaler.step(opt, grads)
        scaler.update()
        return loss

    x, y = fg.tensor(RNG.standard_normal((8, 6)).astype(np.float32)), fg.tensor(RNG.integers(0, 3, 8))
    weights, scales = [model[0].weight.numpy()], []
    for _ in range(3):
        assert np.isfinite(step(x, y).item())
        weights.append(model[0].weight.numpy())
        scales.append(scaler.get_scale())
    assert scales == [2.0 ** 18, 2.0 ** 18, 2.0 ** 18]
    np.testing.assert_array_equal(weights[1], weights[0])  # skipped: the scale overflowed float16
    assert not np.array_equal(weights[2], weights[1]) and not np.array_equal(weights[3], weights[2])
    assert opt.state_dict()["state"].keys() == {0, 1, 2, 3} and step.traces == 2


def test_compiled_scaler_misuse_and_changes_between_calls():
    layer, opt, scaler = _setup("sgd")

    @fg.compile
    def no_update(x):
        scaler.step(opt, scaler.scale(layer(x).sum()).backward())

    with pytest.raises(RuntimeError, match="update"):
        no_update(fg.tensor(X))
    assert scaler._per_optimizer == {}

    class Holder:  # not a stateful object: the scaler inside is not threaded
        pass

    holder = Holder()
    holder.scaler = scaler

    @fg.compile
    def hidden(x):
        holder.scaler.step(opt, holder.scaler.scale(layer(x).sum()).backward())
        holder.scaler.update()

    with pytest.raises(RuntimeError, match="Pass the scaler"):
        hidden(fg.tensor(X))

    step = fg.compile(_step_of(layer, opt, scaler))
    step(fg.tensor(X), fg.tensor(1.0, dtype=fg.float64))
    scaler.update(new_scale=4.0)  # set eagerly between calls: the next call reads it
    step(fg.tensor(X), fg.tensor(np.inf, dtype=fg.float64))
    assert scaler.get_scale() == 1.0
