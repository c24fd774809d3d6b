"""Transformer layers with PyTorch's signatures, submodule names, masks and (non-fast-path) forward.

``TransformerEncoderLayer``/``TransformerDecoderLayer`` are the post-norm (default) or
pre-norm (``norm_first=True``) blocks of self-attention (and cross-attention), a
feed-forward network, residual connections, ``LayerNorm`` and dropout;
``TransformerEncoder``/``TransformerDecoder`` stack deep copies of a layer, and
``Transformer`` is the full encoder-decoder model.

Masks follow :class:`~fgraph.nn.MultiheadAttention`: bool masks mark positions that
are *not* attended, float masks are added to the attention scores. ``is_causal`` is a
hint that still needs the mask (``Transformer.generate_square_subsequent_mask``).
Torch's inference fast paths (nested tensors, fused kernels) compute the same numbers
and are not reproduced; everything stays JAX-traceable.

Example:
    >>> import fgraph as fg
    >>> from fgraph import nn
    >>> layer = nn.TransformerEncoderLayer(d_model=4, nhead=2, dim_feedforward=8, batch_first=True)
    >>> encoder = nn.TransformerEncoder(layer, num_layers=2)
    >>> src = fg.randn(2, 3, 4)                                   # (batch, sequence, d_model)
    >>> mask = nn.Transformer.generate_square_subsequent_mask(3)
    >>> encoder(src, mask=mask).shape
    (2, 3, 4)
"""
from __future__ import annotations

import copy
import math
from typing import Any, Callable, Optional, Union

from fgraph.nn import functional as F
from fgraph.nn import init
from fgraph.nn.functional.multihead import canonical_mask
from fgraph.nn.modules.activation import GELU, ReLU
from fgraph.nn.modules.attention import MultiheadAttention, check_dropout
from fgraph.nn.modules.container import ModuleList
from fgraph.nn.modules.dropout import Dropout
from fgraph.nn.modules.linear import Linear
from fgraph.nn.modules.module import Module
from fgraph.nn.modules.normalization import LayerNorm
from fgraph.ops.triangular import triu
from fgraph.tensor import Tensor, full

__all__ = ["Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
           "TransformerDecoderLayer"]

Activation = Union[str, Callable[[Tensor], Tensor]]


def _get_activation_fn(activation: Activation, op: str) -> Callable[[Tensor], Tensor]:
    if isinstance(activation, str):
        if activation == "relu":
            return F.relu
        if activation == "gelu":
            return F.gelu
        raise ValueError(f"{op}: activation should be relu/gelu, not {activation!r} (or pass a callable).")
    if not callable(activation):
        raise TypeError(f"{op}: activation must be 'relu', 'gelu' or a callable, got {type(activation).__name__}.")
    return activation


