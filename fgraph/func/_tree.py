"""Pytree helpers shared by :mod:`fgraph.func`: Tensors are always leaves, dicts keep their key order.

They work whether or not ``fgraph.Tensor`` is registered as a JAX pytree node,
because every flatten stops at Tensors (``is_leaf``).

JAX flattens a dict in sorted key order and rebuilds it sorted. A gradient dict that
comes back as ``{'0.bias', '0.weight', ...}`` for parameters given as ``{'0.weight',
'0.bias', ...}`` breaks code that zips ``grads.values()`` with ``model.parameters()``
(silently, where shapes agree), so every tree fgraph rebuilds for a user gets the key
order of the tree it mirrors: :func:`key_orders` records it, :func:`with_key_orders`
puts it back, and :func:`tensor_leaves`/:func:`unflatten` do both.

Example:
    >>> import fgraph as fg
    >>> from fgraph.func._tree import tensor_leaves, unflatten
    >>> leaves, treedef = tensor_leaves({"w": fg.ones(2), "b": (fg.zeros(1),)})
    >>> [t.shape for t in leaves]  # JAX's (sorted) leaf order
    [(1,), (2,)]
    >>> list(unflatten(treedef, leaves))  # the dict's own order
    ['w', 'b']
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Iterator, Optional

import jax

from fgraph.autograd.forward_ad import carry
from fgraph.tensor import Tensor

__all__ = ["is_tensor", "tensor_leaves", "flatten", "unflatten", "tree_map", "detach_tree", "key_orders",
           "with_key_orders", "same_structure", "KeyOrderedDef"]


def is_tensor(x: Any) -> bool:
    """``True`` for a fgraph Tensor (the ``is_leaf`` of every flatten here)."""
    return isinstance(x, Tensor)


class KeyOrderedDef:
    """A JAX treedef with the key order of each dict of the tree it describes (depth first).

    Compares and hashes as the JAX treedef (the same structure with dicts in another order is
    the same structure); other attributes are the treedef's.
    """

    __slots__ = ("treedef", "orders")

    def __init__(self, treedef: Any, orders: tuple) -> None:
        self.treedef = treedef
        self.orders = orders

    def unflatten(self, leaves: Any) -> Any:
        # The dicts are put in order on a skeleton of slots, then the leaves go in: a leaf that is itself a
        # dict (a Jacobian's block of a dict input) is never taken for part of this tree.
        leaves = list(leaves)
        skeleton = with_key_orders(self.treedef.unflatten([_Slot(i) for i in range(len(leaves))]), self.orders)
        return _filled(skeleton, leaves)

    def __eq__(self, other: Any) -> bool:
        return self.treedef == (other.treedef if isinstance(other, KeyOrderedDef) else other)

    def __hash__(self) -> int:
        return hash(self.treedef)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.treedef, name)

    def __repr__(self) -> str:
        return repr(self.treedef)


def tensor_leaves(tree: Any) -> tuple[list, Any]:
    """``(leaves, treedef)`` of ``tree`` with Tensors as leaves (other leaves are kept too); the treedef
    is a :class:`KeyOrderedDef` when some dict of ``tree`` is not in sorted key order."""
    return flatten(tree, is_tensor)


_LEAF_DEF = jax.tree_util.tree_structure(0)
_TUPLE_DEFS: dict = {}  # n -> the treedef of a tuple of n leaves


def flatten(tree: Any, is_leaf: Optional[Callable[[Any], bool]] = None) -> tuple[list, Any]:
    """``jax.tree_util.tree_flatten`` whose treedef remembers the dicts' key orders (see :func:`tensor_leaves`)."""
    if is_leaf is is_tensor:  # the transforms' common trees, without JAX calling is_leaf on each node
        if type(tree) is Tensor:
            return [tree], _LEAF_DEF
        if type(tree) is tuple and all(type(t) is Tensor for t in tree):
            treedef = _TUPLE_DEFS.get(len(tree))
            if treedef is None:
                treedef = _TUPLE_DEFS[len(tree)] = jax.tree_util.tree_structure((0,) * len(tree))
            return list(tree), treedef
    leaves, treedef = jax.tree_util.tree_flatten(tree, is_leaf=is_leaf)
    orders = key_orders(tree, is_leaf)
    return leaves, treedef if orders is None else KeyOrderedDef(treedef, orders)


