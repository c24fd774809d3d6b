"""Packed and padded batches of variable-length sequences (``torch.nn.utils.rnn``'s names and semantics).

A :class:`PackedSequence` holds the steps of a batch of sequences interleaved time step by
time step, longest sequence first: ``data`` has one row per (step, sequence) pair that
exists, ``batch_sizes[t]`` says how many sequences are still running at step ``t``, and
``sorted_indices``/``unsorted_indices`` record the reordering by length (``None`` when the
batch was already sorted). :class:`fgraph.nn.RNN`, :class:`~fgraph.nn.LSTM` and
:class:`~fgraph.nn.GRU` take and return them.

Every function is differentiable with respect to the sequences' values: the packing and
padding are gathers, slices, pads and concatenations recorded in the graph. The lengths
and ``batch_sizes`` are read on the host (PyTorch keeps them on the CPU for the same
reason: they fix the shapes), so under ``jax.jit`` they must be Python or NumPy values, or
tensors built from them inside the traced function. Integer results (``batch_sizes``,
indices, lengths) have fgraph's index dtype: int64, or int32 without JAX's x64 mode.

Example:
    >>> import fgraph as fg
    >>> from fgraph.nn.utils.rnn import pack_sequence, pad_packed_sequence
    >>> packed = pack_sequence([fg.tensor([1, 2, 3]), fg.tensor([4, 5]), fg.tensor([6])])
    >>> packed.data.tolist(), packed.batch_sizes.tolist(), packed.sorted_indices
    ([1, 4, 6, 2, 5, 3], [3, 2, 1], None)
    >>> padded, lengths = pad_packed_sequence(packed, batch_first=True)
    >>> padded.tolist(), lengths.tolist()
    ([[1, 2, 3], [4, 5, 0], [6, 0, 0]], [3, 2, 1])
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple, Optional, Sequence, Union

import jax
import numpy as np

from fgraph._dtypes import x64_enabled
from fgraph.errors import OpError
from fgraph.ops.indexing import index_select
from fgraph.ops.padding import pad
from fgraph.ops.shape import cat, stack
from fgraph.ops.sorting import argsort
from fgraph.ops.splitting import unbind
from fgraph.tensor import Tensor, tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]

Lengths = Union[Tensor, Sequence[int], np.ndarray]


class PackedSequenceError(OpError, RuntimeError):
    """Bad lengths or sequences: an :class:`~fgraph.OpError` that is also the ``RuntimeError`` PyTorch raises."""


class _PackedSequenceFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Optional[Tensor]
    unsorted_indices: Optional[Tensor]


class PackedSequence(_PackedSequenceFields):
    """A batch of variable-length sequences packed step by step: ``(data, batch_sizes, sorted_indices,
    unsorted_indices)``, a named tuple as in PyTorch.

    Build it with :func:`pack_padded_sequence` or :func:`pack_sequence`. ``unsorted_indices``, when not
    given, is the inverse of ``sorted_indices``; ``PackedSequence((data, batch_sizes))`` also works.
    ``to``, ``float``, ``double``, ``half``, ``int`` and ``long`` convert ``data`` only.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.utils.rnn import pack_padded_sequence
        >>> x = fg.tensor([[1.0, 0.0], [2.0, 3.0]])            # (batch, time), lengths 1 and 2
        >>> p = pack_padded_sequence(x, [1, 2], batch_first=True, enforce_sorted=False)
        >>> p.data.tolist(), p.batch_sizes.tolist(), p.sorted_indices.tolist(), p.unsorted_indices.tolist()
        ([2.0, 1.0, 3.0], [2, 1], [1, 0], [1, 0])
        >>> p.half().data.dtype
        dtype('float16')
    """

    __slots__ = ()

    def __new__(cls, data: Any, batch_sizes: Optional[Tensor] = None, sorted_indices: Optional[Tensor] = None,
                unsorted_indices: Optional[Tensor] = None) -> "PackedSequence":
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise TypeError("PackedSequence: give (data, batch_sizes) or data and batch_sizes; build it with "
                                "pack_padded_sequence or pack_sequence rather than by hand.")
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> "PackedSequence":
        """``data.to(*args, **kwargs)`` in a new PackedSequence (``self`` when ``data`` is unchanged)."""
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else type(self)(data, self.batch_sizes, self.sorted_indices,
                                                         self.unsorted_indices)

    def float(self) -> "PackedSequence":
        """``data`` as float32."""
        return self.to(dtype=np.dtype("float32"))

    def double(self) -> "PackedSequence":
        """``data`` as float64 (needs JAX's x64 mode)."""
        return self.to(dtype=np.dtype("float64"))

    def half(self) -> "PackedSequence":
        """``data`` as float16."""
        return self.to(dtype=np.dtype("float16"))

    def int(self) -> "PackedSequence":
        """``data`` as int32."""
        return self.to(dtype=np.dtype("int32"))

    def long(self) -> "PackedSequence":
        """``data`` as int64 (needs JAX's x64 mode)."""
        return self.to(dtype=np.dtype("int64"))


# -- host-side helpers ---------------------------------------------------------------------------------------
def _index_dtype() -> np.dtype:
    return np.dtype("int64") if x64_enabled() else np.dtype("int32")


def _index_tensor(values: np.ndarray) -> Tensor:
    """A constant index tensor; concrete even while ``jax.jit`` traces, so it can be read back on the host."""
    with jax.ensure_compile_time_eval():
        return tensor(np.asarray(values, dtype=_index_dtype()))


def _packed(data: Tensor, batch_sizes: np.ndarray, order: Optional[np.ndarray]) -> PackedSequence:
    if order is None:
        return PackedSequence(data, _index_tensor(batch_sizes))
    return PackedSequence(data, _index_tensor(batch_sizes), _index_tensor(order), _index_tensor(np.argsort(order)))


def _host(value: Any, what: str, op: str) -> np.ndarray:
    """``value`` (a Tensor, array or list) as a NumPy array; traced values cannot fix shapes."""
    if isinstance(value, Tensor):
        value = value._array
    try:
        return np.asarray(value)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        raise TypeError(f"{op}: {what} must be known on the host (they fix the shapes), got a value traced by "
                        "jax.jit; give Python or NumPy lengths, or build the PackedSequence inside the traced "
                        "function from such values.") from None


def _maybe_host(value: Optional[Tensor]) -> Optional[np.ndarray]:
    """Host copy of an index tensor, or ``None`` when it is traced (then the caller indexes on the device)."""
    try:
        return np.asarray(value._array)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        return None


def _check_lengths(lengths: np.ndarray, enforce_sorted: bool) -> None:
    if lengths.size and lengths.min() <= 0:
        raise PackedSequenceError("Length of all samples has to be greater than 0, but found an element in "
                                  f"'lengths' that is <= 0 (lengths {lengths.tolist()})")
    if enforce_sorted and np.any(lengths[1:] > lengths[:-1]):
        raise PackedSequenceError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
            "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement "
            f"if you do not need ONNX exportability (lengths {lengths.tolist()}).")


