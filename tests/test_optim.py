"""Optimizers: trajectories against PyTorch (20 steps, float64) and against NumPy transcriptions of the
published update rules; groups, skipped parameters, tied weights, immutability, state dicts, habits."""
import math

import jax
import numpy as np
import pytest

import fgraph as fg
import fgraph.nn.functional as F
from fgraph import nn, optim
from fgraph.nn.parameter import current, owners

STEPS = 20

# (name, fgraph class, torch class name, options)
CONFIGS = [
    ("sgd", optim.SGD, "SGD", dict(lr=0.1)),
    ("sgd-momentum", optim.SGD, "SGD", dict(lr=0.05, momentum=0.9)),
    ("sgd-dampening-decay", optim.SGD, "SGD", dict(lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.01)),
    ("sgd-nesterov-maximize", optim.SGD, "SGD", dict(lr=0.005, momentum=0.9, nesterov=True, maximize=True)),
    ("adam", optim.Adam, "Adam", dict(lr=0.05)),
    ("adam-amsgrad-decay", optim.Adam, "Adam", dict(lr=0.05, betas=(0.8, 0.95), amsgrad=True, weight_decay=0.1)),
    ("adam-maximize", optim.Adam, "Adam", dict(lr=0.02, eps=1e-6, maximize=True)),
    ("adamw", optim.AdamW, "AdamW", dict(lr=0.05)),
    ("adamw-amsgrad", optim.AdamW, "AdamW", dict(lr=0.05, weight_decay=0.3, amsgrad=True)),
    ("rmsprop", optim.RMSprop, "RMSprop", dict(lr=0.01)),
    ("rmsprop-centered-momentum", optim.RMSprop, "RMSprop",
     dict(lr=0.01, alpha=0.9, centered=True, momentum=0.5, weight_decay=0.05)),
    ("rmsprop-momentum", optim.RMSprop, "RMSprop", dict(lr=0.01, momentum=0.9)),
    ("adagrad", optim.Adagrad, "Adagrad", dict(lr=0.1)),
    ("adagrad-decay", optim.Adagrad, "Adagrad",
     dict(lr=0.1, lr_decay=0.05, weight_decay=0.02, initial_accumulator_value=0.1)),
]
IDS = [c[0] for c in CONFIGS]


def _data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((8, 3)), rng.standard_normal((8, 2))


def _fg_model():
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()


def _fg_trajectory(cls, options, model, steps=STEPS, opt=None):
    x, y = (fg.tensor(a) for a in _data())
    opt = opt or cls(model.parameters(), **options)
    path = []
    for _ in range(steps):
        loss = ((model(x) - y) ** 2).mean()
        opt.step(loss.backward())
        path.append([p.numpy().copy() for p in model.parameters()])
    return path, opt


@pytest.mark.parametrize("name,cls,torch_name,options", CONFIGS, ids=IDS)
def test_trajectory_matches_torch(name, cls, torch_name, options):
    torch = pytest.importorskip("torch")
    twin = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)).double()
    model = _fg_model()
    model.load_state_dict(twin.state_dict())
    path, opt = _fg_trajectory(cls, options, model)
    topt = getattr(torch.optim, torch_name)(twin.parameters(), **options)
    x, y = (torch.tensor(a) for a in _data())
    for step in range(STEPS):
        topt.zero_grad()
        torch.nn.functional.mse_loss(twin(x), y).backward()
        topt.step()
        for ours, theirs in zip(path[step], twin.parameters()):
            np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=1e-9, atol=1e-12,
                                       err_msg=f"{name}: step {step + 1}")
    ours_sd, theirs_sd = opt.state_dict(), topt.state_dict()
    assert ours_sd["param_groups"] == theirs_sd["param_groups"]
    assert list(ours_sd["state"]) == list(theirs_sd["state"])
    for index, entry in theirs_sd["state"].items():
        assert list(ours_sd["state"][index]) == list(entry)
        for key, value in entry.items():
            mine = ours_sd["state"][index][key]
            if value is None:
                assert mine is None
            else:
                np.testing.assert_allclose(mine.numpy(), value.numpy(), rtol=1e-9, atol=1e-12)


