"""Which pending values only a finished backward pass's saved slots hold.

Under deferred dispatch a training step -- forward, then a backward pass recorded as one
kernel call -- runs as one program when the pass ends. Every placeholder still alive then
is a program output, and the graph keeps every saved activation alive as long as the loss
lives: the program would write them all out, where ``jax.jit`` of the same step keeps them
inside. PyTorch frees a graph's saved tensors after a pass that does not retain it; here a
pass with ``retain_graph`` unset leaves out of the program's outputs the placeholders that
nothing but the pass's own saved slots holds (the placeholders are then recomputed from the
step's inputs if something reads them later: a second pass over the same graph).

"Nothing but" is decided by reference counts: a placeholder's references must all be
accounted for by the pass's nodes (``saved_inputs`` Tensors that nothing else holds, and
``saved_result`` arrays) and the pass's own list of saved arrays. Anything else holding it
-- a variable of the user's, a hook, a node outside the pass -- is one reference more, and
the value stays an output, so a miscount can only cost speed (a recompute), never a value.
"""
from __future__ import annotations

import sys
from typing import Any, Optional

from fgraph.lazy._array import LazyArray
from fgraph.tensor import Tensor

__all__ = ["saved_only"]

# sys.getrefcount's own argument, the entry list [value, count] and the loop variable bound to the value.
_OWN_REFERENCES = 3


def saved_only(nodes: list, recorder: Any, arrays: Optional[list]) -> set:
    """The ``id``\\ s of ``recorder``'s pending placeholders held only by ``nodes``' saved slots and ``arrays``
    (the pass's list of its saved arrays)."""
    tensors: dict = {}  # id -> [Tensor, saved_inputs slots holding it]
    candidates: list = []  # placeholders of this recorder met in a saved slot or in ``arrays`` (repeats kept)
    for node in nodes:
        for t in getattr(node, "saved_inputs", None) or ():
            if type(t) is Tensor and type(t._array) is LazyArray:
                entry = tensors.get(id(t))
                if entry is None:
                    tensors[id(t)] = [t, 1]
                else:
                    entry[1] += 1
        result = getattr(node, "saved_result", None)
        if type(result) is tuple:
            candidates += result
        elif type(result) is LazyArray:
            candidates.append(result)
    candidates += arrays or ()
    for t, count in tensors.values():
        if sys.getrefcount(t) - _OWN_REFERENCES == count:  # only saved slots hold it: its array slot is theirs
            candidates.append(t._array)
    held = _counted(candidates, recorder)
    candidates.clear()  # its references to the placeholders would count below
    return {key for key, (a, count) in held.items() if sys.getrefcount(a) - _OWN_REFERENCES == count}


def _counted(candidates: list, recorder: Any) -> dict:
    """``{id: [placeholder, occurrences]}`` of ``recorder``'s pending placeholders among ``candidates``."""
    held: dict = {}
    for a in candidates:
        if type(a) is LazyArray and a._rec is recorder:
            entry = held.get(id(a))
            if entry is None:
                held[id(a)] = [a, 1]
            else:
                entry[1] += 1
    return held
