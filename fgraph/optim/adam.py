"""Adam and AdamW (``torch.optim.Adam``, ``torch.optim.AdamW``), with AMSGrad and ``maximize``."""
from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from fgraph.optim.optimizer import Optimizer, ParamsT, apply_weight_decay, check_hyper

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam (Kingma & Ba, 2014) with PyTorch's arithmetic.

    Per step: ``m = lerp(m, g, 1 - beta1)``, ``v = beta2 * v + (1 - beta2) * g * g``,
    ``p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)`` (``v`` replaced by its
    running maximum with ``amsgrad``). ``weight_decay`` adds ``weight_decay * p`` to the
    gradient (L2); with ``decoupled_weight_decay=True`` it scales ``p`` by ``1 - lr * weight_decay``
    first instead (AdamW).

    Example:
        >>> import fgraph as fg
        >>> model = fg.nn.Linear(3, 1)
        >>> opt = fg.optim.Adam(model.parameters(), lr=1e-2)
        >>> loss = (model(fg.ones(4, 3)) ** 2).mean()
        >>> opt.step(loss.backward())
        >>> int(opt.state[model.weight]["step"].item())
        1
    """

    hyperparameters = ("lr", "betas", "eps", "weight_decay")

    def __init__(self, params: ParamsT, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, amsgrad: bool = False, *, foreach: Any = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False, fused: Any = None,
                 decoupled_weight_decay: bool = False) -> None:
        name = type(self).__name__
        check_hyper(lr, "learning rate", name)
        check_hyper(eps, "epsilon", name)
        check_hyper(betas[0], "beta parameter at index 0", name, below_one=True)
        check_hyper(betas[1], "beta parameter at index 1", name, below_one=True)
        check_hyper(weight_decay, "weight_decay", name)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable, differentiable=differentiable,
                        fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def static_options(self, group: dict) -> tuple:
        return (group["weight_decay"] != 0, bool(group["decoupled_weight_decay"]), bool(group["amsgrad"]),
                bool(group["maximize"]))

    def init_state(self, param: Any, group: dict) -> dict:
        zeros = jnp.zeros_like(param._array)
        state = {"step": jnp.zeros((), jnp.float32), "exp_avg": zeros, "exp_avg_sq": zeros}
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = zeros
        return state

    @staticmethod
    def update(static: tuple, hyper: dict, params: list, grads: list, states: list) -> tuple[list, list]:
        decay, decoupled, amsgrad, maximize = static
        lr, (beta1, beta2), eps, wd = hyper["lr"], hyper["betas"], hyper["eps"], hyper["weight_decay"]
        new_params, new_states = [], []
        for p, g, state in zip(params, grads, states):
            g = -g if maximize else g
            step = state["step"] + 1
            if decay:
                p, g = apply_weight_decay(p, g, lr, wd, decoupled)
            exp_avg = state["exp_avg"] + (1 - beta1) * (g - state["exp_avg"])
            exp_avg_sq = state["exp_avg_sq"] * beta2 + (1 - beta2) * g * g
            t = step.astype(p.dtype)  # the bias corrections in the parameter's precision (float64 when it is)
            step_size = lr / (1 - beta1**t)
            bias_correction2_sqrt = jnp.sqrt(1 - beta2**t)
            new_state = {"step": step, "exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq}
            second = exp_avg_sq
            if amsgrad:
                second = new_state["max_exp_avg_sq"] = jnp.maximum(state["max_exp_avg_sq"], exp_avg_sq)
            denom = jnp.sqrt(second) / bias_correction2_sqrt + eps
            new_params.append(p - step_size * exp_avg / denom)
            new_states.append(new_state)
        return new_params, new_states


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2019): ``p *= 1 - lr * weight_decay`` before
    the Adam update. Default ``weight_decay=1e-2``.

    Example:
        >>> import fgraph as fg
        >>> opt = fg.optim.AdamW(fg.nn.Linear(2, 2).parameters())
        >>> opt.param_groups[0]["weight_decay"], opt.param_groups[0]["decoupled_weight_decay"]
        (0.01, True)
    """

    def __init__(self, params: ParamsT, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: Any = None, capturable: bool = False, differentiable: bool = False,
                 fused: Any = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
