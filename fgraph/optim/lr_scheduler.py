"""``fgraph.optim.lr_scheduler``: PyTorch's learning-rate schedulers, same names, arguments and sequences.

A scheduler rewrites ``group["lr"]`` (and, for :class:`OneCycleLR` and :class:`CyclicLR`,
``group["momentum"]`` or ``group["betas"][0]``) in ``optimizer.param_groups``, which are plain
dicts. The optimizers pass those numbers to their jitted update as traced scalars, so a new
learning rate never recompiles anything. Schedulers are pure Python on floats; the arithmetic
is PyTorch's (the recursive ``get_lr`` forms, the closed forms for ``step(epoch)``), so the
sequences are PyTorch's to the last bit.

Call ``scheduler.step()`` after ``opt.step(grads)``, once per epoch (or per batch for
:class:`OneCycleLR`, :class:`CyclicLR` and :class:`CosineAnnealingWarmRestarts`);
``get_last_lr()`` gives the learning rates in use. ``state_dict()`` holds plain Python values
(never the optimizer, nor LambdaLR's or CyclicLR's functions), so
``fg.save(sched.state_dict(), path)`` and ``sched.load_state_dict(fg.load(path))`` resume the
same sequence.

Example:
    >>> import fgraph as fg
    >>> from fgraph.optim.lr_scheduler import StepLR
    >>> model = fg.nn.Linear(2, 1)
    >>> opt = fg.optim.SGD(model.parameters(), lr=0.1)
    >>> sched = StepLR(opt, step_size=2, gamma=0.5)
    >>> for epoch in range(4):
    ...     opt.step((model(fg.ones(4, 2)) ** 2).mean().backward())
    ...     sched.step()
    >>> sched.get_last_lr(), opt.param_groups[0]["lr"]
    ([0.025], 0.025)
"""
from __future__ import annotations

import functools
import math
import types
import warnings
import weakref
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Callable, Optional, Union

from fgraph.optim.optimizer import Optimizer

__all__ = [
    "LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
    "ExponentialLR", "PolynomialLR", "CosineAnnealingLR", "ChainedScheduler", "SequentialLR",
    "ReduceLROnPlateau", "CosineAnnealingWarmRestarts", "OneCycleLR", "CyclicLR",
]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. "
    "Please use `scheduler.step()` to step the scheduler. During the deprecation, if epoch is different from "
    "None, the closed form is used instead of the new chainable form, where available."
)


def _check_optimizer(optimizer: Any, owner: str) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{owner}: {type(optimizer).__name__} is not an Optimizer; pass an fgraph.optim optimizer "
                        "(fg.optim.SGD(model.parameters(), lr=...)), not a torch one.")


def _format_param(name: str, optimizer: Optimizer, param: Any, owner: str) -> list:
    """One value per param group: a scalar is repeated, a list/tuple must have one per group."""
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(f"{owner}: {name} must have the same length as optimizer.param_groups. {name} has "
                             f"{len(param)} values, param_groups has {len(optimizer.param_groups)}.")
        return list(param)
    return [param] * len(optimizer.param_groups)


def _group_values(optimizer: Optimizer, key: str) -> list:
    return [group[key] for group in optimizer.param_groups]


def _set_lr(optimizer: Optimizer, values: Iterable[Any]) -> None:
    values = list(values)
    if len(values) != len(optimizer.param_groups):
        raise ValueError(f"the scheduler computed {len(values)} learning rates for {len(optimizer.param_groups)} "
                         "param groups; a group was added or removed after the scheduler was built.")
    for group, lr in zip(optimizer.param_groups, values):
        # An int would be a new dtype for the optimizer's kernel (a recompilation): store the same value as a float.
        group["lr"] = float(lr) if isinstance(lr, int) and not isinstance(lr, bool) else lr


def _patch_track_step_called(optimizer: Optimizer) -> None:
    """Wrap ``optimizer.step`` to record that it ran (PyTorch's check of the call order)."""
    if hasattr(optimizer.step, "_wrapped_by_lr_sched"):
        return
    opt_ref = weakref.ref(optimizer)
    func = optimizer.step.__func__

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        opt = opt_ref()
        opt._opt_called = True
        return func.__get__(opt, type(opt))(*args, **kwargs)

    wrapper._wrapped_by_lr_sched = True
    optimizer.step = wrapper


