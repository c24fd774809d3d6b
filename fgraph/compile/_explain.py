"""Why a compiled function traced again: the difference between two calls' signatures, in words.

A signature is computed only when a trace happens (never on a cached call), from what
the call passed: the arguments' structure and static values, the objects' structure
(modules' ``training`` flags and hooks, optimizer options), the state slots, and the
shape and dtype of every input.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import numpy as np

from fgraph.compile._state import slot_name

__all__ = ["signature", "describe_retrace"]


class Signature(NamedTuple):
    treedef: Any
    statics: dict       # argument name -> static value
    objects: dict       # object name -> (training, hooks) or optimizer flags
    inputs: dict        # input name -> (shape, dtype)


def _aval(value: Any) -> Any:
    if isinstance(value, (bool, int, float, complex)):
        return ("python", type(value).__name__)
    if value is None:
        return None
    if isinstance(value, (tuple, list)):
        return tuple(_aval(v) for v in value)
    return (tuple(np.shape(value)), str(getattr(value, "dtype", type(value).__name__)))


def _arg_names(fn: Callable, positions: list) -> list:
    try:
        import inspect

        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        params = []
    names = []
    for p in positions:
        if isinstance(p, int):
            names.append(f"argument {p}" + (f" ({params[p]})" if p < len(params) else ""))
        else:
            names.append(f"argument {p!r}")
    return names


def signature(spec: Any, state_inputs: list, arg_inputs: list, positions: list, fn: Callable) -> Signature:
    """The signature of one call (see the module docstring)."""
    table = spec.table
    names = _arg_names(fn, positions)
    statics, inputs = {}, {}
    counts: dict = {}
    values = iter(arg_inputs)
    for name, kind in zip(names, spec.kinds):
        counts[name] = counts.get(name, 0) + 1
        label = name if counts[name] == 1 else f"{name}, leaf {counts[name]}"
        if kind[0] == "static":
            statics[label] = kind[1]
        elif kind[0] != "object":
            inputs[label] = _aval(next(values))
    seen = set()
    for slot, index in zip(table.slots, spec.which):
        if index not in seen:
            seen.add(index)
            inputs[slot_name(table, slot)] = _aval(state_inputs[index])
    parts, _ = spec.key[2]
    objects = {name: part[2:] for name, part in zip(table.names, parts)}
    return Signature(spec.treedef, statics, objects, inputs)


def describe_retrace(old: Signature, new: Signature) -> str:
    """What changed between the signature of the last traced call and this one."""
    reasons = []
    if old.treedef != new.treedef:
        reasons.append(f"the arguments' structure changed ({old.treedef} -> {new.treedef})")
    for name in sorted(set(old.statics) | set(new.statics)):
        a, b = old.statics.get(name, "absent"), new.statics.get(name, "absent")
        if a != b:
            reasons.append(f"static {name} changed: {a!r} -> {b!r}")
    for name in sorted(set(old.objects) | set(new.objects)):
        a, b = old.objects.get(name), new.objects.get(name)
        if a != b:
            reasons.append(_object_change(name, a, b))
    added = [n for n in new.inputs if n not in old.inputs]
    removed = [n for n in old.inputs if n not in new.inputs]
    if added:
        reasons.append(f"new inputs: {', '.join(added[:6])}" + (" ..." if len(added) > 6 else "")
                       + (" (an optimizer made its state at the first step)" if any("state[" in n for n in added) else ""))
    if removed:
        reasons.append(f"inputs gone: {', '.join(removed[:6])}" + (" ..." if len(removed) > 6 else ""))
    for name, aval in new.inputs.items():
        before = old.inputs.get(name)
        if name in old.inputs and before != aval:
            reasons.append(f"{name}: {_show(before)} -> {_show(aval)}")
    return "; ".join(reasons) or "a new combination of input placements (committed devices or shardings)"


def _object_change(name: str, a: Any, b: Any) -> str:
    if a is None or b is None:
        return f"{name} {'is new' if a is None else 'is gone'}"
    if len(a) == 2 and len(b) == 2 and a[0] != b[0] and isinstance(a[0], bool):
        return f"{name}.training changed: {a[0]} -> {b[0]}"
    if len(a) == 2 and len(b) == 2 and a[1] != b[1]:
        return f"{name}: hooks were added or removed"
    return f"{name}: options that shape the update changed ({a} -> {b})"


def _show(aval: Any) -> str:
    if isinstance(aval, tuple) and len(aval) == 2 and isinstance(aval[0], tuple):
        return f"{aval[1]}{list(aval[0])}"
    return str(aval)


del jax
