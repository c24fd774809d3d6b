"""Helpers shared by the distributions: broadcasting parameters, logits and probabilities, noise.

Named as in ``torch.distributions.utils``. Every helper is built from fgraph ops, so
whatever it returns is differentiable and traceable.

Example:
    >>> import fgraph as fg
    >>> from fgraph.distributions.utils import broadcast_all, probs_to_logits
    >>> loc, scale = broadcast_all(fg.zeros(3), 1.0)
    >>> scale.shape
    (3,)
    >>> [round(v, 4) for v in probs_to_logits(fg.tensor([0.5, 0.25]), is_binary=True).tolist()]
    [0.0, -1.0986]
"""
from __future__ import annotations

import functools
from numbers import Number
from typing import Any, Callable, Optional, Sequence

import jax
import numpy as np

import fgraph as fg
from fgraph._dtypes import x64_enabled
from fgraph.random import Generator
from fgraph.tensor import Tensor

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property",
           "tril_matrix_to_vec", "vec_to_tril_matrix", "euler_constant"]

euler_constant = 0.57721566490153286060  # the Euler-Mascheroni constant

Key = Any  # a JAX PRNG key


def _is_number(v: Any) -> bool:
    return isinstance(v, (Number, np.number)) and not isinstance(v, bool)


def broadcast_all(*values: Any) -> tuple:
    """Broadcast Tensors and Python numbers to one shape; numbers take the first Tensor's dtype.

    With no Tensor among ``values`` every number becomes a 0-d Tensor of the default dtype,
    as in torch.
    """
    if not all(isinstance(v, Tensor) or _is_number(v) for v in values):
        kinds = ", ".join(type(v).__name__ for v in values)
        raise ValueError("Input arguments must all be instances of numbers.Number or fgraph.Tensor "
                         f"(got {kinds}); wrap arrays with fg.tensor(...).")
    dtype = next((v.dtype for v in values if isinstance(v, Tensor)), fg.get_default_dtype())
    tensors = [v if isinstance(v, Tensor) else fg.tensor(v, dtype=dtype) for v in values]
    shape = fg.broadcast_shapes(*[t.shape for t in tensors])
    return tuple(t if t.shape == shape else t.expand(shape) for t in tensors)


def as_float(value: Any, like: Optional[Tensor] = None) -> Tensor:
    """A parameter as a floating Tensor (numbers take ``like``'s dtype, else the default dtype)."""
    if isinstance(value, Tensor):
        return value if fg.is_floating_point(value) else value.to(fg.get_default_dtype())
    dtype = like.dtype if like is not None else fg.get_default_dtype()
    return fg.tensor(value, dtype=dtype)


def sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """Sum out the ``dim`` rightmost dimensions of ``value``."""
    if dim == 0:
        return value
    return value.reshape(value.shape[: value.dim() - dim] + (-1,)).sum(-1)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Log-odds to probabilities (binary), or unnormalised log-probabilities over the last dim to a softmax."""
    if is_binary:
        return fg.sigmoid(logits)
    return fg.softmax(logits, dim=-1)


def clamp_probs(probs: Tensor) -> Tensor:
    """Clamp probabilities into ``[eps, 1 - eps]`` for their dtype's ``eps``."""
    eps = float(fg.finfo(probs.dtype).eps)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities to log-odds (binary) or to log-probabilities (categorical); probabilities are clamped first."""
    clamped = clamp_probs(probs)
    if is_binary:
        return fg.log(clamped) - fg.log1p(-clamped)
    return fg.log(clamped)


class lazy_property:
    """A property computed on first access and then stored on the instance (``probs`` from ``logits``, ...).

    As torch's: the value is computed with grad mode on, so a parameter derived lazily
    inside ``fg.no_grad()`` still carries its graph.
    """

    def __init__(self, wrapped: Callable) -> None:
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is None:
            return self
        with fg.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The lower-triangular entries (from diagonal ``diag`` down) of ``(..., n, n)`` matrices, in row order."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"tril_matrix_to_vec: diag ({diag}) must be in [{-n}, {n - 1}] for {n} x {n} matrices.")
    rows, cols = np.tril_indices(n, k=diag)
    return mat[..., fg.tensor(rows), fg.tensor(cols)]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The inverse of :func:`tril_matrix_to_vec`: ``(..., m)`` vectors to ``(..., n, n)`` lower-triangular matrices."""
    m = vec.shape[-1]
    n = int(round((-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2))
    rows, cols = np.tril_indices(n, k=diag)
    if len(rows) != m:
        raise ValueError(f"vec_to_tril_matrix: the last dim ({m}) is not the size of a triangle with diag={diag}.")
    flat = np.ravel_multi_index((rows, cols), (n, n))
    # a fixed gather from [vec, 0]: every entry above the triangle reads the appended zero
    source = np.full(n * n, m, dtype=np.int32)
    source[flat] = np.arange(m)
    padded = fg.cat([vec, fg.zeros(vec.shape[:-1] + (1,), dtype=vec.dtype)], dim=-1)
    return padded[..., fg.tensor(source)].reshape(vec.shape[:-1] + (n, n))


def long_dtype() -> Any:
    """torch's ``long``: int64 with JAX's 64-bit mode on, else int32 (the widest integer JAX then allows)."""
    return fg.int64 if x64_enabled() else fg.int32


# -- noise ----------------------------------------------------------------------------------------------------------
def standard_normal(shape: Sequence[int], dtype: Any, key: Optional[Key], generator: Optional[Generator]) -> Tensor:
    """``N(0, 1)`` noise of ``shape`` (a leaf: gradients flow through what the caller builds on it)."""
    return fg.randn(tuple(shape), dtype=dtype, key=key, generator=generator)


def uniform_open(shape: Sequence[int], dtype: Any, key: Optional[Key], generator: Optional[Generator]) -> Tensor:
    """``U(tiny, 1)`` noise: never exactly 0, so ``log(u)`` is finite (torch draws ``uniform_(tiny, 1)``)."""
    tiny = float(fg.finfo(dtype).tiny)
    return fg.rand(tuple(shape), dtype=dtype, key=key, generator=generator).clamp(min=tiny)


def split_key(key: Optional[Key], n: int) -> list:
    """``n`` keys from one (a sampler that draws several times), or ``n`` ``None``s without one."""
    if key is None:
        return [None] * n
    return list(jax.random.split(key, n))
