"""fgraph.nn.utils.parametrize / parametrizations (and the legacy hook-based weight_norm / spectral_norm):
the mechanics without PyTorch (properties, originals, rebinding, state_dict keys, cached(), removal, errors)
and, when PyTorch is installed, values, gradients, buffers and state dicts against it in float64."""
import copy
import pickle
import warnings

import jax
import numpy as np
import pytest

import fgraph as fg
from fgraph import nn
from fgraph.nn import utils
from fgraph.nn.parameter import current, owners
from fgraph.nn.utils import parametrizations as PZ
from fgraph.nn.utils import parametrize as P

RNG = np.random.default_rng(0)
X3 = RNG.standard_normal((5, 3))
X4 = RNG.standard_normal((5, 4))
XC = RNG.standard_normal((2, 2, 6))


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).mT


class SymmetricInv(Symmetric):
    def right_inverse(self, A):
        return A.triu()


class Double(nn.Module):
    def forward(self, X):
        return 2 * X


class RankOne(nn.Module):
    def forward(self, x, y):
        return x.unsqueeze(-1) @ y.unsqueeze(-2)

    def right_inverse(self, Z):
        return Z[:, 0], Z[0] / Z[0, 0]


def _linear(n_in=3, n_out=3, seed=0):
    layer = nn.Linear(n_in, n_out).double()
    rng = np.random.default_rng(seed)
    layer.load_state_dict({"weight": rng.standard_normal((n_out, n_in)), "bias": rng.standard_normal(n_out)})
    return layer


def _close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


# -- mechanics (no PyTorch) -----------------------------------------------------------------------------------
def test_register_custom_parametrization():
    layer = _linear()
    w0 = layer.weight
    P.register_parametrization(layer, "weight", Symmetric())
    assert type(layer).__name__ == "ParametrizedLinear" and isinstance(layer, nn.Linear)
    assert P.type_before_parametrizations(layer) is nn.Linear
    assert P.is_parametrized(layer) and P.is_parametrized(layer, "weight") and not P.is_parametrized(layer, "bias")
    assert layer.parametrizations.weight.original is w0          # no right_inverse: the parameter itself moves
    W = layer.weight.numpy()
    _close(W, W.T)
    _close(W, np.triu(w0.numpy()) + np.triu(w0.numpy(), 1).T)
    assert [n for n, _ in layer.named_parameters()] == ["bias", "parametrizations.weight.original"]
    assert list(layer.state_dict()) == ["bias", "parametrizations.weight.original"]
    out = layer(fg.tensor(X3))
    _close(out.numpy(), X3 @ W.T + layer.bias.numpy())
    grads = out.square().sum().backward()
    assert set(grads.keys()) == {layer.bias, w0}
    G = 2 * (X3 @ W.T + layer.bias.numpy()).T @ X3                     # d/dW of the output
    _close(grads[w0].numpy(), np.triu(G) + np.tril(G, -1).T)            # chain rule through the map
    assert (layer, "weight") not in owners(w0)
    assert (layer.parametrizations.weight, "original") in owners(w0)


def test_right_inverse_rebinds_and_keeps_lineage():
    layer = _linear()
    w0 = layer.weight
    tied = nn.Linear(3, 3).double()
    tied.weight = w0
    P.register_parametrization(layer, "weight", SymmetricInv())
    original = layer.parametrizations.weight.original
    assert original is not w0 and current(w0) is original and tied.weight is original  # rebound, tie kept
    _close(original.numpy(), np.triu(w0.numpy()))
    target = RNG.standard_normal((3, 3))
    layer.weight = fg.tensor(target)                                    # assignment: right_inverse
    assert current(w0) is layer.parametrizations.weight.original and original.requires_grad
    _close(layer.parametrizations.weight.original.numpy(), np.triu(target))
    opt = fg.optim.SGD([w0], lr=0.5)                                    # built on the old Parameter: follows
    opt.step(layer(fg.tensor(X3)).sum().backward())
    assert current(w0) is layer.parametrizations.weight.original


