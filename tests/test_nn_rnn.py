"""Recurrent layers (RNN, LSTM, GRU and their cells) against PyTorch and a pure-JAX reference (see nn_harness).

The reference is a jitted pure-JAX loop over layers, directions and steps on the state
dict's arrays; it shares no code with fgraph. Value cases use ``dropout=0``; dropout has its
own tests below.
"""
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
from fgraph import nn
from fgraph.errors import OpError
from fgraph.nn.modules.rnn import RNNShapeError
from nn_harness import LayerCase, case_modes, check_against_reference, check_against_torch

SEQ, BATCH, IN, HID = 3, 2, 3, 4


# -- pure-JAX reference (jitted: one compile per case instead of one per primitive) ------------------------
def _cell_ref(mode, p, x, h, c):
    """One step of ``mode`` on raw arrays; ``p`` holds w_ih, w_hh and optionally b_ih, b_hh, w_hr."""
    gi = x @ p["w_ih"].T + p.get("b_ih", 0.0)
    gh = h @ p["w_hh"].T + p.get("b_hh", 0.0)
    if mode in ("tanh", "relu"):
        pre = gi + gh
        return (jnp.tanh(pre) if mode == "tanh" else jnp.maximum(pre, 0.0)), c
    if mode == "LSTM":
        i, f, g, o = jnp.split(gi + gh, 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h @ p["w_hr"].T if "w_hr" in p else h), c
    ir, iz, in_ = jnp.split(gi, 3, axis=-1)
    hr, hz, hn = jnp.split(gh, 3, axis=-1)
    r, z = jax.nn.sigmoid(ir + hr), jax.nn.sigmoid(iz + hz)
    n = jnp.tanh(in_ + r * hn)
    return (1 - z) * n + z * h, c


def _params(state, suffix):
    keys = {"weight_ih": "w_ih", "weight_hh": "w_hh", "bias_ih": "b_ih", "bias_hh": "b_hh", "weight_hr": "w_hr"}
    return {short: state[k + suffix] for k, short in keys.items() if k + suffix in state}


def _jitted(fn):
    """``fn(state, *inputs)`` jitted, with the harness's ``training`` keyword (value cases have no dropout)."""
    compiled = jax.jit(fn)

    def ref(state, *inputs, training):
        return compiled(state, *inputs)

    return ref


def rnn_ref(mode, hidden, num_layers=1, bidirectional=False, batch_first=False, proj=0):
    """A reference ``(state, x[, h0[, c0]]) -> (output, h_n[, c_n])`` for the multi-layer layers."""
    dirs = 2 if bidirectional else 1
    out_size = proj or hidden

    def ref(state, x, *hx):
        state = {k.rpartition(".")[2]: v for k, v in state.items()}
        batched = x.ndim == 3
        if not batched:
            x = x[None] if batch_first else x[:, None]
            hx = [h[:, None] for h in hx]
        if batch_first:
            x = jnp.swapaxes(x, 0, 1)
        batch = x.shape[1]
        h0 = hx[0] if hx else jnp.zeros((num_layers * dirs, batch, out_size))
        c0 = hx[1] if len(hx) == 2 else jnp.zeros((num_layers * dirs, batch, hidden))
        h_n, c_n = [], []
        for layer in range(num_layers):
            outs = []
            for d in range(dirs):
                p = _params(state, f"_l{layer}" + ("_reverse" if d else ""))
                k = layer * dirs + d

                h, c, ys = h0[k], c0[k], [None] * x.shape[0]
                for t in (range(x.shape[0] - 1, -1, -1) if d else range(x.shape[0])):
                    h, c = _cell_ref(mode, p, x[t], h, c)
                    ys[t] = h
                outs.append(jnp.stack(ys))
                h_n.append(h)
                c_n.append(c)
            x = jnp.concatenate(outs, -1)
        out = jnp.swapaxes(x, 0, 1) if batch_first else x
        h_n, c_n = jnp.stack(h_n), jnp.stack(c_n)
        if not batched:
            out, h_n, c_n = out[0] if batch_first else out[:, 0], h_n[:, 0], c_n[:, 0]
        return (out, (h_n, c_n)) if mode == "LSTM" else (out, h_n)

    return _jitted(ref)


def cell_ref(mode):
    def ref(state, x, *hx):
        p = _params({k.rpartition(".")[2]: v for k, v in state.items()}, "")
        batched = x.ndim == 2
        if not batched:
            x, hx = x[None], [h[None] for h in hx]
        hidden = p["w_hh"].shape[1]
        h = hx[0] if hx else jnp.zeros((x.shape[0], hidden))
        c = hx[1] if len(hx) == 2 else jnp.zeros((x.shape[0], hidden))
        h, c = _cell_ref(mode, p, x, h, c)
        if not batched:
            h, c = h[0], c[0]
        return (h, c) if mode == "LSTM" else h

    return _jitted(ref)