def _batch_sizes(sorted_lengths: np.ndarray) -> np.ndarray:
    """How many of the (decreasingly sorted) sequences are running at each step."""
    return (sorted_lengths[None, :] > np.arange(sorted_lengths[0])[:, None]).sum(1)


def _packed_positions(batch_sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step and (sorted) batch position of each row of the packed data."""
    steps = np.repeat(np.arange(len(batch_sizes)), batch_sizes)
    starts = np.cumsum(batch_sizes) - batch_sizes
    return steps, np.arange(int(batch_sizes.sum())) - np.repeat(starts, batch_sizes)


def _sort(lengths: np.ndarray, enforce_sorted: bool) -> tuple[np.ndarray, Optional[np.ndarray]]:
    """Checks; the lengths sorted decreasingly and the order (``None`` with ``enforce_sorted``). Ties keep
    their order, as PyTorch's sort does on the CPU."""
    _check_lengths(lengths, enforce_sorted)
    if enforce_sorted:
        return lengths, None
    order = np.argsort(-lengths, kind="stable")
    return lengths[order], order


def _check_sequence_tensor(x: Any, what: str, op: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected an fgraph Tensor as {what}, got {type(x).__name__}.")
    return x


# -- public functions ----------------------------------------------------------------------------------------
def invert_permutation(permutation: Optional[Tensor]) -> Optional[Tensor]:
    """The inverse of a permutation given as a 1-d index tensor (``None`` stays ``None``).

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.utils.rnn import invert_permutation
        >>> invert_permutation(fg.tensor([2, 0, 1])).tolist()
        [1, 2, 0]
    """
    if permutation is None:
        return None
    return argsort(_check_sequence_tensor(permutation, "permutation", "invert_permutation"), stable=True)


def pack_padded_sequence(input: Tensor, lengths: Lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) of sequences of the given lengths.

    ``lengths`` (a list, NumPy array or tensor; one positive length per sequence, at most ``T``) must
    decrease unless ``enforce_sorted=False``, which sorts the batch by length (ties keep their order) and
    records the order in ``sorted_indices``. Steps past a sequence's length are dropped.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.utils.rnn import pack_padded_sequence
        >>> x = fg.tensor([[1.0, 4.0], [2.0, 5.0], [3.0, 0.0]])   # (T=3, B=2), lengths 3 and 2
        >>> p = pack_padded_sequence(x, [3, 2])
        >>> p.data.tolist(), p.batch_sizes.tolist()
        ([1.0, 4.0, 2.0, 5.0, 3.0], [2, 2, 1])
    """
    op = "pack_padded_sequence"
    _check_sequence_tensor(input, "input", op)
    if input.ndim < 2:
        layout = "(B, T, *)" if batch_first else "(T, B, *)"
        raise PackedSequenceError(f"{op}: input must have at least 2 dimensions {layout}, got shape "
                                  f"{tuple(input.shape)}.")
    lens = _host(lengths, "lengths", op)
    if lens.ndim != 1:
        raise PackedSequenceError(f"'lengths' argument should be a 1D tensor (one length per sequence), but got "
                                  f"{lens.ndim}D (shape {lens.shape})")
    lens = lens.astype(np.int64)
    time, batch = (input.shape[1], input.shape[0]) if batch_first else input.shape[:2]
    if len(lens) != batch:
        raise PackedSequenceError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lens)} "
                                  f"(batch_size={batch})")
    if batch == 0:
        raise PackedSequenceError("Cannot pack empty tensors.")
    sorted_lens, order = _sort(lens, enforce_sorted)
    if sorted_lens[0] > time:
        raise PackedSequenceError(f"{op}: a length ({int(sorted_lens[0])}) exceeds the padded length of the input "
                                  f"({time}; input shape {tuple(input.shape)}, batch_first={batch_first}).")
    batch_sizes = _batch_sizes(sorted_lens)
    steps, rows = _packed_positions(batch_sizes)
    if order is not None:
        rows = order[rows]
    data = input[rows, steps] if batch_first else input[steps, rows]
    return _packed(data, batch_sizes, order)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: Optional[int] = None) -> tuple[Tensor, Tensor]:
    """Undo :func:`pack_padded_sequence`: the padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) in
    the original batch order, and the lengths (index dtype).

    ``T`` is the longest length, or ``total_length`` (which may not be shorter). Padding is ``padding_value``.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
        >>> x = fg.tensor([[1, 2, 0], [3, 0, 0], [4, 5, 6]])
        >>> packed = pack_padded_sequence(x, [2, 1, 3], batch_first=True, enforce_sorted=False)
        >>> padded, lengths = pad_packed_sequence(packed, batch_first=True, padding_value=-1, total_length=4)
        >>> padded.tolist(), lengths.tolist()
        ([[1, 2, -1, -1], [3, -1, -1, -1], [4, 5, 6, -1]], [2, 1, 3])
    """
    op = "pad_packed_sequence"
    if not isinstance(sequence, PackedSequence):
        raise TypeError(f"{op}: expected a PackedSequence, got {type(sequence).__name__}.")
    data = sequence.data
    batch_sizes = _host(sequence.batch_sizes, "batch_sizes", op).astype(np.int64)
    max_len = len(batch_sizes)
    if total_length is not None:
        if total_length < max_len:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {max_len}")
        max_len = total_length
    batch, rows = int(batch_sizes[0]), data.shape[0]
    lengths = (batch_sizes[None, :] > np.arange(batch)[:, None]).sum(1)
    steps, cols = _packed_positions(batch_sizes)
    index = np.full((max_len, batch), rows)  # row ``rows`` is the padding appended below
    index[steps, cols] = np.arange(rows)
    unsorted = sequence.unsorted_indices
    host_unsorted = None if unsorted is None else _maybe_host(unsorted)
    if host_unsorted is not None:
        index, lengths = index[:, host_unsorted], lengths[host_unsorted]
    if rows < max_len * batch:
        data = pad(data, (0, 0) * (data.ndim - 1) + (0, 1), value=padding_value)
    padded = data[index.T if batch_first else index]
    lengths_t = _index_tensor(lengths)
    if unsorted is not None and host_unsorted is None:
        padded = index_select(padded, 0 if batch_first else 1, unsorted)
        lengths_t = index_select(lengths_t, 0, unsorted)
    return padded, lengths_t


def pad_sequence(sequences: Union[Tensor, Iterable[Tensor]], batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack sequences ``(L_i, *)`` into ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``), ``T`` the longest
    ``L_i``, padding each on the ``padding_side`` (``'right'`` or ``'left'``) with ``padding_value``.

    A tensor counts as the sequence of its slices along dimension 0.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.utils.rnn import pad_sequence
        >>> seqs = [fg.tensor([1.0, 2.0, 3.0]), fg.tensor([4.0])]
        >>> pad_sequence(seqs).tolist()
        [[1.0, 4.0], [2.0, 0.0], [3.0, 0.0]]
        >>> pad_sequence(seqs, batch_first=True, padding_value=-1.0, padding_side="left").tolist()
        [[1.0, 2.0, 3.0], [-1.0, -1.0, 4.0]]
    """
    op = "pad_sequence"
    if isinstance(sequences, Tensor):
        sequences = unbind(sequences, 0)
    elif not isinstance(sequences, Iterable):
        raise PackedSequenceError(f"pad_sequence: Expected iterable for input sequences, but got arg of type: "
                                  f"{type(sequences)}")
    seqs = tuple(sequences)
    if not seqs:
        raise PackedSequenceError("pad_sequence: received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise PackedSequenceError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    for i, s in enumerate(seqs):
        _check_sequence_tensor(s, f"sequences[{i}]", op)
        if s.ndim == 0 or s.shape[1:] != seqs[0].shape[1:]:
            raise PackedSequenceError(f"{op}: every sequence must be (L, *) with the same trailing dimensions, got "
                                      f"shapes {[tuple(t.shape) for t in seqs]}.")
    longest = max(s.shape[0] for s in seqs)
    padded = []
    for s in seqs:
        extra = longest - s.shape[0]
        if extra:
            s = pad(s, (0, 0) * (s.ndim - 1) + ((0, extra) if padding_side == "right" else (extra, 0)),
                    value=padding_value)
        padded.append(s)
    return stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Lengths, batch_first: bool = False) -> list[Tensor]:
    """Split a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) into its ``B`` sequences
    ``(lengths[b], *)``. The input is left as it is (PyTorch transposes it in place).

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.utils.rnn import unpad_sequence
        >>> padded = fg.tensor([[1.0, 4.0], [2.0, 0.0], [3.0, 0.0]])
        >>> [s.tolist() for s in unpad_sequence(padded, [3, 1])]
        [[1.0, 2.0, 3.0], [4.0]]
    """
    _check_sequence_tensor(padded_sequences, "padded_sequences", "unpad_sequence")
    lens = _host(lengths, "lengths", "unpad_sequence").reshape(-1).astype(np.int64)
    batch = padded_sequences.shape[0 if batch_first else 1]
    if len(lens) != batch:
        raise ValueError(f"unpad_sequence: got {len(lens)} lengths for a batch of {batch} sequences "
                         f"(padded shape {tuple(padded_sequences.shape)}, batch_first={batch_first}).")
    if batch_first:
        return [padded_sequences[b, :int(n)] for b, n in enumerate(lens)]
    return [padded_sequences[:int(n), b] for b, n in enumerate(lens)]


def pack_sequence(sequences: Union[Tensor, Iterable[Tensor]], enforce_sorted: bool = True) -> PackedSequence:
    """Pack sequences ``(L_i, *)`` (as :func:`pad_sequence` then :func:`pack_padded_sequence`, in one gather).

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.utils.rnn import pack_sequence
        >>> p = pack_sequence([fg.tensor([1.0]), fg.tensor([2.0, 3.0])], enforce_sorted=False)
        >>> p.data.tolist(), p.batch_sizes.tolist(), p.sorted_indices.tolist()
        ([2.0, 1.0, 3.0], [2, 1], [1, 0])
    """
    op = "pack_sequence"
    seqs = tuple(unbind(sequences, 0) if isinstance(sequences, Tensor) else sequences)
    if not seqs:
        raise PackedSequenceError("pack_sequence: received an empty list of sequences")
    for i, s in enumerate(seqs):
        _check_sequence_tensor(s, f"sequences[{i}]", op)
        if s.ndim == 0:
            raise PackedSequenceError(f"{op}: sequences[{i}] is 0-d; every sequence must be (L, *).")
    lens = np.array([s.shape[0] for s in seqs], dtype=np.int64)
    sorted_lens, order = _sort(lens, enforce_sorted)
    batch_sizes = _batch_sizes(sorted_lens)
    steps, rows = _packed_positions(batch_sizes)
    if order is not None:
        rows = order[rows]
    starts = np.cumsum(lens) - lens
    data = cat(seqs, 0)[starts[rows] + steps]
    return _packed(data, batch_sizes, order)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences ``(L_i, *)`` in a PackedSequence, in their original order.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.utils.rnn import pack_sequence, unpack_sequence
        >>> packed = pack_sequence([fg.tensor([1, 2]), fg.tensor([3, 4, 5])], enforce_sorted=False)
        >>> [s.tolist() for s in unpack_sequence(packed)]
        [[1, 2], [3, 4, 5]]
    """
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
