"""The GPT training step on one device and on four, laid out as DP, FSDP, TP and FSDP x TP.

The model is ``examples/_gpt.py`` (nanoGPT's architecture: 4 layers, 4 heads, 128 wide, context
64, vocabulary 512; batch 8), one compiled Adam step (``fg.compile``), timed per layout:

* ``1 device``: the whole step on one device;
* ``DP``: ``replicate`` on a 4-device ``"data"`` mesh, the batch split over it;
* ``FSDP``: ``fully_shard`` on a 4-device ``"fsdp"`` mesh, the batch split over it;
* ``TP``: ``parallelize_module`` with Megatron's plan on a 4-device ``"tp"`` mesh, the batch whole;
* ``FSDP x TP``: a 2 x 2 ``("fsdp", "tp")`` mesh, both, the batch split over ``"fsdp"``.

On a CPU the four devices are simulated (``jax_num_cpu_devices``, all sharing the machine's
cores), so the figures show what sharding costs, not a speed-up; on a machine with four or
more accelerators they show the scaling. Every layout's first loss must equal the one-device
loss before it is timed. The measurement runs in a subprocess (the device count is fixed
when JAX starts). Run: ``python benchmarks/distributed_step.py [--quick]``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(os.path.dirname(HERE), "examples")
DEVICES = 4
LAYOUTS = ("1 device", "DP", "FSDP", "TP", "FSDP x TP")
QUICK_LAYOUTS = ("1 device", "FSDP x TP")


def _step_for(layout: str, config, batch: tuple) -> Callable[[], object]:
    """One timed call: a compiled Adam step of the GPT laid out as ``layout``."""
    import jax

    import fgraph as fg
    from _gpt import make_gpt, tensor_parallel_plan
    from fgraph.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel

    devices = jax.devices() if len(jax.devices()) >= DEVICES else jax.devices("cpu")
    fg.manual_seed(0)
    model = make_gpt(fg, config)
    idx, targets = fg.tensor(batch[0]), fg.tensor(batch[1])
    plan = tensor_parallel_plan(config, ColwiseParallel, RowwiseParallel)
    if layout == "DP":
        mesh = jax.make_mesh((DEVICES,), ("data",), devices=devices[:DEVICES])
        fg.distributed.replicate(model, mesh)
        idx, targets = (fg.distributed.shard_batch(t, mesh, "data") for t in (idx, targets))
    elif layout == "FSDP":
        mesh = jax.make_mesh((DEVICES,), ("fsdp",), devices=devices[:DEVICES])
        fg.distributed.fully_shard(model, mesh)
        idx, targets = (fg.distributed.shard_batch(t, mesh, "fsdp") for t in (idx, targets))
    elif layout == "TP":
        mesh = jax.make_mesh((DEVICES,), ("tp",), devices=devices[:DEVICES])
        fg.distributed.parallelize_module(model, mesh, plan)
        idx, targets = (fg.distributed.replicate(t, mesh) for t in (idx, targets))
    elif layout == "FSDP x TP":
        mesh = jax.make_mesh((2, DEVICES // 2), ("fsdp", "tp"), devices=devices[:DEVICES])
        fg.distributed.parallelize_module(model, mesh, plan)
        fg.distributed.fully_shard(model, mesh)
        idx, targets = (fg.distributed.shard_batch(t, mesh, "fsdp") for t in (idx, targets))
    opt = fg.optim.Adam(model.parameters(), lr=1e-3)

    @fg.compile
    def train_step(model, opt, idx, targets):
        _, loss = model(idx, targets)
        opt.step(loss.backward())
        return loss

    def step():
        loss = train_step(model, opt, idx, targets)
        jax.block_until_ready(loss.array)
        return loss

    return step


def _child(quick: bool) -> None:
    """Runs in the subprocess: time every layout, print ``{layout: seconds per step}`` as JSON."""
    import numpy as np

    sys.path[:0] = [HERE, EXAMPLES]
    from _gpt import GPTConfig
    from timing import measure_all

    config = GPTConfig(n_layer=1, n_embd=64, vocab_size=128, block_size=16) if quick else GPTConfig()
    rng = np.random.default_rng(0)
    batch = tuple(rng.integers(0, config.vocab_size, size=(8, config.block_size)).astype(np.int32) for _ in range(2))
    steps = {layout: _step_for(layout, config, batch) for layout in (QUICK_LAYOUTS if quick else LAYOUTS)}
    first = {layout: step().item() for layout, step in steps.items()}
    reference = first["1 device"]
    for layout, loss in first.items():
        if abs(loss - reference) > 1e-4 * max(1.0, abs(reference)):
            raise SystemExit(f"distributed_step: the first loss of {layout} is {loss}, one device's {reference}")
    reps = 1 if quick else 5
    times = measure_all(steps, {p: reps for p in steps}, 0.02 if quick else 0.3, warmup=1 if quick else 2)
    print(json.dumps({"times": times, "devices": DEVICES}))


def measure(quick: bool) -> dict:
    """``{layout: seconds per step}``, measured in a subprocess with ``DEVICES`` devices."""
    env = dict(os.environ)
    code = (f"import sys, jax; jax.config.update('jax_num_cpu_devices', {DEVICES}); sys.path.insert(0, {HERE!r}); "
            f"import distributed_step; distributed_step._child({quick!r})")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=1800)
    if result.returncode:
        raise RuntimeError("distributed_step: the measuring process failed:\n" + result.stdout + result.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])["times"]


def summary_line(times: dict) -> str:
    """One line for the suite's report: ms per step and the ratio to one device."""
    one = times["1 device"]
    parts = [f"{layout} {t * 1e3:.1f} ms ({t / one:.2f}×)" for layout, t in times.items()]
    return (f"GPT step (compiled Adam) on {DEVICES} devices by layout, ÷ one device: " + ", ".join(parts)
            + " (`benchmarks/distributed_step.py`; simulated CPU devices share the cores: overhead, not speed-up).")


def main(argv: list) -> int:
    quick = "--quick" in argv
    times = measure(quick)
    print(summary_line(times))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
