"""Adamax (``torch.optim.Adamax``): Adam with the infinity norm in place of the second moment."""
from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from fgraph.optim.optimizer import Optimizer, ParamsT, check_hyper

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax (Kingma & Ba, 2014, section 7) with PyTorch's arithmetic.

    Per step: ``m = lerp(m, g, 1 - beta1)``, ``u = max(beta2 * u, |g| + eps)``,
    ``p -= lr / (1 - beta1^t) * m / u``. State: ``step``, ``exp_avg`` (``m``), ``exp_inf`` (``u``).
    ``weight_decay`` adds ``weight_decay * p`` to the gradient; ``maximize`` ascends. ``foreach``,
    ``capturable`` and ``differentiable`` are accepted for compatibility.

    Example:
        >>> import fgraph as fg
        >>> w = fg.nn.Parameter(fg.tensor([1.0, -2.0]))
        >>> opt = fg.optim.Adamax([w], lr=0.1)
        >>> opt.step(fg.backward((w * w).sum()))
        >>> [round(v, 4) for v in opt.param_groups[0]["params"][0].tolist()]  # first step: lr * sign(g)
        [0.9, -1.9]
    """

    hyperparameters = ("lr", "betas", "eps", "weight_decay")

    def __init__(self, params: ParamsT, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, foreach: Any = None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_hyper(lr, "learning rate", "Adamax")
        check_hyper(eps, "epsilon", "Adamax")
        check_hyper(betas[0], "beta parameter at index 0", "Adamax", below_one=True)
        check_hyper(betas[1], "beta parameter at index 1", "Adamax", below_one=True)
        check_hyper(weight_decay, "weight_decay", "Adamax")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def static_options(self, group: dict) -> tuple:
        return (group["weight_decay"] != 0, bool(group["maximize"]))

    def init_state(self, param: Any, group: dict) -> dict:
        zeros = jnp.zeros_like(param._array)
        return {"step": jnp.zeros((), jnp.float32), "exp_avg": zeros, "exp_inf": zeros}

    @staticmethod
    def update(static: tuple, hyper: dict, params: list, grads: list, states: list) -> tuple[list, list]:
        decay, maximize = static
        lr, (beta1, beta2), eps = hyper["lr"], hyper["betas"], hyper["eps"]
        new_params, new_states = [], []
        for p, g, state in zip(params, grads, states):
            g = -g if maximize else g
            step = state["step"] + 1
            if decay:
                g = g + hyper["weight_decay"] * p
            exp_avg = state["exp_avg"] + (1 - beta1) * (g - state["exp_avg"])
            exp_inf = jnp.maximum(state["exp_inf"] * beta2, jnp.abs(g) + eps)
            clr = lr / (1 - beta1 ** step.astype(p.dtype))
            new_params.append(p - clr * (exp_avg / exp_inf))
            new_states.append({"step": step, "exp_avg": exp_avg, "exp_inf": exp_inf})
        return new_params, new_states