def test_tuple_right_inverse_and_chaining():
    layer = _linear(seed=1)
    w0 = layer.weight.numpy()
    P.register_parametrization(layer, "weight", RankOne())
    plist = layer.parametrizations.weight
    assert not plist.is_tensor and plist.ntensors == 2
    keys = ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    assert list(layer.state_dict()) == keys
    _close(layer.weight.numpy(), np.outer(w0[:, 0], w0[0] / w0[0, 0]))
    P.register_parametrization(layer, "weight", Double())              # chained: Double(RankOne(...))
    assert len(layer.parametrizations.weight) == 2
    _close(layer.weight.numpy(), 2 * np.outer(w0[:, 0], w0[0] / w0[0, 0]))
    x, y = plist.original0, plist.original1
    grads = layer.weight.sum().backward()
    _close(grads[x].numpy(), 2 * np.full(3, y.numpy().sum()))
    _close(grads[y].numpy(), 2 * np.full(3, x.numpy().sum()))
    with pytest.raises(RuntimeError, match="Double does not implement right_inverse"):
        layer.weight = fg.ones(3, 3)
    with pytest.raises(ValueError, match="sequence of tensors"):
        P.remove_parametrizations(layer, "weight", leave_parametrized=False)
    value = layer.weight.numpy()
    P.remove_parametrizations(layer, "weight")
    assert type(layer) is nn.Linear and not hasattr(layer, "parametrizations")
    assert list(layer.state_dict()) == ["bias", "weight"]
    assert isinstance(layer.weight, nn.Parameter) and layer.weight.requires_grad
    _close(layer.weight.numpy(), value)


def test_remove_both_ways_and_buffers():
    layer = _linear()
    w0 = layer.weight
    P.register_parametrization(layer, "weight", Double())
    P.remove_parametrizations(layer, "weight", leave_parametrized=False)
    assert layer.weight is w0 and type(layer) is nn.Linear and owners(w0) == [(layer, "weight")]
    P.register_parametrization(layer, "weight", Double())
    P.register_parametrization(layer, "bias", Double())
    P.remove_parametrizations(layer, "weight")                          # leave_parametrized=True
    assert type(layer).__name__ == "ParametrizedLinear" and not P.is_parametrized(layer, "weight")
    assert current(w0) is layer.weight and owners(layer.weight) == [(layer, "weight")]
    _close(layer.weight.numpy(), 2 * w0.numpy())
    assert list(layer.state_dict()) == ["weight", "parametrizations.bias.original"]
    P.remove_parametrizations(layer, "bias")
    assert type(layer) is nn.Linear and list(layer.state_dict()) == ["weight", "bias"]

    bn = nn.BatchNorm1d(3).double()                                     # a buffer stays a buffer
    P.register_parametrization(bn, "running_var", Double())
    assert "parametrizations.running_var.original" in dict(bn.named_buffers())
    _close(bn.running_var.numpy(), 2 * np.ones(3))
    P.remove_parametrizations(bn, "running_var")
    assert "running_var" in bn._buffers and not isinstance(bn.running_var, nn.Parameter)
    _close(bn.running_var.numpy(), 2 * np.ones(3))


def test_cached():
    calls = []

    class Counting(nn.Module):
        def forward(self, X):
            calls.append(1)
            return 2 * X

        def right_inverse(self, W):
            return W / 2

    layer = P.register_parametrization(_linear(), "weight", Counting())
    calls.clear()
    with P.cached():
        a = layer.weight
        with P.cached():
            assert layer.weight is a
        assert layer.weight is a and len(calls) == 1
        original = layer.parametrizations.weight.original
        grads = (layer(fg.tensor(X3)).sum() + layer.weight.sum()).backward()   # both uses share the value
        _close(grads[original].numpy(), 2 * (np.tile(X3.sum(0), (3, 1)) + 1))
        layer.weight = fg.tensor(np.ones((3, 3)))                              # drops the cached value
        _close(layer.weight.numpy(), np.ones((3, 3)))
    assert len(calls) == 2
    layer.weight, layer.weight
    assert len(calls) == 4


def test_copies_pytrees_and_pickle():
    layer = PZ.weight_norm(_linear())
    clone = copy.deepcopy(layer)
    assert type(clone) is type(layer)
    assert clone.parametrizations.weight.original0 is not layer.parametrizations.weight.original0
    _close(clone.weight.numpy(), layer.weight.numpy())
    mapped = jax.tree.map(lambda a: 2 * a, layer)
    _close(mapped.parametrizations.weight.original0.numpy(), 2 * layer.parametrizations.weight.original0.numpy())
    keys = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(layer)[0]]
    assert keys == [".bias", ".parametrizations.weight.original0", ".parametrizations.weight.original1"]
    out = jax.jit(lambda m, x: m(x).array)(layer, fg.tensor(X3))
    _close(out, layer(fg.tensor(X3)).numpy())
    P.remove_parametrizations(layer, "weight")                          # the copies keep their property
    _close(mapped.weight.numpy(), 2 * clone.weight.numpy())
    with pytest.raises(RuntimeError, match="state_dict"):
        pickle.dumps(clone)


