"""fgraph and JAX both ways: an fgraph model in a JAX training loop, a JAX function in an fgraph
model, every gradient cross-checked, and per-sample gradients for DP-SGD.

1. **fgraph -> JAX** (``interop.to_jax``). A Module is a pytree of named arrays, so an fgraph
   loss ``loss(model, x, y)`` exported with ``to_jax`` is an ordinary JAX function of the
   model: ``jax.jit(jax.value_and_grad(...))`` trains it in a plain JAX loop (SGD written
   with ``jax.tree.map``), with fgraph's engine computing the gradients inside the XLA program.
2. **JAX -> fgraph** (``interop.from_jax``). A damped pendulum's RK4 step, written in JAX, becomes
   an fgraph op (one graph node, ``Rk4StepBackward0``) inside an fgraph model; its second
   derivative through ``fg.grad(..., create_graph=True)`` equals ``jax.hessian`` of the pure-JAX
   program.
3. **Cross-check** (``interop.check_grads``): the first and second derivatives of the trained
   model's loss by fgraph's engine against ``jax.grad`` of the same program traced by JAX.
4. **Per-sample gradients** (``fgraph.func``): ``vmap(grad(loss))`` gives each example's
   gradient at once; DP-SGD clips each to norm ``C``, averages and adds Gaussian noise. The
   vmapped gradients equal a Python loop of ``fg.grad`` over the examples.

Run: python examples/jax_interop.py [--out DIR] [--quick]   (a few seconds on a 2-core CPU)
"""
import json
import time

import jax
import jax.numpy as jnp
import numpy as np

import _common
import fgraph as fg
import fgraph.nn.functional as F
import interop
from fgraph import func, nn

STEPS = 300
LR = 0.5
CLIP = 1.0  # DP-SGD's per-example gradient norm bound
NOISE = 0.5  # DP-SGD's noise multiplier


def make_data(rng: np.random.Generator, n: int = 256):
    """Two interleaved half-moons in 2-D, labels 0/1 (no download)."""
    t = rng.uniform(0, np.pi, n)
    label = rng.integers(0, 2, n)
    x = np.stack([np.cos(t) + label - 0.5, np.sin(t) * (1 - 2 * label) + 0.25 * (1 - 2 * label)], 1)
    x += 0.3 * rng.standard_normal(x.shape)
    return x.astype(np.float32), label.astype(np.int32)


def loss_fn(model: nn.Module, x: fg.Tensor, y: fg.Tensor) -> fg.Tensor:
    return F.cross_entropy(model(x), y)


def train_in_jax(model: nn.Module, x: np.ndarray, y: np.ndarray, steps: int) -> tuple[nn.Module, list]:
    """Plain JAX: ``jax.jit(jax.value_and_grad(to_jax(loss_fn)))`` and an SGD step on the Module pytree."""
    value_and_grad = jax.jit(jax.value_and_grad(interop.to_jax(loss_fn)))

    @jax.jit
    def sgd(model, grads):
        return jax.tree.map(lambda p, g: p - LR * g, model, grads)

    losses = []
    for _ in _common.progress(range(steps), desc="JAX loop"):
        loss, grads = value_and_grad(model, x, y)  # grads: a Module-shaped pytree of arrays
        model = sgd(model, grads)
        losses.append(float(loss))
    # The gradients and the updated model share the model's pytree structure: one trace for the whole loop.
    assert value_and_grad._cache_size() == 1 and sgd._cache_size() == 1
    return model, losses


# -- 2. a JAX function inside an fgraph model ----------------------------------------------------
def rk4_step(state: jax.Array, damping: jax.Array, dt: float) -> jax.Array:
    """One RK4 step of a damped pendulum ``theta'' = -sin(theta) - damping * theta'`` (pure JAX)."""
    def field(s):
        return jnp.stack([s[1], -jnp.sin(s[0]) - damping * s[1]])

    k1 = field(state)
    k2 = field(state + dt / 2 * k1)
    k3 = field(state + dt / 2 * k2)
    k4 = field(state + dt * k3)
    return state + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def pendulum_energy_after(rk4, theta0, damping, steps: int = 20, dt: float = 0.1):
    """Energy after ``steps`` RK4 steps from rest at angle ``theta0`` (works on fgraph Tensors and JAX arrays)."""
    lib = fg if isinstance(theta0, fg.Tensor) else jnp
    state = lib.stack([theta0, theta0 * 0.0])
    for _ in range(steps):
        state = rk4(state, damping, dt)
    return 0.5 * state[1] ** 2 + (1 - lib.cos(state[0]))


