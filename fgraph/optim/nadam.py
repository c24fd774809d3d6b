"""NAdam (``torch.optim.NAdam``): Adam with Nesterov momentum and a momentum warm-up schedule."""
from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from fgraph.optim.optimizer import Optimizer, ParamsT, apply_weight_decay, check_hyper

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """NAdam (Dozat, 2016) with PyTorch's arithmetic and its momentum decay schedule.

    Per step ``t``: ``mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay))``, ``mu_product *= mu_t``,
    ``m = lerp(m, g, 1 - beta1)``, ``v = beta2 * v + (1 - beta2) * g^2``,
    ``denom = sqrt(v / (1 - beta2^t)) + eps``, and
    ``p -= lr * (1 - mu_t) / (1 - mu_product) * g / denom + lr * mu_{t+1} / (1 - mu_product * mu_{t+1}) * m / denom``.
    State: ``step``, ``mu_product``, ``exp_avg``, ``exp_avg_sq``. ``weight_decay`` adds
    ``weight_decay * p`` to the gradient, or with ``decoupled_weight_decay=True`` scales ``p`` by
    ``1 - lr * weight_decay`` first (NAdamW). ``foreach``, ``capturable`` and ``differentiable`` are
    accepted for compatibility.

    Example:
        >>> import fgraph as fg
        >>> opt = fg.optim.NAdam(fg.nn.Linear(2, 1).parameters(), weight_decay=0.01, decoupled_weight_decay=True)
        >>> opt.param_groups[0]["momentum_decay"], opt.param_groups[0]["lr"]
        (0.004, 0.002)
    """

    hyperparameters = ("lr", "betas", "eps", "weight_decay", "momentum_decay")

    def __init__(self, params: ParamsT, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: Any = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        check_hyper(lr, "learning rate", "NAdam")
        check_hyper(eps, "epsilon", "NAdam")
        check_hyper(betas[0], "beta parameter at index 0", "NAdam", below_one=True)
        check_hyper(betas[1], "beta parameter at index 1", "NAdam", below_one=True)
        check_hyper(weight_decay, "weight_decay", "NAdam")
        check_hyper(momentum_decay, "momentum_decay", "NAdam")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def static_options(self, group: dict) -> tuple:
        return (group["weight_decay"] != 0, bool(group["decoupled_weight_decay"]), bool(group["maximize"]))

    def init_state(self, param: Any, group: dict) -> dict:
        zeros = jnp.zeros_like(param._array)
        return {"step": jnp.zeros((), jnp.float32), "mu_product": jnp.ones((), jnp.float32),
                "exp_avg": zeros, "exp_avg_sq": zeros}

    @staticmethod
    def update(static: tuple, hyper: dict, params: list, grads: list, states: list) -> tuple[list, list]:
        decay, decoupled, maximize = static
        lr, (beta1, beta2), eps = hyper["lr"], hyper["betas"], hyper["eps"]
        wd, momentum_decay = hyper["weight_decay"], hyper["momentum_decay"]
        new_params, new_states = [], []
        for p, g, state in zip(params, grads, states):
            g = -g if maximize else g
            step = state["step"] + 1
            t = step.astype(p.dtype)
            if decay:
                p, g = apply_weight_decay(p, g, lr, wd, decoupled)
            mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * momentum_decay))
            mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
            # The product is kept in its state's precision (float32, as PyTorch's), the rest in the parameter's.
            mu_product = state["mu_product"] * mu.astype(state["mu_product"].dtype)
            product = mu_product.astype(p.dtype)
            exp_avg = state["exp_avg"] + (1 - beta1) * (g - state["exp_avg"])
            exp_avg_sq = state["exp_avg_sq"] * beta2 + (1 - beta2) * g * g
            denom = jnp.sqrt(exp_avg_sq / (1 - beta2**t)) + eps
            p = p + (-lr * (1.0 - mu) / (1.0 - product)) * (g / denom)
            p = p + (-lr * mu_next / (1.0 - product * mu_next)) * (exp_avg / denom)
            new_params.append(p)
            new_states.append({"step": step, "mu_product": mu_product, "exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq})
        return new_params, new_states
