"""Neural-network layers and functionals (``fgraph.nn.functional``)."""
from fgraph.nn import functional

__all__ = ["functional"]
