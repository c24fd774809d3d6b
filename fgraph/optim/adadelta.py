"""Adadelta (``torch.optim.Adadelta``): steps scaled by the ratio of running RMS of updates and gradients."""
from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from fgraph.optim.optimizer import Optimizer, ParamsT, check_hyper

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta (Zeiler, 2012) with PyTorch's arithmetic (pytorch/examples' MNIST default).

    Per step: ``v = rho * v + (1 - rho) * g^2``, ``delta = sqrt(u + eps) / sqrt(v + eps) * g``,
    ``u = rho * u + (1 - rho) * delta^2``, ``p -= lr * delta``. State: ``step``,
    ``square_avg`` (``v``), ``acc_delta`` (``u``). ``weight_decay`` adds ``weight_decay * p`` to the
    gradient; ``maximize`` ascends. ``foreach``, ``capturable`` and ``differentiable`` are accepted
    for compatibility (every group's update is one jitted kernel).

    Example:
        >>> import fgraph as fg
        >>> w = fg.nn.Parameter(fg.tensor([1.0]))
        >>> opt = fg.optim.Adadelta([w])
        >>> opt.step(fg.backward((w * w).sum()))
        >>> round(opt.param_groups[0]["params"][0].item(), 6)  # 1 - sqrt(1e-6) / sqrt(0.4 + 1e-6) * 2
        0.996838
    """

    hyperparameters = ("lr", "rho", "eps", "weight_decay")

    def __init__(self, params: ParamsT, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0.0, foreach: Any = None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False) -> None:
        check_hyper(lr, "learning rate", "Adadelta")
        check_hyper(rho, "rho", "Adadelta", at_most_one=True)
        check_hyper(eps, "epsilon", "Adadelta")
        check_hyper(weight_decay, "weight_decay", "Adadelta")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def static_options(self, group: dict) -> tuple:
        return (group["weight_decay"] != 0, bool(group["maximize"]))

    def init_state(self, param: Any, group: dict) -> dict:
        zeros = jnp.zeros_like(param._array)
        return {"step": jnp.zeros((), jnp.float32), "square_avg": zeros, "acc_delta": zeros}

    @staticmethod
    def update(static: tuple, hyper: dict, params: list, grads: list, states: list) -> tuple[list, list]:
        decay, maximize = static
        lr, rho, eps = hyper["lr"], hyper["rho"], hyper["eps"]
        new_params, new_states = [], []
        for p, g, state in zip(params, grads, states):
            g = -g if maximize else g
            if decay:
                g = g + hyper["weight_decay"] * p
            square_avg = state["square_avg"] * rho + (1 - rho) * g * g
            delta = jnp.sqrt(state["acc_delta"] + eps) / jnp.sqrt(square_avg + eps) * g
            acc_delta = state["acc_delta"] * rho + (1 - rho) * delta * delta
            new_params.append(p - lr * delta)
            new_states.append({"step": state["step"] + 1, "square_avg": square_avg, "acc_delta": acc_delta})
        return new_params, new_states
