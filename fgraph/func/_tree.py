"""Pytree helpers shared by :mod:`fgraph.func`: Tensors are always leaves.

They work whether or not ``fgraph.Tensor`` is registered as a JAX pytree node,
because every flatten stops at Tensors (``is_leaf``).

Example:
    >>> import fgraph as fg
    >>> from fgraph.func._tree import tensor_leaves
    >>> leaves, _ = tensor_leaves({"a": fg.ones(2), "b": (fg.zeros(1),)})
    >>> [t.shape for t in leaves]
    [(2,), (1,)]
"""
from __future__ import annotations

from typing import Any

import jax

from fgraph.tensor import Tensor

__all__ = ["is_tensor", "tensor_leaves", "unflatten", "detach_tree"]


def is_tensor(x: Any) -> bool:
    """``True`` for a fgraph Tensor (the ``is_leaf`` of every flatten here)."""
    return isinstance(x, Tensor)


def tensor_leaves(tree: Any) -> tuple[list, Any]:
    """``(leaves, treedef)`` of ``tree`` with Tensors as leaves (other leaves are kept too)."""
    return jax.tree_util.tree_flatten(tree, is_leaf=is_tensor)


def unflatten(treedef: Any, leaves: Any) -> Any:
    """Inverse of :func:`tensor_leaves`."""
    return jax.tree_util.tree_unflatten(treedef, list(leaves))


def _detach_leaf(x: Any) -> Any:
    return x.detach() if isinstance(x, Tensor) and x.requires_grad else x


def detach_tree(tree: Any) -> Any:
    """``tree`` with every Tensor that requires grad replaced by a graph-free copy."""
    return jax.tree_util.tree_map(_detach_leaf, tree, is_leaf=is_tensor)
