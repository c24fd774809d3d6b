"""Learning-rate schedulers: 30-step sequences against PyTorch (where installed) and against the closed
forms of PyTorch's documentation computed here (always), state-dict round trips through fg.save, and a scheduler driving
an optimizer without recompiling its kernel."""
import math
import warnings
from bisect import bisect_right

import numpy as np
import pytest

import fgraph as fg
from fgraph import optim
from fgraph.optim import lr_scheduler as L

STEPS = 30
LRS = (0.1, 0.03)  # two param groups with their own learning rates


def warmup(epoch):
    return min(1.0, (epoch + 1) / 4)


def decay(epoch):
    return 0.9 ** epoch


def shrink(epoch):
    return 0.95


def damp(cycle):
    return 0.7 ** (cycle - 1)


class Factor:
    """A callable object: LambdaLR's state dict keeps its __dict__."""

    def __init__(self, rate):
        self.rate = rate

    def __call__(self, epoch):
        return self.rate ** epoch


def _fg_optimizer(kind="SGD", lrs=LRS, **options):
    groups = [{"params": [fg.nn.Parameter(fg.ones(2, dtype=fg.float64))], "lr": lr} for lr in lrs]
    return getattr(optim, kind)(groups, lr=lrs[0], **options)


def _torch_optimizer(torch, kind="SGD", lrs=LRS, **options):
    groups = [{"params": [torch.nn.Parameter(torch.ones(2, dtype=torch.float64))], "lr": lr} for lr in lrs]
    return getattr(torch.optim, kind)(groups, lr=lrs[0], **options)


# (id, optimizer kind, optimizer options, scheduler builder taking (the scheduler module, optimizer))
CASES = [
    ("step", "SGD", {}, lambda S, o: S.StepLR(o, step_size=4, gamma=0.5)),
    ("multistep", "SGD", {}, lambda S, o: S.MultiStepLR(o, milestones=[3, 10, 10, 17], gamma=0.3)),
    ("exponential", "SGD", {}, lambda S, o: S.ExponentialLR(o, gamma=0.9)),
    ("cosine", "SGD", {}, lambda S, o: S.CosineAnnealingLR(o, T_max=10)),
    ("cosine-eta-min", "SGD", {}, lambda S, o: S.CosineAnnealingLR(o, T_max=7, eta_min=0.01)),
    ("warm-restarts", "SGD", {}, lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=5)),
    ("warm-restarts-mult", "SGD", {}, lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.001)),
    ("lambda", "SGD", {}, lambda S, o: S.LambdaLR(o, lr_lambda=warmup)),
    ("lambda-per-group", "SGD", {}, lambda S, o: S.LambdaLR(o, lr_lambda=[warmup, decay])),
    ("multiplicative", "SGD", {}, lambda S, o: S.MultiplicativeLR(o, lr_lambda=shrink)),
    ("linear", "SGD", {}, lambda S, o: S.LinearLR(o, start_factor=0.2, total_iters=8)),
    ("linear-decay", "SGD", {}, lambda S, o: S.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=12)),
    ("constant", "SGD", {}, lambda S, o: S.ConstantLR(o, factor=0.25, total_iters=6)),
    ("polynomial", "SGD", {}, lambda S, o: S.PolynomialLR(o, total_iters=20, power=2.0)),
    ("onecycle-cos-sgd", "SGD", {"momentum": 0.9}, lambda S, o: S.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=30)),
    ("onecycle-linear-adam", "Adam", {}, lambda S, o: S.OneCycleLR(
        o, max_lr=0.2, epochs=3, steps_per_epoch=10, pct_start=0.25, anneal_strategy="linear")),
    ("onecycle-three-phase", "SGD", {"momentum": 0.9}, lambda S, o: S.OneCycleLR(
        o, max_lr=1.0, total_steps=30, three_phase=True, base_momentum=0.8, max_momentum=[0.9, 0.95],
        div_factor=10.0, final_div_factor=100.0)),
    ("onecycle-no-momentum", "Adagrad", {}, lambda S, o: S.OneCycleLR(o, max_lr=1.0, total_steps=30,
                                                                     cycle_momentum=False)),
    ("sequential", "SGD", {}, lambda S, o: S.SequentialLR(
        o, [S.LinearLR(o, start_factor=0.1, total_iters=5), S.ExponentialLR(o, gamma=0.8)], milestones=[5])),
    ("sequential-three", "SGD", {}, lambda S, o: S.SequentialLR(
        o, [S.ConstantLR(o, factor=0.5, total_iters=3), S.CosineAnnealingLR(o, T_max=8),
            S.StepLR(o, step_size=3, gamma=0.5)], milestones=[4, 12])),
    ("chained", "SGD", {}, lambda S, o: S.ChainedScheduler(
        [S.ConstantLR(o, factor=0.5, total_iters=4), S.ExponentialLR(o, gamma=0.9)])),
    ("cyclic-triangular", "SGD", {"momentum": 0.9}, lambda S, o: S.CyclicLR(
        o, base_lr=0.01, max_lr=[0.1, 0.05], step_size_up=4)),
    ("cyclic-triangular2-down", "SGD", {"momentum": 0.9}, lambda S, o: S.CyclicLR(
        o, base_lr=[0.01, 0.02], max_lr=[0.1, 0.3], step_size_up=3, step_size_down=5, mode="triangular2",
        base_momentum=[0.8, 0.85], max_momentum=0.95)),
    # scale_mode="cycle" is overridden by exp_range's "iterations", as in PyTorch; Adam cycles betas[0].
    ("cyclic-exp-range-adam", "Adam", {}, lambda S, o: S.CyclicLR(
        o, base_lr=0.001, max_lr=[0.01, 0.02], step_size_up=5, step_size_down=2, mode="exp_range", gamma=0.97,
        scale_mode="cycle")),
    ("cyclic-scale-cycle", "Adagrad", {}, lambda S, o: S.CyclicLR(
        o, base_lr=0.01, max_lr=[0.1, 0.05], step_size_up=2, step_size_down=4, scale_fn=damp, cycle_momentum=False)),
    ("cyclic-scale-iterations", "RMSprop", {}, lambda S, o: S.CyclicLR(
        o, base_lr=0.01, max_lr=[0.1, 0.05], step_size_up=4, mode="exp_range", scale_fn=Factor(0.97),
        scale_mode="iterations")),
]
IDS = [c[0] for c in CASES]
BUILD = {c[0]: c for c in CASES}


