"""Mixed precision: the MLP and CNN Adam steps under bfloat16 autocast, beside float32.

The workloads are the suite's: the MLP step of ``optim_step.py`` (batch 64, 784->256->256->10) and
the CNN step of ``cnn_step.py`` (batch 32, 1x28x28, two conv layers), cross-entropy, Adam
(lr 1e-3). Each runs in float32 and with its forward under bfloat16 autocast (parameters,
gradients and Adam's state stay float32; no GradScaler: bfloat16 has float32's range). Peers:

* **fgraph eager**: ``with fg.autocast(device, dtype=fg.bfloat16):`` around the forward and the
  loss, then ``loss.backward()`` and ``opt.step(grads)``;
* **fgraph compiled**: the same step function under ``fg.compile`` (the region is traced: the
  program holds the casts);
* **PyTorch eager**: ``torch.autocast(device, dtype=torch.bfloat16)``, when torch is installed;
* **jax.jit (pure JAX)**: the pure-JAX step of ``optim_step.py`` with autocast's casts written
  out: parameters and input cast to bfloat16 for the layers (matmuls, convolutions, the bias
  adds, relu and pooling in bfloat16), the logits cast back to float32 for the loss.

Before timing, the peers are checked against ``jax.jit``: in float32 the parameters after three
steps (``optim_step.check_same``); in bfloat16 one step's loss and gradients, to a tolerance that
allows bfloat16's rounding (:func:`check_same`).
The table gives µs per step, bfloat16 ÷ float32 for each peer, and each peer's ratio to PyTorch
and to ``jax.jit`` in the same precision. Timing is ``timing.py``'s (interleaved repeats, medians).
Run: ``python benchmarks/autocast_step.py [--quick]`` (``--quick``: short batches, one repeat).
"""
from __future__ import annotations

import sys
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

import cnn_step
import fgraph as fg
import fgraph.nn.functional as F
import optim_step
from timing import (block, cli, measure_all, model_batch, thread_settings, to_torch, torch, torch_device, torch_done,
                    torch_numpy)

E, C, T, J = "fgraph eager", "fgraph compiled", "PyTorch eager", "jax.jit (pure JAX)"
PRECISIONS = ("float32", "bfloat16")
#: workload -> (fgraph builder, torch builder, pure-JAX logits, batch, sample shape, classes)
WORKLOADS = {
    "MLP": (optim_step.build, optim_step.torch_build, optim_step.jax_logits, optim_step.BATCH, optim_step.SIZES[0],
            optim_step.SIZES[-1]),
    "CNN": (cnn_step.build, cnn_step.torch_build, cnn_step.jax_logits, cnn_step.BATCH, cnn_step.IMAGE,
            cnn_step.CLASSES),
}
LR = optim_step.LR


def autocast_device() -> str:
    """The autocast device type matching where the peers run (``"cuda"`` op lists on a GPU)."""
    return "cuda" if jax.default_backend() == "gpu" else "cpu"


def fgraph_train_step(low: bool) -> Callable:
    device = autocast_device()

    def train_step(model: fg.nn.Module, opt: fg.optim.Optimizer, x: fg.Tensor, y: fg.Tensor) -> fg.Tensor:
        with fg.autocast(device, dtype=fg.bfloat16, enabled=low):
            loss = F.cross_entropy(model(x), y)
        opt.step(loss.backward())
        return loss

    return train_step


def fgraph_step(weights: dict, x: np.ndarray, y: np.ndarray, build: Callable, low: bool,
                compiled: bool = False) -> tuple[Callable, Callable]:
    model = build()
    model.load_state_dict(weights)
    opt = fg.optim.Adam(model.parameters(), lr=LR)
    tx, ty = fg.tensor(x), fg.tensor(y)
    run_step = fgraph_train_step(low)
    run_step = fg.compile(run_step) if compiled else run_step

    def step():
        run_step(model, opt, tx, ty)
        block([p.array for p in opt.parameters()])

    return step, lambda: [p.numpy() for p in model.parameters()]


