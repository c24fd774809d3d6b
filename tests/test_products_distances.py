"""Products, distances and grids: what the op tables cannot express -- gradients at coincident points
and ties, argument conventions and defaults (checked against PyTorch where it is installed), warnings,
integer outputs, node names, Tensor methods and the errors for bad input."""
import itertools
import math
import warnings

import numpy as np
import pytest

import fgraph as fg
from fgraph.errors import OpError

RNG = np.random.default_rng(11)
INF = math.inf


def t(a, requires_grad=False):
    return fg.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def tt(torch, a, requires_grad=False):
    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def _grads(out, xs, w):
    return fg.grad((out * t(w)).sum(), xs)


def _torch_grads(torch, out, xs, w):
    return torch.autograd.grad((out * tt(torch, w)).sum(), xs)


# -- cdist / pdist at coincident points and ties -------------------------------------------------------------
# Rows 0 of x1 and x2 coincide; row 1 of x1 differs from row 1 of x2 by (1, -1, 0.5): a tie for p = inf.
X1 = np.array([[0.5, -1.0, 2.0], [1.0, 2.0, 3.0], [0.0, 0.25, -0.5]])
X2 = np.array([[0.5, -1.0, 2.0], [0.0, 3.0, 2.5]])


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, INF])
def test_cdist_gradient_at_coincident_points_and_ties_matches_torch(torch, p):
    w = RNG.uniform(-1, 1, (3, 2))
    a, b = t(X1, True), t(X2, True)
    out = fg.cdist(a, b, p)
    ga, gb = _grads(out, [a, b], w)
    ta, tb = tt(torch, X1, True), tt(torch, X2, True)
    tout = torch.cdist(ta, tb, p, compute_mode="donot_use_mm_for_euclid_dist")
    tga, tgb = _torch_grads(torch, tout, [ta, tb], w)
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ga.numpy(), tga.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gb.numpy(), tgb.numpy(), rtol=1e-10, atol=1e-12)
    assert np.isfinite(ga.numpy()).all()


def test_cdist_p2_gradient_is_zero_at_coincident_points_without_nan():
    a = t(X1[:1], True)
    (g,) = fg.grad(fg.cdist(a, t(X1[:1])).sum(), [a])
    assert g.tolist() == [[0.0, 0.0, 0.0]]
    (g,) = fg.grad(fg.cdist(a, a).sum(), [a])  # the same tensor on both sides
    assert g.tolist() == [[0.0, 0.0, 0.0]]


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, INF])
def test_cdist_second_derivative_matches_jax(p):
    # PyTorch has no double backward for cdist (_cdist_backward is not differentiable): JAX is the oracle.
    import jax
    import jax.numpy as jnp

    def ref(a, b):
        g = jax.grad(lambda a: jnp.linalg.norm(a[:, None] - b[None], ord=p, axis=-1).sum())(a)
        return (g * g).sum()

    a, b = t(X1, True), t(X2[1:], True)
    (g,) = fg.grad(fg.cdist(a, b, p).sum(), [a], create_graph=True)
    (gg,) = fg.grad((g * g).sum(), [a])
    np.testing.assert_allclose(gg.numpy(), jax.grad(ref)(X1, X2[1:]), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("p", [1.0, 2.0, INF])
def test_pdist_with_repeated_rows_matches_torch(torch, p):
    x = np.array([[0.5, -1.0, 2.0], [0.5, -1.0, 2.0], [1.5, 0.0, 2.5], [0.0, 1.0, 0.0]])
    w = RNG.uniform(-1, 1, (6,))
    a = t(x, True)
    out = fg.pdist(a, p)
    (g,) = _grads(out, [a], w)
    ta = tt(torch, x, True)
    tout = torch.pdist(ta, p)
    (tg,) = _torch_grads(torch, tout, [ta], w)
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-10, atol=1e-12)


def test_cdist_compute_mode_is_accepted_and_checked():
    a, b = t(X1), t(X2)
    expected = fg.cdist(a, b).numpy()
    for mode in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        np.testing.assert_array_equal(fg.cdist(a, b, compute_mode=mode).numpy(), expected)
    with pytest.raises(OpError, match="compute_mode"):
        fg.cdist(a, b, compute_mode="fast")