# -- NumPy transcriptions of the update rules (independent of torch and of fgraph's kernels) -----------
def np_sgd(p, g, s, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False):
    d = -g if maximize else g
    d = d + weight_decay * p
    if momentum:
        s["buf"] = d.copy() if "buf" not in s else momentum * s["buf"] + (1 - dampening) * d
        d = d + momentum * s["buf"] if nesterov else s["buf"]
    return p - lr * d


def np_adam(p, g, s, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, maximize=False,
            decoupled=False):
    b1, b2 = betas
    g = -g if maximize else g
    if decoupled:
        p = p * (1 - lr * weight_decay)
    else:
        g = g + weight_decay * p
    t = s["t"] = s.get("t", 0) + 1
    m = s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
    v = s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
    if amsgrad:
        v = s["vmax"] = np.maximum(s.get("vmax", 0.0), v)
    m_hat, v_hat = m / (1 - b1**t), v / (1 - b2**t)
    return p - lr * m_hat / (np.sqrt(v_hat) + eps)


def np_adamw(p, g, s, lr, weight_decay=1e-2, **kw):
    return np_adam(p, g, s, lr, weight_decay=weight_decay, decoupled=True, **kw)


def np_rmsprop(p, g, s, lr, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False):
    g = g + weight_decay * p
    v = s["v"] = alpha * s.get("v", 0.0) + (1 - alpha) * g * g
    if centered:
        m = s["m"] = alpha * s.get("m", 0.0) + (1 - alpha) * g
        v = v - m * m
    step = g / (np.sqrt(v) + eps)
    if momentum:
        step = s["buf"] = momentum * s.get("buf", 0.0) + step
    return p - lr * step


def np_adagrad(p, g, s, lr, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10):
    g = g + weight_decay * p
    t = s["t"] = s.get("t", 0) + 1
    total = s["sum"] = s.get("sum", initial_accumulator_value) + g * g
    return p - lr / (1 + (t - 1) * lr_decay) * g / (np.sqrt(total) + eps)


NUMPY = {"SGD": np_sgd, "Adam": np_adam, "AdamW": np_adamw, "RMSprop": np_rmsprop, "Adagrad": np_adagrad}


@pytest.mark.parametrize("name,cls,torch_name,options", CONFIGS, ids=IDS)
def test_trajectory_matches_numpy_transcription(name, cls, torch_name, options):
    # f(w) = sum(c * w^4 / 4 - w): gradient c * w^3 - 1, known in closed form.
    # With maximize=True the optimizer ascends -f, which is the same descent.
    c = np.array([0.5, 1.0, 2.0, 3.0])
    w0 = np.array([1.5, -0.5, 0.3, -1.2])
    sign = -1.0 if options.get("maximize") else 1.0
    w = nn.Parameter(fg.tensor(w0))
    opt = cls([w], **options)
    reference, state = w0.copy(), {}
    for step in range(STEPS):
        w = opt.param_groups[0]["params"][0]
        loss = sign * (fg.tensor(c) * w**4 / 4 - w).sum()
        opt.step(fg.backward(loss))
        reference = NUMPY[torch_name](reference, sign * (c * reference**3 - 1), state, **options)
        np.testing.assert_allclose(opt.param_groups[0]["params"][0].numpy(), reference, rtol=1e-10, atol=1e-12,
                                   err_msg=f"{name}: step {step + 1}")


