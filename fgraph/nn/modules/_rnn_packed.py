"""``PackedSequence`` inputs of :class:`~fgraph.nn.RNN`, :class:`~fgraph.nn.LSTM` and :class:`~fgraph.nn.GRU`.

The packed rows are already in step order with the sequences sorted longest first, so step
``t`` runs on the first ``batch_sizes[t]`` rows only, as PyTorch's CPU kernel does: going
forward, the rows of the sequences that end are split off (their state is their final
state); going backward from the last step, each sequence's initial state joins when its own
last step comes up. Nothing is computed for padding and the outputs come out packed. The
input projections of all rows are one matmul per layer and direction, as on the padded
path. Initial states are given, and final states returned, in the caller's batch order
(permuted through ``sorted_indices`` / ``unsorted_indices``, as PyTorch does).

Example:
    >>> import fgraph as fg
    >>> from fgraph.nn.utils.rnn import pack_sequence
    >>> gru = fg.nn.GRU(2, 3, bidirectional=True)
    >>> packed = pack_sequence([fg.ones(2, 2), fg.ones(4, 2)], enforce_sorted=False)
    >>> output, h_n = gru(packed)
    >>> output.data.shape, output.batch_sizes.tolist(), output.unsorted_indices.tolist(), h_n.shape
    ((6, 6), [2, 2, 1, 1], [1, 0], (2, 2, 3))
"""
from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Optional

from fgraph.nn.modules.rnn import RNNShapeError, _check_dtype, _check_tensor, _step
from fgraph.nn.utils.rnn import PackedSequence, _host
from fgraph.ops.indexing import index_select
from fgraph.ops.shape import cat, matrix_transpose, stack
from fgraph.ops.splitting import split
from fgraph.tensor import Tensor, zeros

if TYPE_CHECKING:
    from fgraph.nn.modules.rnn import RNNBase

__all__ = ["is_packed", "forward_packed"]


def is_packed(x: Any) -> bool:
    """Whether ``x`` is a :class:`~fgraph.nn.utils.rnn.PackedSequence`.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.utils.rnn import pack_sequence
        >>> is_packed(pack_sequence([fg.ones(2)])), is_packed(fg.ones(2))
        (True, False)
    """
    return isinstance(x, PackedSequence)


def _split_rows(x: Optional[Tensor], keep: int) -> tuple[Optional[Tensor], Optional[Tensor]]:
    """``x[:keep], x[keep:]`` in one op (``None`` for an empty part)."""
    if x is None:
        return None, None
    if keep == 0:
        return None, x
    head, tail = split(x, [keep, x.shape[0] - keep], 0)
    return head, tail


def _append(x: Optional[Tensor], rows: Optional[Tensor]) -> Optional[Tensor]:
    return rows if x is None else cat([x, rows], 0)


def _start_states(s0: Optional[Tensor], sizes: list, width: int, like: Tensor) -> dict:
    """The initial-state rows that join the backward pass at each step (``None`` on the zero first step)."""
    joins = [t for t in range(len(sizes) - 2, -1, -1) if sizes[t] > sizes[t + 1]]
    counts = [sizes[t] - sizes[t + 1] for t in joins]
    if s0 is None:
        return {t: None if i == 0 else zeros((n, width), dtype=like.dtype) for i, (t, n) in
                enumerate(zip(joins, counts))}
    return dict(zip(joins, split(s0, counts, 0) if len(counts) > 1 else (s0,)))