class LRScheduler:
    """Base class of the schedulers: ``last_epoch``, ``base_lrs``, ``step()``, ``get_last_lr()``, state dicts.

    A subclass defines ``get_lr()`` (the next learning rates, from the current ones or from
    ``base_lrs``; called by ``step`` after ``last_epoch`` was advanced) and may define
    ``_get_closed_form_lr()`` (used by the deprecated ``step(epoch)``). Building a scheduler
    with ``last_epoch=-1`` writes ``group["initial_lr"]`` (kept if present) and performs the
    initial step; resuming with ``last_epoch >= 0`` needs ``initial_lr`` in every group.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.optim.lr_scheduler import LRScheduler
        >>> class Halving(LRScheduler):
        ...     def get_lr(self):
        ...         return [base / 2 ** self.last_epoch for base in self.base_lrs]
        >>> opt = fg.optim.SGD(fg.nn.Linear(2, 1).parameters(), lr=0.8)
        >>> sched = Halving(opt)
        >>> for _ in range(3):
        ...     opt.step({})        # opt.step(loss.backward()) in training
        ...     sched.step()
        >>> sched.get_last_lr(), opt.param_groups[0]["initial_lr"]
        ([0.1], 0.8)
    """

    _get_lr_called_within_step: bool = False
    _is_initial: bool = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer, type(self).__name__)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"{type(self).__name__}: param 'initial_lr' is not specified in param_groups[{i}] when "
                        f"resuming a scheduler with last_epoch={last_epoch}. Load the optimizer's state_dict (it "
                        "holds initial_lr) before building the scheduler, or build it with last_epoch=-1 and "
                        "load the scheduler's state_dict."
                    )
        self.base_lrs: list = _group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        _patch_track_step_called(optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict:
        """Every attribute but the optimizer (plain Python values: ``fg.save`` writes it)."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a state from :meth:`state_dict` (fgraph's or PyTorch's)."""
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list:
        """The learning rates the last ``step`` set, one per param group."""
        return self._last_lr

    def get_lr(self) -> list:
        """The next learning rates (called by ``step``; to read the current ones use ``get_last_lr``)."""
        raise NotImplementedError(f"{type(self).__name__} must define get_lr()")

    def step(self, epoch: Optional[int] = None) -> None:
        """Advance one epoch and write the new learning rates; call it after ``opt.step(grads)``.

        ``epoch`` (deprecated, as in PyTorch) sets ``last_epoch`` and uses the closed form where there is one.
        """
        if self._step_count == 1:
            if not hasattr(self.optimizer.step, "_wrapped_by_lr_sched"):
                warnings.warn("Seems like `optimizer.step()` has been overridden after learning rate scheduler "
                              "initialization. Please, make sure to call `optimizer.step()` before "
                              "`lr_scheduler.step()`.", UserWarning, stacklevel=2)
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. Call "
                              "`opt.step(grads)` first, then `scheduler.step()`; otherwise the first value of the "
                              "learning rate schedule is skipped.", UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: Optional[int] = None) -> None:
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                values = self._get_closed_form_lr() if hasattr(self, "_get_closed_form_lr") else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        _set_lr(self.optimizer, values)
        self._last_lr = _group_values(self.optimizer, "lr")

    def _warn_get_lr(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=3)


def _lr_lambdas(optimizer: Optimizer, lr_lambda: Any, owner: str) -> list:
    if not isinstance(lr_lambda, (list, tuple)):
        lambdas = [lr_lambda] * len(optimizer.param_groups)
    elif len(lr_lambda) != len(optimizer.param_groups):
        raise ValueError(f"{owner}: expected {len(optimizer.param_groups)} lr_lambdas (one per param group), "
                         f"but got {len(lr_lambda)}")
    else:
        lambdas = list(lr_lambda)
    for fn in lambdas:
        if not callable(fn):
            raise TypeError(f"{owner}: lr_lambda should be a function of the epoch, but got {type(fn).__name__}")
    return lambdas