def test_transfer_parametrizations_and_params():
    source = P.register_parametrization(_linear(), "weight", RankOne())
    target = P.transfer_parametrizations_and_params(source, nn.Linear(3, 3).double())
    assert target.parametrizations.weight.original1 is source.parametrizations.weight.original1
    _close(target.weight.numpy(), source.weight.numpy())


def test_wrong_use():
    layer = _linear()
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element"):
        P.register_parametrization(layer, "nope", Double())
    with pytest.raises(TypeError, match="must be an fgraph.nn.Module"):
        P.register_parametrization(layer, "weight", lambda X: 2 * X)
    with pytest.raises(ValueError, match="is None"):
        P.register_parametrization(nn.Linear(2, 2, bias=False), "bias", Double())

    class Shrink(nn.Module):
        def forward(self, X):
            return X[0]

    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(layer, "weight", Shrink())
    assert type(layer) is nn.Linear and "weight" in layer._parameters
    P.register_parametrization(layer, "weight", Shrink(), unsafe=True)
    assert layer.weight.shape == (3,)
    with pytest.raises(ValueError, match="does not have a parametrization on bias"):
        P.remove_parametrizations(layer, "bias")
    with pytest.raises(KeyError, match="it is parametrized"):
        layer.weight = nn.Parameter(fg.ones(3, 3))
    with pytest.raises(ValueError, match="has no parameter or buffer"):
        PZ.orthogonal(layer, "nope")
    with pytest.raises(ValueError, match="Expected a matrix"):
        PZ.orthogonal(_linear(), "bias")
    with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
        PZ.orthogonal(_linear(), orthogonal_map="qr")
    with pytest.raises(NotImplementedError, match="use_trivialization=False"):
        PZ.orthogonal(_linear(), orthogonal_map="cayley", use_trivialization=False).weight = fg.eye(3)
    complex_layer = nn.Module()
    complex_layer.weight = nn.Parameter(fg.zeros(3, 3, dtype=fg.complex128))
    with pytest.raises(NotImplementedError, match="use_trivialization=False"):
        PZ.orthogonal(complex_layer)
    with pytest.raises(NotImplementedError, match="complex weights"):
        PZ.spectral_norm(complex_layer)
    with pytest.raises(ValueError, match="n_power_iterations"):
        PZ.spectral_norm(_linear(), n_power_iterations=0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        PZ.spectral_norm(_linear(), dim=2)
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        legacy = utils.weight_norm(_linear())
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        utils.weight_norm(legacy)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        utils.remove_spectral_norm(_linear())


def test_parametrizations_without_torch():
    fg.manual_seed(0)
    layer = PZ.spectral_norm(_linear(4, 3))
    W = layer.parametrizations.weight.original.numpy()
    sn = layer.parametrizations.weight[0]
    v0 = sn._v.numpy()
    weight = layer.weight.numpy()                                       # training access: one power iteration
    u, v = sn._u.numpy(), sn._v.numpy()
    _close(u, W @ v0 / np.linalg.norm(W @ v0))
    _close(v, W.T @ u / np.linalg.norm(W.T @ u))
    _close(weight, W / (u @ W @ v))
    _close(np.linalg.norm(weight, 2), 1.0, 1e-3)                        # 16 iterations from a random start
    layer.eval()
    layer(fg.tensor(X4))
    np.testing.assert_array_equal(sn._u.numpy(), u)                     # eval: the buffers stay
    _close(layer.weight.numpy(), weight)
    for name in ("cayley", "householder"):                               # matrix_exp: in the docstring examples
        Q = PZ.orthogonal(_linear(4, 3), orthogonal_map=name).weight.numpy()
        _close(Q @ Q.T, np.eye(3), 1e-12)
    wide = _linear(4, 3)
    Q0 = np.linalg.qr(RNG.standard_normal((4, 3)))[0].T
    wide.load_state_dict({"weight": Q0, "bias": wide.bias})
    _close(PZ.orthogonal(wide, orthogonal_map="cayley").weight.numpy(), Q0)   # already orthogonal: kept


# -- against PyTorch ------------------------------------------------------------------------------------------
def _compare(tm, fm, x, *, train=True):
    """Forward, gradients of every parameter and buffers after the call, PyTorch vs fgraph."""
    torch = pytest.importorskip("torch")
    tm.train(train)
    fm.train(train)
    tout = tm(torch.tensor(x))
    fout = fm(fg.tensor(x))
    _close(fout.numpy(), tout.detach().numpy())
    tm.zero_grad()
    tout.square().sum().backward()
    grads = fout.square().sum().backward()
    tparams, fparams = list(tm.named_parameters()), list(fm.named_parameters())
    assert [n for n, _ in tparams] == [n for n, _ in fparams]
    for (name, tp), (_, fp) in zip(tparams, fparams):
        _close(grads[fp].numpy(), tp.grad.numpy())
    for (name, tb), (fname, fb) in zip(tm.named_buffers(), fm.named_buffers()):
        assert name == fname
        _close(fb.numpy(), tb.numpy())


def _load_from(tm, fm):
    assert list(fm.state_dict()) == list(tm.state_dict())
    fm.load_state_dict(tm.state_dict())
    return fm


def test_custom_parametrization_against_torch():
    torch = pytest.importorskip("torch")
    from torch.nn.utils import parametrize as TP

    class TSymmetricInv(torch.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).mT

        def right_inverse(self, A):
            return A.triu()

    class TRankOne(torch.nn.Module):
        def forward(self, x, y):
            return x.unsqueeze(-1) @ y.unsqueeze(-2)

        def right_inverse(self, Z):
            return Z[:, 0], Z[0] / Z[0, 0]

    for tpar, fpar in ((TSymmetricInv, SymmetricInv), (TRankOne, RankOne)):
        tm = torch.nn.Linear(3, 3).double()
        fm = nn.Linear(3, 3).double()
        fm.load_state_dict(tm.state_dict())
        TP.register_parametrization(tm, "weight", tpar())
        P.register_parametrization(fm, "weight", fpar())
        assert repr(fm) == repr(tm).replace("TSymmetricInv", "SymmetricInv").replace("TRankOne", "RankOne")
        for (k, tv), (fk, fv) in zip(tm.state_dict().items(), fm.state_dict().items()):   # same right_inverse
            assert k == fk
            _close(fv.numpy(), tv.numpy())
        tm.load_state_dict({k: torch.tensor(RNG.standard_normal(v.shape)) for k, v in tm.state_dict().items()})
        _load_from(tm, fm)
        if tpar is TSymmetricInv:                                       # RankOne's values: test_tuple_right_inverse...
            _compare(tm, fm, X3)
        fm.load_state_dict({k: fg.tensor(RNG.standard_normal(v.shape)) for k, v in fm.state_dict().items()})
        tm.load_state_dict({k: torch.tensor(np.asarray(v.numpy())) for k, v in fm.state_dict().items()})  # and back
        _close(fm.weight.numpy(), tm.weight.detach().numpy())
        TP.remove_parametrizations(tm, "weight")
        P.remove_parametrizations(fm, "weight")
        assert list(fm.state_dict()) == list(tm.state_dict())
        _close(fm.weight.numpy(), tm.weight.detach().numpy())


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_against_torch(dim):
    torch = pytest.importorskip("torch")
    from torch.nn.utils import parametrizations as TPZ

    tm = TPZ.weight_norm(torch.nn.Conv1d(2, 3, 3).double(), dim=dim)
    fm = nn.Conv1d(2, 3, 3).double()
    fm.load_state_dict({"weight": tm.weight.detach().numpy(), "bias": tm.bias.detach().numpy()})
    PZ.weight_norm(fm, dim=dim)
    for (k, tv), (fk, fv) in zip(tm.state_dict().items(), fm.state_dict().items()):  # right_inverse: g and v
        assert k == fk and tuple(fv.shape) == tuple(tv.shape)
        _close(fv.numpy(), tv.numpy())
    _compare(tm, fm, XC)


def test_legacy_weight_norm_checkpoint_loads():
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        tm = torch.nn.utils.weight_norm(torch.nn.Linear(4, 3).double())
        fm = utils.weight_norm(nn.Linear(4, 3).double())
    _compare(tm, _load_from(tm, fm), X4)
    modern = PZ.weight_norm(nn.Linear(4, 3).double())
    modern.load_state_dict(tm.state_dict())                             # weight_g / weight_v keys
    _close(modern.weight.numpy(), tm.weight.detach().numpy())
    torch.nn.utils.remove_weight_norm(tm)
    utils.remove_weight_norm(fm)
    assert list(fm.state_dict()) == list(tm.state_dict())
    _close(fm.weight.numpy(), tm.weight.detach().numpy())


def test_spectral_norm_against_torch():
    torch = pytest.importorskip("torch")
    from torch.nn.utils import parametrizations as TPZ
    from torch.nn.utils import parametrize as TP

    tm, fm = TPZ.spectral_norm(torch.nn.Linear(4, 3).double()), PZ.spectral_norm(nn.Linear(4, 3).double())
    _load_from(tm, fm)
    for _ in range(3):                                                  # training: u, v advance on every call
        _compare(tm, fm, X4)
    _compare(tm, fm, X4, train=False)
    _compare(tm, fm, X4, train=False)
    fm.train()
    tm.train()
    TP.remove_parametrizations(tm, "weight")                            # one more power iteration (training)
    P.remove_parametrizations(fm, "weight")
    _close(fm.weight.numpy(), tm.weight.detach().numpy())

    # ConvTranspose: dim defaults to 1, the 3-D weight is flattened to a matrix; n_power_iterations=2
    tm = TPZ.spectral_norm(torch.nn.ConvTranspose1d(2, 3, 3).double(), n_power_iterations=2)
    fm = _load_from(tm, PZ.spectral_norm(nn.ConvTranspose1d(2, 3, 3).double(), n_power_iterations=2))
    assert fm.parametrizations.weight[0].dim == 1
    for _ in range(2):
        _close(fm.weight.numpy(), tm.weight.detach().numpy())
        _close(fm.parametrizations.weight[0]._v.numpy(), tm.parametrizations.weight[0]._v.numpy())


def test_legacy_spectral_norm_against_torch():
    torch = pytest.importorskip("torch")
    tm = torch.nn.utils.spectral_norm(torch.nn.Conv1d(2, 3, 3).double())
    fm = _load_from(tm, utils.spectral_norm(nn.Conv1d(2, 3, 3).double()))
    for train in (True, True, True, False):
        _compare(tm, fm, XC, train=train)
    torch.nn.utils.remove_spectral_norm(tm)
    utils.remove_spectral_norm(fm)
    assert list(fm.state_dict()) == list(tm.state_dict())
    _close(fm.weight.numpy(), tm.weight.detach().numpy())


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
def test_orthogonal_against_torch(orthogonal_map):
    torch = pytest.importorskip("torch")
    from torch.nn.utils import parametrizations as TPZ

    # weight (3, 4): the wide (transposed) path; square matrices: test_orthogonal_registration_against_torch
    cases = [True, False] if orthogonal_map == "householder" else [True]   # use_trivialization
    for trivialization in cases:
        tl = torch.nn.Linear(4, 3).double()
        fl = nn.Linear(4, 3).double()
        fl.load_state_dict(tl.state_dict())
        kwargs = dict(orthogonal_map=orthogonal_map, use_trivialization=trivialization)
        tm, fm = TPZ.orthogonal(tl, **kwargs), PZ.orthogonal(fl, **kwargs)
        if not trivialization:                                          # registration is deterministic: compare
            for (k, tv), (fk, fv) in zip(tm.state_dict().items(), fm.state_dict().items()):
                assert k == fk
                _close(fv.numpy(), tv.numpy())
        _compare(tm, _load_from(tm, fm), X4)                            # with trivialization: the random base loaded
        Q = np.linalg.qr(RNG.standard_normal((4, 3)))[0].T              # assignment goes through right_inverse
        tm.weight = torch.tensor(Q)
        fm.weight = fg.tensor(Q)
        _close(fm.weight.numpy(), tm.weight.detach().numpy())
        _close(fm.weight.numpy(), Q)


def test_orthogonal_registration_against_torch():
    torch = pytest.importorskip("torch")
    from torch.nn.utils import parametrizations as TPZ

    for orthogonal_map in ("matrix_exp", "householder"):               # square: QR of the weight, or kept
        tl = torch.nn.Linear(3, 3).double()
        fl = nn.Linear(3, 3).double()
        fl.load_state_dict(tl.state_dict())
        tm = TPZ.orthogonal(tl, orthogonal_map=orthogonal_map)
        fm = PZ.orthogonal(fl, orthogonal_map=orthogonal_map)
        for (k, tv), (fk, fv) in zip(tm.state_dict().items(), fm.state_dict().items()):
            assert k == fk
            _close(fv.numpy(), tv.numpy())
