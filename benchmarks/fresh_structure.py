"""Latency of differentiating a *fresh* graph structure: the notebook case, first and second time.

A training loop differentiates one structure many times; a notebook user edits a cell and
differentiates a new structure once or twice. This measures those calls. Each round draws a
new 200-node structure (``overhead.py``'s elementwise chain on 16 floats, with a random
sequence of sin, tanh, mul, add, so no cache has seen it) and times, per peer, the first
and the second forward + backward of it:

* **fgraph eager**: build the graph and ``fg.grad``; ``fgraph.autograd.fusion`` compiles a
  structure once its node-by-node passes have paid for the compile (``fusion.set_compile_rent``),
  so these calls run node by node;
* **fgraph compiled**: a new ``fg.compile`` of the step (the first call traces and compiles);
* **PyTorch eager**, **jax.jit** (a new jitted ``jax.grad``: the first call compiles) and
  **un-jitted jax.grad**.

:func:`first_calls` times the first 50 calls of a fresh structure (fgraph eager and PyTorch eager, and
``fresh_floors.py``'s two pure-JAX floors): a notebook user's edited cell, fusion's background compile included; :func:`first_hvp_calls` the
first 50 Hessian-vector products of a fresh 2-4 layer network the same way.

The per-op kernels are compiled once beforehand (a warm-up structure, reported separately),
so "fresh" means a new structure, not new kernels. The budget compares fgraph's
``fg.grad`` calls alone (the forward excluded) with the same call node by node
(``fusion.set_enabled(False)``, warm): no call may take longer than 3x that.
Run: ``python benchmarks/fresh_structure.py [--quick]``.
"""
from __future__ import annotations

import statistics
import sys
import time
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

import fgraph as fg
import fresh_floors
from overhead import CHAIN_OPS, chain_data, chain_forward
from timing import block, cli, thread_settings, to_torch, torch, torch_done

BUDGET = 3.0
FIRST_CALLS = 50  # issue 34: the first 50 calls of a new structure, against PyTorch's
PEERS = ("fgraph eager", "fgraph compiled", "PyTorch eager", "jax.jit(jax.grad)", "jax.grad (no jit)")


def structure(seed: int) -> list:
    """A random sequence of ``CHAIN_OPS`` op kinds (0 sin, 1 tanh, 2 mul, 3 add)."""
    return np.random.default_rng(seed).integers(0, 4, CHAIN_OPS).tolist()


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


class FgraphEager:
    """fgraph's eager calls on one structure; keeps the ``fg.grad`` time of each call apart."""

    def __init__(self, data: dict, kinds: list) -> None:
        self.leaves = [fg.tensor(data[k], requires_grad=True) for k in ("x", "c", "d")]
        self.kinds = kinds
        self.grad_times: list = []

    def __call__(self) -> tuple:
        loss = chain_forward(*self.leaves, fg.sin, fg.tanh, kinds=self.kinds)
        t0 = time.perf_counter()
        grads = fg.grad(loss, self.leaves)
        block([g.array for g in grads])
        self.grad_times.append(time.perf_counter() - t0)
        return grads


def peer_call(peer: str, data: dict, kinds: list) -> Callable[[], object]:
    """One peer's forward + backward of the structure ``kinds``, with fresh caches."""
    if peer in fresh_floors.FLOORS:
        return fresh_floors.peer_call(peer, data, kinds)
    if peer == "fgraph eager":
        return FgraphEager(data, kinds)
    if peer == "fgraph compiled":
        leaves = [fg.tensor(data[k], requires_grad=True) for k in ("x", "c", "d")]

        def grads_of(x: fg.Tensor, c: fg.Tensor, d: fg.Tensor) -> tuple:
            return fg.grad(chain_forward(x, c, d, fg.sin, fg.tanh, kinds=kinds), [x, c, d])

        compiled = fg.compile(grads_of)
        return lambda: block([g.array for g in compiled(*leaves)])
    if peer == "PyTorch eager":
        leaves = [to_torch(data[k], requires_grad=True) for k in ("x", "c", "d")]
        return lambda: torch_done(torch.autograd.grad(chain_forward(*leaves, torch.sin, torch.tanh, kinds=kinds), leaves))
    arrays = [jnp.asarray(data[k]) for k in ("x", "c", "d")]

    def loss(x: jax.Array, c: jax.Array, d: jax.Array) -> jax.Array:
        return chain_forward(x, c, d, jnp.sin, jnp.tanh, kinds=kinds)

    g = jax.grad(loss, argnums=(0, 1, 2))
    if peer == "jax.jit(jax.grad)":
        g = jax.jit(g)
    return lambda: block(g(*arrays))


