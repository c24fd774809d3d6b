"""The first calls of a fresh structure, op by op and under deferred dispatch, split by phase.

Each round draws a new 200-op elementwise structure (``fresh_structure.py``'s chain; every per-op
kernel is compiled beforehand, only the structure is new) and runs its first ``--calls`` forward +
``fg.grad`` calls, alternating the two modes round by round so a drifting machine moves both alike.
Per call: the forward (recorded, under deferred dispatch, or run eagerly while a recurring step pays
its rent: ``observed``) and ``fg.grad`` with the wait for its result (under deferred dispatch it first
runs the pending forward: one kernel at a time until its program compiles). It prints the medians and
what the deferred recorder did (flushes run kernel by kernel, ops observed, programs compiled and used).

Run: ``python benchmarks/deferred_first_calls.py [--rounds N] [--calls N] [--quick]``.
"""
from __future__ import annotations

import argparse
import statistics
import time

import jax
import numpy as np

import fgraph as fg
from fresh_structure import structure
from overhead import chain_data, chain_forward

MODES = ("eager", "deferred")


def first_calls(data: dict, kinds: list, calls: int, deferred: bool) -> dict:
    """Median milliseconds per phase over the first ``calls`` calls of structure ``kinds``."""
    leaves = [fg.tensor(data[k], requires_grad=True) for k in ("x", "c", "d")]
    phases: dict = {"forward": [], "grad": [], "call": []}
    fg.lazy.set_deferred(deferred)
    try:
        for _ in range(calls):
            t0 = time.perf_counter()
            y = chain_forward(*leaves, fg.sin, fg.tanh, kinds)
            t1 = time.perf_counter()
            jax.block_until_ready([g.array for g in fg.grad(y, leaves)])
            t2 = time.perf_counter()
            for name, seconds in zip(phases, (t1 - t0, t2 - t1, t2 - t0)):
                phases[name].append(seconds * 1e3)
    finally:
        fg.lazy.set_deferred(False)
    fg.autograd.fusion.wait_for_compiles()
    return {name: statistics.median(values) for name, values in phases.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="smoke run: one round of 5 calls")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.calls = 1, 5
    data = chain_data(np.random.default_rng(0))
    first_calls(data, structure(1), 3, deferred=False)  # every kernel the structures use, compiled
    results: dict = {mode: [] for mode in MODES}
    fg.lazy.reset_stats()
    for r in range(args.rounds):
        for i, mode in enumerate(MODES):
            results[mode].append(first_calls(data, structure(100 + 2 * r + i), args.calls, mode == "deferred"))
    print(f"first {args.calls} calls of a fresh 200-op structure, median ms per call over {args.rounds} structures")
    for mode, rounds in results.items():
        cells = ", ".join(f"{name} {statistics.median(r[name] for r in rounds):.2f}" for name in rounds[0])
        print(f"  {mode:<9} {cells}")
    stats = fg.lazy.stats()
    print("  deferred recorder: " + ", ".join(f"{k} {stats.get(k, 0)}" for k in ("flushes", "one_by_one", "observed", "traces", "hits")))


if __name__ == "__main__":
    main()
