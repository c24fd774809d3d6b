"""Real-model training steps with Adam: a nanoGPT-style GPT and a CIFAR ResNet-8, every peer from the same weights.

The models are written once against torch's names (``examples/_gpt.py``, ``examples/_resnet.py``), so
the same class text builds the fgraph and the PyTorch model; the fgraph model's ``state_dict`` is
copied into every peer:

* GPT: 4 layers, 4 heads, 128 wide, context 64, vocabulary 512, tied embedding, batch 8 of random
  tokens (on a GPU: 6 layers, 6 heads, 384 wide, context 256, batch 32); loss = the model's
  cross-entropy;
* ResNet-8: batch 16 of 3×32×32 images (128 on a GPU), 10 classes, training mode (BatchNorm on the
  batch's statistics, running statistics updated); loss = cross-entropy of the logits.

One step = forward, backward, Adam (lr 1e-3, torch's defaults otherwise). Peers:

* **fgraph eager**: ``loss.backward()`` and ``fg.optim.Adam.step``; **fgraph compiled**: the same step
  under ``fg.compile`` (one XLA program);
* **PyTorch eager**: ``torch.optim.Adam``; **torch.compile**: the same step function under
  ``torch.compile`` (inductor, the default backend; "n/a" with the reason when it fails here);
* **jax.jit**: a pure-JAX twin of the model (``jax_twins.py``: ``jax.numpy``/``lax`` on a parameter dict
  keyed by the ``state_dict`` names, BatchNorm buffers threaded through), ``jax.value_and_grad`` and
  ``optim_step.adam_update``, compiled into one program.

Before timing, every peer's first loss must agree with jax.jit's (rtol 1e-4) and its parameters and
buffers after two steps too (``optim_step.check_same``'s tolerance); a disagreeing peer stops the run.

Cold start (full mode only): for each (model, peer), a fresh subprocess loads the weights and the
batch, builds the model and puts its data on the device (the JAX backend starts there), then times
from there to the end of the first step: making the optimizer and the step (``fg.compile``,
``torch.compile``, ``jax.jit`` wrappers) and running it, compiles included. Imports and the model
build are not in the figure. On-disk compilation caches are off in those subprocesses: JAX's persistent
cache, which fgraph turns on at import for every JAX program of the process (``FGRAPH_COMPILATION_CACHE=0``),
and inductor's (``TORCHINDUCTOR_FORCE_DISABLE_CACHES=1``). Median of 3.

Run: ``python benchmarks/real_models.py [--quick]`` (``--quick``, the suite's smoke run: small models, a
1-layer GPT 32 wide with context 16 and a batch of 8 16×16 images, fgraph eager, PyTorch eager and jax.jit
only, one timed call each, no cold starts).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

import fgraph as fg
import jax_twins
from optim_step import LR, adam_update
from timing import block, cli, measure_all, thread_settings, to_torch, torch, torch_device, torch_done, torch_numpy

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(os.path.dirname(HERE), "examples")
if EXAMPLES not in sys.path:
    sys.path.insert(0, EXAMPLES)

from _gpt import GPTConfig, make_gpt  # noqa: E402
from _resnet import make_resnet8  # noqa: E402

E, C, T, TC, J = "fgraph eager", "fgraph compiled", "PyTorch eager", "torch.compile", "jax.jit"
PEERS = (E, C, T, TC, J)
QUICK_PEERS = (E, T, J)
MODELS = ("gpt", "resnet8")
CHECK_STEPS = 2
COLD_REPEATS = 3


@dataclass
class Peer:
    """One peer's training step (synchronised; returns the loss) and its state (name -> NumPy array)."""

    step: Callable[[], Any]
    state: Callable[[], dict]


@dataclass
class Workload:
    """A model, its batch and its weights (the fgraph model's ``state_dict``), shared by every peer."""

    name: str
    quick: bool
    weights: dict
    param_names: list
    buffer_names: list
    x: np.ndarray
    y: np.ndarray

    def build(self, lib: Any) -> Any:
        return make_gpt(lib, gpt_config(self.quick)) if self.name == "gpt" else make_resnet8(lib)

    def loss(self, lib: Any, model: Any, x: Any, y: Any) -> Any:
        if self.name == "gpt":
            return model(x, y)[1]
        return lib.nn.functional.cross_entropy(model(x), y)

    def twin(self) -> Callable:
        return jax_twins.gpt_loss_fn(gpt_config(self.quick)) if self.name == "gpt" else jax_twins.resnet8_loss_fn()