def test_cdist_and_pdist_errors_name_the_function():
    with pytest.raises(OpError, match=r"cdist: .*same number of columns.*\(3 != 2\)"):
        fg.cdist(t(X1), t(np.ones((2, 2))))
    with pytest.raises(OpError, match="cdist: x1 must have at least 2 dimensions"):
        fg.cdist(t([1.0, 2.0]), t(X2))
    with pytest.raises(OpError, match="cdist: only non-negative p"):
        fg.cdist(t(X1), t(X2), p=-1)
    with pytest.raises(OpError, match="cdist: only floating-point"):
        fg.cdist(fg.tensor([[1, 2]]), fg.tensor([[1, 2]]))
    with pytest.raises(OpError, match="batch dimensions"):
        fg.cdist(t(np.ones((2, 1, 3))), t(np.ones((3, 1, 3))))
    with pytest.raises(OpError, match="pdist: input must be 2-D"):
        fg.pdist(t(np.ones((2, 2, 3))))


def test_cdist_batches_broadcast_like_torch(torch):
    a, b = RNG.uniform(-1, 1, (5, 1, 2, 3)), RNG.uniform(-1, 1, (4, 3, 3))
    out = fg.cdist(t(a), t(b))
    assert out.shape == (5, 4, 2, 3)
    np.testing.assert_allclose(out.numpy(), torch.cdist(tt(torch, a), tt(torch, b)).numpy(), rtol=1e-12)


def test_dist_ties_share_the_gradient_evenly_as_torch(torch):
    x, y = np.array([1.0, -1.0, 0.5]), np.zeros(3)
    a = t(x, True)
    (g,) = fg.grad(fg.dist(a, t(y), INF), [a])
    ta = tt(torch, x, True)
    (tg,) = torch.autograd.grad(torch.dist(ta, tt(torch, y), INF), [ta])
    np.testing.assert_allclose(g.numpy(), tg.numpy())


def test_top_level_cosine_similarity_and_pairwise_distance_are_the_functional_ones():
    import fgraph.nn.functional as F

    assert fg.cosine_similarity is F.cosine_similarity
    assert fg.pairwise_distance is F.pairwise_distance


# -- node names, methods, beta = 0 --------------------------------------------------------------------------------
def test_node_names_match_torch(torch):
    m = RNG.uniform(-1, 1, (3, 3))
    v = RNG.uniform(-1, 1, (3,))
    b3 = RNG.uniform(-1, 1, (2, 3, 3))
    calls = {
        "addmm": lambda L, x: L.addmm(x(m), x(m), x(m)),
        "addmv": lambda L, x: L.addmv(x(v), x(m), x(v)),
        "addbmm": lambda L, x: L.addbmm(x(m), x(b3), x(b3)),
        "baddbmm": lambda L, x: L.baddbmm(x(b3), x(b3), x(b3)),
        "addr": lambda L, x: L.addr(x(m), x(v), x(v)),
        "addcmul": lambda L, x: L.addcmul(x(m), x(m), x(m)),
        "addcdiv": lambda L, x: L.addcdiv(x(m), x(m), x(m) + 3),
        "trace": lambda L, x: L.trace(x(m)),
        "linalg.cross": lambda L, x: L.linalg.cross(x(m), x(m)),
        "cdist": lambda L, x: L.cdist(x(m), x(m)),
        "dist": lambda L, x: L.dist(x(m), x(m)),
    }
    for name, call in calls.items():
        mine = call(fg, lambda a: t(a, True)).grad_fn.name()
        theirs = type(call(torch, lambda a: tt(torch, a, True)).grad_fn).__name__
        assert mine == theirs, name


def test_tensor_methods_exist_where_torch_has_them():
    m, v = t(np.eye(3)), t([1.0, 2.0, 3.0])
    assert m.addmm(m, m).shape == (3, 3) and m.addr(v, v).shape == (3, 3)
    assert m[0].addmv(m, v).shape == (3,) and m.addcmul(m, m, value=2).shape == (3, 3)
    assert m.addcdiv(m, m + 1).shape == (3, 3)
    assert m.trace().item() == 3.0 and v.inner(v).item() == 14.0
    assert m.matrix_power(2).shape == (3, 3) and m.cross(m, 1).shape == (3, 3)
    assert v.diff().tolist() == [1.0, 1.0] and v.dist(v).item() == 0.0
    assert m.cov().shape == (3, 3) and m.corrcoef().shape == (3, 3)
    b = t(np.ones((2, 3, 3)))
    assert t(np.ones((3, 3))).addbmm(b, b).shape == (3, 3) and b.baddbmm(b, b).shape == (2, 3, 3)


