"""fgraph.nn.utils: gradient clipping against NumPy (always) and PyTorch (when installed), and
parameters_to_vector / vector_to_parameters (round trip, rebinding, tied parameters)."""
import math
import warnings

import jax
import numpy as np
import pytest

import fgraph as fg
from fgraph import nn
from fgraph.nn import utils
from fgraph.nn.parameter import owners

SHAPES = [(3, 4), (4,), (2, 1, 3), ()]
NORM_TYPES = [2.0, 1.0, math.inf, 3.0]


def _arrays(seed=0, scale=1.0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return [np.asarray(scale * rng.standard_normal(s), dtype=dtype) for s in SHAPES]


def _np_clip(arrays, max_norm, p):
    """PyTorch's clip_grad_norm_ arithmetic in NumPy: (clipped arrays, total norm)."""
    norms = [np.linalg.norm(a.ravel(), p) for a in arrays]
    total = np.linalg.norm(np.array(norms), p)
    coef = min(max_norm / (total + 1e-6), 1.0)
    return [a * coef for a in arrays], total


def _torch_clip(torch, arrays, max_norm, p, **kwargs):
    params = [torch.zeros(a.shape, dtype=torch.from_numpy(a).dtype, requires_grad=True) for a in arrays]
    for param, a in zip(params, arrays):
        param.grad = torch.from_numpy(a.copy())
    total = torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type=p, **kwargs)
    return [param.grad.numpy() for param in params], total.numpy()


# -- clip_grad_norm_ ---------------------------------------------------------------------------------
@pytest.mark.parametrize("p", NORM_TYPES)
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_matches_numpy(p, max_norm):
    arrays = _arrays()
    grads = [fg.tensor(a) for a in arrays]
    clipped, total = utils.clip_grad_norm_(grads, max_norm, norm_type=p)
    expected, expected_total = _np_clip(arrays, max_norm, p)
    np.testing.assert_allclose(total.numpy(), expected_total, rtol=1e-12)
    assert isinstance(clipped, list) and len(clipped) == len(arrays)
    for c, e in zip(clipped, expected):
        assert c.shape == e.shape
        np.testing.assert_allclose(c.numpy(), e, rtol=1e-12, atol=1e-15)
    if max_norm < expected_total:  # really clipped: the new total norm is max_norm (up to the 1e-6)
        new_total = np.linalg.norm([np.linalg.norm(c.numpy().ravel(), p) for c in clipped], p)
        np.testing.assert_allclose(new_total, max_norm, rtol=1e-5)
    else:
        for c, a in zip(clipped, arrays):
            np.testing.assert_array_equal(c.numpy(), a)