def _on_gpu() -> bool:
    return jax.default_backend() == "gpu"


def gpt_config(quick: bool = False) -> GPTConfig:
    """The issue's GPT on the CPU; a larger one on a GPU; a tiny one for ``--quick`` (compiles cost seconds)."""
    if quick:
        return GPTConfig(block_size=16, vocab_size=128, n_layer=1, n_head=2, n_embd=32)
    return GPTConfig(block_size=256, vocab_size=512, n_layer=6, n_head=6, n_embd=384) if _on_gpu() else GPTConfig()


def batch_size(name: str, quick: bool = False) -> int:
    if quick:
        return 4 if name == "gpt" else 8
    if name == "gpt":
        return 32 if _on_gpu() else 8
    return 128 if _on_gpu() else 16


def image_size(quick: bool = False) -> int:
    return 16 if quick else 32


def label(name: str, quick: bool = False) -> str:
    """The suite's row label for ``name`` on this backend."""
    b = batch_size(name, quick)
    if name == "gpt":
        c = gpt_config(quick)
        return (f"GPT step: nanoGPT {c.n_layer} layers, {c.n_head} heads, {c.n_embd} wide, context {c.block_size}, "
                f"vocab {c.vocab_size}, batch {b}, Adam")
    side = image_size(quick)
    return f"ResNet-8 step: batch {b}, 3×{side}×{side}, Adam"


def workload(name: str, quick: bool = False) -> Workload:
    """Seeded weights (built by fgraph) and one seeded batch for ``name``."""
    fg.manual_seed(0)
    model = Workload(name, quick, {}, [], [], np.zeros(0), np.zeros(0)).build(fg)
    rng = np.random.default_rng(0)
    b = batch_size(name, quick)
    if name == "gpt":
        c = gpt_config(quick)
        x, y = (rng.integers(0, c.vocab_size, (b, c.block_size)).astype(np.int32) for _ in range(2))
    else:
        side = image_size(quick)
        x = rng.standard_normal((b, 3, side, side)).astype(np.float32)
        y = rng.integers(0, 10, b).astype(np.int32)
    return Workload(name, quick, {k: v.numpy() for k, v in model.state_dict().items()},
                    [n for n, _ in model.named_parameters()], [n for n, _ in model.named_buffers()], x, y)


# -- peers: each maker prepares the model and data, and returns start() -> Peer (optimizer and step made there) --
def fgraph_peer(w: Workload, compiled: bool = False) -> Callable[[], Peer]:
    model = w.build(fg)
    model.load_state_dict(w.weights)
    tx, ty = fg.tensor(w.x), fg.tensor(w.y)
    loss_of = w.loss

    def start() -> Peer:
        opt = fg.optim.Adam(model.parameters(), lr=LR)

        def train_step(model, opt, x, y):
            loss = loss_of(fg, model, x, y)
            opt.step(loss.backward())
            return loss

        run = fg.compile(train_step) if compiled else train_step

        def step():
            loss = run(model, opt, tx, ty)
            block([loss.array] + [p.array for p in opt.parameters()])
            return loss

        def state() -> dict:
            return {**{n: p.numpy() for n, p in model.named_parameters()},
                    **{n: b.numpy() for n, b in model.named_buffers()}}

        return Peer(step, state)

    return start


def torch_peer(w: Workload, compiled: bool = False) -> Callable[[], Peer]:
    model = w.build(torch).to(torch_device())
    model.load_state_dict({k: to_torch(v) for k, v in w.weights.items()})
    tx = to_torch(w.x.astype(np.int64) if w.x.dtype.kind == "i" else w.x)
    ty = to_torch(w.y.astype(np.int64))
    loss_of = w.loss

    def start() -> Peer:
        opt = torch.optim.Adam(model.parameters(), lr=LR)

        def train_step():
            opt.zero_grad()
            loss = loss_of(torch, model, tx, ty)
            loss.backward()
            opt.step()
            return loss

        run = torch.compile(train_step) if compiled else train_step

        def step():
            return torch_done(run().detach())

        def state() -> dict:
            return {n: torch_numpy(t) for n, t in (*model.named_parameters(), *model.named_buffers())}

        return Peer(step, state)

    return start


