"""Modules (and Parameters) as JAX pytrees: named arrays as leaves, a static structure.

``jax.tree_util.tree_flatten_with_path(model)`` gives the *array* of every
parameter (in ``named_parameters`` order), then of every buffer (``named_buffers``
order), each once, keyed by its dotted name (``.fc1.weight``). The structure (the
treedef) remembers the module object it came from, every module's ``training``
flag, which attribute slots hold which leaf (so a tied parameter is one leaf and
comes back tied) and each leaf's kind and ``requires_grad``.

Unflattening makes a shallow copy of the module tree with the new leaves in place:
same classes, settings and hooks, the original untouched. An array (or a Tensor
that does not require grad) becomes a new Parameter with the remembered
``requires_grad`` (a buffer: a plain Tensor); a Parameter, or a Tensor that requires
grad, is put in place as it is, so gradients flow to the caller's tensors. So
``jax.jit``, ``jax.grad`` and ``jax.tree.map`` take a Module directly, and
``fgraph.func`` and ``fgraph.compile`` build on it.

A :class:`~fgraph.nn.Parameter` on its own is a pytree node too (its array the leaf,
its ``requires_grad`` static): it unflattens to a new Parameter.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> model = fg.nn.Sequential(fg.nn.Linear(2, 3), fg.nn.ReLU())
    >>> [(jax.tree_util.keystr(path), type(leaf).__name__)
    ...  for path, leaf in jax.tree_util.tree_flatten_with_path(model)[0]]
    [('.0.weight', 'ArrayImpl'), ('.0.bias', 'ArrayImpl')]
    >>> doubled = jax.tree.map(lambda a: 2 * a, model)
    >>> type(doubled[0].weight).__name__, doubled[0].weight.requires_grad, doubled is model
    ('Parameter', True, False)
    >>> jax.jit(lambda m, x: m(x).array)(model, fg.ones(1, 2)).shape
    (1, 3)
"""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from fgraph._dtypes import is_differentiable_dtype
from fgraph._exchange import _leaf  # a pending value is run: a pytree leaf is a concrete array
from fgraph.nn.parameter import Buffer, Parameter, _make_parameter, track
from fgraph.tensor import Tensor, _init_leaf, _new_object

if TYPE_CHECKING:
    from fgraph.nn.modules.module import Module

__all__ = ["register", "ModuleDef"]

_TABLES = ("_parameters", "_buffers")


class ModuleDef:
    """The static part of a flattened Module: the module, its submodules, where each leaf goes and what it is.

    Two defs are equal when their modules are the same modules or copies made by
    unflattening (a *lineage*: ``jax.tree.map(f, model)`` and the gradients ``jax.grad``
    returns share the model's), with the same slots, leaf kinds and ``training`` flags; so
    a loop ``model = update(model, grads)`` under ``jax.jit`` traces once, and a change of
    mode or structure retraces.
    """

    __slots__ = ("modules", "children", "slots", "training", "names", "kinds")

    def __init__(self, modules: tuple, children: tuple, slots: tuple, names: tuple, kinds: tuple) -> None:
        self.modules = modules      # every distinct submodule, root first
        self.children = children    # per module: ((name, index of child in modules or None), ...)
        self.slots = slots          # ((module index, table, attribute name, leaf index), ...)
        self.names = names          # dotted name per leaf
        self.kinds = kinds          # per leaf: (is a parameter, requires_grad)
        self.training = tuple(m.training for m in modules)

    def _key(self) -> tuple:
        return (tuple(_lineage(m) for m in self.modules), self.children, self.slots, self.kinds, self.training)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ModuleDef) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"ModuleDef({type(self.modules[0]).__name__}, leaves={list(self.names)})"


_LINEAGES: "weakref.WeakKeyDictionary[Module, object]" = weakref.WeakKeyDictionary()


def _lineage(module: "Module") -> object:
    """A token shared by a module and the copies unflattening makes of it (and their copies)."""
    token = _LINEAGES.get(module)
    if token is None:
        token = _LINEAGES[module] = object()
    return token


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
    kinds: list = []
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
                    leaves.append(_leaf(value._array))
                    names.append(f"{path}.{name}" if path else name)
                    kinds.append((table == "_parameters", value.requires_grad))
                slots.append((mi, table, name, index))
    return leaves, ModuleDef(modules, children, tuple(slots), tuple(names), tuple(kinds))


