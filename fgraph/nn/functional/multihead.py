"""Multi-head attention, as ``torch.nn.functional.multi_head_attention_forward``.

A composite of fgraph ops (linear, bmm, softmax, dropout, scaled_dot_product_attention),
so every order of derivative works and everything is JAX-traceable: only shapes and
dtypes are inspected, never values.

Semantics follow torch's (non-fast-path) implementation exactly:

* masks: a bool mask marks positions that are *not* attended (``True`` = masked,
  the opposite of ``scaled_dot_product_attention``); it becomes a float mask with
  ``-inf`` there. A float mask is added to the scores. ``key_padding_mask``
  ``(N, S)`` is merged into ``attn_mask`` (``(L, S)`` or ``(N * num_heads, L, S)``);
* ``need_weights=True`` computes the weights explicitly (a query whose keys are all
  masked gets NaN, as torch); ``need_weights=False`` goes through
  ``scaled_dot_product_attention`` (that query gets 0, as torch);
* ``is_causal`` is only a hint: an ``attn_mask`` is still required, and the causal
  mask replaces it only when no key padding mask is given and ``need_weights=False``.

Example:
    >>> import fgraph as fg
    >>> import fgraph.nn.functional as F
    >>> E, H = 4, 2
    >>> x = fg.ones(3, 2, E)                                  # (L, N, E): sequence first
    >>> w_in, w_out = fg.ones(3 * E, E) / E, fg.eye(E)
    >>> out, weights = F.multi_head_attention_forward(x, x, x, E, H, w_in, None, None, None, False, 0.0,
    ...                                               w_out, None)
    >>> out.shape, weights.shape
    ((3, 2, 4), (2, 3, 3))
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Optional

import jax.numpy as jnp
import numpy as np

from fgraph.errors import OpError
from fgraph.nn.functional.activation import softmax
from fgraph.nn.functional.attention import scaled_dot_product_attention
from fgraph.nn.functional.basic import dropout, linear
from fgraph.nn.functional._utils import check_float, check_tensor
from fgraph.ops.elementwise import add, mul
from fgraph.ops.indexing import masked_fill
from fgraph.ops.linalg import bmm
from fgraph.ops.padding import pad
from fgraph.ops.reduction import mean
from fgraph.ops.shape import cat, expand, permute, reshape, transpose, unsqueeze
from fgraph.ops.splitting import chunk, split
from fgraph.tensor import Tensor, zeros_like

__all__ = ["multi_head_attention_forward"]

_OP = "multi_head_attention_forward"


def canonical_mask(mask: Optional[Tensor], mask_name: str, other: Optional[Tensor], other_name: str,
                   target_type: Any, op: str) -> Optional[Tensor]:
    """torch's ``_canonical_mask``: a bool mask becomes a float mask (``-inf`` where ``True``); a float mask is kept.

    Warns (as torch) when ``other`` (the other mask) has a different dtype.
    """
    if mask is None:
        return None
    check_tensor(mask, op, mask_name)
    is_float = bool(jnp.issubdtype(mask.dtype, jnp.floating))
    if mask.dtype != np.bool_ and not is_float:
        raise OpError(
            f"{op}: only bool and floating types of {mask_name} are supported, got dtype {mask.dtype}; "
            f"pass a bool mask (True = not attended) or a float mask (added to the scores)."
        )
    if other is not None and mask.dtype != getattr(other, "dtype", mask.dtype):
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. "
                      "Use same type for both instead.", stacklevel=3)
    if is_float:
        return mask
    return masked_fill(zeros_like(mask, dtype=target_type), mask, -math.inf)


def _shape_check(query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Optional[Tensor],
                 attn_mask: Optional[Tensor], num_heads: int, op: str) -> bool:
    """torch's ``_mha_shape_check``: whether the input is batched, or an error naming the shapes."""
    if query.ndim not in (2, 3):
        raise OpError(f"{op}: query should be unbatched 2D (L, E) or batched 3D tensor but received a "
                      f"{query.ndim}-D query of shape {tuple(query.shape)}.")
    batched = query.ndim == 3
    form = "batched (3-D)" if batched else "unbatched (2-D)"
    if key.ndim != query.ndim or value.ndim != query.ndim:
        raise OpError(f"{op}: for {form} `query`, expected `key` and `value` to be {query.ndim}-D but found "
                      f"shapes {tuple(key.shape)} and {tuple(value.shape)}.")
    if key_padding_mask is not None and key_padding_mask.ndim != query.ndim - 1:
        raise OpError(f"{op}: for {form} `query`, expected `key_padding_mask` to be None or {query.ndim - 1}-D "
                      f"(batch, source length) but found shape {tuple(key_padding_mask.shape)}.")
    if attn_mask is not None:
        if attn_mask.ndim not in (2, 3):
            raise OpError(f"{op}: for {form} `query`, expected `attn_mask` to be None, 2-D (L, S) or 3-D "
                          f"(N * num_heads, L, S) but found shape {tuple(attn_mask.shape)}.")
        if not batched and attn_mask.ndim == 3:
            expected = (num_heads, query.shape[0], key.shape[0])
            if tuple(attn_mask.shape) != expected:
                raise OpError(f"{op}: expected `attn_mask` shape to be {expected} but got {tuple(attn_mask.shape)}.")
    return batched


