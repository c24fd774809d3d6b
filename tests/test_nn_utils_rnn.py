"""fgraph.nn.utils.rnn (packing and padding of variable-length sequences) and PackedSequence inputs of
RNN/LSTM/GRU: hand-computed expectations and gradient checks without torch, then PyTorch as the oracle.

Sizes are tiny and shared between cases (every new shape compiles new kernels): lengths [1, 3, 3] give a
sort order that is not its own inverse, a tie, and sequences ending at two different steps.
"""
import jax
import numpy as np
import pytest

import fgraph as fg
from fgraph import nn
from fgraph.nn.utils.rnn import (
    PackedSequence,
    PackedSequenceError,
    invert_permutation,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    pad_sequence,
    unpack_sequence,
    unpad_sequence,
)

IN, HID = 3, 4
LENS = [1, 3, 3]  # sorted order [1, 2, 0], unsorted [2, 0, 1], batch_sizes [3, 2, 2]


def _index_dtype():
    return fg.tensor([0]).dtype


def _padded_ints():
    """(T=3, B=3): sequence b holds 10 * (b + 1) + t at step t < LENS[b], -1 after."""
    x = np.full((3, 3), -1)
    for b, n in enumerate(LENS):
        x[:n, b] = 10 * (b + 1) + np.arange(n)
    return x


# -- packing and padding, hand-computed ---------------------------------------------------------------------
@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_padded_unsorted_and_back(batch_first):
    x = _padded_ints()
    p = pack_padded_sequence(fg.tensor(x.T if batch_first else x), LENS, batch_first, enforce_sorted=False)
    assert isinstance(p, PackedSequence) and p._fields == ("data", "batch_sizes", "sorted_indices",
                                                           "unsorted_indices")
    assert p.data.tolist() == [20, 30, 10, 21, 31, 22, 32]
    assert p.batch_sizes.tolist() == [3, 2, 2] and p.batch_sizes.dtype == _index_dtype()
    assert p.sorted_indices.tolist() == [1, 2, 0] and p.unsorted_indices.tolist() == [2, 0, 1]
    padded, lengths = pad_packed_sequence(p, batch_first, padding_value=-1, total_length=4)
    expected = np.concatenate([x, np.full((1, 3), -1)])
    np.testing.assert_array_equal(padded.numpy(), expected.T if batch_first else expected)
    assert lengths.tolist() == LENS and lengths.dtype == _index_dtype()


def test_pack_padded_sorted_lengths_as_tensor_and_trailing_dims():
    x = fg.arange(12.0).reshape(3, 2, 2)  # (T, B, feature)
    p = pack_padded_sequence(x, fg.tensor([3, 1]))
    assert p.sorted_indices is None and p.unsorted_indices is None
    assert p.data.tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [8.0, 9.0]]
    assert p.batch_sizes.tolist() == [2, 1, 1]
    padded, lengths = pad_packed_sequence(p)
    assert padded.tolist() == [[[0.0, 1.0], [2.0, 3.0]], [[4.0, 5.0], [0.0, 0.0]], [[8.0, 9.0], [0.0, 0.0]]]
    assert lengths.tolist() == [3, 1]
    assert PackedSequence((p.data, p.batch_sizes)).batch_sizes is p.batch_sizes
    assert p.to(p.data.dtype) is p and p.half().data.dtype == fg.float16
    assert invert_permutation(fg.tensor([1, 2, 0])).tolist() == [2, 0, 1] and invert_permutation(None) is None


def test_pack_sequence_unpack_sequence_and_ties():
    seqs = [fg.tensor([1.0]), fg.tensor([2.0, 3.0, 4.0]), fg.tensor([5.0, 6.0, 7.0])]
    p = pack_sequence(seqs, enforce_sorted=False)
    assert p.data.tolist() == [2.0, 5.0, 1.0, 3.0, 6.0, 4.0, 7.0]
    assert p.batch_sizes.tolist() == [3, 2, 2] and p.sorted_indices.tolist() == [1, 2, 0]  # ties keep order
    assert [s.tolist() for s in unpack_sequence(p)] == [[1.0], [2.0, 3.0, 4.0], [5.0, 6.0, 7.0]]
    q = pack_sequence(seqs[::-1][:2])  # already sorted: lengths 3, 3
    assert q.data.tolist() == [5.0, 2.0, 6.0, 3.0, 7.0, 4.0] and q.sorted_indices is None


