"""Scaled dot-product attention, as ``torch.nn.functional.scaled_dot_product_attention``.

A composite of fgraph ops (matmul, softmax, masked_fill, dropout), so every order of
derivative works.

Example:
    >>> import fgraph as fg
    >>> import fgraph.nn.functional as F
    >>> q = k = v = fg.ones((1, 2, 3))
    >>> F.scaled_dot_product_attention(q, k, v).tolist()
    [[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]]
"""
from __future__ import annotations

import functools
import math
from typing import Any, Optional

import jax
import numpy as np

from fgraph._numbers import _at_top_level
from fgraph.errors import OpError
from fgraph.nn.functional._utils import check_float, check_tensor
from fgraph.nn.functional.activation import softmax
from fgraph.nn.functional.basic import dropout
from fgraph.ops.elementwise import add, eq, logical_not, mul
from fgraph.ops.indexing import masked_fill
from fgraph.ops.linalg import matmul
from fgraph.ops.reduction_minmax import all as all_
from fgraph.ops.shape import transpose
from fgraph.ops.movement import repeat_interleave
from fgraph.tensor import Tensor, tensor
from fgraph.amp.autocast_mode import autocast_policy

__all__ = ["scaled_dot_product_attention"]


def _later_keys(queries: int, keys: int) -> Tensor:
    """``is_causal``'s masked positions: key ``j`` after query ``i`` (``j > i``), as torch's ``tril`` mask.
    Eagerly made once per shape (and default device): a host-to-device copy per call cost a GPT step ~0.1 ms
    a layer. Inside a trace (``fg.compile``) it is made afresh, a constant of the program: an array made
    there belongs to that trace and must not outlive it."""
    if not _at_top_level():
        return _mask(queries, keys)
    return _cached_mask(queries, keys, jax.config.jax_default_device)


def _mask(queries: int, keys: int) -> Tensor:
    return tensor(np.triu(np.ones((queries, keys), dtype=bool), k=1))


@functools.lru_cache(maxsize=32)
def _cached_mask(queries: int, keys: int, default_device: Any) -> Tensor:
    return _mask(queries, keys)

TENSOR_METHODS: dict = {}


@autocast_policy("scaled_dot_product_attention")
def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Optional[Tensor] = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: Optional[float] = None,
                                 enable_gqa: bool = False, *, rng_key: Any = None) -> Tensor:
    """``softmax(query @ key^T * scale + mask) @ value`` over ``(..., L, E)``, ``(..., S, E)``, ``(..., S, Ev)``.

    ``attn_mask``: bool (True = takes part, as torch) or float (added to the scores),
    broadcastable to ``(..., L, S)``; a query whose keys are all masked gets output 0 (torch's
    safe softmax), not NaN. ``is_causal`` masks keys after each query
    (upper-left aligned, as torch). ``scale`` defaults to ``1 / sqrt(E)``. Dropout on the
    attention weights uses ``rng_key`` (a ``jax.random`` key) or the default generator.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> q = fg.tensor([[1.0, 0.0]]); k = fg.tensor([[1.0, 0.0], [0.0, 1.0]]); v = fg.tensor([[1.0], [3.0]])
    >>> F.scaled_dot_product_attention(q, k, v, is_causal=True).tolist()
    [[1.0]]
    """
    op = "scaled_dot_product_attention"
    for name, t in (("query", query), ("key", key), ("value", value)):
        check_float(t, op, name)
        if t.ndim < 2:
            raise OpError(f"{op}: '{name}' must have at least 2 dims (..., seq, embed), got shape {tuple(t.shape)}.")
    if query.shape[-1] != key.shape[-1]:
        raise OpError(
            f"{op}: query and key must have the same embedding size, got query {tuple(query.shape)} and "
            f"key {tuple(key.shape)}."
        )
    if key.shape[-2] != value.shape[-2]:
        raise OpError(
            f"{op}: key and value must have the same sequence length, got key {tuple(key.shape)} and "
            f"value {tuple(value.shape)}."
        )
    if attn_mask is not None and is_causal:
        raise OpError(f"{op}: pass either attn_mask or is_causal=True, not both (as torch).")
    if enable_gqa and query.ndim >= 3 and key.ndim >= 3 and query.shape[-3] != key.shape[-3]:
        hq, hk = query.shape[-3], key.shape[-3]
        if hk == 0 or hq % hk or value.shape[-3] != hk:
            raise OpError(f"{op}: enable_gqa needs query heads {hq} divisible by key/value heads {hk}.")
        key = repeat_interleave(key, hq // hk, dim=-3)
        value = repeat_interleave(value, hq // hk, dim=-3)
    L, S = query.shape[-2], key.shape[-2]
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1]) if query.shape[-1] else 1.0
    scores = mul(matmul(query, transpose(key, -2, -1)), float(scale))
    if is_causal:  # every query sees at least its own position: no row is all masked, no NaN to guard against
        weights = softmax(masked_fill(scores, _later_keys(L, S), -math.inf), dim=-1)
        if dropout_p > 0.0:
            weights = dropout(weights, dropout_p, training=True, key=rng_key)
        return matmul(weights, value)
    if attn_mask is not None:
        check_tensor(attn_mask, op, "attn_mask")
        if attn_mask.dtype == np.bool_:
            scores = masked_fill(scores, logical_not(attn_mask), -math.inf)
        else:
            scores = add(scores, attn_mask)
        # torch's safe softmax: a query whose keys are all masked (every score -inf) gets zero weights, not
        # NaN; its scores are zeroed first so that no NaN reaches the gradients of the other rows either.
        masked_row = all_(eq(scores, -math.inf), dim=-1, keepdim=True)
        scores = masked_fill(scores, masked_row, 0.0)
    weights = softmax(scores, dim=-1)
    if attn_mask is not None:
        weights = masked_fill(weights, masked_row, 0.0)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, training=True, key=rng_key)
    return matmul(weights, value)
