"""Linear-algebra behaviour the op table cannot express: which triangle is read, degenerate
spectra, cutoffs, result types, node names and Tensor methods (forward values against NumPy)."""
import math

import numpy as np
import pytest

import fgraph as fg

RNG = np.random.default_rng(7)


def t(a, requires_grad=False):
    return fg.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def test_eigh_reads_only_the_named_triangle():
    a = RNG.uniform(-1, 1, (3, 3)) + np.diag([0.0, 2.0, 4.0])  # not symmetric
    for uplo in ("L", "U"):
        w, v = fg.linalg.eigh(t(a), UPLO=uplo)
        ref_w, ref_v = np.linalg.eigh(a, UPLO=uplo)
        np.testing.assert_allclose(w.numpy(), ref_w, rtol=1e-12)
        np.testing.assert_allclose(np.abs(v.numpy()), np.abs(ref_v), rtol=1e-10)


def test_cholesky_reads_only_the_named_triangle():
    x = RNG.uniform(-1, 1, (3, 3))
    spd = x @ x.T + 3 * np.eye(3)
    lower_only, upper_only = spd.copy(), spd.copy()
    lower_only[0, 2] = 99.0  # garbage above the diagonal
    upper_only[2, 0] = -99.0  # garbage below it
    expected = np.linalg.cholesky(spd)
    np.testing.assert_allclose(fg.linalg.cholesky(t(lower_only)).numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(fg.linalg.cholesky(t(upper_only), upper=True).numpy(), expected.T, rtol=1e-12)


def test_gradients_of_repeated_singular_values_and_eigenvalues_are_finite():
    # As in PyTorch, svdvals/eigvalsh gradients need no distinct values: U diag(gS) Vh, V diag(gL) V^T.
    a = t(np.eye(3), requires_grad=True)
    (g,) = fg.grad(fg.linalg.svdvals(a).sum(), [a])
    np.testing.assert_allclose(g.numpy(), np.eye(3), atol=1e-12)
    (g,) = fg.grad(fg.linalg.matrix_norm(a, "nuc"), [a])
    np.testing.assert_allclose(g.numpy(), np.eye(3), atol=1e-12)
    (g,) = fg.grad((fg.linalg.eigvalsh(a) * t([1.0, 2.0, 3.0])).sum(), [a])
    assert np.all(np.isfinite(g.numpy())) and np.isclose(np.trace(g.numpy()), 6.0)


def test_qr_mode_r_matches_reduced_r():
    a = RNG.uniform(-1, 1, (4, 3))
    q, r = fg.linalg.qr(t(a), mode="r")
    assert q.shape == (0,)
    np.testing.assert_allclose(np.abs(r.numpy()), np.abs(fg.linalg.qr(t(a)).R.numpy()), rtol=1e-12)


def test_svd_results_and_legacy_svd():
    a = RNG.uniform(-1, 1, (4, 3))
    res = fg.linalg.svd(t(a))
    assert isinstance(res, fg.linalg.SVDResult) and res.U.shape == (4, 4) and res.Vh.shape == (3, 3)
    u, s, v = fg.svd(t(a))  # torch.svd: reduced, V not Vh
    np.testing.assert_allclose((u.numpy() * s.numpy()) @ v.numpy().T, a, atol=1e-12)
    u, s, v = fg.svd(t(a), compute_uv=False)
    assert u.shape == (4, 4) and v.shape == (3, 3) and not u.numpy().any()
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(a, compute_uv=False), rtol=1e-12)


def test_pinv_cutoffs():
    a = t(np.diag([1.0, 1e-3]))
    np.testing.assert_allclose(fg.linalg.pinv(a).numpy(), np.diag([1.0, 1e3]), rtol=1e-12)
    np.testing.assert_allclose(fg.linalg.pinv(a, rtol=1e-2).numpy(), np.diag([1.0, 0.0]), atol=1e-15)
    np.testing.assert_allclose(fg.linalg.pinv(a, atol=0.5).numpy(), np.diag([1.0, 0.0]), atol=1e-15)
    np.testing.assert_allclose(fg.pinverse(a, rcond=1e-2).numpy(), np.diag([1.0, 0.0]), atol=1e-15)