@pytest.mark.parametrize("p", NORM_TYPES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_clip_grad_norm_matches_torch(p, dtype):
    torch = pytest.importorskip("torch")
    arrays = _arrays(seed=1, scale=2.0, dtype=dtype)
    clipped, total = utils.clip_grad_norm_([fg.tensor(a) for a in arrays], 0.7, norm_type=p)
    t_grads, t_total = _torch_clip(torch, arrays, 0.7, p)
    rtol = 1e-12 if dtype == np.float64 else 1e-6
    assert total.dtype == t_total.dtype
    np.testing.assert_allclose(total.numpy(), t_total, rtol=rtol)
    for c, t in zip(clipped, t_grads):
        assert c.dtype == t.dtype
        np.testing.assert_allclose(c.numpy(), t, rtol=rtol, atol=1e-7 if dtype == np.float32 else 0)


def test_get_total_norm_and_clip_grads_with_norm_match_torch():
    torch = pytest.importorskip("torch")
    arrays = _arrays(seed=2)
    for p in (2.0, math.inf):
        ours = utils.get_total_norm([fg.tensor(a) for a in arrays], norm_type=p)
        theirs = torch.nn.utils.get_total_norm([torch.from_numpy(a) for a in arrays], norm_type=p)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    params = [torch.zeros(a.shape, dtype=torch.float64, requires_grad=True) for a in arrays]
    for param, a in zip(params, arrays):
        param.grad = torch.from_numpy(a.copy())
    torch.nn.utils.clip_grads_with_norm_(params, 0.3, torch.tensor(2.5, dtype=torch.float64))
    clipped = utils.clip_grads_with_norm_([fg.tensor(a) for a in arrays], 0.3, fg.tensor(2.5, dtype=fg.float64))
    for c, param in zip(clipped, params):
        np.testing.assert_allclose(c.numpy(), param.grad.numpy(), rtol=1e-12)


def test_get_total_norm_and_clip_grads_with_norm_match_numpy():
    arrays = _arrays(seed=5)
    for p in NORM_TYPES:
        _, expected = _np_clip(arrays, 1.0, p)
        np.testing.assert_allclose(utils.get_total_norm([fg.tensor(a) for a in arrays], p).numpy(), expected,
                                   rtol=1e-12)
    clipped = utils.clip_grads_with_norm_({"a": fg.tensor(arrays[0]), "b": None}, 0.5, 4.0)
    assert list(clipped) == ["a", "b"] and clipped["b"] is None
    np.testing.assert_allclose(clipped["a"].numpy(), arrays[0] * 0.5 / (4.0 + 1e-6), rtol=1e-12)
    same = utils.clip_grads_with_norm_([fg.tensor(arrays[0])], 10.0, 4.0)  # coefficient clamped to 1
    np.testing.assert_array_equal(same[0].numpy(), arrays[0])


def test_clip_grad_norm_on_gradients_from_backward():
    fg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    x = fg.tensor(np.random.default_rng(0).standard_normal((5, 3)))
    grads = (model(x) ** 2).sum().backward()
    clipped, total = utils.clip_grad_norm_(grads, 0.1)
    assert isinstance(clipped, fg.Gradients) and len(clipped) == len(grads)
    params = list(model.parameters())
    assert all(p in clipped for p in params)
    expected, expected_total = _np_clip([grads[p].numpy() for p in params], 0.1, 2.0)
    np.testing.assert_allclose(total.numpy(), expected_total, rtol=1e-12)
    for p, e in zip(params, expected):
        np.testing.assert_allclose(clipped[p].numpy(), e, rtol=1e-12)
        assert not clipped[p].requires_grad


def test_containers_keep_their_kind_keys_and_none_entries():
    a, b = fg.tensor([3.0, 0.0]), fg.tensor([0.0, 4.0])
    out, total = utils.clip_grad_norm_({"w": a, "frozen": None, "b": b}, 1.0)
    assert list(out) == ["w", "frozen", "b"] and out["frozen"] is None
    assert total.item() == pytest.approx(5.0)
    out, _ = utils.clip_grad_norm_((a, None, b), 1.0)
    assert isinstance(out, tuple) and out[1] is None
    np.testing.assert_allclose(out[2].numpy(), [0.0, 4.0 / (5.0 + 1e-6)], rtol=1e-6)
    single, total = utils.clip_grad_norm_(a, 1.0)
    assert isinstance(single, fg.Tensor) and total.item() == pytest.approx(3.0)
    assert utils.clip_grad_value_(b, 1.5).tolist() == [0.0, 1.5]


def test_gradients_with_a_graph_are_detached():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    (g,) = fg.grad((x ** 3).sum(), [x], create_graph=True)
    assert g.requires_grad
    (clipped,), _ = utils.clip_grad_norm_([g], 1.0)
    assert not clipped.requires_grad and clipped.grad_fn is None
    assert not utils.clip_grad_value_([g], 1.0)[0].requires_grad


def test_empty_inputs():
    out, total = utils.clip_grad_norm_([], 1.0)
    assert out == [] and total.item() == 0.0 and total.dtype == np.float32
    assert utils.get_total_norm([None]).item() == 0.0
    with pytest.warns(UserWarning, match="empty generator"):
        utils.clip_grad_norm_((g for g in []), 1.0)


# -- non-finite gradients -------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_norm_matches_torch_and_numpy(bad):
    arrays = _arrays(seed=3)
    arrays[1] = arrays[1].copy()
    arrays[1][2] = bad
    clipped, total = utils.clip_grad_norm_([fg.tensor(a) for a in arrays], 1.0)
    assert np.isnan(total.item()) if np.isnan(bad) else np.isinf(total.item())
    with np.errstate(invalid="ignore"):
        expected = [a * min(1.0 / (total.item() + 1e-6), 1.0) for a in arrays]
    for c, e in zip(clipped, expected):  # nan everywhere for a nan norm; 0 (finite) and nan (inf) for an inf norm
        np.testing.assert_array_equal(c.numpy(), e)
    torch = pytest.importorskip("torch")
    t_grads, t_total = _torch_clip(torch, arrays, 1.0, 2.0)
    np.testing.assert_array_equal(total.numpy(), t_total)
    for c, t in zip(clipped, t_grads):
        np.testing.assert_array_equal(c.numpy(), t)


def test_error_if_nonfinite():
    good = [fg.tensor([1.0, 2.0])]
    utils.clip_grad_norm_(good, 1.0, error_if_nonfinite=True)
    for bad in (np.nan, np.inf, -np.inf):
        grads = [fg.tensor([1.0, bad])]
        with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is "
                                               "non-finite"):
            utils.clip_grad_norm_(grads, 1.0, error_if_nonfinite=True)
        with pytest.raises(RuntimeError, match="non-finite"):
            utils.get_total_norm(grads, error_if_nonfinite=True)
    _, total = utils.clip_grad_norm_([fg.tensor([1.0, np.inf])], 1.0, norm_type="inf")
    assert np.isinf(total.item())


