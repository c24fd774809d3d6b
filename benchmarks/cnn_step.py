"""A CNN training step with Adam, side by side: ``optim_step.py``'s peers on a small convolutional net.

The model: 28x28 single-channel images, batch 32, float32; ``Conv2d(1, 16, 3, padding=1)``,
ReLU, ``MaxPool2d(2)``, ``Conv2d(16, 32, 3, padding=1)``, ReLU, ``MaxPool2d(2)``, flatten,
``Linear(32 * 7 * 7, 10)``; cross-entropy; Adam (lr 1e-3). One step = forward, gradients
of every weight and bias, and the update. Peers, timing and the agreement check are
``optim_step.py``'s (fgraph eager and compiled, PyTorch eager, ``jax.jit`` of the pure-JAX
step written with ``lax.conv_general_dilated`` and ``lax.reduce_window``).
Run: ``python benchmarks/cnn_step.py [--quick]``.
"""
from __future__ import annotations

import sys
from typing import Optional

import jax
from jax import lax

from fgraph import nn
from optim_step import fgraph_step, jax_step, time_and_print, torch_step
from timing import cli, model_batch, thread_settings, torch

BATCH, IMAGE, CLASSES = 32, (1, 28, 28), 10
CHANNELS = (1, 16, 32)


def build() -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(CHANNELS[0], CHANNELS[1], 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(CHANNELS[1], CHANNELS[2], 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(CHANNELS[2] * 7 * 7, CLASSES))


def torch_build() -> "torch.nn.Sequential":
    t = torch.nn
    return t.Sequential(
        t.Conv2d(CHANNELS[0], CHANNELS[1], 3, padding=1), t.ReLU(), t.MaxPool2d(2),
        t.Conv2d(CHANNELS[1], CHANNELS[2], 3, padding=1), t.ReLU(), t.MaxPool2d(2),
        t.Flatten(), t.Linear(CHANNELS[2] * 7 * 7, CLASSES))


def _conv_relu_pool(h: jax.Array, w: jax.Array, b: jax.Array) -> jax.Array:
    h = lax.conv_general_dilated(h, w, (1, 1), ((1, 1), (1, 1)), dimension_numbers=("NCHW", "OIHW", "NCHW"))
    h = jax.nn.relu(h + b[None, :, None, None])
    return lax.reduce_window(h, -jax.numpy.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")


def jax_logits(params: list, x: jax.Array) -> jax.Array:
    """The CNN in pure JAX, ``params`` in ``state_dict`` order."""
    w1, b1, w2, b2, w3, b3 = params
    h = _conv_relu_pool(_conv_relu_pool(x, w1, b1), w2, b2)
    return h.reshape(h.shape[0], -1) @ w3.T + b3


def peers(skip: tuple = ()) -> dict:
    """The step peers, ``{name: (step, read_params)}``, from the same weights and batch; ``skip``: names left out."""
    weights, x, y = model_batch(build, BATCH, IMAGE, CLASSES)
    makers = {"fgraph eager": lambda: fgraph_step(weights, x, y, build=build),
              "fgraph compiled": lambda: fgraph_step(weights, x, y, compiled=True, build=build),
              "jax.jit (pure JAX)": lambda: jax_step(weights, x, y, logits=jax_logits),
              "jax.grad (no jit)": lambda: jax_step(weights, x, y, jit=False, logits=jax_logits)}
    if torch is not None:
        makers["PyTorch eager"] = lambda: torch_step(weights, x, y, build=torch_build)
    return {name: make() for name, make in makers.items() if name not in skip}


def run(quick: bool) -> int:
    repeats, target = (3, 0.05) if quick else (9, 0.3)
    print(f"CNN training step with Adam: batch {BATCH}, {IMAGE}, two conv layers, cross-entropy"
          + (" (--quick)" if quick else ""))
    for line in thread_settings():
        print("  " + line)
    return time_and_print(peers(), repeats, target)


def main(argv: Optional[list[str]] = None) -> int:
    return cli(run, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