def test_logdet_of_a_negative_determinant_is_nan():
    assert math.isnan(fg.logdet(t([[0.0, 1.0], [1.0, 0.0]])).item())
    assert fg.logdet(t([[1.0, 0.0], [0.0, 0.0]])).item() == -math.inf


def test_einsum_call_forms():
    x, y = t(RNG.uniform(-1, 1, (2, 3))), t(RNG.uniform(-1, 1, (3, 4)))
    expected = x.numpy() @ y.numpy()
    np.testing.assert_allclose(fg.einsum("ij,jk->ik", [x, y]).numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(fg.einsum(x, [0, 1], y, [1, 2], [0, 2]).numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(fg.einsum(" i j , j k -> i k ", x, y).numpy(), expected, rtol=1e-12)
    assert fg.einsum("Ba", x).shape == (2, 3) and fg.einsum("ba", x).shape == (3, 2)  # A-Z sort before a-z
    assert fg.einsum("...ij->...", x).shape == ()  # ellipsis dims may be summed


def test_node_names_follow_pytorch():
    a = t(np.eye(3) * 2, requires_grad=True)
    names = {
        "LinalgInvExBackward0": fg.linalg.inv(a), "LinalgDetBackward0": fg.linalg.det(a),
        "LinalgSolveExBackward0": fg.linalg.solve(a, a), "LinalgCholeskyExBackward0": fg.linalg.cholesky(a),
        "LinalgEighBackward0": fg.linalg.eigh(a).eigenvalues, "LinalgSvdBackward0": fg.linalg.svdvals(a),
        "LinalgQrBackward0": fg.linalg.qr(a).R, "LinalgPinvBackward0": fg.linalg.pinv(a),
        "LinalgVectorNormBackward0": fg.linalg.vector_norm(a), "BmmBackward0": fg.bmm(a[None], a[None]),
        "MvBackward0": fg.mv(a, a[0]), "DotBackward0": fg.dot(a[0], a[1]), "MmBackward0": fg.mm(a, a),
        "LinalgSlogdetBackward0": fg.linalg.slogdet(a).logabsdet,
    }
    assert {name: out.grad_fn.name() for name, out in names.items()} == {name: name for name in names}


def test_tensor_methods():
    a = t([[2.0, 1.0], [1.0, 3.0]])
    assert a.det().item() == pytest.approx(5.0)
    assert a.logdet().item() == pytest.approx(math.log(5.0))
    assert a.slogdet().sign.item() == 1.0
    np.testing.assert_allclose((a.inverse().mm(a)).numpy(), np.eye(2), atol=1e-12)
    np.testing.assert_allclose(a.pinverse().numpy(), np.linalg.inv(a.numpy()), rtol=1e-12)
    np.testing.assert_allclose(a.cholesky().numpy(), np.linalg.cholesky(a.numpy()), rtol=1e-12)
    assert a.qr().Q.shape == (2, 2) and a.svd().V.shape == (2, 2)
    assert a.kron(a).shape == (4, 4) and a.mv(a[0]).shape == (2,) and a[0].outer(a[1]).shape == (2, 2)
    assert a[0].dot(a[1]).item() == pytest.approx(5.0) and a[0].vdot(a[1]).item() == pytest.approx(5.0)
    assert a[None].bmm(a[None]).shape == (1, 2, 2)


def test_solve_treats_b_as_vectors_as_pytorch():
    # B is a batch of vectors when it is 1-D or has shape A.shape[:-1]; else a batch of matrices.
    a = t(np.eye(3) * 2 + np.zeros((2, 3, 3)))
    assert fg.linalg.solve(a, t(np.ones((2, 3)))).shape == (2, 3)  # vectors
    assert fg.linalg.solve(a, t(np.ones(3))).shape == (2, 3)
    assert fg.linalg.solve(a, t(np.ones((3, 3)))).shape == (2, 3, 3)  # one matrix, broadcast
    assert fg.linalg.solve(a, t(np.ones((5, 1, 3, 2)))).shape == (5, 2, 3, 2)
    np.testing.assert_allclose(fg.linalg.solve(a, t(np.ones((2, 3)))).numpy(), np.full((2, 3), 0.5))


def test_pinv_hermitian_reads_the_lower_triangle():
    a = RNG.uniform(-0.1, 0.1, (2, 3, 3)) + np.diag([-2.0, 1.0, 3.0])
    sym = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)
    np.testing.assert_allclose(fg.linalg.pinv(t(a), hermitian=True).numpy(), np.linalg.pinv(sym), rtol=1e-10)
    np.testing.assert_allclose(fg.linalg.pinv(t(a[0].T @ a[0])).numpy(), np.linalg.pinv(a[0].T @ a[0]), rtol=1e-10)


@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf])
def test_matrix_norm_orders_match_numpy(ord):
    a = RNG.uniform(-1, 1, (2, 3, 4))
    expected = np.linalg.norm(a, ord=ord, axis=(-2, -1))
    np.testing.assert_allclose(fg.linalg.matrix_norm(t(a), ord).numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(fg.linalg.norm(t(a[0]), ord).numpy(), expected[0], rtol=1e-12)


@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, 0, -1, math.inf, -math.inf])
def test_vector_norm_orders_match_numpy(ord):
    x = RNG.uniform(-1, 1, (2, 5))
    x[0, 1] = 0.0
    with np.errstate(divide="ignore"):  # |0|^-1
        expected = np.linalg.norm(x, ord=ord, axis=1)
    np.testing.assert_allclose(fg.linalg.vector_norm(t(x), ord, dim=1).numpy(), expected, rtol=1e-12)


