"""The benchmark suite: every reference workload, every peer, one table with ratios and budgets.

``python -m benchmarks`` (or ``python benchmarks/run.py``) times, in one process, each
workload of the other scripts here, with their builders and agreement checks:

* per-op overhead (``overhead.py``), the MLP and CNN Adam steps (``optim_step.py``,
  ``cnn_step.py``), the same two steps under bfloat16 autocast (``autocast_step.py``), the
  Hessian-vector product and the 10,000-node graph (``second_order_and_scale.py``), the first and second differentiation of a fresh
  200-node structure (``fresh_structure.py``), per-sample gradients
  (``per_sample_grads.py``), forward mode against reverse mode (``forward_mode.py``: a tall
  Jacobian by ``jacfwd`` and ``jacrev``, the forward-over-reverse Hessian-vector product), the
  ``DataLoader`` feeding the MLP step (``dataloader.py``: batches/s with 0 workers, worker threads and
  worker processes, against PyTorch's ``DataLoader``), the GPT step on 4 devices laid out as DP, FSDP, TP
  and FSDP x TP (``distributed_step.py``, a subprocess), the real-model Adam steps of a nanoGPT-style GPT
  and a CIFAR ResNet-8 (``real_models.py``: the models of ``examples/_gpt.py`` and ``examples/_resnet.py``,
  against ``torch.compile`` too, in a line under the table, and the cold time to each peer's first step,
  one fresh process per model and peer), and the peak memory of the MLP step and of the
  10,000-node graph (``memory.py``, one subprocess per workload and peer);
* peers: fgraph eager, fgraph compiled (``fg.compile``), PyTorch eager (when installed),
  ``jax.jit`` of the pure-JAX program and un-jitted ``jax.grad``; "n/a" where a peer does
  not apply or is not installed.

Options: ``--quick`` (a smoke run: one repeat, short batches, memory of fgraph eager only;
the compiled and un-jitted peers of the MLP, CNN and per-sample workloads and the compiled
and jax.jit fresh structures, whose compiles cost seconds, are left out; the real models run
small (a 1-layer GPT, a batch of 8 16×16 images) with fgraph eager, PyTorch eager (one thread) and
jax.jit only, one timed call each, no cold starts), ``--write`` (also write
this backend's section of ``benchmarks/RESULTS.md``, leaving the other backends' sections as they
are), ``--note TEXT`` (a line for that section), ``--device cpu|gpu`` (JAX's platform; by default
JAX's default backend, which is labelled), ``--runs N`` (each figure the median of N suite runs, each in a
fresh process; ``medians.py``), ``--keep-runs DIR`` (with ``--runs``: keep each run's figures in DIR as
it ends, so a run cut short still leaves the ones before it), ``--combine FILE...`` (report, and with
``--write`` write, the medians of runs kept so, with the environment they ran in: a device machine's runs
written up elsewhere), ``--only STAGE,...`` (those stages alone, for a device machine's short lease; the table
and the budgets say "n/a" for the rest) and ``--cold-repeats N`` (fresh processes per peer for the real
models' cold first step; 0 leaves it out). On a GPU the PyTorch peers run on the GPU as well
(``timing.torch_device``).
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import resource
import shlex
import sys
import time
from typing import Optional

from budgets import C, E, J, N, T, budgets, xla_kernels_slower  # noqa: F401  (re-exported: run.budgets)

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # the scripts import each other by name, as when run one by one
    sys.path.insert(0, HERE)

PEERS = (E, C, T, J, N)
SPLIT = "jax.jit per op (9 programs)"  # the MLP step cut as fgraph eager cuts it, in pure JAX (optim_step.py)
ROWS = {  # key: (label, unit, seconds -> unit factor)
    "chain": ("per-op overhead: 200 elementwise ops on 16 floats, fwd+bwd", "µs/op", 1e6 / 200),
    "mlp": ("MLP step: batch 64, 784→256→256→10, cross-entropy, Adam", "µs/step", 1e6),
    "cnn": ("CNN step: batch 32, 1×28×28, two conv layers, cross-entropy, Adam", "µs/step", 1e6),
    "mlp_bf16": ("bfloat16 autocast: MLP step as above, forward under fg.autocast", "µs/step", 1e6),
    "cnn_bf16": ("bfloat16 autocast: CNN step as above, forward under fg.autocast", "µs/step", 1e6),
    "hvp": ("Hessian-vector product (double backward), 64 floats, 64×64 weights", "µs", 1e6),
    "graph10k": ("10,000-node graph: build + backward", "ms", 1e3),
    "fresh1": ("fresh 200-node structure: 1st differentiation (fwd+bwd)", "ms", 1e3),
    "fresh2": ("fresh 200-node structure: 2nd differentiation (fwd+bwd)", "ms", 1e3),
    "per_sample": ("per-sample gradients: batch 64, MLP 784→256→10, fgraph.func vmap(grad)", "ms", 1e3),
    "per_sample_loop": ("per-sample gradients by a Python loop of fg.grad", "ms", 1e3),
    "gpt": ("GPT step: nanoGPT 4 layers, 4 heads, 128 wide, context 64, vocab 512, batch 8, Adam", "ms/step", 1e3),
    "resnet8": ("ResNet-8 step: batch 16, 3×32×32, Adam", "ms/step", 1e3),
    "mem_mlp": ("peak memory: MLP step", "MiB", 1.0),
    "mem_graph10k": ("peak memory: 10,000-node graph", "MiB", 1.0),
}


def _time(steps: dict, names: dict, quick: bool, repeats: Optional[int] = None) -> dict:
    """Seconds per call of each peer (``steps`` keyed by the script's names, ``names`` maps them to ours)."""
    from timing import measure_all

    reps = 1 if quick else (repeats or 7)
    times = measure_all(steps, {p: reps for p in steps}, 0.02 if quick else 0.2, warmup=1 if quick else 3)
    return {names[p]: t for p, t in times.items()}


def chain(quick: bool) -> dict:
    import numpy as np

    import overhead as o
    from timing import check_agreement, torch

    data = o.chain_data(np.random.default_rng(0))
    steps = {E: o.fgraph_chain(data), C: o.fgraph_chain(data, compiled=True), "jax.jit(jax.grad)": o.jax_chain(data, True),
             N: o.jax_chain(data, False)}
    if torch is not None:
        steps[T] = o.torch_chain(data)
    check_agreement("chain", steps)
    parts = o.chain_parts(data)  # forward alone: where the per-op time goes (a line under the table)
    return _time({**steps, **parts}, {**{p: p for p in PEERS}, "jax.jit(jax.grad)": J, **{p: p for p in parts}}, quick)


def _adam_step(peers: dict, quick: bool) -> dict:
    from optim_step import check_same

    check_same(peers)
    return _time({n: step for n, (step, _) in peers.items()},
                 {**{p: p for p in PEERS}, "jax.jit (pure JAX)": J, SPLIT: SPLIT}, quick)


def mlp(quick: bool) -> dict:
    import optim_step as s
    from timing import model_batch, torch

    weights, x, y = model_batch(s.build, s.BATCH, s.SIZES[0], s.SIZES[-1])
    peers = {E: s.fgraph_step(weights, x, y), "jax.jit (pure JAX)": s.jax_step(weights, x, y),
             SPLIT: s.jax_split_step(weights, x, y)}
    if not quick:  # compiling the step, or its op-by-op kernels, costs seconds: the smoke run leaves them out
        peers[C] = s.fgraph_step(weights, x, y, compiled=True)
        peers[N] = s.jax_step(weights, x, y, jit=False)
    if torch is not None:
        peers[T] = s.torch_step(weights, x, y)
    return _adam_step(peers, quick)


def cnn(quick: bool) -> dict:
    import cnn_step

    return _adam_step(cnn_step.peers(skip=(C, N) if quick else ()), quick)


def autocast(quick: bool) -> tuple[dict, dict]:
    """The MLP and CNN steps with their forward under bfloat16 autocast (``autocast_step.py``); their float32
    rows are the ``mlp`` and ``cnn`` stages'."""
    import autocast_step as a

    names = {a.E: E, a.C: C, a.T: T, a.J: J}
    out = []
    for workload in ("MLP", "CNN"):
        times = a.measure(workload, quick, skip=(a.C,) if quick else (), precisions=("bfloat16",))["bfloat16"]
        out.append({names[p]: t for p, t in times.items()})
    return out[0], out[1]


def hvp(quick: bool) -> dict:
    import numpy as np

    import second_order_and_scale as s
    from timing import check_agreement, torch

    data = s.hvp_data(np.random.default_rng(0))
    steps = {E: s.fgraph_hvp(data), C: s.fgraph_hvp(data, compiled=True), "jax.jit(jax.grad)": s.jax_hvp(data, True),
             N: s.jax_hvp(data, False), SPLIT: s.jax_cut_hvp(data)}
    if torch is not None:
        steps[T] = s.torch_hvp(data)
    check_agreement("hvp", steps)
    return _time(steps, {**{p: p for p in PEERS}, "jax.jit(jax.grad)": J, SPLIT: SPLIT}, quick)


def forward(quick: bool) -> dict:
    import forward_mode

    return forward_mode.measure(quick)  # {"tall": {peer: us}, "hvp": {peer: us}}


def dataloader(quick: bool) -> dict:
    import dataloader as d

    return d.measure(quick)  # {"loader": {name: batches/s}, "training": ..., "step": ..., "start_up": ...}


def distributed(quick: bool) -> Optional[dict]:
    """The GPT step on 4 simulated devices (full runs only: its subprocess compiles five layouts, ~16 s of a
    smoke run that tests/test_distributed_*.py cover anyway)."""
    if quick:
        return None
    import distributed_step

    return distributed_step.measure(quick)  # {layout: seconds per step}, 4 devices, in a subprocess


def real(quick: bool) -> dict:
    import real_models

    return real_models.measure(quick)  # {"gpt": {peer: s}, "resnet8": ..., "cold": ..., "torch_compile": ..., "labels": ...}


def graph10k(quick: bool) -> dict:
    import numpy as np

    import second_order_and_scale as s
    from timing import check_agreement, torch

    steps = {E: s.fgraph_graph(s.graph_data(np.random.default_rng(0)))}
    if torch is not None:
        steps[T] = s.torch_graph(s.graph_data(np.random.default_rng(0)))
        check_agreement("graph10k", steps, reference=T)
    return _time(steps, {p: p for p in PEERS}, quick, repeats=3)


def fresh(quick: bool) -> tuple[dict, dict, dict]:
    import fresh_structure

    r = fresh_structure.measure(rounds=1 if quick else 5, skip=(C, "jax.jit(jax.grad)") if quick else ())
    names = {"jax.jit(jax.grad)": J}
    first = {names.get(p, p): t for p, t in r["first"].items()}
    second = {names.get(p, p): t for p, t in r["second"].items()}
    return first, second, r


def per_sample(quick: bool) -> tuple[dict, dict]:
    import per_sample_grads as s

    peers = s.all_peers(skip=("fgraph compile(vmap(grad))", "jax.vmap(jax.grad)") if quick else ())
    s.check_same(peers, "jax.jit(jax.vmap(grad))")
    names = {"fgraph vmap(grad)": E, "fgraph compile(vmap(grad))": C, "torch.func vmap(grad)": T,
             "jax.jit(jax.vmap(grad))": J, "jax.vmap(jax.grad)": N, "fgraph loop of fg.grad": "loop"}
    times = _time({n: step for n, (step, _) in peers.items()}, names, quick, repeats=5)
    loop = times.pop("loop")
    return times, {E: loop}


def memory(quick: bool) -> dict:
    import memory as m
    from timing import torch

    rows: dict = {}
    notes = set()
    for workload, peers in m.WORKLOADS.items():
        row = rows.setdefault("mem_" + workload, {})
        for peer in peers:
            if (peer == T and torch is None) or (quick and peer != E):
                continue
            result = m.measure(workload, peer)
            row[J if peer == "jax.jit(jax.grad)" else peer] = result["host_mib"]
            notes.add(result["method"])
            if "device_peak_mib" in result:
                rows.setdefault("mem_device_" + workload, {})[peer] = result["device_peak_mib"]
    rows["methods"] = sorted(notes)
    return rows


# -- the report --------------------------------------------------------------------------------------------
def _fmt(value: Optional[float]) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def _ratio(a: Optional[float], b: Optional[float]) -> str:
    return "n/a" if a is None or b is None or b == 0 else f"{a / b:.2f}×"


def environment() -> list[str]:
    import jax
    import jaxlib

    from timing import device_kind, torch, torch_device, usable_cpus

    torch_line = ("not installed" if torch is None
                  else f"{torch.__version__}, {torch_device()}, {torch.get_num_threads()} threads")
    load = f"{os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else "?"
    return [
        f"- device: {device_kind()} (JAX default backend: {jax.default_backend()})",
        f"- machine: {platform.platform()}, {platform.processor() or platform.machine()}, "
        f"os.cpu_count()={os.cpu_count()}, usable cores {usable_cpus()}, load average at start {load}",
        f"- python {platform.python_version()}, jax {jax.__version__}, jaxlib {jaxlib.__version__}, "
        f"torch {torch_line}",
        f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
    ]


def table(rows: dict) -> list[str]:
    lines = ["| workload | unit | " + " | ".join(PEERS) + " | eager ÷ PyTorch | eager ÷ jax.jit | compiled ÷ jax.jit |",
             "|---|---|" + "---:|" * (len(PEERS) + 3)]
    labels = rows.get("labels", {})  # the real models' rows say their size on this backend
    for key, (label, unit, scale) in ROWS.items():
        if key not in rows:  # a stage --only left out
            continue
        label = labels.get(key, label)
        row = {p: t * scale for p, t in rows[key].items()}
        cells = [_fmt(row.get(p)) for p in PEERS]
        lines.append(f"| {label} | {unit} | " + " | ".join(cells) + f" | {_ratio(row.get(E), row.get(T))} | "
                     f"{_ratio(row.get(E), row.get(J))} | {_ratio(row.get(C), row.get(J))} |")
    return lines


def chain_parts_line(chain: dict) -> list[str]:
    """The per-op row taken apart: forward alone (``overhead.chain_parts``), backward as the rest."""
    if "fgraph recording" not in chain or "fgraph op by op" not in chain:
        return []
    us = {name: t * 1e6 / 200 for name, t in chain.items()}
    line = (f"Per-op row in parts (µs/op, forward alone; backward = step − forward): 200 jitted JAX kernels, no fgraph "
            f"{us['jax kernels']:.2f}; fgraph op by op: forward under no_grad {us['fgraph no_grad']:.2f}, recording "
            f"{us['fgraph recording']:.2f}, backward {us['fgraph op by op'] - us['fgraph recording']:.2f}")
    if "PyTorch forward" in us and T in us:
        line += f"; PyTorch forward {us['PyTorch forward']:.2f}, backward {us[T] - us['PyTorch forward']:.2f}"
    if "fgraph lazy" in us:
        line += (f"; the whole step under fg.lazy (one cached program) {us['fgraph lazy']:.2f}"
                 + (f" ({us['fgraph lazy'] / us[T]:.2f}× PyTorch eager)" if T in us else ""))
    if "fgraph op by op" in us:
        line += (f"; with deferred dispatch off (FGRAPH_DEFERRED=0: one JAX dispatch per op) {us['fgraph op by op']:.2f}"
                 + (f" ({us['fgraph op by op'] / us[T]:.2f}× PyTorch eager)" if T in us else ""))
    return [line + " (see `overhead.chain_parts`)."]


def autocast_line(rows: dict) -> list[str]:
    """bfloat16 autocast ÷ float32 for each peer of the MLP and CNN steps (the table's rows)."""
    parts = []
    if not {"mlp", "mlp_bf16", "cnn", "cnn_bf16"} <= set(rows):
        return []
    for label, f32, bf16 in (("MLP", rows["mlp"], rows["mlp_bf16"]), ("CNN", rows["cnn"], rows["cnn_bf16"])):
        ratios = [f"{p} {bf16[p] / f32[p]:.2f}×" for p in PEERS if p in bf16 and p in f32]
        parts.append(f"{label}: " + ", ".join(ratios))
    return ["bfloat16 autocast ÷ float32, same peer (see `benchmarks/autocast_step.py`): " + "; ".join(parts) + "."]


def forward_lines(times: Optional[dict]) -> list[str]:
    """The forward-mode workloads (``forward_mode.py``), µs per call, with ratios to fgraph's forward-mode peer."""
    out: list[str] = []
    if not times:
        return out
    for key, label, ref in (("tall", "Jacobian of an MLP R^4→R^2000", "fgraph jacfwd"),
                            ("hvp", "Hessian-vector product, 64 floats (as above)", "fgraph forward-over-reverse")):
        row = times[key]
        peers = ", ".join(f"{p} {t:.0f} ({t / row[ref]:.2f}×)" for p, t in row.items())
        out.append(f"{label}, µs (÷ {ref}): {peers}.")
    return out


def machine() -> dict:
    """Where this run ran: the section's title, its backend and the environment lines (kept with a run's figures,
    so that ``--combine`` can write a section for a machine it is not on)."""
    import jax

    from timing import device_kind

    return {"title": device_kind(), "backend": jax.default_backend(), "environment": environment()}


def report(rows: dict, fresh_raw: dict, quick: bool, command: str, note: Optional[str],
           where: Optional[dict] = None) -> str:
    """This backend's section of ``RESULTS.md``: the environment, the table, the floors and the budgets."""
    where = where or machine()
    backend = where["backend"]
    out = [f"## {where['title']}", ""]
    if note:
        out += [f"**{note}**", ""]
    out += [f"Command: `{command}`" + (" (smoke run: one repeat, figures are rough)" if quick else ""), ""]
    out += where["environment"] + [""]
    out += table(rows) + [""]
    if fresh_raw:
        out.append(f"fresh structure, fg.grad alone: 1st {fresh_raw['grad_first'] * 1e3:.1f} ms, "
                   f"2nd {fresh_raw['grad_second'] * 1e3:.1f} ms, node by node {fresh_raw['node_by_node'] * 1e3:.1f} ms; "
                   "first structure in the process (kernels compiling), fwd+bwd: "
                   + ", ".join(f"{p} {t * 1e3:.0f} ms" for p, t in fresh_raw["cold"].items()) + "; the first 50 calls "
                   "of a fresh structure (fwd+bwd, fusion's background compile included): "
                   + ", ".join(f"{p} {t * 1e3:.0f} ms" for p, t in fresh_raw["first_calls"].items()) + "; the first 50 "
                   "Hessian-vector products of a fresh 2-4 layer network: "
                   + ", ".join(f"{p} {t * 1e3:.0f} ms" for p, t in fresh_raw.get("first_hvp_calls", {}).items()) + ".")
        import fresh_floors

        out += fresh_floors.summary_line(fresh_raw["first_calls"])
    out += chain_parts_line(rows.get("chain", {}))
    out += autocast_line(rows)
    mlp, hvp = rows.get("mlp", {}), rows.get("hvp", {})
    if SPLIT in mlp and J in mlp and E in mlp:
        out.append(f"MLP step cut into the nine programs fgraph eager dispatches, in pure JAX (no fgraph): "
                   f"{mlp[SPLIT] * 1e6:.0f} µs, jax.jit + {(mlp[SPLIT] - mlp[J]) * 1e6:.0f} µs; fgraph eager: "
                   f"that + {(mlp[E] - mlp[SPLIT]) * 1e6:.0f} µs (see `benchmarks/optim_step.py`).")
    if SPLIT in hvp and E in hvp:
        out.append(f"HVP cut into the nine programs fgraph eager runs, in pure JAX (no fgraph): {hvp[SPLIT] * 1e6:.0f} µs"
                   + (f" ({hvp[SPLIT] / hvp[T]:.2f}× PyTorch)" if T in hvp else "")
                   + f"; fgraph eager: that + {(hvp[E] - hvp[SPLIT]) * 1e6:.0f} µs "
                   "(see \"CPU async dispatch\" in `benchmarks/README.md`).")
    out += forward_lines(rows.get("forward"))
    if "dataloader" in rows:
        import dataloader as d

        out.append(d.summary_line(rows["dataloader"]))
    if "distributed" in rows:
        import distributed_step

        out.append(distributed_step.summary_line(rows["distributed"]))
    if "real_models" in rows:
        import real_models

        out += real_models.summary_lines(rows["real_models"])
    if "methods" in rows:
        out.append(f"Peak memory: resident-set growth during steady-state steps above the process's baseline "
                   f"({', '.join(rows['methods'])}), one subprocess per workload and peer; see `benchmarks/memory.py`.")
    for key in ("mem_device_mlp", "mem_device_graph10k"):
        if key in rows:
            out.append(f"Device peak_bytes_in_use ({key[11:]}): "
                       + ", ".join(f"{p} {v:.1f} MiB" for p, v in rows[key].items()) + ".")
    out.append("")
    if backend != "cpu":
        out += ["Issue 13's budgets were set for the 2-core CPU; on this backend they are shown for comparison.", ""]
    out += ["| budget | measured | budget | verdict |", "|---|---:|---:|---|"]
    out += [f"| {what} | {measured} | {limit} | {verdict} |"
            for what, measured, limit, verdict in budgets(rows, fresh_raw, backend)]
    return "\n".join(out) + "\n"


RESULTS_TITLE = ("# fgraph benchmark results\n\nWritten by `python -m benchmarks --write`, one section per backend: "
                 "a run replaces its own backend's section and leaves the others. Never edited by hand.\n")
_SECTION = re.compile(r"<!-- results: (\w+) -->\n(.*?)<!-- end of results: \1 -->\n", re.S)


def write_section(path: str, backend: str, text: str) -> None:
    """Put ``text`` into ``path`` as ``backend``'s section, keeping the other backends' (CPU first)."""
    try:
        with open(path) as f:
            sections = dict(_SECTION.findall(f.read()))
    except FileNotFoundError:
        sections = {}
    sections[backend] = text
    order = sorted(sections, key=lambda b: (b != "cpu", b))
    with open(path, "w") as f:
        f.write(RESULTS_TITLE + "".join(f"\n<!-- results: {b} -->\n{sections[b]}<!-- end of results: {b} -->\n"
                                        for b in order))


# The suite's stages in the order they run: name -> the function above that measures it.
STAGES = {"chain": chain, "mlp": mlp, "cnn": cnn, "autocast": autocast, "hvp": hvp, "forward": forward,
          "dataloader": dataloader, "distributed": distributed, "real_models": real, "graph10k": graph10k,
          "fresh": fresh, "per_sample": per_sample, "memory": memory}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: one repeat, short batches")
    parser.add_argument("--write", action="store_true", help="also write benchmarks/RESULTS.md")
    parser.add_argument("--note", default=None, help="a line to put at the top of RESULTS.md")
    parser.add_argument("--device", choices=("cpu", "gpu"), default=None,
                        help="JAX platform to run on (default: JAX's default backend)")
    parser.add_argument("--runs", type=int, default=1,
                        help="report each figure's median over this many suite runs, each in a fresh process")
    parser.add_argument("--only", default=None, metavar="STAGE,...",
                        help="run only these stages (of: " + ", ".join(STAGES) + "); the table shows their rows")
    parser.add_argument("--cold-repeats", type=int, default=None, metavar="N",
                        help="fresh processes per peer for the real models' cold first step (default 3; 0: none)")
    parser.add_argument("--keep-runs", default=None, metavar="DIR",
                        help="with --runs: keep each run's figures in DIR (run1.json, ...) as soon as it ends")
    parser.add_argument("--combine", nargs="+", default=None, metavar="FILE",
                        help="report the medians of runs kept by --keep-runs, in the environment they ran in")
    parser.add_argument("--rows-json", default=None, help=argparse.SUPPRESS)  # one run of --runs writes here
    args = parser.parse_args(argv)
    given = list(argv if argv is not None else sys.argv[1:])
    if args.rows_json:  # a run of --runs: its command is the suite's, without the hand-over file
        del given[given.index("--rows-json"):given.index("--rows-json") + 2]
    command = "python -m benchmarks " + shlex.join(given)
    if args.combine:
        import medians

        rows, fresh_raw, where, ran = medians.combine(args.combine)
        args.runs = len(args.combine)
        combined = shlex.join(["python", "-m", "benchmarks", "--combine", *map(os.path.basename, args.combine)]
                              + (["--write"] if args.write else []))
        processes = "1 fresh process" if args.runs == 1 else f"{args.runs} fresh processes"
        return _finish(rows, fresh_raw, args, f"{ran}` in {processes}, combined by `{combined}", where)
    if args.runs > 1 or args.keep_runs:
        import medians

        child = ((["--quick"] if args.quick else []) + (["--device", args.device] if args.device else [])
                 + (["--only", args.only] if args.only else [])
                 + (["--cold-repeats", str(args.cold_repeats)] if args.cold_repeats is not None else []))
        rows, fresh_raw = medians.run_in_processes(child, args.runs, args.keep_runs)
        return _finish(rows, fresh_raw, args, command)
    if args.device:
        os.environ["JAX_PLATFORMS"] = "cuda" if args.device == "gpu" else "cpu"
    from timing import match_threads

    match_threads()
    if args.cold_repeats is not None:
        import real_models

        real_models.COLD_REPEATS = args.cold_repeats
    asked = set(STAGES if args.only is None else args.only.split(","))
    if asked - set(STAGES):
        parser.error(f"--only: no stage {', '.join(sorted(asked - set(STAGES)))}; the stages are {', '.join(STAGES)}")
    rows: dict = {}
    fresh_raw: dict = {}
    for key, stage in STAGES.items():
        if key not in asked:
            continue
        wall, cpu = time.perf_counter(), time.process_time() + _children_cpu()
        result = stage(args.quick)
        if key == "fresh":
            rows["fresh1"], rows["fresh2"], fresh_raw = result
        elif key == "autocast":
            rows["mlp_bf16"], rows["cnn_bf16"] = result
        elif key == "per_sample":
            rows["per_sample"], rows["per_sample_loop"] = result
        elif key == "memory":
            rows.update(result)
        elif result is None:  # a stage a smoke run leaves out
            pass
        elif key == "real_models":
            rows["gpt"], rows["resnet8"], rows["labels"], rows[key] = result["gpt"], result["resnet8"], result["labels"], result
        else:
            rows[key] = result
        print(f"{key}: {time.perf_counter() - wall:.1f} s wall, {time.process_time() + _children_cpu() - cpu:.1f} s cpu",
              file=sys.stderr, flush=True)
    if args.rows_json:
        import medians

        medians.write_rows(args.rows_json, rows, fresh_raw, machine(), command)
    return _finish(rows, fresh_raw, args, command)


def _finish(rows: dict, fresh_raw: dict, args: argparse.Namespace, command: str, where: Optional[dict] = None) -> int:
    """Print the report (and write it, with ``--write``)."""
    note = args.note
    if args.runs > 1:
        note = f"Median of {args.runs} suite runs, each in a fresh process." + (f" {note}" if note else "")
    where = where or machine()
    text = report(rows, fresh_raw, args.quick, command.strip(), note, where)
    print(text)
    if args.write:
        write_section(os.path.join(HERE, "RESULTS.md"), where["backend"], text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
