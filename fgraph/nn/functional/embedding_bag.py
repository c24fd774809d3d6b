"""``embedding_bag``: sums, means or maxima of bags of embedding rows, without materialising the bags.

A composite of fgraph ops, so it stays JAX-traceable and every gradient is
PyTorch's: the rows are looked up with :func:`~fgraph.nn.functional.embedding`
(whose rule gives ``padding_idx`` no gradient and applies ``scale_grad_by_freq``),
then reduced per bag with ``index_add`` (``sum``/``mean``) or ``scatter_reduce``
(``max``). Which bag each position belongs to is computed from ``offsets`` by one
jitted JAX kernel (a ``searchsorted``), so no index value ever goes to the host
inside a trace; positions at ``padding_idx`` (and, with ``include_last_offset``,
after the last offset) go to a scratch bag that is dropped. Empty bags give zeros.

Example:
    >>> import fgraph as fg
    >>> import fgraph.nn.functional as F
    >>> w = fg.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]])
    >>> F.embedding_bag(fg.tensor([0, 2, 1, 1]), w, fg.tensor([0, 2]), mode="sum").tolist()
    [[3.0, 2.0], [0.0, 2.0]]
    >>> F.embedding_bag(fg.tensor([[0, 1], [2, 2]]), w).tolist()
    [[0.5, 0.5], [2.0, 2.0]]
"""
from __future__ import annotations

from functools import partial
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from fgraph.errors import OpError
from fgraph.nn.functional._utils import check_float, check_integer, is_traced
from fgraph.nn.functional.basic import embedding
from fgraph.ops.elementwise import div, mul
from fgraph.ops.gather_scatter import scatter_reduce
from fgraph.ops.indexing import index_add
from fgraph.ops.shape import reshape, unsqueeze
from fgraph.tensor import Tensor, _wrap

__all__ = ["embedding_bag"]

TENSOR_METHODS: dict = {}

_MODES = ("sum", "mean", "max")


@partial(jax.jit, static_argnames=("bags", "padding_idx", "dtype"))
def _bag_ids(indices: jax.Array, offsets: jax.Array, *, bags: int, padding_idx: Optional[int],
             dtype: np.dtype) -> tuple[jax.Array, jax.Array]:
    """Each position's bag (``bags`` for the scratch bag) and each bag's number of entries (at least 1)."""
    positions = jnp.arange(indices.shape[0], dtype=offsets.dtype)
    ids = jnp.searchsorted(offsets, positions, side="right") - 1
    ids = jnp.where((ids < 0) | (ids >= bags), bags, ids)
    if padding_idx is not None:
        ids = jnp.where(indices == padding_idx, bags, ids)
    counts = jnp.zeros((bags + 1,), dtype).at[ids].add(1)[:bags]
    return ids, jnp.maximum(counts, 1)


def _check_offsets(offsets: Tensor, n: int, include_last_offset: bool) -> None:
    """PyTorch's eager checks of the offset values (skipped under tracing)."""
    if is_traced(offsets) or offsets.numel() == 0:
        return
    values = np.asarray(offsets._array)
    if values[0] != 0:
        raise OpError(
            f"embedding_bag: offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
            f"position 0. However, got {int(values[0])}."
        )
    if values[-1] > n:
        raise OpError(
            f"embedding_bag: offsets[-1] can not be greater than input's length {n} but got offsets[-1] of "
            f"{int(values[-1])}."
        )
    if np.any(np.diff(values) < 0):
        raise OpError(f"embedding_bag: offsets must be non-decreasing (each bag starts where the last ended), "
                      f"got {values.tolist()}.")


