"""The benchmarks' shared timing code: calibrated batches, interleaved repeats, medians, the environment.

Every script in ``benchmarks/`` (and the suite, ``python -m benchmarks``) times its peers
with :func:`measure_all`: each peer is warmed up (compiles excluded), a batch size is
calibrated so one batch lasts about ``target_s``, then the repeats are interleaved
round-robin across the peers, so a burst of load elsewhere on the machine hits all of
them alike, and the median per-call time is kept. Results are synchronised
(``block_until_ready``) inside the timed region by the peers themselves.

PyTorch is an optional peer: ``torch`` is ``None`` when it is not installed. Its thread
pool is set to the usable cores (:func:`match_threads`), the size of XLA's CPU pool. When
JAX runs on a GPU and PyTorch sees one, the PyTorch peers run there too
(:func:`torch_device`): their tensors are made with :func:`to_torch` and each step ends
with :func:`torch_done`, which waits for the GPU as ``block_until_ready`` does for JAX.
On a GPU every peer computes float32 matrix products in full float32 (PyTorch's default;
JAX's default there is TF32), so the peers do the same arithmetic and their gradients agree.
"""
from __future__ import annotations

import argparse
import functools
import gc
import os
import platform
import statistics
import time
from typing import Callable, Optional

import jax
import numpy as np

#: ``FGRAPH_BENCH_SYNC_DISPATCH=1`` runs every peer with JAX's CPU async dispatch off. JAX hands each
#: "expensive" CPU program to a worker thread; on a small VM the hand-off can cost more than a small
#: program itself. The flag must be set before the CPU backend starts, so before fgraph is imported.
SYNC_DISPATCH = os.environ.get("FGRAPH_BENCH_SYNC_DISPATCH") == "1"
if SYNC_DISPATCH:
    jax.config.update("jax_cpu_enable_async_dispatch", False)

import fgraph as fg  # noqa: E402 (after the dispatch setting)

try:
    import torch
except ImportError:  # PyTorch is an optional peer
    torch = None


def usable_cpus() -> int:
    """Cores this process may run on (what XLA's CPU thread pool is sized to)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def match_threads() -> None:
    """Give PyTorch's intra-op pool one thread per usable core, as XLA's CPU backend has.

    On a GPU, also make every peer's float32 matrix products and convolutions full float32.
    """
    if torch is not None:
        torch.set_num_threads(usable_cpus())
    if jax.default_backend() == "gpu":
        jax.config.update("jax_default_matmul_precision", "float32")
    if torch_device() == "cuda":  # PyTorch's matmuls are full float32 by default, its cuDNN convolutions not
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False


@functools.cache
def torch_device() -> str:
    """Where the PyTorch peers run: ``"cuda"`` when JAX runs on a GPU and PyTorch sees one, else ``"cpu"``."""
    if torch is not None and jax.default_backend() == "gpu" and torch.cuda.is_available():
        return "cuda"
    return "cpu"


def to_torch(array, requires_grad: bool = False) -> "torch.Tensor":
    """A PyTorch peer's tensor of ``array`` (NumPy), on :func:`torch_device`."""
    return torch.tensor(np.asarray(array), device=torch_device(), requires_grad=requires_grad)


def torch_done(values=None):
    """The end of a PyTorch peer's step: wait for the GPU's queued work (nothing on the CPU); returns ``values``."""
    if torch_device() == "cuda":
        torch.cuda.synchronize()
    return values


def torch_numpy(t: "torch.Tensor") -> np.ndarray:
    """A PyTorch peer's tensor as a NumPy array, wherever it lives."""
    return t.detach().cpu().numpy()


# -- timing -----------------------------------------------------------------------------------
def _settle(fn: Callable[[], object], rounds: int = 8) -> None:
    """Call ``fn`` until no new program compiles: time the steady state.

    Fused programs compile in the background, and one structure can appear only once
    another runs fused (the plain pass over a fused ``create_graph`` pass's node), so
    waiting once is not enough. Deferred dispatch (fgraph's default) compiles a recurring
    step's trace on the same worker, once fusion has compiled the step's backward pass: its
    programs (``fg.lazy.stats()["traces"]``) count too. Each repeated structure compiles at its
    second sighting here (``fusion.set_compile_rent(0)``, which deferred dispatch follows), not
    once its rent is paid: the same steady state, sooner.
    """
    fusion = fg.autograd.fusion
    rent = fusion.stats()["compile_rent"]
    fusion.set_compile_rent(0)  # the steady state is every repeated structure compiled: get there now

    def programs() -> int:
        return fusion.stats()["compiles"] + fg.lazy.stats()["traces"]

    try:
        for _ in range(rounds):
            fusion.wait_for_compiles()
            before = programs()
            fn()
            fn()
            fusion.wait_for_compiles()
            if programs() == before:
                return
    finally:
        fusion.set_compile_rent(rent)