def test_error_if_nonfinite_torch_message():
    torch = pytest.importorskip("torch")
    param = torch.zeros(2, requires_grad=True)
    param.grad = torch.tensor([1.0, float("nan")])
    with pytest.raises(RuntimeError) as theirs:
        torch.nn.utils.clip_grad_norm_([param], 1.0, error_if_nonfinite=True)
    with pytest.raises(RuntimeError) as ours:
        utils.clip_grad_norm_([fg.tensor([1.0, np.nan])], 1.0, error_if_nonfinite=True)
    assert str(ours.value) == str(theirs.value)


# -- clip_grad_value_ ----------------------------------------------------------------------------------
@pytest.mark.parametrize("clip_value", [0.3, 5.0])
def test_clip_grad_value_matches_numpy_and_torch(clip_value):
    arrays = _arrays(seed=4, scale=2.0)
    arrays[0] = arrays[0].copy()
    arrays[0][0, 0] = np.nan
    clipped = utils.clip_grad_value_([fg.tensor(a) for a in arrays], clip_value)
    for c, a in zip(clipped, arrays):
        np.testing.assert_array_equal(c.numpy(), np.clip(a, -clip_value, clip_value))
    torch = pytest.importorskip("torch")
    params = [torch.zeros(a.shape, dtype=torch.float64, requires_grad=True) for a in arrays]
    for param, a in zip(params, arrays):
        param.grad = torch.from_numpy(a.copy())
    torch.nn.utils.clip_grad_value_(params, clip_value)
    for c, param in zip(clipped, params):
        np.testing.assert_array_equal(c.numpy(), param.grad.numpy())


def test_clip_grad_value_keeps_float32():
    g = fg.tensor(np.array([-2.0, 0.25, 3.0], dtype=np.float32))
    out = utils.clip_grad_value_({"g": g}, 1.0)["g"]
    assert out.dtype == np.float32 and out.tolist() == [-1.0, 0.25, 1.0]


