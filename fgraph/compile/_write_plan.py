"""How a compiled call's results go back into the objects' slots: a :class:`WritePlan`, worked out once per
traced structure by :meth:`fgraph.compile._state.StateTable.read` and walked by ``StateTable.write_back`` at
every call (see :mod:`fgraph.compile._state` for slots)."""
from __future__ import annotations

from typing import NamedTuple

__all__ = ["WritePlan"]

_KEEP = "keep"  # the slot gets back a value captured at the call (source: the captured slot's index)
_NEW = "new"    # the slot gets a program output (source: output index, kind)
_DROPPED = object()  # an optimizer state entry a skipped step made: not written back


class WritePlan(NamedTuple):
    """How a call's results go back into the objects; worked out once per traced structure, in the forms
    :meth:`StateTable.write_back` walks at every call (it runs once per compiled step, on the host, while
    the device is idle: a training loop's per-call cost)."""

    slots: tuple       # the slots after the step (an optimizer's first step adds state slots)
    sources: tuple     # per slot: (_KEEP, captured slot index) or (_NEW, output index, kind)
    renamable: tuple   # (position, captured slot index) of module/parameter slots that held a Parameter
    outputs: tuple     # (output index, kind or None for a plain tensor) of each distinct program output a slot
                       # takes, first use first
    gather: tuple      # per slot: (True, index into ``outputs``) or (False, captured slot index)
    module_puts: tuple  # (position, owner, "_parameters" or "_buffers", name) of module slots
    param_puts: tuple  # (position, owner, group, index) of optimizer parameter slots
    other_puts: tuple  # positions of the other slots written directly (generator, scaler)
    states: dict       # optimizer index -> ((group, param index, ((position, key), ...)), ...): its state entries
    optimizers: tuple  # the optimizers whose state is rebuilt (keyed by their new parameters)
    same_slots: bool   # whether the step left the slots it was called with (the steady state)
    conditional: tuple = ()  # (position, found_inf output, captured slot or None): state a skipped step drops

    @classmethod
    def of(cls, slots: tuple, sources: tuple, slot_index: dict, captured: tuple,
           conditional: tuple = ()) -> "WritePlan":
        renamable, module_puts, param_puts, other_puts, optimizers = [], [], [], [], []
        entries: dict = {}  # (owner, group, param index) -> [(position, key)]
        for position, slot in enumerate(slots):
            if slot.kind in ("module", "param") and slot in slot_index:
                renamable.append((position, slot_index[slot]))
            if slot.kind == "state":
                g, i, key = slot.where
                entries.setdefault((slot.owner, g, i), []).append((position, key))
            elif slot.kind == "module":
                module_puts.append((position, slot.owner) + slot.where)
            elif slot.kind == "param":
                param_puts.append((position, slot.owner) + slot.where)
            elif slot.kind != "hyper":
                other_puts.append(position)
            if slot.kind in ("param", "state") and slot.owner not in optimizers:
                optimizers.append(slot.owner)
        states: dict = {owner: [] for owner in optimizers}
        for (owner, g, i), found in entries.items():
            states[owner].append((g, i, tuple(found)))
        outputs, gather, first = [], [], {}
        for source in sources:
            if source[0] is _KEEP:
                gather.append((False, source[1]))
                continue
            if source[1] not in first:
                first[source[1]] = len(outputs)
                plain = source[2] == ("tensor", False)  # optimizer state: a record with no graph (most outputs)
                outputs.append((source[1], None if plain else source[2]))
            gather.append((True, first[source[1]]))
        return cls(slots, sources, tuple(renamable), tuple(outputs), tuple(gather), tuple(module_puts),
                   tuple(param_puts), tuple(other_puts), {k: tuple(v) for k, v in states.items()}, tuple(optimizers),
                   slots == captured, conditional)
