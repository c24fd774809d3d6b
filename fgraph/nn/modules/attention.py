"""``MultiheadAttention``: PyTorch's multi-head attention layer (parameters, names, init and forward).

A thin module over :func:`fgraph.nn.functional.multi_head_attention_forward`, which
documents the mask semantics. Like every fgraph layer it is JAX-traceable; torch's
inference fast path (``torch._native_multi_head_attention``) is an optimisation with
the same numbers and is not reproduced.

Example:
    >>> import fgraph as fg
    >>> from fgraph import nn
    >>> mha = nn.MultiheadAttention(embed_dim=4, num_heads=2, batch_first=True)
    >>> x = fg.randn(2, 3, 4)                                   # (batch, sequence, embedding)
    >>> out, weights = mha(x, x, x)
    >>> out.shape, weights.shape
    ((2, 3, 4), (2, 3, 3))
    >>> [name for name, _ in mha.named_parameters()]
    ['in_proj_weight', 'in_proj_bias', 'out_proj.weight', 'out_proj.bias']
"""
from __future__ import annotations

from typing import Any, Optional

from fgraph.nn import init
from fgraph.nn.functional._utils import check_float
from fgraph.nn.functional.multihead import canonical_mask, map_same, multi_head_attention_forward, transpose_01
from fgraph.nn.modules._factory import check_positive_int, empty_parameter
from fgraph.nn.modules.linear import Linear
from fgraph.nn.modules.module import Module
from fgraph.tensor import Tensor

__all__ = ["MultiheadAttention"]


class NonDynamicallyQuantizableLinear(Linear):
    """``Linear`` under torch's name for ``MultiheadAttention.out_proj`` (so ``repr`` matches torch's)."""


def check_dropout(p: Any, op: str) -> float:
    """``p`` as a probability, or a ``ValueError`` naming the layer (as ``nn.Dropout``)."""
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p!r}.")
    return p


class MultiheadAttention(Module):
    """Attention over ``num_heads`` heads: ``out_proj(concat_h softmax(q_h k_h^T / sqrt(d) + mask) v_h)``.

    Torch's parameters: ``in_proj_weight`` ``(3E, E)`` (or ``q_proj_weight``,
    ``k_proj_weight``, ``v_proj_weight`` when ``kdim``/``vdim`` differ from ``E``),
    ``in_proj_bias`` ``(3E,)``, ``out_proj`` (a Linear), ``bias_k``/``bias_v``
    ``(1, 1, E)`` with ``add_bias_kv``. Initialisation as torch: ``xavier_uniform_`` on
    the in-projections, zeros for both biases, ``xavier_normal_`` for ``bias_k``/``bias_v``.

    ``forward(query, key, value, key_padding_mask=None, need_weights=True,
    attn_mask=None, average_attn_weights=True, is_causal=False)`` returns
    ``(attn_output, attn_weights or None)``; inputs are ``(L, N, E)``, ``(N, L, E)``
    with ``batch_first=True``, or unbatched ``(L, E)``. Bool masks mark positions that
    are *not* attended. Dropout acts on the attention weights in training mode and
    draws from the default generator (``fg.manual_seed``).

    Example:
        >>> import fgraph as fg
        >>> mha = fg.nn.MultiheadAttention(4, 2, kdim=3, vdim=5)
        >>> q, k, v = fg.ones(2, 1, 4), fg.ones(6, 1, 3), fg.ones(6, 1, 5)   # (L, N, E), (S, N, kdim), (S, N, vdim)
        >>> causal = fg.tensor([[False, True, True, True, True, True]] * 2)  # True: not attended
        >>> out, w = mha(q, k, v, attn_mask=causal, average_attn_weights=False)
        >>> out.shape, w.shape, w[0, 0, 0, 1].item()
        ((2, 1, 4), (1, 2, 2, 6), 0.0)
        >>> mha
        MultiheadAttention(
          (out_proj): NonDynamicallyQuantizableLinear(in_features=4, out_features=4, bias=True)
        )
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: Optional[int] = None,
                 vdim: Optional[int] = None, batch_first: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        op = "MultiheadAttention"
        if isinstance(embed_dim, int) and isinstance(num_heads, int) and (embed_dim <= 0 or num_heads <= 0):
            raise ValueError(f"{op}: embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} "
                             f"and num_heads={num_heads} instead.")
        check_positive_int(embed_dim, "embed_dim", op)
        check_positive_int(num_heads, "num_heads", op)
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = check_positive_int(kdim, "kdim", op) if kdim is not None else embed_dim
        self.vdim = check_positive_int(vdim, "vdim", op) if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = check_dropout(dropout, op)
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise ValueError(f"{op}: embed_dim must be divisible by num_heads, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads}.")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = empty_parameter((embed_dim, embed_dim), dtype, device, op)
            self.k_proj_weight = empty_parameter((embed_dim, self.kdim), dtype, device, op)
            self.v_proj_weight = empty_parameter((embed_dim, self.vdim), dtype, device, op)
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = empty_parameter((3 * embed_dim, embed_dim), dtype, device, op)
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = empty_parameter((3 * embed_dim,), dtype, device, op)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        if add_bias_kv:
            self.bias_k = empty_parameter((1, 1, embed_dim), dtype, device, op)
            self.bias_v = empty_parameter((1, 1, embed_dim), dtype, device, op)
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """Torch's initialisation (the default generator)."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Optional[Tensor] = None,
                need_weights: bool = True, attn_mask: Optional[Tensor] = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Optional[Tensor]]:
        op = "MultiheadAttention"
        check_float(query, op, "query")
        key_padding_mask = canonical_mask(key_padding_mask, "key_padding_mask", attn_mask, "attn_mask",
                                          query.dtype, op)
        attn_mask = canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, op)
        batched = query.ndim == 3
        if self.batch_first and batched:
            query, key, value = map_same(transpose_01, query, key, value)
        out, weights = multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
            self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal, _op=op,
        )
        if self.batch_first and batched:
            out = transpose_01(out)
        return out, weights