def jax_peer(w: Workload) -> Callable[[], Peer]:
    names = w.param_names
    params = [jnp.asarray(w.weights[n]) for n in names]
    buffers = {n: jnp.asarray(w.weights[n]) for n in w.buffer_names}
    jx, jy = jnp.asarray(w.x), jnp.asarray(w.y)
    loss_fn = w.twin()

    def update(state: dict, x: jax.Array, y: jax.Array) -> tuple[dict, jax.Array]:
        def loss_of(plist: list) -> tuple:
            return loss_fn(dict(zip(names, plist)), state["buffers"], x, y)

        (loss, new_buffers), grads = jax.value_and_grad(loss_of, has_aux=True)(state["params"])
        return {**adam_update(state, grads), "buffers": new_buffers}, loss

    def start() -> Peer:
        state = {"params": params, "m": [jnp.zeros_like(p) for p in params], "v": [jnp.zeros_like(p) for p in params],
                 "t": jnp.zeros((), jnp.float32), "buffers": buffers}
        run = jax.jit(update)

        def step():
            new, loss = run(state, jx, jy)  # the state keeps its structure: one trace
            state.update(new)
            block((loss, state["params"]))
            return loss

        def state_of() -> dict:
            return {**{n: np.asarray(p) for n, p in zip(names, state["params"])},
                    **{n: np.asarray(b) for n, b in state["buffers"].items()}}

        return Peer(step, state_of)

    return start


def makers(w: Workload) -> dict:
    """``{peer: () -> start}``: each call prepares that peer's model and data for ``w``."""
    out = {E: partial(fgraph_peer, w), C: partial(fgraph_peer, w, compiled=True), J: partial(jax_peer, w)}
    if torch is not None:
        out[T] = partial(torch_peer, w)
        out[TC] = partial(torch_peer, w, compiled=True)
    return out


# -- agreement ------------------------------------------------------------------------------------------------
def _scalar(v: Any) -> float:
    return float(v.item())


def check_same(name: str, peers: dict, first_losses: dict) -> None:
    """First losses within rtol 1e-4 of jax.jit's; parameters and buffers after ``CHECK_STEPS`` steps agree.

    Adam divides by sqrt(v): where a gradient is rounding-level (~1e-9, near Adam's eps) its step is anything up
    to lr, and differs between programs that round differently. So all but a few elements in 10,000 must agree
    to rtol 1e-4 / atol 1e-5, and every element to within ``CHECK_STEPS`` × lr.
    """
    ref_loss = first_losses[J]
    for peer, loss in first_losses.items():
        if not np.isclose(loss, ref_loss, rtol=1e-4, atol=1e-6):
            raise SystemExit(f"{name}: {peer}'s first loss {loss:.7g} differs from jax.jit's {ref_loss:.7g}; "
                             "refusing to time it.")
    states = {peer: p.state() for peer, p in peers.items()}
    reference = states[J]
    total = sum(np.size(v) for v in reference.values())
    for peer, state in states.items():
        if set(state) != set(reference):
            raise SystemExit(f"{name}: {peer}'s state names differ from jax.jit's: "
                             f"{sorted(set(state) ^ set(reference))}")
        loose = 0
        for key, ref in reference.items():
            got = state[key].astype(ref.dtype)
            diff = np.abs(got - ref).max(initial=0)
            loose += int((~np.isclose(got, ref, rtol=1e-4, atol=1e-5)).sum())
            if diff > CHECK_STEPS * LR:
                raise SystemExit(f"{name}: {peer}'s {key} after {CHECK_STEPS} steps differs from jax.jit's "
                                 f"(max abs diff {diff:.3g}); refusing to time it.")
        if loose > total // 10_000:
            raise SystemExit(f"{name}: {loose} of {total} values of {peer}'s parameters and buffers after "
                             f"{CHECK_STEPS} steps differ from jax.jit's beyond rtol 1e-4 / atol 1e-5; refusing to time it.")