def _get_clones(module: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _canonical_pair(mask: Optional[Tensor], mask_name: str, padding: Optional[Tensor], padding_name: str,
                    target_type: Any, op: str) -> tuple[Optional[Tensor], Optional[Tensor]]:
    """Both masks as float masks (torch converts the padding mask first, warning on mismatched dtypes)."""
    padding = canonical_mask(padding, padding_name, mask, mask_name, target_type, op)
    return canonical_mask(mask, mask_name, None, "", target_type, op), padding


class TransformerEncoderLayer(Module):
    """Self-attention and feed-forward block: ``x = norm1(x + sa(x)); x = norm2(x + ff(x))``.

    With ``norm_first=True``: ``x = x + sa(norm1(x)); x = x + ff(norm2(x))``. ``ff`` is
    ``linear2(dropout(activation(linear1(x))))``; ``activation`` is ``"relu"``,
    ``"gelu"`` or any callable (a Module is registered as the submodule
    ``activation``). Dropout draws from the default generator in training mode.

    ``forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False)``.

    Example:
        >>> import fgraph as fg
        >>> layer = fg.nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0, activation="gelu")
        >>> layer(fg.randn(3, 2, 4), src_key_padding_mask=fg.tensor([[False, False, True]] * 2)).shape
        (3, 2, 4)
        >>> [name for name, _ in layer.named_children()][:4]
        ['self_attn', 'linear1', 'dropout', 'linear2']
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: Activation = F.relu, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        op = type(self).__name__
        check_dropout(dropout, op)
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            device=device, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, device=device, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, device=device, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        activation = _get_activation_fn(activation, op)
        if activation is F.relu or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif activation is F.gelu or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def forward(self, src: Tensor, src_mask: Optional[Tensor] = None,
                src_key_padding_mask: Optional[Tensor] = None, is_causal: bool = False) -> Tensor:
        src_mask, src_key_padding_mask = _canonical_pair(src_mask, "src_mask", src_key_padding_mask,
                                                         "src_key_padding_mask", src.dtype, type(self).__name__)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, attn_mask: Optional[Tensor], key_padding_mask: Optional[Tensor],
                  is_causal: bool = False) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerDecoderLayer(Module):
    """Self-attention, cross-attention over ``memory`` and feed-forward, each with a residual and ``LayerNorm``.

    Post-norm by default (``x = norm1(x + sa(x)); x = norm2(x + mha(x, memory));
    x = norm3(x + ff(x))``), pre-norm with ``norm_first=True``.

    ``forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False)``.

    Example:
        >>> import fgraph as fg
        >>> layer = fg.nn.TransformerDecoderLayer(4, 2, dim_feedforward=8, batch_first=True)
        >>> tgt, memory = fg.randn(2, 3, 4), fg.randn(2, 5, 4)
        >>> layer(tgt, memory, tgt_mask=fg.nn.Transformer.generate_square_subsequent_mask(3)).shape
        (2, 3, 4)
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: Activation = F.relu, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        op = type(self).__name__
        check_dropout(dropout, op)
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias,
                                            device=device, dtype=dtype)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first,
                                                 bias=bias, device=device, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, device=device, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, device=device, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device, dtype=dtype)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _get_activation_fn(activation, op)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Optional[Tensor] = None,
                memory_mask: Optional[Tensor] = None, tgt_key_padding_mask: Optional[Tensor] = None,
                memory_key_padding_mask: Optional[Tensor] = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, attn_mask: Optional[Tensor], key_padding_mask: Optional[Tensor],
                  is_causal: bool = False) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=is_causal,
                           need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x: Tensor, mem: Tensor, attn_mask: Optional[Tensor], key_padding_mask: Optional[Tensor],
                   is_causal: bool = False) -> Tensor:
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                is_causal=is_causal, need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


def _check_layers(num_layers: Any, op: str) -> int:
    if isinstance(num_layers, bool) or not isinstance(num_layers, int) or num_layers < 0:
        raise ValueError(f"{op}: num_layers must be a non-negative integer, got {num_layers!r}.")
    return num_layers