def _momentum(group):
    return group["betas"][0] if "betas" in group else group.get("momentum")


def _run(sched, opt, steps=STEPS, step_optimizer=None):
    """The learning rates (from get_last_lr and the groups) and momenta in use at each of ``steps`` epochs."""
    path = []
    for _ in range(steps):
        path.append((list(sched.get_last_lr()), [g["lr"] for g in opt.param_groups],
                     [_momentum(g) for g in opt.param_groups]))
        step_optimizer(opt) if step_optimizer else opt.step({})
        sched.step()
    return path


def _torch_or_none():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _torch_step(opt):
    opt.step()  # no gradients: updates nothing, records the call order


def _fg_sequence(name):
    _, kind, options, build = BUILD[name]
    opt = _fg_optimizer(kind, **options)
    return _run(build(L, opt), opt)


@pytest.mark.parametrize("name", IDS)
def test_sequence_matches_torch(name):
    torch = pytest.importorskip("torch")
    _, kind, options, build = BUILD[name]
    topt = _torch_optimizer(torch, kind, **options)
    theirs = _run(build(torch.optim.lr_scheduler, topt), topt, step_optimizer=_torch_step)
    ours = _fg_sequence(name)
    for step, (mine, expected) in enumerate(zip(ours, theirs)):
        assert mine == expected, f"{name}: epoch {step}"


# -- closed forms, independent of torch ------------------------------------------------------------
def _cos(base, eta_min, t, period):
    return eta_min + (base - eta_min) * (1 + math.cos(math.pi * t / period)) / 2


def _restart_position(t, T_0, T_mult):
    period, start = T_0, 0
    while t >= start + period:
        start, period = start + period, period * T_mult
    return t - start, period


