"""Shared pieces of the research examples (train_digits.py, grad_cam.py, maml_sine.py).

* the command line every example accepts: ``--quick`` (a few steps, for the tests) and
  ``--out DIR`` (where files go; default ``examples/out/``, which git ignores);
* matplotlib on the ``Agg`` backend (no display needed) and a tqdm progress bar;
* scikit-learn's bundled 8x8 digits with a fixed, stratified train/test split;
* the small digits CNN, its training epoch and its evaluation, shared by the digits
  and Grad-CAM examples.

The examples import it as ``import _common`` (Python puts the script's own directory
on ``sys.path``), so they run as ``python examples/NAME.py`` from anywhere.
"""
from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Iterable, Iterator, NamedTuple, Optional

import numpy as np

import fgraph as fg
import fgraph.nn.functional as F
from fgraph import nn

EXAMPLES_DIR = Path(__file__).resolve().parent
DEFAULT_OUT = EXAMPLES_DIR / "out"
DOCS_IMAGES = EXAMPLES_DIR.parent / "docs" / "images"
DIGITS_CHECKPOINT = "digits_cnn.safetensors"  # written by train_digits.py, read by grad_cam.py
DIGITS_BATCH_SIZE = 64
DIGITS_LR = 3e-3  # Adam's learning rate for the digits CNN


# -- command line, output, plots, progress -------------------------------------------------------
def make_parser(doc: str, figure: Optional[str] = None) -> argparse.ArgumentParser:
    """An argument parser with ``--quick``, ``--out`` and ``--seed`` (and ``--save-figure`` when the
    example publishes ``figure`` to ``docs/images/``); the first line of ``doc`` is its description."""
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few steps only (a smoke test; results are not meaningful)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="directory for the files written (default: examples/out/)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the initialisation, dropout and data order (default 0)")
    if figure is not None:
        parser.add_argument("--save-figure", action="store_true",
                            help=f"also copy {figure} to docs/images/ (a full run always does)")
    return parser


def parse_args(parser: argparse.ArgumentParser, argv: Optional[list] = None) -> argparse.Namespace:
    """Parse the command line and create the output directory."""
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    return args


def pyplot():
    """``matplotlib.pyplot`` on the non-interactive ``Agg`` backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def should_publish(args: argparse.Namespace) -> bool:
    """Whether the figure goes to ``docs/images/`` too: in a full run, or with ``--save-figure``."""
    return args.save_figure or not args.quick


def publish(path: Path, name: str) -> Path:
    """Copy a rendered figure to ``docs/images/<name>`` (the pictures the docs show)."""
    DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
    target = DOCS_IMAGES / name
    shutil.copyfile(path, target)
    return target


def progress(iterable: Iterable, **kwargs):
    """A tqdm progress bar (on stderr) around ``iterable``."""
    from tqdm import tqdm

    return tqdm(iterable, dynamic_ncols=True, **kwargs)


# -- data ------------------------------------------------------------------------------------------
class Digits(NamedTuple):
    """The 8x8 digits as ``(N, 1, 8, 8)`` float32 images in [0, 1] and int64 labels."""

    x_train: fg.Tensor
    y_train: fg.Tensor
    x_test: fg.Tensor
    y_test: fg.Tensor


def load_digits(test_fraction: float = 0.2, seed: int = 0) -> Digits:
    """scikit-learn's bundled digits (1797 images, no download), split 80/20, stratified by label."""
    from sklearn.datasets import load_digits as sklearn_digits
    from sklearn.model_selection import train_test_split

    data = sklearn_digits()
    images = (data.images / 16.0).astype(np.float32)[:, None]
    x_train, x_test, y_train, y_test = train_test_split(
        images, data.target, test_size=test_fraction, random_state=seed, stratify=data.target)
    return Digits(fg.tensor(x_train), fg.tensor(y_train), fg.tensor(x_test), fg.tensor(y_test))


def minibatches(n: int, batch_size: int, rng: np.random.Generator) -> Iterator[fg.Tensor]:
    """Index tensors of a fresh random permutation of ``range(n)``; the last partial batch is dropped,
    so every step has the same shapes (and reuses the same compiled kernels)."""
    order = rng.permutation(n)
    for start in range(0, n - batch_size + 1, batch_size):
        yield fg.tensor(order[start:start + batch_size])


# -- the model -------------------------------------------------------------------------------------
class DigitsCNN(nn.Module):
    """Two conv blocks and a linear head for 8x8 digits.

    ``block1``: conv 3x3 -> batch norm -> ReLU -> 2x2 max pool (8x8 -> 4x4);
    ``block2``: conv 3x3 -> batch norm -> ReLU (4x4, the layer Grad-CAM looks at);
    ``head``: 2x2 max pool -> flatten -> dropout -> linear to the 10 class scores.
    """

    def __init__(self, width: int = 32, dropout: float = 0.25) -> None:
        super().__init__()
        self.block1 = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(2))
        self.block2 = nn.Sequential(
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU())
        self.head = nn.Sequential(
            nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(dropout), nn.Linear(2 * width * 2 * 2, 10))

    def forward(self, x: fg.Tensor) -> fg.Tensor:
        return self.head(self.block2(self.block1(x)))


def train_epoch(model: nn.Module, opt: fg.optim.Optimizer, x: fg.Tensor, y: fg.Tensor, rng: np.random.Generator,
                batch_size: int = DIGITS_BATCH_SIZE, max_steps: Optional[int] = None) -> tuple[float, float]:
    """One pass over ``(x, y)`` in shuffled mini-batches; returns the mean loss and accuracy seen in training."""
    model.train()
    loss_sum, correct, seen = fg.tensor(0.0), fg.tensor(0), 0
    for step, index in enumerate(minibatches(len(x), batch_size, rng)):
        if max_steps is not None and step == max_steps:
            break
        inputs, targets = x[index], y[index]
        logits = model(inputs)
        loss = F.cross_entropy(logits, targets)
        opt.step(loss.backward())  # backward returns {parameter: gradient}; step rebinds the parameters
        loss_sum = loss_sum + loss.detach() * len(index)
        correct = correct + (logits.argmax(1) == targets).sum()
        seen += len(index)
    return loss_sum.item() / seen, correct.item() / seen


def evaluate(model: nn.Module, x: fg.Tensor, y: fg.Tensor) -> tuple[float, float]:
    """Mean cross-entropy and accuracy of ``model`` in eval mode (batch norm's running statistics, no dropout)."""
    model.eval()
    with fg.no_grad():
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        accuracy = (logits.argmax(1) == y).float().mean()
    return loss.item(), accuracy.item()
