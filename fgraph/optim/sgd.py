"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay (``torch.optim.SGD``)."""
from __future__ import annotations

from typing import Any

from fgraph.optim.optimizer import Optimizer, ParamsT, check_hyper

__all__ = ["SGD"]


class SGD(Optimizer):
    """``p -= lr * d`` with PyTorch's momentum (``buf = momentum * buf + (1 - dampening) * g``; the first
    step's buffer is ``g``), optional Nesterov (``d = g + momentum * buf``), L2 ``weight_decay`` added to
    the gradient, and ``maximize``.

    Example:
        >>> import fgraph as fg
        >>> w = fg.nn.Parameter(fg.tensor([1.0, -1.0]))
        >>> opt = fg.optim.SGD([w], lr=0.5, momentum=0.9)
        >>> for _ in range(2):
        ...     w = opt.param_groups[0]["params"][0]
        ...     opt.step(fg.backward((w * w).sum()))
        >>> [round(v, 4) for v in opt.param_groups[0]["params"][0].tolist()]
        [-0.9, 0.9]
    """

    hyperparameters = ("lr", "momentum", "dampening", "weight_decay")

    def __init__(self, params: ParamsT, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: Any = None, differentiable: bool = False, fused: Any = None) -> None:
        check_hyper(lr, "learning rate", "SGD")
        check_hyper(momentum, "momentum", "SGD")
        check_hyper(weight_decay, "weight_decay", "SGD")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        super().__init__(params, defaults)

    def static_options(self, group: dict) -> tuple:
        return (group["momentum"] != 0, group["weight_decay"] != 0, bool(group["nesterov"]),
                bool(group["maximize"]))

    def init_state(self, param: Any, group: dict) -> dict:
        return {"momentum_buffer": None} if group["momentum"] != 0 else {}  # torch keeps no state without momentum

    @staticmethod
    def update(static: tuple, hyper: dict, params: list, grads: list, states: list) -> tuple[list, list]:
        use_momentum, decay, nesterov, maximize = static
        new_params, new_states = [], []
        for p, g, state in zip(params, grads, states):
            d = -g if maximize else g
            if decay:
                d = d + hyper["weight_decay"] * p
            buf = state.get("momentum_buffer")
            if use_momentum:
                buf = d if buf is None else buf * hyper["momentum"] + (1 - hyper["dampening"]) * d
                d = d + hyper["momentum"] * buf if nesterov else buf
            new_params.append(p - hyper["lr"] * d)
            new_states.append({"momentum_buffer": buf} if use_momentum else {})
        return new_params, new_states
