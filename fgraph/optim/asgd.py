"""ASGD (``torch.optim.ASGD``): SGD with a decaying step size and a running average of the iterates."""
from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from fgraph.optim.optimizer import Optimizer, ParamsT, check_hyper

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """Averaged SGD (Polyak & Juditsky, 1992) with PyTorch's arithmetic.

    Per step ``t``: ``p = p * (1 - lambd * eta) - eta * g``; the average ``ax`` becomes ``p`` while
    ``mu == 1``, else ``ax + mu * (p - ax)``; then ``eta = lr / (1 + lambd * lr * t)^alpha`` and
    ``mu = 1 / max(1, t - t0)`` (averaging starts after ``t0`` steps). State: ``step``, ``eta`` and
    ``mu`` (0-d, float32 as PyTorch keeps them), ``ax``; ``eta`` starts at the group's ``lr``, so a new
    ``lr`` is used from the step after. The averaged parameters are ``opt.state[p]["ax"]``.
    ``weight_decay`` adds ``weight_decay * p`` to the gradient; ``maximize`` ascends. ``foreach``,
    ``capturable`` and ``differentiable`` are accepted for compatibility.

    Example:
        >>> import fgraph as fg
        >>> w = fg.nn.Parameter(fg.tensor([1.0]))
        >>> opt = fg.optim.ASGD([w], lr=0.1, lambd=0.0)
        >>> opt.step(fg.backward((w * w).sum()))
        >>> w = opt.param_groups[0]["params"][0]
        >>> round(w.item(), 4), round(opt.state[w]["ax"].item(), 4)  # 1 - 0.1 * 2; the average so far
        (0.8, 0.8)
    """

    hyperparameters = ("lr", "lambd", "alpha", "t0", "weight_decay")

    def __init__(self, params: ParamsT, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0.0, foreach: Any = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_hyper(lr, "learning rate", "ASGD")
        check_hyper(weight_decay, "weight_decay", "ASGD")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def static_options(self, group: dict) -> tuple:
        return (group["weight_decay"] != 0, bool(group["maximize"]))

    def init_state(self, param: Any, group: dict) -> dict:
        return {"step": jnp.zeros((), jnp.float32), "eta": jnp.asarray(group["lr"], jnp.float32),
                "mu": jnp.ones((), jnp.float32), "ax": jnp.zeros_like(param._array)}

    @staticmethod
    def update(static: tuple, hyper: dict, params: list, grads: list, states: list) -> tuple[list, list]:
        decay, maximize = static
        lr, lambd, alpha, t0 = hyper["lr"], hyper["lambd"], hyper["alpha"], hyper["t0"]
        new_params, new_states = [], []
        for p, g, state in zip(params, grads, states):
            g = -g if maximize else g
            step = state["step"] + 1
            if decay:
                g = g + hyper["weight_decay"] * p
            eta, mu = state["eta"].astype(p.dtype), state["mu"].astype(p.dtype)
            p = p * (1 - lambd * eta) - eta * g
            ax = jnp.where(mu == 1, p, state["ax"] + (p - state["ax"]) * mu)
            # eta and mu are computed in the parameter's precision and stored in their own (PyTorch's float32).
            t = step.astype(p.dtype)
            new_eta = (lr / (1 + lambd * lr * t) ** alpha).astype(state["eta"].dtype)
            new_mu = (1 / jnp.maximum(1, t - t0)).astype(state["mu"].dtype)
            new_params.append(p)
            new_states.append({"step": step, "eta": new_eta, "mu": new_mu, "ax": ax})
        return new_params, new_states