def node_by_node(data: dict, kinds: list, repeats: int) -> float:
    """Median ``fg.grad`` time of the structure with fusion off, kernels warm."""
    fg.autograd.fusion.set_enabled(False)
    try:
        call = FgraphEager(data, kinds)
        for _ in range(repeats + 2):
            call()
        return statistics.median(call.grad_times[2:])
    finally:
        fg.autograd.fusion.set_enabled(True)


def measure(rounds: int, repeats: int = 5, skip: tuple = ()) -> dict:
    """Medians over ``rounds`` fresh structures, in seconds.

    Returns ``{"first": {peer: t}, "second": {peer: t}, "grad_first", "grad_second",
    "node_by_node", "cold"}``: the forward + backward calls per peer, fgraph's ``fg.grad``
    calls alone, the node-by-node reference and the warm-up (first structure in the process).
    ``skip``: peers left out.
    """
    fg.backends.compilation_cache.disable()  # "fresh": no program may come from an earlier run's disk cache
    data = chain_data(np.random.default_rng(0))
    peers = [p for p in PEERS if (torch is not None or p != "PyTorch eager") and p not in skip]
    cold = {}
    for peer in peers:  # compile every per-op kernel once: the rounds measure structures, not kernels
        call = peer_call(peer, data, structure(0))
        cold[peer] = _timed(call)
        call()
    first: dict = {p: [] for p in peers}
    second: dict = {p: [] for p in peers}
    grad_first, grad_second, reference = [], [], []
    for r in range(rounds):
        for i, peer in enumerate(peers):  # a structure per round and peer: no peer sees another's
            kinds = structure(1 + r * len(peers) + i)
            call = peer_call(peer, data, kinds)
            first[peer].append(_timed(call))
            second[peer].append(_timed(call))
            if peer == "fgraph eager":
                grad_first.append(call.grad_times[0])
                grad_second.append(call.grad_times[1])
                reference.append(node_by_node(data, kinds, repeats))
    med = statistics.median
    return {"first": {p: med(t) for p, t in first.items()}, "second": {p: med(t) for p, t in second.items()},
            "grad_first": med(grad_first), "grad_second": med(grad_second), "node_by_node": med(reference),
            "cold": cold, "first_calls": first_calls(data, rounds, seed=1000),
            "first_hvp_calls": first_hvp_calls(rounds, seed=2000)}


def first_calls(data: dict, rounds: int, seed: int, calls: int = FIRST_CALLS) -> dict:
    """Seconds for the first ``calls`` forward + backward calls of a fresh structure, fgraph eager, PyTorch
    eager and the pure-JAX floors of ``fresh_floors.py`` (median over ``rounds`` structures, a new one per round
    and peer): what an edited notebook cell costs, fusion's background compile included. Each peer's compiles
    finish before the next peer starts."""
    peers = ["fgraph eager"] + (["PyTorch eager"] if torch is not None else []) + list(fresh_floors.FLOORS)
    fresh_floors.check_and_warm(data, structure(seed - 1))
    totals: dict = {p: [] for p in peers}
    for r in range(rounds):
        for i, peer in enumerate(peers):
            call = peer_call(peer, data, structure(seed + r * len(peers) + i))
            totals[peer].append(_first_calls_of(call, calls))
    return {p: statistics.median(t) for p, t in totals.items()}


def _first_calls_of(call: Callable[[], object], calls: int) -> float:
    """Seconds for ``calls`` calls of ``call``; then its compiles finish (outside the time)."""
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    elapsed = time.perf_counter() - t0
    fg.autograd.fusion.wait_for_compiles()
    return elapsed


HVP_WIDTH = 64  # the Hessian-vector product of second_order_and_scale.py, 64 floats wide


