"""Numerics and fgraph.special beyond the op tables: special points (NaN, infinities, zeros)
against PyTorch, non-differentiable outputs, Python-bool results and errors."""
import math

import jax
import numpy as np
import pytest

import fgraph as fg
from fgraph.errors import OpError

INF, NAN = math.inf, math.nan


def _grads(fn, *values):
    xs = [fg.tensor(v, dtype=fg.float64, requires_grad=True) for v in values]
    out = fn(*xs)
    return np.asarray(out.array), [np.asarray(g.array) for g in fg.grad(out.sum(), xs)]


# (name, fgraph fn, torch fn name, inputs): values and gradients at the special points.
SPECIAL_POINTS = [
    ("logaddexp", fg.logaddexp, "logaddexp", ([INF, -INF, 1.0, INF], [INF, -INF, 1.0, -INF])),
    ("logaddexp2", fg.logaddexp2, "logaddexp2", ([INF, -INF, 1.0], [INF, -INF, 1.0])),
    ("logcumsumexp", lambda x: fg.logcumsumexp(x, 0), "logcumsumexp", ([-INF, -INF, 1.0, -INF, 2.0],)),
    ("logcumsumexp_inf", lambda x: fg.logcumsumexp(x, 0), "logcumsumexp", ([1.0, INF, 1.0],)),
    ("xlogy", fg.xlogy, "xlogy", ([0.0, 0.0, 1.0, 0.0, 2.0], [0.0, 2.0, 0.0, NAN, -1.0])),
    ("xlog1py", fg.special.xlog1py, "special.xlog1py", ([0.0, 0.0, 1.0, 0.0], [-1.0, 2.0, -1.0, -2.0])),
    ("entr", fg.special.entr, "special.entr", ([0.0, -1.0, 0.5, NAN],)),
    ("sinc", fg.sinc, "sinc", ([0.0, 0.5, -1.0],)),
    ("i0", fg.i0, "i0", ([0.0, 0.5, -1.0],)),
    ("i1", fg.special.i1, "special.i1", ([0.0, 0.5, -1.0],)),
    ("i0e", fg.special.i0e, "special.i0e", ([0.0, 0.5, -1.0],)),
    ("i1e", fg.special.i1e, "special.i1e", ([0.0, 0.5, -1.0],)),
    ("ndtri", fg.special.ndtri, "special.ndtri", ([0.5, 0.0, 1.0],)),
    ("log_ndtr", fg.special.log_ndtr, "special.log_ndtr", ([-30.0, 0.0, 5.0],)),
    ("nan_to_num", fg.nan_to_num, "nan_to_num", ([NAN, INF, -INF, 1.0],)),
    ("copysign", fg.copysign, "copysign", ([0.0, -0.0, 2.0, -3.0], [-1.0, 1.0, -0.0, 0.0])),
    ("nansum", fg.nansum, "nansum", ([NAN, 1.0, 2.0],)),
    ("nanmean", fg.nanmean, "nanmean", ([NAN, 1.0, 3.0],)),
    ("cummax", lambda x: fg.cummax(x, 0).values, "cummax", ([1.0, 3.0, 3.0, 2.0, NAN, 5.0, NAN],)),
    ("cummin", lambda x: fg.cummin(x, 0).values, "cummin", ([1.0, 0.0, 0.0, 2.0, NAN, -1.0],)),
]


@pytest.mark.parametrize("name,fn,torch_name,values", SPECIAL_POINTS, ids=[p[0] for p in SPECIAL_POINTS])
def test_special_points_match_torch(name, fn, torch_name, values):
    torch = pytest.importorskip("torch")
    tfn = torch
    for part in torch_name.split("."):
        tfn = getattr(tfn, part)
    if name.startswith(("logcumsumexp", "cummax", "cummin")):
        tfn0 = tfn

        def tfn(x):
            out = tfn0(x, 0)
            return out.values if name.startswith("cum") else out
    ts = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values]
    t_out = tfn(*ts)
    t_grads = torch.autograd.grad(t_out.sum(), ts)
    out, grads = _grads(fn, *values)
    np.testing.assert_allclose(out, t_out.detach().numpy(), rtol=1e-9, equal_nan=True)
    for g, tg in zip(grads, t_grads):
        np.testing.assert_allclose(g, tg.numpy(), rtol=1e-9, atol=1e-300, equal_nan=True)


def test_cummax_indices_ties_and_nan_as_torch():
    values, indices = fg.cummax(fg.tensor([1.0, 3.0, 3.0, 2.0, NAN, 5.0, NAN]), 0)
    assert indices.tolist() == [0, 1, 2, 2, 4, 4, 6]
    assert indices.dtype == np.int64 and not indices.requires_grad
    r = fg.cummin(fg.tensor([[1.0, 0.0, 0.0, 2.0]], requires_grad=True), dim=1)
    assert r.indices.tolist() == [[0, 1, 2, 2]] and r.values.requires_grad and not r.indices.requires_grad
    assert r.values.grad_fn.name() == "CumminBackward0"


