"""Lazy step caching, side by side: the same eager training step run eagerly, under ``with fg.lazy():``,
under ``fg.compile``, and as pure JAX under ``jax.jit``; plus the per-op cost of recording.

Workload 1 (``optim_step.py``'s): MLP, batch 64, 784 -> 256 -> 256 -> 10, float32, relu,
cross-entropy, ``loss.backward()``, ``fg.optim.Adam.step``. Peers:

* **fgraph eager**: every op dispatches its jitted kernel;
* **fgraph lazy**: the unchanged step inside ``with fg.lazy():``: ops record, the block's end
  replays one cached XLA program (the issue's budget: at most 1.3x the compiled step);
* **fgraph compiled**: the step under ``fg.compile``;
* **jax.jit (pure JAX)**: the floor.

Every peer starts from the same weights and data; their parameters after three steps must
agree before anything is timed. The lazy peer must replay from the cache (one trace).

Workload 2: per-op overhead. A chain of ``CHAIN_OPS`` elementwise ops on a 16-element
float32 tensor (no grad): eager µs/op (one kernel dispatch each) against lazy record µs/op
(``eval_shape`` signature cached: placeholders, a dict lookup, the record), the structure
key's hash, and the flush (key, hash, the cached program's call and run) against ``jax.jit`` of
the same chain written in JAX, measured apart.
Run: ``python benchmarks/lazy_step.py [--quick]``.
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
from fgraph.lazy import active_recorder
from optim_step import BATCH, LR, SIZES, build, check_same, fgraph_step, jax_step, train_step
from timing import block as _block, cli, measure_all, model_batch, thread_settings

CHAIN_OPS = 200
BUDGET = 1.3  # lazy step / compiled step


def lazy_step(weights: dict, x: np.ndarray, y: np.ndarray) -> tuple[Callable, Callable]:
    model = build()
    model.load_state_dict(weights)
    opt = fg.optim.Adam(model.parameters(), lr=LR)
    tx, ty = fg.tensor(x), fg.tensor(y)

    def step():
        with fg.lazy():
            train_step(model, opt, tx, ty)
        _block([p.array for p in opt.parameters()])  # resolved LazyArrays: pytrees of their arrays

    return step, lambda: [p.numpy() for p in model.parameters()]


def _chain(x: fg.Tensor) -> fg.Tensor:
    for _ in range(CHAIN_OPS // 4):
        x = (x * 1.001).sin() + 0.5
        x = x.tanh()
    return x


def _jax_chain(x: jax.Array) -> jax.Array:
    for _ in range(CHAIN_OPS // 4):
        x = jnp.tanh(jnp.sin(x * 1.001) + 0.5)
    return x


def per_op_overhead(repeats: int) -> dict:
    """Microseconds per op: eager dispatch; lazy record, the flush's structure key and hash, its replay; the floor."""
    x = fg.tensor(np.linspace(-1, 1, 16, dtype=np.float32))
    jitted = jax.jit(_jax_chain)
    samples: dict = {name: [] for name in ("eager op (dispatch + run)", "lazy record", "lazy key + hash",
                                           "lazy flush (key, hash, replay)", "jax.jit of the chain (floor)")}
    for _ in range(3):  # warm-up: kernels, signatures, the replay program
        _block(_chain(x).array)
        _block(jitted(x.array))
        with fg.lazy():
            out = _chain(x)  # kept alive, as in the timed runs: the same structure, so the same program
    for _ in range(repeats):
        t0 = time.perf_counter()
        _block(_chain(x).array)
        samples["eager op (dispatch + run)"].append(time.perf_counter() - t0)
        block = fg.lazy()
        block.__enter__()
        t0 = time.perf_counter()
        out = _chain(x)
        t1 = time.perf_counter()
        rec = active_recorder()
        hash((tuple(rec.records), tuple(rec.ext_kids), tuple(range(len(rec.outs)))))  # what a flush keys on
        t2 = time.perf_counter()
        block.__exit__(None, None, None)
        _block(out.array.value())
        t3 = time.perf_counter()
        _block(jitted(x.array))
        t4 = time.perf_counter()
        samples["lazy record"].append(t1 - t0)
        samples["lazy key + hash"].append(t2 - t1)
        samples["lazy flush (key, hash, replay)"].append(t3 - t2)
        samples["jax.jit of the chain (floor)"].append(t4 - t3)
    return {name: statistics.median(v) * 1e6 / CHAIN_OPS for name, v in samples.items()}


def run(quick: bool) -> int:
    repeats, target = (3, 0.05) if quick else (9, 0.3)
    print("lazy step caching: MLP batch 64, 784->256->256->10, float32, relu, cross-entropy, Adam"
          + (" (--quick)" if quick else ""))
    for line in thread_settings():
        print("  " + line)
    print(f"  timing: median of {repeats} interleaved repeats, each a batch of calls lasting ~{target * 1e3:.0f} ms")
    weights, x, y = model_batch(build, BATCH, SIZES[0], SIZES[-1])
    peers = {"fgraph eager": fgraph_step(weights, x, y), "fgraph lazy": lazy_step(weights, x, y),
             "fgraph compiled": fgraph_step(weights, x, y, compiled=True),
             "jax.jit (pure JAX)": jax_step(weights, x, y)}
    check_same(peers)
    fg.lazy.reset_stats()
    times = measure_all({name: step for name, (step, _) in peers.items()}, {name: repeats for name in peers}, target)
    stats = fg.lazy.stats()
    floor, compiled = times["jax.jit (pure JAX)"], times["fgraph compiled"]
    print(f"  {'peer':<22} {'us/step':>10} {'x compiled':>11} {'x jax.jit':>10}")
    for name, t in times.items():
        print(f"  {name:<22} {t * 1e6:10.1f} {t / compiled:11.2f} {t / floor:10.2f}")
    ratio = times["fgraph lazy"] / compiled
    print(f"  lazy while timed: {stats['flushes']} flushes, {stats['traces']} new traces, {stats['hits']} cache hits, "
          f"{stats['records'] // max(stats['flushes'], 1)} records per step")
    print(f"  budget: lazy <= {BUDGET}x compiled -> {ratio:.2f}x: {'MET' if ratio <= BUDGET else 'NOT MET'}")
    print()
    print(f"per-op overhead: chain of {CHAIN_OPS} elementwise ops on 16 x float32, no grad")
    for name, us in per_op_overhead(repeats=max(5, repeats * 3)).items():
        print(f"  {name:<34} {us:8.2f} us/op")
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    return cli(run, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
