"""Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop: 20-step trajectories against PyTorch (float64, with a
scheduler) and against NumPy transcriptions of the update rules; state dicts (fg.save round trip,
PyTorch's loading); argument errors, signatures and defaults against PyTorch's; the public interface
for writing an optimizer, with docs/optim.md's example run eagerly and inside fg.compile."""
import functools
import inspect
import re
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
from fgraph import nn, optim
from fgraph.optim.lr_scheduler import StepLR

STEPS = 20
NAMES = ["Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop"]

# (id, class name, options): each optimizer's main option combinations. Every trajectory runs under a
# StepLR halving the learning rate every 7 steps.
CONFIGS = [
    ("adadelta", "Adadelta", dict(lr=1.0)),
    ("adadelta-decay-maximize", "Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1, maximize=True)),
    ("adamax", "Adamax", dict(lr=0.05)),
    ("adamax-decay-maximize", "Adamax", dict(lr=0.05, betas=(0.8, 0.95), weight_decay=0.1, maximize=True)),
    ("nadam", "NAdam", dict(lr=0.05, weight_decay=0.1, momentum_decay=0.01)),
    ("nadam-decoupled-maximize", "NAdam",
     dict(lr=0.05, betas=(0.8, 0.99), weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("radam", "RAdam", dict(lr=0.05, betas=(0.9, 0.99), eps=1e-6, weight_decay=0.1)),  # rectified from step 6
    ("radam-decoupled-maximize", "RAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True,
                                               maximize=True)),
    ("asgd", "ASGD", dict(lr=0.05)),
    ("asgd-averaging-decay-maximize", "ASGD",
     dict(lr=0.05, lambd=0.01, alpha=0.5, t0=5.0, weight_decay=0.05, maximize=True)),
    ("rprop", "Rprop", dict(lr=0.05)),
    ("rprop-options-maximize", "Rprop", dict(lr=0.1, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2), maximize=True)),
]
IDS = [c[0] for c in CONFIGS]
SCHEDULE = dict(step_size=7, gamma=0.5)


def _scheduled_lr(options, step):
    return options["lr"] * SCHEDULE["gamma"] ** (step // SCHEDULE["step_size"])

# f(W, v) = sum(c * w^4 / 4 - b * w) over both parameters: gradient c * w^3 - b, in closed form, so both
# libraries are fed the same gradient function of their own parameters (it overshoots and oscillates at
# these learning rates, which exercises Rprop's sign changes).
START = (np.array([[1.5, -0.5, 0.3], [-1.2, 0.8, 2.0]]), np.array([0.7, -1.1, 0.2]))
C = (np.array([[0.5, 1.0, 2.0], [3.0, 0.5, 1.0]]), np.array([1.0, 2.0, 0.5]))
B = (np.array([[1.0, -0.5, 0.2], [0.0, 1.0, -1.0]]), np.array([0.3, 0.0, -0.4]))


def _gradients(values, sign=1.0):
    return [sign * (c * w**3 - b) for w, c, b in zip(values, C, B)]


def _sign(options):
    # With maximize=True the optimizer ascends -f, which is the same descent.
    return -1.0 if options.get("maximize") else 1.0


def _fg_params():
    return [nn.Parameter(fg.tensor(w)) for w in START]


def _fg_run(opt, steps, sign=1.0, sched=None):
    path = []
    for _ in range(steps):
        params = opt.param_groups[0]["params"]
        grads = _gradients([p.numpy() for p in params], sign)
        opt.step([fg.tensor(g) for g in grads])
        if sched is not None:
            sched.step()
        path.append([p.numpy().copy() for p in opt.param_groups[0]["params"]])
    return path


def _torch_run(torch, topt, params, steps, sign=1.0, sched=None):
    path = []
    for _ in range(steps):
        for p, g in zip(params, _gradients([p.detach().numpy() for p in params], sign)):
            p.grad = torch.tensor(g)
        topt.step()
        if sched is not None:
            sched.step()
        path.append([p.detach().numpy().copy() for p in params])
    return path


def _torch_params(torch):
    return [torch.nn.Parameter(torch.tensor(w)) for w in START]


def _assert_state_dicts_equal(ours, theirs):
    assert ours["param_groups"] == theirs["param_groups"]
    assert list(ours["state"]) == list(theirs["state"])
    for index, entry in theirs["state"].items():
        assert list(ours["state"][index]) == list(entry)
        for key, value in entry.items():
            mine = ours["state"][index][key]
            assert str(mine.dtype) == str(value.dtype).removeprefix("torch."), key
            np.testing.assert_allclose(mine.numpy(), value.numpy(), rtol=1e-9, atol=1e-12, err_msg=key)


@functools.lru_cache(maxsize=None)
def _fg_trajectory(name):
    """fgraph's 20 steps for a config, made once for both the torch and the NumPy comparison (compiling
    each optimizer's kernel is most of the time). The optimizer is returned for reading only."""
    _, kind, options = CONFIGS[IDS.index(name)]
    opt = getattr(optim, kind)(_fg_params(), **options)
    return _fg_run(opt, STEPS, _sign(options), StepLR(opt, **SCHEDULE)), opt


@pytest.mark.parametrize("name,kind,options", CONFIGS, ids=IDS)
def test_trajectory_state_and_scheduler_match_torch(name, kind, options):
    torch = pytest.importorskip("torch")
    path, opt = _fg_trajectory(name)
    params = _torch_params(torch)
    topt = getattr(torch.optim, kind)(params, **options)
    expected = _torch_run(torch, topt, params, STEPS, _sign(options),
                          torch.optim.lr_scheduler.StepLR(topt, **SCHEDULE))
    for step, (ours, theirs) in enumerate(zip(path, expected)):
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12, err_msg=f"{name}: step {step + 1}")
    _assert_state_dicts_equal(opt.state_dict(), topt.state_dict())
    # The scheduler's learning rates were traced: one kernel, compiled once.
    assert len(opt._kernels) == 1 and all(k._cache_size() == 1 for k in opt._kernels.values())


# -- NumPy transcriptions of the update rules (independent of torch and of fgraph's kernels) -----------
# PyTorch keeps NAdam's mu_product and ASGD's eta and mu as float32 scalars; the transcriptions round them
# the same way (np.float32), everything else is float64.
def np_adadelta(p, g, s, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, maximize=False):
    g = g + weight_decay * p
    v = s["v"] = rho * s.get("v", 0.0) + (1 - rho) * g**2
    delta = np.sqrt(s.get("u", 0.0) + eps) / np.sqrt(v + eps) * g
    s["u"] = rho * s.get("u", 0.0) + (1 - rho) * delta**2
    return p - lr * delta


def np_adamax(p, g, s, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, maximize=False):
    b1, b2 = betas
    g = g + weight_decay * p
    t = s["t"] = s.get("t", 0) + 1
    m = s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
    u = s["u"] = np.maximum(b2 * s.get("u", 0.0), np.abs(g) + eps)
    return p - lr / (1 - b1**t) * m / u


def np_nadam(p, g, s, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, momentum_decay=4e-3,
             decoupled_weight_decay=False, maximize=False):
    b1, b2 = betas
    if decoupled_weight_decay:
        p = p * (1 - lr * weight_decay)
    else:
        g = g + weight_decay * p
    t = s["t"] = s.get("t", 0) + 1
    mu_t = b1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
    mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
    product = s["product"] = np.float32(s.get("product", np.float32(1.0)) * np.float32(mu_t))
    m = s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
    v = s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
    denom = np.sqrt(v / (1 - b2**t)) + eps
    product = float(product)
    return p - lr * (1 - mu_t) / (1 - product) * g / denom - lr * mu_next / (1 - product * mu_next) * m / denom


def np_radam(p, g, s, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled_weight_decay=False,
             maximize=False):
    b1, b2 = betas
    if decoupled_weight_decay:
        p = p * (1 - lr * weight_decay)
    else:
        g = g + weight_decay * p
    t = s["t"] = s.get("t", 0) + 1
    m = s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
    v = s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
    m_hat = m / (1 - b1**t)
    rho_inf = 2 / (1 - b2) - 1
    rho_t = rho_inf - 2 * t * b2**t / (1 - b2**t)
    if rho_t <= 5:
        return p - lr * m_hat
    r_t = np.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
    return p - lr * m_hat * np.sqrt(1 - b2**t) / (np.sqrt(v) + eps) * r_t


def np_asgd(p, g, s, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0.0, maximize=False):
    g = g + weight_decay * p
    eta, mu = float(s.get("eta", np.float32(lr))), float(s.get("mu", np.float32(1.0)))
    t = s["t"] = s.get("t", 0) + 1
    p = p * (1 - lambd * eta) - eta * g
    s["ax"] = p.copy() if mu == 1 else s["ax"] + mu * (p - s["ax"])
    s["eta"] = np.float32(lr / (1 + lambd * lr * t) ** alpha)
    s["mu"] = np.float32(1 / max(1.0, t - t0))
    return p


def np_rprop(p, g, s, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False):
    prev = s.get("prev", np.zeros_like(p))
    size = s.get("size", np.full_like(p, lr))
    same, flipped = g * prev > 0, g * prev < 0
    size = s["size"] = np.clip(np.where(same, size * etas[1], np.where(flipped, size * etas[0], size)),
                               *step_sizes)
    g = s["prev"] = np.where(flipped, 0.0, g)
    return p - np.sign(g) * size


NUMPY = {"Adadelta": np_adadelta, "Adamax": np_adamax, "NAdam": np_nadam, "RAdam": np_radam, "ASGD": np_asgd,
         "Rprop": np_rprop}


@pytest.mark.parametrize("name,kind,options", CONFIGS, ids=IDS)
def test_trajectory_matches_numpy_transcription(name, kind, options):
    path, opt = _fg_trajectory(name)
    reference, states = [w.copy() for w in START], [{}, {}]
    for step in range(STEPS):
        grads = _gradients(reference)  # what the optimizer descends along (maximize negated the ascent one)
        now = dict(options, lr=_scheduled_lr(options, step))
        reference = [NUMPY[kind](p, g, s, **now) for p, g, s in zip(reference, grads, states)]
        for ours, expected in zip(path[step], reference):
            np.testing.assert_allclose(ours, expected, rtol=1e-10, atol=1e-12, err_msg=f"{name}: step {step + 1}")
    if kind == "ASGD":  # the averaged iterate is the point of ASGD
        for p, s in zip(opt.param_groups[0]["params"], states):
            np.testing.assert_allclose(opt.state[p]["ax"].numpy(), s["ax"], rtol=1e-10, atol=1e-12)


# -- state dicts ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["NAdam", "ASGD", "Rprop"])  # float32 scalars; a state made from lr
def test_state_dict_round_trip_through_fg_save_resumes_the_same_trajectory(kind, tmp_path):
    first = getattr(optim, kind)(_fg_params(), lr=0.05)
    _fg_run(first, 4)
    fg.save(first.state_dict(), tmp_path / "opt.safetensors")
    resumed_params = [nn.Parameter(fg.tensor(p.numpy())) for p in first.param_groups[0]["params"]]
    whole = _fg_run(first, 4)  # the uninterrupted run
    resumed = getattr(optim, kind)(resumed_params, lr=0.5)
    resumed.load_state_dict(fg.load(tmp_path / "opt.safetensors"))
    assert resumed.param_groups[0]["lr"] == 0.05
    rest = _fg_run(resumed, 4)
    for ours, expected in zip(rest[-1], whole[-1]):
        np.testing.assert_array_equal(ours, expected)  # the same kernel on the same values
    _assert_state_dicts_equal(resumed.state_dict(), first.state_dict())


@pytest.mark.parametrize("kind", NAMES)
def test_torch_state_dict_loads_and_continues_like_torch(kind):
    torch = pytest.importorskip("torch")
    options = dict(CONFIGS[IDS.index(kind.lower())][2])
    params = _torch_params(torch)
    topt = getattr(torch.optim, kind)(params, **options)
    _torch_run(torch, topt, params, 3)
    opt = getattr(optim, kind)([nn.Parameter(fg.tensor(p.detach().numpy())) for p in params])
    opt.load_state_dict(topt.state_dict())  # its float32 scalars (mu_product, eta, mu) stay float32
    path = _fg_run(opt, 4)
    expected = _torch_run(torch, topt, params, 4)
    for ours, theirs in zip(path[-1], expected[-1]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)
    _assert_state_dicts_equal(opt.state_dict(), topt.state_dict())


# -- arguments --------------------------------------------------------------------------------------------
# (class name, bad options, the phrase of PyTorch's ValueError)
BAD = [
    ("Adadelta", dict(lr=-0.1), "invalid learning rate"),
    ("Adadelta", dict(rho=1.5), "invalid rho value"),
    ("Adadelta", dict(eps=-1.0), "invalid epsilon value"),
    ("Adadelta", dict(weight_decay=-0.1), "invalid weight_decay value"),
    ("Adamax", dict(betas=(1.0, 0.9)), "invalid beta parameter at index 0"),
    ("Adamax", dict(betas=(0.9, -0.1)), "invalid beta parameter at index 1"),
    ("NAdam", dict(momentum_decay=-1e-3), "invalid momentum_decay value"),
    ("NAdam", dict(eps=-1.0), "invalid epsilon value"),
    ("RAdam", dict(betas=(0.9, 1.0)), "invalid beta parameter at index 1"),
    ("RAdam", dict(weight_decay=-0.1), "invalid weight_decay value"),
    ("ASGD", dict(lr=-0.1), "invalid learning rate"),
    ("ASGD", dict(weight_decay=-1.0), "invalid weight_decay value"),
    ("Rprop", dict(etas=(1.2, 0.5)), "invalid eta values"),
    ("Rprop", dict(etas=(0.5, 1.0)), "invalid eta values"),
]


@pytest.mark.parametrize("kind,options,phrase", BAD, ids=[f"{k}-{p}" for k, _, p in BAD])
def test_argument_errors(kind, options, phrase):
    with pytest.raises(ValueError, match=rf"{kind}: {phrase}"):
        getattr(optim, kind)(_fg_params(), **options)


def test_argument_errors_defaults_and_signatures_match_torch():
    torch = pytest.importorskip("torch")
    for kind, options, phrase in BAD:
        with pytest.raises(ValueError) as theirs:
            getattr(torch.optim, kind)(_torch_params(torch), **options)
        assert str(theirs.value).lower().startswith(phrase), (kind, str(theirs.value))
    for kind in NAMES:
        ours, theirs = inspect.signature(getattr(optim, kind)), inspect.signature(getattr(torch.optim, kind))
        assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == \
               [(p.name, p.kind, p.default) for p in theirs.parameters.values()], kind
        assert getattr(optim, kind)(_fg_params()).defaults == getattr(torch.optim, kind)(_torch_params(torch)).defaults


def test_every_torch_option_and_edge_value_is_accepted():
    for kind in NAMES:
        opt = getattr(optim, kind)(_fg_params(), foreach=True, maximize=True, differentiable=False, capturable=True)
        assert opt.defaults["foreach"] and opt.defaults["capturable"] and opt.defaults["maximize"]
    # PyTorch's bounds: rho may be 1 and 0; betas and eps may be 0; ASGD checks neither lambd, alpha nor t0.
    assert optim.Adadelta(_fg_params(), rho=1.0).defaults["rho"] == 1.0
    assert optim.Adadelta(_fg_params(), rho=0.0, eps=0.0).defaults["eps"] == 0.0
    assert optim.NAdam(_fg_params(), betas=(0.0, 0.0), momentum_decay=0.0).defaults["betas"] == (0.0, 0.0)
    assert optim.ASGD(_fg_params(), lambd=-1.0, alpha=-1.0, t0=-5.0).defaults["t0"] == -5.0
    with pytest.raises(TypeError, match="Tensor is not supported"):
        optim.NAdam(_fg_params(), lr=fg.tensor(0.1))


# -- writing an optimizer -----------------------------------------------------------------------------------
def _documented_example() -> dict:
    """Run the code of docs/optim.md's "Writing an optimizer" section; return its namespace."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "optim.md").read_text()
    section = text.split("## Writing an optimizer", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks, "docs/optim.md lost its optimizer example"
    namespace: dict = {}
    exec(compile("\n".join(blocks), "docs/optim.md", "exec"), namespace)
    return namespace


def np_lion(p, g, s, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0):
    m = s.get("m", np.zeros_like(p))
    p = p * (1 - lr * weight_decay) - lr * np.sign(betas[0] * m + (1 - betas[0]) * g)
    s["m"] = betas[1] * m + (1 - betas[1]) * g
    return p


def test_the_documented_optimizer_follows_its_rule_and_keeps_its_state():
    Lion = _documented_example()["Lion"]
    options = dict(lr=0.05, betas=(0.8, 0.95), weight_decay=0.1)
    opt = Lion(_fg_params(), **options)
    path = _fg_run(opt, 10)
    reference, states = [w.copy() for w in START], [{}, {}]
    for step in range(10):
        reference = [np_lion(p, g, s, **options) for p, g, s in zip(reference, _gradients(reference), states)]
        for ours, expected in zip(path[step], reference):
            np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-14)
    state = opt.state_dict()
    assert list(state["state"][0]) == ["exp_avg"]
    np.testing.assert_allclose(state["state"][1]["exp_avg"].numpy(), states[1]["m"], rtol=1e-12)
    maximizing = Lion(_fg_params(), maximize=True, **options)
    np.testing.assert_allclose(_fg_run(maximizing, 3, sign=-1.0)[-1][0], path[2][0], rtol=1e-12)


def _compiled_training(opt_factory, compiled: bool):
    fg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    opt = opt_factory(model.parameters())
    sched = StepLR(opt, step_size=3, gamma=0.5)
    rng = np.random.default_rng(1)
    batches = [(fg.tensor(rng.normal(size=(5, 3))), fg.tensor(rng.normal(size=(5, 2)))) for _ in range(6)]

    def train_step(model, opt, x, y):
        loss = ((model(x) - y) ** 2).mean()
        opt.step(loss.backward())
        return loss

    step = fg.compile(train_step) if compiled else train_step
    losses = []
    for x, y in batches:
        losses.append(step(model, opt, x, y).item())
        sched.step()
    return np.array(losses), model, opt, step


def test_the_documented_optimizer_inside_fg_compile_equals_eager():
    Lion = _documented_example()["Lion"]
    factory = functools.partial(Lion, lr=0.01, weight_decay=0.1)
    eager, model_a, opt_a, _ = _compiled_training(factory, compiled=False)
    compiled, model_b, opt_b, step = _compiled_training(factory, compiled=True)
    np.testing.assert_allclose(compiled, eager, rtol=1e-9, atol=1e-12)
    for a, b in zip(model_a.parameters(), model_b.parameters()):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-9, atol=1e-12)
    _assert_state_dicts_equal(opt_b.state_dict(), opt_a.state_dict())
    assert step.traces <= 2  # the first step makes the state; the scheduler's new lr retraces nothing


def test_the_interface_names_its_mistakes():
    with pytest.raises(TypeError, match=r"rename _hyper -> hyperparameters, _update -> update"):
        class Old(optim.Optimizer):
            _hyper = ("lr",)

            @staticmethod
            def _update(flags, hyper, params, grads, states):
                return params, states
    with pytest.raises(TypeError, match="must be a @staticmethod"):
        class Method(optim.Optimizer):
            def update(self, static, hyper, params, grads, states):
                return params, states
    with pytest.raises(TypeError, match=r"write \('lr',\)"):
        class Text(optim.Optimizer):
            hyperparameters = "lr"

    class Unfinished(optim.Optimizer):
        pass

    opt = Unfinished(_fg_params(), dict(lr=0.1))
    with pytest.raises(NotImplementedError, match="update"):
        opt.step([fg.tensor(g) for g in _gradients(START)])


def test_a_subclass_of_a_builtin_optimizer_can_change_one_piece():
    """The public names are the whole interface: a subclass overriding only init_state works."""

    class WarmAdagrad(optim.Adagrad):
        def init_state(self, param, group):
            state = super().init_state(param, group)
            return dict(state, sum=jnp.full_like(param.array, 1.0))

    ours = _fg_run(WarmAdagrad(_fg_params(), lr=0.1), 3)
    same = _fg_run(optim.Adagrad(_fg_params(), lr=0.1, initial_accumulator_value=1.0), 3)
    for a, b in zip(ours[-1], same[-1]):
        np.testing.assert_array_equal(a, b)