@pytest.mark.parametrize("batch_first", [False, True])
def test_pad_sequence_both_sides_and_unpad(batch_first):
    seqs = [fg.tensor([[1.0, 1.5]]), fg.tensor([[2.0, 2.5], [3.0, 3.5]])]
    right = pad_sequence(seqs, batch_first, padding_value=9.0)
    left = pad_sequence(seqs, batch_first, padding_value=9.0, padding_side="left")
    exp_right = np.array([[[1.0, 1.5], [9.0, 9.0]], [[2.0, 2.5], [3.0, 3.5]]])  # (B, T, F)
    exp_left = np.array([[[9.0, 9.0], [1.0, 1.5]], [[2.0, 2.5], [3.0, 3.5]]])
    for got, exp in ((right, exp_right), (left, exp_left)):
        np.testing.assert_array_equal(got.numpy(), exp if batch_first else exp.transpose(1, 0, 2))
    back = unpad_sequence(right, [1, 2], batch_first)
    assert [s.tolist() for s in back] == [s.tolist() for s in seqs]
    assert pad_sequence(fg.ones(2, 3)).shape == (3, 2)  # a tensor is the sequence of its rows


def test_errors():
    x = fg.zeros(3, 2, 1)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order when `enforce_sorted` is True"):
        pack_padded_sequence(x, [1, 2])
    with pytest.raises(PackedSequenceError, match="must be sorted in decreasing order"):
        pack_sequence([fg.ones(1), fg.ones(2)])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        pack_padded_sequence(x, [2, 0], enforce_sorted=False)
    with pytest.raises(RuntimeError, match=r"Expected `len\(lengths\)` to be equal to batch_size, but got 1"):
        pack_padded_sequence(x, [3])
    with pytest.raises(RuntimeError, match="exceeds the padded length"):
        pack_padded_sequence(x, [4, 2])
    with pytest.raises(RuntimeError, match="should be a 1D tensor"):
        pack_padded_sequence(x, [[3, 2]])
    with pytest.raises(ValueError, match="Expected total_length to be at least the length of the longest"):
        pad_packed_sequence(pack_padded_sequence(x, [3, 2]), total_length=2)
    with pytest.raises(RuntimeError, match="received an empty list of sequences"):
        pad_sequence([])
    with pytest.raises(RuntimeError, match="Expected padding_side to be one of left or right, but got middle"):
        pad_sequence([fg.ones(1)], padding_side="middle")
    with pytest.raises(RuntimeError, match="same trailing dimensions"):
        pad_sequence([fg.ones(2, 3), fg.ones(1, 2)])
    with pytest.raises(TypeError, match="expected a PackedSequence"):
        pad_packed_sequence(x)


# -- gradients -----------------------------------------------------------------------------------------------
def test_gradients_flow_through_packing_and_padding(node_by_node):
    x = fg.tensor(np.arange(9.0).reshape(3, 3) + 1.0, requires_grad=True)
    weights = np.arange(1.0, 13.0).reshape(4, 3)
    padded, _ = pad_packed_sequence(pack_padded_sequence(x, LENS, enforce_sorted=False), total_length=4)
    (g,) = fg.grad((padded * fg.tensor(weights)).sum(), [x])
    mask = np.arange(3)[:, None] < np.array(LENS)[None, :]
    np.testing.assert_array_equal(g.numpy(), np.where(mask, weights[:3], 0.0))
    seqs = [fg.tensor([1.0, 2.0], requires_grad=True), fg.tensor([3.0], requires_grad=True)]
    # unpacked[0] is seqs[0]; row 0 of the left-padded batch is (seqs[0][0], padding)
    loss = unpack_sequence(pack_sequence(seqs))[0].sum() + pad_sequence(seqs, padding_side="left")[0].sum()
    assert [g.tolist() for g in fg.grad(loss, seqs)] == [[2.0, 1.0], [0.0]]


