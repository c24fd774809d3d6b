"""Autograd: the graph, the engine, grad modes."""
from fgraph.autograd import graph
from fgraph.autograd.engine import Gradients, backward, grad
from fgraph.autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)

__all__ = [
    "graph",
    "grad",
    "backward",
    "Gradients",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
]
