"""Utilities with PyTorch's ``torch.utils`` names (``fgraph.utils.checkpoint``)."""
from fgraph.utils import checkpoint

__all__ = ["checkpoint"]
