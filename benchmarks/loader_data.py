"""The data loader benchmark's dataset, in a module of its own: worker processes import only NumPy to unpickle it.

``AugmentedImages(n)`` holds ``n`` random 28×28 float32 images and integer labels in memory; each
``__getitem__`` runs a typical per-sample Python transform (random shift, random flip, normalisation,
about 10-20 µs), and returns ``(image as a flat float32 array, label as a Python int)``: what both
fgraph's and torch's ``default_collate`` turn into an image batch and a ``long`` label batch.
"""
from __future__ import annotations

import random

import numpy as np

SIDE = 28
N_CLASSES = 10


def augment(image: np.ndarray) -> np.ndarray:
    """Shift by up to 2 pixels each way, flip left-right half the time, normalise; a flat float32 copy."""
    shifted = np.roll(image, (random.randint(-2, 2), random.randint(-2, 2)), axis=(0, 1))
    if random.random() < 0.5:
        shifted = shifted[:, ::-1]
    return ((shifted - 0.5) / 0.25).astype(np.float32).reshape(-1)


class AugmentedImages:
    """A map-style dataset of ``n`` images with a per-sample transform (``transform=False``: the raw images)."""

    def __init__(self, n: int, transform: bool = True, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.images = rng.random((n, SIDE, SIDE), dtype=np.float32)
        self.labels = rng.integers(0, N_CLASSES, n).tolist()
        self.transform = transform

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple:
        image = self.images[index]
        image = augment(image) if self.transform else image.reshape(-1)
        return image, self.labels[index]
