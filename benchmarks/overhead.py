"""Eager overhead of fgraph against PyTorch and JAX, measured side by side in one run.

Workloads (the same computation in every framework):

* ``chain``: per-op overhead. A chain of 200 small elementwise ops on a 16-element
  float32 vector, cycling sin, tanh, mul-by-tensor, add-tensor, then a sum;
  forward + backward with respect to the three leaves (x, c, d). Reported in
  microseconds per op (total time / 200).
* ``mlp``: one training step of an MLP, batch 64, 784 -> 256 -> 256 -> 10,
  float32, relu, mean squared-error loss; gradients of all weights and biases
  (no optimizer update). Reported in microseconds per step.

Peers: fgraph eager (build the graph + ``fg.grad``), un-jitted ``jax.grad`` of the
pure-JAX function, ``jax.jit(jax.grad(...))``, and PyTorch eager (forward +
``.backward()``) when ``import torch`` works. Every measurement is the median of
several repeats after warm-up; results are synchronised (``block_until_ready``)
inside the timed region. Ratios are against PyTorch eager.

Run: ``python benchmarks/overhead.py`` (about a minute) or ``--quick`` (seconds).
"""
from __future__ import annotations

import sys
from typing import Callable, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

import fgraph as fg
from timing import block, check_agreement, cli, measure_all, thread_settings, to_torch, torch, torch_done

CHAIN_OPS = 200
CHAIN_SIZE = 16
MLP_BATCH, MLP_SIZES = 64, (784, 256, 256, 10)

# Budgets (fgraph / PyTorch eager), from the issue that introduced this script.
BUDGETS = {"chain": 2.5, "mlp": 1.5}


# -- workload data (shared by every peer) -------------------------------------------------------
def chain_data(rng: np.random.Generator) -> dict:
    return {
        "x": rng.uniform(-1, 1, CHAIN_SIZE).astype(np.float32),
        "c": rng.uniform(0.5, 1.0, CHAIN_SIZE).astype(np.float32),  # keeps values bounded
        "d": rng.uniform(-0.1, 0.1, CHAIN_SIZE).astype(np.float32),
    }


def mlp_data(rng: np.random.Generator) -> dict:
    data = {
        "x": rng.standard_normal((MLP_BATCH, MLP_SIZES[0])).astype(np.float32),
        "y": rng.standard_normal((MLP_BATCH, MLP_SIZES[-1])).astype(np.float32),
    }
    for i, (fan_in, fan_out) in enumerate(zip(MLP_SIZES[:-1], MLP_SIZES[1:])):
        bound = 1.0 / np.sqrt(fan_in)
        data[f"w{i}"] = rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32)
        data[f"b{i}"] = rng.uniform(-bound, bound, (fan_out,)).astype(np.float32)
    return data


MLP_PARAMS = [f"{k}{i}" for i in range(len(MLP_SIZES) - 1) for k in ("w", "b")]


# The op sequence, written once over any array/tensor namespace: step i applies op
# ``kinds[i]`` (by default i % 4, ``CHAIN_OPS`` steps): sin, tanh, mul by c, add d.
def chain_forward(x, c, d, sin, tanh, kinds: Optional[Sequence[int]] = None):
    h = x
    for k in (range(CHAIN_OPS) if kinds is None else kinds):
        k = k % 4
        if k == 0:
            h = sin(h)
        elif k == 1:
            h = tanh(h)
        elif k == 2:
            h = h * c
        else:
            h = h + d
    return h.sum()


def mlp_forward(params: list, x, y, relu):
    w0, b0, w1, b1, w2, b2 = params
    h = relu(x @ w0 + b0)
    h = relu(h @ w1 + b1)
    out = h @ w2 + b2
    return ((out - y) ** 2).mean()


# -- peers -----------------------------------------------------------------------------------
def fgraph_chain(data: dict, compiled: bool = False) -> Callable[[], object]:
    leaves = [fg.tensor(data[k], requires_grad=True) for k in ("x", "c", "d")]

    def chain_grads(x: fg.Tensor, c: fg.Tensor, d: fg.Tensor) -> tuple:
        return fg.grad(chain_forward(x, c, d, fg.sin, fg.tanh), [x, c, d])

    run_grads = fg.compile(chain_grads) if compiled else chain_grads

    def step():
        grads = run_grads(*leaves)
        block([g.array for g in grads])
        return grads

    return step