def test_groups_have_their_own_options_and_missing_gradients_are_skipped():
    model = _fg_model()
    first, second = model[0], model[2]
    opt = optim.SGD([{"params": first.parameters()}, {"params": second.parameters(), "lr": 0.0}], lr=0.1,
                    momentum=0.9)
    before = [p.numpy().copy() for p in model.parameters()]
    x = fg.tensor(_data()[0])
    grads = fg.backward(model(x).sum(), inputs=[first.weight, second.weight])  # no bias gradients
    opt.step(grads)
    after = [p.numpy() for p in model.parameters()]
    assert not np.allclose(after[0], before[0])  # first.weight moved
    np.testing.assert_array_equal(after[1], before[1])  # first.bias: no gradient, untouched
    np.testing.assert_array_equal(after[2], before[2])  # second group: lr 0
    assert first.bias not in opt.state and first.weight in opt.state  # skipped: no state either
    assert opt.param_groups[1]["lr"] == 0.0 and opt.param_groups[0]["momentum"] == 0.9


def test_tied_weights_stay_tied_and_old_records_do_not_change():
    a, b = nn.Linear(3, 3).double(), nn.Linear(3, 3).double()
    b.weight = a.weight
    model = nn.Sequential(a, nn.Tanh(), b)
    opt = optim.Adam(model.parameters(), lr=0.1)
    assert len(opt.param_groups[0]["params"]) == 3  # the tied weight once
    old = a.weight
    old_values = old.numpy().copy()
    for _ in range(3):
        opt.step(model(fg.ones(2, 3, dtype=fg.float64)).sum().backward())
    assert a.weight is b.weight and a.weight is not old
    np.testing.assert_array_equal(old.numpy(), old_values)
    assert set(map(id, opt.parameters())) == set(map(id, model.parameters()))


def test_a_step_moves_every_slot_of_a_parameter_and_only_those():
    """The step's new Parameters take over exactly the module slots that held the old ones (owners,
    lineage, requires_grad), as ``rebind`` does; a slot that was given another tensor keeps it."""
    a, b, c = nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2)
    b.weight = a.weight
    opt = optim.SGD([a.weight, a.bias, c.weight], lr=0.5)
    c.weight = nn.Parameter(fg.zeros(2, 2))  # c's slot no longer holds the optimizer's parameter
    old_weight, old_c, c_now = a.weight, opt.param_groups[0]["params"][2], c.weight
    opt.step([fg.ones(2, 2), fg.ones(2), fg.ones(2, 2)])
    new = a.weight
    assert new is b.weight and new is not old_weight and new.requires_grad and isinstance(new, nn.Parameter)
    assert sorted((m is a, m is b, n) for m, n in owners(new)) == [(False, True, "weight"), (True, False, "weight")]
    assert owners(old_weight) == [] and current(old_weight) is new
    np.testing.assert_allclose(new.numpy(), old_weight.numpy() - 0.5)
    assert c.weight is c_now and opt.param_groups[0]["params"][2] is not old_c and owners(c_now) != []
    assert current(c_now) is c_now

def test_state_dict_round_trip_through_fg_save_resumes_the_same_trajectory(tmp_path):
    fg.manual_seed(0)
    model = _fg_model()
    start = model.state_dict()
    path, opt = _fg_trajectory(optim.Adam, dict(lr=0.05, amsgrad=True), model, steps=10)
    fg.manual_seed(0)
    resumed = _fg_model()
    resumed.load_state_dict(start)
    _, first = _fg_trajectory(optim.Adam, dict(lr=0.05, amsgrad=True), resumed, steps=5)
    fg.save(first.state_dict(), tmp_path / "opt.safetensors")
    fg.save(resumed.state_dict(), tmp_path / "model.safetensors")
    fresh_model = _fg_model()
    fresh_model.load_state_dict(fg.load(tmp_path / "model.safetensors"))
    fresh_opt = optim.Adam(fresh_model.parameters(), lr=0.5)
    fresh_opt.load_state_dict(fg.load(tmp_path / "opt.safetensors"))
    assert fresh_opt.param_groups[0]["lr"] == 0.05 and fresh_opt.param_groups[0]["betas"] == (0.9, 0.999)
    rest, _ = _fg_trajectory(None, None, fresh_model, steps=5, opt=fresh_opt)
    for ours, expected in zip(rest[-1], path[-1]):
        np.testing.assert_allclose(ours, expected, rtol=1e-12)