def test_packing_under_jax_jit():
    """Lengths given as static values: the PackedSequence built inside the trace keeps host batch sizes."""
    def f(array):
        x = fg.tensor(array, requires_grad=True)
        p = pack_padded_sequence(x, LENS, enforce_sorted=False)
        seqs = unpack_sequence(p)
        (g,) = fg.grad((seqs[1] * seqs[1]).sum(), [x])
        return p.data.array, g.array

    array = np.arange(9.0).reshape(3, 3)
    data, g = jax.jit(f)(array)
    np.testing.assert_array_equal(np.asarray(data), [1.0, 2.0, 0.0, 4.0, 5.0, 7.0, 8.0])
    np.testing.assert_array_equal(np.asarray(g), [[0, 2, 0], [0, 8, 0], [0, 14, 0]])  # d(sum x_1^2) = 2 x_1
    with pytest.raises(TypeError, match="lengths must be known on the host"):
        jax.jit(lambda a, n: pack_padded_sequence(fg.tensor(a), fg.tensor(n)).data.array)(array, np.array([3, 2, 1]))


def test_packed_rnn_gradcheck(node_by_node):
    fg.manual_seed(0)
    rnn = nn.RNN(IN, HID, bidirectional=True).double()
    rng = np.random.default_rng(0)
    x = fg.tensor(rng.standard_normal((3, 3, IN)), requires_grad=True)
    h0 = fg.tensor(rng.standard_normal((2, 3, HID)), requires_grad=True)

    def f(x, h0):
        out, h_n = rnn(pack_padded_sequence(x, LENS, enforce_sorted=False), h0)
        return pad_packed_sequence(out)[0], h_n

    assert fg.autograd.gradcheck(f, (x, h0), fast_mode=True, check_undefined_grad=False)