def torch_step(weights: dict, x: np.ndarray, y: np.ndarray, build: Callable, low: bool) -> tuple[Callable, Callable]:
    device = torch_device()
    model = build().to(device)
    model.load_state_dict({k: to_torch(v) for k, v in weights.items()})
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    tx, ty = to_torch(x), to_torch(y)

    def step():
        opt.zero_grad()
        with torch.autocast(device, dtype=torch.bfloat16, enabled=low):
            loss = torch.nn.functional.cross_entropy(model(tx), ty)
        loss.backward()
        opt.step()
        torch_done()

    return step, lambda: [torch_numpy(p) for p in model.parameters()]


def bfloat16_logits(logits: Callable) -> Callable:
    """``logits`` with autocast's casts written out: bfloat16 layers, float32 logits for the loss."""
    def cast(params: list, x: jax.Array) -> jax.Array:
        low = [p.astype(jnp.bfloat16) for p in params]
        return logits(low, x.astype(jnp.bfloat16)).astype(jnp.float32)

    return cast


def peers(workload: str, precision: str, skip: tuple = ()) -> dict:
    """``{name: (step, read_params)}`` for one workload in one precision, from the same weights and batch."""
    build, torch_build, logits, batch, shape, classes = WORKLOADS[workload]
    weights, x, y = model_batch(build, batch, shape, classes)
    low = precision == "bfloat16"
    makers = {E: lambda: fgraph_step(weights, x, y, build, low),
              C: lambda: fgraph_step(weights, x, y, build, low, compiled=True),
              J: lambda: optim_step.jax_step(weights, x, y, logits=bfloat16_logits(logits) if low else logits)}
    if torch is not None:
        makers[T] = lambda: torch_step(weights, x, y, torch_build, low)
    return {name: make() for name, make in makers.items() if name not in skip}


