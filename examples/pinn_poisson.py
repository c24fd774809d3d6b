"""A physics-informed neural network (PINN) for the 1-D Poisson problem, trained with Adam then L-BFGS.

The problem: ``-u''(x) = pi^2 sin(pi x)`` on [0, 1] with ``u(0) = u(1) = 0``; its solution
is ``u(x) = sin(pi x)``. The network ``u_theta`` (an ``nn.Sequential`` MLP 1-32-32-1 with
tanh) is trained on no solution values at all, only on the equation:

    loss = mean over collocation points x_i of (-u_theta''(x_i) - f(x_i))^2
           + (u_theta(0)^2 + u_theta(1)^2) / 2

``u_theta''`` is the second derivative of the network w.r.t. its *input*, a single coordinate:
the cheap direction for forward-mode AD. Two nested dual levels (``fgraph.autograd.forward_ad``)
carry ``dx = 1`` through one forward pass, forward-over-forward, and give ``u'`` and ``u''`` at
every point; ``loss.backward()`` then differentiates through both w.r.t. the weights
(reverse-over-forward-over-forward). The reverse-mode way, two ``fg.grad(...,
create_graph=True)`` calls (kept as ``second_derivative_reverse``), gives the same values and
gradients; forward mode makes each loss-and-gradient evaluation about 2x faster here
(``docs/forward-ad.md``). Adam gets near the solution; L-BFGS
with PyTorch's strong Wolfe line search (``fg.optim.LBFGS``, ``opt.step(closure)``, the
closure called with the trial weights rebound on the model) refines it.

Everything runs in float64 (enabled below, before any array exists): the L-BFGS refinement
drives the loss far below float32's resolution. It prints the relative L2 error of
``u_theta`` against ``sin(pi x)`` on 1001 points (at most 1e-3 expected; the full run
checks it) and the wall time, and plots the solution and the pointwise error to
``pinn_poisson.png``.

Run: python examples/pinn_poisson.py [--out DIR] [--quick] [--seed N]
     (about 10 s on a 2-core CPU; relative L2 error about 1e-6, 1e-3 after Adam alone)
"""
import math
import time

import jax

jax.config.update("jax_enable_x64", True)  # before any array is made

import numpy as np  # noqa: E402

import _common  # noqa: E402
import fgraph as fg  # noqa: E402
import fgraph.autograd.forward_ad as fwAD  # noqa: E402
from fgraph import nn  # noqa: E402

WIDTH = 32
COLLOCATION = 64  # interior points, a fixed uniform grid
ADAM_STEPS = 500
ADAM_LR = 3e-3
LBFGS_STEPS = 10  # optimizer steps of up to LBFGS_MAX_ITER iterations each
LBFGS_MAX_ITER = 50
TEST_POINTS = 1001
TARGET = 1e-3  # relative L2 error the full run must reach
FIGURE = "pinn_poisson.png"


def exact(x):
    """The analytic solution ``sin(pi x)`` (of a Tensor or a NumPy array)."""
    return fg.sin(math.pi * x) if isinstance(x, fg.Tensor) else np.sin(np.pi * x)


def source(x: fg.Tensor) -> fg.Tensor:
    """The right-hand side ``f(x) = pi^2 sin(pi x)`` of ``-u'' = f``."""
    return math.pi**2 * fg.sin(math.pi * x)


def make_model() -> nn.Module:
    return nn.Sequential(nn.Linear(1, WIDTH), nn.Tanh(), nn.Linear(WIDTH, WIDTH), nn.Tanh(),
                         nn.Linear(WIDTH, 1)).double()


def second_derivative(model: nn.Module, x: fg.Tensor) -> fg.Tensor:
    """``d^2 u / dx^2`` at every row of ``x`` ``(N, 1)``, by forward mode.

    The points are independent (row ``i`` of ``u`` depends on row ``i`` of ``x`` only), so a
    tangent of ones gives ``u'`` at every point in one pass. The inner level's tangent ``u'`` is
    itself dual at the outer level, whose tangent is ``u''``. Both are recorded on the autograd
    graph, so the loss built from them differentiates w.r.t. the weights.
    """
    ones = fg.ones_like(x)
    with fwAD.dual_level() as outer:
        x_outer = fwAD.make_dual(x.detach(), ones)
        with fwAD.dual_level():
            u = model(fwAD.make_dual(x_outer, ones))
            u_x = fwAD.unpack_dual(u).tangent
            return fwAD.unpack_dual(u_x, level=outer).tangent


def second_derivative_reverse(model: nn.Module, x: fg.Tensor) -> fg.Tensor:
    """The same ``u''`` by reverse mode: two ``fg.grad(..., create_graph=True)`` calls (the
    gradient of ``u.sum()`` w.r.t. ``x`` is ``u'`` at every point, likewise for ``u''``)."""
    x = x.detach().requires_grad_()
    u = model(x)
    (u_x,) = fg.grad(u.sum(), [x], create_graph=True)
    (u_xx,) = fg.grad(u_x.sum(), [x], create_graph=True)
    return u_xx


class Problem:
    """The collocation points, the source there, and the two boundary points."""

    def __init__(self, n: int = COLLOCATION) -> None:
        self.x = fg.linspace(0.0, 1.0, n + 2, dtype=fg.float64)[1:-1].reshape(n, 1)
        self.f = source(self.x)
        self.boundary = fg.tensor([[0.0], [1.0]], dtype=fg.float64)

    def loss(self, model: nn.Module) -> fg.Tensor:
        residual = -second_derivative(model, self.x) - self.f
        return (residual**2).mean() + (model(self.boundary) ** 2).mean()


