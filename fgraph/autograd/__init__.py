"""Autograd: the graph, the engine, grad modes."""
from fgraph.autograd import graph
from fgraph.autograd.anomaly import (
    AnomalyError,
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from fgraph.autograd.engine import Gradients, backward, grad, queue_callback
from fgraph.autograd.function import Function, once_differentiable
from fgraph.autograd.gradients import UnusedGradientsWarning
from fgraph.autograd.checkpoint import checkpoint
from fgraph.autograd.variable import Variable
from fgraph.autograd import functional
from fgraph.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
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
    "functional",
    "gradcheck",
    "gradgradcheck",
    "GradcheckError",
    "detect_anomaly",
    "set_detect_anomaly",
    "is_anomaly_enabled",
    "is_anomaly_check_nan_enabled",
    "AnomalyError",
    "queue_callback",
    "grad",
    "backward",
    "Gradients",
    "UnusedGradientsWarning",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "Function",
    "once_differentiable",
    "checkpoint",
    "Variable",
]