def test_beta_zero_ignores_nan_in_input_as_torch(torch):
    nan = np.full((2, 2), np.nan)
    m = RNG.uniform(-1, 1, (2, 2))
    x = t(nan, True)
    out = fg.addmm(x, t(m), t(m), beta=0, alpha=2)
    ref = torch.addmm(tt(torch, nan), tt(torch, m), tt(torch, m), beta=0, alpha=2)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12)
    (g,) = fg.grad(out.sum(), [x])
    assert g.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert np.isfinite(fg.baddbmm(t(np.full((1, 2, 2), np.nan)), t(np.ones((3, 2, 2))), t(np.ones((3, 2, 2))),
                                  beta=0).numpy()).all()


def test_beta_alpha_are_keyword_only_numbers():
    m = t(np.eye(2))
    with pytest.raises(TypeError):
        fg.addmm(m, m, m, 0.5)  # positional beta, as torch refuses
    with pytest.raises(TypeError, match="addmm: beta must be a Python number"):
        fg.addmm(m, m, m, beta=m)


def test_product_shape_errors_name_the_function():
    with pytest.raises(OpError, match=r"addmm: shapes \(2, 4\) and \(3, 3\) cannot be multiplied"):
        fg.addmm(t(np.ones((2, 3))), t(np.ones((2, 4))), t(np.ones((3, 3))))
    with pytest.raises(OpError, match=r"addmm: input of shape \(3, 3\) does not broadcast to the product's shape"):
        fg.addmm(t(np.ones((3, 3))), t(np.ones((2, 3))), t(np.ones((3, 3))))
    with pytest.raises(OpError, match="addmv: vec must be 1-D"):
        fg.addmv(t(np.ones(2)), t(np.ones((2, 3))), t(np.ones((3, 1))))
    with pytest.raises(OpError, match="baddbmm: batch1 .* same number of matrices"):
        fg.baddbmm(t(np.ones((2, 2))), t(np.ones((2, 2, 3))), t(np.ones((3, 3, 2))))
    with pytest.raises(OpError, match="same dtype"):
        fg.addmm(fg.ones(2, 2), t(np.ones((2, 2))), t(np.ones((2, 2))))
    with pytest.raises(OpError, match="addcmul: shapes"):
        fg.addcmul(t(np.ones(2)), t(np.ones(3)), t(np.ones(2)))
    with pytest.raises(OpError, match="addcdiv: integer division"):
        fg.addcdiv(fg.tensor([1]), fg.tensor([1]), fg.tensor([2]))
    with pytest.raises(OpError, match="inner: the last dimensions must match"):
        fg.inner(t(np.ones((2, 3))), t(np.ones(2)))
    with pytest.raises(OpError, match="trace: expected a matrix"):
        fg.trace(t(np.ones((2, 2, 2))))
    with pytest.raises(OpError, match="chain_matmul: matrix 1"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fg.chain_matmul(t(np.ones((2, 3))), t(np.ones((2, 3))))


# -- powers and cross products --------------------------------------------------------------------------------------
def test_matrix_power_zero_and_negative(torch):
    a = RNG.uniform(-0.5, 0.5, (2, 3, 3)) + 2 * np.eye(3)
    np.testing.assert_array_equal(fg.matrix_power(t(a), 0).numpy(), np.broadcast_to(np.eye(3), (2, 3, 3)))
    for n in (-3, -1, 5):
        np.testing.assert_allclose(fg.linalg.matrix_power(t(a), n).numpy(),
                                   torch.linalg.matrix_power(tt(torch, a), n).numpy(), rtol=1e-10)
    with pytest.raises(OpError, match="matrix_power: input must be a batch of square matrices"):
        fg.matrix_power(t(np.ones((2, 3))), 2)
    with pytest.raises(TypeError, match="matrix_power: n must be an int"):
        fg.matrix_power(t(a), 1.5)


def test_cross_default_dim_is_the_first_of_size_3_and_warns(torch):
    a, b = RNG.uniform(-1, 1, (3, 3)), RNG.uniform(-1, 1, (3, 3))
    with pytest.warns(UserWarning, match="dim"):
        mine = fg.cross(t(a), t(b))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.cross(tt(torch, a), tt(torch, b))
    np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-12)
    np.testing.assert_allclose(mine.numpy(), np.cross(a, b, axis=0), rtol=1e-12)  # dim 0, not -1
    np.testing.assert_allclose(fg.linalg.cross(t(a), t(b)).numpy(), np.cross(a, b, axis=-1), rtol=1e-12)
    with pytest.raises(OpError, match="cross: no dimension of size 3"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fg.cross(t(np.ones((2, 2))), t(np.ones((2, 2))))
    with pytest.raises(OpError, match="linalg.cross: inputs must have the same number of dimensions"):
        fg.linalg.cross(t(np.ones(3)), t(np.ones((2, 3))))
    with pytest.raises(OpError, match="dimension -1 must have length 3"):
        fg.linalg.cross(t(np.ones((3, 2))), t(np.ones((3, 2))))


# -- grids and index sets -----------------------------------------------------------------------------------------
def test_meshgrid_warns_without_indexing_and_defaults_to_ij():
    with pytest.warns(UserWarning, match="indexing"):
        x, y = fg.meshgrid(t([1.0, 2.0]), t([3.0, 4.0, 5.0]))
    assert x.shape == (2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x, y = fg.meshgrid([t([1.0, 2.0]), t([3.0, 4.0, 5.0])], indexing="xy")  # a list works too
    assert x.shape == (3, 2) and x.tolist()[0] == [1.0, 2.0]
    with pytest.raises(OpError, match="meshgrid: indexing must be"):
        fg.meshgrid(t([1.0]), indexing="ji")
    with pytest.raises(OpError, match="meshgrid: expected 0-D or 1-D"):
        fg.meshgrid(t(np.ones((2, 2))), indexing="ij")


@pytest.mark.parametrize("row,col,offset", [(3, 3, 0), (3, 4, 1), (4, 3, -1), (0, 0, 0), (2, 5, -3), (3, 2, 4)])
def test_triu_tril_indices_match_torch(torch, row, col, offset):
    for name in ("triu_indices", "tril_indices"):
        mine = getattr(fg, name)(row, col, offset)
        theirs = getattr(torch, name)(row, col, offset)
        assert mine.dtype == fg.int64 and not mine.requires_grad
        assert mine.shape == tuple(theirs.shape)
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
    assert fg.triu_indices(3, 3, dtype=fg.int32).dtype == fg.int32


@pytest.mark.parametrize("r,with_replacement", [(0, False), (1, False), (2, True), (4, False), (4, True)])
def test_combinations_edge_cases_match_torch(torch, r, with_replacement):
    x = np.array([1.0, 2.0, 3.0])
    mine = fg.combinations(t(x), r, with_replacement)
    theirs = torch.combinations(tt(torch, x), r, with_replacement)
    assert mine.shape == tuple(theirs.shape)
    np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
    with pytest.raises(OpError, match="combinations: expect a 1-D vector"):
        fg.combinations(t(np.ones((2, 2))))


def test_block_diag_cartesian_prod_vander_dtypes_match_torch(torch):
    mine = fg.block_diag(fg.tensor(1.0), fg.ones(2), fg.ones(2, 2, dtype=fg.int64))
    theirs = torch.block_diag(torch.tensor(1.0), torch.ones(2), torch.ones(2, 2, dtype=torch.int64))
    np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
    assert str(mine.dtype) == str(theirs.dtype).replace("torch.", "")
    assert fg.block_diag().shape == (1, 0)
    assert fg.vander(fg.tensor([1, 2, 3])).dtype == fg.int64
    assert fg.vander(t([1.0, 2.0]), N=0).shape == (2, 0)
    np.testing.assert_array_equal(fg.cartesian_prod(fg.tensor([1, 2]), fg.tensor([3, 4, 5])).numpy(),
                                  np.array(list(itertools.product([1, 2], [3, 4, 5]))))
    with pytest.raises(OpError, match="block_diag: input tensors must have 2 or fewer"):
        fg.block_diag(fg.ones(1, 1, 1))
    with pytest.raises(OpError, match="vander: x must be a one-dimensional"):
        fg.vander(fg.ones(2, 2))
    with pytest.raises(OpError, match="cartesian_prod: expected 1-D"):
        fg.cartesian_prod(fg.ones(2, 2))


def test_vander_gradient_at_zero_is_finite():
    x = t([0.0, 1.0], True)
    (g,) = fg.grad(fg.vander(x, N=3).sum(), [x])
    assert g.tolist() == [1.0, 3.0]  # d/dx (x^2 + x + 1) = 2x + 1


def test_diff_conventions_and_errors(torch):
    x = RNG.uniform(-1, 1, (3, 4))
    pre, app = RNG.uniform(-1, 1, (3, 1)), RNG.uniform(-1, 1, (3, 2))
    for n in (0, 1, 3, 9):
        mine = fg.diff(t(x), n, 1, t(pre), t(app))
        theirs = torch.diff(tt(torch, x), n, 1, tt(torch, pre), tt(torch, app))
        assert mine.shape == tuple(theirs.shape)
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-12)
    b = fg.tensor([True, True, False, True])
    assert fg.diff(b).tolist() == torch.diff(torch.tensor([True, True, False, True])).tolist()
    with pytest.raises(OpError, match="diff: order must be a non-negative"):
        fg.diff(t(x), -1)
    with pytest.raises(OpError, match="diff: prepend of shape"):
        fg.diff(t(x), 1, 0, t(np.ones(4)))
    with pytest.raises(IndexError, match="diff: dim 2 is out of range"):
        fg.diff(t(x), 1, 2)
    with pytest.raises(OpError, match="at least one-dimensional"):
        fg.diff(t(1.0))


# -- covariance -------------------------------------------------------------------------------------------------
def test_cov_weights_and_correction_match_torch(torch):
    x = RNG.uniform(-1, 1, (3, 5))
    fw = np.array([1, 2, 0, 3, 1])
    aw = RNG.uniform(0.1, 2, (5,))
    for correction, f, a in [(1, None, None), (0, fw, None), (2, fw, aw), (1, None, aw)]:
        mine = fg.cov(t(x), correction=correction, fweights=None if f is None else fg.tensor(f),
                      aweights=None if a is None else t(a))
        theirs = torch.cov(tt(torch, x), correction=correction, fweights=None if f is None else torch.tensor(f),
                           aweights=None if a is None else tt(torch, a))
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-12)
    assert fg.cov(t([1.0, 2.0, 4.0])).shape == ()


