"""A compiled step leaves every parameter, buffer and optimizer state with the sharding it came in with.

Without a constraint, the shardings of a program's results are XLA's choice (its propagation on
Auto mesh axes): a replicated weight next to a column-parallel one can come back split like its
neighbour, and the next call then runs a different program. The eager step keeps shardings (its
kernels' results follow their operands), so the compiled one does too: each new value of a slot
is constrained to the sharding of the array that slot held at the call, and an optimizer state
made by the step itself (its first) to its parameter's sharding (a buffer of the parameter's
shape) or replicated on the parameter's mesh (the ``step`` count), as the eager first step places
it. Values on one device, and tracers of an outer trace, are left alone.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import jax
from jax.sharding import NamedSharding, PartitionSpec

from fgraph.compile._state import Slot
from fgraph.compile._write_plan import _NEW

__all__ = ["keep_input_shardings"]


def keep_input_shardings(plan: Any, new_state: list, slots: Sequence[Slot], which: Sequence[int],
                         inputs: Optional[Sequence[Any]]) -> list:
    """``new_state`` (traced program outputs) constrained as the module docstring says; ``inputs`` are the
    call's concrete state inputs (``None``: nothing known, nothing constrained)."""
    if not inputs:
        return new_state
    slot_index = {slot: i for i, slot in enumerate(slots)}
    out = list(new_state)
    done: set = set()
    for slot, source in zip(plan.slots, plan.sources):
        if source[0] != _NEW or source[1] in done:
            continue
        position = source[1]
        captured = slot_index.get(slot)
        if captured is None and slot.kind == "state":  # made by this step: placed like its parameter
            captured = slot_index.get(Slot("param", slot.owner, slot.where[:2]))
        if captured is None:
            continue
        sharding = _target(inputs[which[captured]], out[position])
        if sharding is not None:
            out[position] = _constrain(out[position], sharding)
            done.add(position)
    return out


def _target(held: Any, new: Any) -> Optional[NamedSharding]:
    sharding = getattr(held, "sharding", None)
    if (isinstance(held, jax.core.Tracer) or type(sharding) is not NamedSharding or len(sharding.device_set) == 1
            or not isinstance(new, jax.core.Tracer)):
        return None
    if tuple(new.shape) == tuple(held.shape):
        return sharding
    return NamedSharding(sharding.mesh, PartitionSpec(), memory_kind=sharding.memory_kind)


def _constrain(new: Any, sharding: NamedSharding) -> Any:
    if sharding.mesh.explicit_axes:  # sharding in types: the value's type says where it is
        have = jax.typeof(new).sharding
        if getattr(have, "spec", None) is not None and have.spec == sharding.spec:
            return new
        return jax.sharding.reshard(new, sharding)
    return jax.lax.with_sharding_constraint(new, sharding)