def test_torch_state_dict_loads_and_continues_like_torch():
    torch = pytest.importorskip("torch")
    twin = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)).double()
    topt = torch.optim.RMSprop(twin.parameters(), lr=0.01, centered=True, momentum=0.5)
    x, y = (torch.tensor(a) for a in _data())
    for _ in range(3):
        topt.zero_grad()
        torch.nn.functional.mse_loss(twin(x), y).backward()
        topt.step()
    model = _fg_model()
    model.load_state_dict(twin.state_dict())
    opt = optim.RMSprop(model.parameters())
    opt.load_state_dict(topt.state_dict())
    path, _ = _fg_trajectory(None, None, model, steps=4, opt=opt)
    for _ in range(4):
        topt.zero_grad()
        torch.nn.functional.mse_loss(twin(x), y).backward()
        topt.step()
    for ours, theirs in zip(path[-1], twin.parameters()):
        np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=1e-9)


@pytest.mark.eager_dispatch
def test_one_kernel_per_group_and_no_recompile_when_lr_changes():
    model = _fg_model()
    opt = optim.Adam(model.parameters(), lr=0.1)
    x = fg.tensor(_data()[0])
    sizes = []
    for step in range(6):
        opt.param_groups[0]["lr"] = 0.1 / (step + 1)  # what a scheduler does
        opt.step(model(x).sum().backward())
        (kernel,) = opt._kernels.values()
        sizes.append(kernel._cache_size())
    # Parameters and first states are committed to their device when made, like the kernel's own
    # outputs, so the first step's compile serves every later step, whatever the learning rate.
    assert sizes == [1] * 6


def test_a_steady_step_copies_no_option_to_the_device_and_a_new_value_is_used():
    # The step's kernel takes the group's numbers (lr, betas, eps...): passed as Python numbers, jit
    # would copy each from the host on every step (a synchronous transfer each on a GPU).
    model = _fg_model()
    opt = optim.Adam(model.parameters(), lr=0.1)
    x = fg.tensor(_data()[0])
    for _ in range(2):
        opt.step(model(x).sum().backward())
    with jax.transfer_guard_host_to_device("disallow"):
        for _ in range(2):
            opt.step(model(x).sum().backward())
    before = [p.numpy() for p in model.parameters()]
    opt.param_groups[0]["lr"] = 0.0  # a new number object: copied once and used, not the old array
    opt.step(model(x).sum().backward())
    for a, p in zip(before, model.parameters()):
        np.testing.assert_array_equal(p.numpy(), a)


@pytest.mark.eager_dispatch
def test_a_training_step_compiles_nothing_after_the_first_steps():
    # Host-made module arrays are committed (nn.parameter.placed) like kernel outputs; otherwise every
    # forward and backward kernel compiled again at the second step. The engine's fusion compiles
    # a repeated backward graph at its second sighting; after that a step compiles nothing.
    import logging

    compiled = []

    class Count(logging.Handler):
        def emit(self, record):
            if record.getMessage().startswith("Compiling"):
                compiled.append(record.getMessage())

    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    opt = optim.Adam(model.parameters(), lr=0.1)
    x, y = fg.randn(5, 4), fg.tensor([0, 1, 2, 0, 1])
    logger, handler = logging.getLogger("jax"), Count()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        with jax.log_compiles(True):
            per_step = []
            for _ in range(4):
                compiled.clear()
                opt.step(F.cross_entropy(model(x), y).backward())
                fg.autograd.fusion.wait_for_compiles()  # the fused backward compiles in the background
                per_step.append(len(compiled))
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert per_step[2:] == [0, 0], per_step
    assert per_step[1] <= 1, compiled  # at most the fused backward program


