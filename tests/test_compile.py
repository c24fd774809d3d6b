"""fgraph.compile: a compiled step equals the eager step, writes state back, retraces only when it must."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import fgraph as fg
import fgraph.nn.functional as F
from fgraph._kernel_jit import only_device
from fgraph.compile import CompileError

RNG = np.random.default_rng(0)


def _mlp():
    fg.manual_seed(0)
    model = fg.nn.Sequential(fg.nn.Linear(5, 8), fg.nn.Tanh(), fg.nn.Linear(8, 3)).double()
    opt = fg.optim.Adam(model.parameters(), lr=1e-2)
    return model, opt, fg.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)


def _train_step(model, opt, x, y):
    loss = F.cross_entropy(model(x), y)
    opt.step(loss.backward())
    return loss


def _max_state_gap(a: dict, b: dict) -> float:
    return max(float(np.max(np.abs(a[k].numpy() - b[k].numpy()))) for k in a)


def _run(step, model, opt, sched, batches):
    losses = []
    for x, y in batches:
        losses.append(step(model, opt, x, y).item())
        sched.step()
    return np.array(losses)


def _batches(n, shape=(6, 5), classes=3):
    return [(fg.tensor(RNG.normal(size=shape)), fg.tensor(RNG.integers(0, classes, size=shape[0]))) for _ in range(n)]


def test_mlp_adam_scheduler_50_steps_match_eager():
    batches = _batches(50)
    eager = _mlp()
    compiled = _mlp()
    step = fg.compile(_train_step)
    a = _run(_train_step, *eager, batches)
    b = _run(step, *compiled, batches)
    np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)
    assert _max_state_gap(eager[0].state_dict(), compiled[0].state_dict()) < 1e-9
    sa, sb = eager[1].state_dict(), compiled[1].state_dict()
    assert sa["param_groups"][0]["lr"] == sb["param_groups"][0]["lr"] == 1e-2 * 0.5 ** 5
    for i in sa["state"]:
        assert _max_state_gap(sa["state"][i], sb["state"][i]) < 1e-9
    # One trace: Adam's first state is made before it (it used to retrace at the second step), and the
    # scheduler's new lr retraces nothing.
    assert step.traces == 1 and step.retrace_reasons == []


def _dropout_mlp():
    fg.manual_seed(0)
    model = fg.nn.Sequential(fg.nn.Linear(5, 8), fg.nn.Dropout(0.3), fg.nn.Tanh(), fg.nn.Linear(8, 3)).double()
    return model, fg.optim.Adam(model.parameters(), lr=1e-2)


def _double_output(module, args, output):
    return output * 2


def test_changes_between_calls_are_seen_like_eager():
    """A compiled step reuses its previous call's capture only while nothing about the objects' structure
    changed: every change made between calls below must act exactly as in the eager twin."""
    other = _dropout_mlp()[0].state_dict()
    handles = {}

    def change(model, opt, i):
        if i == 3:
            model.load_state_dict(other)  # rebinds every parameter; the optimizer follows
        elif i == 4:
            model.eval()
        elif i == 5:
            model.train()
        elif i == 6:
            handles[id(model)] = model[2].register_forward_hook(_double_output)
        elif i == 7:
            handles.pop(id(model)).remove()
        elif i == 8:
            opt.param_groups[0]["lr"] = 0.05
        elif i == 9:
            opt.param_groups[0]["betas"] = (0.8, 0.99)
        elif i == 10:
            model[2] = fg.nn.ReLU()
        elif i == 11:
            model[0].bias = fg.nn.Parameter(fg.zeros(8, dtype=fg.float64))
        elif i == 12:
            fg.manual_seed(7)

    batches = _batches(14)
    runs = []
    for step in (_train_step, fg.compile(_train_step)):
        model, opt = _dropout_mlp()
        losses = []
        for i, (x, y) in enumerate(batches):
            change(model, opt, i)
            losses.append(step(model, opt, x, y).item())
        runs.append((np.array(losses), model.state_dict()))
    (a, state_a), (b, state_b) = runs
    np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)
    assert _max_state_gap(state_a, state_b) < 1e-9


def test_parameters_are_rebound_on_the_module_and_followed_by_the_optimizer():
    model, opt, _ = _mlp()
    before = model[0].weight
    step = fg.compile(_train_step)
    x, y = _batches(1)[0]
    step(model, opt, x, y)
    assert model[0].weight is not before and isinstance(model[0].weight, fg.nn.Parameter)
    assert fg.nn.parameter.current(before) is model[0].weight
    assert opt.param_groups[0]["params"][0] is model[0].weight
    assert set(map(id, opt.state)) == {id(p) for p in model.parameters()}
    assert not isinstance(model[0].weight.array, fg.nn.parameter.jax.core.Tracer)


def test_returned_gradients_are_keyed_by_the_callers_parameters():
    model, opt, _ = _mlp()
    x, y = _batches(1)[0]
    params = list(model.parameters())
    expected = F.cross_entropy(model(x), y).backward()

    @fg.compile
    def grads_of(model, x, y):
        return F.cross_entropy(model(x), y).backward()

    grads = grads_of(model, x, y)
    assert isinstance(grads, fg.Gradients) and len(grads) == len(params)
    for p in params:
        np.testing.assert_allclose(grads[p].numpy(), expected[p].numpy(), rtol=1e-12)


def _cnn(dropout: float):
    fg.manual_seed(3)
    model = fg.nn.Sequential(
        fg.nn.Conv2d(1, 4, 3), fg.nn.BatchNorm2d(4), fg.nn.ReLU(), fg.nn.Dropout(dropout),
        fg.nn.Flatten(), fg.nn.Linear(4 * 6 * 6, 3),
    ).double()
    opt = fg.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return model, opt, fg.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)


@pytest.mark.parametrize("dropout", [0.0, 0.25])
def test_cnn_batchnorm_dropout_matches_eager(dropout):
    batches = _batches(6, shape=(4, 1, 8, 8))
    eager, compiled = _cnn(dropout), _cnn(dropout)
    step = fg.compile(_train_step)
    fg.manual_seed(11)
    a = _run(_train_step, *eager, batches)
    key_after_eager = fg.random.get_rng_state()
    fg.manual_seed(11)
    b = _run(step, *compiled, batches)
    np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(np.asarray(fg.random.get_rng_state()), np.asarray(key_after_eager))
    sa, sb = eager[0].state_dict(), compiled[0].state_dict()
    assert {"1.running_mean", "1.running_var", "1.num_batches_tracked"} <= set(sb)
    assert _max_state_gap(sa, sb) < 1e-9
    assert int(sb["1.num_batches_tracked"].item()) == len(batches)


def test_a_compiled_step_leaves_the_default_stream_uncommitted():
    # Parameters are committed, so the program's outputs are; the generator's key written back must not be,
    # or every later fg.rand(...) would come back committed and refuse to meet arrays on another device.
    model = fg.nn.Linear(2, 2)
    step = fg.compile(lambda x: (model(x) * fg.rand(2)).sum())
    fg.manual_seed(0)
    assert not fg.random.get_rng_state().committed
    first, second = step(fg.ones(2)), step(fg.ones(2))
    assert first.item() != second.item()  # the stream advanced through the program
    assert not fg.random.get_rng_state().committed
    if only_device() is None:  # one device: every op's result is committed to it (fgraph/_kernel_jit.py), harmlessly
        assert not fg.rand(2).array.committed and not fg.rand(2, device="cpu").array.committed
    # with several devices: tests/test_kernel_jit.py (a draw after a compiled step meets an array on device 1)


def test_eval_mode_retraces_once_and_says_why():
    model, opt, _ = _cnn(0.0)
    step = fg.compile(_train_step)
    x, y = _batches(1, shape=(4, 1, 8, 8))[0]
    step(model, opt, x, y)
    step(model, opt, x, y)
    traces = step.traces
    model.eval()
    step(model, opt, x, y)
    step(model, opt, x, y)
    assert step.traces == traces + 1
    assert "training changed: True -> False" in step.retrace_reasons[-1]


def test_new_batch_shape_retraces_once_and_says_why(caplog):
    model, opt, _ = _mlp()
    step = fg.compile(_train_step, explain=True)
    for x, y in _batches(3):
        step(model, opt, x, y)
    traces = step.traces
    with caplog.at_level("WARNING", logger="fgraph.compile"):
        for x, y in _batches(3, shape=(9, 5)):
            step(model, opt, x, y)
    assert step.traces == traces + 1
    reason = step.retrace_reasons[-1]
    assert "argument 2 (x): float64[6, 5] -> float64[9, 5]" in reason and "argument 3 (y)" in reason
    assert reason in caplog.text


def test_static_argument_retraces_on_a_new_value():
    @fg.compile(static_argnums=1)
    def power_sum(x, n):
        return (x ** n).sum()

    x = fg.tensor([1.0, 2.0])
    assert power_sum(x, 2).item() == 5.0 and power_sum(x, 2).item() == 5.0
    assert power_sum(x, 3).item() == 9.0
    assert power_sum.traces == 2 and "static argument 1 (n) changed: 2 -> 3" in power_sum.retrace_reasons[-1]


def test_maml_outer_step_with_create_graph_matches_eager():
    def make():
        fg.manual_seed(5)
        model = fg.nn.Sequential(fg.nn.Linear(1, 16), fg.nn.Tanh(), fg.nn.Linear(16, 1)).double()
        return model, fg.optim.Adam(model.parameters(), lr=1e-3)

    def maml_step(model, opt, xs, ys, xq, yq):
        params = dict(model.named_parameters())
        names = list(params)
        loss = F.mse_loss(fg.func.functional_call(model, params, (xs,)), ys)
        grads = fg.grad(loss, list(params.values()), create_graph=True)
        fast = {n: params[n] - 0.1 * g for n, g in zip(names, grads)}
        outer = F.mse_loss(fg.func.functional_call(model, fast, (xq,)), yq)
        opt.step(outer.backward())
        return outer

    data = [tuple(fg.tensor(RNG.normal(size=(5, 1))) for _ in range(4)) for _ in range(4)]
    eager, compiled = make(), make()
    step = fg.compile(maml_step)
    a = [maml_step(*eager, *d).item() for d in data]
    b = [step(*compiled, *d).item() for d in data]
    np.testing.assert_allclose(b, a, rtol=1e-9)
    assert _max_state_gap(eager[0].state_dict(), compiled[0].state_dict()) < 1e-9


class _ScaledSquare(fg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * g * x  # deliberately not 2x: the compiled step must use this rule


def test_hooks_and_custom_functions_run_inside_the_program():
    calls = []

    def step(w, x):
        w.register_hook(lambda g: g * 10)
        h = _ScaledSquare.apply(w * x)
        h.register_hook(lambda g: calls.append(g.shape) or g)
        return fg.grad(h.sum(), [w])[0]

    w = fg.tensor([1.0, 2.0], requires_grad=True)
    x = fg.tensor([3.0, 4.0])
    expected = step(w, x)
    compiled = fg.compile(step)
    np.testing.assert_allclose(compiled(w, x).numpy(), expected.numpy())
    np.testing.assert_allclose(compiled(w, x).numpy(), 10 * 3 * (w * x * x).numpy())
    assert len(calls) == 2  # the eager call, then the one trace: Python runs when tracing only


def test_checkpointed_block_inside_a_compiled_step():
    from fgraph.autograd.checkpoint import checkpoint

    fg.manual_seed(0)
    block = fg.nn.Sequential(fg.nn.Linear(4, 4), fg.nn.Dropout(0.5), fg.nn.Tanh()).double()

    def step(block, x):
        return fg.grad(checkpoint(block, x, use_reentrant=False).sum(), [block[0].weight])[0]

    x = fg.tensor(RNG.normal(size=(3, 4)))
    fg.manual_seed(2)
    a = step(block, x)
    fg.manual_seed(2)
    b = fg.compile(step)(block, x)
    np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-12)


def test_objects_reached_through_globals_are_threaded():
    model, opt, _ = _mlp()
    x, y = _batches(1)[0]
    globals()["_GLOBAL_MODEL"], globals()["_GLOBAL_OPT"] = model, opt

    def step(x, y):
        return _train_step(_GLOBAL_MODEL, _GLOBAL_OPT, x, y)  # noqa: F821

    compiled = fg.compile(step)
    first = compiled(x, y).item()
    second = compiled(x, y).item()
    assert second < first and compiled.traces == 1
    del globals()["_GLOBAL_MODEL"], globals()["_GLOBAL_OPT"]


@pytest.mark.parametrize("body, what", [
    ("if loss > 0:\n        loss = loss * 2", "if"),
    ("print(loss.item())", ".item()"),
    ("loss = x[x > 0].sum()", "mask"),
])
def test_value_dependent_python_names_the_line(body, what):
    source = f"def step(x):\n    loss = (x * x).sum()\n    {body}\n    return loss\n"
    scope: dict = {}
    exec(compile(source, "<my_step>", "exec"), scope)
    import linecache

    linecache.cache["<my_step>"] = (len(source), None, source.splitlines(True), "<my_step>")
    with pytest.raises(CompileError) as info:
        fg.compile(scope["step"])(fg.tensor([1.0, -2.0]))
    message = str(info.value)
    assert "<my_step>:3" in message and body.splitlines()[0].strip() in message
    assert what in message or (what == "mask" and "boolean-mask" in message)


def test_changing_the_learning_rate_inside_is_refused():
    model, opt, sched = _mlp()

    def step(model, opt, x, y):
        loss = _train_step(model, opt, x, y)
        sched.step()
        return loss

    with pytest.raises(RuntimeError, match="scheduler.step"):
        fg.compile(step)(model, opt, *_batches(1)[0])
    assert opt.param_groups[0]["lr"] == 1e-2 and not opt.state  # nothing half-written


def test_a_failed_trace_leaves_the_objects_as_they_were():
    model, opt, _ = _mlp()
    params = list(model.parameters())

    def step(model, opt, x, y):
        _train_step(model, opt, x, y)
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        fg.compile(step)(model, opt, *_batches(1)[0])
    assert list(model.parameters()) == params and all(a is b for a, b in zip(model.parameters(), params))
    assert opt.param_groups[0]["params"][0] is params[0] and not opt.state


def _eager_then_compiled_agree(batches, before_step, around_step=None) -> None:
    """Train ``_mlp`` on ``batches`` eagerly, then with ``fg.compile``: the same losses and final state.
    ``before_step(i, model, opt)`` runs before step ``i``; ``around_step(i, compiled)`` (optional) gives a
    context manager the step runs in."""
    runs = []
    for step in (_train_step, fg.compile(_train_step)):
        model, opt, _ = _mlp()
        losses = []
        for i, (x, y) in enumerate(batches):
            before_step(i, model, opt)
            if around_step is None:
                losses.append(step(model, opt, x, y))
            else:
                with around_step(i, step is not _train_step):
                    losses.append(step(model, opt, x, y))
        runs.append((np.array([loss.item() for loss in losses]), model.state_dict()))
    (a, state_a), (b, state_b) = runs
    np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)
    assert _max_state_gap(state_a, state_b) < 1e-9


def test_a_steady_step_copies_no_python_number_to_the_device():
    """jit copies every Python number argument (the learning rate, Adam's betas and eps) from the host
    on every call, a synchronous transfer each on a GPU: a steady step passes device arrays made once.
    A new number (the learning rate changed between calls) is copied once and used, as in eager."""
    import jax

    def new_lr(i, model, opt):
        if i == 5:
            opt.param_groups[0]["lr"] = 3e-2

    def no_copies_when_steady(i, compiled):
        return jax.transfer_guard_host_to_device("disallow" if compiled and i in (3, 4, 6, 7) else "allow")

    _eager_then_compiled_agree(_batches(8), new_lr, no_copies_when_steady)


def test_a_steady_step_reuses_the_inputs_its_write_back_left(monkeypatch):
    """After a step that kept the structure, the next call takes the program inputs the write-back left
    (worked out while the program ran) instead of working them out again; a value put into a slot
    behind the module's back in between is still seen, exactly as in eager."""
    compiled_module = sys.modules["fgraph.compile._compiled"]
    worked_out = []
    real_distinct = compiled_module.distinct
    monkeypatch.setattr(compiled_module, "distinct", lambda values: worked_out.append(1) or real_distinct(values))

    def write_behind_the_modules_back(i, model, opt):
        if i == 5:  # a direct write into the parameter table (no setattr, no rebind: the optimizer keeps the old)
            model[2]._parameters["bias"] = fg.nn.Parameter(fg.zeros(3, dtype=fg.float64))
        if i == 6:  # the same, with a frozen parameter: a new program (no gradient for it)
            model[0]._parameters["weight"] = fg.nn.Parameter(model[0].weight.detach(), requires_grad=False)

    _eager_then_compiled_agree(_batches(8), write_behind_the_modules_back)
    assert len(worked_out) == 1  # only at step 5 (step 6 holds a new kind of value: a new program)


def test_the_first_step_is_traced_once_and_a_parameter_without_gradient_keeps_no_state():
    # The optimizer's first state is made before the trace (it used to be made inside it, so the second call
    # retraced); a parameter that gets no gradient must still have no state afterwards, as in torch.
    model = fg.nn.ModuleDict({"used": fg.nn.Linear(4, 3), "unused": fg.nn.Linear(4, 3)})
    opt = fg.optim.Adam(model.parameters(), lr=1e-2)

    @fg.compile
    def step(model, opt, x):
        loss = model["used"](x).pow(2).sum()
        opt.step(loss.backward())
        return loss

    losses = [step(model, opt, fg.ones(2, 4)).item() for _ in range(3)]
    assert step.traces == 1 and losses[2] < losses[0]
    assert set(map(id, opt.state)) == {id(model["used"].weight), id(model["used"].bias)}
    assert all(int(s["step"].item()) == 3 for s in opt.state.values())
