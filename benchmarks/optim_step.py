"""A whole training step with Adam, side by side: fgraph eager, PyTorch eager, ``jax.jit`` of pure JAX.

The workload of the optimizer issue: an MLP, batch 64, 784 -> 256 -> 256 -> 10, float32,
relu, cross-entropy; one step = forward, gradients of every weight and bias, and an
Adam update (lr 1e-3, torch's defaults otherwise).

* **fgraph eager**: ``nn.Sequential`` + ``F.cross_entropy`` + ``loss.backward()`` +
  ``fg.optim.Adam.step(grads)`` (one jitted kernel for the update, parameters rebound);
* **fgraph compiled**: the same step function under ``fg.compile`` (one XLA program; the
  issue's budget: at most 1.1x jax.jit);
* **PyTorch eager**: the same model and ``torch.optim.Adam`` (``zero_grad``, ``backward``,
  ``step``), when torch is installed;
* **jax.jit (pure JAX)**: the same step written in JAX (forward, ``jax.value_and_grad``,
  Adam's formulas) compiled into one XLA program: the floor, not a peer for eager code.
* **jax.jit per op (9 programs)**: the same pure-JAX step cut into the nine programs fgraph
  eager dispatches (``jax_split_step``): the floor of any eager design on this backend, the
  gap between it and ``jax.jit`` being the cost of the cuts, not of fgraph's Python.

The builders take the model as an argument (``build``, ``torch_build``, ``jax_logits``), so
``cnn_step.py`` reuses them for a small CNN.

All three start from the same weights and data; the first steps' parameters are
checked to agree before anything is timed. Timing is ``overhead.py``'s: interleaved
repeats, medians, synchronised results.
Run: ``python benchmarks/optim_step.py [--quick]``.
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
from timing import block, cli, measure_all, model_batch, thread_settings, to_torch, torch, torch_device, torch_done, torch_numpy

SIZES, BATCH, LR = (784, 256, 256, 10), 64, 1e-3
SPLIT = "jax.jit per op (9 programs)"
BETA1, BETA2, EPS = 0.9, 0.999, 1e-8


def build() -> nn.Sequential:
    layers: list = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        layers += [nn.Linear(fan_in, fan_out), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def train_step(model: nn.Module, opt: fg.optim.Optimizer, x: fg.Tensor, y: fg.Tensor) -> fg.Tensor:
    loss = F.cross_entropy(model(x), y)
    opt.step(loss.backward())
    return loss


def torch_build() -> "torch.nn.Sequential":
    layers: list = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        layers += [torch.nn.Linear(fan_in, fan_out), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1])


def jax_logits(params: list, x: jax.Array) -> jax.Array:
    """The MLP in pure JAX, ``params`` in ``state_dict`` order."""
    h = x
    for i in range(0, len(params), 2):
        h = h @ params[i].T + params[i + 1]
        if i < len(params) - 2:
            h = jax.nn.relu(h)
    return h


def fgraph_step(weights: dict, x: np.ndarray, y: np.ndarray, compiled: bool = False,
                build: Callable[[], nn.Module] = build) -> tuple[Callable, Callable]:
    model = build()
    model.load_state_dict(weights)
    opt = fg.optim.Adam(model.parameters(), lr=LR)
    tx, ty = fg.tensor(x), fg.tensor(y)
    run_step = fg.compile(train_step) if compiled else train_step

    def step():
        run_step(model, opt, tx, ty)
        block([p.array for p in opt.parameters()])

    return step, lambda: [p.numpy() for p in model.parameters()]


def torch_step(weights: dict, x: np.ndarray, y: np.ndarray,
               build: Callable[[], object] = torch_build) -> tuple[Callable, Callable]:
    model = build().to(torch_device())
    model.load_state_dict({k: to_torch(v) for k, v in weights.items()})
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    tx, ty = to_torch(x), to_torch(y)

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(tx), ty).backward()
        opt.step()
        torch_done()

    return step, lambda: [torch_numpy(p) for p in model.parameters()]


def adam_update(state: dict, grads: list) -> dict:
    """Adam's formulas (torch's defaults) on ``state`` (``params``, ``m``, ``v``, ``t``) in pure JAX."""
    t = state["t"] + 1
    m = [BETA1 * m + (1 - BETA1) * g for m, g in zip(state["m"], grads)]
    v = [BETA2 * v + (1 - BETA2) * g * g for v, g in zip(state["v"], grads)]
    step_size = LR / (1 - BETA1**t)
    root = jnp.sqrt(1 - BETA2**t)
    params = [p - step_size * mm / (jnp.sqrt(vv) / root + EPS) for p, mm, vv in zip(state["params"], m, v)]
    return {"params": params, "m": m, "v": v, "t": t}


def jax_step(weights: dict, x: np.ndarray, y: np.ndarray, jit: bool = True,
             logits: Callable = jax_logits) -> tuple[Callable, Callable]:
    """``jax.value_and_grad`` of the cross-entropy of ``logits(params, x)`` and Adam's formulas.

    ``jit=True``: one XLA program (the floor); ``jit=False``: op-by-op dispatch.
    """
    names = list(weights)
    params = [jnp.asarray(weights[k]) for k in names]
    state = {"params": params, "m": [jnp.zeros_like(p) for p in params], "v": [jnp.zeros_like(p) for p in params],
             "t": jnp.zeros((), jnp.float32), "loss": jnp.zeros((), jnp.float32)}
    jx, jy = jnp.asarray(x), jnp.asarray(y)

    def loss_fn(params: list) -> jax.Array:
        logp = jax.nn.log_softmax(logits(params, jx), axis=-1)
        return -jnp.take_along_axis(logp, jy[:, None], axis=-1).mean()

    def update(state: dict) -> dict:
        loss, grads = jax.value_and_grad(loss_fn)(state["params"])
        return {**adam_update(state, grads), "loss": loss}

    if jit:
        update = jax.jit(update)

    def step():
        state.update(update(state))
        block(state["params"])

    return step, lambda: [np.asarray(p) for p in state["params"]]


def jax_split_step(weights: dict, x: np.ndarray, y: np.ndarray) -> tuple[Callable, Callable]:
    """The MLP step in pure JAX cut into the programs fgraph eager dispatches: one per affine layer,
    relu, log_softmax and nll, one for the whole backward (from the saved activations, as fgraph's
    fused backward), one for Adam. What an eager design costs on this backend before any fgraph Python.
    """
    params = [jnp.asarray(weights[k]) for k in weights]
    state = {"params": params, "m": [jnp.zeros_like(p) for p in params], "v": [jnp.zeros_like(p) for p in params],
             "t": jnp.zeros((), jnp.float32)}
    jx, jy = jnp.asarray(x), jnp.asarray(y)
    affine = jax.jit(_affine)
    relu = jax.jit(jax.nn.relu)
    log_softmax = jax.jit(_log_softmax)
    nll = jax.jit(_nll)
    backward = jax.jit(_mlp_backward)
    adam = jax.jit(adam_update)

    def step():
        p = state["params"]
        inputs = [jx]  # each affine layer's input: x, then the relu outputs
        for i in range(0, len(p) - 2, 2):
            inputs.append(relu(affine(inputs[-1], p[i], p[i + 1])))
        logp = log_softmax(affine(inputs[-1], p[-2], p[-1]))
        nll(logp, jy)
        state.update(adam(state, backward(p, inputs, logp, jy)))
        block(state["params"])

    return step, lambda: [np.asarray(p) for p in state["params"]]


def _affine(h: jax.Array, weight: jax.Array, bias: jax.Array) -> jax.Array:
    return h @ weight.T + bias


def _log_softmax(z: jax.Array) -> jax.Array:
    return jax.nn.log_softmax(z, axis=-1)


def _nll(logp: jax.Array, target: jax.Array) -> jax.Array:
    return -jnp.take_along_axis(logp, target[:, None], axis=-1).mean()


def _mlp_backward(params: list, inputs: list, logp: jax.Array, target: jax.Array) -> list:
    """Gradients of the mean cross-entropy by hand, from each affine layer's saved input."""
    g = (jnp.exp(logp) - jax.nn.one_hot(target, logp.shape[-1], dtype=logp.dtype)) / logp.shape[0]
    grads: list = [None] * len(params)
    for layer in reversed(range(len(inputs))):
        h = inputs[layer]
        grads[2 * layer], grads[2 * layer + 1] = g.T @ h, g.sum(0)
        if layer:
            g = (g @ params[2 * layer]) * (h > 0)  # h is a relu output: its input was > 0 exactly where h is
    return grads


