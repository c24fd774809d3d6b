"""Embedding layers: ``Embedding`` and ``EmbeddingBag`` (PyTorch's arguments, initialisation and reprs).

``weight`` is ``(num_embeddings, embedding_dim)``, drawn from ``N(0, 1)`` with the
row at ``padding_idx`` zeroed (PyTorch's initialisation). The row at
``padding_idx`` gets no gradient.

``max_norm``: PyTorch renormalises, in place and without recording a graph, every
looked-up row whose ``norm_type``-norm exceeds ``max_norm`` (to ``max_norm``)
before the lookup. fgraph does the same by *rebinding* the weight: each forward
with ``max_norm`` set makes a new ``weight`` Parameter holding the renormalised
values (computed in JAX, traceable) and looks the rows up from it, so read
``module.weight`` after the forward when you take gradients.
``sparse=True`` is accepted; the gradient is the same, dense.

Example:
    >>> import fgraph as fg
    >>> emb = fg.nn.Embedding(10, 3, padding_idx=0)
    >>> emb
    Embedding(10, 3, padding_idx=0)
    >>> emb(fg.tensor([[1, 0], [4, 9]])).shape
    (2, 2, 3)
    >>> emb.weight[0].tolist()
    [0.0, 0.0, 0.0]
"""
from __future__ import annotations

from functools import partial
from typing import Any, Optional

import jax
import jax.numpy as jnp

from fgraph.nn import functional as F
from fgraph.nn import init
from fgraph.nn.functional._utils import check_integer
from fgraph.nn.modules._factory import check_positive_int, empty_parameter
from fgraph.nn.modules.module import Module
from fgraph.nn.parameter import Parameter, _make_parameter, as_parameter, rebind
from fgraph.tensor import Tensor

__all__ = ["Embedding", "EmbeddingBag"]


def _padding_index(padding_idx: Optional[int], num_embeddings: int, layer: str) -> Optional[int]:
    if padding_idx is None:
        return None
    if isinstance(padding_idx, bool) or not isinstance(padding_idx, int):
        raise TypeError(f"{layer}: padding_idx must be an int or None, got {type(padding_idx).__name__}.")
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise ValueError(
            f"{layer}: padding_idx must be within num_embeddings: -{num_embeddings} <= padding_idx < "
            f"{num_embeddings}, got {padding_idx}."
        )
    return padding_idx % num_embeddings


def _given_weight(weight: Any, shape: tuple[int, int], requires_grad: bool, layer: str) -> Parameter:
    """``_weight`` as a new Parameter (PyTorch wraps the given tensor), checked against the layer's shape."""
    array = as_parameter(weight)._array
    if tuple(array.shape) != shape:
        raise ValueError(
            f"{layer}: Shape of weight does not match num_embeddings and embedding_dim: expected {shape}, got "
            f"{tuple(array.shape)}."
        )
    return _make_parameter(array, requires_grad)


@partial(jax.jit, static_argnames=("max_norm", "norm_type"))
def _renorm(weight: jax.Array, indices: jax.Array, *, max_norm: float, norm_type: float) -> jax.Array:
    """PyTorch's ``embedding_renorm_``: rows named in ``indices`` with norm above ``max_norm`` scaled down to it."""
    used = jnp.zeros((weight.shape[0],), bool).at[indices.reshape(-1)].set(True)
    norms = jnp.linalg.norm(weight, ord=norm_type, axis=1)
    scale = jnp.where(used & (norms > max_norm), max_norm / (norms + 1e-7), 1.0)
    return weight * scale[:, None].astype(weight.dtype)


class _EmbeddingBase(Module):
    """Shared state and initialisation of Embedding and EmbeddingBag."""

    def _setup(self, num_embeddings: int, embedding_dim: int, padding_idx: Optional[int], max_norm: Optional[float],
               norm_type: float, scale_grad_by_freq: bool, sparse: bool, weight: Any, freeze: bool, device: Any,
               dtype: Any) -> None:
        layer = type(self).__name__
        self.num_embeddings = check_positive_int(num_embeddings, "num_embeddings", layer, allow_zero=True)
        self.embedding_dim = check_positive_int(embedding_dim, "embedding_dim", layer, allow_zero=True)
        self.padding_idx = _padding_index(padding_idx, num_embeddings, layer)
        if max_norm is not None and (isinstance(max_norm, bool) or not isinstance(max_norm, (int, float))):
            raise TypeError(f"{layer}: max_norm must be a number or None, got {type(max_norm).__name__}.")
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        if weight is None:
            self.weight = empty_parameter((num_embeddings, embedding_dim), dtype, device, layer,
                                          requires_grad=not freeze)
            self.reset_parameters()
        else:
            self.weight = _given_weight(weight, (num_embeddings, embedding_dim), not freeze, layer)
        self.sparse = sparse

    def reset_parameters(self) -> None:
        """``weight`` from ``N(0, 1)``, the ``padding_idx`` row zeroed."""
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        if self.padding_idx is not None:
            rebind({self.weight: self.weight._array.at[self.padding_idx].set(0)})

    def _renormed_weight(self, input: Tensor) -> Parameter:
        """The weight to look rows up from: with ``max_norm``, the rebound, renormalised one."""
        if self.max_norm is None:
            return self.weight
        check_integer(input, type(self).__name__, "input")
        old = self.weight
        data = _renorm(old._array, input._array, max_norm=float(self.max_norm), norm_type=float(self.norm_type))
        return rebind({old: data})[old]


