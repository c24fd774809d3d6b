"""Semantics of the new linear-algebra functions that the op tables cannot check: integer outputs
(matrix_rank, pivots, info), lstsq's result fields per driver, cond's forward, errors."""
import numpy as np
import pytest

import fgraph as fg
from fgraph.errors import OpError

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
SINGULAR = np.array([[[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 0.0]],
                     [[2.0, 1.0], [1.0, 2.0]]])
INDEFINITE = np.array([[[1.0, 2.0], [2.0, 1.0]], [[4.0, 2.0], [2.0, 3.0]], [[0.0, 0.0], [0.0, 0.0]]])


def _same(mine, theirs):
    theirs = theirs.detach().numpy()
    assert mine.shape == theirs.shape and np.asarray(mine.array).dtype == theirs.dtype
    np.testing.assert_allclose(np.asarray(mine.array), theirs, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("hermitian", [False, True])
@pytest.mark.parametrize("tol", [{}, {"atol": 1.5}, {"rtol": 0.4}])
def test_matrix_rank_matches_torch(hermitian, tol):
    r = fg.linalg.matrix_rank(fg.tensor(SINGULAR), hermitian=hermitian, **tol)
    _same(r, torch.linalg.matrix_rank(torch.tensor(SINGULAR), hermitian=hermitian, **tol))
    assert not fg.linalg.matrix_rank(fg.tensor(SINGULAR, requires_grad=True)).requires_grad


def test_ex_info_matches_torch():
    _same(fg.linalg.inv_ex(fg.tensor(SINGULAR)).info, torch.linalg.inv_ex(torch.tensor(SINGULAR)).info)
    _same(fg.linalg.cholesky_ex(fg.tensor(INDEFINITE)).info, torch.linalg.cholesky_ex(torch.tensor(INDEFINITE)).info)
    _same(fg.linalg.lu_factor_ex(fg.tensor(SINGULAR)).info, torch.linalg.lu_factor_ex(torch.tensor(SINGULAR)).info)
    b = RNG.normal(size=(4, 2))
    _same(fg.linalg.solve_ex(fg.tensor(SINGULAR[3:]), fg.tensor(b[None, :2])).result,
          torch.linalg.solve_ex(torch.tensor(SINGULAR[3:]), torch.tensor(b[None, :2])).result)
    with pytest.raises(OpError, match="not positive definite"):
        fg.linalg.cholesky_ex(fg.tensor(INDEFINITE), check_errors=True)
    with pytest.raises(OpError, match="singular"):
        fg.linalg.inv_ex(fg.tensor(SINGULAR), check_errors=True)


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("shapes", [((2, 5, 3), (5, 2)), ((4, 3), (4,)), ((3, 4), (3, 2))])
def test_lstsq_fields_match_torch(driver, shapes):
    a, b = RNG.normal(size=shapes[0]), RNG.normal(size=shapes[1])
    mine = fg.linalg.lstsq(fg.tensor(a), fg.tensor(b), driver=driver)
    ta, tb = torch.tensor(a), torch.tensor(b)
    if ta.ndim == 3:
        tb = tb.expand(ta.shape[0], *tb.shape)
    theirs = torch.linalg.lstsq(ta, tb, driver=driver)
    for name in ("solution", "residuals", "rank", "singular_values"):
        _same(getattr(mine, name), getattr(theirs, name))


def test_lstsq_errors():
    with pytest.raises(OpError, match="driver"):
        fg.linalg.lstsq(fg.ones(3, 2), fg.ones(3, 1), driver="gelsx")
    with pytest.raises(OpError, match="rows"):
        fg.linalg.lstsq(fg.ones(3, 2), fg.ones(4, 1))


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", float("inf"), -float("inf"), 1, -1])
def test_cond_forward_matches_torch(p):
    a = RNG.normal(size=(2, 3, 3))
    _same(fg.linalg.cond(fg.tensor(a), p), torch.linalg.cond(torch.tensor(a), p))


def test_lu_pivots_and_unpack_match_torch():
    a = RNG.normal(size=(2, 4, 3))
    lu, piv = fg.linalg.lu_factor(fg.tensor(a))
    tlu, tpiv = torch.linalg.lu_factor(torch.tensor(a))
    _same(lu, tlu)
    _same(piv, tpiv)
    assert not piv.requires_grad
    for mine, theirs in zip(fg.lu_unpack(lu, piv), torch.lu_unpack(tlu, tpiv)):
        _same(mine, theirs)


def test_eig_matches_torch_and_is_complex():
    a = RNG.normal(size=(3, 3))
    w, v = fg.linalg.eig(fg.tensor(a))
    tw, tv = torch.linalg.eig(torch.tensor(a))
    assert w.dtype == np.complex128 and v.dtype == np.complex128
    np.testing.assert_allclose(np.sort_complex(np.asarray(w.array)), np.sort_complex(tw.numpy()), rtol=1e-10)
    av = np.asarray(a @ np.asarray(v.array))
    np.testing.assert_allclose(av, np.asarray(v.array) * np.asarray(w.array), atol=1e-10)
    with pytest.raises(OpError, match="non-complex"):
        fg.imag(fg.ones(2))


def test_matrix_exp_method_and_top_level():
    a = fg.tensor([[0.0, 1.0], [-1.0, 0.0]])
    np.testing.assert_allclose(np.asarray(a.matrix_exp().array), np.asarray(fg.matrix_exp(a).array))
    np.testing.assert_allclose(np.asarray(fg.matrix_exp(a).array),
                               [[np.cos(1), np.sin(1)], [-np.sin(1), np.cos(1)]], rtol=1e-6)


def test_errors_name_the_function():
    with pytest.raises(OpError, match="linalg.matrix_exp.*square"):
        fg.linalg.matrix_exp(fg.ones(2, 3))
    with pytest.raises(OpError, match="linalg.tensorinv"):
        fg.linalg.tensorinv(fg.ones(2, 3), ind=1)
    with pytest.raises(OpError, match="linalg.householder_product"):
        fg.linalg.householder_product(fg.ones(2, 3), fg.ones(2))
    with pytest.raises(OpError, match="linalg.vander"):
        fg.linalg.vander(fg.ones(3), N=1)
    with pytest.raises(OpError, match="linalg.lu_solve"):
        fg.linalg.lu_solve(fg.eye(2), fg.tensor([1, 2], dtype=fg.int32), fg.ones(3, 1))
    with pytest.raises(OpError, match="pivot=False"):
        fg.linalg.lu(fg.eye(2), pivot=False)
