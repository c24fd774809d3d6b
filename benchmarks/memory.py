"""Peak memory of a step, each (workload, peer) in its own subprocess.

What is measured: the process's resident memory at its peak *during* a few steady-state
steps, minus what it held just before them (parameters, optimizer state, data, compiled
kernels, the interpreter and libraries are in the baseline; warm-up and compiles, fgraph's
background ones included, happen before it). The baseline holds the same things for every
peer: PyTorch keeps the last step's gradients in ``.grad`` between steps (``zero_grad`` frees
them at the start of the next), so they are dropped the same way before its baseline is
taken; left in, they would count as baseline for PyTorch and as step memory for the peers
that return gradients (fgraph, JAX), a difference of the gradients' size in PyTorch's favour.
On Linux the peak is ``VmHWM`` after resetting it through ``/proc/self/clear_refs``, so
warm-up peaks do not count; elsewhere it is the ``ru_maxrss`` delta (which misses a
step's peak when warm-up went higher). On a GPU, JAX's ``memory_stats()``
``peak_bytes_in_use`` of the device (whole process) is reported as well, and for PyTorch
on the GPU its ``torch.cuda.max_memory_allocated()`` (whole process).

Workloads: ``mlp`` (``optim_step.py``'s Adam step) and ``graph10k``
(``second_order_and_scale.py``'s 10,000-node build + backward).
Run: ``python benchmarks/memory.py [--quick]``.
"""
from __future__ import annotations

import ctypes
import gc
import json
import os
import resource
import subprocess
import sys
from typing import Callable, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = {"mlp": ("fgraph eager", "fgraph compiled", "PyTorch eager", "jax.jit(jax.grad)"),
             "graph10k": ("fgraph eager", "PyTorch eager")}


def _step(workload: str, peer: str) -> Callable[[], object]:
    import numpy as np

    import optim_step
    import second_order_and_scale as scale
    from timing import match_threads, model_batch

    match_threads()
    if workload == "mlp":
        weights, x, y = model_batch(optim_step.build, optim_step.BATCH, optim_step.SIZES[0], optim_step.SIZES[-1])
        if peer == "PyTorch eager":
            return optim_step.torch_step(weights, x, y)[0]
        if peer == "jax.jit(jax.grad)":
            return optim_step.jax_step(weights, x, y)[0]
        return optim_step.fgraph_step(weights, x, y, compiled=peer == "fgraph compiled")[0]
    data = scale.graph_data(np.random.default_rng(0))
    return scale.torch_graph(data) if peer == "PyTorch eager" else scale.fgraph_graph(data)


def _drop_torch_grads() -> None:
    """``zero_grad()`` (``set_to_none``) on the PyTorch optimizers alive in this process: what their step
    does first, done before the baseline so the gradients a step makes count as that step's memory."""
    import torch

    for obj in gc.get_objects():
        if isinstance(obj, torch.optim.Optimizer):
            obj.zero_grad(set_to_none=True)


def _status_kib(field: str) -> Optional[int]:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _trim() -> None:
    """Give freed heap pages back to the OS (glibc), so the baseline is what the process still uses."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def child(workload: str, peer: str, steps: int) -> dict:
    """Runs in the subprocess: warm up, then the peak over ``steps`` steps above the baseline, in MiB."""
    import jax

    step = _step(workload, peer)
    for _ in range(2):
        step()
    if peer.startswith("fgraph"):  # steady state: the fused programs compiled in the background are ready
        import fgraph as fg

        fg.autograd.fusion.set_compile_rent(0)  # every repeated structure compiled now, not after its rent
        step()
        fg.autograd.fusion.wait_for_compiles()
        for _ in range(2):
            step()
    if peer == "PyTorch eager":
        _drop_torch_grads()
    gc.collect()
    _trim()
    baseline = _status_kib("VmRSS")
    if baseline is not None and _reset_peak():
        for _ in range(steps):
            step()
        peak, method = _status_kib("VmHWM"), "VmHWM after clear_refs"
    else:
        baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for _ in range(steps):
            step()
        peak, method = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "ru_maxrss delta"
    out = {"host_mib": (peak - baseline) / 1024, "baseline_mib": baseline / 1024, "method": method}
    from timing import torch, torch_device

    if peer == "PyTorch eager":
        if torch_device() == "cuda":
            out["device_peak_mib"] = torch.cuda.max_memory_allocated() / 2**20
        return out
    stats = jax.devices()[0].memory_stats() if jax.default_backend() != "cpu" else None
    if stats and "peak_bytes_in_use" in stats:
        out["device_peak_mib"] = stats["peak_bytes_in_use"] / 2**20
    return out


def measure(workload: str, peer: str, steps: int = 3) -> dict:
    """Run :func:`child` in a fresh interpreter (the repository root as working directory)."""
    code = (f"import sys, json; sys.path.insert(0, {HERE!r}); import memory; "
            f"print(json.dumps(memory.child({workload!r}, {peer!r}, {steps})))")
    # Allocations from 64 KiB up are mapped and unmapped, not kept in glibc's heap, so the
    # warm-up's freed buffers leave the resident set and each step's own buffers count.
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", MALLOC_TRIM_THRESHOLD_="0")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=os.path.dirname(HERE),
                          env=env)
    if proc.returncode != 0:
        raise SystemExit(f"memory measurement of {workload} / {peer} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run(quick: bool) -> int:
    from timing import torch

    print("peak memory of a steady-state step above the process's baseline, one subprocess each"
          + (" (--quick)" if quick else ""))
    for workload, peers in WORKLOADS.items():
        for peer in peers:
            if (peer == "PyTorch eager" and torch is None) or (quick and peer != "fgraph eager"):
                continue
            m = measure(workload, peer)
            device = f", device peak {m['device_peak_mib']:.1f} MiB" if "device_peak_mib" in m else ""
            print(f"  {workload:<9} {peer:<20} {m['host_mib']:8.1f} MiB (baseline {m['baseline_mib']:.0f} MiB, "
                  f"{m['method']}{device})")
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    from timing import cli

    return cli(run, __doc__, argv)


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    sys.exit(main())
