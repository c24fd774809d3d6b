"""``functional_call``: run a Module with other tensors in place of its parameters and buffers.

The module is never modified: the call runs on a shallow copy of the module tree
(as :mod:`fgraph.nn.modules._pytree` unflattens a Module) whose parameter and
buffer slots hold exactly the given tensors. The copy shares the original's classes,
settings and hooks, so forward hooks fire (with the copy as their module).

Example:
    >>> import fgraph as fg
    >>> from fgraph.func import functional_call
    >>> lin = fg.nn.Linear(2, 1)
    >>> params = {"weight": fg.ones(1, 2), "bias": fg.zeros(1)}
    >>> functional_call(lin, params, (fg.tensor([[1.0, 2.0]]),)).tolist()
    [[3.0]]
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence, Union

import jax
import numpy as np

from fgraph.errors import TransformValueError
from fgraph.tensor import Tensor, _wrap

__all__ = ["functional_call"]

Dicts = Union[Mapping[str, Tensor], Sequence[Mapping[str, Tensor]]]


def _merge_dicts(parameter_and_buffer_dicts: Dicts) -> dict:
    """One name -> tensor dict from a dict or a tuple of dicts (a name may appear only once)."""
    if isinstance(parameter_and_buffer_dicts, Mapping):
        dicts: Sequence = (parameter_and_buffer_dicts,)
    elif isinstance(parameter_and_buffer_dicts, (tuple, list)):
        dicts = parameter_and_buffer_dicts
    else:
        raise TypeError(
            "functional_call: parameter_and_buffer_dicts must be a dict of name -> Tensor or a tuple of such "
            f"dicts, got {type(parameter_and_buffer_dicts).__name__}."
        )
    merged: dict = {}
    repeated = []
    for i, d in enumerate(dicts):
        if not isinstance(d, Mapping):
            raise TypeError(f"functional_call: entry {i} of parameter_and_buffer_dicts is a "
                            f"{type(d).__name__}, expected a dict of name -> Tensor.")
        for name, value in d.items():
            if name in merged:
                repeated.append(name)
            merged[name] = _as_tensor(name, value)
    if repeated:
        raise ValueError(f"functional_call got multiple values for keys {sorted(set(repeated))}, which are used "
                         "in the parameter and buffer dicts; give each name once.")
    return merged


def _as_tensor(name: str, value: Any) -> Tensor:
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (jax.Array, np.ndarray)):
        return _wrap(jax.numpy.asarray(value))
    raise TypeError(f"functional_call: the value for {name!r} is a {type(value).__name__}; "
                    "pass a fgraph Tensor (or a jax/NumPy array).")


class _Slot:
    """One parameter or buffer entry of one module: where it lives, its dotted name and current tensor."""

    __slots__ = ("module", "table", "attr", "name", "value")

    def __init__(self, module: int, table: str, attr: str, name: str, value: Tensor) -> None:
        self.module, self.table, self.attr, self.name, self.value = module, table, attr, name, value


def _slots(named: list) -> list:
    """Every parameter slot, then every buffer slot, in ``named_parameters``/``named_buffers`` order.

    A tensor tied under several names has one slot per name (same ``value``).
    """
    slots = []
    for table in ("_parameters", "_buffers"):
        for mi, (path, module) in enumerate(named):
            for attr, value in module.__dict__[table].items():
                if value is not None:
                    slots.append(_Slot(mi, table, attr, f"{path}.{attr}" if path else attr, value))
    return slots


def _clone(named: list, slots: list, values: list) -> Any:
    """A shallow copy of the module tree (same classes, settings, hooks) with ``values`` in the slots."""
    position = {id(m): i for i, (_, m) in enumerate(named)}
    clones = []
    for _, module in named:
        clone = object.__new__(type(module))
        clone.__dict__.update(module.__dict__)
        for table in ("_parameters", "_buffers", "_modules"):
            clone.__dict__[table] = dict(module.__dict__[table])
        clones.append(clone)
    for clone, (_, module) in zip(clones, named):
        for name, child in module.__dict__["_modules"].items():
            if child is not None:
                clone.__dict__["_modules"][name] = clones[position[id(child)]]
    for slot, value in zip(slots, values):
        clones[slot.module].__dict__[slot.table][slot.attr] = value
    return clones[0]


def _tied_values(slots: list, given: dict) -> list:
    """One value per slot: a tied tensor given under any of its names is used for all of them."""
    by_tensor: dict = {}
    for slot in slots:
        by_tensor.setdefault(id(slot.value), []).append(slot.name)
    chosen: dict = {}
    for names in by_tensor.values():
        found = [n for n in names if n in given]
        if len(found) > 1 and any(given[n] is not given[found[0]] for n in found[1:]):
            raise ValueError(
                f"functional_call got values for both {found[0]!r} and {found[1]!r}, which are tied. Give only "
                "one of them, or pass tie_weights=False to set them independently."
            )
        if found:
            chosen.update((n, given[found[0]]) for n in names)
    return [chosen.get(slot.name, slot.value) for slot in slots]


def _missing(slots: list, given: dict, tie_weights: bool) -> list:
    """Names with no value given (with ``tie_weights``, a tied tensor is covered by any of its names)."""
    covered = {id(s.value) for s in slots if s.name in given} if tie_weights else set()
    return [s.name for s in slots if s.name not in given and id(s.value) not in covered]


def functional_call(module: Any, parameter_and_buffer_dicts: Dicts, args: Any = None,
                    kwargs: Optional[dict] = None, *, tie_weights: bool = True, strict: bool = False) -> Any:
    """Call ``module(*args, **kwargs)`` with the given tensors in place of its parameters and buffers.

    ``parameter_and_buffer_dicts`` maps ``named_parameters()`` / ``named_buffers()``
    names to tensors (a dict, or a tuple of dicts that do not share names). Names
    not given keep the module's own tensors (``strict=True`` requires all of them).
    With ``tie_weights=True`` (default) a tensor tied under several names (shared
    weights) is replaced everywhere when given under any one of them; with
    ``tie_weights=False`` each name is set on its own. Gradients flow to the given
    tensors. The module itself is left unchanged; so are buffer updates a forward
    pass makes (fgraph tensors are immutable: they land on a discarded copy).

    Example:
        >>> import fgraph as fg
        >>> from fgraph.func import functional_call
        >>> lin = fg.nn.Linear(2, 1)
        >>> w = fg.tensor([[1.0, -1.0]], requires_grad=True)
        >>> out = functional_call(lin, {"weight": w, "bias": fg.zeros(1)}, fg.tensor([[3.0, 1.0]]))
        >>> out.item(), fg.grad(out.sum(), [w])[0].tolist()
        (2.0, [[3.0, 1.0]])
    """
    from fgraph.nn.modules.module import Module

    if not isinstance(module, Module):
        raise TypeError(f"functional_call: module must be a fgraph.nn.Module, got {type(module).__name__}.")
    given = _merge_dicts(parameter_and_buffer_dicts)
    named = list(module.named_modules())
    slots = _slots(named)
    names = list(dict.fromkeys(slot.name for slot in slots))
    unexpected = sorted(k for k in given if k not in set(names))
    missing = _missing(slots, given, tie_weights) if strict else []
    if unexpected or missing:
        lines = [f"Error(s) in reparametrizing for {type(module).__name__}:"]
        if unexpected:
            lines.append(f"\tUnexpected key(s): {', '.join(repr(k) for k in unexpected)} (the module's names "
                         f"are {names}).")
        if missing:
            lines.append(f"\tMissing key(s): {', '.join(repr(k) for k in missing)} (strict=True needs a "
                         "value for every parameter and buffer).")
        raise TransformValueError("\n".join(lines))  # a ValueError; torch.func raises RuntimeError
    if tie_weights:
        values = _tied_values(slots, given)
    else:
        values = [given.get(slot.name, slot.value) for slot in slots]
    clone = _clone(named, slots, values)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    return clone(*args, **(kwargs or {}))
