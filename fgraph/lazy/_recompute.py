"""Values a flush left out of its program, rebuilt kernel by kernel if they are read after all.

A backward pass without ``retain_graph=True`` releases its graph, so values only the graph's
saved slots hold need not be written out of the step's program (``fgraph/autograd/_saved_only.py``).
fgraph's graphs can still be differentiated again, so such a value stays readable: reading it
replays the records it depends on, from the program's outputs it needs (a module's new parameters;
held here, as a PyTorch graph holds the tensors it saved) and the trace's inputs. A value whose
records read an input the program donates (an optimizer's moments) cannot be rebuilt after the
program ran; :meth:`Recompute.plan` then leaves nothing out.
"""
from __future__ import annotations

import collections
import functools
from typing import Any, Optional

import jax

from fgraph._kernel_jit import placed

__all__ = ["Recompute"]

#: (program key, left-out slots) -> (needed records, frontier slots, needed externals), or None.
_PLANS: "collections.OrderedDict[tuple, Optional[tuple]]" = collections.OrderedDict()
MAX_PLANS = 256


class Recompute:
    """The recorder a flush hands its left-out placeholders: reading one fills every one still alive."""

    __slots__ = ("records", "needed", "frontier", "externals", "refs")

    def __init__(self, records: tuple, needed: tuple, frontier: dict, externals: list, refs: dict) -> None:
        self.records, self.needed, self.frontier, self.externals, self.refs = records, needed, frontier, externals, refs

    @classmethod
    def plan(cls, key: tuple, alive: list, left: dict, externals: list) -> Optional["Recompute"]:
        """The recompute of the ``left`` slots (``{slot: weakref}``) of the trace ``key`` (a ``ProgramKey``: its
        records, live slots -- placeholders ``alive`` -- and donated externals); ``None`` when it would need a
        donated input."""
        records, _, live, donated = key
        plan_key = (key, tuple(left))
        found = _PLANS.get(plan_key, False)
        if found is False:
            found = _PLANS[plan_key] = _plan(records, live, list(left), set(donated))
            if len(_PLANS) > MAX_PLANS:
                _PLANS.popitem(last=False)
        if found is None:
            return None
        needed, frontier, needed_externals = found
        kept = [None] * len(externals)  # only what a rebuild reads is held
        for i in needed_externals:
            kept[i] = externals[i]
        return cls(records, needed, {slot: alive[j] for slot, j in frontier}, kept, left)

    def flush(self) -> None:
        from fgraph.lazy._recorder import STATS, run

        alive, wanted = [], []
        for slot, ref in self.refs.items():
            o = ref()
            if o is not None and o._rec is self:
                alive.append(o)
                wanted.append(slot)
        known = {slot: o.value() for slot, o in self.frontier.items()}
        externals = self.externals
        self.refs, self.frontier, self.externals = {}, {}, []
        if alive:
            STATS["recomputed"] += 1
            run(functools.partial(_replay_some, self.records, self.needed, known, tuple(wanted)), alive, externals)


def _plan(records: tuple, live: list, wanted: list, donated: set) -> Optional[tuple]:
    """``(needed records in order, (slot, position in live) of the live slots they read, externals they read)``
    making ``wanted``; ``None`` when one of them reads a donated external."""
    position = {slot: j for j, slot in enumerate(live)}
    firsts = _first_slots(records)
    producer = {}
    for i, (kernel, refs, treedef) in enumerate(records):
        for k in range(1 if treedef is None else treedef.num_leaves):
            producer[firsts[i] + k] = i
    needed, frontier, needed_externals = set(), set(), set()
    todo = [producer[slot] for slot in wanted]
    while todo:
        i = todo.pop()
        if i in needed:
            continue
        needed.add(i)
        for r in records[i][1]:
            if r is None:
                continue
            if r >= 0:
                if r in donated:
                    return None
                needed_externals.add(r)
            elif -1 - r in position:
                frontier.add((-1 - r, position[-1 - r]))
            else:
                todo.append(producer[-1 - r])
    return tuple(sorted(needed)), tuple(sorted(frontier)), tuple(sorted(needed_externals))


def _first_slots(records: tuple) -> list:
    """The first output slot of each record."""
    firsts, slot = [], 0
    for _, _, treedef in records:
        firsts.append(slot)
        slot += 1 if treedef is None else treedef.num_leaves
    return firsts


def _replay_some(records: tuple, needed: tuple, known: dict, wanted: tuple, *externals: Any) -> list:
    """The ``needed`` records in order, each reading ``known`` slots, earlier records' outputs and the inputs."""
    firsts = _first_slots(records)
    slots = dict(known)
    for i in needed:
        kernel, refs, treedef = records[i]
        out = placed(kernel)(*[None if r is None else externals[r] if r >= 0 else slots[-1 - r] for r in refs])
        for k, value in enumerate([out] if treedef is None else jax.tree_util.tree_leaves(out)):
            slots.setdefault(firsts[i] + k, value)
    return [slots[slot] for slot in wanted]
