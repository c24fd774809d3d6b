"""Utilities with PyTorch's ``torch.utils`` names (``fgraph.utils.checkpoint``, ``fgraph.utils.data``)."""
from fgraph.utils import checkpoint, data

__all__ = ["checkpoint", "data"]