def test_sequence_of_gradients_and_closure():
    model = _fg_model()
    opt = optim.SGD(model.parameters(), lr=0.1)
    x, y = (fg.tensor(a) for a in _data())
    params = opt.parameters()
    loss = ((model(x) - y) ** 2).mean()
    expected = [p - 0.1 * g for p, g in zip(params, fg.grad(loss, params))]
    opt.step(fg.grad(loss, params))
    for p, e in zip(model.parameters(), expected):
        np.testing.assert_allclose(p.numpy(), e.numpy(), rtol=1e-12)
    value = opt.step(closure=lambda: ((model(x) - y) ** 2).mean())
    assert isinstance(value, fg.Tensor) and math.isfinite(value.item())


def test_pytorch_habits_point_to_the_fgraph_way():
    opt = optim.SGD(_fg_model().parameters(), lr=0.1)
    with pytest.raises(RuntimeError, match=r"opt.step\(grads\)"):
        opt.zero_grad()
    with pytest.raises(TypeError, match=r"grads = loss.backward\(\); opt.step\(grads\)"):
        opt.step()


def test_argument_errors():
    params = list(_fg_model().parameters())
    with pytest.raises(ValueError, match="invalid learning rate"):
        optim.SGD(params, lr=-1.0)
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD(params, lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="beta parameter at index 1"):
        optim.Adam(params, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": params}, {"params": params[:1]}], lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.Adam([])
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([params[0] * 2], lr=0.1)
    opt = optim.SGD(params, lr=0.1)
    with pytest.raises(ValueError, match="got 1 gradients for 4 parameters"):
        opt.step([fg.zeros(1)])
    with pytest.raises(ValueError, match="has shape"):
        opt.step({params[0]: fg.zeros(7)})


def test_parameters_rebound_after_the_optimizer_was_built_are_followed():
    model = _fg_model()
    opt = optim.Adam(model.parameters(), lr=0.1)
    x = fg.tensor(_data()[0])
    opt.step(model(x).sum().backward())
    model.load_state_dict(_fg_model().state_dict())  # rebinds every parameter of the model
    nn.init.zeros_(model[0].bias)
    loaded = [p.numpy().copy() for p in model.parameters()]
    opt.step(model(x).sum().backward())  # the gradients are keyed by the model's current parameters
    assert all(not np.array_equal(p.numpy(), q) for p, q in zip(model.parameters(), loaded))
    assert set(map(id, opt.parameters())) == set(map(id, model.parameters()))
    assert all(int(opt.state[p]["step"].item()) == 2 for p in model.parameters())  # the state followed
    model.requires_grad_(False)
    frozen = [p.numpy().copy() for p in model.parameters()]
    grads = fg.backward((model(x) * fg.tensor(2.0, requires_grad=True)).sum())
    opt.step(grads)  # frozen: no gradients for them, nothing moves
    assert all(np.array_equal(p.numpy(), q) for p, q in zip(model.parameters(), frozen))


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_holding_an_old_parameter_keeps_no_later_one_alive(compiled):
    """Each step rebinds the parameters; an old Parameter a user holds (``params = list(model.parameters())``
    before training) still finds the newest through ``current``, but must not keep every Parameter made
    since alive (that grew memory by the model's size at each step)."""
    import gc
    import weakref

    model = fg.nn.Linear(4, 3)
    held = list(model.parameters())
    opt = fg.optim.Adam(model.parameters(), lr=1e-2)
    x = fg.randn(5, 4)

    def train_step(model, opt, x):
        loss = model(x).pow(2).mean()
        opt.step(loss.backward())
        return loss

    step = fg.compile(train_step) if compiled else train_step
    for _ in range(3):
        step(model, opt, x)
    middle = weakref.ref(model.weight)
    for _ in range(3):
        step(model, opt, x)
    gc.collect()
    assert middle() is None, "an intermediate Parameter is still alive"
    assert fg.nn.parameter.current(held[0]) is model.weight
    assert opt.param_groups[0]["params"][0] is model.weight