def test_sinc_second_derivative_at_zero_is_exact():
    x = fg.tensor([0.0], dtype=fg.float64, requires_grad=True)
    (g,) = fg.grad(fg.sinc(x).sum(), [x], create_graph=True)
    (h,) = fg.grad(g.sum(), [x])
    assert g.tolist() == [0.0]
    assert h.item() == pytest.approx(-math.pi ** 2 / 3, rel=1e-12)  # PyTorch gives NaN here


def test_i0_i1_derivatives_at_zero():
    x = fg.tensor([0.0], dtype=fg.float64, requires_grad=True)
    (g0,) = fg.grad(fg.i0(x).sum(), [x], create_graph=True)
    (h0,) = fg.grad(g0.sum(), [x])
    assert g0.item() == 0.0 and h0.item() == pytest.approx(0.5)  # i0''(0) = i1'(0) = 1/2
    (g1,) = fg.grad(fg.special.i1(x).sum(), [x])
    assert g1.item() == 0.5


def test_logcumsumexp_gradient_does_not_overflow():
    x = fg.tensor([1000.0, -1000.0, 999.0], dtype=fg.float64, requires_grad=True)
    (g,) = fg.grad(fg.logcumsumexp(x, 0).sum(), [x])
    ref = jax.grad(lambda a: jax.lax.cumlogsumexp(a).sum())(np.array([1000.0, -1000.0, 999.0]))
    np.testing.assert_allclose(np.asarray(g.array), ref, rtol=1e-12)


def test_bool_results_and_non_differentiable_outputs():
    a, b = fg.tensor([1.0, NAN, INF]), fg.tensor([1.0 + 1e-9, NAN, INF])
    assert fg.isclose(a, b).tolist() == [True, False, True]
    assert fg.isclose(a, b, equal_nan=True).tolist() == [True, True, True]
    assert fg.allclose(a, b) is False and fg.allclose(a, b, equal_nan=True) is True
    assert fg.equal(fg.tensor([1.0, 2.0]), fg.tensor([1.0, 2.0])) is True
    assert fg.equal(fg.tensor([1.0]), fg.tensor([1.0, 1.0])) is False
    assert fg.equal(fg.tensor([NAN]), fg.tensor([NAN])) is False
    x = fg.tensor([-0.0, 1.0], requires_grad=True)
    assert fg.signbit(x).tolist() == [True, False] and not fg.signbit(x).requires_grad
    assert not fg.isclose(x, x).requires_grad
    assert a.isclose(b).tolist() == [True, False, True] and a.allclose(a, equal_nan=True)


def test_dtypes_as_torch():
    assert fg.float_power(fg.tensor([2]), 2).dtype == np.float64
    assert fg.float_power(2, fg.tensor([2.0])).dtype == np.float64
    assert fg.copysign(fg.tensor([1, 2]), -1).tolist() == [-1.0, -2.0]
    assert fg.deg2rad(fg.tensor([180])).dtype == np.float32
    assert fg.nansum(fg.tensor([1, 2])).dtype == np.int64
    r = fg.aminmax(fg.tensor([[1.0, 4.0], [3.0, 2.0]]), dim=1, keepdim=True)
    assert r.min.shape == (2, 1) and r.max.tolist() == [[4.0], [3.0]]
    assert fg.softmax(fg.tensor([1.0, 2.0]), 0, fg.float64).dtype == np.float64


def test_errors_name_the_op_and_the_fix():
    with pytest.raises(OpError, match="heaviside.*same dtype"):
        fg.heaviside(fg.tensor([0.0, 1.0]), fg.tensor([1]))
    x = fg.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="heaviside"):
        fg.grad(fg.heaviside(x, fg.tensor([0.5])).sum(), [x])
    with pytest.raises(RuntimeError, match="zeta.*first argument"):
        fg.grad(fg.special.zeta(x + 1, fg.tensor([2.0])).sum(), [x])
    with pytest.raises(OpError, match="isclose.*same dtype"):
        fg.isclose(fg.tensor([1.0]), fg.tensor([1]))
    with pytest.raises(OpError, match="nanmean.*floating"):
        fg.nanmean(fg.tensor([1, 2]))
    with pytest.raises(OpError, match="renorm.*p must be positive"):
        fg.renorm(fg.tensor([[1.0]]), 0, 0, 1.0)
    with pytest.raises(OpError, match="multigammaln.*p"):
        fg.special.multigammaln(fg.tensor([2.0]), 0)
    with pytest.raises(OpError, match="allclose.*traced"):
        jax.jit(lambda a: fg.allclose(fg.tensor(a), fg.tensor(a)))(np.ones(2))
    with pytest.raises(IndexError, match="cummax.*out of range"):
        fg.cummax(fg.tensor([1.0]), 1)


def test_special_namespace_has_torch_special_names():
    torch = pytest.importorskip("torch")
    ours = set(fg.special.__all__)
    expected = {"digamma", "entr", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammaln", "i0", "i0e", "i1",
                "i1e", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri",
                "polygamma", "psi", "round", "sinc", "softmax", "xlog1py", "xlogy", "zeta"}
    assert expected <= ours and all(hasattr(torch.special, n) for n in ours)
    for name in ours:
        assert callable(getattr(fg.special, name))
