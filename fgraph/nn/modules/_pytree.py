"""Modules as JAX pytrees: a flat, ordered set of named tensors plus a static structure.

``jax.tree_util.tree_flatten_with_path(model)`` gives every parameter (in
``named_parameters`` order), then every buffer (``named_buffers`` order), each
once, keyed by its dotted name (``.fc1.weight``). The structure (the treedef)
remembers the module object it came from, every module's ``training`` flag, and
which attribute slots hold which leaf, so a tied parameter is one leaf and comes
back tied.

Unflattening makes a shallow copy of the module tree with the new leaves in
place: same classes, settings and hooks, the original untouched. This is what
``fgraph.func`` and ``fgraph.compile`` build on.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> model = fg.nn.Sequential(fg.nn.Linear(2, 3), fg.nn.ReLU())
    >>> [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_flatten_with_path(model)[0]]
    ['.0.weight', '.0.bias']
    >>> leaves, treedef = jax.tree_util.tree_flatten(model)
    >>> clone = jax.tree_util.tree_unflatten(treedef, [fg.zeros(3, 2), fg.zeros(3)])
    >>> clone[0].weight.tolist()[0], clone is model
    ([0.0, 0.0], False)
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jax

if TYPE_CHECKING:
    from fgraph.nn.modules.module import Module

__all__ = ["register", "ModuleDef"]

_TABLES = ("_parameters", "_buffers")


class ModuleDef:
    """The static part of a flattened Module: the module, its submodules and where each leaf goes.

    Two defs are equal when they come from the same module object with the same
    slots and ``training`` flags, so a change of mode or structure retraces.
    """

    __slots__ = ("modules", "children", "slots", "training", "names")

    def __init__(self, modules: tuple, children: tuple, slots: tuple, names: tuple) -> None:
        self.modules = modules      # every distinct submodule, root first
        self.children = children    # per module: ((name, index of child in modules or None), ...)
        self.slots = slots          # ((module index, table, attribute name, leaf index), ...)
        self.names = names          # dotted name per leaf
        self.training = tuple(m.training for m in modules)

    def _key(self) -> tuple:
        return (id(self.modules[0]), self.children, self.slots, self.training)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ModuleDef) and self.modules[0] is other.modules[0] and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"ModuleDef({type(self.modules[0]).__name__}, leaves={list(self.names)})"


def _flatten(root: "Module") -> tuple[list, ModuleDef]:
    named = list(root.named_modules())
    modules = tuple(m for _, m in named)
    position = {id(m): i for i, m in enumerate(modules)}
    children = tuple(
        tuple((name, None if child is None else position[id(child)]) for name, child in m._modules.items())
        for m in modules
    )
    leaves: list = []
    names: list = []
    leaf_of: dict = {}
    slots = []
    for table in _TABLES:
        for mi, (path, module) in enumerate(named):
            for name, value in getattr(module, table).items():
                if value is None:
                    continue
                index = leaf_of.get(id(value))
                if index is None:
                    index = leaf_of[id(value)] = len(leaves)
                    leaves.append(value)
                    names.append(f"{path}.{name}" if path else name)
                slots.append((mi, table, name, index))
    return leaves, ModuleDef(modules, children, tuple(slots), tuple(names))


def _flatten_with_keys(root: "Module") -> tuple[list, ModuleDef]:
    leaves, moduledef = _flatten(root)
    keyed = [(jax.tree_util.GetAttrKey(name), leaf) for name, leaf in zip(moduledef.names, leaves)]
    return keyed, moduledef


def _unflatten(moduledef: ModuleDef, leaves: Any) -> "Module":
    leaves = list(leaves)
    clones = []
    for module in moduledef.modules:
        clone = object.__new__(type(module))
        clone.__dict__.update(module.__dict__)
        for table in ("_parameters", "_buffers", "_modules"):
            clone.__dict__[table] = dict(module.__dict__[table])
        clones.append(clone)
    for clone, children in zip(clones, moduledef.children):
        for name, index in children:
            if index is not None:
                clone._modules[name] = clones[index]
    for mi, table, name, index in moduledef.slots:
        clone_table = clones[mi].__dict__[table]
        clone_table[name] = leaves[index]
    return clones[0]


def register(cls: type) -> None:
    """Register a Module class as a JAX pytree node (every subclass is registered on definition)."""
    jax.tree_util.register_pytree_with_keys(cls, _flatten_with_keys, _unflatten, _flatten)