def fgraph_mlp(data: dict) -> Callable[[], object]:
    params = [fg.tensor(data[k], requires_grad=True) for k in MLP_PARAMS]
    x, y = fg.tensor(data["x"]), fg.tensor(data["y"])

    def step():
        loss = mlp_forward(params, x, y, fg.relu)
        grads = fg.grad(loss, params)
        block([g.array for g in grads])
        return grads

    return step


def jax_chain(data: dict, jit: bool) -> Callable[[], object]:
    x, c, d = (jnp.asarray(data[k]) for k in ("x", "c", "d"))
    g = jax.grad(lambda x, c, d: chain_forward(x, c, d, jnp.sin, jnp.tanh), argnums=(0, 1, 2))
    if jit:
        g = jax.jit(g)

    def step():
        out = g(x, c, d)
        block(out)
        return out

    return step


def jax_mlp(data: dict, jit: bool) -> Callable[[], object]:
    params = [jnp.asarray(data[k]) for k in MLP_PARAMS]
    x, y = jnp.asarray(data["x"]), jnp.asarray(data["y"])
    g = jax.grad(lambda p, x, y: mlp_forward(p, x, y, jax.nn.relu))
    if jit:
        g = jax.jit(g)

    def step():
        out = g(params, x, y)
        block(out)
        return out

    return step


def torch_chain(data: dict) -> Callable[[], object]:
    x, c, d = (to_torch(data[k], requires_grad=True) for k in ("x", "c", "d"))
    leaves = [x, c, d]

    def step():
        for t in leaves:
            t.grad = None
        chain_forward(x, c, d, torch.sin, torch.tanh).backward()
        return torch_done([t.grad for t in leaves])

    return step


def chain_parts(data: dict) -> dict[str, Callable[[], object]]:
    """The chain's forward alone, four ways: where fgraph eager's per-op time goes.

    ``jax kernels``: the 200 jitted JAX kernels fgraph's ops dispatch, called from a bare
    wrapper (no fgraph): the dispatch floor of any design that runs one kernel per op;
    ``fgraph no_grad`` / ``fgraph recording``: fgraph's forward without and with the graph, dispatched
    op by op; ``fgraph lazy``: the whole step (forward and backward) under ``fg.lazy()``, one cached
    program; ``fgraph op by op``: the whole step with deferred dispatch (fgraph's default, the table's
    eager column) off; ``PyTorch forward``: PyTorch's forward, recording its graph (when installed).
    Subtracting these from the eager rows gives each framework's backward.
    """
    kernels = {name: jax.jit(fn) for name, fn in (("sin", jnp.sin), ("tanh", jnp.tanh), ("mul", jnp.multiply),
                                                   ("add", jnp.add), ("sum", jnp.sum))}
    arrays = [jnp.asarray(data[k]) for k in ("x", "c", "d")]
    plain = [fg.tensor(data[k]) for k in ("x", "c", "d")]
    leaves = [fg.tensor(data[k], requires_grad=True) for k in ("x", "c", "d")]

    def jax_kernels():
        x, c, d = (_Bare(a, kernels) for a in arrays)
        return block(chain_forward(x, c, d, _Bare.sin, _Bare.tanh).array)

    def fgraph_no_grad():
        with fg.lazy.op_by_op():
            return block(chain_forward(*plain, fg.sin, fg.tanh).array)

    def fgraph_recording():
        with fg.lazy.op_by_op():
            return block(chain_forward(*leaves, fg.sin, fg.tanh).array)

    def lazy_grads() -> list:
        with fg.lazy():
            return fg.grad(chain_forward(*leaves, fg.sin, fg.tanh), leaves)

    def fgraph_lazy():
        return block([g.array for g in lazy_grads()])

    def op_by_op_grads() -> list:
        with fg.lazy.op_by_op():
            return [g.array for g in fg.grad(chain_forward(*leaves, fg.sin, fg.tanh), leaves)]

    def fgraph_op_by_op():
        return block(op_by_op_grads())

    default = fg.grad(chain_forward(*leaves, fg.sin, fg.tanh), leaves)  # deferred, unless FGRAPH_DEFERRED=0
    for a, d, b in zip(lazy_grads(), op_by_op_grads(), default):  # every peer computes what the default does
        np.testing.assert_allclose(np.asarray(a.array), b.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(d), b.numpy(), rtol=1e-5, atol=1e-6)
    parts = {"jax kernels": jax_kernels, "fgraph no_grad": fgraph_no_grad, "fgraph recording": fgraph_recording,
             "fgraph lazy": fgraph_lazy, "fgraph op by op": fgraph_op_by_op}
    if torch is not None:
        tx, tc, td = (to_torch(data[k], requires_grad=True) for k in ("x", "c", "d"))

        def torch_forward():
            return torch_done(chain_forward(tx, tc, td, torch.sin, torch.tanh))

        parts["PyTorch forward"] = torch_forward
    return parts