def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Optional[Tensor] = None,
    max_norm: Optional[float] = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Optional[Tensor] = None,
    include_last_offset: bool = False,
    padding_idx: Optional[int] = None,
) -> Tensor:
    """Sums (``mode='sum'``), means (``'mean'``) or maxima (``'max'``) of bags of rows of ``weight``.

    A 2D ``input`` ``(B, N)`` is ``B`` bags of ``N`` indices (``offsets`` must be ``None``).
    A 1D ``input`` is cut into bags at ``offsets`` (bag ``i`` is
    ``input[offsets[i]:offsets[i + 1]]``, the last one runs to the end, or to ``offsets[-1]``
    with ``include_last_offset=True``, where ``offsets`` has one entry more than there are
    bags). Entries equal to ``padding_idx`` are left out of their bag (and of its count for
    ``'mean'``). ``per_sample_weights`` (``mode='sum'`` only, the shape of ``input``) scales
    each row before the sum; it gets a gradient. Returns ``(B, embedding_dim)``.

    ``max_norm`` (an in-place renormalisation of ``weight`` in PyTorch) raises
    ``NotImplementedError``: ``nn.EmbeddingBag`` supports it by rebinding its weight.
    ``sparse=True`` gives the same gradient, dense.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> w = fg.tensor([[1.0, 5.0], [3.0, 2.0]], requires_grad=True)
        >>> F.embedding_bag(fg.tensor([[0, 1]]), w, mode="max").tolist()
        [[3.0, 5.0]]
    """
    op = "embedding_bag"
    check_integer(input, op, "input")
    check_float(weight, op, "weight")
    if per_sample_weights is not None:
        check_float(per_sample_weights, op, "per_sample_weights")
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(
                f"embedding_bag: If per_sample_weights ({tuple(per_sample_weights.shape)}) is not None, then it must "
                f"have the same shape as the input ({tuple(input.shape)})"
            )
        if per_sample_weights.dtype != weight.dtype:
            raise OpError(
                f"embedding_bag: per_sample_weights has dtype {per_sample_weights.dtype} but weight has dtype "
                f"{weight.dtype}; cast them to the same dtype."
            )
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    if mode not in _MODES:
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode!r}")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if max_norm is not None:
        raise NotImplementedError(
            "embedding_bag: max_norm renormalises the weight in place in PyTorch, which immutable fgraph tensors "
            "cannot do; use nn.EmbeddingBag(max_norm=...), which rebinds its weight, or renormalise it yourself."
        )
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' "
            f"(got mode='{mode}')."
        )
    num = weight.shape[0]
    if padding_idx is not None:
        if isinstance(padding_idx, bool) or not isinstance(padding_idx, (int, np.integer)) or \
                not -num <= padding_idx < num:
            raise ValueError(
                f"embedding_bag: padding_idx must be within the number of embeddings, -{num} through {num - 1}, "
                f"but got {padding_idx!r}."
            )
        padding_idx = int(padding_idx) % num

    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed length "
                f"sequences. However, found offsets of type {type(offsets)}"
            )
        bags, size = input.shape
        flat = reshape(input, (-1,))
        starts = jnp.arange(0, bags * size, max(size, 1), dtype=input.dtype)[:bags]
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        check_integer(offsets, op, "offsets")
        if offsets.ndim != 1:
            raise ValueError(f"offsets has to be a 1D Tensor, got shape {tuple(offsets.shape)}")
        if include_last_offset and offsets.shape[0] == 0:
            raise ValueError("embedding_bag: include_last_offset=True needs at least one offset (the end).")
        _check_offsets(offsets, input.shape[0], include_last_offset)
        bags = offsets.shape[0] - 1 if include_last_offset else offsets.shape[0]
        flat, starts = input, offsets._array
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")

    dim = weight.shape[1]
    ids, counts = _bag_ids(flat._array, starts, bags=int(bags), padding_idx=padding_idx, dtype=weight.dtype)
    rows = embedding(flat, weight, padding_idx, None, 2.0, scale_grad_by_freq, sparse)
    if per_sample_weights is not None:
        rows = mul(rows, unsqueeze(reshape(per_sample_weights, (-1,)), -1))
    base = _wrap(jnp.zeros((bags + 1, dim), weight.dtype))
    if mode == "max":
        where = _wrap(jnp.broadcast_to(ids[:, None], (ids.shape[0], dim)))
        out = scatter_reduce(base, 0, where, rows, "amax", include_self=False)
    else:
        out = index_add(base, 0, _wrap(ids), rows)
    out = out[:bags]
    if mode == "mean":
        out = div(out, _wrap(counts[:, None]))
    return out