def _anneal(start, end, pct, cos):
    return end + (start - end) * (1 + math.cos(math.pi * pct)) / 2 if cos else start + (end - start) * pct


def _one_cycle(base, t, total, pct_start, cos, div=25.0, final_div=1e4, moms=(0.85, 0.95)):
    """PyTorch's documented 1cycle: up from max/div to max over pct_start of the steps, then down to
    max/div/final_div; the momentum inversely between max_momentum and base_momentum."""
    initial, peak = base / div, base
    low, high = moms
    up_end = pct_start * total - 1
    if t <= up_end:
        pct = t / up_end
        return _anneal(initial, peak, pct, cos), _anneal(high, low, pct, cos)
    pct = (t - up_end) / (total - 1 - up_end)
    return _anneal(peak, initial / final_div, pct, cos), _anneal(low, high, pct, cos)


def _cyclic(t, base, peak, up, down, scale, moms=(0.8, 0.9)):
    """PyTorch's documented CLR: linear from base up to peak over `up` steps, back over `down` steps, the
    amplitude times `scale`; the momentum inversely from max_momentum down to base_momentum."""
    pos = t % (up + down)
    height = pos / up if pos <= up else (up + down - pos) / down
    low, high = moms
    return base + (peak - base) * height * scale, high - (high - low) * height * scale