def test_tensordot_int_dims():
    a, b = RNG.uniform(-1, 1, (2, 3, 4)), RNG.uniform(-1, 1, (3, 4, 2))
    for dims in (0, 1, 2):
        b_ = b if dims != 1 else RNG.uniform(-1, 1, (4, 2))
        np.testing.assert_allclose(fg.tensordot(t(a), t(b_), dims).numpy(), np.tensordot(a, b_, dims), rtol=1e-12)


def test_eig_gradient_matches_central_differences_where_jax_loses_precision():
    """A rotation block plus a 2, coupled by 1e-38 (what hypothesis drew once): JAX's eigenvector
    derivative is 1.5e-4 off central differences in float64 here, so the op table draws no such
    tiny entries (tests/op_tables/linalg_more.py); fgraph's must agree with the differences."""
    rotation = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 2.0]])
    x = np.full((3, 3), 1.17549435e-38)
    x[2, 0] = 0.0859375
    weights = np.linspace(1.0, 2.0, 9).reshape(3, 3)

    def loss(v: np.ndarray, w: np.ndarray):  # phase- and order-free: sum_j |V_ij|^2 f(L_j), weighted
        f = w.real + w.imag * w.imag + w.real * w.real * w.real
        return ((v.real * v.real + v.imag * v.imag) * f[..., None, :] * weights).sum()

    xt = fg.tensor(x, requires_grad=True)
    w, v = fg.linalg.eig(xt + fg.tensor(rotation))
    (grad,) = fg.grad(loss(v, w), [xt])

    def at(a: np.ndarray) -> float:
        w_, v_ = np.linalg.eig(a + rotation)
        return loss(v_, w_)

    h = 1e-6
    expected = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[idx] = h
        expected[idx] = (at(x + step) - at(x - step)) / (2 * h)
    np.testing.assert_allclose(grad.numpy(), expected, atol=1e-7)
