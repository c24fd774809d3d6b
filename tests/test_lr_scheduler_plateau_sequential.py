"""ReduceLROnPlateau and SequentialLR/ChainedScheduler: metric-driven and composed schedules, against torch
where installed and against hand-computed sequences (split from test_lr_scheduler.py, whose helpers it uses)."""
import pytest

import fgraph as fg
from fgraph.optim import lr_scheduler as L
from test_lr_scheduler import _fg_optimizer, _run, _torch_optimizer, _torch_or_none


# -- ReduceLROnPlateau ------------------------------------------------------------------------------
PLATEAU = [
    # (options, metrics, the lr of group 0 after each step), worked by hand from the rules.
    (dict(mode="min", factor=0.5, patience=2),
     [5.0, 4.0, 4.0, 4.0, 4.0, 3.0, 3.5, 3.5, 3.5, 3.5],
     # 4.0 is best at step 2; steps 3-5 are bad: the third (step 5) exceeds patience 2 -> 0.05.
     # 3.0 improves; then 3 bad epochs (steps 7-9) -> 0.025 at step 9; step 10 is bad epoch 1.
     [0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.05, 0.025, 0.025]),
    (dict(mode="max", factor=0.1, patience=0, threshold=0.1, threshold_mode="abs", cooldown=2, min_lr=0.0005),
     [0.5, 0.55, 0.7, 0.7, 0.7, 0.7, 0.7, 0.9, 0.9],
     # 0.55 is not above 0.5 + 0.1: bad, patience 0 -> reduce, cooldown 2. Steps 3 (0.7 improves) and
     # 4 use up the cooldown; step 5 is bad -> 0.001, cooldown over steps 6, 7; 0.9 improves; step 9
     # bad -> max(0.0001, min_lr) = 0.0005.
     [0.1, 0.01, 0.01, 0.01, 0.001, 0.001, 0.001, 0.001, 0.0005]),
    (dict(mode="min", factor=0.5, patience=0, threshold=0.01, threshold_mode="rel", eps=0.02),
     [1.0, 0.995, 0.98, 0.99],
     # 0.995 > 1.0 * 0.99: bad -> 0.05 (a change of 0.05 > eps). 0.98 improves. 0.99 bad -> 0.025
     # would change lr by 0.025 > eps: applied.
     [0.1, 0.05, 0.05, 0.025]),
]


@pytest.mark.parametrize("options,metrics,expected", PLATEAU, ids=["min-rel", "max-abs-cooldown-minlr", "eps"])
def test_reduce_lr_on_plateau_on_a_metric_sequence(options, metrics, expected):
    opt = _fg_optimizer()
    sched = L.ReduceLROnPlateau(opt, **options)
    lrs = []
    for i, metric in enumerate(metrics):
        opt.step({})
        sched.step(fg.tensor(metric) if i % 2 else metric)  # a number or a 0-d Tensor
        lrs.append(opt.param_groups[0]["lr"])
        assert sched.get_last_lr() == [g["lr"] for g in opt.param_groups]
    assert lrs == pytest.approx(expected, rel=1e-12)
    torch = _torch_or_none()
    if torch is None:  # the checks above ran; CI has no torch
        return
    topt = _torch_optimizer(torch)
    tsched = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **options)
    for i, metric in enumerate(metrics):
        tsched.step(torch.tensor(metric) if i % 2 else metric)
    assert sched.get_last_lr() == tsched.get_last_lr()
    assert sched.state_dict() == tsched.state_dict()


def test_reduce_lr_on_plateau_eps_skips_tiny_updates_and_min_lr_per_group():
    opt = _fg_optimizer(lrs=(1e-7, 0.1))
    sched = L.ReduceLROnPlateau(opt, factor=0.5, patience=0, min_lr=[0.0, 0.08])
    for metric in [1.0, 2.0, 3.0]:
        sched.step(metric)
    # group 0: 1e-7 -> 5e-8 is a change below eps=1e-8? No: 5e-8 > 1e-8, applied; then 2.5e-8 (> eps) applied.
    assert opt.param_groups[0]["lr"] == pytest.approx(2.5e-8)
    assert opt.param_groups[1]["lr"] == 0.08  # floored by its min_lr
    opt = _fg_optimizer(lrs=(1e-8, 0.1))
    sched = L.ReduceLROnPlateau(opt, factor=0.5, patience=0)
    sched.step(1.0)
    sched.step(2.0)
    assert opt.param_groups[0]["lr"] == 1e-8  # 5e-9 change <= eps: skipped
    assert opt.param_groups[1]["lr"] == 0.05


# -- SequentialLR -------------------------------------------------------------------------------------
def test_sequential_lr_switches_at_the_milestones_and_restarts_each_scheduler():
    opt = _fg_optimizer(lrs=(1.0,))
    first = L.ConstantLR(opt, factor=0.5, total_iters=10)
    second = L.StepLR(opt, step_size=2, gamma=0.1)
    third = L.ExponentialLR(opt, gamma=0.5)
    sched = L.SequentialLR(opt, [first, second, third], milestones=[3, 7])
    lrs = [lr for (lr,), _, _ in _run(sched, opt, steps=10)]
    expected = [0.5, 0.5, 0.5, 1.0, 1.0, 0.1, 0.1, 1.0, 0.5, 0.25]
    assert lrs == pytest.approx(expected, rel=1e-12)
    # Each counts its own epochs from its milestone: the second ran epochs 3-6, the third 7-10.
    assert second.last_epoch == 3 and third.last_epoch == 3 and sched.last_epoch == 10


def test_sequential_and_chained_refuse_bad_combinations():
    opt, other = _fg_optimizer(), _fg_optimizer()
    with pytest.raises(ValueError, match="one more than the number of milestone"):
        L.SequentialLR(opt, [L.StepLR(opt, 2), L.StepLR(opt, 3)], milestones=[2, 4])
    with pytest.raises(ValueError, match="same optimizer"):
        L.SequentialLR(opt, [L.StepLR(opt, 2), L.StepLR(other, 3)], milestones=[2])
    with pytest.raises(ValueError, match="ReduceLROnPlateau"):
        L.ChainedScheduler([L.StepLR(opt, 2), L.ReduceLROnPlateau(opt)])
    with pytest.raises(ValueError, match="at least one"):
        L.SequentialLR(opt, [], milestones=[])