def calibrate(fn: Callable[[], object], target_s: float, warmup: int = 3) -> int:
    """Warm ``fn`` up; return how many calls make a batch of about ``target_s`` seconds."""
    for _ in range(warmup):
        fn()
    _settle(fn)
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    return max(1, int(target_s / once))


def time_batch(fn: Callable[[], object], number: int) -> float:
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


def measure_all(steps: dict, repeats: dict, target_s: float, warmup: int = 3) -> dict:
    """Median seconds per call for every peer.

    Repeats are interleaved round-robin across the peers, so a burst of load from
    elsewhere on the machine hits all of them alike and the ratios stay fair.
    """
    numbers = {peer: calibrate(step, target_s, warmup) for peer, step in steps.items()}
    samples: dict = {peer: [] for peer in steps}
    for r in range(max(repeats.values())):
        for peer, step in steps.items():
            if r < repeats[peer]:
                samples[peer].append(time_batch(step, numbers[peer]))
    return {peer: statistics.median(s) for peer, s in samples.items()}


def block(arrays) -> None:
    jax.block_until_ready(arrays)


# -- agreement check (a benchmark of wrong gradients is worthless) -------------------------------
def as_numpy(values) -> list:
    out = []
    for v in values:
        if isinstance(v, fg.Tensor):
            v = v.array
        elif torch is not None and isinstance(v, torch.Tensor):
            v = torch_numpy(v)
        out.append(np.asarray(v))
    return out


def check_agreement(name: str, steps: dict, reference: str = "jax.jit(jax.grad)") -> None:
    expected = as_numpy(steps[reference]())
    for peer, step in steps.items():
        got = as_numpy(step())
        for i, (a, b) in enumerate(zip(got, expected)):
            if not np.allclose(a, b, rtol=1e-4, atol=1e-5):
                raise SystemExit(
                    f"{name}: {peer} gradient {i} disagrees with {reference} "
                    f"(max abs diff {np.max(np.abs(a - b)):.3g}); refusing to time it."
                )


# -- shared workload data ---------------------------------------------------------------------
def model_batch(build: Callable[[], object], batch: int, n_in, n_classes: int) -> tuple[dict, np.ndarray, np.ndarray]:
    """A seeded model's ``state_dict`` as NumPy arrays and one classification batch, shared by every peer.

    ``n_in`` is the number of input features, or a tuple: the shape of one sample.
    """
    fg.manual_seed(0)
    model = build()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, *np.atleast_1d(n_in))).astype(np.float32)
    y = rng.integers(0, n_classes, batch)
    return {k: v.numpy() for k, v in model.state_dict().items()}, x, y


# -- report ----------------------------------------------------------------------------------
def device_kind() -> str:
    """``CPU`` or ``GPU`` (JAX's default backend) and the device's own name."""
    dev = jax.devices()[0]
    return f"{jax.default_backend().upper()} ({dev.device_kind})"


def thread_settings() -> list[str]:
    lines = [
        f"python {platform.python_version()}, jax {jax.__version__} on {jax.default_backend()} "
        f"({', '.join(str(d) for d in jax.devices())}), fgraph {fg.__version__}, numpy {np.__version__}",
        f"cpus: os.cpu_count()={os.cpu_count()}, usable={usable_cpus()}",
    ]
    env = {k: os.environ[k] for k in ("XLA_FLAGS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                      "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE") if k in os.environ}
    if hasattr(os, "getloadavg"):
        load = os.getloadavg()[0]
        note = "  (busy machine: expect noise; ratios are fairer than absolute times)" if load > 0.5 else ""
        lines.append(f"load average (1 min) at start: {load:.2f}{note}")
    lines.append("env: " + (", ".join(f"{k}={v}" for k, v in env.items()) or "no thread-related variables set"))
    lines.append("jax/XLA CPU: default thread pool (one thread per usable core unless XLA_FLAGS says otherwise); "
                 + ("async dispatch OFF (FGRAPH_BENCH_SYNC_DISPATCH=1)" if SYNC_DISPATCH else "async dispatch on (JAX's default)"))
    if torch is not None:
        lines.append(f"torch {torch.__version__} on {torch_device()}: num_threads={torch.get_num_threads()} (one per usable core), "
                     f"num_interop_threads={torch.get_num_interop_threads()}")
    else:
        lines.append("torch: not installed; the PyTorch column and the budget checks against it are skipped")
    return lines


def cli(run_benchmark: Callable[[bool], int], doc: str, argv: Optional[list[str]] = None) -> int:
    """The benchmarks' command line: ``--quick`` for fewer, shorter repeats; returns ``run_benchmark(quick)``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter repeats (a smoke run)")
    quick = parser.parse_args(argv).quick
    match_threads()
    return run_benchmark(quick)
