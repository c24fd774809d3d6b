"""Adagrad (``torch.optim.Adagrad``): per-coordinate steps scaled by the root of the summed squared gradients."""
from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from fgraph.optim.optimizer import Optimizer, ParamsT, check_hyper

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """``s += g^2``; ``p -= lr / (1 + (t - 1) * lr_decay) * g / (sqrt(s) + eps)``, PyTorch's arithmetic.

    Example:
        >>> import fgraph as fg
        >>> w = fg.nn.Parameter(fg.tensor([2.0]))
        >>> opt = fg.optim.Adagrad([w], lr=0.5)
        >>> opt.step(fg.backward((w * w).sum()))
        >>> opt.param_groups[0]["params"][0].tolist()
        [1.5]
    """

    hyperparameters = ("lr", "lr_decay", "weight_decay", "eps")

    def __init__(self, params: ParamsT, lr: float = 1e-2, lr_decay: float = 0.0, weight_decay: float = 0.0,
                 initial_accumulator_value: float = 0.0, eps: float = 1e-10, foreach: Any = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: Any = None) -> None:
        for value, name in ((lr, "learning rate"), (lr_decay, "lr_decay"), (weight_decay, "weight_decay"),
                            (initial_accumulator_value, "initial_accumulator_value"), (eps, "epsilon")):
            check_hyper(value, name, "Adagrad")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    def static_options(self, group: dict) -> tuple:
        return (group["weight_decay"] != 0, bool(group["maximize"]))

    def init_state(self, param: Any, group: dict) -> dict:
        return {"step": jnp.zeros((), jnp.float32),
                "sum": jnp.full_like(param._array, group["initial_accumulator_value"])}

    @staticmethod
    def update(static: tuple, hyper: dict, params: list, grads: list, states: list) -> tuple[list, list]:
        decay, maximize = static
        new_params, new_states = [], []
        for p, g, state in zip(params, grads, states):
            g = -g if maximize else g
            step = state["step"] + 1
            if decay:
                g = g + hyper["weight_decay"] * p
            clr = hyper["lr"] / (1 + (step.astype(p.dtype) - 1) * hyper["lr_decay"])
            total = state["sum"] + g * g
            new_params.append(p - clr * g / (jnp.sqrt(total) + hyper["eps"]))
            new_states.append({"step": step, "sum": total})
        return new_params, new_states