def hvp_structure(seed: int) -> list:
    """A random stack of 2-4 layers ``act(h @ W)``, each ``act`` tanh or sin: 28 structures, one set of shapes."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 2, int(rng.integers(2, 5))).tolist()


def hvp_call(peer: str, kinds: list, seed: int) -> Callable[[], object]:
    """One peer's Hessian-vector product (double backward) of the network ``kinds`` on new weights."""
    rng = np.random.default_rng(seed)
    ws = [(rng.standard_normal((HVP_WIDTH, HVP_WIDTH)) / np.sqrt(HVP_WIDTH)).astype(np.float32) for _ in kinds]
    x, v = (rng.standard_normal(HVP_WIDTH).astype(np.float32) for _ in range(2))

    def loss(h, weights, tanh, sin):
        for w, k in zip(weights, kinds):
            h = (tanh if k == 0 else sin)(h @ w)
        return h.sum()

    if peer == "fgraph eager":
        weights, leaf, vec = [fg.tensor(w) for w in ws], fg.tensor(x, requires_grad=True), fg.tensor(v)

        def fgraph_hvp() -> None:
            (g,) = fg.grad(loss(leaf, weights, fg.tanh, fg.sin), [leaf], create_graph=True)
            block(fg.grad((g * vec).sum(), [leaf])[0].array)

        return fgraph_hvp
    weights, leaf, vec = [to_torch(w) for w in ws], to_torch(x, requires_grad=True), to_torch(v)

    def torch_hvp() -> None:
        (g,) = torch.autograd.grad(loss(leaf, weights, torch.tanh, torch.sin), [leaf], create_graph=True)
        torch_done(torch.autograd.grad((g * vec).sum(), [leaf]))

    return torch_hvp


def first_hvp_calls(rounds: int, seed: int, calls: int = FIRST_CALLS) -> dict:
    """Seconds for the first ``calls`` Hessian-vector products of a fresh 2-4 layer network (a new structure and
    new weights per round and peer; every per-op kernel compiled beforehand), fgraph eager and PyTorch eager,
    median over ``rounds``: fusion's compiles of the ``create_graph`` pass, its vjp and the second pass included."""
    peers = ["fgraph eager"] + (["PyTorch eager"] if torch is not None else [])
    for peer in peers:  # the kernels of every layer kind, on the shapes every round uses
        warm = hvp_call(peer, [0, 1, 0, 1, 1, 0], seed - 1)
        for _ in range(3):
            warm()
    fg.autograd.fusion.wait_for_compiles()
    totals: dict = {p: [] for p in peers}
    used: set = set()
    candidate = seed
    for r in range(rounds):
        for peer in peers:
            kinds = hvp_structure(candidate)
            while tuple(kinds) in used:  # a structure no earlier round or peer has seen
                candidate += 1
                kinds = hvp_structure(candidate)
            used.add(tuple(kinds))
            totals[peer].append(_first_calls_of(hvp_call(peer, kinds, candidate), calls))
    return {p: statistics.median(t) for p, t in totals.items()}


def run(quick: bool) -> int:
    rounds = 1 if quick else 5
    print(f"fresh {CHAIN_OPS}-node structure, first and second differentiation (median of {rounds} structures)"
          + (" (--quick)" if quick else ""))
    for line in thread_settings():
        print("  " + line)
    result = measure(rounds)
    print(f"  {'peer':<20} {'1st call ms':>12} {'2nd call ms':>12} {'cold ms':>10}")
    for peer in result["first"]:
        print(f"  {peer:<20} {result['first'][peer] * 1e3:12.1f} {result['second'][peer] * 1e3:12.1f} "
              f"{result['cold'][peer] * 1e3:10.1f}")
    nbn = result["node_by_node"]
    worst = max(result["grad_first"], result["grad_second"]) / nbn
    print(f"  fg.grad alone: 1st {result['grad_first'] * 1e3:.1f} ms, 2nd {result['grad_second'] * 1e3:.1f} ms, "
          f"node by node {nbn * 1e3:.1f} ms -> worst {worst:.2f}x ({'PASS' if worst <= BUDGET else 'MISS'}, "
          f"budget {BUDGET}x)")
    calls = result["first_calls"]
    line = ", ".join(f"{p} {t * 1e3:.0f} ms" for p, t in calls.items())
    if "PyTorch eager" in calls:
        line += f" (fgraph ÷ PyTorch {calls['fgraph eager'] / calls['PyTorch eager']:.2f}x)"
    print(f"  first {FIRST_CALLS} calls of a fresh structure: " + line)
    for floors in fresh_floors.summary_line(calls):
        print("  " + floors)
    hvps = result["first_hvp_calls"]
    line = ", ".join(f"{p} {t * 1e3:.0f} ms" for p, t in hvps.items())
    if "PyTorch eager" in hvps:
        line += f" (fgraph ÷ PyTorch {hvps['fgraph eager'] / hvps['PyTorch eager']:.2f}x)"
    print(f"  first {FIRST_CALLS} Hessian-vector products of a fresh 2-4 layer network: " + line)
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    return cli(run, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
