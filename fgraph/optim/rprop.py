"""Rprop (``torch.optim.Rprop``): per-coordinate step sizes adapted from the sign of successive gradients."""
from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from fgraph.optim.optimizer import Optimizer, ParamsT, check_hyper

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Resilient backpropagation (Riedmiller & Braun, 1993) with PyTorch's arithmetic.

    Per step, coordinate by coordinate: when ``g`` keeps the sign of the previous gradient the step
    size grows by ``etas[1]``, when it flips the step size shrinks by ``etas[0]`` and this step's
    gradient counts as 0 (no move, and no sign to compare next time); the step size is clamped to
    ``step_sizes = (min, max)`` and ``p -= sign(g) * step_size``. State: ``step``, ``prev`` (the
    gradient as used), ``step_size`` (starts at ``lr``: the learning rate matters only at each
    parameter's first step). ``maximize`` ascends. ``foreach``, ``capturable`` and ``differentiable``
    are accepted for compatibility. Like PyTorch's, Rprop has no ``weight_decay``.

    Example:
        >>> import fgraph as fg
        >>> w = fg.nn.Parameter(fg.tensor([1.0, -1.0]))
        >>> opt = fg.optim.Rprop([w], lr=0.1)
        >>> for _ in range(2):
        ...     w = opt.param_groups[0]["params"][0]
        ...     opt.step(fg.backward((w * w).sum()))
        >>> [round(v, 4) for v in opt.param_groups[0]["params"][0].tolist()]  # 0.1, then 0.1 * 1.2
        [0.78, -0.78]
    """

    hyperparameters = ("etas", "step_sizes")

    def __init__(self, params: ParamsT, lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False, foreach: Any = None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        check_hyper(lr, "learning rate", "Rprop")
        minus, plus = etas
        if not 0.0 < minus < 1.0 < plus:
            raise ValueError(f"Rprop: invalid eta values: {minus}, {plus} (expected 0 < etas[0] < 1 < etas[1]: "
                             "etas[0] shrinks the step size when the gradient changes sign, etas[1] grows it).")
        defaults = dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes), foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def static_options(self, group: dict) -> tuple:
        return (bool(group["maximize"]),)

    def init_state(self, param: Any, group: dict) -> dict:
        return {"step": jnp.zeros((), jnp.float32), "prev": jnp.zeros_like(param._array),
                "step_size": jnp.full_like(param._array, group["lr"])}

    @staticmethod
    def update(static: tuple, hyper: dict, params: list, grads: list, states: list) -> tuple[list, list]:
        (maximize,) = static
        (eta_minus, eta_plus), (size_min, size_max) = hyper["etas"], hyper["step_sizes"]
        new_params, new_states = [], []
        for p, g, state in zip(params, grads, states):
            g = -g if maximize else g
            sign = jnp.sign(g * state["prev"])
            factor = jnp.where(sign > 0, eta_plus, jnp.where(sign < 0, eta_minus, 1.0))
            step_size = jnp.clip(state["step_size"] * factor, size_min, size_max)
            g = jnp.where(sign < 0, jnp.zeros_like(g), g)
            new_params.append(p - jnp.sign(g) * step_size)
            new_states.append({"step": state["step"] + 1, "prev": g, "step_size": step_size})
        return new_params, new_states