def test_packed_rnn_matches_the_padded_path_per_length(node_by_node):
    """Torch-free: the outputs and final states of each sequence are those of the padded path run on the
    sequences of its length only (the reverse direction starts at each sequence's own last step; ``hx`` and
    ``h_n`` are in the caller's batch order)."""
    fg.manual_seed(0)
    rnn = nn.RNN(IN, HID, bidirectional=True).double()
    rng = np.random.default_rng(1)
    x, h0 = rng.standard_normal((3, 3, IN)), rng.standard_normal((2, 3, HID))
    for hx in (h0, None):  # None: zero states, also for the sequences joining the reverse pass late
        out, h_n = rnn(pack_padded_sequence(fg.tensor(x), LENS, enforce_sorted=False),
                       None if hx is None else fg.tensor(hx))
        padded, _ = pad_packed_sequence(out)
        assert not padded.numpy()[1:, 0].any()
        for batch, n in (([1, 2], 3), ([0], 1)):
            o, h = rnn(fg.tensor(x[:n, batch]), None if hx is None else fg.tensor(hx[:, batch]))
            np.testing.assert_allclose(padded.numpy()[:n, batch], o.numpy(), rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(h_n.numpy()[:, batch], h.numpy(), rtol=1e-12, atol=1e-12)


def test_packed_input_errors():
    gru = nn.GRU(IN, HID)
    packed = pack_sequence([fg.ones(2, IN)])
    with pytest.raises(RuntimeError, match=r"GRU: Expected hidden size \(1, 1, 4\), got \[1, 2, 4\]"):
        gru(packed, fg.zeros(1, 2, HID))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 2"):
        gru(pack_sequence([fg.ones(2, 2)]))
    with pytest.raises(RuntimeError, match="must be 2-D"):
        gru(pack_sequence([fg.ones(2, 1, IN)]))


# -- against PyTorch -----------------------------------------------------------------------------------------
def test_pack_and_pad_match_torch():
    torch = pytest.importorskip("torch")
    trnn = torch.nn.utils.rnn
    x = np.random.default_rng(2).standard_normal((3, 3, 2))
    for batch_first in (False, True):
        xx = x.transpose(1, 0, 2) if batch_first else x
        for lengths, enforce_sorted in (([3, 3, 1], True), (LENS, False)):
            p = pack_padded_sequence(fg.tensor(xx), lengths, batch_first, enforce_sorted)
            tp = trnn.pack_padded_sequence(torch.tensor(xx), lengths, batch_first, enforce_sorted)
            np.testing.assert_array_equal(p.data.numpy(), tp.data.numpy())
            assert p.batch_sizes.tolist() == tp.batch_sizes.tolist()
            for mine, theirs in ((p.sorted_indices, tp.sorted_indices), (p.unsorted_indices, tp.unsorted_indices)):
                assert (mine is None and theirs is None) or mine.tolist() == theirs.tolist()
            a, la = pad_packed_sequence(p, batch_first, 5.0, total_length=4)
            b, lb = trnn.pad_packed_sequence(tp, batch_first, 5.0, total_length=4)
            np.testing.assert_array_equal(a.numpy(), b.numpy())
            assert la.tolist() == lb.tolist()
        for side in ("left", "right"):
            seqs = [x[:n, 0] for n in LENS]
            a = pad_sequence([fg.tensor(s) for s in seqs], batch_first, 7.0, side)
            b = trnn.pad_sequence([torch.tensor(s) for s in seqs], batch_first, 7.0, side)
            np.testing.assert_array_equal(a.numpy(), b.numpy())


PACKED_CASES = [
    ("LSTM", dict(num_layers=2, bidirectional=True), True),
    ("GRU", dict(bidirectional=True), False),
    ("RNN", dict(bidirectional=True), True),
]


@pytest.mark.parametrize("cls,kwargs,with_hx", PACKED_CASES, ids=[c[0] for c in PACKED_CASES])
def test_packed_rnn_matches_torch(cls, kwargs, with_hx, node_by_node):
    """Outputs, final states and gradients (inputs, initial states, parameters) equal torch's in float64."""
    torch = pytest.importorskip("torch")
    trnn = torch.nn.utils.rnn
    torch.manual_seed(0)
    tmod = getattr(torch.nn, cls)(IN, HID, **kwargs).double()
    mod = getattr(nn, cls)(IN, HID, **kwargs).double()
    mod.load_state_dict({k: v.detach().numpy() for k, v in tmod.state_dict().items()})
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 3, IN))
    n_states = (2 if kwargs.get("bidirectional") else 1) * kwargs.get("num_layers", 1)
    hx = [rng.standard_normal((n_states, 3, HID)) for _ in range(2 if cls == "LSTM" else 1)] if with_hx else []
    tx, ths = torch.tensor(x, requires_grad=True), [torch.tensor(h, requires_grad=True) for h in hx]
    fx, fhs = fg.tensor(x, requires_grad=True), [fg.tensor(h, requires_grad=True) for h in hx]

    def states(hs):
        return None if not hs else (tuple(hs) if cls == "LSTM" else hs[0])

    tout, tfin = tmod(trnn.pack_padded_sequence(tx, LENS, enforce_sorted=False), states(ths))
    out, fin = mod(pack_padded_sequence(fx, LENS, enforce_sorted=False), states(fhs))
    assert isinstance(out, PackedSequence) and out.sorted_indices.tolist() == tout.sorted_indices.tolist()
    tfin, fin = (list(tfin), list(fin)) if cls == "LSTM" else ([tfin], [fin])
    np.testing.assert_allclose(out.data.numpy(), tout.data.detach().numpy(), rtol=1e-10, atol=1e-12)
    for mine, theirs in zip(fin, tfin):
        np.testing.assert_allclose(mine.numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
    w_out = rng.standard_normal(tuple(tout.data.shape))
    w_fin = [rng.standard_normal(tuple(t.shape)) for t in tfin]
    tloss = (tout.data * torch.tensor(w_out)).sum() + sum((t * torch.tensor(w)).sum() for t, w in zip(tfin, w_fin))
    loss = (out.data * fg.tensor(w_out)).sum() + sum((f * fg.tensor(w)).sum() for f, w in zip(fin, w_fin))
    names = [name for name, _ in tmod.named_parameters()]
    tgrads = torch.autograd.grad(tloss, [tx, *ths, *(getattr(tmod, n) for n in names)])
    grads = fg.grad(loss, [fx, *fhs, *(getattr(mod, n) for n in names)])
    for name, mine, theirs in zip(["input", *(["hx"] * len(hx)), *names], grads, tgrads):
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12, err_msg=name)
