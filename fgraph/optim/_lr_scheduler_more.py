"""The schedulers of ``fgraph.optim.lr_scheduler`` that keep their own step logic: combinations
(:class:`SequentialLR`, :class:`ChainedScheduler`), :class:`ReduceLROnPlateau`,
:class:`CosineAnnealingWarmRestarts` and :class:`OneCycleLR`. Import them from
``fgraph.optim.lr_scheduler``."""
from __future__ import annotations

import math
import warnings
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any, Optional, Union

from fgraph.optim.lr_scheduler import (
    EPOCH_DEPRECATION_WARNING,
    LRScheduler,
    _check_optimizer,
    _format_param,
    _group_values,
    _set_lr,
)
from fgraph.optim.optimizer import Optimizer

__all__ = ["SequentialLR", "ChainedScheduler", "ReduceLROnPlateau", "CosineAnnealingWarmRestarts", "OneCycleLR"]


def _check_schedulers(owner: str, schedulers: Sequence, optimizer: Optimizer) -> None:
    if len(schedulers) < 1:
        raise ValueError(f"{owner} expects at least one scheduler, but got no scheduler.")
    for i, scheduler in enumerate(schedulers):
        if not hasattr(scheduler, "optimizer"):
            raise TypeError(f"{owner}: the scheduler at index {i} should have `optimizer` as its attribute "
                            f"(got {type(scheduler).__name__}).")
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(f"{owner} does not support `ReduceLROnPlateau` scheduler as it requires additional "
                             f"kwargs to be specified when calling `step`, but got one at index {i} in the given "
                             "schedulers sequence.")
        if optimizer is not scheduler.optimizer:
            raise ValueError(f"{owner} expects all schedulers to belong to the same optimizer, but got scheduler "
                             f"{type(scheduler).__name__} at index {i} with another optimizer; build every "
                             f"scheduler on the optimizer given to {owner}.")


