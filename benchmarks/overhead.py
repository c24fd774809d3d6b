"""Eager overhead of fgraph against PyTorch and JAX, measured side by side in one run.

Workloads (the same computation in every framework):

* ``chain``: per-op overhead. A chain of 200 small elementwise ops on a 16-element
  float32 vector, cycling sin, tanh, mul-by-tensor, add-tensor, then a sum;
  forward + backward with respect to the three leaves (x, c, d). Reported in
  microseconds per op (total time / 200).
* ``mlp``: one training step of an MLP, batch 64, 784 -> 256 -> 256 -> 10,
  float32, relu, mean squared-error loss; gradients of all weights and biases
  (no optimizer update). Reported in microseconds per step.

Peers: fgraph eager (build the graph + ``fg.grad``), un-jitted ``jax.grad`` of the
pure-JAX function, ``jax.jit(jax.grad(...))``, and PyTorch eager (forward +
``.backward()``) when ``import torch`` works. Every measurement is the median of
several repeats after warm-up; results are synchronised (``block_until_ready``)
inside the timed region. Ratios are against PyTorch eager.

Run: ``python benchmarks/overhead.py`` (about a minute) or ``--quick`` (seconds).
"""
from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

import fgraph as fg

try:
    import torch
except ImportError:  # PyTorch is an optional peer
    torch = None

CHAIN_OPS = 200
CHAIN_SIZE = 16
MLP_BATCH, MLP_SIZES = 64, (784, 256, 256, 10)

# Budgets (fgraph / PyTorch eager), from the issue that introduced this script.
BUDGETS = {"chain": 2.5, "mlp": 1.5}


# -- timing -----------------------------------------------------------------------------------
def _calibrate(fn: Callable[[], object], target_s: float, warmup: int = 3) -> int:
    """Warm ``fn`` up; return how many calls make a batch of about ``target_s`` seconds."""
    for _ in range(warmup):
        fn()
    fg.autograd.fusion.wait_for_compiles()  # fused programs compile in the background: time the steady state
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    return max(1, int(target_s / once))


def _time_batch(fn: Callable[[], object], number: int) -> float:
    """Seconds per call over one batch; the garbage collector is off inside it, as in ``timeit``."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        return (time.perf_counter() - t0) / number
    finally:
        gc.enable()


def measure_all(steps: dict, repeats: dict, target_s: float) -> dict:
    """Median seconds per call for every peer.

    Repeats are interleaved round-robin across the peers, so a burst of load from
    elsewhere on the machine hits all of them alike and the ratios stay fair.
    """
    numbers = {peer: _calibrate(step, target_s) for peer, step in steps.items()}
    samples: dict = {peer: [] for peer in steps}
    for r in range(max(repeats.values())):
        for peer, step in steps.items():
            if r < repeats[peer]:
                samples[peer].append(_time_batch(step, numbers[peer]))
    return {peer: statistics.median(s) for peer, s in samples.items()}


def _block(arrays) -> None:
    jax.block_until_ready(arrays)


# -- workload data (shared by every peer) -------------------------------------------------------
def chain_data(rng: np.random.Generator) -> dict:
    return {
        "x": rng.uniform(-1, 1, CHAIN_SIZE).astype(np.float32),
        "c": rng.uniform(0.5, 1.0, CHAIN_SIZE).astype(np.float32),  # keeps values bounded
        "d": rng.uniform(-0.1, 0.1, CHAIN_SIZE).astype(np.float32),
    }


def mlp_data(rng: np.random.Generator) -> dict:
    data = {
        "x": rng.standard_normal((MLP_BATCH, MLP_SIZES[0])).astype(np.float32),
        "y": rng.standard_normal((MLP_BATCH, MLP_SIZES[-1])).astype(np.float32),
    }
    for i, (fan_in, fan_out) in enumerate(zip(MLP_SIZES[:-1], MLP_SIZES[1:])):
        bound = 1.0 / np.sqrt(fan_in)
        data[f"w{i}"] = rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32)
        data[f"b{i}"] = rng.uniform(-bound, bound, (fan_out,)).astype(np.float32)
    return data


MLP_PARAMS = [f"{k}{i}" for i in range(len(MLP_SIZES) - 1) for k in ("w", "b")]


# The op sequence, written once over any array/tensor namespace: step i applies op i % 4.
def model_batch(build: Callable[[], object], batch: int, n_in: int, n_classes: int) -> tuple[dict, np.ndarray, np.ndarray]:
    """A seeded model's ``state_dict`` as NumPy arrays and one classification batch, shared by every peer."""
    fg.manual_seed(0)
    model = build()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, n_in)).astype(np.float32)
    y = rng.integers(0, n_classes, batch)
    return {k: v.numpy() for k, v in model.state_dict().items()}, x, y


