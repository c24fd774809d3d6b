"""Bridges between fgraph and other array libraries.

* :mod:`interop.torch_bridge`: :func:`from_torch` / :func:`to_torch` move tensors
  between PyTorch and fgraph (DLPack, copying; torch is imported only when called).

Example:
    >>> import interop
    >>> callable(interop.from_torch), callable(interop.to_torch)
    (True, True)
"""
from interop.torch_bridge import from_torch, to_torch

__all__ = ["from_torch", "to_torch"]
