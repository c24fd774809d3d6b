"""Two more reference workloads of DESIGN.md, side by side with PyTorch and JAX (no budgets yet).

* ``hvp``: a Hessian-vector product, the second-order workload. ``loss(x) =
  sum(tanh(tanh(x @ W1) @ W2))`` with ``x`` of 64 floats and 64x64 weights;
  ``H(x) v`` by double backward (fgraph: ``fg.grad(..., create_graph=True)`` then
  ``fg.grad`` of ``<g, v>``; PyTorch: the same with ``torch.autograd.grad``; JAX:
  ``jax.jvp`` of ``jax.grad``, jitted and not; and pure JAX cut into the nine programs
  fgraph eager runs, ``jax_cut_hvp``: what those programs cost without fgraph's Python
  between them, and with ``GAPS_US`` of busy Python between consecutive programs: what an
  eager library with that much work per dispatch could reach at best). Microseconds per product.
* ``graph10k``: build a 10,000-node graph (the elementwise chain of
  ``overhead.py``, 16 floats) and differentiate it: the engine at scale (graphs
  over ``fusion.MAX_NODES`` run as fused segments). Microseconds per node.
  Un-jitted ``jax.grad`` (~0.25 ms per op here) and ``jax.jit`` (a 10,000-op
  compile) are left out; PyTorch is the reference, or fgraph alone without it.

Timing is ``overhead.py``'s: interleaved repeats, medians, synchronised results.
Run: ``python benchmarks/second_order_and_scale.py [--quick]``.
"""
from __future__ import annotations

import sys
import time
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

import fgraph as fg
from timing import block, check_agreement, cli, measure_all, thread_settings, to_torch, torch, torch_done

HVP_SIZE = 64
CUT = "jax.jit per op (9 programs)"  # the HVP in pure JAX, cut into the programs fgraph eager runs
GAPS_US = (10, 25)  # the cut again, with this much Python between its programs (the script's extra peers)
GRAPH_NODES = 10_000
GRAPH_SIZE = 16


# -- hvp ------------------------------------------------------------------------------------------
def hvp_data(rng: np.random.Generator) -> dict:
    scale = 1.0 / np.sqrt(HVP_SIZE)
    return {
        "x": rng.standard_normal(HVP_SIZE).astype(np.float32),
        "v": rng.standard_normal(HVP_SIZE).astype(np.float32),
        "w1": (rng.standard_normal((HVP_SIZE, HVP_SIZE)) * scale).astype(np.float32),
        "w2": (rng.standard_normal((HVP_SIZE, HVP_SIZE)) * scale).astype(np.float32),
    }


def hvp_loss(x, w1, w2, tanh):
    return tanh(tanh(x @ w1) @ w2).sum()


def fgraph_hvp(data: dict, compiled: bool = False) -> Callable[[], object]:
    x = fg.tensor(data["x"], requires_grad=True)
    v, w1, w2 = (fg.tensor(data[k]) for k in ("v", "w1", "w2"))

    def product(x: fg.Tensor, v: fg.Tensor, w1: fg.Tensor, w2: fg.Tensor) -> fg.Tensor:
        (g,) = fg.grad(hvp_loss(x, w1, w2, fg.tanh), [x], create_graph=True)
        return fg.grad((g * v).sum(), [x])[0]

    run_product = fg.compile(product) if compiled else product

    def step():
        hv = run_product(x, v, w1, w2)
        block(hv.array)
        return [hv]

    return step


def jax_hvp(data: dict, jit: bool) -> Callable[[], object]:
    x, v, w1, w2 = (jnp.asarray(data[k]) for k in ("x", "v", "w1", "w2"))

    def product(x, v):
        return jax.jvp(jax.grad(lambda y: hvp_loss(y, w1, w2, jnp.tanh)), (x,), (v,))[1]

    if jit:
        product = jax.jit(product)

    def step():
        hv = product(x, v)
        block(hv)
        return [hv]

    return step


def jax_cut_hvp(data: dict, gap_us: float = 0.0) -> Callable[[], object]:
    """The HVP in pure JAX cut into the nine programs fgraph eager runs: the five forward ops, the
    first backward (from the saved values), ``*`` and ``sum``, the second backward (one program).

    ``gap_us``: microseconds of busy Python between consecutive programs, as an eager library's own
    work between its dispatches (with JAX's CPU async dispatch each gap costs more than its length:
    the program's worker goes idle and is woken for the next one).
    """
    x, v, w1, w2 = (jnp.asarray(data[k]) for k in ("x", "v", "w1", "w2"))
    matmul, tanh, total, multiply = jax.jit(jnp.matmul), jax.jit(jnp.tanh), jax.jit(jnp.sum), jax.jit(jnp.multiply)
    first_backward = jax.jit(_hvp_first_backward)
    second_backward = jax.jit(_hvp_second_backward)
    gap = _busy_gap(gap_us)

    def step():
        t1 = gap(tanh(gap(matmul(x, w1))))
        t2 = gap(tanh(gap(matmul(t1, w2))))
        gap(total(t2))
        g = gap(first_backward(t1, t2, w1, w2))
        gap(total(gap(multiply(g, v))))
        hv = second_backward(x, v, w1, w2)
        block(hv)
        return [hv]

    return step


