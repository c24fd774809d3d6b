"""Train a small GPT sharded two ways at once, FSDP x tensor parallel, and check it against one device.

The model is ordinary fgraph code (``_gpt.py``: nanoGPT's architecture, written against torch's
names). Sharding it takes two calls, as in PyTorch:

* ``fg.distributed.parallelize_module(model, mesh, plan)``: Megatron's tensor-parallel plan (each
  attention head and each MLP hidden unit lives on one device of the ``"tp"`` axis);
* ``fg.distributed.fully_shard(model, mesh)``: every parameter also split over the ``"fsdp"`` axis
  (ZeRO-3), on a dimension the tensor-parallel split left free.

The mesh is 2 x 2 (``("fsdp", "tp")``) over 4 devices; each batch is split over ``"fsdp"`` (the
FSDP axis is the data-parallel axis too). The training step is one XLA program (``fg.compile``);
XLA inserts the all-gathers, reduce-scatters and all-reduces. Adam's moments take the shardings
of their parameters. The script trains the same model on one device with the same data and
checks that the losses agree (float32: to about 1e-5).

On a CPU the 4 devices are simulated (``jax_num_cpu_devices``). ``--processes 2`` runs the sharded
training as two local processes of 2 devices each (``fg.distributed.initialize``: one global mesh
over both; each process loads its half of every batch), which is what a two-host run does.

Run: python examples/sharded_gpt.py [--steps 30] [--processes 2] [--quick] [--out DIR]
"""
from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np

DEVICES = 4  # the mesh: 2 (fsdp) x 2 (tp)
LR = 3e-3


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="training steps (default 30)")
    parser.add_argument("--processes", type=int, default=1, choices=(1, 2),
                        help="1: one process with 4 devices; 2: two local processes with 2 devices each")
    parser.add_argument("--quick", action="store_true", help="a few steps of a smaller model (a smoke test)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "out",
                        help="directory for sharded_gpt_losses.json (default: examples/out/)")
    parser.add_argument("--process-id", type=int, default=None, help=argparse.SUPPRESS)  # set for the children
    parser.add_argument("--coordinator", default=None, help=argparse.SUPPRESS)
    return parser.parse_args()


def batches(steps: int, batch: int, config) -> list:
    """Token windows of a fixed random Markov chain: a language with structure the model can learn."""
    rng = np.random.default_rng(0)
    successors = rng.integers(0, config.vocab_size, size=(config.vocab_size, 3))  # each token has 3 successors
    out = []
    for _ in range(steps):
        tokens = np.empty((batch, config.block_size + 1), np.int32)
        tokens[:, 0] = rng.integers(0, config.vocab_size, size=batch)
        for t in range(config.block_size):
            tokens[:, t + 1] = successors[tokens[:, t], rng.integers(0, 3, size=batch)]
        out.append((tokens[:, :-1], tokens[:, 1:]))
    return out


def train(config, data: list, sharded: bool) -> list:
    """Losses of ``len(data)`` Adam steps, on the 2 x 2 mesh (``sharded``) or on one device."""
    import jax

    import fgraph as fg
    from _gpt import make_gpt, tensor_parallel_plan
    from fgraph.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel

    fg.manual_seed(0)
    model = make_gpt(fg, config)
    mesh = None
    if sharded:
        devices = jax.devices() if len(jax.devices()) >= DEVICES else jax.devices("cpu")
        mesh = jax.make_mesh((2, 2), ("fsdp", "tp"), devices=devices[:DEVICES])
        fg.distributed.parallelize_module(model, mesh, tensor_parallel_plan(config, ColwiseParallel, RowwiseParallel))
        fg.distributed.fully_shard(model, mesh)
    opt = fg.optim.Adam(model.parameters(), lr=LR)

    @fg.compile
    def step(model, opt, idx, targets):
        _, loss = model(idx, targets)
        opt.step(loss.backward())  # gradients are returned, not accumulated on .grad
        return loss

    processes = jax.process_count()
    rank = jax.process_index()
    losses = []
    for idx, targets in data:
        if sharded:  # each process loads its share of the global batch
            share = len(idx) // processes
            idx, targets = (fg.distributed.shard_batch(fg.tensor(a[rank * share:(rank + 1) * share]), mesh, "fsdp")
                            for a in (idx, targets))
        else:
            idx, targets = fg.tensor(idx), fg.tensor(targets)
        losses.append(step(model, opt, idx, targets).item())
    if sharded:
        attn = model.h[0].attn.q.weight.array.sharding.spec
        moment = opt.state[model.h[0].attn.q.weight]["exp_avg"].array.sharding.spec
        assert attn == moment, (attn, moment)
        print(f"[process {rank}] h.0.attn.q.weight {tuple(model.h[0].attn.q.weight.shape)}: {attn}; "
              f"Adam's exp_avg: {moment}", flush=True)
    return losses


def run_processes(args: argparse.Namespace) -> list:
    """The sharded run as two local processes; returns process 0's losses."""
    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    base = [sys.executable, __file__, "--steps", str(args.steps), "--coordinator", f"localhost:{port}"]
    base += ["--quick"] if args.quick else []
    children = [subprocess.Popen([*base, "--process-id", str(i)], stdout=subprocess.PIPE, text=True)
                for i in range(2)]
    try:
        outs = [child.communicate(timeout=900)[0] for child in children]
    finally:
        for child in children:
            child.kill()
    if any(child.returncode for child in children):
        raise SystemExit(f"a training process failed (exit codes {[c.returncode for c in children]})")
    for out in outs:  # each process's report, then process 0's losses
        print(*out.strip().splitlines()[:-1], sep="\n")
    return json.loads(outs[0].strip().splitlines()[-1])


def main() -> None:
    args = parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _gpt import GPTConfig

    config = GPTConfig(n_layer=2, n_embd=64, vocab_size=128, block_size=32) if args.quick else GPTConfig()
    steps = min(args.steps, 4) if args.quick else args.steps
    data = batches(steps, 8, config)

    if args.process_id is not None:  # a child of --processes 2
        import fgraph as fg

        fg.distributed.initialize(args.coordinator, num_processes=2, process_id=args.process_id,
                                  num_cpu_devices=DEVICES // 2)
        print(json.dumps(train(config, data, sharded=True)))
        return

    if args.processes == 1:
        import jax

        jax.config.update("jax_num_cpu_devices", DEVICES)  # simulated CPU devices, where there are too few others
        sharded = train(config, data, sharded=True)
    else:
        sharded = run_processes(args)
    single = train(config, data, sharded=False)
    gap = float(np.max(np.abs(np.array(sharded) - np.array(single))))
    where = f"{args.processes} process{'es' if args.processes > 1 else ''}, {DEVICES} devices (fsdp 2 x tp 2)"
    print(f"losses over {steps} steps, {where}: {sharded[0]:.4f} -> {sharded[-1]:.4f}")
    print(f"one device:                            {single[0]:.4f} -> {single[-1]:.4f}")
    print(f"largest difference: {gap:.2e}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sharded_gpt_losses.json").write_text(json.dumps({"sharded": sharded, "one_device": single}))
    if gap > 1e-4:
        raise SystemExit("the sharded losses differ from one device's")
    print("sharded training matches one device")


if __name__ == "__main__":
    main()