class _Combined(LRScheduler):
    """State dicts of the schedulers made of schedulers: theirs are saved in a list."""

    def state_dict(self) -> dict:
        state = {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state = dict(state_dict)
        schedulers = state.pop("_schedulers")
        self.__dict__.update(state)
        for scheduler, saved in zip(self._schedulers, schedulers):
            scheduler.load_state_dict(saved)


class SequentialLR(_Combined):
    """Run ``schedulers[i]`` between ``milestones[i - 1]`` and ``milestones[i]``; each restarts from epoch 0.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.optim.lr_scheduler import ExponentialLR, LinearLR, SequentialLR
        >>> opt = fg.optim.SGD(fg.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> warmup = LinearLR(opt, start_factor=0.5, total_iters=2)
        >>> decay = ExponentialLR(opt, gamma=0.5)
        >>> sched = SequentialLR(opt, schedulers=[warmup, decay], milestones=[2])
        >>> lrs = []
        >>> for _ in range(5):
        ...     lrs.append(sched.get_last_lr()[0])
        ...     opt.step({})        # opt.step(loss.backward()) in training
        ...     sched.step()
        >>> lrs
        [0.5, 0.75, 1.0, 0.5, 0.25]
    """

    def __init__(self, optimizer: Optimizer, schedulers: list[LRScheduler], milestones: list[int],
                 last_epoch: int = -1) -> None:
        _check_optimizer(optimizer, "SequentialLR")
        _check_schedulers("SequentialLR", schedulers, optimizer)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("SequentialLR expects number of schedulers provided to be one more than the number of "
                             f"milestone points, but got number of schedulers {len(schedulers)} and the number of "
                             f"milestones to be equal to {len(milestones)}")
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        _set_lr(optimizer, _group_values(optimizer, "initial_lr"))
        self.recursive_undo()  # undo the initial step every scheduler made when it was built
        idx = bisect_right(self._milestones, 0)
        self._schedulers[idx]._initial_step()
        self._last_lr = self._schedulers[idx].get_last_lr()

    def recursive_undo(self, sched: Any = None) -> None:
        """Take back the initial step of the wrapped schedulers (recursively through nested combinations)."""
        scheds = self if sched is None else sched
        if hasattr(scheds, "_schedulers"):
            for s in scheds._schedulers:
                self.recursive_undo(s)
        elif hasattr(scheds, "last_epoch"):
            scheds.last_epoch -= 1

    def step(self) -> None:
        """Step the scheduler of the current interval (at a milestone, start the next one at its epoch 0)."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_Combined):
    """Step every scheduler in turn at each ``step()``: their multiplicative effects compose.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.optim.lr_scheduler import ChainedScheduler, ConstantLR, ExponentialLR
        >>> opt = fg.optim.SGD(fg.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = ChainedScheduler([ConstantLR(opt, factor=0.5, total_iters=2), ExponentialLR(opt, gamma=0.5)])
        >>> lrs = []
        >>> for _ in range(4):
        ...     lrs.append(sched.get_last_lr()[0])
        ...     opt.step({})        # opt.step(loss.backward()) in training
        ...     sched.step()
        >>> lrs
        [0.5, 0.25, 0.25, 0.125]
    """

    def __init__(self, schedulers: Sequence[LRScheduler], optimizer: Optional[Optimizer] = None) -> None:
        if len(schedulers) < 1:
            raise ValueError("ChainedScheduler expects at least one scheduler to be chained, but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        _check_schedulers("ChainedScheduler", schedulers, optimizer)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")

    def step(self) -> None:
        """Step every wrapped scheduler."""
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")


class ReduceLROnPlateau(LRScheduler):
    """Multiply the learning rates by ``factor`` when ``metrics`` (passed to ``step``) stopped improving.

    A value improves on the best so far if it is below ``best * (1 - threshold)`` (``mode="min"``,
    ``threshold_mode="rel"``), ``best - threshold`` (``"abs"``), or above ``best * (1 + threshold)``
    / ``best + threshold`` (``mode="max"``). After more than ``patience`` epochs without
    improvement each ``lr`` becomes ``max(lr * factor, min_lr)`` (skipped when that changes it by
    ``eps`` or less), then ``cooldown`` epochs are ignored.

    ``step(metrics)`` reads the metric on the host (``float(metrics)``, as PyTorch does): it is a
    decision in Python, so call it outside compiled code, once per epoch.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.optim.lr_scheduler import ReduceLROnPlateau
        >>> opt = fg.optim.SGD(fg.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1)
        >>> lrs = []
        >>> for val_loss in [3.0, 2.0, 2.5, 2.4, 2.3, 2.2]:
        ...     opt.step({})        # opt.step(loss.backward()) in training
        ...     sched.step(val_loss)
        ...     lrs.append(sched.get_last_lr()[0])
        >>> lrs
        [1.0, 1.0, 1.0, 0.5, 0.5, 0.25]
    """

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0,
                 min_lr: Union[list[float], float] = 0, eps: float = 1e-8) -> None:
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor should be < 1.0 (new_lr = lr * factor), got {factor}")
        self.factor = factor
        _check_optimizer(optimizer, "ReduceLROnPlateau")
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f"ReduceLROnPlateau: expected {len(optimizer.param_groups)} min_lrs (one per param "
                                 f"group), got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = _group_values(optimizer, "lr")
        self._init_is_better(mode=mode, threshold=threshold, threshold_mode=threshold_mode)
        self._reset()

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics: Any, epoch: Optional[int] = None) -> None:
        """Record ``metrics`` (a number or a 0-d Tensor) for one epoch; reduce the learning rates if it plateaued."""
        try:
            current = float(metrics)
        except (TypeError, ValueError) as error:
            raise TypeError(f"ReduceLROnPlateau.step(metrics): metrics must be a number or a one-element Tensor "
                            f"(e.g. the validation loss), got {type(metrics).__name__}: {error}") from None
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr(epoch)
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = _group_values(self.optimizer, "lr")

    def _reduce_lr(self, epoch: int) -> None:
        if len(self.optimizer.param_groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"ReduceLROnPlateau: the number of param groups in the optimizer "
                    f"({len(self.optimizer.param_groups)}) differs from when it was initialized "
                    f"({len(self.min_lrs)}), usually due to a new param group being added to the optimizer. "
                    "Set the `min_lrs` field to one value per param group."
                )
            self.min_lrs = [self.default_min_lr] * len(self.optimizer.param_groups)
        for i, group in enumerate(self.optimizer.param_groups):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, self.min_lrs[i])
            if old_lr - new_lr > self.eps:
                group["lr"] = float(new_lr)

    @property
    def in_cooldown(self) -> bool:
        """Whether the scheduler is in its cooldown (bad epochs are not counted)."""
        return self.cooldown_counter > 0

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min" and self.threshold_mode == "abs":
            return a < best - self.threshold
        if self.mode == "max" and self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in {"min", "max"}:
            raise ValueError(f"ReduceLROnPlateau: mode {mode!r} is unknown; use 'min' (a loss) or 'max' (an accuracy)")
        if threshold_mode not in {"rel", "abs"}:
            raise ValueError(f"ReduceLROnPlateau: threshold mode {threshold_mode!r} is unknown; use 'rel' or 'abs'")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a state from :meth:`state_dict` (fgraph's or PyTorch's)."""
        self.__dict__.update(state_dict)
        self._init_is_better(mode=self.mode, threshold=self.threshold, threshold_mode=self.threshold_mode)


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR: ``lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2``, restarting every ``T_i``.

    ``T_cur`` counts the epochs since the last restart, ``T_0`` is the first period and each
    restart multiplies the period by ``T_mult``. Call ``step()`` once per epoch, or
    ``step(epoch)`` with a fractional epoch (``epoch + i / iters``) after every batch.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.optim.lr_scheduler import CosineAnnealingWarmRestarts
        >>> opt = fg.optim.SGD(fg.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2)
        >>> lrs = []
        >>> for _ in range(7):
        ...     lrs.append(round(sched.get_last_lr()[0], 4))
        ...     opt.step({})        # opt.step(loss.backward()) in training
        ...     sched.step()
        >>> lrs
        [1.0, 0.5, 1.0, 0.8536, 0.5, 0.1464, 1.0]
        >>> sched.step(2.5)         # a fractional epoch: 0.5 into the second period (of 4 epochs)
        >>> round(sched.get_last_lr()[0], 4)
        0.9619
    """

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        if isinstance(T_0, bool) or not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"CosineAnnealingWarmRestarts: expected positive integer T_0, but got {T_0!r}")
        if isinstance(T_mult, bool) or not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"CosineAnnealingWarmRestarts: expected integer T_mult >= 1, but got {T_mult!r}")
        if isinstance(eta_min, bool) or not isinstance(eta_min, (float, int)):
            raise ValueError(f"CosineAnnealingWarmRestarts: expected float or int eta_min, but got {eta_min!r} of "
                             f"type {type(eta_min).__name__}")
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_get_lr()
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base_lr in self.base_lrs]

    def step(self, epoch: Optional[float] = None) -> None:
        """Advance one epoch, or go to ``epoch`` (an int or a fraction such as ``3 + batch / batches``)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"CosineAnnealingWarmRestarts.step: expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    # the number of restarts so far: T_0 * (T_mult**n - 1) / (T_mult - 1) <= epoch
                    n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** (n)
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        _set_lr(self.optimizer, values)
        self._last_lr = _group_values(self.optimizer, "lr")


def _annealing_cos(start: float, end: float, pct: float) -> float:
    return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)


def _annealing_linear(start: float, end: float, pct: float) -> float:
    return (end - start) * pct + start


def _phase(end_step: float, start_lr: str, end_lr: str, start_momentum: str, end_momentum: str) -> dict:
    return {"end_step": end_step, "start_lr": start_lr, "end_lr": end_lr, "start_momentum": start_momentum,
            "end_momentum": end_momentum}


class OneCycleLR(LRScheduler):
    """The 1cycle policy: ``lr`` rises from ``max_lr / div_factor`` to ``max_lr``, then anneals far below.

    The first ``pct_start`` of ``total_steps`` (or ``epochs * steps_per_epoch``) anneals the
    learning rate up to ``max_lr``, the rest down to ``initial_lr / final_div_factor``, with
    cosine or linear annealing (``anneal_strategy``); ``three_phase=True`` mirrors the warmup
    and then annihilates. With ``cycle_momentum`` the momentum moves inversely between
    ``max_momentum`` and ``base_momentum``: written to ``group["betas"][0]`` for optimizers with
    ``betas`` (Adam), else to ``group["momentum"]`` (SGD, RMSprop). Step it after every batch.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.optim.lr_scheduler import OneCycleLR
        >>> opt = fg.optim.Adam(fg.nn.Linear(2, 1).parameters())
        >>> sched = OneCycleLR(opt, max_lr=1.0, total_steps=5, pct_start=0.4, anneal_strategy="linear")
        >>> lrs, beta1 = [], []
        >>> for _ in range(5):
        ...     lrs.append(round(sched.get_last_lr()[0], 6))
        ...     beta1.append(round(opt.param_groups[0]["betas"][0], 6))
        ...     opt.step({})        # opt.step(loss.backward()) in training
        ...     sched.step()
        >>> lrs
        [0.04, 1.0, 0.666668, 0.333336, 4e-06]
        >>> beta1
        [0.95, 0.85, 0.883333, 0.916667, 0.95]
    """

    def __init__(self, optimizer: Optimizer, max_lr: Union[float, list[float]], total_steps: Optional[int] = None,
                 epochs: Optional[int] = None, steps_per_epoch: Optional[int] = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum: Union[float, list[float]] = 0.85, max_momentum: Union[float, list[float]] = 0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1) -> None:
        _check_optimizer(optimizer, "OneCycleLR")
        self.optimizer = optimizer
        if total_steps is not None:
            if isinstance(total_steps, bool) or not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"OneCycleLR: expected positive integer total_steps, but got {total_steps!r}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"OneCycleLR: expected positive integer epochs, but got {epochs!r}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"OneCycleLR: expected positive integer steps_per_epoch, but got {steps_per_epoch!r}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("OneCycleLR: you must define either total_steps OR (epochs AND steps_per_epoch)")
        if three_phase:
            self._schedule_phases = [
                _phase(float(pct_start * self.total_steps) - 1, "initial_lr", "max_lr", "max_momentum",
                       "base_momentum"),
                _phase(float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr", "base_momentum",
                       "max_momentum"),
                _phase(self.total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            self._schedule_phases = [
                _phase(float(pct_start * self.total_steps) - 1, "initial_lr", "max_lr", "max_momentum",
                       "base_momentum"),
                _phase(self.total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]
        if not isinstance(pct_start, float) or pct_start < 0 or pct_start > 1:
            raise ValueError(f"OneCycleLR: expected float between 0 and 1 pct_start, but got {pct_start!r}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy!r}")
        self._anneal_func_type = anneal_strategy
        max_lrs = _format_param("max_lr", optimizer, max_lr, "OneCycleLR")
        if last_epoch == -1:
            for idx, group in enumerate(optimizer.param_groups):
                group["initial_lr"] = max_lrs[idx] / div_factor
                group["max_lr"] = max_lrs[idx]
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if self.cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(f"OneCycleLR: optimizer must support momentum or beta1 with `cycle_momentum` option "
                                 f"enabled ({type(optimizer).__name__} has neither); pass cycle_momentum=False.")
            self.use_beta1 = "betas" in optimizer.defaults
            max_momentums = _format_param("max_momentum", optimizer, max_momentum, "OneCycleLR")
            base_momentums = _format_param("base_momentum", optimizer, base_momentum, "OneCycleLR")
            if last_epoch == -1:
                for m_momentum, b_momentum, group in zip(max_momentums, base_momentums, optimizer.param_groups):
                    if self.use_beta1:
                        group["betas"] = (m_momentum, *group["betas"][1:])
                    else:
                        group["momentum"] = m_momentum
                    group["max_momentum"] = m_momentum
                    group["base_momentum"] = b_momentum
        super().__init__(optimizer, last_epoch)

    def _anneal_func(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return _annealing_cos(start, end, pct)
        return _annealing_linear(start, end, pct)

    def get_lr(self) -> list:
        """The learning rates at ``last_epoch``; writes the momenta (``momentum`` or ``betas[0]``) as a side effect."""
        self._warn_get_lr()
        lrs = []
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(f"OneCycleLR: tried to step {step_num} times; the specified number of total steps is "
                             f"{self.total_steps}. Build it with total_steps (or epochs * steps_per_epoch) covering "
                             "every scheduler.step() call.")
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == len(self._schedule_phases) - 1:
                    pct = (step_num - start_step) / (end_step - start_step)
                    computed_lr = self._anneal_func(group[phase["start_lr"]], group[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        computed_momentum = self._anneal_func(group[phase["start_momentum"]],
                                                              group[phase["end_momentum"]], pct)
                    break
                start_step = phase["end_step"]
            lrs.append(computed_lr)
            if self.cycle_momentum:
                if self.use_beta1:
                    group["betas"] = (computed_momentum, *group["betas"][1:])
                else:
                    group["momentum"] = computed_momentum
        return lrs
