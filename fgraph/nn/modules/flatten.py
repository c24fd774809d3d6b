"""``Flatten`` and ``Unflatten``: reshape layers with torch's arguments and reprs.

Example:
    >>> import fgraph as fg
    >>> from fgraph import nn
    >>> nn.Flatten()(fg.ones(2, 3, 4)).shape
    (2, 12)
    >>> nn.Unflatten(1, (3, 4))(fg.ones(2, 12)).shape
    (2, 3, 4)
"""
from __future__ import annotations

from typing import Sequence

from fgraph.errors import OpError
from fgraph.nn.modules.module import Module
from fgraph.ops.movement import unflatten
from fgraph.ops.shape import flatten
from fgraph.tensor import Tensor

__all__ = ["Flatten", "Unflatten"]


def _dim(dim: int, ndim: int, layer: str, name: str) -> int:
    if not -ndim <= dim < ndim:
        raise IndexError(f"{layer}: {name}={dim} is out of range for an input with {ndim} dims "
                         f"(expected a value in [{-ndim}, {ndim - 1}]).")
    return dim % ndim


class Flatten(Module):
    """Merge dims ``start_dim..end_dim`` (inclusive) into one; the default keeps the batch dim.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.Flatten(0, 1)
        Flatten(start_dim=0, end_dim=1)
        >>> fg.nn.Flatten(0, 1)(fg.ones(2, 3, 4)).shape
        (6, 4)
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        ndim = max(input.ndim, 1)
        start = _dim(self.start_dim, ndim, "Flatten", "start_dim")
        end = _dim(self.end_dim, ndim, "Flatten", "end_dim")
        if start > end:
            raise OpError(f"Flatten: start_dim={self.start_dim} comes after end_dim={self.end_dim} for an input of "
                          f"shape {tuple(input.shape)}.")
        return flatten(input, start, end)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim ``dim`` into ``unflattened_size`` (a tuple or list of ints; one may be ``-1``).

    Example:
        >>> import fgraph as fg
        >>> fg.nn.Unflatten(-1, [2, -1])(fg.ones(3, 8)).shape
        (3, 2, 4)
    """

    def __init__(self, dim: int, unflattened_size: Sequence[int]) -> None:
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(f"Unflatten: unflattened_size must be a tuple of ints, but found type "
                            f"{type(unflattened_size).__name__}.")
        for idx, elem in enumerate(unflattened_size):
            if isinstance(elem, bool) or not isinstance(elem, int):
                raise TypeError(f"Unflatten: unflattened_size must be tuple of ints, but found element of type "
                                f"{type(elem).__name__} at pos {idx}.")
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise TypeError(f"Unflatten: dim must be an int, got {type(dim).__name__} (named dims are not "
                            "supported).")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        return unflatten(input, self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
