"""Reductions beyond the table: non-differentiable results (argmax, argmin, all, any, max's
indices), exact gradients at zeros and ties, PyTorch's special cases (std of a constant,
var with too large a correction, logsumexp of large or infinite values), node names, and
tracing under ``jax.jit``. The differentiable values and derivatives are in
tests/op_tables/reduction.py.
"""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg

X = np.array([[1.0, 3.0, 3.0, -2.0], [0.5, -1.0, 4.0, 4.0], [2.0, 2.0, 2.0, 2.0]])


def t(a, requires_grad=False):
    return fg.tensor(np.asarray(a, dtype=np.float64), dtype="float64", requires_grad=requires_grad)


# -- argmax / argmin -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (None, True), (0, False), (1, True), (-1, False)])
def test_argmax_argmin_match_numpy_first_index_on_ties(name, dim, keepdim):
    x = t(X, requires_grad=True)
    out = getattr(fg, name)(x, dim=dim, keepdim=keepdim)
    expected = getattr(np, name)(X, axis=dim, keepdims=keepdim)  # NumPy also returns the first index
    assert out.shape == expected.shape
    assert jnp.issubdtype(out.dtype, jnp.integer)
    np.testing.assert_array_equal(out.numpy(), expected)
    assert not out.requires_grad and out.grad_fn is None
    method = getattr(x, name)(dim, keepdim)
    np.testing.assert_array_equal(method.numpy(), expected)


def test_argmax_of_0d_tensor():
    assert fg.argmax(t(3.0)).item() == 0
    assert fg.argmin(t(3.0), dim=0).item() == 0


# -- all / any -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["all", "any"])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), ((0, 1), True), (-1, True)])
def test_all_any_match_numpy(name, dim, keepdim):
    a = np.array([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [0.0, 0.0, 0.0]])
    for x in (t(a, requires_grad=True), fg.tensor(a != 0)):
        out = getattr(fg, name)(x, dim, keepdim)
        assert out.dtype == np.bool_ and not out.requires_grad
        np.testing.assert_array_equal(out.numpy(), getattr(np, name)(a, axis=dim, keepdims=keepdim))
        np.testing.assert_array_equal(getattr(x, name)(dim, keepdim).numpy(), out.numpy())


def test_all_any_of_no_elements():
    empty = fg.zeros(0, 3)
    assert fg.all(empty).item() is True and fg.any(empty).item() is False
    assert fg.all(empty, dim=1).shape == (0,)


# -- max / min with dim: (values, indices) -------------------------------------------------------------------
def test_max_with_dim_returns_named_tuple_and_routes_gradient_to_first_index():
    x = t(X, requires_grad=True)
    res = fg.max(x, 1)
    values, indices = res
    assert res.values is values and res.indices is indices and type(res).__name__ == "max"
    np.testing.assert_array_equal(values.numpy(), X.max(1))
    np.testing.assert_array_equal(indices.numpy(), X.argmax(1))
    assert values.grad_fn.name() == "MaxBackward0"
    assert not indices.requires_grad and jnp.issubdtype(indices.dtype, jnp.integer)
    (gx,) = fg.grad(values.sum(), [x])
    expected = np.zeros_like(X)
    expected[np.arange(3), X.argmax(1)] = 1.0  # ties: only the first maximal element
    np.testing.assert_array_equal(gx.numpy(), expected)


def test_min_with_dim_keepdim_and_method_form():
    x = t(X, requires_grad=True)
    values, indices = x.min(dim=0, keepdim=True)
    assert values.shape == (1, 4) and indices.shape == (1, 4)
    np.testing.assert_array_equal(indices.numpy(), X.argmin(0)[None])
    assert values.grad_fn.name() == "MinBackward0"


def test_max_without_dim_splits_ties_evenly():
    x = t([[1.0, 4.0], [4.0, 4.0]], requires_grad=True)
    out = fg.max(x)
    assert out.shape == () and out.grad_fn.name() == "MaxBackward1"
    (gx,) = fg.grad(out, [x])
    np.testing.assert_allclose(gx.numpy(), [[0.0, 1 / 3], [1 / 3, 1 / 3]])
    (gy,) = fg.grad(x.min(), [x])
    np.testing.assert_allclose(gy.numpy(), [[1.0, 0.0], [0.0, 0.0]])


