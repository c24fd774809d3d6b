"""fgraph.nn.init: PyTorch's distributions, gains and fans; new tensors returned, module parameters rebound."""
import math

import jax
import numpy as np
import pytest

import fgraph as fg
from fgraph import nn
from fgraph.nn import init

KEY = jax.random.key(0)


@pytest.mark.parametrize("nonlinearity,param,expected", [
    ("linear", None, 1.0), ("conv2d", None, 1.0), ("sigmoid", None, 1.0), ("tanh", None, 5 / 3),
    ("relu", None, math.sqrt(2)), ("leaky_relu", None, math.sqrt(2 / (1 + 0.01**2))),
    ("leaky_relu", 0.2, math.sqrt(2 / 1.04)), ("selu", None, 0.75),
])
def test_calculate_gain(nonlinearity, param, expected):
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(expected, rel=1e-15)


def test_calculate_gain_against_torch():
    torch = pytest.importorskip("torch")
    for name in ("linear", "conv1d", "conv_transpose3d", "sigmoid", "tanh", "relu", "leaky_relu", "selu"):
        assert init.calculate_gain(name) == torch.nn.init.calculate_gain(name)
    assert init.calculate_gain("leaky_relu", 0.3) == torch.nn.init.calculate_gain("leaky_relu", 0.3)
    with pytest.raises(ValueError, match="unsupported nonlinearity"):
        init.calculate_gain("swish")


@pytest.mark.parametrize("shape,fans", [((5, 3), (3, 5)), ((8, 4, 3, 3), (36, 72)), ((6, 2, 5), (10, 30))])
def test_fans(shape, fans):
    assert init._calculate_fan_in_and_fan_out(fg.empty(*shape)) == fans
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init._calculate_fan_in_and_fan_out(fg.empty(3))


def _moments(t):
    a = t.numpy().ravel()
    return a.min(), a.max(), a.mean(), a.std()


def test_uniform_and_normal_distributions():
    lo, hi, mean, std = _moments(init.uniform_(fg.empty(200, 100), -2.0, 3.0, key=KEY))
    assert -2 <= lo < -1.99 and 2.99 < hi < 3 and abs(mean - 0.5) < 0.05 and abs(std - 5 / math.sqrt(12)) < 0.02
    _, _, mean, std = _moments(init.normal_(fg.empty(200, 100), 1.5, 0.5, key=KEY))
    assert abs(mean - 1.5) < 0.01 and abs(std - 0.5) < 0.01
    lo, hi, mean, _ = _moments(init.trunc_normal_(fg.empty(200, 100), 0.2, 1.0, -1.0, 1.5, key=KEY))
    assert lo >= -1.0 and hi <= 1.5 and lo < -0.98 and hi > 1.48


@pytest.mark.parametrize("fn,kwargs,expected_std", [
    (init.xavier_uniform_, {"gain": 2.0}, 2.0 * math.sqrt(2 / (300 + 200))),
    (init.xavier_normal_, {}, math.sqrt(2 / (300 + 200))),
    (init.kaiming_uniform_, {"a": math.sqrt(5)}, 1 / math.sqrt(3) / math.sqrt(300)),
    (init.kaiming_normal_, {"nonlinearity": "relu"}, math.sqrt(2) / math.sqrt(300)),
    (init.kaiming_normal_, {"mode": "fan_out", "nonlinearity": "relu"}, math.sqrt(2) / math.sqrt(200)),
])
def test_scaled_initialisations(fn, kwargs, expected_std):
    w = fn(fg.empty(200, 300), key=KEY, **kwargs)
    assert w.shape == (200, 300) and w.dtype == np.float32
    assert abs(w.numpy().std() / expected_std - 1) < 0.02


def test_scaled_initialisations_match_torch_statistics():
    torch = pytest.importorskip("torch")
    t = torch.empty(256, 64, 3)
    torch.manual_seed(0)  # torch's draws were unseeded: a 5-sigma largest draw failed the bound check once
    for ours, theirs in ((init.kaiming_uniform_, torch.nn.init.kaiming_uniform_),
                         (init.xavier_normal_, torch.nn.init.xavier_normal_)):
        a = ours(fg.empty(256, 64, 3), key=KEY).numpy()
        b = theirs(t).numpy()
        assert abs(a.std() / b.std() - 1) < 0.02
        if ours is init.kaiming_uniform_:  # a uniform's largest draw is its bound; a normal's has no bound
            assert abs(np.abs(a).max() / np.abs(b).max() - 1) < 0.01


def test_constant_eye_dirac_orthogonal():
    assert init.constant_(fg.empty(2, 2), 3.0).tolist() == [[3.0, 3.0], [3.0, 3.0]]
    assert init.ones_(fg.empty(2)).tolist() == [1.0, 1.0]
    assert init.eye_(fg.empty(2, 3)).tolist() == [[1, 0, 0], [0, 1, 0]]
    d = init.dirac_(fg.empty(2, 2, 3)).numpy()
    x = np.random.default_rng(0).standard_normal((1, 2, 5)).astype(np.float32)
    y = fg.nn.functional.conv1d(fg.tensor(x), fg.tensor(d), padding=1).numpy()
    np.testing.assert_allclose(y, x, rtol=1e-6)  # a Dirac kernel keeps the input
    q = init.orthogonal_(fg.empty(4, 2, 3), gain=2.0, key=KEY).numpy().reshape(4, 6)
    np.testing.assert_allclose(q @ q.T, 4 * np.eye(4), atol=1e-5)


def test_same_key_same_values_and_generator():
    a = init.normal_(fg.empty(5), key=KEY)
    assert init.normal_(fg.empty(5), key=KEY).tolist() == a.tolist()
    fg.manual_seed(3)
    b = init.uniform_(fg.empty(5))
    fg.manual_seed(3)
    assert init.uniform_(fg.empty(5)).tolist() == b.tolist()
    assert init.uniform_(fg.empty(5), generator=fg.Generator(1)).tolist() == \
        init.uniform_(fg.empty(5), generator=fg.Generator(1)).tolist()


def test_init_rebinds_module_parameters():
    lin = nn.Linear(3, 2)
    tied = nn.Linear(3, 2)
    tied.weight = lin.weight
    old = lin.weight
    new = init.xavier_uniform_(lin.weight, key=KEY)  # torch style: the return value may be ignored
    assert lin.weight is new and tied.weight is new and new is not old
    assert isinstance(new, nn.Parameter) and new.requires_grad
    plain = fg.ones(2, 2)
    out = init.zeros_(plain)
    assert out is not plain and plain.tolist() == [[1.0, 1.0], [1.0, 1.0]] and not out.requires_grad
    leaf = init.ones_(fg.zeros(2, requires_grad=True))
    assert leaf.requires_grad and leaf.is_leaf

    def reinit(m):
        if isinstance(m, nn.Linear):
            init.zeros_(m.bias)

    net = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1)).apply(reinit)
    assert all(float(abs(m.bias).sum()) == 0 for m in net if isinstance(m, nn.Linear))


def test_errors():
    with pytest.raises(OpErrorOrTypeError):
        init.uniform_(fg.tensor([1, 2]))
    with pytest.raises(TypeError, match="fgraph Tensor"):
        init.normal_(np.zeros(3))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(fg.empty(2, 2), mode="fan_avg")
    with pytest.raises(ValueError, match="only 2-D"):
        init.eye_(fg.empty(2, 2, 2))


OpErrorOrTypeError = (fg.OpError, TypeError)