def jax_in_fgraph() -> dict:
    rk4 = interop.from_jax(rk4_step, static_argnums=(2,))
    theta0 = fg.tensor(1.0, dtype=fg.float32, requires_grad=True)
    damping = fg.tensor(0.3, dtype=fg.float32, requires_grad=True)
    energy = pendulum_energy_after(rk4, theta0, damping)
    node = energy.grad_fn
    while node is not None and "Rk4" not in node.name():  # walk down to the JAX function's node
        node = next((fn for fn, _ in node.next_functions if fn is not None), None)
    (d_theta,) = fg.grad(energy, [theta0], create_graph=True)
    d2_theta, d2_mixed = fg.grad(d_theta, [theta0, damping])

    def energy_jax(theta, damp):
        return pendulum_energy_after(rk4_step, theta, damp)

    hessian = jax.hessian(energy_jax, argnums=(0, 1))(jnp.float32(1.0), jnp.float32(0.3))
    return {
        "node": node.name() if node is not None else None,
        "d2E/dtheta2": (d2_theta.item(), float(hessian[0][0])),
        "d2E/dtheta ddamping": (d2_mixed.item(), float(hessian[0][1])),
    }


# -- 4. per-sample gradients, DP-SGD ---------------------------------------------------------------
def dp_sgd_gradient(model: nn.Module, x: fg.Tensor, y: fg.Tensor, key: jax.Array) -> tuple[dict, fg.Tensor, float]:
    """DP-SGD's noisy gradient: per-example gradients, each clipped to norm CLIP, averaged, plus noise."""
    params = {name: p.detach() for name, p in model.named_parameters()}

    def example_loss(params, xi, yi):
        return F.cross_entropy(func.functional_call(model, params, (xi[None],)), yi[None])

    per_example = func.vmap(func.grad(example_loss), in_dims=(None, 0, 0))(params, x, y)
    norms = fg.sqrt(sum((g.reshape(len(x), -1) ** 2).sum(1) for g in per_example.values()))
    scale = fg.clamp(CLIP / (norms + 1e-6), max=1.0)
    noisy = {}
    for i, (name, g) in enumerate(per_example.items()):
        clipped = (g * scale.reshape((-1,) + (1,) * (g.ndim - 1))).sum(0)
        noise = jax.random.normal(jax.random.fold_in(key, i), clipped.shape, jnp.float32) * NOISE * CLIP
        noisy[name] = (clipped + fg.tensor(noise)) / len(x)

    # The vmapped gradients equal a loop of fg.grad, one example at a time.
    names = list(params)
    worst = 0.0
    for i in range(min(len(x), 8)):
        leaves = [params[n].requires_grad_() for n in names]
        loop = fg.grad(example_loss(dict(zip(names, leaves)), x[i], y[i]), leaves)
        worst = max(worst, max(float(np.abs(per_example[n][i].numpy() - g.numpy()).max()) for n, g in zip(names, loop)))
    return noisy, norms, worst


def main() -> None:
    args = _common.parse_args(_common.make_parser(__doc__))
    start = time.perf_counter()
    fg.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    x, y = make_data(rng)
    model = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 2))

    # 1. train the fgraph model in a plain JAX loop
    model, losses = train_in_jax(model, x, y, 10 if args.quick else STEPS)
    accuracy = float((model(fg.tensor(x)).argmax(1) == fg.tensor(y)).float().mean())
    print(f"1. fgraph model trained in a jax.jit loop through interop.to_jax: loss {losses[0]:.3f} -> "
          f"{losses[-1]:.3f}, training accuracy {100 * accuracy:.1f}%")

    # 2. a JAX RK4 step inside an fgraph program, second derivatives
    report = jax_in_fgraph()
    print(f"2. JAX RK4 step as an fgraph op (node {report['node']}); second derivatives, fgraph vs jax.hessian:")
    for what, value in report.items():
        if what != "node":
            print(f"     {what:22s} {value[0]:+.6f} vs {value[1]:+.6f}")

    # 3. cross-check the loss's first and second derivatives against jax.grad
    xs, ys = fg.tensor(x[:32]), fg.tensor(y[:32])
    weights = [p.detach() for p in model.parameters()]

    def loss_of_weights(w1, b1, w2, b2):
        return F.cross_entropy(F.linear(fg.tanh(F.linear(xs, w1, b1)), w2, b2), ys)

    check = interop.check_grads(loss_of_weights, *weights, order=2)
    print(f"3. interop.check_grads on the model's loss (orders 1-2):\n{check}")

    # 4. per-sample gradients and DP-SGD
    noisy, norms, worst = dp_sgd_gradient(model, xs, ys, jax.random.PRNGKey(args.seed))
    print(f"4. per-example gradient norms (fgraph.func.vmap(grad)): min {norms.min().item():.3f}, "
          f"median {float(np.median(norms.numpy())):.3f}, max {norms.max().item():.3f}; "
          f"clipped to {CLIP}; vmap vs a loop of fg.grad: max |difference| {worst:.1e}")

    results = {"losses": [losses[0], losses[-1]], "accuracy": accuracy,
               "second_derivatives": {k: v for k, v in report.items() if k != "node"},
               "per_example_vs_loop": worst, "per_example_norms": sorted(norms.tolist()),
               "dp_sgd_gradient": {name: g.tolist() for name, g in noisy.items()}}
    path = args.out / "jax_interop.json"
    path.write_text(json.dumps(results, indent=1))
    print(f"wrote {path}; total {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