def test_amax_amin_split_ties_evenly_per_slice():
    x = t([[2.0, 2.0, 1.0], [0.0, 0.0, 0.0]], requires_grad=True)
    (gx,) = fg.grad(fg.amax(x, 1).sum(), [x])
    np.testing.assert_allclose(gx.numpy(), [[0.5, 0.5, 0.0], [1 / 3, 1 / 3, 1 / 3]])
    (gy,) = fg.grad(fg.amin(x, dim=(0, 1)), [x])
    np.testing.assert_allclose(gy.numpy(), [[0.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3]])
    assert fg.amax(x, 1).grad_fn.name() == "AmaxBackward0"


def test_max_binary_form_is_maximum():
    a, b = t([1.0, 5.0], requires_grad=True), t([3.0, 2.0])
    np.testing.assert_array_equal(fg.max(a, b).numpy(), [3.0, 5.0])
    np.testing.assert_array_equal(fg.min(a, other=b).numpy(), [1.0, 2.0])
    assert fg.max(a, b).grad_fn.name() == "MaximumBackward0"


# -- prod / cumprod with zeros: exact first and second derivatives -------------------------------------------
def _hessian(f, x):
    (g,) = fg.grad(f(x), [x], create_graph=True)
    rows = [fg.grad(g[i], [x], allow_unused=True)[0] for i in range(x.shape[0])]
    return g.numpy(), np.stack([np.zeros(x.shape) if r is None else r.numpy() for r in rows])


@pytest.mark.parametrize("values", [[2.0, 0.0, 3.0, -1.5], [0.0, 2.0, 0.0, 3.0], [0.0, 0.0, 0.0, 5.0]])
def test_prod_gradient_and_hessian_exact_with_zeros(values):
    x = t(values, requires_grad=True)
    g, h = _hessian(fg.prod, x)
    v = np.array(values)
    n = len(v)
    expected_g = [np.prod(np.delete(v, i)) for i in range(n)]
    expected_h = [[0.0 if i == j else np.prod(np.delete(v, [i, j])) for j in range(n)] for i in range(n)]
    np.testing.assert_array_equal(g, expected_g)
    np.testing.assert_array_equal(h, expected_h)


def test_cumprod_gradient_and_hessian_exact_with_zeros():
    v = np.array([2.0, 0.0, 3.0, 0.0, -1.5])
    x = t(v, requires_grad=True)
    g, h = _hessian(lambda y: fg.cumprod(y, 0).sum(), x)

    def f(u):
        return jnp.sum(jnp.cumprod(u))

    np.testing.assert_allclose(g, jax.grad(f)(v), rtol=0, atol=1e-12)
    np.testing.assert_allclose(h, jax.hessian(f)(v), rtol=0, atol=1e-12)


def test_prod_and_cumprod_of_integers_accumulate_as_int64():
    x = fg.tensor([1, 2, 3], dtype="int32")
    assert fg.prod(x).item() == 6 and fg.prod(x).dtype == np.int64
    assert fg.cumsum(fg.tensor([True, False, True]), 0).tolist() == [1, 1, 2]
    assert fg.cumprod(x, 0, dtype="float64").dtype == np.float64


def test_prod_node_names_follow_pytorch():
    x = t([[1.0, 2.0]], requires_grad=True)
    assert fg.prod(x).grad_fn.name() == "ProdBackward0"
    assert fg.prod(x, 1).grad_fn.name() == "ProdBackward1"
    assert fg.cumprod(x, 1).grad_fn.name() == "CumprodBackward0"
    assert fg.cumsum(x, 1).grad_fn.name() == "CumsumBackward0"
    assert fg.norm(x).grad_fn.name() == "LinalgVectorNormBackward0"
    assert fg.logsumexp(x, 1).grad_fn.name() == "LogsumexpBackward0"
    assert (fg.var(x).grad_fn.name(), fg.std(x).grad_fn.name()) == ("VarBackward0", "StdBackward0")


# -- PyTorch's special cases ---------------------------------------------------------------------------------
def test_std_of_a_constant_slice_has_zero_gradient():
    x = t([[1.5, 1.5, 1.5], [1.0, 2.0, 4.0]], requires_grad=True)
    s = fg.std(x, dim=1)
    (g,) = fg.grad(s.sum(), [x], create_graph=True)
    assert np.all(g.numpy()[0] == 0.0) and np.all(np.isfinite(g.numpy()))
    (h,) = fg.grad((g * g).sum(), [x])
    assert np.all(np.isfinite(h.numpy()))


def test_norm_of_zero_vector_has_zero_gradient():
    x = t([[0.0, 0.0], [3.0, 4.0]], requires_grad=True)
    for p in (2, 3, 1.5):
        (g,) = fg.grad(fg.norm(x, p, dim=1).sum(), [x])
        np.testing.assert_array_equal(g.numpy()[0], [0.0, 0.0])