class _Bare:
    """A jax.Array with the chain's operators, each one jitted kernel call: no framework in between."""

    __slots__ = ("array", "kernels")

    def __init__(self, array: jax.Array, kernels: dict) -> None:
        self.array, self.kernels = array, kernels

    def __mul__(self, other: "_Bare") -> "_Bare":
        return _Bare(self.kernels["mul"](self.array, other.array), self.kernels)

    def __add__(self, other: "_Bare") -> "_Bare":
        return _Bare(self.kernels["add"](self.array, other.array), self.kernels)

    def sin(self) -> "_Bare":
        return _Bare(self.kernels["sin"](self.array), self.kernels)

    def tanh(self) -> "_Bare":
        return _Bare(self.kernels["tanh"](self.array), self.kernels)

    def sum(self) -> "_Bare":
        return _Bare(self.kernels["sum"](self.array), self.kernels)


def torch_mlp(data: dict) -> Callable[[], object]:
    params = [to_torch(data[k], requires_grad=True) for k in MLP_PARAMS]
    x, y = to_torch(data["x"]), to_torch(data["y"])

    def step():
        for p in params:
            p.grad = None
        mlp_forward(params, x, y, torch.relu).backward()
        return torch_done([p.grad for p in params])

    return step


def run(quick: bool) -> int:
    repeats, target = (3, 0.05) if quick else (7, 0.2)
    rng = np.random.default_rng(0)
    workloads = {
        "chain": (chain_data(rng), fgraph_chain, jax_chain, torch_chain, CHAIN_OPS,
                  f"per-op overhead: {CHAIN_OPS} elementwise ops on {CHAIN_SIZE} x float32, fwd+bwd",
                  "us/op"),
        "mlp": (mlp_data(rng), fgraph_mlp, jax_mlp, torch_mlp, 1,
                f"MLP step: batch {MLP_BATCH}, {'->'.join(map(str, MLP_SIZES))}, float32, relu, MSE, grads",
                "us/step"),
    }
    print("fgraph eager overhead benchmark" + (" (--quick)" if quick else ""))
    for line in thread_settings():
        print("  " + line)
    print(f"  timing: median of {repeats} repeats (interleaved across peers), each a batch of calls lasting "
          f"~{target * 1e3:.0f} ms, after warm-up")
    print()

    verdicts = []
    for name, (data, fg_peer, jax_peer, torch_peer, per, title, unit) in workloads.items():
        steps = {
            "fgraph eager": fg_peer(data),
            "jax.grad (no jit)": jax_peer(data, jit=False),
            "jax.jit(jax.grad)": jax_peer(data, jit=True),
        }
        if torch is not None:
            steps["PyTorch eager"] = torch_peer(data)
        check_agreement(name, steps)
        # Un-jitted jax.grad is slow and only context; fewer repeats keep the run short.
        reps = {peer: max(3, repeats // 2) if peer == "jax.grad (no jit)" else repeats for peer in steps}
        times = {peer: t / per * 1e6 for peer, t in measure_all(steps, reps, target).items()}
        ref = times.get("PyTorch eager")
        print(f"{title}")
        print(f"  {'peer':<20} {unit:>12} {'x PyTorch':>10}")
        for peer, t in times.items():
            ratio = f"{t / ref:10.2f}" if ref else f"{'n/a':>10}"
            print(f"  {peer:<20} {t:12.1f} {ratio}")
        budget = BUDGETS[name]
        if ref:
            ratio = times["fgraph eager"] / ref
            met = ratio <= budget
            verdicts.append(met)
            print(f"  budget: fgraph <= {budget}x PyTorch -> {ratio:.2f}x: {'MET' if met else 'NOT MET'}")
        else:
            print(f"  budget: fgraph <= {budget}x PyTorch -> not checked (torch not installed)")
        print()

    if torch is None:
        print("summary: budgets not checked (install torch to compare)")
    else:
        print(f"summary: {sum(verdicts)}/{len(verdicts)} budgets met")
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    return cli(run, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