def _busy_gap(gap_us: float) -> Callable[[object], object]:
    """``value -> value`` after ``gap_us`` microseconds of busy Python (not a sleep: the core stays busy)."""
    clock = time.perf_counter

    def gap(value: object) -> object:
        end = clock() + gap_us * 1e-6
        while clock() < end:
            pass
        return value

    return gap


def _hvp_first_backward(t1: jax.Array, t2: jax.Array, w1: jax.Array, w2: jax.Array) -> jax.Array:
    return (((1 - t2 * t2) @ w2.T) * (1 - t1 * t1)) @ w1.T


def _hvp_second_backward(x: jax.Array, v: jax.Array, w1: jax.Array, w2: jax.Array) -> jax.Array:
    return jax.jvp(jax.grad(lambda y: hvp_loss(y, w1, w2, jnp.tanh)), (x,), (v,))[1]


def torch_hvp(data: dict) -> Callable[[], object]:
    x = to_torch(data["x"], requires_grad=True)
    v, w1, w2 = (to_torch(data[k]) for k in ("v", "w1", "w2"))

    def step():
        (g,) = torch.autograd.grad(hvp_loss(x, w1, w2, torch.tanh), [x], create_graph=True)
        (hv,) = torch.autograd.grad((g * v).sum(), [x])
        return torch_done([hv])

    return step


# -- graph10k -------------------------------------------------------------------------------------
def graph_data(rng: np.random.Generator) -> dict:
    return {
        "x": rng.uniform(-1, 1, GRAPH_SIZE).astype(np.float32),
        "c": rng.uniform(0.5, 1.0, GRAPH_SIZE).astype(np.float32),
        "d": rng.uniform(-0.1, 0.1, GRAPH_SIZE).astype(np.float32),
    }


def long_chain(x, c, d, sin, tanh):
    h = x
    for i in range(GRAPH_NODES):
        k = i % 4
        h = sin(h) if k == 0 else tanh(h) if k == 1 else h * c if k == 2 else h + d
    return h.sum()


def fgraph_graph(data: dict) -> Callable[[], object]:
    leaves = [fg.tensor(data[k], requires_grad=True) for k in ("x", "c", "d")]

    def step():
        grads = fg.grad(long_chain(*leaves, fg.sin, fg.tanh), leaves)
        block([g.array for g in grads])
        return grads

    return step


def torch_graph(data: dict) -> Callable[[], object]:
    leaves = [to_torch(data[k], requires_grad=True) for k in ("x", "c", "d")]

    def step():
        return torch_done(torch.autograd.grad(long_chain(*leaves, torch.sin, torch.tanh), leaves))

    return step


# -- report ----------------------------------------------------------------------------------------
def _report(title: str, unit: str, times: dict, reference: Optional[str]) -> None:
    ref = times.get(reference) if reference else None
    print(title)
    print(f"  {'peer':<28} {unit:>12} {'x PyTorch':>10}")
    for peer, t in times.items():
        ratio = f"{t / ref:10.2f}" if ref else f"{'n/a':>10}"
        print(f"  {peer:<28} {t:12.1f} {ratio}")
    print()


def run(quick: bool) -> int:
    repeats, target = (3, 0.05) if quick else (7, 0.2)
    rng = np.random.default_rng(0)
    print("fgraph second-order and scale benchmark" + (" (--quick)" if quick else ""))
    for line in thread_settings():
        print("  " + line)
    print()

    data = hvp_data(rng)
    steps = {"fgraph eager": fgraph_hvp(data), "jax.grad (no jit)": jax_hvp(data, jit=False),
             "jax.jit(jax.grad)": jax_hvp(data, jit=True), CUT: jax_cut_hvp(data)}
    steps.update({f"  + {gap} us Python per gap": jax_cut_hvp(data, gap) for gap in GAPS_US})
    if torch is not None:
        steps["PyTorch eager"] = torch_hvp(data)
    check_agreement("hvp", steps)
    times = {peer: t * 1e6 for peer, t in measure_all(steps, {p: repeats for p in steps}, target).items()}
    _report(f"Hessian-vector product: tanh(tanh(x @ W1) @ W2).sum(), {HVP_SIZE} floats", "us/hvp", times,
            "PyTorch eager")

    data = graph_data(rng)
    steps = {"fgraph eager": fgraph_graph(data)}
    if torch is not None:
        steps["PyTorch eager"] = torch_graph(data)
        check_agreement("graph10k", steps, reference="PyTorch eager")
    times = {peer: t / GRAPH_NODES * 1e6
             for peer, t in measure_all(steps, {p: max(3, repeats // 2) for p in steps}, target).items()}
    _report(f"{GRAPH_NODES}-node graph: build + backward ({GRAPH_SIZE} floats)", "us/node", times, "PyTorch eager")
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    return cli(run, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