def chain_forward(x, c, d, sin, tanh):
    h = x
    for i in range(CHAIN_OPS):
        k = i % 4
        if k == 0:
            h = sin(h)
        elif k == 1:
            h = tanh(h)
        elif k == 2:
            h = h * c
        else:
            h = h + d
    return h.sum()


def mlp_forward(params: list, x, y, relu):
    w0, b0, w1, b1, w2, b2 = params
    h = relu(x @ w0 + b0)
    h = relu(h @ w1 + b1)
    out = h @ w2 + b2
    return ((out - y) ** 2).mean()


# -- peers -----------------------------------------------------------------------------------
def fgraph_chain(data: dict) -> Callable[[], object]:
    x, c, d = (fg.tensor(data[k], requires_grad=True) for k in ("x", "c", "d"))
    leaves = [x, c, d]

    def step():
        loss = chain_forward(x, c, d, fg.sin, fg.tanh)
        grads = fg.grad(loss, leaves)
        _block([g.data for g in grads])
        return grads

    return step


def fgraph_mlp(data: dict) -> Callable[[], object]:
    params = [fg.tensor(data[k], requires_grad=True) for k in MLP_PARAMS]
    x, y = fg.tensor(data["x"]), fg.tensor(data["y"])

    def step():
        loss = mlp_forward(params, x, y, fg.relu)
        grads = fg.grad(loss, params)
        _block([g.data for g in grads])
        return grads

    return step


def jax_chain(data: dict, jit: bool) -> Callable[[], object]:
    x, c, d = (jnp.asarray(data[k]) for k in ("x", "c", "d"))
    g = jax.grad(lambda x, c, d: chain_forward(x, c, d, jnp.sin, jnp.tanh), argnums=(0, 1, 2))
    if jit:
        g = jax.jit(g)

    def step():
        out = g(x, c, d)
        _block(out)
        return out

    return step


def jax_mlp(data: dict, jit: bool) -> Callable[[], object]:
    params = [jnp.asarray(data[k]) for k in MLP_PARAMS]
    x, y = jnp.asarray(data["x"]), jnp.asarray(data["y"])
    g = jax.grad(lambda p, x, y: mlp_forward(p, x, y, jax.nn.relu))
    if jit:
        g = jax.jit(g)

    def step():
        out = g(params, x, y)
        _block(out)
        return out

    return step


def torch_chain(data: dict) -> Callable[[], object]:
    x, c, d = (torch.tensor(data[k], requires_grad=True) for k in ("x", "c", "d"))
    leaves = [x, c, d]

    def step():
        for t in leaves:
            t.grad = None
        chain_forward(x, c, d, torch.sin, torch.tanh).backward()
        return [t.grad for t in leaves]

    return step


def torch_mlp(data: dict) -> Callable[[], object]:
    params = [torch.tensor(data[k], requires_grad=True) for k in MLP_PARAMS]
    x, y = torch.tensor(data["x"]), torch.tensor(data["y"])

    def step():
        for p in params:
            p.grad = None
        mlp_forward(params, x, y, torch.relu).backward()
        return [p.grad for p in params]

    return step


# -- agreement check (a benchmark of wrong gradients is worthless) -------------------------------
def _as_numpy(values) -> list:
    out = []
    for v in values:
        if isinstance(v, fg.Tensor):
            v = v.data
        elif torch is not None and isinstance(v, torch.Tensor):
            v = v.detach().numpy()
        out.append(np.asarray(v))
    return out


def check_agreement(name: str, steps: dict, reference: str = "jax.jit(jax.grad)") -> None:
    expected = _as_numpy(steps[reference]())
    for peer, step in steps.items():
        got = _as_numpy(step())
        for i, (a, b) in enumerate(zip(got, expected)):
            if not np.allclose(a, b, rtol=1e-4, atol=1e-5):
                raise SystemExit(
                    f"{name}: {peer} gradient {i} disagrees with {reference} "
                    f"(max abs diff {np.max(np.abs(a - b)):.3g}); refusing to time it."
                )


