""":class:`CyclicLR` of ``fgraph.optim.lr_scheduler`` (cyclical learning rates, with the momentum cycled
inversely). Import it from ``fgraph.optim.lr_scheduler``."""
from __future__ import annotations

import functools
import math
import types
from typing import Any, Callable, Optional, Union

from fgraph.optim.lr_scheduler import LRScheduler, _check_optimizer, _format_param
from fgraph.optim.optimizer import Optimizer

__all__ = ["CyclicLR"]

_MODES = ("triangular", "triangular2", "exp_range")


def _triangular_scale(x: float) -> float:
    return 1.0


def _triangular2_scale(x: float) -> float:
    return 1 / (2.0 ** (x - 1))


def _exp_range_scale(gamma: float, x: float) -> float:
    return gamma**x


class CyclicLR(LRScheduler):
    """Cyclical learning rates: ``lr`` goes linearly from ``base_lr`` up to ``max_lr`` and back, cycle after cycle.

    A cycle lasts ``step_size_up + step_size_down`` steps (``step_size_down`` defaults to
    ``step_size_up``). At step ``t`` the cycle is ``c = floor(1 + t / total)`` and the height
    rises from 0 to 1 over the first ``step_size_up`` steps of it, then falls back to 0;
    ``lr = base_lr + (max_lr - base_lr) * height * scale``, where ``scale`` is 1
    (``mode="triangular"``), ``1 / 2 ** (c - 1)`` (``"triangular2"``: the amplitude halves every
    cycle), ``gamma ** t`` (``"exp_range"``), or a custom ``scale_fn(c)`` (``scale_mode="cycle"``)
    or ``scale_fn(t)`` (``"iterations"``), which overrides ``mode``. Building it sets every
    group's ``lr`` to ``base_lr``; ``max_lr`` may not be reached when ``scale < 1``.

    With ``cycle_momentum`` (the default) the momentum moves inversely, from ``max_momentum``
    at ``base_lr`` to ``base_momentum`` at ``max_lr``: written to ``group["betas"][0]`` for
    optimizers with ``betas`` (Adam), else to ``group["momentum"]`` (SGD, RMSprop); an optimizer
    with neither (Adagrad) needs ``cycle_momentum=False``. Step it after every batch.
    ``state_dict()`` leaves a ``scale_fn`` function out (a callable object keeps its ``__dict__``).

    Example:
        >>> import fgraph as fg
        >>> from fgraph.optim.lr_scheduler import CyclicLR
        >>> opt = fg.optim.SGD(fg.nn.Linear(2, 1).parameters(), lr=0.1, momentum=0.9)
        >>> sched = CyclicLR(opt, base_lr=0.1, max_lr=0.5, step_size_up=2, mode="triangular2")
        >>> lrs, momenta = [], []
        >>> for _ in range(9):
        ...     lrs.append(round(sched.get_last_lr()[0], 6))
        ...     momenta.append(round(opt.param_groups[0]["momentum"], 6))
        ...     opt.step({})        # opt.step(loss.backward()) in training
        ...     sched.step()
        >>> lrs
        [0.1, 0.3, 0.5, 0.3, 0.1, 0.2, 0.3, 0.2, 0.1]
        >>> momenta
        [0.9, 0.85, 0.8, 0.85, 0.9, 0.875, 0.85, 0.875, 0.9]
    """

    def __init__(self, optimizer: Optimizer, base_lr: Union[float, list[float]], max_lr: Union[float, list[float]],
                 step_size_up: int = 2000, step_size_down: Optional[int] = None, mode: str = "triangular",
                 gamma: float = 1.0, scale_fn: Optional[Callable[[float], float]] = None, scale_mode: str = "cycle",
                 cycle_momentum: bool = True, base_momentum: Union[float, list[float]] = 0.8,
                 max_momentum: Union[float, list[float]] = 0.9, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer, "CyclicLR")
        self.optimizer = optimizer
        base_lrs = _format_param("base_lr", optimizer, base_lr, "CyclicLR")
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = _format_param("max_lr", optimizer, max_lr, "CyclicLR")
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        # Attributes are set in PyTorch's order, so the state dicts list the same keys in the same order.
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in _MODES and scale_fn is None:
            raise ValueError(f"CyclicLR: mode is invalid and scale_fn is None (mode {mode!r}); use 'triangular', "
                             "'triangular2' or 'exp_range', or pass a scale_fn.")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(f"CyclicLR: optimizer must support momentum or beta1 with `cycle_momentum` option "
                                 f"enabled ({type(optimizer).__name__} has neither); pass cycle_momentum=False.")
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = _format_param("base_momentum", optimizer, base_momentum, "CyclicLR")
            self.max_momentums = _format_param("max_momentum", optimizer, max_momentum, "CyclicLR")
            if last_epoch == -1:
                for m_momentum, b_momentum, group in zip(self.max_momentums, self.base_momentums,
                                                         optimizer.param_groups):
                    self._set_momentum(group, m_momentum)
                    group["max_momentum"] = m_momentum
                    group["base_momentum"] = b_momentum
        super().__init__(optimizer, last_epoch)
        # The initial step ran with the groups' initial_lr (kept if another scheduler wrote it); then base_lr rules.
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self._scale_fn_ref = _triangular_scale
            self.scale_mode = "cycle"
        elif self.mode == "triangular2":
            self._scale_fn_ref = _triangular2_scale
            self.scale_mode = "cycle"
        elif self.mode == "exp_range":
            self._scale_fn_ref = functools.partial(_exp_range_scale, self.gamma)
            self.scale_mode = "iterations"

    def scale_fn(self, x: float) -> float:
        """The amplitude's scale at ``x`` (the cycle, or the step for ``scale_mode="iterations"``)."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        return self._scale_fn_ref(x)

    def _set_momentum(self, group: dict, momentum: float) -> None:
        if self.use_beta1:
            group["betas"] = (momentum, *group["betas"][1:])
        else:
            group["momentum"] = momentum

    def get_lr(self) -> list:
        """The learning rates at ``last_epoch`` (a batch index); writes the momenta as a side effect."""
        self._warn_get_lr()
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        at = cycle if self.scale_mode == "cycle" else self.last_epoch
        # scale_fn is called once per group and value, as PyTorch does (a stateful scale_fn sees the same calls).
        lrs = [base_lr + (max_lr - base_lr) * scale_factor * self.scale_fn(at)
               for base_lr, max_lr in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            groups = self.optimizer.param_groups
            if len(groups) != len(self.max_momentums):
                raise ValueError(f"CyclicLR: {len(self.max_momentums)} momenta for {len(groups)} param groups; a "
                                 "group was added or removed after the scheduler was built.")
            for group, base_momentum, max_momentum in zip(groups, self.base_momentums, self.max_momentums):
                self._set_momentum(group, max_momentum - (max_momentum - base_momentum) * scale_factor
                                   * self.scale_fn(at))
        return lrs

    def state_dict(self) -> dict:
        """Every attribute but the optimizer and the scale function (a ``scale_fn`` object keeps its ``__dict__``)."""
        state = {key: value for key, value in self.__dict__.items()
                 if key not in ("optimizer", "_scale_fn_ref", "_scale_fn_custom")}
        fn = self._scale_fn_custom
        state["_scale_fn_custom"] = None if fn is None or isinstance(fn, types.FunctionType) else fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a state from :meth:`state_dict` (fgraph's or PyTorch's); the scale function is rebuilt from ``mode``."""
        state = dict(state_dict)
        saved = state.pop("_scale_fn_custom", None)
        self.__dict__.update(state)
        if saved is not None:
            if self._scale_fn_custom is None:
                raise ValueError("CyclicLR.load_state_dict: the state holds a scale_fn object's attributes, but this "
                                 "scheduler was built without scale_fn; build it with the same scale_fn first.")
            self._scale_fn_custom.__dict__.update(saved)
        self._init_scale_fn()