def test_var_correction_and_unbiased_alias():
    x = t([1.0, 2.0, 4.0])
    assert fg.var(x, unbiased=False).item() == pytest.approx(14 / 9)
    assert fg.var(x, correction=0).item() == fg.var(x, unbiased=False).item()
    assert fg.var(x, True).item() == fg.var(x).item() == pytest.approx(7 / 3)
    assert fg.var(x, 0, False).item() == pytest.approx(14 / 9)  # var(input, dim, unbiased)
    assert math.isinf(fg.var(x, correction=3).item())  # n - correction <= 0, as PyTorch
    assert math.isnan(fg.var(t([2.0, 2.0]), correction=2).item())
    v, m = fg.var_mean(x, correction=0)
    assert (v.item(), m.item()) == (pytest.approx(14 / 9), pytest.approx(7 / 3))
    s, m = fg.std_mean(x, dim=0)
    assert s.item() == pytest.approx(math.sqrt(7 / 3))


def test_logsumexp_is_stable_and_handles_infinities():
    x = t([[1000.0, 1000.0], [-math.inf, 0.0], [-math.inf, -math.inf]], requires_grad=True)
    out = fg.logsumexp(x, 1)
    np.testing.assert_allclose(out.numpy(), [1000.0 + math.log(2.0), 0.0, -math.inf])
    (g,) = fg.grad(out[:2].sum(), [x])
    # A slice of only -inf has no softmax: nan, even for a zero incoming gradient, as in PyTorch.
    np.testing.assert_allclose(g.numpy(), [[0.5, 0.5], [0.0, 1.0], [math.nan, math.nan]])
    assert fg.logsumexp(fg.tensor([1, 2]), 0).dtype == np.float32  # integers: float32, as PyTorch


def test_norm_orders():
    x = t([[3.0, -4.0, 0.0]])
    assert fg.norm(x).item() == 5.0 and fg.norm(x, "fro").item() == 5.0
    assert fg.norm(x, 1).item() == 7.0 and fg.norm(x, 0).item() == 2.0
    assert fg.norm(x, math.inf).item() == 4.0 and fg.norm(x, -math.inf).item() == 0.0
    assert fg.norm(x, 3, dim=1, keepdim=True).shape == (1, 1)
    assert x.norm(p=3).item() == pytest.approx((27 + 64) ** (1 / 3))


# -- everything traces: no host round trips ------------------------------------------------------------------
def test_reductions_trace_under_jit_forward_grad_and_second_order():
    def program(a):
        x = fg.tensor(a, requires_grad=True)
        y = (fg.prod(x, 1).sum() + fg.cumprod(x, 0).sum() + fg.var(x) + fg.std(x, 0).sum() + fg.norm(x, 3)
             + fg.max(x, 1).values.sum() + fg.amax(x) + fg.min(x) + fg.logsumexp(x, 0).sum() + fg.cumsum(x, 1).sum())
        (g,) = fg.grad(y, [x], create_graph=True)
        (h,) = fg.grad((g * g).sum(), [x])
        return y.array, g.array, h.array, fg.argmax(x).array, fg.any(x > 4, dim=1).array

    a = jnp.array([[1.0, 0.0, 3.0], [2.0, 5.0, -1.0]])
    eager = program(a)
    traced = jax.jit(program)(a)
    for e, tr in zip(eager, traced):
        np.testing.assert_allclose(np.asarray(tr), np.asarray(e), rtol=1e-12)


# -- PyTorch oracle for the integer and bool results ---------------------------------------------------------
def test_non_differentiable_results_match_torch():
    torch = pytest.importorskip("torch")
    tx = torch.from_numpy(X)
    x = t(X)
    for dim, keepdim in [(None, False), (None, True), (1, False), (0, True)]:
        np.testing.assert_array_equal(fg.argmax(x, dim, keepdim).numpy(), torch.argmax(tx, dim, keepdim).numpy())
        np.testing.assert_array_equal(fg.argmin(x, dim, keepdim).numpy(), torch.argmin(tx, dim, keepdim).numpy())
    for dim in (0, 1):
        for name in ("max", "min"):
            np.testing.assert_array_equal(getattr(fg, name)(x, dim).indices.numpy(),
                                          getattr(torch, name)(tx, dim).indices.numpy())
    for dim in (None, 1, (0, 1)):
        dims = () if dim is None else (dim,)
        np.testing.assert_array_equal(fg.all(x > 0, dim).numpy(), torch.all(tx > 0, *dims).numpy())
        np.testing.assert_array_equal(fg.any(x > 3, dim).numpy(), torch.any(tx > 3, *dims).numpy())