def test_cov_zero_degrees_of_freedom_warns_and_gives_inf_or_nan():
    with pytest.warns(UserWarning, match="degrees of freedom"):
        out = fg.cov(t([[1.0]]))
    assert math.isnan(out.item())


def test_cov_errors_and_corrcoef_of_one_variable():
    with pytest.raises(OpError, match="cov: input must have at most 2 dimensions"):
        fg.cov(fg.ones(2, 2, 2))
    with pytest.raises(OpError, match="cov: fweights must have an integer dtype"):
        fg.cov(fg.ones(2, 3), fweights=fg.ones(3))
    with pytest.raises(OpError, match=r"one weight per observation \(3\)"):
        fg.cov(fg.ones(2, 3), fweights=fg.tensor([1, 1]))
    assert fg.corrcoef(t([1.0, 2.0, 4.0])).item() == 1.0


# -- exports and tracing ----------------------------------------------------------------------------------------
def test_functions_and_methods_are_installed():
    from fgraph.ops import distances, grids, products

    for module in (products, distances, grids):
        for name in module.TENSOR_METHODS:
            assert getattr(fg.Tensor, name) is module.TENSOR_METHODS[name], name
        for name in module.__all__:
            assert getattr(fg, name) is getattr(module, name), name
    assert fg.linalg.cross is products.linalg_cross and fg.linalg.matrix_power is products.matrix_power


def test_programs_with_the_new_ops_trace_under_jax():
    # A whole program (weighted cov, cdist, pdist, addmm, diff, meshgrid) is JAX-traceable: check_grads runs it
    # under jax.grad, where every array is a tracer (no host reads), orders 1 and 2.
    import interop

    fw = fg.tensor([1, 2, 0, 3])

    def program(x, y):
        c = fg.cov(x, fweights=fw, aweights=y.abs() + 0.5)
        d = fg.cdist(x, x.flip(0) + 3.0) + fg.pdist(x * 2.0).sum()
        gx, gy = fg.meshgrid(y, y, indexing="xy")
        return (fg.addmm(c, c, c, beta=0.5).sum() + d.sum() + fg.diff(x, 2, 1, prepend=x[:, :1]).sum()
                + (gx * gy.sin()).sum())

    interop.check_grads(program, RNG.uniform(-1, 1, (3, 4)), RNG.uniform(-1, 1, (4,)))
