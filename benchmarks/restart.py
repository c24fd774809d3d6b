"""A restarted process's time to its first fast step, JAX's persistent compilation cache off, cold and warm.

``import fgraph`` turns JAX's persistent compilation cache on (``fgraph/_compilation_cache.py``), so a
process started again loads its compiled programs from disk instead of compiling them. Each measurement
is one fresh interpreter (``python -c``), launched three ways per workload:

* **off**: ``FGRAPH_COMPILATION_CACHE=0``, every program compiled (JAX's default);
* **cold**: the cache on in a new, empty directory: every program compiled and written;
* **warm**: the cache on in the directory the cold run filled: every program loaded.

Workloads: ``optim_step.py``'s MLP Adam step (784→256→256→10, batch 64) in fgraph eager
(``fgraph_step``), fgraph compiled (``fgraph_step(compiled=True)``, one ``fg.compile`` program) and
its pure-JAX peer under ``jax.jit`` (``jax_step``); and the GPT of ``examples/_gpt.py`` (``GPTConfig()``:
4 layers, 128 wide, context 64, batch 8) in fgraph eager with Adam.

Per run: seconds from launch (before the interpreter starts) to ``import fgraph`` done (the floor: no
compile), to the end of the first step, and to the
end of the first *fast* step: the first whose time is at most twice the steady step time (the median
of 5 steps run after fgraph's background compiles of fused backward passes have finished; when no
step before that wait was fast, the first step after it). Launch to first step includes starting
Python and importing JAX and fgraph (PyTorch is not imported). Also shown: the steady step time and
JAX's counts of cache hits and of programs written. One run per cell unless ``--repeats N`` (then the
median, each repeat with its own cold directory); on a busy machine figures vary by tens of percent.
Run: ``python benchmarks/restart.py [--quick] [--repeats N]`` (``--quick``: the MLP eager row only,
fewer steps).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = ("fgraph eager", "fgraph compiled", "jax.jit (pure JAX)", "GPT fgraph eager")
QUICK_WORKLOADS = ("fgraph eager",)
MODES = ("off", "cold", "warm")
FAST = 2.0  # a step is fast when it takes at most FAST x the steady step time


# -- the child: one workload in a fresh interpreter ---------------------------------------------------
def _mlp_step(workload: str) -> Callable[[], object]:
    import optim_step as o
    from timing import model_batch

    weights, x, y = model_batch(o.build, o.BATCH, o.SIZES[0], o.SIZES[-1])
    if workload == "jax.jit (pure JAX)":
        return o.jax_step(weights, x, y)[0]
    return o.fgraph_step(weights, x, y, compiled=workload == "fgraph compiled")[0]


def _gpt_step() -> Callable[[], object]:
    import jax
    import numpy as np

    import fgraph as fg

    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))
    from _gpt import GPTConfig, make_gpt

    config = GPTConfig()
    fg.manual_seed(0)
    model = make_gpt(fg, config)
    opt = fg.optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    idx, targets = (fg.tensor(rng.integers(0, config.vocab_size, (8, config.block_size)).astype(np.int32))
                    for _ in range(2))

    def step():
        _, loss = model(idx, targets)
        opt.step(loss.backward())
        jax.block_until_ready([p.array for p in model.parameters()])

    return step


def child(workload: str, steps: int) -> dict:
    """Build ``workload``, run ``steps`` timed steps, wait for background compiles, time 5 more."""
    sys.modules.setdefault("torch", None)  # PyTorch is no peer here: its import would only add noise
    import warnings

    import jax

    warnings.simplefilter("ignore")  # fgraph's int64 -> int32 note on the labels
    cache_errors = []

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        if "persistent compilation cache" in str(message):  # JAX warns when it cannot read or write an entry
            cache_errors.append(str(message))

    warnings.showwarning = show
    warnings.simplefilter("always", UserWarning)

    counts = {"hits": 0, "writes": 0}

    def count(event: str, **kwargs: object) -> None:
        if event == "/jax/compilation_cache/cache_hits":
            counts["hits"] += 1
        elif event == "/jax/compilation_cache/cache_misses":  # recorded when an entry is written
            counts["writes"] += 1

    jax.monitoring.register_event_listener(count)
    import fgraph  # noqa: F401  (its import, timed apart: the floor of any restart)

    imported = time.time()
    step = _gpt_step() if workload.startswith("GPT") else _mlp_step(workload)
    from fgraph.autograd import fusion

    ends, times = [], []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
        ends.append(time.time())
    fusion.wait_for_compiles(120.0)
    tail = []
    for _ in range(5):
        start = time.perf_counter()
        step()
        tail.append(time.perf_counter() - start)
        ends.append(time.time())
    steady = statistics.median(tail)
    fast = next((i for i, t in enumerate(times) if t <= FAST * steady), steps)
    return {"import_end": imported, "first_end": ends[0], "fast_end": ends[fast], "fast_index": fast,
            "steady_s": steady, "cache_errors": cache_errors, **counts}


# -- the parent: one subprocess per cell ----------------------------------------------------------------
def measure(workload: str, mode: str, cache: str, steps: int) -> dict:
    """Run :func:`child` in a fresh interpreter with the cache ``mode``; times from the launch."""
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_COMPILATION_CACHE_DIR", "FGRAPH_CACHE_DIR")}
    env["FGRAPH_COMPILATION_CACHE"] = "0" if mode == "off" else "1"
    if mode != "off":
        env["FGRAPH_CACHE_DIR"] = cache
    code = (f"import sys, json; sys.path.insert(0, {HERE!r}); import restart; "
            f"print(json.dumps(restart.child({workload!r}, {steps})))")
    launch = time.time()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=os.path.dirname(HERE))
    if proc.returncode != 0:
        raise SystemExit(f"restart measurement of {workload} ({mode}) failed:\n{proc.stderr[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    for error in out.pop("cache_errors"):
        print(f"  ({workload}, {mode}: {error})")
    return {"import_s": out["import_end"] - launch, "first_s": out["first_end"] - launch,
            "fast_s": out["fast_end"] - launch, **out}


def _median_cells(runs: list) -> dict:
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def run(quick: bool, repeats: int) -> int:
    workloads = QUICK_WORKLOADS if quick else WORKLOADS
    steps = 10 if quick else 20
    print("restart: launch -> first step and first fast step of a fresh process, JAX's persistent compilation "
          f"cache off / cold / warm ({repeats} run(s) per cell, median{'; --quick' if quick else ''})")
    print(f"  python {sys.version.split()[0]}; load average (1 min) at start: {os.getloadavg()[0]:.2f}; "
          f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}")
    print(f"  {'workload':<20} {'cache':<5} {'imported':>9} {'first step':>10} {'first fast':>10} {'(step #)':>8} "
          f"{'steady':>9} {'hits':>5} {'writes':>6}")
    for workload in workloads:
        runs: dict = {mode: [] for mode in MODES}
        for _ in range(repeats):
            with tempfile.TemporaryDirectory(prefix="fgraph-restart-") as cache:
                for mode in MODES:  # cold fills the directory that warm then reads
                    runs[mode].append(measure(workload, mode, cache, steps))
        for mode in MODES:
            m = _median_cells(runs[mode])
            print(f"  {workload:<20} {mode:<5} {m['import_s']:8.2f}s {m['first_s']:9.2f}s {m['fast_s']:9.2f}s "
                  f"{m['fast_index'] + 1:8.0f} {m['steady_s'] * 1e3:7.2f}ms {m['hits']:5.0f} {m['writes']:6.0f}")
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the MLP eager row only, fewer steps (a smoke run)")
    parser.add_argument("--repeats", type=int, default=1, help="runs per cell (the median is shown)")
    args = parser.parse_args(argv)
    return run(args.quick, args.repeats)


if __name__ == "__main__":
    sys.exit(main())
