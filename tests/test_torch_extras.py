"""The non-differentiable and non-tabular parts of torch's remaining top-level names (fgraph/ops/torch_extras.py,
complex_more.py, special_bessel.py): histogram, Tensor.type, isreal, seed, vmap, dropout, and the values of
bessel_j0/j1/erfcx far outside the op tables' domains (against SciPy and PyTorch)."""
import jax
import numpy as np
import pytest

import fgraph as fg
from fgraph.errors import OpError

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("bins,kw", [(4, {}), (3, {"range": (0.0, 2.0)}), (5, {"density": True}), ("edges", {})])
def test_histogram_matches_torch(bins, kw):
    x = np.array([0.1, 0.5, 0.5, 1.0, 1.7, 2.0, 2.5, -0.3, 1.25])
    w = np.linspace(0.5, 2.0, x.size)
    if bins == "edges":
        edges = np.array([0.0, 0.5, 1.0, 2.0])
        f_bins, t_bins = fg.tensor(edges), torch.tensor(edges)
    else:
        f_bins = t_bins = bins
    for weight in (None, w):
        fw, tw = (None, None) if weight is None else (fg.tensor(weight), torch.tensor(weight))
        h, e = fg.histogram(fg.tensor(x), f_bins, weight=fw, **kw)
        th, te = torch.histogram(torch.tensor(x), t_bins, weight=tw, **kw)
        np.testing.assert_allclose(np.asarray(h.tolist()), th.numpy(), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(e.tolist()), te.numpy(), rtol=1e-12)


def test_histogram_single_value_and_errors():
    h, e = fg.histogram(fg.tensor([1.0, 1.0, 1.0]), 3)
    th, te = torch.histogram(torch.tensor([1.0, 1.0, 1.0]), 3)
    assert h.tolist() == th.tolist() and np.allclose(e.tolist(), te.tolist())
    with pytest.raises(OpError, match="histogram: input must be float32"):
        fg.histogram(fg.tensor([1, 2]), 2)
    with pytest.raises(OpError, match="histogram: bins must be a positive int"):
        fg.histogram(fg.tensor([1.0]), 0)


def test_tensor_type():
    x = fg.tensor([1, 2])
    for dtype, name in [(fg.float32, "FloatTensor"), (fg.float64, "DoubleTensor"), (fg.int64, "LongTensor"),
                        (fg.bool, "BoolTensor"), (fg.int32, "IntTensor")]:
        assert x.type(dtype).type() == f"fgraph.{name}"
        assert torch.tensor([1, 2]).type(getattr(torch, str(np.dtype(dtype)))).type() == f"torch.{name}"
    assert x.type("torch.DoubleTensor").dtype == np.float64
    y = fg.tensor([1.0], requires_grad=True)
    assert fg.grad(y.type(fg.float64).sum(), [y])[0].tolist() == [1.0]
    with pytest.raises(OpError, match="unknown tensor type"):
        x.type("torch.cuda.FloatTensor")


def test_small_names():
    z = fg.complex(fg.tensor([1.0, 2.0]), fg.tensor([0.0, -1.0]))
    assert fg.isreal(z).tolist() == [True, False] and fg.isreal(fg.tensor([1.0])).tolist() == [True]
    assert fg.is_tensor(z) and not fg.is_tensor(np.ones(2))
    assert fg.numel(fg.ones(2, 3)) == 6
    s = fg.seed()
    assert fg.initial_seed() == s and 0 <= s < 2**64
    assert fg.vmap is fg.func.vmap
    assert fg.dropout(fg.ones(4), 0.5, False).tolist() == [1.0] * 4
    key = jax.random.PRNGKey(3)
    assert fg.dropout(fg.ones(8), 0.5, True, key=key).tolist() == fg.nn.functional.dropout(
        fg.ones(8), 0.5, key=key).tolist()
    with pytest.raises(OpError, match="view_as_complex: the last dimension must have size 2"):
        fg.view_as_complex(fg.ones(3))
    with pytest.raises(OpError, match="view_as_real: expected a complex tensor"):
        fg.view_as_real(fg.ones(2))
    with pytest.raises(OpError, match="trapezoid: pass either x or dx"):
        fg.trapezoid(fg.ones(3), fg.ones(3), dx=1.0)
    assert fg.trapezoid(fg.ones(2, 0)).tolist() == [0.0, 0.0]


def test_special_values_far_out():
    sp = pytest.importorskip("scipy.special")
    x = np.concatenate([np.linspace(-60.0, 60.0, 241), [1e3, 1e6]])
    # Far out, J ~ sqrt(2 / (pi x)) cos(x - phase): the phase is only known to ~|x| eps (the backend's
    # sin/cos round it differently: XLA:GPU's reduce 1e6 less exactly than the CPU's), times that envelope.
    far = 4 * np.abs(x) * np.finfo(np.float64).eps * np.sqrt(2 / (np.pi * np.maximum(np.abs(x), 1.0)))
    for ours, theirs in ((fg.special.bessel_j0, sp.j0), (fg.special.bessel_j1, sp.j1)):
        got, want = np.array(ours(fg.tensor(x)).tolist()), theirs(x)
        bad = np.abs(got - want) > 1e-13 * np.abs(want) + 1e-15 + far
        assert not bad.any(), f"{ours.__name__} at {x[bad]}: {got[bad]} vs SciPy's {want[bad]}"
    e = np.concatenate([np.linspace(-26.0, 80.0, 213), [1e4, 1e10, 1e300, np.inf]])
    t = torch.special.erfcx(torch.tensor(e)).numpy()
    np.testing.assert_allclose(fg.special.erfcx(fg.tensor(e)).tolist(), t, rtol=5e-14)
    f32 = fg.special.erfcx(fg.tensor([10.0, 100.0, 1e20, -10.0], dtype=fg.float32)).tolist()
    assert np.isfinite(f32[:3]).all() and f32[3] == np.inf
    np.testing.assert_allclose(f32[:3], sp.erfcx([10.0, 100.0, 1e20]), rtol=1e-6)


def test_aliases_and_lu_are_the_functions_they_name():
    """The one-line aliases (their table rows were dropped for CI time) and ``fg.lu`` on ``linalg.lu_factor``."""
    x = fg.tensor([[1.5, -2.0, 0.5], [3.0, 1.0, -1.0], [0.25, 2.0, 4.0]], dtype=fg.float64)
    y = fg.tensor([0.5, -1.0, 2.0], dtype=fg.float64)
    pairs = [(fg.absolute(x), fg.abs(x)), (fg.multiply(x, y), x * y), (x.negative(), -x),
             (fg.subtract(x, y, alpha=2.0), x - 2.0 * y), (fg.ravel(x), x.reshape(-1))]
    for got, want in pairs:
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    lu, pivots = fg.lu(x)
    want_lu, want_pivots = jax.scipy.linalg.lu_factor(x.array)
    np.testing.assert_allclose(lu.numpy(), np.asarray(want_lu), rtol=1e-12)
    np.testing.assert_array_equal(pivots.numpy(), np.asarray(want_pivots) + 1)  # torch's pivots are 1-based
