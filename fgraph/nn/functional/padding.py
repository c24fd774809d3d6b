"""Padding functionals: ``pad`` (``torch.nn.functional.pad``), defined in :mod:`fgraph.ops.padding`.

Example:
    >>> import fgraph as fg
    >>> import fgraph.nn.functional as F
    >>> F.pad(fg.ones(1, 2, 3), (1, 1), mode="replicate").shape
    (1, 2, 5)
"""
from fgraph.ops.padding import pad

__all__ = ["pad"]