def gradients(workload: str, skip: tuple = ()) -> dict:
    """``{name: (loss, gradients)}`` of one bfloat16 autocast forward and backward per peer, from the same start."""
    build, torch_build, logits, batch, shape, classes = WORKLOADS[workload]
    weights, x, y = model_batch(build, batch, shape, classes)
    out = {}
    model = build()
    model.load_state_dict(weights)
    tx, ty = fg.tensor(x), fg.tensor(y)

    def fgraph_grads(m: fg.nn.Module, inputs: fg.Tensor, target: fg.Tensor) -> tuple:
        with fg.autocast(autocast_device(), dtype=fg.bfloat16):
            loss = F.cross_entropy(m(inputs), target)
        grads = loss.backward()
        return loss, [grads[p] for p in m.parameters()]

    for name, fn in ((E, fgraph_grads), (C, fg.compile(fgraph_grads))):
        if name not in skip:
            loss, grads = fn(model, tx, ty)
            out[name] = (loss.item(), [g.numpy() for g in grads])
    if torch is not None and T not in skip:
        device = torch_device()
        peer = torch_build().to(device)
        peer.load_state_dict({k: to_torch(v) for k, v in weights.items()})
        with torch.autocast(device, dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(peer(to_torch(x)), to_torch(y))
        loss.backward()
        out[T] = (loss.item(), [torch_numpy(p.grad) for p in peer.parameters()])
    if J in skip:
        return out
    low = bfloat16_logits(logits)
    jx, jy = jnp.asarray(x), jnp.asarray(y)

    def jax_loss(params: list) -> jax.Array:
        logp = jax.nn.log_softmax(low(params, jx), axis=-1)
        return -jnp.take_along_axis(logp, jy[:, None], axis=-1).mean()

    loss, grads = jax.jit(jax.value_and_grad(jax_loss))([jnp.asarray(weights[k]) for k in weights])
    out[J] = (float(loss), [np.asarray(g) for g in grads])
    return out


def check_same(peers: dict, precision: str, workload: str, quick: bool = False) -> None:
    """The peers compute the same step: float32, ``optim_step.check_same`` (parameters after three Adam steps).

    bfloat16: the peers round differently (8 bits; fused or not, accumulation orders differ), and Adam turns
    a gradient that differs by a rounding into a step of up to ``lr``, so three steps' parameters are compared
    only loosely (finite, within ``6 lr``). What is checked is one step's loss and gradients (:func:`gradients`)
    against ``jax.jit``'s: the loss to 1e-2, each gradient to a relative norm error of 0.25 (bfloat16's
    rounding through a backward pass measured up to 0.1 between PyTorch and JAX). ``quick``: against
    PyTorch's where it is installed (one XLA compile fewer: the smoke run's cost).
    """
    if precision == "float32":
        optim_step.check_same(peers)
        return
    reference = T if quick and T in peers else J
    skip = tuple(n for n in (E, C, T) if n not in peers) + ((J,) if reference != J else ())
    first = gradients(workload, skip)
    ref_loss, ref_grads = first[reference]
    for name, (loss, grads) in first.items():
        errors = [np.linalg.norm(g - r) / max(np.linalg.norm(r), 1e-30) for g, r in zip(grads, ref_grads)]
        if abs(loss - ref_loss) > 1e-2 * abs(ref_loss) or max(errors) > 0.25:
            raise SystemExit(f"{workload} {name} (bfloat16 autocast): loss {loss:.5g} against {ref_loss:.5g}, gradient "
                             f"relative errors up to {max(errors):.3g} against {reference}; refusing to time it.")
    results = {}
    for name, (step, read) in peers.items():
        for _ in range(3):
            step()
        results[name] = read()
    for name, params in results.items():
        for i, (a, b) in enumerate(zip(params, results[J])):
            if not np.all(np.isfinite(a)) or np.abs(a - b).max() > 6 * LR:
                raise SystemExit(f"{workload} {name} (bfloat16 autocast): parameter {i} after 3 steps is not finite or "
                                 "more than 6 lr from pure JAX's; refusing to time it.")


def measure(workload: str, quick: bool, skip: tuple = (), repeats: Optional[int] = None,
            precisions: tuple = PRECISIONS) -> dict:
    """``{precision: {peer: seconds per step}}`` for one workload, the precisions timed interleaved."""
    steps = {}
    for precision in precisions:
        group = peers(workload, precision, skip)
        check_same(group, precision, workload, quick)
        steps.update({(precision, name): step for name, (step, _) in group.items()})
    reps = 1 if quick else (repeats or 7)
    times = measure_all(steps, {key: reps for key in steps}, 0.02 if quick else 0.2, warmup=1 if quick else 3)
    out: dict = {precision: {} for precision in precisions}
    for (precision, name), t in times.items():
        out[precision][name] = t
    return out


def print_table(workload: str, times: dict) -> None:
    f32, bf16 = times["float32"], times["bfloat16"]
    print(f"  {workload} step, µs per step:")
    print(f"  {'peer':<22} {'float32':>9} {'bfloat16':>9} {'bf16÷f32':>9} {'÷ PyTorch (bf16)':>17} "
          f"{'÷ jax.jit (bf16)':>17}")
    for name in f32:
        torch_ratio = f"{bf16[name] / bf16[T]:.2f}" if T in bf16 else "n/a"
        print(f"  {name:<22} {f32[name] * 1e6:9.0f} {bf16[name] * 1e6:9.0f} {bf16[name] / f32[name]:9.2f} "
              f"{torch_ratio:>17} {bf16[name] / bf16[J]:17.2f}")


def run(quick: bool) -> int:
    print("Adam steps in float32 and under bfloat16 autocast (" + autocast_device() + " op lists)"
          + (" (--quick)" if quick else ""))
    for line in thread_settings():
        print("  " + line)
    for workload in WORKLOADS:
        print_table(workload, measure(workload, quick))
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    return cli(run, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
