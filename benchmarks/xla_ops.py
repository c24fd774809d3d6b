"""Where a real model's step spends its time, by XLA operation: JAX's profiler over steady-state steps.

A row of the suite says how long a step takes; this says which XLA operations (fusions, dots,
copies) take it, for the ``jax.jit`` twin, fgraph eager or fgraph compiled, so that a gap can be
placed in XLA's code or in fgraph's. It traces ``--steps`` steps after ``--warmup`` ones with
``jax.profiler`` (a Perfetto trace in a temporary folder) and prints the events with the most time
per step: XLA's thunks by name (``copy_bitcast_fusion.7``, ``ynn_fusion.57``...) beside the
Python frames and dispatch events of the profile. With ``--hlo`` (the ``jax.jit`` peer) it also
prints, for each fusion listed, its output shape and the JAX operation it came from, read from
the compiled program's text.

Run: ``python benchmarks/xla_ops.py [gpt|resnet8] [--peer jax.jit|eager|compiled] [--steps 10] [--hlo]``.
"""
from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import re
import sys
import tempfile
from typing import Optional

import jax

import real_models as rm
from timing import _settle

PEERS = {"jax.jit": rm.jax_peer, "eager": rm.fgraph_peer, "compiled": lambda w: rm.fgraph_peer(w, compiled=True)}


def profile(peer, steps: int, warmup: int) -> collections.Counter:
    """Microseconds per step of each complete ("X") event of the profile, by name."""
    for _ in range(warmup):
        peer.step()
    _settle(peer.step)  # fgraph eager: every repeated structure's fused program compiled, as the suite times it
    with tempfile.TemporaryDirectory() as folder:
        jax.profiler.start_trace(folder, create_perfetto_trace=True)
        for _ in range(steps):
            peer.step()
        jax.profiler.stop_trace()
        (path,) = glob.glob(f"{folder}/**/perfetto_trace.json.gz", recursive=True)
        with gzip.open(path) as f:
            trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    totals: collections.Counter = collections.Counter()
    for event in events:
        if event.get("ph") == "X":
            totals[event["name"]] += event.get("dur", 0) / steps
    return totals


def fusion_origins(w: rm.Workload) -> dict:
    """``{instruction name: "shape <- op_name"}`` of the ``jax.jit`` twin's compiled step."""
    from optim_step import adam_update

    params = [jax.numpy.asarray(w.weights[n]) for n in w.param_names]
    buffers = {n: jax.numpy.asarray(w.weights[n]) for n in w.buffer_names}
    loss_fn = w.twin()

    def update(state: dict, x: jax.Array, y: jax.Array) -> tuple:
        def loss_of(plist: list) -> tuple:
            return loss_fn(dict(zip(w.param_names, plist)), state["buffers"], x, y)

        (loss, new_buffers), grads = jax.value_and_grad(loss_of, has_aux=True)(state["params"])
        return {**adam_update(state, grads), "buffers": new_buffers}, loss

    zeros = [jax.numpy.zeros_like(p) for p in params]
    state = {"params": params, "m": zeros, "v": zeros, "t": jax.numpy.zeros(()), "buffers": buffers}
    text = jax.jit(update).lower(state, jax.numpy.asarray(w.x), jax.numpy.asarray(w.y)).compile().as_text()
    found = re.finditer(r"^\s*%(\S+) = (\S+) fusion\(.*?op_name=\"([^\"]+)\"", text, re.M)
    return {m.group(1): f"{m.group(2)} <- {m.group(3)}" for m in found}


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", nargs="?", default="gpt", choices=rm.MODELS)
    parser.add_argument("--peer", default="jax.jit", choices=tuple(PEERS))
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--hlo", action="store_true", help="name each fusion's origin (the jax.jit peer)")
    args = parser.parse_args(argv)
    w = rm.workload(args.model)
    totals = profile(PEERS[args.peer](w)(), args.steps, args.warmup)
    origins = fusion_origins(w) if args.hlo and args.peer == "jax.jit" else {}
    print(f"{args.model}, {args.peer}: the {args.top} events with the most time, ms per step "
          f"({args.steps} steps after {args.warmup}); nested events overlap")
    for name, us in totals.most_common(args.top):
        print(f"  {us / 1e3:8.2f}  {name[:70]:<70} {origins.get(name, '')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