# -- modules whose forward takes the LSTM state as two positional inputs (the harness passes arrays) ---------------
class StatefulLSTM(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        self.lstm = nn.LSTM(*args, **kwargs)

    def forward(self, x, h0, c0):
        return self.lstm(x, (h0, c0))


class StatefulLSTMCell(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        self.cell = nn.LSTMCell(*args, **kwargs)

    def forward(self, x, h0, c0):
        return self.cell(x, (h0, c0))


def _torch_stateful(torch, cls, attr, *args, **kwargs):
    class Stateful(torch.nn.Module):
        def __init__(self):
            super().__init__()
            setattr(self, attr, cls(*args, **kwargs))

        def forward(self, x, h0, c0):
            return getattr(self, attr)(x, (h0, c0))

    return Stateful()


def _arrays(*shapes):
    return lambda rng: tuple(rng.standard_normal(s) for s in shapes)


def _rnn_case(name, cls, mode, *, shapes, num_layers=1, bidirectional=False, batch_first=False, proj=0, **kw):
    args = dict(num_layers=num_layers, bidirectional=bidirectional, batch_first=batch_first, **kw)
    if proj:
        args["proj_size"] = proj
    ref = rnn_ref(mode, HID, num_layers, bidirectional, batch_first, proj)
    if cls == "LSTM" and len(shapes) == 3:
        return LayerCase(name, lambda: StatefulLSTM(IN, HID, **args), _arrays(*shapes),
                         lambda t: _torch_stateful(t, t.nn.LSTM, "lstm", IN, HID, **args), ref)
    return LayerCase(name, lambda: getattr(nn, cls)(IN, HID, **args), _arrays(*shapes),
                     lambda t: getattr(t.nn, cls)(IN, HID, **args), ref)


D2 = 2 * 2  # num_layers * num_directions for the 2-layer bidirectional cases

CASES = [
    _rnn_case("RNN-tanh-2layers", "RNN", "tanh", shapes=[(SEQ, BATCH, IN)], num_layers=2),
    _rnn_case("RNN-relu-bidir-batch_first-h0-nobias", "RNN", "relu", shapes=[(BATCH, SEQ, IN), (2, BATCH, HID)],
              bidirectional=True, batch_first=True, nonlinearity="relu", bias=False),
    _rnn_case("RNN-unbatched-h0", "RNN", "tanh", shapes=[(SEQ, IN), (1, HID)]),
    _rnn_case("LSTM-2layers-bidir-states", "LSTM", "LSTM",
              shapes=[(SEQ, BATCH, IN), (D2, BATCH, HID), (D2, BATCH, HID)], num_layers=2, bidirectional=True),
    _rnn_case("LSTM-proj-2layers-batch_first-states", "LSTM", "LSTM",
              shapes=[(BATCH, SEQ, IN), (2, BATCH, 2), (2, BATCH, HID)], num_layers=2, batch_first=True, proj=2),
    _rnn_case("LSTM-proj-bidir-unbatched-batch_first", "LSTM", "LSTM", shapes=[(SEQ, IN)], bidirectional=True,
              batch_first=True, proj=3),
    _rnn_case("LSTM-nobias", "LSTM", "LSTM", shapes=[(SEQ, BATCH, IN)], bias=False),
    _rnn_case("GRU-2layers-bidir-batch_first-h0", "GRU", "GRU", shapes=[(BATCH, SEQ, IN), (D2, BATCH, HID)],
              num_layers=2, bidirectional=True, batch_first=True),
    _rnn_case("GRU-zero-state", "GRU", "GRU", shapes=[(SEQ, BATCH, IN)]),
    _rnn_case("GRU-nobias-unbatched-h0", "GRU", "GRU", shapes=[(SEQ, IN), (1, HID)], bias=False),
    LayerCase("RNNCell-h0", lambda: nn.RNNCell(IN, HID), _arrays((BATCH, IN), (BATCH, HID)),
              lambda t: t.nn.RNNCell(IN, HID), cell_ref("tanh")),
    LayerCase("RNNCell-relu-nobias-unbatched", lambda: nn.RNNCell(IN, HID, bias=False, nonlinearity="relu"),
              _arrays((IN,)), lambda t: t.nn.RNNCell(IN, HID, bias=False, nonlinearity="relu"), cell_ref("relu")),
    LayerCase("LSTMCell-states", lambda: StatefulLSTMCell(IN, HID), _arrays((BATCH, IN), (BATCH, HID), (BATCH, HID)),
              lambda t: _torch_stateful(t, t.nn.LSTMCell, "cell", IN, HID), cell_ref("LSTM")),
    LayerCase("LSTMCell-unbatched", lambda: nn.LSTMCell(IN, HID), _arrays((IN,)),
              lambda t: t.nn.LSTMCell(IN, HID), cell_ref("LSTM")),
    LayerCase("GRUCell-h0-unbatched", lambda: nn.GRUCell(IN, HID), _arrays((IN,), (HID,)),
              lambda t: t.nn.GRUCell(IN, HID), cell_ref("GRU")),
    LayerCase("GRUCell-nobias", lambda: nn.GRUCell(IN, HID, bias=False), _arrays((BATCH, IN)),
              lambda t: t.nn.GRUCell(IN, HID, bias=False), cell_ref("GRU")),
]


@pytest.mark.parametrize("case,mode", case_modes(CASES))
def test_against_reference(case, mode, node_by_node):
    check_against_reference(case, mode)


@pytest.mark.parametrize("case,mode", case_modes(CASES, torch_only=True))
def test_against_torch(case, mode, node_by_node):
    torch = pytest.importorskip("torch")
    check_against_torch(case, mode, torch)


# -- parameters, init, repr -------------------------------------------------------------------------------------
def test_parameter_names_shapes_and_order():
    lstm = nn.LSTM(3, 5, num_layers=2, bidirectional=True, proj_size=2)
    names = [(n, p.shape) for n, p in lstm.named_parameters()]
    assert names[:5] == [("weight_ih_l0", (20, 3)), ("weight_hh_l0", (20, 2)), ("bias_ih_l0", (20,)),
                         ("bias_hh_l0", (20,)), ("weight_hr_l0", (2, 5))]
    assert names[5][0] == "weight_ih_l0_reverse" and names[10] == ("weight_ih_l1", (20, 4))
    assert [len(w) for w in lstm.all_weights] == [5, 5, 5, 5]
    assert list(lstm.state_dict()) == lstm._flat_weights_names
    gru = nn.GRU(3, 4, bias=False)
    assert [(n, p.shape) for n, p in gru.named_parameters()] == [("weight_ih_l0", (12, 3)), ("weight_hh_l0", (12, 4))]
    cell = nn.RNNCell(3, 4, bias=False)
    assert [n for n, _ in cell.named_parameters()] == ["weight_ih", "weight_hh"]
    assert cell.bias_ih is None and cell.bias_hh is None


@pytest.mark.parametrize("make", [lambda: nn.LSTM(2, 400, num_layers=2), lambda: nn.GRUCell(2, 400)],
                         ids=["LSTM", "GRUCell"])
def test_default_init_is_torch_uniform(make):
    fg.manual_seed(0)
    bound = 1 / np.sqrt(400)
    values = [p.numpy().ravel() for p in make().parameters()]
    for v in values:
        assert np.abs(v).max() <= bound and np.abs(v).max() > 0.9 * bound
    allv = np.concatenate(values)
    assert abs(allv.std() - bound / np.sqrt(3)) < 0.02 * bound  # U(-a, a) has std a / sqrt(3)
    assert len({v[:4].tobytes() for v in values}) == len(values)  # every parameter drawn afresh


def test_load_torch_state_dict_then_reset_changes_values():
    torch = pytest.importorskip("torch")
    ours, theirs = nn.GRU(3, 4, num_layers=2), torch.nn.GRU(3, 4, num_layers=2)
    assert str(ours.load_state_dict(theirs.state_dict())) == "<All keys matched successfully>"
    np.testing.assert_array_equal(ours.weight_hh_l1.numpy(), theirs.weight_hh_l1.detach().numpy())
    ours.reset_parameters()
    assert not np.allclose(ours.weight_hh_l1.numpy(), theirs.weight_hh_l1.detach().numpy())


def test_reprs_match_torch():
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pairs = [
            (nn.RNN(3, 4), torch.nn.RNN(3, 4)),
            (nn.RNN(3, 4, 2, "relu", False, True, 0.5, True), torch.nn.RNN(3, 4, 2, "relu", False, True, 0.5, True)),
            (nn.LSTM(3, 4, proj_size=2, bidirectional=True), torch.nn.LSTM(3, 4, proj_size=2, bidirectional=True)),
            (nn.LSTM(3, 4, dropout=0.25), torch.nn.LSTM(3, 4, dropout=0.25)),
            (nn.GRU(3, 4, num_layers=3, batch_first=True), torch.nn.GRU(3, 4, num_layers=3, batch_first=True)),
            (nn.RNNCell(3, 4), torch.nn.RNNCell(3, 4)),
            (nn.RNNCell(3, 4, False, "relu"), torch.nn.RNNCell(3, 4, False, "relu")),
            (nn.LSTMCell(3, 4, bias=False), torch.nn.LSTMCell(3, 4, bias=False)),
            (nn.GRUCell(3, 4), torch.nn.GRUCell(3, 4)),
        ]
    for ours, theirs in pairs:
        assert repr(ours) == repr(theirs)


# -- dropout between layers ------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_dropout_only_in_training_and_reproducible(cls):
    fg.manual_seed(0)
    dropped = getattr(nn, cls)(IN, HID, num_layers=2, dropout=0.5).double()
    plain = getattr(nn, cls)(IN, HID, num_layers=2).double()
    plain.load_state_dict(dropped.state_dict())
    x = fg.tensor(np.random.default_rng(0).standard_normal((SEQ, BATCH, IN)))

    def hidden(out):
        return out[1][0] if cls == "LSTM" else out[1]

    reference = plain(x)
    evaluated = dropped.eval()(x)
    np.testing.assert_array_equal(evaluated[0].numpy(), reference[0].numpy())
    dropped.train()
    fg.manual_seed(7)
    first = dropped(x)
    fg.manual_seed(7)
    again = dropped(x)
    np.testing.assert_array_equal(first[0].numpy(), again[0].numpy())
    assert not np.allclose(first[0].numpy(), reference[0].numpy())
    # the first layer sees no dropout; only the input of the second layer is dropped
    np.testing.assert_allclose(hidden(first)[0].numpy(), hidden(reference)[0].numpy(), rtol=0, atol=1e-12)
    assert not np.allclose(hidden(first)[1].numpy(), hidden(reference)[1].numpy())
    plain_train = plain.train()(x)  # dropout=0 in training is the eval computation
    np.testing.assert_array_equal(plain_train[0].numpy(), reference[0].numpy())


def test_dropout_key_gives_the_same_masks():
    rnn = nn.RNN(IN, HID, num_layers=3, dropout=0.3).double()
    x = fg.tensor(np.random.default_rng(1).standard_normal((SEQ, BATCH, IN)))
    a, _ = rnn(x, key=jax.random.PRNGKey(3))
    b, _ = rnn(x, key=jax.random.PRNGKey(3))
    c, _ = rnn(x, key=jax.random.PRNGKey(4))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.allclose(a.numpy(), c.numpy())


def test_dropout_with_one_layer_warns_as_torch():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.GRU(3, 4, dropout=0.2)


# -- graph shape and tracing -------------------------------------------------------------------------------------
def _node_names(root):
    seen, stack, names = set(), [root.grad_fn], []
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        names.append(node.name())
        stack.extend(next_node for next_node, _ in node.next_functions)
    return names


def test_input_projection_is_one_matmul_per_layer_and_direction():
    seq = 6
    lstm = nn.LSTM(IN, HID, bidirectional=True).double()
    out, _ = lstm(fg.ones(seq, BATCH, IN, dtype=fg.float64))
    # a 3-D @ 2-D projection records torch's UnsafeViewBackward0 (an mm on the flattened batch)
    names = _node_names(out.sum())
    matmuls = [n for n in names if "mm" in n.lower() or "matmul" in n.lower() or n == "UnsafeViewBackward0"]
    # per direction: 1 projection + (seq - 1) recurrent products (the zero initial state needs none)
    assert len(matmuls) == 2 * seq, matmuls


def test_forward_and_gradient_under_jax_jit(node_by_node):
    fg.manual_seed(0)
    gru = nn.GRU(IN, HID, num_layers=2, dropout=0.5).double()
    x = np.random.default_rng(0).standard_normal((SEQ, BATCH, IN))

    def loss(array, key):
        t = fg.tensor(array, requires_grad=True)
        out, h_n = gru(t, key=key)
        (g,) = fg.grad((out * out).sum() + h_n.sum(), [t])
        return out.array, g.array

    key = jax.random.PRNGKey(0)
    eager = loss(jnp.asarray(x), key)
    traced = jax.jit(loss)(jnp.asarray(x), key)
    for e, t in zip(eager, traced):
        np.testing.assert_allclose(np.asarray(t), np.asarray(e), rtol=1e-10, atol=1e-12)


# -- errors ----------------------------------------------------------------------------------------------------
def test_constructor_errors():
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        nn.RNN(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'gelu'"):
        nn.RNN(3, 4, nonlinearity="gelu")
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        nn.RNNCell(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match=r"dropout should be a number in range \[0, 1\]"):
        nn.LSTM(3, 4, num_layers=2, dropout=1.5)
    with pytest.raises(TypeError, match="LSTM: hidden_size should be of type int, got: float"):
        nn.LSTM(3, 4.0)
    with pytest.raises(ValueError, match="GRU: num_layers must be greater than zero"):
        nn.GRU(3, 4, num_layers=0)
    with pytest.raises(ValueError, match="GRUCell: input_size must be greater than zero"):
        nn.GRUCell(0, 4)
    with pytest.raises(TypeError, match="RNN: batch_first should be of type bool"):
        nn.RNN(3, 4, batch_first=1)


def _raises(exc, match, fn, *args):
    with pytest.raises(exc, match=match) as info:
        fn(*args)
    return info.value


def test_forward_errors_name_the_layer_shapes_and_fix():
    lstm, gru = nn.LSTM(3, 4, num_layers=2), nn.GRU(3, 4, batch_first=True)
    x = fg.ones(5, 2, 3)
    e = _raises(RuntimeError, r"LSTM: input.size\(-1\) must be equal to input_size. Expected 3, got 6",
                lstm, fg.ones(5, 2, 6))
    assert isinstance(e, OpError) and isinstance(e, RNNShapeError) and "(L, N, H_in)" in str(e)
    _raises(ValueError, "GRU: Expected input to be 2D or 3D, got 4D tensor instead", gru, fg.ones(1, 5, 2, 3))
    _raises(RuntimeError, r"Expected hidden\[0\] size \(2, 2, 4\), got \[1, 2, 4\]", lstm, x,
            (fg.zeros(1, 2, 4), fg.zeros(2, 2, 4)))
    _raises(RuntimeError, r"Expected hidden\[1\] size \(2, 2, 4\), got \[2, 3, 4\]", lstm, x,
            (fg.zeros(2, 2, 4), fg.zeros(2, 3, 4)))
    _raises(RuntimeError, r"GRU: Expected hidden size \(1, 5, 4\), got \[1, 2, 4\]", gru, x, fg.zeros(1, 2, 4))
    _raises(RuntimeError, "For batched 3-D input, hx should also be 3-D but got 2-D tensor", gru, x, fg.zeros(5, 4))
    _raises(RuntimeError, r"For unbatched 2-D input, hx and cx should also be 2-D but got \(3-D, 3-D\) tensors",
            lstm, fg.ones(5, 3), (fg.zeros(2, 1, 4), fg.zeros(2, 1, 4)))
    _raises(TypeError, r"LSTM: hx must be a tuple \(h_0, c_0\)", lstm, x, fg.zeros(2, 2, 4))
    _raises(TypeError, "expected an fgraph Tensor or a PackedSequence as input, got ndarray", gru, np.ones((5, 2, 3)))
    _raises(RuntimeError, "Expected sequence length to be larger than 0", lstm, fg.ones(0, 2, 3))
    with pytest.raises(ValueError, match=r"input dtype \(float64\) does not match weight dtype \(float32\)"):
        nn.RNN(3, 4)(fg.ones(2, 2, 3, dtype=fg.float64))


def test_cell_errors():
    cell, lcell = nn.GRUCell(3, 4), nn.LSTMCell(3, 4)
    _raises(RuntimeError, "GRUCell: input has inconsistent input_size: got 5 expected 3", cell, fg.ones(2, 5))
    _raises(ValueError, "GRUCell: Expected input to be 1D or 2D, got 3D instead", cell, fg.ones(1, 2, 3))
    _raises(RuntimeError, "Input batch size 2 doesn't match hidden0 batch size 3", cell, fg.ones(2, 3),
            fg.zeros(3, 4))
    _raises(RuntimeError, "hidden0 has inconsistent hidden_size: got 5, expected 4", cell, fg.ones(2, 3),
            fg.zeros(2, 5))
    _raises(RuntimeError, "should be 1-D", cell, fg.ones(3), fg.zeros(2, 4))
    _raises(RuntimeError, "hidden1 has inconsistent hidden_size: got 2, expected 4", lcell, fg.ones(2, 3),
            (fg.zeros(2, 4), fg.zeros(2, 2)))
    _raises(ValueError, r"LSTMCell: Expected hx\[0\] to be 1D or 2D, got 3D instead", lcell, fg.ones(2, 3),
            (fg.zeros(1, 2, 4), fg.zeros(2, 4)))