# -- report ----------------------------------------------------------------------------------
def thread_settings() -> list[str]:
    lines = [
        f"python {platform.python_version()}, jax {jax.__version__} on {jax.default_backend()} "
        f"({', '.join(str(d) for d in jax.devices())}), fgraph {fg.__version__}, numpy {np.__version__}",
        f"cpus: os.cpu_count()={os.cpu_count()}, usable={len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'}",
    ]
    env = {k: os.environ[k] for k in ("XLA_FLAGS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                      "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE") if k in os.environ}
    if hasattr(os, "getloadavg"):
        load = os.getloadavg()[0]
        note = "  (busy machine: expect noise; ratios are fairer than absolute times)" if load > 0.5 else ""
        lines.append(f"load average (1 min) at start: {load:.2f}{note}")
    lines.append("env: " + (", ".join(f"{k}={v}" for k, v in env.items()) or "no thread-related variables set"))
    lines.append("jax/XLA CPU: default thread pool (one thread per usable core unless XLA_FLAGS says otherwise)")
    if torch is not None:
        lines.append(f"torch {torch.__version__}: num_threads={torch.get_num_threads()}, "
                     f"num_interop_threads={torch.get_num_interop_threads()} (defaults, not changed)")
    else:
        lines.append("torch: not installed; the PyTorch column and the budget checks are skipped")
    return lines


def run(quick: bool) -> int:
    repeats, target = (3, 0.05) if quick else (7, 0.2)
    rng = np.random.default_rng(0)
    workloads = {
        "chain": (chain_data(rng), fgraph_chain, jax_chain, torch_chain, CHAIN_OPS,
                  f"per-op overhead: {CHAIN_OPS} elementwise ops on {CHAIN_SIZE} x float32, fwd+bwd",
                  "us/op"),
        "mlp": (mlp_data(rng), fgraph_mlp, jax_mlp, torch_mlp, 1,
                f"MLP step: batch {MLP_BATCH}, {'->'.join(map(str, MLP_SIZES))}, float32, relu, MSE, grads",
                "us/step"),
    }
    print("fgraph eager overhead benchmark" + (" (--quick)" if quick else ""))
    for line in thread_settings():
        print("  " + line)
    print(f"  timing: median of {repeats} repeats (interleaved across peers), each a batch of calls lasting "
          f"~{target * 1e3:.0f} ms, after warm-up")
    print()

    verdicts = []
    for name, (data, fg_peer, jax_peer, torch_peer, per, title, unit) in workloads.items():
        steps = {
            "fgraph eager": fg_peer(data),
            "jax.grad (no jit)": jax_peer(data, jit=False),
            "jax.jit(jax.grad)": jax_peer(data, jit=True),
        }
        if torch is not None:
            steps["PyTorch eager"] = torch_peer(data)
        check_agreement(name, steps)
        # Un-jitted jax.grad is slow and only context; fewer repeats keep the run short.
        reps = {peer: max(3, repeats // 2) if peer == "jax.grad (no jit)" else repeats for peer in steps}
        times = {peer: t / per * 1e6 for peer, t in measure_all(steps, reps, target).items()}
        ref = times.get("PyTorch eager")
        print(f"{title}")
        print(f"  {'peer':<20} {unit:>12} {'x PyTorch':>10}")
        for peer, t in times.items():
            ratio = f"{t / ref:10.2f}" if ref else f"{'n/a':>10}"
            print(f"  {peer:<20} {t:12.1f} {ratio}")
        budget = BUDGETS[name]
        if ref:
            ratio = times["fgraph eager"] / ref
            met = ratio <= budget
            verdicts.append(met)
            print(f"  budget: fgraph <= {budget}x PyTorch -> {ratio:.2f}x: {'MET' if met else 'NOT MET'}")
        else:
            print(f"  budget: fgraph <= {budget}x PyTorch -> not checked (torch not installed)")
        print()

    if torch is None:
        print("summary: budgets not checked (install torch to compare)")
    else:
        print(f"summary: {sum(verdicts)}/{len(verdicts)} budgets met")
    return 0


def cli(run_benchmark: Callable[[bool], int], doc: str, argv: Optional[list[str]] = None) -> int:
    """The benchmarks' command line: ``--quick`` for fewer, shorter repeats; returns ``run_benchmark(quick)``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter repeats (a smoke run)")
    return run_benchmark(parser.parse_args(argv).quick)


def main(argv: Optional[list[str]] = None) -> int:
    return cli(run, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