def ready_peers(w: Workload, names: tuple) -> tuple[dict, Optional[str]]:
    """Every peer of ``names`` started, run ``CHECK_STEPS`` steps and checked; torch.compile dropped (with the reason)
    when it fails on this machine."""
    peers, first, failure = {}, {}, None
    for peer, make in makers(w).items():
        if peer not in names:
            continue
        if peer == TC and os.environ.get("FGRAPH_BENCH_TORCH_COMPILE") == "0":
            failure = "left out: FGRAPH_BENCH_TORCH_COMPILE=0 (inductor's compiles cost minutes of a short lease)"
            continue
        try:
            started = make()()
            first[peer] = _scalar(started.step())
        except Exception as e:  # noqa: BLE001 (torch.compile's failures are many kinds; anything else re-raises)
            if peer != TC:
                raise
            failure = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:300]
            continue
        for _ in range(CHECK_STEPS - 1):
            started.step()
        peers[peer] = started
    check_same(w.name, peers, first)
    return peers, failure


# -- cold start --------------------------------------------------------------------------------------------------
def _save(w: Workload, path: str) -> None:
    np.savez(path, x=w.x, y=w.y, param_names=np.array(w.param_names), buffer_names=np.array(w.buffer_names),
             **{"w/" + k: v for k, v in w.weights.items()})


def _load(name: str, path: str) -> Workload:
    with np.load(path) as f:
        weights = {k[2:]: f[k] for k in f.files if k.startswith("w/")}
        names = [str(n) for n in f["param_names"]], [str(n) for n in f["buffer_names"]]
        return Workload(name, False, weights, *names, f["x"], f["y"])


def _cold_child(name: str, path: str, peer: str) -> None:
    """In a fresh process: prepare ``peer`` (model, weights, data on the device), then time start + first step."""
    from timing import match_threads

    match_threads()
    w = _load(name, path)
    start = makers(w)[peer]()
    t0 = time.perf_counter()
    try:
        loss = _scalar(start().step())
    except Exception as e:  # noqa: BLE001 (reported by the parent: torch.compile may not work here)
        print(json.dumps({"error": f"{type(e).__name__}: {e}"[:300]}))
        return
    print(json.dumps({"seconds": time.perf_counter() - t0, "loss": loss}))


def cold_time(w: Workload, path: str, peer: str) -> Optional[float]:
    """Seconds from a prepared model to the end of its first step in a fresh process; ``None`` if it failed."""
    code = (f"import sys; sys.path.insert(0, {HERE!r}); import real_models; "
            f"real_models._cold_child({w.name!r}, {path!r}, {peer!r})")
    # No on-disk caches: fgraph turns JAX's persistent compilation cache on at import (for every JAX program of
    # the process, jax.jit's too), inductor has its own; a cold start compiles.
    env = dict(os.environ, TORCHINDUCTOR_FORCE_DISABLE_CACHES="1", FGRAPH_COMPILATION_CACHE="0")
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=900)
    if result.returncode:
        raise RuntimeError(f"real_models: the cold start of {w.name} / {peer} failed:\n{result.stdout}{result.stderr}")
    out = json.loads(result.stdout.strip().splitlines()[-1])
    if "error" in out and peer != TC:
        raise RuntimeError(f"real_models: the cold start of {w.name} / {peer} failed: {out['error']}")
    return out.get("seconds")


def cold_times(w: Workload, peers: tuple, repeats: Optional[int] = None) -> dict:
    """``{peer: median seconds to the first step}``, one fresh process per repeat, repeats interleaved across peers
    (``COLD_REPEATS`` of them unless ``repeats`` says; the suite's ``--cold-repeats`` sets it)."""
    repeats = COLD_REPEATS if repeats is None else repeats
    samples: dict = {p: [] for p in peers}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"{w.name}.npz")
        _save(w, path)
        for _ in range(repeats):
            for peer in peers:
                samples[peer].append(cold_time(w, path, peer))
    return {p: statistics.median(s) for p, s in samples.items() if s and None not in s}


# -- the measurement ---------------------------------------------------------------------------------------------
def _one_call_each(peers: dict) -> dict:
    """The smoke run's timing: one call of each peer, after its check steps and fgraph's background compiles
    (a PyTorch step on a busy 2-core machine can take 100x its idle time: every call counts)."""
    fg.autograd.fusion.wait_for_compiles()
    out = {}
    for name, peer in peers.items():
        t0 = time.perf_counter()
        peer.step()
        out[name] = time.perf_counter() - t0
    return out


