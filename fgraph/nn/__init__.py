"""``fgraph.nn``: Modules with PyTorch's call path and hooks, layers, init, utils and functionals.

Example:
    >>> import fgraph as fg
    >>> from fgraph import nn
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    >>> grads = model(fg.ones(2, 4)).sum().backward()
    >>> sorted(grads[p].shape for p in model.parameters())
    [(1,), (1, 8), (8,), (8, 4)]
"""
from fgraph.nn import functional, init, parameter
from fgraph.nn.modules import *  # noqa: F401,F403
from fgraph.nn import modules
from fgraph.nn.modules import Module
from fgraph.nn.parameter import Buffer, Parameter
from fgraph.nn import utils

__all__ = ["functional", "init", "utils", "parameter", "modules", "Module", "Parameter", "Buffer"]