def _check_weight(w: Optional[Tensor], shape: tuple, what: str, op: str) -> None:
    if w is not None and tuple(w.shape) != shape:
        raise OpError(f"{op}: expecting {what} shape of {shape}, but got {tuple(w.shape)}.")


def _in_projection_packed(q: Tensor, k: Tensor, v: Tensor, w: Tensor, b: Optional[Tensor],
                          op: str) -> tuple[Tensor, Tensor, Tensor]:
    """q, k, v through the packed ``(3E, E)`` weight: one matmul for self-attention, two for k is v."""
    E = q.shape[-1]
    _check_weight(w, (3 * E, E), "in_proj_weight", op)
    _check_weight(b, (3 * E,), "in_proj_bias", op)
    for name, t in (("key", k), ("value", v)):
        if t.shape[-1] != E:
            raise OpError(f"{op}: {name} has embedding size {t.shape[-1]} but query has {E}; with different "
                          f"key/value sizes use separate projection weights (kdim=/vdim=).")
    if k is v:
        if q is k:
            return chunk(linear(q, w, b), 3, dim=-1)
        w_q, w_kv = split(w, [E, 2 * E])
        b_q, b_kv = (None, None) if b is None else split(b, [E, 2 * E])
        k_proj, v_proj = chunk(linear(k, w_kv, b_kv), 2, dim=-1)
        return linear(q, w_q, b_q), k_proj, v_proj
    w_q, w_k, w_v = chunk(w, 3)
    b_q, b_k, b_v = (None, None, None) if b is None else chunk(b, 3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _in_projection(q: Tensor, k: Tensor, v: Tensor, w_q: Tensor, w_k: Tensor, w_v: Tensor,
                   b: Optional[Tensor], op: str) -> tuple[Tensor, Tensor, Tensor]:
    Eq, Ek, Ev = q.shape[-1], k.shape[-1], v.shape[-1]
    _check_weight(w_q, (Eq, Eq), "q_proj_weight", op)
    _check_weight(w_k, (Eq, Ek), "k_proj_weight", op)
    _check_weight(w_v, (Eq, Ev), "v_proj_weight", op)
    _check_weight(b, (3 * Eq,), "in_proj_bias", op)
    b_q, b_k, b_v = (None, None, None) if b is None else chunk(b, 3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _check_static(t: Tensor, name: str, rows: int, head_dim: int, op: str) -> None:
    if t.ndim != 3 or t.shape[0] != rows or t.shape[2] != head_dim:
        raise OpError(f"{op}: expecting {name} of shape ({rows}, S, {head_dim}) (batch * num_heads, source "
                      f"length, head_dim), but got {tuple(t.shape)}.")


def multi_head_attention_forward(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Optional[Tensor],
    in_proj_bias: Optional[Tensor],
    bias_k: Optional[Tensor],
    bias_v: Optional[Tensor],
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: Tensor,
    out_proj_bias: Optional[Tensor],
    training: bool = True,
    key_padding_mask: Optional[Tensor] = None,
    need_weights: bool = True,
    attn_mask: Optional[Tensor] = None,
    use_separate_proj_weight: bool = False,
    q_proj_weight: Optional[Tensor] = None,
    k_proj_weight: Optional[Tensor] = None,
    v_proj_weight: Optional[Tensor] = None,
    static_k: Optional[Tensor] = None,
    static_v: Optional[Tensor] = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
    *,
    rng_key: Any = None,
    _op: str = _OP,
) -> tuple[Tensor, Optional[Tensor]]:
    """Multi-head attention over ``query (L, N, E)``, ``key (S, N, Ek)``, ``value (S, N, Ev)`` (or unbatched).

    Returns ``(attn_output (L, N, E), attn_weights)``; the weights are ``(N, L, S)``
    averaged over heads, ``(N, num_heads, L, S)`` with ``average_attn_weights=False``,
    ``None`` with ``need_weights=False``. Dropout (when ``training``) acts on the
    attention weights and draws from ``rng_key`` (a ``jax.random`` key) or the default
    generator. Unbatched inputs are ``(L, E)``, ``(S, Ek)``, ``(S, Ev)``. See the module docstring for
    masks and ``is_causal``; ``_op`` is the name error messages use (the layer's, when a module calls).

    Example:
        >>> import jax
        >>> import fgraph as fg, fgraph.nn.functional as F
        >>> x = fg.randn(2, 4, key=jax.random.key(0))                  # unbatched (L, E)
        >>> mask = fg.tensor([[False, True], [False, False]])           # query 0 may not see key 1
        >>> out, w = F.multi_head_attention_forward(x, x, x, 4, 2, fg.eye(4).repeat(3, 1), None, None, None,
        ...                                         False, 0.0, fg.eye(4), None, attn_mask=mask)
        >>> out.shape, w.shape, w[0, 1].item()
        ((2, 4), (2, 2), 0.0)
    """
    op = _op
    for name, t in (("query", query), ("key", key), ("value", value)):
        check_float(t, op, name)
    if isinstance(num_heads, bool) or not isinstance(num_heads, int) or num_heads <= 0:
        raise OpError(f"{op}: num_heads must be a positive integer, got {num_heads!r}.")
    batched = _shape_check(query, key, value, key_padding_mask, attn_mask, num_heads, op)
    if not batched:
        query, key, value = map_same(unsqueeze_1, query, key, value)
        if key_padding_mask is not None:
            key_padding_mask = unsqueeze(key_padding_mask, 0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = canonical_mask(key_padding_mask, "key_padding_mask", attn_mask, "attn_mask", query.dtype, op)
    if is_causal and attn_mask is None:
        raise OpError(f"{op}: need attn_mask if specifying the is_causal hint (as torch); make one with "
                      "nn.Transformer.generate_square_subsequent_mask(L).")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the hint alone: scaled_dot_product_attention applies the causal mask
    else:
        attn_mask = canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, op)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise OpError(f"{op}: was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim} "
                      f"(query shape {tuple(query.shape)}).")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise OpError(f"{op}: embed_dim {embed_dim} not divisible by num_heads {num_heads}.")
    if use_separate_proj_weight:
        if key.shape[:2] != value.shape[:2]:
            raise OpError(f"{op}: key's sequence and batch dims {tuple(key.shape[:2])} do not match value's "
                          f"{tuple(value.shape[:2])}.")
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise OpError(f"{op}: use_separate_proj_weight=True needs q_proj_weight, k_proj_weight and v_proj_weight.")
        q, k, v = _in_projection(query, key, value, q_proj_weight, k_proj_weight, v_proj_weight, in_proj_bias, op)
    else:
        if key.shape != value.shape:
            raise OpError(f"{op}: key shape {tuple(key.shape)} does not match value shape {tuple(value.shape)}.")
        if in_proj_weight is None:
            raise OpError(f"{op}: use_separate_proj_weight is False but in_proj_weight is None.")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias, op)

    if attn_mask is not None:
        if attn_mask.ndim == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise OpError(f"{op}: the shape of the 2D attn_mask is {tuple(attn_mask.shape)}, but should be "
                              f"{(tgt_len, src_len)} (target length, source length).")
            attn_mask = unsqueeze(attn_mask, 0)
        elif tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
            raise OpError(f"{op}: the shape of the 3D attn_mask is {tuple(attn_mask.shape)}, but should be "
                          f"{(bsz * num_heads, tgt_len, src_len)} (batch * num_heads, target length, source length).")

    if (bias_k is None) != (bias_v is None):
        raise OpError(f"{op}: bias_k and bias_v must be given together (add_bias_kv), got only one of them.")
    if bias_k is not None:
        if static_k is not None or static_v is not None:
            raise OpError(f"{op}: bias cannot be added to static key or value (static_k/static_v).")
        k = cat([k, expand(bias_k, 1, bsz, embed_dim)])
        v = cat([v, expand(bias_v, 1, bsz, embed_dim)])
        attn_mask = _pad_last(attn_mask)
        key_padding_mask = _pad_last(key_padding_mask)

    # heads into the batch dimension: (bsz * num_heads, length, head_dim)
    q = transpose(reshape(q, tgt_len, bsz * num_heads, head_dim), 0, 1)
    if static_k is None:
        k = transpose(reshape(k, k.shape[0], bsz * num_heads, head_dim), 0, 1)
    else:
        _check_static(static_k, "static_k", bsz * num_heads, head_dim, op)
        k = static_k
    if static_v is None:
        v = transpose(reshape(v, v.shape[0], bsz * num_heads, head_dim), 0, 1)
    else:
        _check_static(static_v, "static_v", bsz * num_heads, head_dim, op)
        v = static_v

    if add_zero_attn:
        k = pad(k, (0, 0, 0, 1))   # one more key and value, all zeros
        v = pad(v, (0, 0, 0, 1))
        attn_mask = _pad_last(attn_mask)
        key_padding_mask = _pad_last(key_padding_mask)
    src_len = k.shape[1]

    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise OpError(f"{op}: expected key_padding_mask of shape {(bsz, src_len)} (batch, source length"
                          f"{' + added keys' if bias_k is not None or add_zero_attn else ''}), but got "
                          f"{tuple(key_padding_mask.shape)}.")
        key_padding_mask = reshape(expand(reshape(key_padding_mask, bsz, 1, 1, src_len), bsz, num_heads, 1, src_len),
                                   bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else add(attn_mask, key_padding_mask)

    if not training:
        dropout_p = 0.0

    if need_weights:
        scores = bmm(mul(q, math.sqrt(1.0 / float(head_dim))), transpose(k, -2, -1))
        if attn_mask is not None:
            scores = add(attn_mask, scores)
        weights = softmax(scores, dim=-1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p, key=rng_key)
        out = reshape(transpose(bmm(weights, v), 0, 1), tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias)
        out = reshape(out, tgt_len, bsz, out.shape[1])
        weights = reshape(weights, bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = mean(weights, dim=1)
        if not batched:
            out, weights = reshape(out, tgt_len, out.shape[-1]), reshape(weights, *weights.shape[1:])
        return out, weights

    if attn_mask is not None:
        if attn_mask.shape[0] == 1:
            attn_mask = unsqueeze(attn_mask, 0)
        else:
            attn_mask = reshape(attn_mask, bsz, num_heads, -1, src_len)
    q = reshape(q, bsz, num_heads, tgt_len, head_dim)
    k = reshape(k, bsz, num_heads, src_len, head_dim)
    v = reshape(v, bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, rng_key=rng_key)
    out = reshape(permute(out, 2, 0, 1, 3), bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias)
    out = reshape(out, tgt_len, bsz, out.shape[1])
    if not batched:
        out = reshape(out, tgt_len, out.shape[-1])
    return out, None


def map_same(fn: Any, query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """``fn`` applied to query, key and value, keeping which of them are the same tensor (self-attention)."""
    q = fn(query)
    k = q if key is query else fn(key)
    v = k if value is key else q if value is query else fn(value)
    return q, k, v


def unsqueeze_1(t: Tensor) -> Tensor:
    return unsqueeze(t, 1)


def transpose_01(t: Tensor) -> Tensor:
    return transpose(t, 0, 1)


def _pad_last(mask: Optional[Tensor]) -> Optional[Tensor]:
    """A float mask with one more key (attended: 0) at the end."""
    return None if mask is None else pad(mask, (0, 1))
