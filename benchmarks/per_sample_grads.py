"""Per-sample gradients, side by side: ``fgraph.func`` vmap(grad) against a Python loop of ``fg.grad``.

The workload of the fgraph.func issue: an MLP 784 -> 256 -> 10, float32, relu,
cross-entropy, batch 64; the result is every parameter's gradient for every
sample (``(64, 256, 784)`` for the first weight).

* **fgraph vmap(grad)**: ``vmap(grad(loss_fn), in_dims=(None, 0, 0))(params, x, y)``
  with ``loss_fn`` calling ``functional_call(model, params, (x[None],))``;
* **fgraph compile(vmap(grad))**: the same, compiled by ``fg.compile`` into one program;
* **fgraph loop of fg.grad**: one forward and ``fg.grad`` per sample, stacked;
* **torch.func vmap(grad)** (when torch is installed): torch's recipe;
* **jax.vmap(jax.grad)**: the same program in pure JAX, jitted (the floor) and not.

Every peer starts from the same weights and data, and its gradients are checked
against jitted pure JAX before anything is timed. The issue's budget: fgraph's
vmap at least 5x faster than the loop. Timing is ``overhead.py``'s: interleaved
repeats, medians, synchronised results.
Run: ``python benchmarks/per_sample_grads.py [--quick]``.
"""
from __future__ import annotations

import sys
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

import fgraph as fg
import fgraph.nn.functional as F
from fgraph import nn
from fgraph.func import functional_call, grad, vmap
from timing import block, cli, measure_all, model_batch, thread_settings, to_torch, torch, torch_device, torch_done, torch_numpy

SIZES, BATCH = (784, 256, 10), 64
BUDGET = 5.0


def build() -> nn.Sequential:
    return nn.Sequential(nn.Linear(SIZES[0], SIZES[1]), nn.ReLU(), nn.Linear(SIZES[1], SIZES[2]))


def fgraph_vmap(weights: dict, x: np.ndarray, y: np.ndarray, compiled: bool = False) -> tuple[Callable, Callable]:
    model = build()
    model.load_state_dict(weights)
    params = {k: v.detach() for k, v in model.named_parameters()}
    tx, ty = fg.tensor(x), fg.tensor(y)

    def loss_fn(params: dict, xi: fg.Tensor, yi: fg.Tensor) -> fg.Tensor:
        return F.cross_entropy(functional_call(model, params, (xi[None],)), yi[None])

    per_sample = vmap(grad(loss_fn), in_dims=(None, 0, 0))
    if compiled:
        per_sample = fg.compile(per_sample)
    result: dict = {}

    def step():
        result["g"] = per_sample(params, tx, ty)
        block([g.array for g in result["g"].values()])

    return step, lambda: [result["g"][k].numpy() for k in weights]


def fgraph_loop(weights: dict, x: np.ndarray, y: np.ndarray) -> tuple[Callable, Callable]:
    model = build()
    model.load_state_dict(weights)
    names = [k for k, _ in model.named_parameters()]
    params = [p for _, p in model.named_parameters()]
    tx, ty = fg.tensor(x), fg.tensor(y)
    result: dict = {}

    def step():
        rows = []
        for i in range(BATCH):
            loss = F.cross_entropy(model(tx[i:i + 1]), ty[i:i + 1])
            rows.append(fg.grad(loss, params))
        result["g"] = [jnp.stack([r[j].array for r in rows]) for j in range(len(params))]
        block(result["g"])

    return step, lambda: [np.asarray(g) for g in result["g"]][:len(names)]


def torch_vmap(weights: dict, x: np.ndarray, y: np.ndarray) -> tuple[Callable, Callable]:
    model = torch.nn.Sequential(torch.nn.Linear(SIZES[0], SIZES[1]), torch.nn.ReLU(),
                                torch.nn.Linear(SIZES[1], SIZES[2])).to(torch_device())
    model.load_state_dict({k: to_torch(v) for k, v in weights.items()})
    params = {k: v.detach() for k, v in model.named_parameters()}
    tx, ty = to_torch(x), to_torch(y)

    def loss_fn(params: dict, xi, yi):
        out = torch.func.functional_call(model, params, (xi[None],))
        return torch.nn.functional.cross_entropy(out, yi[None])

    per_sample = torch.func.vmap(torch.func.grad(loss_fn), in_dims=(None, 0, 0))
    result: dict = {}

    def step():
        result["g"] = torch_done(per_sample(params, tx, ty))

    return step, lambda: [torch_numpy(result["g"][k]) for k in weights]


