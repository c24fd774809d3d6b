"""Second-order MAML (Finn et al., 2017) on sinusoid regression, against first-order MAML.

Each task is a sine wave ``y = A sin(x - phase)`` with ``A`` in [0.1, 5] and ``phase`` in
[0, pi], seen through K = 10 points ``x`` in [-5, 5]. MAML learns initial weights
``theta`` of an MLP 1-40-40-1 such that one SGD step on a task's K points
(the *inner* step)

    theta_task = theta - alpha * d loss_support(theta) / d theta

fits the task well. The *outer* loss is the adapted model's loss on fresh points of
the same task; its gradient w.r.t. ``theta`` flows through ``theta_task`` and hence
through the inner gradient, so the inner gradient is taken with
``fg.grad(..., create_graph=True)``: a gradient that has its own graph, differentiated
again by ``outer_loss.backward()``. First-order MAML takes the inner gradient without
``create_graph`` (a constant), which drops the second-order term.

The adapted weights are tensors computed from the meta-parameters, so the forward is
written functionally (``mlp(weights, x)``) on the model's own parameters
``list(model.parameters())``. The tasks of a meta-batch are processed together: every
weight is expanded to one copy per task (``w.expand(T, *w.shape)``); the gradient of
the sum of the task losses w.r.t. that copy is each task's own gradient, and the
gradient w.r.t. ``w`` sums the tasks' outer gradients. ``fg.optim.Adam`` updates the
meta-parameters.

On held-out tasks it prints the mean query loss before adaptation and after 1 and
10 inner steps for both variants, and plots one held-out task to ``maml_sine.png``.

Run: python examples/maml_sine.py [--out DIR] [--quick] [--iterations N]
     (about a minute on a 2-core CPU: 3000 outer steps of each variant)
"""
import time
from typing import NamedTuple

import numpy as np

import _common
import fgraph as fg
from fgraph import nn

K = 10  # shots per task (support and query)
META_BATCH = 25  # tasks per outer step
ITERATIONS = 3000  # outer steps per variant
INNER_LR = 0.01  # alpha
OUTER_LR = 1e-3  # beta (Adam)
EVAL_TASKS = 200
EVAL_STEPS = 10
FIGURE = "maml_sine.png"


class Tasks(NamedTuple):
    """Sine tasks: support and query sets ``(T, n, 1)`` and each task's amplitude and phase ``(T, 1, 1)``."""

    x_support: fg.Tensor
    y_support: fg.Tensor
    x_query: fg.Tensor
    y_query: fg.Tensor
    amplitude: np.ndarray
    phase: np.ndarray


def sample_tasks(rng: np.random.Generator, n_tasks: int, n_query: int = K) -> Tasks:
    amplitude = rng.uniform(0.1, 5.0, (n_tasks, 1, 1))
    phase = rng.uniform(0.0, np.pi, (n_tasks, 1, 1))
    x_support = rng.uniform(-5.0, 5.0, (n_tasks, K, 1))
    x_query = rng.uniform(-5.0, 5.0, (n_tasks, n_query, 1))
    arrays = (x_support, amplitude * np.sin(x_support - phase), x_query, amplitude * np.sin(x_query - phase))
    return Tasks(*(fg.tensor(a.astype(np.float32)) for a in arrays), amplitude, phase)


def make_model() -> nn.Module:
    return nn.Sequential(nn.Linear(1, 40), nn.ReLU(), nn.Linear(40, 40), nn.ReLU(), nn.Linear(40, 1))


def mlp(weights: list, x: fg.Tensor) -> fg.Tensor:
    """The model's forward on given weights ``[w1, b1, w2, b2, w3, b3]`` (``model.parameters()`` order).

    Each layer is ``F.linear(x, w, b)`` written as ``x @ w^T + b`` so that the weights may
    carry a leading task dimension: ``w`` ``(T, out, in)`` with ``x`` ``(T, n, in)``.
    """
    layers = len(weights) // 2
    for i in range(layers):
        weight, bias = weights[2 * i], weights[2 * i + 1]
        x = x @ weight.transpose(-1, -2) + bias.unsqueeze(-2)
        if i < layers - 1:
            x = fg.relu(x)
    return x


def task_losses(weights: list, x: fg.Tensor, y: fg.Tensor) -> fg.Tensor:
    """Mean squared error of each task, shape ``(T,)``."""
    return ((mlp(weights, x) - y) ** 2).mean((1, 2))


def inner_step(weights: list, x: fg.Tensor, y: fg.Tensor, create_graph: bool) -> list:
    """One SGD step of every task's weights on its support set ``(x, y)``."""
    # Summed over tasks: the gradient w.r.t. task t's copy of the weights is task t's own gradient.
    grads = fg.grad(task_losses(weights, x, y).sum(), weights, create_graph=create_graph)
    return [w - INNER_LR * g for w, g in zip(weights, grads)]


def per_task(params: list, tasks: int) -> list:
    """One copy of each weight per task (``expand``: no copy is made; gradients flow back to ``params``)."""
    return [p.expand(tasks, *p.shape) for p in params]