def _flatten_with_keys(root: "Module") -> tuple[list, ModuleDef]:
    leaves, moduledef = _flatten(root)
    keyed = [(jax.tree_util.GetAttrKey(name), leaf) for name, leaf in zip(moduledef.names, leaves)]
    return keyed, moduledef


def _rebuild(leaf: Any, is_parameter: bool, requires_grad: bool) -> Any:
    """The tensor a leaf becomes in its slot (see the module docstring)."""
    if isinstance(leaf, Tensor):
        if isinstance(leaf, Parameter) or leaf.requires_grad:
            return leaf
        leaf = leaf._array
    elif isinstance(leaf, (np.ndarray, np.generic)):
        leaf = jnp.asarray(leaf)
    # JAX also unflattens with non-array leaves (None, sentinels, in_axes numbers): keep them, without a graph.
    dtype = getattr(leaf, "dtype", None)
    requires_grad = requires_grad and dtype is not None and is_differentiable_dtype(dtype)
    if is_parameter:
        return _make_parameter(leaf, requires_grad)
    out = _new_object(Tensor)
    _init_leaf(out, leaf, requires_grad)
    return out


def _unflatten(moduledef: ModuleDef, leaves: Any) -> "Module":
    leaves = list(leaves)
    clones = []
    for module in moduledef.modules:
        clone = object.__new__(type(module))
        clone.__dict__.update(module.__dict__)
        _LINEAGES[clone] = _lineage(module)
        for table in ("_parameters", "_buffers", "_modules"):
            clone.__dict__[table] = dict(module.__dict__[table])
        clones.append(clone)
    for clone, children in zip(clones, moduledef.children):
        for name, index in children:
            if index is not None:
                clone._modules[name] = clones[index]
    tensors: list = [None] * len(leaves)
    created = set()
    for index, (leaf, (is_parameter, requires_grad)) in enumerate(zip(leaves, moduledef.kinds)):
        tensors[index] = _rebuild(leaf, is_parameter, requires_grad)
        if tensors[index] is not leaf:
            created.add(index)
    for mi, table, name, index in moduledef.slots:
        value = tensors[index]
        clones[mi].__dict__[table][name] = value
        if index in created and isinstance(value, Parameter):
            track(value, clones[mi], name)  # so rebind() and optimizers find the copy's new Parameters
    return clones[0]


def register(cls: type) -> None:
    """Register a Module class as a JAX pytree node (every subclass is registered on definition)."""
    jax.tree_util.register_pytree_with_keys(cls, _flatten_with_keys, _unflatten, _flatten)


# -- Parameter and Buffer: their array is the leaf, their flags are static ---------------------------------
_ARRAY_KEY = jax.tree_util.GetAttrKey("array")


def _parameter_flatten_with_keys(p: Parameter) -> tuple:
    return ((_ARRAY_KEY, _leaf(p._array)),), p.requires_grad


def _parameter_flatten(p: Parameter) -> tuple:
    return (_leaf(p._array),), p.requires_grad


def _parameter_unflatten(requires_grad: bool, children: Sequence[Any]) -> Parameter:
    leaf = children[0]
    return _rebuild(leaf._array if isinstance(leaf, Tensor) else leaf, True, requires_grad)


def _buffer_flatten_with_keys(b: Buffer) -> tuple:
    return ((_ARRAY_KEY, _leaf(b._array)),), b.persistent


def _buffer_flatten(b: Buffer) -> tuple:
    return (_leaf(b._array),), b.persistent


def _buffer_unflatten(persistent: bool, children: Sequence[Any]) -> Buffer:
    leaf = children[0]
    out = _new_object(Buffer)
    _init_leaf(out, leaf._array if isinstance(leaf, Tensor) else leaf, False)
    Buffer.__dict__["persistent"].__set__(out, persistent)
    return out


jax.tree_util.register_pytree_with_keys(
    Parameter, _parameter_flatten_with_keys, _parameter_unflatten, _parameter_flatten)
jax.tree_util.register_pytree_with_keys(Buffer, _buffer_flatten_with_keys, _buffer_unflatten, _buffer_flatten)