def _packed_direction(mode: str, batch_sizes: list, projected: Tensor, weights: dict, h: Optional[Tensor],
                      c: Optional[Tensor], reverse: bool) -> tuple[Tensor, Tensor, Optional[Tensor]]:
    """One layer in one direction over packed rows: the packed outputs and the final ``h``, ``c`` (sorted order)."""
    whh_t = matrix_transpose(weights["hh"])
    whr_t = None if weights["hr"] is None else matrix_transpose(weights["hr"])
    steps = split(projected, batch_sizes, 0) if len(batch_sizes) > 1 else (projected,)
    sizes = list(batch_sizes) + [0]
    outs: list = [None] * len(batch_sizes)
    if not reverse:
        done_h, done_c = [], []
        for t in range(len(batch_sizes)):
            h, c = _step(mode, steps[t], h, c, whh_t, whr_t, weights["b_hh"])
            outs[t] = h
            if sizes[t + 1] < sizes[t]:  # the sequences at rows sizes[t + 1]: end here
                h, h_done = _split_rows(h, sizes[t + 1])
                c, c_done = _split_rows(c, sizes[t + 1])
                done_h.append(h_done)
                done_c.append(c_done)
        h = cat(done_h[::-1], 0) if len(done_h) > 1 else done_h[0]
        c = None if done_c[0] is None else (cat(done_c[::-1], 0) if len(done_c) > 1 else done_c[0])
    else:
        h_size = weights["hh"].shape[1]
        h_start = _start_states(h, sizes, h_size, projected)
        c_start = _start_states(c, sizes, weights["hh"].shape[0] // 4, projected) if mode == "LSTM" else {}
        h = c = None
        for t in range(len(batch_sizes) - 1, -1, -1):
            if t in h_start and (h is not None or h_start[t] is not None):
                h = _append(h, h_start[t])
                c = _append(c, c_start[t]) if mode == "LSTM" else None
            h, c = _step(mode, steps[t], h, c, whh_t, whr_t, weights["b_hh"])
            outs[t] = h
    return (cat(outs, 0) if len(outs) > 1 else outs[0]), h, c


def forward_packed(rnn: RNNBase, packed: PackedSequence, hx: Any, key: Any) -> tuple[PackedSequence, tuple]:
    """``rnn(packed, hx)``: the packed output (same ``batch_sizes`` and indices) and the final states, stacked over
    layers and directions, in the caller's batch order.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.utils.rnn import pack_sequence
        >>> out, (h_n, c_n) = forward_packed(fg.nn.LSTM(2, 3), pack_sequence([fg.ones(3, 2)]), None, None)
        >>> out.data.shape, h_n.shape, c_n.shape
        ((3, 3), (1, 1, 3), (1, 1, 3))
    """
    layer = type(rnn).__name__
    data = _check_tensor(packed.data, "the data of a PackedSequence", layer)
    if data.ndim != 2:
        raise RNNShapeError(f"{layer}: the data of a PackedSequence input must be 2-D (total steps, input_size), "
                            f"got shape {tuple(data.shape)}.")
    _check_dtype(data, rnn.weight_ih_l0, "input", layer)
    if data.shape[-1] != rnn.input_size:
        raise RNNShapeError(f"{layer}: input.size(-1) must be equal to input_size. Expected {rnn.input_size}, "
                            f"got {data.shape[-1]} (PackedSequence data shape {tuple(data.shape)}).")
    batch_sizes = [int(b) for b in _host(packed.batch_sizes, "batch_sizes", layer)]
    grows = any(later > earlier for earlier, later in zip(batch_sizes, batch_sizes[1:]))
    if not batch_sizes or batch_sizes[-1] <= 0 or sum(batch_sizes) != data.shape[0] or grows:
        raise RNNShapeError(f"{layer}: batch_sizes {batch_sizes} do not describe the {data.shape[0]} rows of the "
                            "PackedSequence (positive, not increasing, adding up to the rows); build it with "
                            "pack_padded_sequence or pack_sequence.")
    states = rnn._check_hx(hx, batch_sizes[0], True)
    if states and packed.sorted_indices is not None:
        states = tuple(index_select(s, 1, packed.sorted_indices) for s in states)
    output, finals = rnn._run(data, states, key, partial(_packed_direction, rnn.mode, batch_sizes))
    finals = tuple(stack(f, 0) for f in finals)
    if packed.unsorted_indices is not None:
        finals = tuple(index_select(f, 1, packed.unsorted_indices) for f in finals)
    return PackedSequence(output, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices), finals