def _closed_form(name, base, group, t):
    if name == "step":
        return base * 0.5 ** (t // 4)
    if name == "multistep":
        return base * 0.3 ** bisect_right([3, 10, 10, 17], t)
    if name == "exponential":
        return base * 0.9 ** t
    if name == "cosine":
        return _cos(base, 0.0, t, 10)
    if name == "cosine-eta-min":
        return _cos(base, 0.01, t, 7)
    if name == "warm-restarts":
        return _cos(base, 0.0, t % 5, 5)
    if name == "warm-restarts-mult":
        return _cos(base, 0.001, *_restart_position(t, 3, 2))
    if name == "lambda":
        return base * warmup(t)
    if name == "lambda-per-group":
        return base * (warmup, decay)[group](t)
    if name == "multiplicative":
        return base * 0.95 ** t
    if name == "linear":
        return base * (0.2 + 0.8 * min(t, 8) / 8)
    if name == "linear-decay":
        return base * (1.0 - 0.9 * min(t, 12) / 12)
    if name == "constant":
        return base * (0.25 if t < 6 else 1.0)
    if name == "polynomial":
        return base * (1 - min(t, 20) / 20) ** 2
    if name == "onecycle-cos-sgd":
        return _one_cycle((1.0, 0.5)[group], t, 30, 0.3, True)
    if name == "onecycle-linear-adam":
        return _one_cycle(0.2, t, 30, 0.25, False)
    if name == "onecycle-no-momentum":
        return _one_cycle(1.0, t, 30, 0.3, True)[0]
    if name == "sequential":
        return base * (0.1 + 0.9 * t / 5) if t < 5 else base * 0.8 ** (t - 5)
    if name == "sequential-three":
        if t < 4:
            return base * (0.5 if t < 3 else 1.0)
        if t < 12:
            return _cos(base, 0.0, t - 4, 8)
        return base * 0.5 ** ((t - 12) // 3)
    if name == "chained":
        return base * (0.5 if t < 4 else 1.0) * 0.9 ** t
    if name == "cyclic-triangular":
        return _cyclic(t, 0.01, (0.1, 0.05)[group], 4, 4, 1.0)
    if name == "cyclic-triangular2-down":
        return _cyclic(t, (0.01, 0.02)[group], (0.1, 0.3)[group], 3, 5, 0.5 ** (t // 8),
                       ((0.8, 0.85)[group], 0.95))
    if name == "cyclic-exp-range-adam":
        return _cyclic(t, 0.001, (0.01, 0.02)[group], 5, 2, 0.97 ** t)
    if name == "cyclic-scale-cycle":
        return _cyclic(t, 0.01, (0.1, 0.05)[group], 2, 4, damp(1 + t // 6))[0]
    if name == "cyclic-scale-iterations":
        return _cyclic(t, 0.01, (0.1, 0.05)[group], 4, 4, 0.97 ** t)
    return None


@pytest.mark.parametrize("name", [n for n in IDS if n != "onecycle-three-phase"])
def test_sequence_matches_the_documented_closed_form(name):
    path = _fg_sequence(name)
    for t, (last, lrs, moms) in enumerate(path):
        assert last == lrs
        for group, (base, lr) in enumerate(zip(LRS, lrs)):
            expected = _closed_form(name, base, group, t)
            if name.startswith(("onecycle", "cyclic")) and name not in ("onecycle-no-momentum", "cyclic-scale-cycle"):
                expected, momentum = expected
                assert math.isclose(moms[group], momentum, rel_tol=1e-12), f"{name}: momentum at epoch {t}"
            assert math.isclose(lr, expected, rel_tol=1e-10, abs_tol=1e-14), f"{name}: group {group}, epoch {t}"


def test_one_cycle_three_phase_is_symmetric_then_annihilates():
    path = _fg_sequence("onecycle-three-phase")
    lrs = [lrs[0] for _, lrs, _ in path]
    moms = [moms[1] for _, _, moms in path]
    # Phases end at steps 8 (max_lr), 16 (back to initial_lr), 29 (initial_lr / final_div_factor).
    assert lrs[0] == pytest.approx(0.1) and lrs[8] == pytest.approx(1.0) and lrs[16] == pytest.approx(0.1)
    for t in range(9):
        assert lrs[8 - t] == pytest.approx(lrs[8 + t], rel=1e-12)
        assert lrs[t] == pytest.approx(_anneal(0.1, 1.0, t / 8, True), rel=1e-12)
    assert lrs[29] == pytest.approx(0.1 / 100, rel=1e-12)
    assert moms[0] == pytest.approx(0.95) and moms[8] == pytest.approx(0.8) and moms[29] == pytest.approx(0.95)


def test_warm_restarts_fractional_epochs():
    opt = _fg_optimizer()
    sched = L.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2, eta_min=0.01)
    epochs = [e + i / 4 for e in range(9) for i in range(4)]
    ours = []
    for epoch in epochs:
        sched.step(epoch)
        ours.append(opt.param_groups[1]["lr"])
        t_cur, period = _restart_position(epoch, 2, 2)
        assert math.isclose(ours[-1], _cos(LRS[1], 0.01, t_cur, period), rel_tol=1e-12), epoch
    assert sched.last_epoch == 8
    torch = _torch_or_none()
    if torch is None:  # the checks above ran; CI has no torch
        return
    topt = _torch_optimizer(torch)
    tsched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(topt, T_0=2, T_mult=2, eta_min=0.01)
    theirs = []
    for epoch in epochs:
        tsched.step(epoch)
        theirs.append(topt.param_groups[1]["lr"])
    assert ours == theirs


@pytest.mark.parametrize("name", ["step", "multistep", "exponential", "cosine", "linear", "constant", "polynomial"])
def test_step_with_an_epoch_uses_the_closed_form(name):
    opt = _fg_optimizer()
    sched = BUILD[name][3](L, opt)
    epochs = [3, 11, 5, 20, 0, 7]
    for epoch in epochs:
        opt.step({})
        with pytest.warns(UserWarning, match="epoch parameter"):
            sched.step(epoch)
        assert math.isclose(opt.param_groups[0]["lr"], _closed_form(name, LRS[0], 0, epoch), rel_tol=1e-12)
    torch = _torch_or_none()
    if torch is None:  # the checks above ran; CI has no torch
        return
    topt = _torch_optimizer(torch)
    tsched = BUILD[name][3](torch.optim.lr_scheduler, topt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for epoch in epochs:
            tsched.step(epoch)
    assert sched.get_last_lr() == tsched.get_last_lr()


# -- state dicts ---------------------------------------------------------------------------------------
ROUND_TRIP = ["step", "multistep", "cosine", "warm-restarts-mult", "lambda", "onecycle-cos-sgd",
              "onecycle-linear-adam", "sequential-three", "chained", "linear", "cyclic-triangular2-down",
              "cyclic-scale-iterations"]


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_state_dict_round_trip_through_fg_save_resumes_the_sequence(name, tmp_path):
    _, kind, options, build = BUILD[name]
    whole = _fg_sequence(name)
    opt = _fg_optimizer(kind, **options)
    sched = build(L, opt)
    head = _run(sched, opt, steps=11)
    fg.save({"optimizer": opt.state_dict(), "scheduler": sched.state_dict()}, tmp_path / "ckpt.safetensors")
    fresh_opt = _fg_optimizer(kind, **options)
    fresh = build(L, fresh_opt)  # built first, then the checkpoint overwrites what it wrote (PyTorch's order)
    ckpt = fg.load(tmp_path / "ckpt.safetensors")
    fresh_opt.load_state_dict(ckpt["optimizer"])
    fresh.load_state_dict(ckpt["scheduler"])
    tail = _run(fresh, fresh_opt, steps=STEPS - 11)
    assert head + tail == whole


def test_state_dict_matches_torch_and_excludes_optimizer_and_functions():
    torch = pytest.importorskip("torch")
    for name in ["step", "multistep", "lambda", "onecycle-linear-adam", "sequential", "warm-restarts", "chained",
                 "cyclic-exp-range-adam", "cyclic-scale-cycle", "cyclic-scale-iterations"]:
        _, kind, options, build = BUILD[name]
        opt, topt = _fg_optimizer(kind, **options), _torch_optimizer(torch, kind, **options)
        sched, tsched = build(L, opt), build(torch.optim.lr_scheduler, topt)
        for _ in range(3):
            opt.step({})
            sched.step()
            topt.step()
            tsched.step()
        ours, theirs = sched.state_dict(), tsched.state_dict()
        assert ours == theirs, name
        assert list(ours) == list(theirs), name
        assert "optimizer" not in ours
        # PyTorch's state dict loads and resumes the same sequence.
        resumed_opt = _fg_optimizer(kind, **options)
        resumed = build(L, resumed_opt)
        resumed_opt.load_state_dict({"state": {}, "param_groups": topt.state_dict()["param_groups"]})
        resumed.load_state_dict(tsched.state_dict())
        _run(resumed, resumed_opt, steps=1)
        topt.step()
        tsched.step()
        assert resumed.get_last_lr() == tsched.get_last_lr(), name
    opt = _fg_optimizer()
    sched = L.LambdaLR(opt, [warmup, Factor(0.5)])
    assert sched.state_dict()["lr_lambdas"] == [None, {"rate": 0.5}]
    state = sched.state_dict()
    state["lr_lambdas"][1] = {"rate": 0.25}
    sched.load_state_dict(state)
    assert sched.lr_lambdas[1].rate == 0.25 and "lr_lambdas" in state


def test_cyclic_state_dict_keeps_scale_fn_objects_and_rebuilds_the_mode():
    opt = _fg_optimizer()
    sched = L.CyclicLR(opt, 0.01, 0.1, step_size_up=2, scale_fn=damp)
    state = sched.state_dict()
    assert state["_scale_fn_custom"] is None and "_scale_fn_ref" not in state
    assert list(state)[-1] == "_scale_fn_custom"  # PyTorch's order
    opt = _fg_optimizer()
    sched = L.CyclicLR(opt, 0.01, 0.1, step_size_up=2, scale_fn=Factor(0.5), scale_mode="iterations")
    state = sched.state_dict()
    assert state["_scale_fn_custom"] == {"rate": 0.5}
    state["_scale_fn_custom"] = {"rate": 0.25}
    sched.load_state_dict(state)
    assert sched._scale_fn_custom.rate == 0.25 and "_scale_fn_custom" in state
    # A built-in mode's scale function is rebuilt from the loaded mode and gamma.
    opt = _fg_optimizer()
    sched = L.CyclicLR(opt, 0.01, 0.1, step_size_up=2)
    state = L.CyclicLR(_fg_optimizer(), 0.01, 0.1, step_size_up=2, mode="exp_range", gamma=0.5).state_dict()
    sched.load_state_dict(state)
    assert (sched.scale_mode, sched.scale_fn(3)) == ("iterations", 0.125)
    with pytest.raises(ValueError, match="built without scale_fn"):
        sched.load_state_dict({**state, "_scale_fn_custom": {"rate": 0.5}})


def test_cyclic_resume_and_an_earlier_initial_lr_match_torch():
    torch = pytest.importorskip("torch")

    def build(S, o, last_epoch=-1):
        return S.CyclicLR(o, base_lr=0.01, max_lr=[0.1, 0.05], step_size_up=3, mode="triangular2",
                          last_epoch=last_epoch)

    paths = []
    for S, opt, step in [(L, _fg_optimizer("SGD", momentum=0.9), None),
                         (torch.optim.lr_scheduler, _torch_optimizer(torch, "SGD", momentum=0.9), _torch_step)]:
        # An earlier scheduler wrote initial_lr: PyTorch's initial step uses it, later steps use base_lr.
        S.StepLR(opt, step_size=2)
        path = _run(build(S, opt), opt, steps=5, step_optimizer=step)
        path += _run(build(S, opt, last_epoch=7), opt, steps=5, step_optimizer=step)  # resumed at batch 7
        paths.append(path)
    assert paths[0] == paths[1]
    # Both initial steps take the groups' initial_lr (LRS) as base_lr: group 0's is its max_lr, so lr = 0.1.
    # The next step is batch 9, the peak of the second cycle: base_lr + half the amplitude (triangular2).
    assert paths[0][0][1] == list(LRS) and paths[0][5][1][0] == 0.1
    assert paths[0][6][1][0] == pytest.approx(0.01 + 0.09 / 2)


def test_resume_with_last_epoch_needs_initial_lr():
    opt = _fg_optimizer()
    with pytest.raises(KeyError, match="initial_lr"):
        L.StepLR(opt, step_size=2, last_epoch=4)
    L.StepLR(opt, step_size=2)
    resumed = L.ExponentialLR(opt, gamma=0.5, last_epoch=4)  # groups now hold initial_lr
    assert resumed.get_last_lr() == list(LRS)  # the initial step of a resumed scheduler keeps the lr


# -- driving an optimizer ------------------------------------------------------------------------------
def test_scheduler_drives_sgd_updates_without_recompiling():
    model = fg.nn.Linear(3, 1, bias=False).double()
    opt = optim.SGD(model.parameters(), lr=0.2)
    sched = L.StepLR(opt, step_size=1, gamma=0.5)
    x = fg.tensor(np.eye(3))
    w = model.weight.numpy().copy()
    used = []
    for _ in range(6):
        # loss = sum(w @ x^T)^2 / 2 over the rows of the identity: gradient = w, so w <- w * (1 - lr)
        loss = (model(x) ** 2).sum() / 2
        opt.step(loss.backward())
        used.append(opt.param_groups[0]["lr"])
        w = w * (1 - used[-1])
        np.testing.assert_allclose(model.weight.numpy(), w, rtol=1e-12)
        sched.step()
    assert used == [0.2, 0.1, 0.05, 0.025, 0.0125, 0.00625]
    assert all(kernel._cache_size() <= 2 for kernel in opt._kernels.values())


def test_one_cycle_drives_adam_betas_and_sgd_momentum_without_recompiling():
    for kind, options in [("Adam", {}), ("SGD", {"momentum": 0.9, "nesterov": True})]:
        model = fg.nn.Linear(3, 2).double()
        opt = getattr(optim, kind)(model.parameters(), lr=0.01, **options)
        sched = L.OneCycleLR(opt, max_lr=0.1, total_steps=8)
        x = fg.tensor(np.ones((4, 3)))
        start, momenta = model.weight.numpy().copy(), set()
        for _ in range(8):
            momenta.add(_momentum(opt.param_groups[0]))
            opt.step((model(x) ** 2).mean().backward())
            sched.step()
        assert len(momenta) == 6 and not np.allclose(start, model.weight.numpy())
        assert len(opt._kernels) == 1
        assert all(kernel._cache_size() <= 2 for kernel in opt._kernels.values()), kind


def test_integer_learning_rates_are_written_as_floats():
    opt = _fg_optimizer(lrs=(1, 2))
    sched = L.LambdaLR(opt, lr_lambda=[int, int])
    opt.step({})
    sched.step()
    assert [type(g["lr"]) for g in opt.param_groups] == [float, float]
    assert [g["lr"] for g in opt.param_groups] == [1.0, 2.0]


# -- errors and warnings ---------------------------------------------------------------------------------
def test_clear_errors():
    opt = _fg_optimizer()
    with pytest.raises(TypeError, match="StepLR: dict is not an Optimizer"):
        L.StepLR({}, step_size=2)
    with pytest.raises(ValueError, match="StepLR: expected a positive"):
        L.StepLR(opt, step_size=0)
    with pytest.raises(ValueError, match="CosineAnnealingLR: expected a positive"):
        L.CosineAnnealingLR(opt, T_max=0)
    with pytest.raises(ValueError, match="T_0"):
        L.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError, match="T_mult"):
        L.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=1.5)
    with pytest.raises(ValueError, match="expected 2 lr_lambdas"):
        L.LambdaLR(opt, [warmup])
    with pytest.raises(ValueError, match="start"):
        L.LinearLR(opt, start_factor=0.0)
    with pytest.raises(ValueError, match="mode 'low' is unknown"):
        L.ReduceLROnPlateau(opt, mode="low")
    with pytest.raises(ValueError, match="threshold mode"):
        L.ReduceLROnPlateau(opt, threshold_mode="pct")
    with pytest.raises(ValueError, match="Factor should be|factor should be"):
        L.ReduceLROnPlateau(opt, factor=2.0)
    with pytest.raises(TypeError, match="metrics must be a number"):
        L.ReduceLROnPlateau(opt).step("low")
    with pytest.raises(ValueError, match="total_steps OR"):
        L.OneCycleLR(opt, max_lr=1.0)
    with pytest.raises(ValueError, match="max_lr must have the same length"):
        L.OneCycleLR(opt, max_lr=[1.0, 2.0, 3.0], total_steps=5)
    with pytest.raises(ValueError, match="pct_start"):
        L.OneCycleLR(opt, max_lr=1.0, total_steps=5, pct_start=1)
    with pytest.raises(ValueError, match="anneal_strategy"):
        L.OneCycleLR(opt, max_lr=1.0, total_steps=5, anneal_strategy="exp")
    with pytest.raises(ValueError, match="momentum or beta1"):
        L.OneCycleLR(_fg_optimizer("Adagrad"), max_lr=1.0, total_steps=5)
    with pytest.raises(ValueError, match="CyclicLR: optimizer must support momentum or beta1"):
        L.CyclicLR(_fg_optimizer("Adagrad"), base_lr=0.01, max_lr=0.1)
    with pytest.raises(ValueError, match="mode is invalid and scale_fn is None"):
        L.CyclicLR(opt, base_lr=0.01, max_lr=0.1, mode="cosine")
    with pytest.raises(ValueError, match="max_lr must have the same length"):
        L.CyclicLR(opt, base_lr=0.01, max_lr=[0.1])
    opt = _fg_optimizer()
    sched = L.OneCycleLR(opt, max_lr=1.0, total_steps=2)
    opt.step({})
    sched.step()
    sched.step()
    with pytest.raises(ValueError, match="tried to step 3 times; the specified number of total steps is 2"):
        sched.step()


def test_warnings_on_misuse():
    opt = _fg_optimizer()
    sched = L.StepLR(opt, step_size=2)
    with pytest.warns(UserWarning, match="before `optimizer.step"):
        sched.step()
    with pytest.warns(UserWarning, match="get_last_lr"):
        sched.get_lr()
    opt = _fg_optimizer()
    sched = L.ExponentialLR(opt, gamma=0.5)
    opt.step({})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()  # the right order: no warning
    with pytest.raises(RuntimeError, match="zero_grad"):
        opt.zero_grad()  # the wrapped step leaves the optimizer's other methods alone