# -- errors, tracing, kernels ---------------------------------------------------------------------------
def test_parameters_instead_of_gradients_is_a_clear_error():
    model = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="fgraph parameters carry no .grad"):
        utils.clip_grad_norm_(model.parameters(), 1.0)
    with pytest.raises(TypeError, match="expected gradient tensors"):
        utils.clip_grad_value_([np.ones(2)], 1.0)
    with pytest.raises(TypeError, match="norm_type must be a number"):
        utils.clip_grad_norm_([fg.ones(2)], 1.0, norm_type="two")
    with pytest.raises(TypeError, match="clip_grad_norm_: expected the gradients returned by backward"):
        utils.clip_grad_norm_(3.0, 1.0)


def test_clipping_is_traceable():
    arrays = _arrays(seed=6)

    def step(xs, max_norm):
        clipped, total = utils.clip_grad_norm_([fg.tensor(x) for x in xs], fg.tensor(max_norm))
        valued = utils.clip_grad_value_(clipped, 0.05)
        return [c.array for c in valued], total.array

    got, total = jax.jit(step)(arrays, 0.4)
    expected, expected_total = _np_clip(arrays, 0.4, 2.0)
    np.testing.assert_allclose(total, expected_total, rtol=1e-12)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, np.clip(e, -0.05, 0.05), rtol=1e-12)

    def checked(xs):
        return utils.clip_grad_norm_([fg.tensor(x) for x in xs], 1.0, error_if_nonfinite=True)[1].array

    with pytest.raises(RuntimeError, match="error_if_nonfinite=False"):
        jax.jit(checked)(arrays)


def test_one_kernel_reused_across_max_norms():
    from fgraph.nn.utils import clip_grad

    grads = [fg.tensor(a) for a in _arrays(seed=7)]
    utils.clip_grad_norm_(grads, 1.0)
    size = clip_grad._clip_norm_kernel._cache_size()
    for max_norm in (0.5, 2.0, 3):
        utils.clip_grad_norm_(grads, max_norm)
    assert clip_grad._clip_norm_kernel._cache_size() == size


# -- parameters_to_vector / vector_to_parameters ------------------------------------------------------
def _model():
    fg.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).double()


def test_parameters_to_vector_order_and_gradient():
    model = _model()
    params = list(model.parameters())
    vec = utils.parameters_to_vector(model.parameters())
    np.testing.assert_array_equal(vec.numpy(), np.concatenate([p.numpy().ravel() for p in params]))
    grads = fg.backward((vec * vec).sum())
    for p in params:
        np.testing.assert_allclose(grads[p].numpy(), 2 * p.numpy(), rtol=1e-12)


def test_parameters_to_vector_matches_torch():
    torch = pytest.importorskip("torch")
    model = _model()
    t_model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)).double()
    model.load_state_dict(t_model.state_dict())
    t_vec = torch.nn.utils.parameters_to_vector(t_model.parameters())
    np.testing.assert_array_equal(utils.parameters_to_vector(model.parameters()).numpy(), t_vec.detach().numpy())
    new_vec = np.arange(t_vec.numel(), dtype=np.float64)
    torch.nn.utils.vector_to_parameters(torch.from_numpy(new_vec), t_model.parameters())
    utils.vector_to_parameters(fg.tensor(new_vec), model.parameters())
    for (name, p), (t_name, t_p) in zip(model.named_parameters(), t_model.named_parameters()):
        assert name == t_name
        np.testing.assert_array_equal(p.numpy(), t_p.detach().numpy())


def test_vector_to_parameters_round_trip_and_rebinding():
    model = _model()
    model[2].bias = nn.Parameter(model[2].bias, requires_grad=False)
    old = list(model.parameters())
    vec = utils.parameters_to_vector(old)
    new = utils.vector_to_parameters(vec * 2, model.parameters())
    current = list(model.parameters())
    assert len(new) == len(current) and all(n is c for n, c in zip(new, current))
    assert all(n is not o for n, o in zip(new, old))
    for n, o in zip(new, old):
        assert isinstance(n, nn.Parameter) and n.is_leaf and n.grad_fn is None
        assert n.shape == o.shape and n.requires_grad == o.requires_grad
        np.testing.assert_array_equal(n.numpy(), 2 * o.numpy())
        assert owners(o) == []
    assert model[2].bias.requires_grad is False
    np.testing.assert_array_equal(utils.parameters_to_vector(model.parameters()).numpy(), 2 * vec.numpy())
    y = model(fg.tensor(np.ones((1, 3))))
    grads = y.sum().backward()
    assert all(p in grads for p in new[:-1]) and new[-1] not in grads