def meta_train(second_order: bool, iterations: int, seed: int) -> tuple[nn.Module, list]:
    """MAML (or first-order MAML) from the same initialisation and task stream for both variants."""
    fg.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = make_model()
    opt = fg.optim.Adam(model.parameters(), lr=OUTER_LR)
    history, running = [], None
    name = "MAML (second order)" if second_order else "first-order MAML"
    bar = _common.progress(range(iterations), desc=name, mininterval=0.5)
    for step in bar:
        tasks = sample_tasks(rng, META_BATCH)
        params = list(model.parameters())  # the current meta-parameters (each step rebinds them)
        adapted = inner_step(per_task(params, META_BATCH), tasks.x_support, tasks.y_support, second_order)
        outer = task_losses(adapted, tasks.x_query, tasks.y_query).mean()
        opt.step(outer.backward())  # d outer / d theta, through the inner gradient when second_order
        running = outer.detach() if running is None else 0.98 * running + 0.02 * outer.detach()
        if step % 100 == 0 or step == iterations - 1:
            history.append((step, running.item()))
            bar.set_postfix(meta_loss=f"{history[-1][1]:.3f}")
    return model, history


def evaluate(model: nn.Module, tasks: Tasks) -> np.ndarray:
    """Mean query loss over the tasks after 0, 1, ..., EVAL_STEPS inner steps (plain SGD, as in training)."""
    weights = per_task([p.detach().requires_grad_() for p in model.parameters()], tasks.x_support.shape[0])
    losses = [task_losses(weights, tasks.x_query, tasks.y_query).mean().item()]
    for _ in range(EVAL_STEPS):
        weights = inner_step(weights, tasks.x_support, tasks.y_support, create_graph=False)
        losses.append(task_losses(weights, tasks.x_query, tasks.y_query).mean().item())
    return np.array(losses)


def curves(model: nn.Module, tasks: Tasks, task: int, grid: fg.Tensor, steps: tuple) -> dict:
    """The model's curve on ``grid`` for one task after each number of inner steps in ``steps``."""
    x, y = tasks.x_support[task:task + 1], tasks.y_support[task:task + 1]
    weights = per_task([p.detach().requires_grad_() for p in model.parameters()], 1)
    result = {}
    for step in range(max(steps) + 1):
        if step in steps:
            result[step] = mlp(weights, grid.unsqueeze(0))[0, :, 0].detach().numpy()
        weights = inner_step(weights, x, y, create_graph=False)
    return result


def plot(models: dict, losses: dict, histories: dict, tasks: Tasks, path) -> None:
    plt = _common.pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.8))
    grid_np = np.linspace(-5, 5, 200, dtype=np.float32)
    grid = fg.tensor(grid_np[:, None])
    task = 0
    truth = tasks.amplitude[task, 0, 0] * np.sin(grid_np - tasks.phase[task, 0, 0])
    for ax, (name, model) in zip(axes[:2], models.items()):
        lines = curves(model, tasks, task, grid, (0, 1, EVAL_STEPS))
        ax.plot(grid_np, truth, "k-", lw=2, label="task")
        ax.plot(tasks.x_support[task, :, 0].numpy(), tasks.y_support[task, :, 0].numpy(), "k^", label=f"K={K} points")
        for step, style in zip(lines, (":", "--", "-")):
            ax.plot(grid_np, lines[step], style, label=f"{step} step(s)" if step else "before adaptation")
        ax.set(title=f"{name}: a held-out task", xlabel="x", ylabel="y")
        ax.legend(fontsize=8)
    for name in models:
        axes[2].plot(np.arange(EVAL_STEPS + 1), losses[name], "o-", label=name)
        steps, values = zip(*histories[name])
        axes[3].plot(steps, values, label=name)
    axes[2].set(title=f"mean query MSE, {EVAL_TASKS} held-out tasks", xlabel="inner SGD steps", ylabel="MSE", yscale="log")
    axes[3].set(title="meta-training loss (running mean)", xlabel="outer step", ylabel="query MSE after 1 step", yscale="log")
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[2].legend()
    axes[3].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = _common.make_parser(__doc__)
    parser.add_argument("--iterations", type=int, default=ITERATIONS, help=f"outer steps per variant (default {ITERATIONS})")
    args = _common.parse_args(parser)
    iterations = 5 if args.quick else args.iterations
    start = time.perf_counter()
    held_out = sample_tasks(np.random.default_rng(10_000 + args.seed), EVAL_TASKS, n_query=100)

    models, losses, histories, times = {}, {}, {}, {}
    for name, second_order in (("MAML", True), ("first-order MAML", False)):
        t0 = time.perf_counter()
        models[name], histories[name] = meta_train(second_order, iterations, args.seed)
        times[name] = time.perf_counter() - t0
        losses[name] = evaluate(models[name], held_out)

    figure = args.out / FIGURE
    plot(models, losses, histories, held_out, figure)
    print(f"wrote {figure}")
    print(f"{iterations} outer steps of {META_BATCH} tasks, K={K}, alpha={INNER_LR}, Adam lr={OUTER_LR}; "
          f"total {time.perf_counter() - start:.1f} s")
    print(f"mean query MSE on {EVAL_TASKS} held-out tasks (before adaptation -> after 1 step -> after {EVAL_STEPS} steps):")
    for name in models:
        pre, one, many = losses[name][0], losses[name][1], losses[name][EVAL_STEPS]
        print(f"  {name:<17} {pre:7.3f} -> {one:7.3f} -> {many:7.3f}   (meta-training {times[name]:.1f} s)")
    if iterations >= ITERATIONS and any(losses[name][1] > 0.5 * losses[name][0] for name in models):
        raise SystemExit("adaptation should at least halve the held-out loss after one step")


if __name__ == "__main__":
    main()
