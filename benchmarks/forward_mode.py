"""Forward-mode AD against reverse mode, PyTorch (torch.func) and JAX, side by side.

* ``tall``: the Jacobian of a tall function, f: R^4 -> R^2000 (an MLP 4 -> 64 -> 2000, tanh),
  at one point. Forward mode needs one batched pass per input (4), reverse mode one per
  output (2000, batched): fgraph ``jacfwd`` against fgraph ``jacrev``, ``torch.func.jacfwd`` /
  ``jacrev``, and ``jax.jit`` of ``jax.jacfwd`` / ``jax.jacrev``. Microseconds per Jacobian.
* ``hvp``: the Hessian-vector product of ``second_order_and_scale.py`` (``tanh(tanh(x @ W1) @
  W2).sum()``, 64 floats): forward-over-reverse, as ``fg.func.jvp`` of ``fg.func.grad`` (against
  ``torch.func.jvp(torch.func.grad)``) and with the engine's API (a dual leaf through ``fg.grad``,
  against fgraph's double backward, which uses that API too), and ``jax.jit(jax.jvp(jax.grad))``.
  Microseconds per product.

Timing is ``overhead.py``'s: interleaved repeats, medians, synchronised results, every peer's
result checked against JAX's first. Run: ``python benchmarks/forward_mode.py [--quick]``.
"""
from __future__ import annotations

import sys
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

import fgraph as fg
from fgraph.autograd import forward_ad
from second_order_and_scale import fgraph_hvp, hvp_data, hvp_loss
from timing import block, check_agreement, cli, measure_all, thread_settings, to_torch, torch, torch_done

N_IN, HIDDEN, N_OUT = 4, 64, 2000


# -- the tall Jacobian -------------------------------------------------------------------------------
def tall_data(rng: np.random.Generator) -> dict:
    return {
        "x": rng.standard_normal(N_IN).astype(np.float32),
        "w1": (rng.standard_normal((N_IN, HIDDEN)) / np.sqrt(N_IN)).astype(np.float32),
        "w2": (rng.standard_normal((HIDDEN, N_OUT)) / np.sqrt(HIDDEN)).astype(np.float32),
    }


def tall(x, w1, w2, tanh):
    return tanh(tanh(x @ w1) @ w2)


def fgraph_tall(data: dict, mode: str) -> Callable[[], object]:
    x, w1, w2 = (fg.tensor(data[k]) for k in ("x", "w1", "w2"))
    transform = fg.func.jacfwd if mode == "fwd" else fg.func.jacrev
    jac = transform(lambda x: tall(x, w1, w2, fg.tanh))

    def step():
        j = jac(x)
        block(j.array)
        return [j]

    return step


def torch_tall(data: dict, mode: str) -> Callable[[], object]:
    x, w1, w2 = (to_torch(data[k]) for k in ("x", "w1", "w2"))
    transform = torch.func.jacfwd if mode == "fwd" else torch.func.jacrev
    jac = transform(lambda x: tall(x, w1, w2, torch.tanh))

    def step():
        return torch_done([jac(x)])

    return step


def jax_tall(data: dict, mode: str) -> Callable[[], object]:
    x, w1, w2 = (jnp.asarray(data[k]) for k in ("x", "w1", "w2"))
    transform = jax.jacfwd if mode == "fwd" else jax.jacrev
    jac = jax.jit(transform(lambda x: tall(x, w1, w2, jnp.tanh)))

    def step():
        j = jac(x)
        block(j)
        return [j]

    return step


# -- forward-over-reverse HVP --------------------------------------------------------------------------
def fgraph_hvp_forward(data: dict) -> Callable[[], object]:
    x, v, w1, w2 = (fg.tensor(data[k]) for k in ("x", "v", "w1", "w2"))
    grad = fg.func.grad(lambda y: hvp_loss(y, w1, w2, fg.tanh))

    def step():
        hv = fg.func.jvp(grad, (x,), (v,))[1]
        block(hv.array)
        return [hv]

    return step


def fgraph_hvp_forward_ad(data: dict) -> Callable[[], object]:
    """The same product written with the engine's own API, as the double backward is: a dual leaf, ``fg.grad``."""
    x, v, w1, w2 = (fg.tensor(data[k]) for k in ("x", "v", "w1", "w2"))

    def step():
        with forward_ad.dual_level():
            leaf = x.detach().requires_grad_()
            (g,) = fg.grad(hvp_loss(forward_ad.make_dual(leaf, v), w1, w2, fg.tanh), [leaf])
            hv = forward_ad.unpack_dual(g).tangent
        block(hv.array)
        return [hv]

    return step


