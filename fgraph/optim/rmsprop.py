"""RMSprop with momentum and the centered variant (``torch.optim.RMSprop``)."""
from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from fgraph.optim.optimizer import Optimizer, ParamsT, check_hyper

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """``v = alpha * v + (1 - alpha) * g^2``; ``p -= lr * g / (sqrt(v) + eps)``, PyTorch's arithmetic.

    ``centered=True`` divides by ``sqrt(v - m^2) + eps`` with ``m`` the running mean of ``g``;
    ``momentum > 0`` keeps ``buf = momentum * buf + g / (sqrt(v) + eps)`` and steps by ``lr * buf``.

    Example:
        >>> import fgraph as fg
        >>> opt = fg.optim.RMSprop(fg.nn.Linear(2, 1).parameters(), lr=1e-2, centered=True, momentum=0.9)
        >>> sorted(opt.defaults)[:4]
        ['alpha', 'capturable', 'centered', 'differentiable']
    """

    hyperparameters = ("lr", "alpha", "eps", "weight_decay", "momentum")

    def __init__(self, params: ParamsT, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False, capturable: bool = False,
                 foreach: Any = None, maximize: bool = False, differentiable: bool = False) -> None:
        for value, name in ((lr, "learning rate"), (eps, "epsilon"), (momentum, "momentum"),
                            (weight_decay, "weight_decay"), (alpha, "alpha value")):
            check_hyper(value, name, "RMSprop")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def static_options(self, group: dict) -> tuple:
        return (group["weight_decay"] != 0, group["momentum"] > 0, bool(group["centered"]), bool(group["maximize"]))

    def init_state(self, param: Any, group: dict) -> dict:
        zeros = jnp.zeros_like(param._array)
        state = {"step": jnp.zeros((), jnp.float32), "square_avg": zeros}
        if group["momentum"] > 0:
            state["momentum_buffer"] = zeros
        if group["centered"]:
            state["grad_avg"] = zeros
        return state

    @staticmethod
    def update(static: tuple, hyper: dict, params: list, grads: list, states: list) -> tuple[list, list]:
        decay, use_momentum, centered, maximize = static
        lr, alpha, eps = hyper["lr"], hyper["alpha"], hyper["eps"]
        new_params, new_states = [], []
        for p, g, state in zip(params, grads, states):
            g = -g if maximize else g
            if decay:
                g = g + hyper["weight_decay"] * p
            new_state = {"step": state["step"] + 1}
            square_avg = new_state["square_avg"] = state["square_avg"] * alpha + (1 - alpha) * g * g
            if centered:
                grad_avg = new_state["grad_avg"] = state["grad_avg"] + (1 - alpha) * (g - state["grad_avg"])
                avg = jnp.sqrt(square_avg - grad_avg * grad_avg)
            else:
                avg = jnp.sqrt(square_avg)
            avg = avg + eps
            if use_momentum:
                buf = new_state["momentum_buffer"] = state["momentum_buffer"] * hyper["momentum"] + g / avg
                p = p - lr * buf
            else:
                p = p - lr * g / avg
            new_params.append(p)
            new_states.append(new_state)
        return new_params, new_states
