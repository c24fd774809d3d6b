"""What ``fgraph.nn`` costs over raw ops: the same MLP step written both ways, in one run.

* ``mlp``: one training step's forward + backward (gradients of every weight and
  bias) of an MLP, batch 64, 784 -> 256 -> 256 -> 10, float32, relu, mean squared
  error: ``nn.Sequential(nn.Linear, nn.ReLU, ...)`` against the same computation
  written with ``F.linear``/``F.relu`` on plain parameter tensors. Budget: the
  Sequential step costs at most 1.05x the raw one (the no-hook fast path of
  ``Module.__call__``). PyTorch's ``nn.Sequential`` step is printed for context.
* ``tiny``: the same, batch 8, 16 -> 16 -> 16 -> 1, where Python overhead
  dominates: the per-step cost of the module layer in microseconds (no budget).
* ``hooked``: the ``mlp`` step with a forward hook on every module (the slow
  path), for context.

Timing is ``overhead.py``'s: interleaved repeats, medians, synchronised results.
Run: ``python benchmarks/nn_modules.py [--quick]``.
"""
from __future__ import annotations

import sys
from typing import Callable, Optional

import numpy as np

import fgraph as fg
import fgraph.nn.functional as F
from fgraph import nn
from timing import block, cli, measure_all, thread_settings, to_torch, torch, torch_device, torch_done, torch_numpy

BUDGET = 1.05


def build(sizes: tuple[int, ...], seed: int = 0) -> nn.Sequential:
    fg.manual_seed(seed)
    layers: list = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(fan_in, fan_out), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def data(sizes: tuple[int, ...], batch: int) -> tuple:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    y = rng.standard_normal((batch, sizes[-1])).astype(np.float32)
    return fg.tensor(x), fg.tensor(y)


def sequential_step(model: nn.Sequential, x: fg.Tensor, y: fg.Tensor) -> Callable[[], object]:
    params = list(model.parameters())

    def step():
        loss = F.mse_loss(model(x), y)
        grads = fg.grad(loss, params)
        block([g.array for g in grads])
        return grads

    return step


def raw_step(model: nn.Sequential, x: fg.Tensor, y: fg.Tensor) -> Callable[[], object]:
    weights = [(m.weight, m.bias) for m in model if isinstance(m, nn.Linear)]
    params = [p for pair in weights for p in pair]

    def step():
        h = x
        for i, (w, b) in enumerate(weights):
            h = F.linear(h, w, b)
            if i < len(weights) - 1:
                h = F.relu(h)
        loss = F.mse_loss(h, y)
        grads = fg.grad(loss, params)
        block([g.array for g in grads])
        return grads

    return step


def torch_step(model: nn.Sequential, x: fg.Tensor, y: fg.Tensor) -> Callable[[], object]:
    layers = []
    for m in model:
        layers.append(torch.nn.Linear(*m.weight.shape[::-1]) if isinstance(m, nn.Linear) else torch.nn.ReLU())
    twin = torch.nn.Sequential(*layers)
    twin.to(torch_device()).load_state_dict({k: to_torch(v.numpy()) for k, v in model.state_dict().items()})
    tx, ty = to_torch(x.numpy()), to_torch(y.numpy())
    params = list(twin.parameters())

    def step():
        loss = torch.nn.functional.mse_loss(twin(tx), ty)
        return torch_done(torch.autograd.grad(loss, params))

    return step


def check_same(a: Callable, b: Callable, name: str) -> None:
    for i, (ga, gb) in enumerate(zip(a(), b())):
        ga = ga.numpy() if isinstance(ga, fg.Tensor) else torch_numpy(ga)
        gb = gb.numpy() if isinstance(gb, fg.Tensor) else torch_numpy(gb)
        if not np.allclose(ga, gb, rtol=1e-4, atol=1e-6):
            raise SystemExit(f"{name}: gradient {i} differs between the two forms; refusing to time it.")


def run(quick: bool) -> int:
    repeats, target = (3, 0.05) if quick else (15, 0.2)
    print("fgraph.nn module overhead" + (" (--quick)" if quick else ""))
    for line in thread_settings():
        print("  " + line)
    print(f"  timing: median of {repeats} interleaved repeats, each a batch of calls lasting ~{target * 1e3:.0f} ms")
    print()
    verdict = None
    for name, sizes, batch in (("mlp", (784, 256, 256, 10), 64), ("tiny", (16, 16, 16, 1), 8)):
        model = build(sizes)
        x, y = data(sizes, batch)
        steps = {"raw ops (F.linear)": raw_step(model, x, y), "nn.Sequential": sequential_step(model, x, y)}
        if name == "mlp":
            hooked = build(sizes)
            for m in hooked.modules():
                m.register_forward_hook(_noop_hook)
            steps["nn.Sequential + hooks"] = sequential_step(hooked, x, y)
        if torch is not None:
            steps["PyTorch nn.Sequential"] = torch_step(model, x, y)
        check_same(steps["raw ops (F.linear)"], steps["nn.Sequential"], name)
        if torch is not None:
            check_same(steps["nn.Sequential"], steps["PyTorch nn.Sequential"], name)
        times = {peer: t * 1e6 for peer, t in measure_all(steps, {p: repeats for p in steps}, target).items()}
        raw = times["raw ops (F.linear)"]
        print(f"{name}: batch {batch}, {'->'.join(map(str, sizes))}, float32, relu, MSE, fwd + grads")
        print(f"  {'form':<24} {'us/step':>10} {'x raw ops':>10}")
        for peer, t in times.items():
            print(f"  {peer:<24} {t:10.1f} {t / raw:10.3f}")
        ratio = times["nn.Sequential"] / raw
        if name == "mlp":
            verdict = ratio <= BUDGET
            print(f"  budget: nn.Sequential <= {BUDGET}x raw ops -> {ratio:.3f}x: {'MET' if verdict else 'NOT MET'}")
        else:
            print(f"  module layer: {times['nn.Sequential'] - raw:+.1f} us per step "
                  f"({(times['nn.Sequential'] - raw) / 5:+.2f} us per module call)")
        print()
    return 0


def _noop_hook(module: nn.Module, args: tuple, output: object) -> None:
    return None


def main(argv: Optional[list[str]] = None) -> int:
    return cli(run, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
