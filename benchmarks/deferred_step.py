"""Deferred dispatch, side by side: the same eager code dispatched op by op and under ``fg.lazy.set_deferred``.

Workloads (the suite's own peers, so their data, weights and checks are the suite's):

* the per-op chain (``overhead.py``): 200 elementwise ops on 16 floats, ``fg.grad``, µs/op;
* the MLP step (``overhead.py``): batch 64, 784 -> 256 -> 256 -> 10, ``fg.grad``, µs/step;
* the real models (``real_models.py``, ``--models``): GPT and ResNet-8 steps with Adam, ms/step.

Peers: **fgraph eager** (op by op), **fgraph deferred** (the same peer object's step, run with deferred
dispatch on: ops record, a recurring step replays as one program or, where its race finds eager faster, runs
eagerly; deferred dispatch stays on for the whole run and the other peers run inside ``fg.lazy.op_by_op()``, so
the deferred peer keeps its state between rounds as a user's loop would), **PyTorch eager**, **jax.jit** (where the
workload has one). Rounds are interleaved (each round times every peer once) so a machine whose speed drifts
moves every peer alike; the figure is the median round after the first. Fusion's and deferred dispatch's
compiles happen at the second sighting here (rent 0), as in the suite's steady state.

Run: ``python benchmarks/deferred_step.py [--models] [--rounds N]``.
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from typing import Callable

import numpy as np

import fgraph as fg
import overhead
import real_models

WARMUP = 30


def _timed(step: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        step()
    return (time.perf_counter() - start) / calls


def interleaved(peers: dict, calls: int, rounds: int) -> dict:
    """Median seconds per call of each peer over ``rounds`` interleaved rounds (the first one is warm-up)."""
    times: dict = {name: [] for name in peers}
    fg.lazy.set_deferred(True)  # on for the whole run, as a user turns it on: the other peers run op by op inside
    try:
        for r in range(rounds + 1):
            for name, step in peers.items():
                with contextlib.nullcontext() if name == "fgraph deferred" else fg.lazy.op_by_op():
                    if r == 0:
                        for _ in range(WARMUP):
                            step()
                        fg.autograd.fusion.wait_for_compiles()
                    else:
                        times[name].append(_timed(step, calls))
    finally:
        fg.lazy.set_deferred(False)
    return {name: statistics.median(t) for name, t in times.items()}


def _report(label: str, unit: str, scale: float, result: dict) -> None:
    base = result.get("PyTorch eager")
    cells = []
    for name, seconds in result.items():
        cell = f"{name} {seconds * scale:.2f}"
        if base:
            cell += f" ({seconds / base:.2f}× PyTorch)"
        cells.append(cell)
    print(f"{label} ({unit}): " + ", ".join(cells))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", action="store_true", help="also the GPT and ResNet-8 steps")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    fg.autograd.fusion.set_compile_rent(0)
    rng = np.random.default_rng(0)
    chain, mlp = overhead.chain_data(rng), overhead.mlp_data(rng)
    peers = {"fgraph eager": overhead.fgraph_chain(chain), "fgraph deferred": overhead.fgraph_chain(chain)}
    if overhead.torch is not None:
        peers["PyTorch eager"] = overhead.torch_chain(chain)
    _report("per-op chain", "µs/op", 1e6 / overhead.CHAIN_OPS, interleaved(peers, 100, args.rounds))
    peers = {"fgraph eager": overhead.fgraph_mlp(mlp), "fgraph deferred": overhead.fgraph_mlp(mlp),
             "jax.jit": overhead.jax_mlp(mlp, jit=True)}
    if overhead.torch is not None:
        peers["PyTorch eager"] = overhead.torch_mlp(mlp)
    _report("MLP step", "µs", 1e6, interleaved(peers, 40, args.rounds))
    if args.models:
        for name in real_models.MODELS:
            w = real_models.workload(name)
            made = {"fgraph eager": real_models.fgraph_peer(w), "fgraph deferred": real_models.fgraph_peer(w),
                    "jax.jit": real_models.jax_peer(w)}
            if real_models.torch is not None:
                made["PyTorch eager"] = real_models.torch_peer(w)
            steps = {peer: start().step for peer, start in made.items()}
            _report(real_models.label(name), "ms/step", 1e3, interleaved(steps, 5, args.rounds))


if __name__ == "__main__":
    main()