def relative_l2(model: nn.Module, x: fg.Tensor) -> float:
    with fg.no_grad():
        u, u_exact = model(x), exact(x)
        return (((u - u_exact) ** 2).sum() / (u_exact**2).sum()).sqrt().item()


def train_adam(model: nn.Module, problem: Problem, steps: int, history: list) -> None:
    opt = fg.optim.Adam(model.parameters(), lr=ADAM_LR)
    bar = _common.progress(range(steps), desc="Adam", mininterval=0.5)
    for step in bar:
        loss = problem.loss(model)
        opt.step(loss.backward())  # backward returns the gradients; step rebinds the model's weights
        history.append(loss.item())
        if step % 50 == 0:
            bar.set_postfix(loss=f"{history[-1]:.2e}")


def train_lbfgs(model: nn.Module, problem: Problem, steps: int, max_iter: int, history: list) -> int:
    """L-BFGS steps (each up to ``max_iter`` iterations); returns the number of loss evaluations."""
    opt = fg.optim.LBFGS(model.parameters(), max_iter=max_iter, history_size=50, tolerance_grad=1e-12,
                         tolerance_change=1e-15, line_search_fn="strong_wolfe")

    def closure() -> fg.Tensor:  # called with the trial weights rebound on `model`
        return problem.loss(model)

    bar = _common.progress(range(steps), desc="L-BFGS", mininterval=0.5)
    for _ in bar:
        history.append(opt.step(closure).item())  # the loss at the start of the step
        bar.set_postfix(loss=f"{history[-1]:.2e}")
    history.append(closure().item())
    (state,) = opt.state.values()  # PyTorch keeps LBFGS's state on the first parameter
    return state["func_evals"]


def plot(model: nn.Module, x: fg.Tensor, problem: Problem, history: list, adam_steps: int, path) -> None:
    plt = _common.pyplot()
    with fg.no_grad():
        u = model(x).numpy().ravel()
    xs = x.numpy().ravel()
    u_exact = exact(xs)
    fig, (ax_u, ax_err, ax_loss) = plt.subplots(1, 3, figsize=(14, 3.8))
    ax_u.plot(xs, u_exact, "k-", lw=3, alpha=0.3, label="exact sin(pi x)")
    ax_u.plot(xs, u, "C0--", label="PINN")
    ax_u.plot(problem.x.numpy().ravel(), np.zeros(len(problem.x)), "C1|", label="collocation points")
    ax_u.set(xlabel="x", ylabel="u", title="solution")
    ax_u.legend()
    ax_err.plot(xs, u - u_exact, "C3")
    ax_err.set(xlabel="x", ylabel="u - exact", title="pointwise error")
    ax_err.ticklabel_format(axis="y", style="sci", scilimits=(0, 0))
    ax_loss.semilogy(np.arange(adam_steps), history[:adam_steps], label="Adam (per step)")
    ax_loss.semilogy(adam_steps + np.arange(len(history) - adam_steps), history[adam_steps:], "o-", ms=3,
                     label=f"L-BFGS (per step of up to {LBFGS_MAX_ITER} iterations)")
    ax_loss.set(xlabel="optimizer step", ylabel="loss", title="training loss")
    ax_loss.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = _common.make_parser(__doc__)  # --quick, --out, --seed
    args = _common.parse_args(parser)
    adam_steps = 20 if args.quick else ADAM_STEPS
    lbfgs_steps, max_iter = (2, 5) if args.quick else (LBFGS_STEPS, LBFGS_MAX_ITER)
    start = time.perf_counter()

    fg.manual_seed(args.seed)
    model = make_model()
    problem = Problem()
    x_test = fg.linspace(0.0, 1.0, TEST_POINTS, dtype=fg.float64).reshape(-1, 1)
    print(f"-u'' = pi^2 sin(pi x) on [0, 1], u(0) = u(1) = 0; MLP 1-{WIDTH}-{WIDTH}-1 (tanh), "
          f"{sum(p.numel() for p in model.parameters())} parameters, {COLLOCATION} collocation points")

    history: list = []
    train_adam(model, problem, adam_steps, history)
    adam_error, adam_time = relative_l2(model, x_test), time.perf_counter() - start
    evaluations = train_lbfgs(model, problem, lbfgs_steps, max_iter, history)
    error, total_time = relative_l2(model, x_test), time.perf_counter() - start

    figure = args.out / FIGURE
    plot(model, x_test, problem, history, adam_steps, figure)
    print(f"wrote {figure.name} to {args.out}")
    print(f"after Adam ({adam_steps} steps, {adam_time:.1f} s): loss {history[adam_steps - 1]:.3e}, "
          f"relative L2 error {adam_error:.3e}")
    print(f"after L-BFGS ({lbfgs_steps} steps, {evaluations} loss evaluations, {total_time - adam_time:.1f} s): "
          f"loss {history[-1]:.3e}, relative L2 error {error:.3e}")
    checked = "not checked with --quick" if args.quick else "checked"
    print(f"relative L2 error against sin(pi x): {error:.2e} (target <= {TARGET:g}, {checked}); "
          f"wall time {total_time:.1f} s")
    if not args.quick and not error <= TARGET:
        raise SystemExit(f"the relative L2 error {error:.2e} is above the target {TARGET:g}")


if __name__ == "__main__":
    main()