class TransformerEncoder(Module):
    """A stack of ``num_layers`` deep copies of ``encoder_layer`` (``layers``), then ``norm`` if given.

    ``forward(src, mask=None, src_key_padding_mask=None, is_causal=None)``. Torch
    compares ``mask`` with a causal mask when ``is_causal`` is ``None``; that is only a
    hint with the same result, so here ``None`` means ``False`` (no look at the values).
    ``enable_nested_tensor`` and ``mask_check`` are accepted for torch's signature
    (fgraph has no nested tensors: ``use_nested_tensor`` is ``False``).

    Example:
        >>> import fgraph as fg
        >>> layer = fg.nn.TransformerEncoderLayer(4, 2, dim_feedforward=8)
        >>> encoder = fg.nn.TransformerEncoder(layer, 2, norm=fg.nn.LayerNorm(4))
        >>> encoder.layers[0].linear1.weight is encoder.layers[1].linear1.weight
        False
        >>> encoder(fg.randn(3, 2, 4)).shape
        (3, 2, 4)
    """

    def __init__(self, encoder_layer: Module, num_layers: int, norm: Optional[Module] = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _get_clones(encoder_layer, _check_layers(num_layers, "TransformerEncoder"))
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False
        self.mask_check = mask_check

    def forward(self, src: Tensor, mask: Optional[Tensor] = None, src_key_padding_mask: Optional[Tensor] = None,
                is_causal: Optional[bool] = None) -> Tensor:
        mask, src_key_padding_mask = _canonical_pair(mask, "mask", src_key_padding_mask, "src_key_padding_mask",
                                                     src.dtype, "TransformerEncoder")
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, is_causal=bool(is_causal),
                           src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoder(Module):
    """A stack of ``num_layers`` deep copies of ``decoder_layer`` (``layers``), then ``norm`` if given.

    ``forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False)``;
    ``tgt_is_causal=None`` means ``False`` (see :class:`TransformerEncoder`).

    Example:
        >>> import fgraph as fg
        >>> decoder = fg.nn.TransformerDecoder(fg.nn.TransformerDecoderLayer(4, 2, dim_feedforward=8), 2)
        >>> decoder(fg.randn(3, 2, 4), fg.randn(5, 2, 4)).shape
        (3, 2, 4)
    """

    def __init__(self, decoder_layer: Module, num_layers: int, norm: Optional[Module] = None) -> None:
        super().__init__()
        self.layers = _get_clones(decoder_layer, _check_layers(num_layers, "TransformerDecoder"))
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Optional[Tensor] = None,
                memory_mask: Optional[Tensor] = None, tgt_key_padding_mask: Optional[Tensor] = None,
                memory_key_padding_mask: Optional[Tensor] = None, tgt_is_causal: Optional[bool] = None,
                memory_is_causal: bool = False) -> Tensor:
        output = tgt
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=bool(tgt_is_causal),
                           memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """The encoder-decoder model of "Attention Is All You Need" (``encoder``, ``decoder``, each with a final norm).

    Every parameter with more than one dimension is re-initialised with
    ``xavier_uniform_``, as torch. ``forward(src, tgt, src_mask=None, tgt_mask=None,
    memory_mask=None, src_key_padding_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
    memory_is_causal=False)``.

    Example:
        >>> import fgraph as fg
        >>> model = fg.nn.Transformer(d_model=4, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
        ...                           dim_feedforward=8, batch_first=True)
        >>> src, tgt = fg.randn(2, 5, 4), fg.randn(2, 3, 4)
        >>> model(src, tgt, tgt_mask=model.generate_square_subsequent_mask(3)).shape
        (2, 3, 4)
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: Activation = F.relu, custom_encoder: Optional[Module] = None,
                 custom_decoder: Optional[Module] = None, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                                            batch_first, norm_first, bias, device=device, dtype=dtype)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device, dtype=dtype)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                                            batch_first, norm_first, bias, device=device, dtype=dtype)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device, dtype=dtype)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Optional[Tensor] = None, tgt_mask: Optional[Tensor] = None,
                memory_mask: Optional[Tensor] = None, src_key_padding_mask: Optional[Tensor] = None,
                tgt_key_padding_mask: Optional[Tensor] = None, memory_key_padding_mask: Optional[Tensor] = None,
                src_is_causal: Optional[bool] = None, tgt_is_causal: Optional[bool] = None,
                memory_is_causal: bool = False) -> Tensor:
        if src.ndim == 3:
            batch_dim = 0 if self.batch_first else 1
            if src.shape[batch_dim] != tgt.shape[batch_dim]:
                raise ValueError(f"Transformer: the batch number of src and tgt must be equal, got src "
                                 f"{tuple(src.shape)} and tgt {tuple(tgt.shape)} (batch_first={self.batch_first}).")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ValueError(f"Transformer: the feature number of src and tgt must be equal to d_model "
                             f"({self.d_model}), got src {tuple(src.shape)} and tgt {tuple(tgt.shape)}.")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
        """The ``(sz, sz)`` float causal mask: ``-inf`` above the diagonal (later positions), ``0`` elsewhere.

        Example:
            >>> import fgraph as fg
            >>> fg.nn.Transformer.generate_square_subsequent_mask(2).tolist()
            [[0.0, -inf], [0.0, 0.0]]
        """
        mask = triu(full((sz, sz), -math.inf, dtype=dtype), diagonal=1)
        return mask if device is None else mask.to(device)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)