def jax_vmap(weights: dict, x: np.ndarray, y: np.ndarray, jit: bool) -> tuple[Callable, Callable]:
    names = list(weights)
    params = {k: jnp.asarray(weights[k]) for k in names}
    jx, jy = jnp.asarray(x), jnp.asarray(y)

    def loss_fn(p: dict, xi: jax.Array, yi: jax.Array) -> jax.Array:
        h = jax.nn.relu(xi @ p["0.weight"].T + p["0.bias"])
        logits = h @ p["2.weight"].T + p["2.bias"]
        return -jax.nn.log_softmax(logits)[yi]

    fn = jax.vmap(jax.grad(loss_fn), in_axes=(None, 0, 0))
    if jit:
        fn = jax.jit(fn)
    result: dict = {}

    def step():
        result["g"] = fn(params, jx, jy)
        block(result["g"])

    return step, lambda: [np.asarray(result["g"][k]) for k in names]


def check_same(peers: dict, reference: str) -> None:
    """Every peer's per-sample gradients must equal jitted pure JAX before it is timed."""
    step, read = peers[reference]
    step()
    want = read()
    for name, (step, read) in peers.items():
        step()
        for i, (a, b) in enumerate(zip(read(), want)):
            if a.shape != b.shape or not np.allclose(a, b, rtol=1e-4, atol=1e-5):
                raise SystemExit(f"{name}: per-sample gradient {i} (shape {a.shape}) differs from {reference} "
                                 f"(shape {b.shape}); refusing to time it.")


def all_peers(skip: tuple = ()) -> dict:
    """Every peer, ``{name: (step, read_gradients)}``, from the same weights and batch; ``skip``: names left out."""
    weights, x, y = model_batch(build, BATCH, SIZES[0], SIZES[-1])
    makers = {
        "fgraph vmap(grad)": lambda: fgraph_vmap(weights, x, y),
        "fgraph compile(vmap(grad))": lambda: fgraph_vmap(weights, x, y, compiled=True),
        "fgraph loop of fg.grad": lambda: fgraph_loop(weights, x, y),
        "jax.jit(jax.vmap(grad))": lambda: jax_vmap(weights, x, y, jit=True),
        "jax.vmap(jax.grad)": lambda: jax_vmap(weights, x, y, jit=False),
    }
    if torch is not None:
        makers["torch.func vmap(grad)"] = lambda: torch_vmap(weights, x, y)
    return {name: make() for name, make in makers.items() if name not in skip}


def run(quick: bool) -> int:
    repeats, target = (3, 0.1) if quick else (9, 0.5)
    print(f"per-sample gradients: MLP {'->'.join(map(str, SIZES))}, batch {BATCH}, float32, relu, cross-entropy"
          + (" (--quick)" if quick else ""))
    for line in thread_settings():
        print("  " + line)
    print(f"  timing: median of {repeats} interleaved repeats, each a batch of calls lasting ~{target * 1e3:.0f} ms")
    peers = all_peers()
    check_same(peers, "jax.jit(jax.vmap(grad))")
    times = measure_all({name: step for name, (step, _) in peers.items()}, {name: repeats for name in peers}, target)
    loop = times["fgraph loop of fg.grad"]
    ours = times["fgraph vmap(grad)"]
    print(f"  {'peer':<26} {'ms/call':>9} {'x fgraph vmap':>14} {'loop / peer':>12}")
    for name, t in times.items():
        print(f"  {name:<26} {t * 1e3:9.2f} {t / ours:14.2f} {loop / t:12.2f}")
    for name in ("fgraph vmap(grad)", "fgraph compile(vmap(grad))"):
        speedup = loop / times[name]
        verdict = "meets" if speedup >= BUDGET else "MISSES"
        print(f"  {name} is {speedup:.1f}x faster than the loop of fg.grad ({verdict} the {BUDGET:.0f}x budget)")
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    return cli(run, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