def test_vector_to_parameters_with_tied_parameters():
    a, b = nn.Linear(2, 2, bias=False), nn.Linear(2, 2, bias=False)
    b.weight = a.weight
    model = nn.Sequential(a, b)
    assert len(list(model.parameters())) == 1
    (new,) = utils.vector_to_parameters(fg.tensor([1.0, 2.0, 3.0, 4.0]), model.parameters())
    assert a.weight is new and b.weight is new
    assert new.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert sorted(name for _, name in owners(new)) == ["weight", "weight"]


def test_vector_to_parameters_takes_the_vectors_dtype_like_torch():
    p = nn.Parameter(fg.zeros(3, dtype=fg.float64))
    (new,) = utils.vector_to_parameters(fg.tensor(np.array([1.0, 2.0, 3.0], dtype=np.float32)), [p])
    assert new.dtype == np.float32
    torch = pytest.importorskip("torch")
    t_p = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))
    torch.nn.utils.vector_to_parameters(torch.tensor([1.0, 2.0, 3.0]), [t_p])
    assert str(t_p.dtype) == "torch.float32"


def test_vector_to_parameters_is_detached_from_the_vector():
    model = _model()
    vec = utils.parameters_to_vector(model.parameters())
    assert vec.requires_grad
    new = utils.vector_to_parameters(vec, model.parameters())
    assert all(p.is_leaf and p.requires_grad for p in new)


def test_conversion_errors():
    model = _model()
    n = sum(p.numel() for p in model.parameters())
    with pytest.raises(ValueError, match=f"the vector has {n - 1} elements but the 4 parameters hold {n}"):
        utils.vector_to_parameters(fg.zeros(n - 1), model.parameters())
    with pytest.raises(ValueError, match="hold"):
        utils.vector_to_parameters(fg.zeros(n + 1), model.parameters())
    with pytest.raises(TypeError, match="expected an fgraph Tensor, but got: ndarray"):
        utils.vector_to_parameters(np.zeros(n), model.parameters())
    with pytest.raises(ValueError, match="expected a 1-D vector"):
        utils.vector_to_parameters(fg.zeros(1, n), model.parameters())
    with pytest.raises(ValueError, match="non-empty"):
        utils.parameters_to_vector([])
    with pytest.raises(TypeError, match="wrap it in a list"):
        utils.parameters_to_vector(model[0].weight)
    assert utils.vector_to_parameters(fg.zeros(0), []) == []


def test_public_names():
    torch = pytest.importorskip("torch")
    for name in ("clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_",
                 "parameters_to_vector", "vector_to_parameters"):
        assert hasattr(utils, name) and hasattr(torch.nn.utils, name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        utils.clip_grad_norm([fg.ones(2)], 1.0)
    assert any(issubclass(w.category, FutureWarning) for w in caught)


def test_mixed_dtypes_match_torch():
    torch = pytest.importorskip("torch")
    a, b = np.array([1.5, -2.0], dtype=np.float32), np.array([[3.0, 0.25]])
    for p in (2.0, math.inf):
        t_grads, t_total = _torch_clip(torch, [a, b], 1.0, p)
        (ga, gb), total = utils.clip_grad_norm_([fg.tensor(a), fg.tensor(b)], 1.0, norm_type=p)
        assert total.dtype == np.float64 and ga.dtype == np.float32 and gb.dtype == np.float64
        np.testing.assert_allclose(total.numpy(), t_total, rtol=1e-12)
        np.testing.assert_allclose(ga.numpy(), t_grads[0], rtol=1e-6)
        np.testing.assert_allclose(gb.numpy(), t_grads[1], rtol=1e-12)
