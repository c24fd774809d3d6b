"""RAdam (``torch.optim.RAdam``): Adam whose adaptive step is switched on once its variance is tractable."""
from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from fgraph.optim.optimizer import Optimizer, ParamsT, apply_weight_decay, check_hyper

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """Rectified Adam (Liu et al., 2019) with PyTorch's arithmetic.

    Per step ``t``: Adam's moments ``m``, ``v``; ``rho_inf = 2 / (1 - beta2) - 1``,
    ``rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)``. While ``rho_t <= 5`` the step is SGD with
    momentum, ``p -= lr * m / (1 - beta1^t)``; after, it is rectified Adam,
    ``p -= lr * m / (1 - beta1^t) * sqrt(1 - beta2^t) / (sqrt(v) + eps) * r_t`` with
    ``r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))``. The branch is
    chosen inside the kernel (``jnp.where``), so it stays traceable. State: ``step``, ``exp_avg``,
    ``exp_avg_sq``. ``weight_decay`` as in :class:`~fgraph.optim.NAdam` (L2, or decoupled with
    ``decoupled_weight_decay=True``). ``foreach``, ``capturable`` and ``differentiable`` are accepted
    for compatibility.

    Example:
        >>> import fgraph as fg
        >>> w = fg.nn.Parameter(fg.tensor([1.0]))
        >>> opt = fg.optim.RAdam([w], lr=0.1)
        >>> opt.step(fg.backward((w * w).sum()))  # rho_1 = 1 <= 5: an SGD-with-momentum step, lr * g
        >>> round(opt.param_groups[0]["params"][0].item(), 4)
        0.8
    """

    hyperparameters = ("lr", "betas", "eps", "weight_decay")

    def __init__(self, params: ParamsT, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, decoupled_weight_decay: bool = False, *,
                 foreach: Any = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_hyper(lr, "learning rate", "RAdam")
        check_hyper(eps, "epsilon", "RAdam")
        check_hyper(betas[0], "beta parameter at index 0", "RAdam", below_one=True)
        check_hyper(betas[1], "beta parameter at index 1", "RAdam", below_one=True)
        check_hyper(weight_decay, "weight_decay", "RAdam")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def static_options(self, group: dict) -> tuple:
        return (group["weight_decay"] != 0, bool(group["decoupled_weight_decay"]), bool(group["maximize"]))

    def init_state(self, param: Any, group: dict) -> dict:
        zeros = jnp.zeros_like(param._array)
        return {"step": jnp.zeros((), jnp.float32), "exp_avg": zeros, "exp_avg_sq": zeros}

    @staticmethod
    def update(static: tuple, hyper: dict, params: list, grads: list, states: list) -> tuple[list, list]:
        decay, decoupled, maximize = static
        lr, (beta1, beta2), eps, wd = hyper["lr"], hyper["betas"], hyper["eps"], hyper["weight_decay"]
        new_params, new_states = [], []
        for p, g, state in zip(params, grads, states):
            g = -g if maximize else g
            step = state["step"] + 1
            t = step.astype(p.dtype)
            if decay:
                p, g = apply_weight_decay(p, g, lr, wd, decoupled)
            exp_avg = state["exp_avg"] + (1 - beta1) * (g - state["exp_avg"])
            exp_avg_sq = state["exp_avg_sq"] * beta2 + (1 - beta2) * g * g
            bias_correction2 = 1 - beta2**t
            corrected = exp_avg / (1 - beta1**t)
            rho_inf = 2 / (1 - beta2) - 1
            rho_t = rho_inf - 2 * t * beta2**t / bias_correction2
            rectified = rho_t > 5.0
            # Both branches are evaluated: the unused one gets a harmless rho (> 4) instead of rho_t.
            rho = jnp.where(rectified, rho_t, 6.0)
            rect = jnp.sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho))
            adaptive_lr = jnp.sqrt(bias_correction2) / (jnp.sqrt(exp_avg_sq) + eps)
            step_rectified = corrected * lr * adaptive_lr * rect
            new_params.append(p - jnp.where(rectified, step_rectified, corrected * lr))
            new_states.append({"step": step, "exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq})
        return new_params, new_states
