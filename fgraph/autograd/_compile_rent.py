"""When compiling a structure's fused backward pays off: the rent rule of :mod:`fgraph.autograd.fusion`.

A backward pass whose structure has no fused program runs node by node: the structure pays *rent*
(the time of that pass). Compiling *buys* it a fused program, at a price known only roughly in advance
(XLA's compile time, growing with the node count) and paid on the same cores the caller runs on. Buying
at the second sighting, the old rule, overpays for a structure seen a few dozen times (a notebook cell run
while it is being edited): on the 2-core CPU the first 50 forward + backward calls of a fresh 200-node
structure took 445 ms with that rule against 303 ms node by node, and the first 50 Hessian-vector
products of a fresh network 265 ms against 116 ms (``benchmarks/fresh_structure.py``'s measures;
PyTorch: 82 and 17 ms). As in the ski-rental problem, a structure compiles once the rent it has paid
reaches :data:`RENT` times its expected compile: a structure that keeps coming back (a training loop)
compiles after a bounded number of passes, one seen a few times never pays for a compile.

The expected compile is :data:`FIXED_SECONDS` plus the node count times this process's measured compile
seconds per node beyond that (:data:`PRIOR_SECONDS_PER_NODE` before its first compile): on the 2-core CPU
a 6- to 48-node structure compiled in 30-80 ms, a 200-node one in ~0.3-0.5 s. Rent is counted per thread,
from the moment the engine learns that a pass runs node by node to the end of that pass.

Example:
    >>> from fgraph.autograd import _compile_rent
    >>> _compile_rent.due(sightings=2, paid=0.0, n_nodes=200, after=2, rent=0.0)  # rent 0: the old rule
    True
    >>> _compile_rent.due(sightings=2, paid=0.001, n_nodes=200, after=2, rent=2.0)
    False
"""
from __future__ import annotations

import threading
import time
from typing import Optional

__all__ = ["RENT", "FIXED_SECONDS", "PRIOR_SECONDS_PER_NODE", "set_rent", "rent", "due", "expected_compile_seconds",
           "record_compile", "pass_started", "charge", "pass_ended"]

#: A structure compiles once its node-by-node passes have cost this many times its expected compile time.
#: A compile's measured seconds are its own thread's; on the 2-core CPU the caller's passes ran about as much
#: slower again meanwhile (the worker's tracing holds the GIL, XLA takes a core), so 2 is break-even.
RENT = 2.0
#: What any compile costs (tracing, lowering, XLA's fixed passes), in seconds.
FIXED_SECONDS = 0.03
#: Compile seconds per node expected before this process has compiled a program.
PRIOR_SECONDS_PER_NODE = 1.5e-3

_state = {"rent": RENT}
_rate = [0.0, 0, 0]  # this process's compile seconds, the nodes they compiled and how many compiles
_local = threading.local()


def set_rent(value: float) -> None:
    """Compile a structure once its node-by-node passes cost ``value`` times its expected compile
    (``0``: at its ``fusion.COMPILE_AFTER``-th sighting, whatever the cost)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"set_compile_rent: rent must be a number >= 0 (0 compiles at the second sighting), "
                         f"got {value!r}.")
    _state["rent"] = float(value)


def rent() -> float:
    """The rent factor in force (see :func:`set_rent`)."""
    return _state["rent"]


def expected_compile_seconds(n_nodes: int) -> float:
    """What compiling a structure of ``n_nodes`` nodes is expected to cost, from this process's compiles."""
    seconds, nodes, count = _rate
    per_node = max(seconds - FIXED_SECONDS * count, 0.0) / nodes if nodes else PRIOR_SECONDS_PER_NODE
    return FIXED_SECONDS + per_node * n_nodes


def record_compile(seconds: float, n_nodes: int) -> None:
    """Count a finished compile towards :func:`expected_compile_seconds`."""
    _rate[0] += seconds
    _rate[1] += n_nodes
    _rate[2] += 1


def due(sightings: int, paid: float, n_nodes: int, after: int, rent: Optional[float] = None) -> bool:
    """Whether a structure seen ``sightings`` times, whose node-by-node passes took ``paid`` seconds, compiles now."""
    if sightings < after:
        return False
    factor = _state["rent"] if rent is None else rent
    return factor <= 0 or paid >= factor * expected_compile_seconds(n_nodes)


# -- the rent each pass pays ------------------------------------------------------------------------------------------
def _stack() -> list:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def pass_started() -> None:
    """The engine begins a backward pass on this thread."""
    _stack().append(None)


def charge(entry: list) -> None:
    """This thread's current pass runs node by node: its time goes to ``entry`` (``[sightings, paid]``)."""
    stack = _stack()
    if stack and stack[-1] is None:
        stack[-1] = (entry, time.perf_counter())


def pass_ended() -> None:
    """The engine's pass on this thread ended: a node-by-node pass adds its time to its structure's rent."""
    stack = _stack()
    if not stack:
        return
    charged = stack.pop()
    if charged is not None:
        entry, start = charged
        entry[1] += time.perf_counter() - start
