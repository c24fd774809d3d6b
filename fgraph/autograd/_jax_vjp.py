"""``jax.vjp`` (and ``jax.jvp``) of a flat JAX program, as another flat JAX program (for ops whose rule is
JAX's AD).

Shared by :func:`interop.from_jax` and the fused ``create_graph`` passes of
:mod:`fgraph.autograd.fused_create_graph`: a program ``fn(*xs) -> tuple`` becomes
``Vjp(fn, float_in, float_out, n)(*xs, *cts) -> cotangents of xs[float_in]``, which is itself
such a program, so it can be differentiated again.

The cotangents are in PyTorch's convention for complex numbers, as everywhere in fgraph's
engine: for complex arrays that is ``conj(jax.vjp(conj(ct)))`` (see :mod:`fgraph.ops._declare`).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp

__all__: list = []


class Vjp:
    """``(*xs, *cts) -> cotangents of xs[float_in]`` by ``jax.vjp`` of ``fn`` (outputs ``float_out`` only)."""

    __slots__ = ("fn", "float_in", "float_out", "n", "__weakref__")

    def __init__(self, fn: Callable, float_in: tuple, float_out: tuple, n: int) -> None:
        self.fn, self.float_in, self.float_out, self.n = fn, float_in, float_out, n

    def __call__(self, *args: Any) -> tuple:
        xs, cts = args[: self.n], args[self.n:]
        _, pullback = jax.vjp(Restricted(self.fn, xs, self.float_in, self.float_out),
                              *[xs[i] for i in self.float_in])
        return tuple(map(jnp.conj, pullback(tuple(map(jnp.conj, cts)))))  # conj of a real array: itself


class Jvp:
    """``(*xs, *tangents of xs[float_in]) -> tangents of the outputs float_out`` by ``jax.jvp`` of ``fn``."""

    __slots__ = ("fn", "float_in", "float_out", "n", "__weakref__")

    def __init__(self, fn: Callable, float_in: tuple, float_out: tuple, n: int) -> None:
        self.fn, self.float_in, self.float_out, self.n = fn, float_in, float_out, n

    def __call__(self, *args: Any) -> tuple:
        xs, tangents = args[: self.n], args[self.n:]
        _, out = jax.jvp(Restricted(self.fn, xs, self.float_in, self.float_out),
                         tuple(xs[i] for i in self.float_in), tuple(tangents))
        return tuple(out)


class Restricted:
    """``fn`` as a function of its inputs ``float_in`` only, returning its outputs ``float_out`` only."""

    __slots__ = ("fn", "xs", "float_in", "float_out")

    def __init__(self, fn: Callable, xs: Sequence, float_in: tuple, float_out: tuple) -> None:
        self.fn, self.xs, self.float_in, self.float_out = fn, xs, float_in, float_out

    def __call__(self, *floats: Any) -> tuple:
        full = list(self.xs)
        for i, v in zip(self.float_in, floats):
            full[i] = v
        outs = self.fn(*full)
        return tuple(outs[j] for j in self.float_out)