class _LambdaState(LRScheduler):
    """The state dict of the lambda schedulers: functions are left out, callable objects keep their ``__dict__``."""

    def state_dict(self) -> dict:
        state = {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                               for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state = dict(state_dict)
        lr_lambdas = state.pop("lr_lambdas")
        self.__dict__.update(state)
        for fn, saved in zip(self.lr_lambdas, lr_lambdas):
            if saved is not None:
                fn.__dict__.update(saved)


class LambdaLR(_LambdaState):
    """``lr = base_lr * lr_lambda(epoch)``; ``lr_lambda`` is a function, or a list with one per param group.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.optim.lr_scheduler import LambdaLR
        >>> def warmup(epoch):
        ...     return min(1.0, (epoch + 1) / 3)
        >>> opt = fg.optim.SGD(fg.nn.Linear(2, 1).parameters(), lr=0.3)
        >>> sched = LambdaLR(opt, lr_lambda=warmup)
        >>> lrs = []
        >>> for _ in range(4):
        ...     lrs.append(round(sched.get_last_lr()[0], 6))
        ...     opt.step({})        # opt.step(loss.backward()) in training
        ...     sched.step()
        >>> lrs
        [0.1, 0.2, 0.3, 0.3]
    """

    def __init__(self, optimizer: Optimizer, lr_lambda: Union[Callable[[int], float], Sequence[Callable]],
                 last_epoch: int = -1) -> None:
        _check_optimizer(optimizer, "LambdaLR")
        self.optimizer = optimizer
        self.lr_lambdas = _lr_lambdas(optimizer, lr_lambda, "LambdaLR")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_get_lr()
        return [base_lr * fn(self.last_epoch) for fn, base_lr in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaState):
    """``lr = lr * lr_lambda(epoch)`` at every step after the first (the factor compounds).

    Example:
        >>> import fgraph as fg
        >>> from fgraph.optim.lr_scheduler import MultiplicativeLR
        >>> def factor(epoch):
        ...     return 0.5
        >>> opt = fg.optim.SGD(fg.nn.Linear(2, 1).parameters(), lr=0.8)
        >>> sched = MultiplicativeLR(opt, lr_lambda=factor)
        >>> for _ in range(3):
        ...     opt.step({})        # opt.step(loss.backward()) in training
        ...     sched.step()
        >>> sched.get_last_lr()
        [0.1]
    """

    def __init__(self, optimizer: Optimizer, lr_lambda: Union[Callable[[int], float], Sequence[Callable]],
                 last_epoch: int = -1) -> None:
        _check_optimizer(optimizer, "MultiplicativeLR")
        self.optimizer = optimizer
        self.lr_lambdas = _lr_lambdas(optimizer, lr_lambda, "MultiplicativeLR")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_get_lr()
        if self._is_initial:
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * fn(self.last_epoch) for fn, group in zip(self.lr_lambdas, self.optimizer.param_groups)]