def torch_hvp_forward(data: dict) -> Callable[[], object]:
    x, v, w1, w2 = (to_torch(data[k]) for k in ("x", "v", "w1", "w2"))
    grad = torch.func.grad(lambda y: hvp_loss(y, w1, w2, torch.tanh))

    def step():
        return torch_done([torch.func.jvp(grad, (x,), (v,))[1]])

    return step


def jax_hvp_forward(data: dict) -> Callable[[], object]:
    x, v, w1, w2 = (jnp.asarray(data[k]) for k in ("x", "v", "w1", "w2"))
    product = jax.jit(lambda x, v: jax.jvp(jax.grad(lambda y: hvp_loss(y, w1, w2, jnp.tanh)), (x,), (v,))[1])

    def step():
        hv = product(x, v)
        block(hv)
        return [hv]

    return step


# -- the suite's entry points --------------------------------------------------------------------------
TALL_PEERS = ("fgraph jacfwd", "fgraph jacrev", "torch.func.jacfwd", "torch.func.jacrev", "jax.jit(jax.jacfwd)",
              "jax.jit(jax.jacrev)")
HVP_PEERS = ("fgraph forward-over-reverse", "fgraph forward_ad + fg.grad", "fgraph double backward",
             "torch.func jvp(grad)", "jax.jit(jax.jvp(jax.grad))")


def tall_steps(rng: np.random.Generator) -> dict:
    data = tall_data(rng)
    steps = {"fgraph jacfwd": fgraph_tall(data, "fwd"), "fgraph jacrev": fgraph_tall(data, "rev"),
             "jax.jit(jax.jacfwd)": jax_tall(data, "fwd"), "jax.jit(jax.jacrev)": jax_tall(data, "rev")}
    if torch is not None:
        steps["torch.func.jacfwd"] = torch_tall(data, "fwd")
        steps["torch.func.jacrev"] = torch_tall(data, "rev")
    check_agreement("tall jacobian", steps, reference="jax.jit(jax.jacfwd)")
    return steps


def hvp_steps(rng: np.random.Generator) -> dict:
    data = hvp_data(rng)
    steps = {"fgraph forward-over-reverse": fgraph_hvp_forward(data),
             "fgraph forward_ad + fg.grad": fgraph_hvp_forward_ad(data), "fgraph double backward": fgraph_hvp(data),
             "jax.jit(jax.jvp(jax.grad))": jax_hvp_forward(data)}
    if torch is not None:
        steps["torch.func jvp(grad)"] = torch_hvp_forward(data)
    check_agreement("forward-over-reverse hvp", steps, reference="jax.jit(jax.jvp(jax.grad))")
    return steps


def measure(quick: bool) -> dict:
    """``{"tall": {peer: us}, "hvp": {peer: us}}``."""
    repeats, target = (1, 0.02) if quick else (7, 0.2)  # quick: the suite's smoke run (one repeat, as run.py's)
    rng = np.random.default_rng(0)
    out = {}
    for name, steps in (("tall", tall_steps(rng)), ("hvp", hvp_steps(rng))):
        times = measure_all(steps, {p: repeats for p in steps}, target, warmup=1 if quick else 3)
        out[name] = {peer: t * 1e6 for peer, t in times.items()}
    return out


def _report(title: str, times: dict, reference: str) -> None:
    ref = times[reference]
    print(title)
    print(f"  {'peer':<30} {'us':>12} {'x ' + reference:>28}")
    for peer, t in times.items():
        print(f"  {peer:<30} {t:12.1f} {t / ref:28.2f}")
    print()


def run(quick: bool) -> int:
    print("fgraph forward-mode benchmark" + (" (--quick)" if quick else ""))
    for line in thread_settings():
        print("  " + line)
    print()
    times = measure(quick)
    _report(f"Jacobian of f: R^{N_IN} -> R^{N_OUT} (MLP {N_IN}->{HIDDEN}->{N_OUT}, tanh)", times["tall"],
            "fgraph jacfwd")
    _report("Hessian-vector product: tanh(tanh(x @ W1) @ W2).sum(), 64 floats", times["hvp"],
            "fgraph forward-over-reverse")
    t, h = times["tall"], times["hvp"]
    print(f"budgets: fgraph jacrev / jacfwd = {t['fgraph jacrev'] / t['fgraph jacfwd']:.2f}x (>= 5x); "
          f"forward-over-reverse (forward_ad + fg.grad) / double backward = "
          f"{h['fgraph forward_ad + fg.grad'] / h['fgraph double backward']:.2f}x (<= 1x); "
          f"(func.jvp(func.grad) / double backward = "
          f"{h['fgraph forward-over-reverse'] / h['fgraph double backward']:.2f}x)"
          + (f"; / torch.func jvp(grad) = {h['fgraph forward-over-reverse'] / h['torch.func jvp(grad)']:.2f}x "
             "(<= 1.5x)" if "torch.func jvp(grad)" in h else ""))
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    return cli(run, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