def check_same(peers: dict) -> None:
    """Three steps of every peer from the same start: the parameters must agree before timing."""
    results = {}
    for name, (step, read) in peers.items():
        for _ in range(3):
            step()
        results[name] = read()
    reference = results["jax.jit (pure JAX)"]
    # Adam divides by sqrt(v): where a gradient is a rounding-level 1e-9 (a dead relu unit) the step is
    # ~lr/10 in one program and 0 in another, so parameters agree to a fraction of lr, not to 1e-5.
    atol = LR / 10
    for name, params in results.items():
        for i, (a, b) in enumerate(zip(params, reference)):
            if not np.allclose(a, b, rtol=1e-4, atol=atol):
                raise SystemExit(f"{name}: parameter {i} after 3 steps differs from pure JAX "
                                 f"(max abs diff {np.abs(a - b).max():.3g}); refusing to time it.")


def run(quick: bool) -> int:
    repeats, target = (3, 0.05) if quick else (9, 0.3)
    print("training step with Adam: MLP batch 64, 784->256->256->10, float32, relu, cross-entropy"
          + (" (--quick)" if quick else ""))
    for line in thread_settings():
        print("  " + line)
    print(f"  timing: median of {repeats} interleaved repeats, each a batch of calls lasting ~{target * 1e3:.0f} ms")
    weights, x, y = model_batch(build, BATCH, SIZES[0], SIZES[-1])
    peers = {"fgraph eager": fgraph_step(weights, x, y), "fgraph compiled": fgraph_step(weights, x, y, compiled=True),
             "jax.jit (pure JAX)": jax_step(weights, x, y), SPLIT: jax_split_step(weights, x, y)}
    if torch is not None:
        peers["PyTorch eager"] = torch_step(weights, x, y)
    return time_and_print(peers, repeats, target)


def time_and_print(peers: dict, repeats: int, target: float) -> int:
    """Check the peers agree, time them and print µs per step with ratios to PyTorch and jax.jit."""
    check_same(peers)
    times = measure_all({name: step for name, (step, _) in peers.items()}, {name: repeats for name in peers}, target)
    ref = times.get("PyTorch eager")
    floor = times["jax.jit (pure JAX)"]
    print(f"  {'peer':<28} {'us/step':>10} {'x PyTorch':>10} {'x jax.jit':>10}")
    for name, t in times.items():
        ratio = f"{t / ref:10.2f}" if ref else f"{'n/a':>10}"
        print(f"  {name:<28} {t * 1e6:10.1f} {ratio} {t / floor:10.2f}")
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    return cli(run, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