def _check_positive(value: Any, name: str, owner: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{owner}: expected a positive number of epochs {name}, but got {value!r}")


class StepLR(LRScheduler):
    """``lr = base_lr * gamma ** (epoch // step_size)``: decay by ``gamma`` every ``step_size`` epochs.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.optim.lr_scheduler import StepLR
        >>> opt = fg.optim.SGD(fg.nn.Linear(2, 1).parameters(), lr=0.1)
        >>> sched = StepLR(opt, step_size=2, gamma=0.5)
        >>> lrs = []
        >>> for _ in range(5):
        ...     lrs.append(sched.get_last_lr()[0])
        ...     opt.step({})        # opt.step(loss.backward()) in training
        ...     sched.step()
        >>> lrs
        [0.1, 0.1, 0.05, 0.05, 0.025]
    """

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        _check_positive(step_size, "step_size", "StepLR")
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_get_lr()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Decay by ``gamma`` at each epoch listed in ``milestones`` (by ``gamma ** n`` if it is listed ``n`` times).

    Example:
        >>> import fgraph as fg
        >>> from fgraph.optim.lr_scheduler import MultiStepLR
        >>> opt = fg.optim.SGD(fg.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = MultiStepLR(opt, milestones=[1, 3], gamma=0.5)
        >>> lrs = []
        >>> for _ in range(5):
        ...     lrs.append(sched.get_last_lr()[0])
        ...     opt.step({})        # opt.step(loss.backward()) in training
        ...     sched.step()
        >>> lrs
        [1.0, 0.5, 0.5, 0.25, 0.25]
    """

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_get_lr()
        if self.last_epoch not in self.milestones:
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * self.gamma ** self.milestones[self.last_epoch] for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        milestones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch) for base_lr in self.base_lrs]

    def load_state_dict(self, state_dict: dict) -> None:
        super().load_state_dict(state_dict)
        self.milestones = Counter(self.milestones)  # a checkpoint gives a plain dict back


class ConstantLR(LRScheduler):
    """``lr = base_lr * factor`` for the first ``total_iters`` epochs, then ``base_lr``.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.optim.lr_scheduler import ConstantLR
        >>> opt = fg.optim.SGD(fg.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = ConstantLR(opt, factor=0.5, total_iters=2)
        >>> lrs = []
        >>> for _ in range(4):
        ...     lrs.append(sched.get_last_lr()[0])
        ...     opt.step({})        # opt.step(loss.backward()) in training
        ...     sched.step()
        >>> lrs
        [0.5, 0.5, 1.0, 1.0]
    """

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError(f"ConstantLR: constant multiplicative factor expected to be between 0 and 1, got {factor}")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_get_lr()
        if self.last_epoch == 0:
            return [group["lr"] * self.factor for group in self.optimizer.param_groups]
        if self.last_epoch != self.total_iters:
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * (1.0 / self.factor) for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [base_lr * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """The factor on ``base_lr`` goes linearly from ``start_factor`` to ``end_factor`` over ``total_iters`` epochs.

    ``lr = base_lr * (start + (end - start) * min(epoch, total_iters) / total_iters)`` (a linear warmup by default).

    Example:
        >>> import fgraph as fg
        >>> from fgraph.optim.lr_scheduler import LinearLR
        >>> opt = fg.optim.SGD(fg.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = LinearLR(opt, start_factor=0.25, total_iters=3)
        >>> lrs = []
        >>> for _ in range(5):
        ...     lrs.append(round(sched.get_last_lr()[0], 6))
        ...     opt.step({})        # opt.step(loss.backward()) in training
        ...     sched.step()
        >>> lrs
        [0.25, 0.5, 0.75, 1.0, 1.0]
    """

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("LinearLR: starting multiplicative factor expected to be greater than 0 and less or "
                             f"equal to 1, got {start_factor}")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError(f"LinearLR: ending multiplicative factor expected to be between 0 and 1, got {end_factor}")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_get_lr()
        if self.last_epoch == 0:
            return [group["lr"] * self.start_factor for group in self.optimizer.param_groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return _group_values(self.optimizer, "lr")
        delta = self.end_factor - self.start_factor
        ratio = 1.0 + delta / (self.total_iters * self.start_factor + (self.last_epoch - 1) * delta)
        return [group["lr"] * ratio for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [base_lr * (self.start_factor + (self.end_factor - self.start_factor)
                           * min(self.total_iters, self.last_epoch) / self.total_iters)
                for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """``lr = base_lr * gamma ** epoch``.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.optim.lr_scheduler import ExponentialLR
        >>> opt = fg.optim.SGD(fg.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = ExponentialLR(opt, gamma=0.5)
        >>> lrs = []
        >>> for _ in range(4):
        ...     lrs.append(sched.get_last_lr()[0])
        ...     opt.step({})        # opt.step(loss.backward()) in training
        ...     sched.step()
        >>> lrs
        [1.0, 0.5, 0.25, 0.125]
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_get_lr()
        if self._is_initial:  # resuming: the initial step must not decay once more
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]


class PolynomialLR(LRScheduler):
    """``lr = base_lr * (1 - min(epoch, total_iters) / total_iters) ** power``.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.optim.lr_scheduler import PolynomialLR
        >>> opt = fg.optim.SGD(fg.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = PolynomialLR(opt, total_iters=4, power=1.0)
        >>> lrs = []
        >>> for _ in range(6):
        ...     lrs.append(round(sched.get_last_lr()[0], 6))
        ...     opt.step({})        # opt.step(loss.backward()) in training
        ...     sched.step()
        >>> lrs
        [1.0, 0.75, 0.5, 0.25, 0.0, 0.0]
    """

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_get_lr()
        if self._is_initial or self.last_epoch > self.total_iters:
            return _group_values(self.optimizer, "lr")
        decay = ((1.0 - self.last_epoch / self.total_iters) / (1.0 - (self.last_epoch - 1) / self.total_iters)) \
            ** self.power
        return [group["lr"] * decay for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [base_lr * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
                for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """``lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2`` (SGDR without restarts).

    PyTorch's recursive form: each step rescales the current ``lr``, so changes made to it
    from outside carry on; past ``T_max`` the cosine rises again (period ``2 * T_max``).

    Example:
        >>> import fgraph as fg
        >>> from fgraph.optim.lr_scheduler import CosineAnnealingLR
        >>> opt = fg.optim.SGD(fg.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = CosineAnnealingLR(opt, T_max=4, eta_min=0.0)
        >>> lrs = []
        >>> for _ in range(5):
        ...     lrs.append(round(sched.get_last_lr()[0], 6))
        ...     opt.step({})        # opt.step(loss.backward()) in training
        ...     sched.step()
        >>> lrs
        [1.0, 0.853553, 0.5, 0.146447, 0.0]
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:
        _check_positive(T_max, "T_max", "CosineAnnealingLR")
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_get_lr()
        groups = self.optimizer.param_groups
        if self._is_initial:
            return _group_values(self.optimizer, "lr")
        if self._step_count == 1 and self.last_epoch > 0:
            return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(self.last_epoch * math.pi / self.T_max)) / 2
                    for base_lr in self.base_lrs]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return [group["lr"] + (base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
                    for base_lr, group in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * self.last_epoch / self.T_max))
                / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max))
                * (group["lr"] - self.eta_min) + self.eta_min
                for group in groups]

    def _get_closed_form_lr(self) -> list:
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]


from fgraph.optim._lr_scheduler_more import (  # noqa: E402  (they subclass LRScheduler)
    ChainedScheduler,
    CosineAnnealingWarmRestarts,
    OneCycleLR,
    ReduceLROnPlateau,
    SequentialLR,
)
from fgraph.optim._lr_scheduler_cyclic import CyclicLR  # noqa: E402

for _cls in (ChainedScheduler, CosineAnnealingWarmRestarts, OneCycleLR, ReduceLROnPlateau, SequentialLR, CyclicLR):
    _cls.__module__ = __name__  # they are documented and pickled as fgraph.optim.lr_scheduler.<name>
del _cls