def tree_map(fn: Callable[[Any], Any], tree: Any, is_leaf: Optional[Callable[[Any], bool]] = None) -> Any:
    """``jax.tree_util.tree_map`` of one tree, its dicts kept in their key order."""
    return with_key_orders(jax.tree_util.tree_map(fn, tree, is_leaf=is_leaf), key_orders(tree, is_leaf), is_leaf)


def same_structure(a: Any, b: Any) -> bool:
    """Whether two treedefs (JAX's or :class:`KeyOrderedDef`) describe the same structure, dict order aside."""
    return _plain(a) == _plain(b)


def _plain(treedef: Any) -> Any:
    return treedef.treedef if isinstance(treedef, KeyOrderedDef) else treedef


def unflatten(treedef: Any, leaves: Any) -> Any:
    """Inverse of :func:`tensor_leaves` (dicts in their original key order)."""
    if isinstance(treedef, KeyOrderedDef):
        return treedef.unflatten(leaves)
    return jax.tree_util.tree_unflatten(treedef, list(leaves))


def key_orders(tree: Any, is_leaf: Optional[Callable[[Any], bool]] = None) -> Optional[tuple]:
    """The key order of every dict in ``tree`` (depth first, in each dict's own order), or ``None``
    when they are all sorted already (JAX rebuilds them so). ``is_leaf`` as in the flatten."""
    orders = []
    unsorted = False
    stack = [tree]
    while stack:
        node = stack.pop()
        if is_leaf is not None and is_leaf(node):
            continue
        if isinstance(node, dict):
            keys = tuple(node)
            orders.append(keys)
            unsorted = unsorted or not _is_sorted(keys)
            stack.extend(node[k] for k in reversed(keys))
        elif isinstance(node, (list, tuple)):
            stack.extend(reversed(node))
    return tuple(orders) if unsorted else None


def with_key_orders(tree: Any, orders: Optional[tuple], is_leaf: Optional[Callable[[Any], bool]] = None) -> Any:
    """``tree`` (a tree JAX built, with the structure ``orders`` was recorded on) with its dicts in
    those key orders. ``None`` orders: ``tree`` itself."""
    if orders is None:
        return tree
    return _reordered(tree, iter(orders), is_leaf)


def _reordered(node: Any, orders: Iterator, is_leaf: Optional[Callable[[Any], bool]]) -> Any:
    if is_leaf is not None and is_leaf(node):
        return node
    if isinstance(node, dict):
        return _like(node, [(k, _reordered(node[k], orders, is_leaf)) for k in next(orders)])
    if isinstance(node, (list, tuple)):
        return _like(node, [_reordered(child, orders, is_leaf) for child in node])
    return node


def _like(node: Any, children: list) -> Any:
    """A new container of ``node``'s type holding ``children`` (``(key, value)`` pairs for a dict)."""
    if isinstance(node, defaultdict):
        return type(node)(node.default_factory, children)
    if hasattr(node, "_fields"):  # a namedtuple
        return type(node)(*children)
    return type(node)(children)


class _Slot:
    """Where leaf ``index`` goes in a skeleton tree."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def _filled(node: Any, leaves: list) -> Any:
    if isinstance(node, _Slot):
        return leaves[node.index]
    if isinstance(node, dict):
        return _like(node, [(k, _filled(v, leaves)) for k, v in node.items()])
    if isinstance(node, (list, tuple)):
        return _like(node, [_filled(child, leaves) for child in node])
    return node


def _is_sorted(keys: tuple) -> bool:
    try:
        return list(keys) == sorted(keys)
    except TypeError:  # keys of mixed types: JAX cannot sort them either (it raises when flattening)
        return True


def _detach_leaf(x: Any) -> Any:
    return carry(x, x.detach()) if isinstance(x, Tensor) and x.requires_grad else x


def detach_tree(tree: Any) -> Any:
    """``tree`` with every Tensor that requires grad replaced by a graph-free copy (dicts keep their order)."""
    if type(tree) is Tensor:
        return _detach_leaf(tree)
    return tree_map(_detach_leaf, tree, is_leaf=is_tensor)