def measure(quick: bool) -> dict:
    """``{"gpt": {peer: s/step}, "resnet8": ..., "cold": {model: {peer: s}}, "torch_compile": {model: why it
    failed}, "labels": {model: row label}}``; quick: fgraph eager, PyTorch eager and jax.jit, no cold starts."""
    names = QUICK_PEERS if quick else PEERS
    out: dict = {"cold": {}, "torch_compile": {}, "labels": {m: label(m, quick) for m in MODELS}, "quick": quick,
                 "cold_repeats": 0 if quick else COLD_REPEATS}
    threads = torch.get_num_threads() if torch is not None else 0
    if quick and torch is not None:
        # On a 2-core machine whose other core is busy (CI runs tests on both), each of a 2-thread PyTorch
        # step's parallel regions waits for a time slice: the tiny models' steps took 100x their 1-thread time.
        torch.set_num_threads(1)
    try:
        _measure_models(out, names, quick)
    finally:
        if torch is not None:
            torch.set_num_threads(threads)
    if torch is None and not quick:
        out["torch_compile"] = {name: "PyTorch is not installed" for name in MODELS}
    return out


def _measure_models(out: dict, names: tuple, quick: bool) -> None:
    """Check and time ``names`` on each model into ``out``; in full mode, their cold first steps too."""
    for name in MODELS:
        w = workload(name, quick)
        peers, failure = ready_peers(w, names)
        if failure:
            out["torch_compile"][name] = failure
        if quick:
            out[name] = _one_call_each(peers)
        else:
            out[name] = measure_all({p: peer.step for p, peer in peers.items()}, {p: 7 for p in peers}, 0.2)
        del peers
        if not quick and COLD_REPEATS:
            out["cold"][name] = cold_times(w, tuple(p for p in names if p != TC or failure is None))


def _title(name: str) -> str:
    return "GPT" if name == "gpt" else "ResNet-8"


def summary_lines(result: dict) -> list[str]:
    """The suite's lines under its table: torch.compile against the others, and every peer's cold first step."""
    lines = []
    parts = []
    for name in MODELS:
        row = result[name]
        if TC in row:
            ratios = ", ".join(f"{p} ÷ torch.compile {row[p] / row[TC]:.2f}×" for p in (C, J) if p in row)
            parts.append(f"{_title(name)} {row[TC] * 1e3:.2f} ms ({ratios})")
        elif name in result["torch_compile"]:
            parts.append(f"{_title(name)} n/a ({result['torch_compile'][name]})")
    if any(TC in result[name] for name in MODELS):
        lines.append("torch.compile (inductor) of the PyTorch step: " + "; ".join(parts) + ".")
    elif parts:
        lines.append("torch.compile: n/a: " + "; ".join(parts) + ".")
    else:
        lines.append("torch.compile: not run (--quick: the real models run small, one timed call per peer, "
                     "PyTorch on one thread).")
    cold = result.get("cold") or {}
    if cold:
        parts = [f"{_title(name)}: " + ", ".join(f"{p} {s:.2f} s" for p, s in times.items())
                 for name, times in cold.items()]
        repeats = round(result.get("cold_repeats", COLD_REPEATS))  # a number in JSON: 1.0 once combined
        lines.append("Cold start to the end of the first step (fresh process; imports and the model build excluded, "
                     "compiles included; " + ("one fresh process per peer in each suite run" if repeats == 1 else
                                              f"median of {repeats} fresh processes per peer in a suite run")
                     + "): " + "; ".join(parts) + ".")
    else:
        lines.append("Cold start to the first step: not measured (--quick, or --cold-repeats 0).")
    return lines


def run(quick: bool) -> int:
    print("real-model training steps with Adam (lr 1e-3)" + (" (--quick)" if quick else ""))
    for line in thread_settings():
        print("  " + line)
    result = measure(quick)
    for name in MODELS:
        row, cold = result[name], result["cold"].get(name, {})
        print(f"\n{result['labels'][name]}")
        print(f"  {'peer':<18} {'ms/step':>9} {'x PyTorch':>10} {'x jax.jit':>10} {'cold s':>8}")
        for peer, t in row.items():
            ref = row.get(T)
            print(f"  {peer:<18} {t * 1e3:9.2f} {t / ref if ref else float('nan'):10.2f} {t / row[J]:10.2f} "
                  f"{cold[peer] if peer in cold else float('nan'):8.2f}")
    print()
    for line in summary_lines(result):
        print(line)
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    return cli(run, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