class Embedding(_EmbeddingBase):
    """A lookup table: ``forward(input)`` returns the rows of ``weight`` at the integer ``input``
    (output shape ``input.shape + (embedding_dim,)``).

    Example:
        >>> import fgraph as fg
        >>> emb = fg.nn.Embedding.from_pretrained(fg.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> emb(fg.tensor([1, 1, 0])).tolist()
        [[3.0, 4.0], [3.0, 4.0], [1.0, 2.0]]
        >>> emb.weight.requires_grad
        False
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: Optional[int] = None,
                 max_norm: Optional[float] = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight: Optional[Any] = None, _freeze: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self._setup(num_embeddings, embedding_dim, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                    _weight, _freeze, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        weight = self._renormed_weight(input)
        return F.embedding(input, weight, self.padding_idx, None, self.norm_type, self.scale_grad_by_freq,
                           self.sparse)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        if self.sparse is not False:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(cls, embeddings: Any, freeze: bool = True, padding_idx: Optional[int] = None,
                        max_norm: Optional[float] = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> "Embedding":
        """An Embedding whose weight is ``embeddings`` (2-D; frozen unless ``freeze=False``; rows kept as given)."""
        rows, cols = _pretrained_shape(embeddings, cls.__name__)
        return cls(rows, cols, padding_idx=padding_idx, max_norm=max_norm, norm_type=norm_type,
                   scale_grad_by_freq=scale_grad_by_freq, sparse=sparse, _weight=embeddings, _freeze=freeze)


def _pretrained_shape(embeddings: Any, layer: str) -> tuple[int, int]:
    shape = tuple(getattr(embeddings, "shape", ()))
    if len(shape) != 2:
        raise ValueError(
            f"{layer}.from_pretrained: Embeddings parameter is expected to be 2-dimensional (num_embeddings, "
            f"embedding_dim), got shape {shape}."
        )
    return int(shape[0]), int(shape[1])


class EmbeddingBag(_EmbeddingBase):
    """Sums, means or maxima of bags of embeddings, without materialising the bags (``F.embedding_bag``).

    ``forward(input, offsets=None, per_sample_weights=None)``: a 2D ``input`` ``(B, N)`` is
    ``B`` bags of ``N`` indices; a 1D ``input`` is cut into bags at ``offsets``
    (``include_last_offset=True``: ``offsets`` also holds the end of the last bag).
    ``mode`` is ``'sum'``, ``'mean'`` (default) or ``'max'``; ``per_sample_weights`` scales
    each row (``'sum'`` only). Entries equal to ``padding_idx`` are left out of their bag.

    Example:
        >>> import fgraph as fg
        >>> bag = fg.nn.EmbeddingBag.from_pretrained(fg.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]]), mode="sum")
        >>> bag
        EmbeddingBag(3, 2, mode='sum')
        >>> bag(fg.tensor([0, 2, 1, 1]), fg.tensor([0, 2])).tolist()
        [[3.0, 2.0], [0.0, 2.0]]
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: Optional[float] = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                 _weight: Optional[Any] = None, include_last_offset: bool = False, padding_idx: Optional[int] = None,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"EmbeddingBag: mode has to be one of sum, mean or max, got {mode!r}.")
        self._setup(num_embeddings, embedding_dim, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                    _weight, False, device, dtype)
        self.mode = mode
        self.include_last_offset = include_last_offset

    def forward(self, input: Tensor, offsets: Optional[Tensor] = None,
                per_sample_weights: Optional[Tensor] = None) -> Tensor:
        weight = self._renormed_weight(input)
        return F.embedding_bag(input, weight, offsets, None, self.norm_type, self.scale_grad_by_freq, self.mode,
                               self.sparse, per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm!r}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type!r}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq!r}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx!r}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings: Any, freeze: bool = True, max_norm: Optional[float] = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                        sparse: bool = False, include_last_offset: bool = False,
                        padding_idx: Optional[int] = None) -> "EmbeddingBag":
        """An EmbeddingBag whose weight is ``embeddings`` (2-D; frozen unless ``freeze=False``)."""
        rows, cols = _pretrained_shape(embeddings, cls.__name__)
        bag = cls(rows, cols, max_norm=max_norm, norm_type=norm_type, scale_grad_by_freq=scale_grad_by_freq,
                  mode=mode, sparse=sparse, _weight=embeddings, include_last_offset=include_last_offset,
                  padding_idx=padding_idx)
        if freeze:
            rebind({bag.weight: _make_parameter(bag.weight._array, False)})
        return bag
