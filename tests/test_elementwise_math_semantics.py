"""What the op tables cannot check: integer and bool dtypes, special values, non-differentiable
ops, node names, PyTorch's gradient conventions at edge points, Tensor methods and operators,
higher derivatives, and tracing under jax.jit / jax.vmap (no host round trips).

Exact values below are PyTorch 2.x's (the optional oracle re-checks several of them).
"""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
from fgraph.ops import elementwise_math, rounding, special, trigonometric

INF, NAN = math.inf, math.nan


def _grad(y, x):
    (g,) = fg.grad(y.sum(), [x])
    return g.tolist()


# -- integers, bools and dtypes -------------------------------------------------------------------
def test_integer_division_rounding_modes_and_remainders():
    a, b = fg.tensor([7, -7, 3, -3]), fg.tensor([2, 2, -2, -2])
    assert fg.div(a, b, rounding_mode="trunc").tolist() == [3, -3, -1, 1]
    assert fg.div(a, b, rounding_mode="floor").tolist() == [3, -4, -2, 1]
    assert (a // b).tolist() == fg.floor_divide(a, b).tolist() == [3, -4, -2, 1]
    assert (a % b).tolist() == fg.remainder(a, b).tolist() == [1, 1, -1, -1]
    assert fg.fmod(a, b).tolist() == [1, -1, 1, -1]
    assert (7 // fg.tensor([2, -2])).tolist() == [3, -4]
    assert (7 % fg.tensor([2, -2])).tolist() == [1, -1]
    for out in (fg.div(a, b, rounding_mode="trunc"), a // b, a % b, fg.fmod(a, 2)):
        assert out.dtype == a.dtype


def test_float_division_by_zero_follows_ieee():
    x = fg.tensor([1.0, -1.0, 0.0])
    assert fg.floor_divide(x, 0.0).tolist()[:2] == [INF, -INF]
    assert all(math.isnan(v) for v in fg.remainder(x, 0.0).tolist())
    assert fg.div(x, 0.0, rounding_mode="trunc").tolist()[:2] == [INF, -INF]


def test_floating_functions_promote_integers_to_float32():
    i = fg.tensor([1, 2])
    for fn in (fg.reciprocal, fg.exp2, fg.expm1, fg.log2, fg.log10, fg.log1p, fg.rsqrt, fg.tan, fg.asin, fg.atan,
               fg.sinh, fg.cosh, fg.asinh, fg.acosh, fg.atanh, fg.erf, fg.erfc, fg.erfinv, fg.lgamma, fg.digamma,
               fg.logit):
        assert fn(i).dtype == np.float32, fn.__name__
    assert fg.polygamma(1, i).dtype == np.float32
    assert fg.atan2(i, i).dtype == fg.hypot(i, i).dtype == np.float32
    assert fg.reciprocal(fg.tensor([2, -4])).tolist() == [0.5, -0.25]
    assert fg.exp2(fg.tensor([3], dtype="int32")).tolist() == [8.0]


def test_floating_dtypes_are_kept():
    for dtype in ("float16", "float32", "float64"):
        x = fg.tensor([0.5], dtype=dtype)
        for out in (fg.exp2(x), fg.atan2(x, 2), fg.hypot(x, x), fg.erf(x), fg.floor(x), fg.round(x, decimals=1),
                    fg.remainder(x, 0.25), fg.fmod(x, 2), x // 2, fg.logit(x, 0.1), fg.lerp(x, x, 0.5)):
            assert out.dtype == np.dtype(dtype)


def test_rounding_ops_return_integer_tensors_unchanged():
    i = fg.tensor([7, -7])
    for fn in (fg.floor, fg.ceil, fg.trunc, fg.fix, fg.round):
        out = fn(i)
        assert out.dtype == i.dtype and out.tolist() == [7, -7]
    assert fg.square(i).tolist() == [49, 49]
    assert fg.square(fg.tensor([True, False])).tolist() == [1, 0]


def test_round_matches_pytorch():
    x = fg.tensor([0.5, 1.5, 2.5, -0.5, -2.5])
    assert fg.round(x).tolist() == [0.0, 2.0, 2.0, -0.0, -2.0]  # half to even
    assert fg.round(fg.tensor([1.2345, 125.0]), decimals=2).tolist() == pytest.approx([1.23, 125.0])
    assert fg.round(fg.tensor([1.2345, 125.0, 150.0, 250.0]), decimals=-2).tolist() == [0.0, 100.0, 200.0, 200.0]
    assert fg.frac(fg.tensor([-1.5, 1.5, 2.0])).tolist() == [-0.5, 0.5, 0.0]


def test_special_values_match_pytorch():
    assert fg.digamma(fg.tensor([0.0, -0.0])).tolist() == [-INF, INF]
    assert math.isnan(fg.digamma(fg.tensor([-1.0])).item())
    assert fg.lgamma(fg.tensor([0.0, -7.0])).tolist() == [INF, INF]
    assert fg.lgamma(fg.tensor([-0.5], dtype="float64")).item() == pytest.approx(1.2655121234846454)
    assert fg.polygamma(0, fg.tensor([0.0])).tolist() == [-INF]
    x = fg.tensor([0.5, 2.0], dtype="float64")
    assert fg.polygamma(3, x).tolist() == pytest.approx([97.40909103400242, 0.4939394022668291])
    assert fg.polygamma(0, x).tolist() == fg.digamma(x).tolist()
    assert fg.erfinv(fg.tensor([1.0, -1.0])).tolist() == [INF, -INF]
    assert fg.logit(fg.tensor([0.0, 1.0])).tolist() == [-INF, INF]
    assert fg.logit(fg.tensor([0.2, 0.9]), eps=-1.0).tolist() == fg.logit(fg.tensor([0.2, 0.9])).tolist()


# -- non-differentiable ops ---------------------------------------------------------------------------
def test_classification_ops():
    x = fg.tensor([1.0, INF, -INF, NAN], requires_grad=True)
    assert fg.isnan(x).tolist() == [False, False, False, True]
    assert fg.isfinite(x).tolist() == [True, False, False, False]
    assert fg.isinf(x).tolist() == [False, True, True, False]
    assert fg.isposinf(x).tolist() == [False, True, False, False]
    assert fg.isneginf(x).tolist() == [False, False, True, False]
    assert not fg.isnan(x).requires_grad and fg.isnan(x).dtype == np.bool_
    assert fg.isnan(fg.tensor([1, 2])).tolist() == [False, False]


def test_logical_xor_and_bitwise_ops():
    x = fg.tensor([0.0, 1.0, 2.0], requires_grad=True)
    out = fg.logical_xor(x, fg.tensor([1.0, 1.0, 0.0]))
    assert out.tolist() == [True, False, True] and not out.requires_grad
    a = fg.tensor([12, 10, -1])
    assert fg.bitwise_and(a, 6).tolist() == [4, 2, 6]
    assert fg.bitwise_or(a, 6).tolist() == [14, 14, -1]
    assert fg.bitwise_xor(a, 6).tolist() == (a ^ 6).tolist() == (6 ^ a).tolist() == [10, 12, -7]
    assert fg.bitwise_not(a).tolist() == [-13, -11, 0]
    b = fg.tensor([True, False])
    assert fg.bitwise_not(b).tolist() == [False, True]
    assert (b ^ fg.tensor([True, True])).tolist() == [False, True]
    assert fg.bitwise_and(a[:2], fg.tensor([True, False])).tolist() == [0, 0]
    assert fg.bitwise_and(a, 6).dtype == a.dtype


# -- gradients at PyTorch's conventions --------------------------------------------------------------
def test_rounded_division_has_zero_gradient():
    a = fg.tensor([3.5, -2.5], requires_grad=True)
    b = fg.tensor([2.0], requires_grad=True)
    for out in (fg.div(a, b, rounding_mode="trunc"), fg.div(a, b, rounding_mode="floor"), a // b):
        assert out.requires_grad and out.grad_fn.name() == "DivBackward2"
        ga, gb = fg.grad(out.sum(), [a, b])
        assert ga.tolist() == [0.0, 0.0] and gb.tolist() == [0.0]


def test_remainder_and_fmod_gradients():
    a = fg.tensor([3.5, -3.5], requires_grad=True)
    b = fg.tensor([2.0, 2.0], requires_grad=True)
    ga, gb = fg.grad(fg.remainder(a, b).sum(), [a, b])
    assert ga.tolist() == [1.0, 1.0] and gb.tolist() == [-1.0, 2.0]  # -floor(a / b)
    ga, gb = fg.grad(fg.fmod(a, b).sum(), [a, b])
    assert ga.tolist() == [1.0, 1.0] and gb.tolist() == [-1.0, 1.0]  # -trunc(a / b)
    assert _grad(fg.remainder(3.5, b), b) == [-1.0, -1.0]


def test_logit_gradient_outside_its_domain():
    x = fg.tensor([-0.5, 0.5, 1.5], requires_grad=True)
    g = _grad(fg.logit(x), x)
    assert math.isnan(g[0]) and g[1] == 4.0 and math.isnan(g[2])
    x = fg.tensor([0.05, 0.5, 0.95, 0.1], requires_grad=True)
    assert _grad(fg.logit(x, eps=0.1), x) == pytest.approx([0.0, 4.0, 0.0, 11.111111])


def test_frac_and_rounding_gradients():
    x = fg.tensor([-1.25, 2.5], requires_grad=True)
    assert _grad(fg.frac(x), x) == [1.0, 1.0]
    for fn in (fg.floor, fg.ceil, fg.trunc, fg.round):
        assert _grad(fn(x), x) == [0.0, 0.0]
    assert _grad(fg.round(x, decimals=1), x) == [0.0, 0.0]


def test_lerp_tensor_weight_gradients():
    a = fg.tensor([1.0, 2.0], requires_grad=True)
    b = fg.tensor([3.0, 6.0], requires_grad=True)
    w = fg.tensor(0.25, requires_grad=True)
    out = fg.lerp(a, b, w)
    assert out.tolist() == [1.5, 3.0] and out.grad_fn.name() == "LerpBackward1"
    ga, gb, gw = fg.grad(out.sum(), [a, b, w])
    assert ga.tolist() == [0.75, 0.75] and gb.tolist() == [0.25, 0.25] and gw.tolist() == 6.0
    assert fg.lerp(a, b, 1.0).tolist() == [3.0, 6.0]  # exact at the ends


def test_node_names_follow_pytorch():
    x = fg.tensor([0.3, 0.6], requires_grad=True)
    y = fg.tensor([0.7, 1.6], requires_grad=True)
    names = {
        "RemainderBackward0": fg.remainder(x, 2.0), "RemainderBackward1": fg.remainder(x, y),
        "FmodBackward0": fg.fmod(x, 2.0), "FmodBackward1": fg.fmod(x, y),
        "ReciprocalBackward0": x.reciprocal(), "Exp2Backward0": x.exp2(), "Expm1Backward0": x.expm1(),
        "Log2Backward0": x.log2(), "Log10Backward0": x.log10(), "Log1PBackward0": x.log1p(),
        "RsqrtBackward0": x.rsqrt(), "PowBackward0": x.square(), "TanBackward0": x.tan(),
        "AsinBackward0": x.arcsin(), "AcosBackward0": x.acos(), "AtanBackward0": x.atan(),
        "Atan2Backward0": x.atan2(y), "SinhBackward0": x.sinh(), "CoshBackward0": x.cosh(),
        "AsinhBackward0": x.asinh(), "AcoshBackward0": y.acosh(), "AtanhBackward0": x.atanh(),
        "LogitBackward0": x.logit(0.1), "LerpBackward0": x.lerp(y, 0.3), "HypotBackward0": x.hypot(y),
        "ErfBackward0": x.erf(), "ErfcBackward0": x.erfc(), "ErfinvBackward0": x.erfinv(),
        "LgammaBackward0": x.lgamma(), "DigammaBackward0": x.digamma(), "PolygammaBackward0": x.polygamma(2),
        "FloorBackward0": x.floor(), "CeilBackward0": x.ceil(), "RoundBackward0": x.round(),
        "RoundBackward1": x.round(decimals=1), "TruncBackward0": x.fix(), "FracBackward0": x.frac(),
    }
    assert {name: out.grad_fn.name() for name, out in names.items()} == {name: name for name in names}


def test_tensor_methods_are_installed():
    for module in (elementwise_math, trigonometric, special, rounding):
        for name in module.TENSOR_METHODS:
            assert getattr(fg.Tensor, name) is module.TENSOR_METHODS[name], name
        for name in module.__all__:
            assert getattr(fg, name) is getattr(module, name), name
    x = fg.tensor([0.5])
    assert x.polygamma(1).tolist() == fg.polygamma(1, x).tolist()
    assert x.divide(2.0).tolist() == [0.25]


# -- higher derivatives and tracing -----------------------------------------------------------------
def test_lgamma_derivatives_of_every_order_close_over_polygamma():
    x = fg.tensor([1.5], dtype="float64", requires_grad=True)
    y = fg.lgamma(x).sum()
    expected = [jax.scipy.special.digamma(1.5)] + [jax.scipy.special.polygamma(n, 1.5) for n in (1, 2, 3)]
    for want in expected:
        (y,) = fg.grad(y.sum(), [x], create_graph=True)
        assert y.item() == pytest.approx(float(want), rel=1e-12)
        assert y.grad_fn.name() in ("MulBackward0", "PolygammaBackward0", "DigammaBackward0")


def _program(a, b):
    x = fg.tensor(a, requires_grad=True)
    w = fg.tensor(b, requires_grad=True)
    y = (fg.lerp(fg.expm1(x), fg.atan2(x, w), w) + fg.remainder(x, 0.75) + fg.logit(fg.sigmoid(x), 1e-3)
         + fg.digamma(fg.hypot(x, w)) + fg.erfinv(fg.tanh(x) * 0.5) + fg.frac(x) * fg.floor(w) + x // 0.5)
    gx, gw = fg.grad(y.sum(), [x, w], create_graph=True)
    (hx,) = fg.grad((gx * gx).sum() + gw.sum(), [x])
    return y.array, gx.array, hx.array


def test_the_family_traces_under_jit_and_vmap():
    a = jnp.array([0.3, 1.2, -0.7])
    b = jnp.array([0.9, 0.4, 1.6])
    eager = _program(a, b)
    jitted = jax.jit(_program)(a, b)
    mapped = jax.vmap(_program)(a, b)
    for e, j, m in zip(eager, jitted, mapped):
        np.testing.assert_allclose(j, e, rtol=1e-5)
        np.testing.assert_allclose(m, e, rtol=1e-5)


def test_integer_values_match_pytorch():
    torch = pytest.importorskip("torch")
    a_np, b_np = np.array([7, -7, 3, -3, 0]), np.array([2, 2, -2, -2, 5])
    a, b = fg.tensor(a_np), fg.tensor(b_np)
    ta, tb = torch.from_numpy(a_np), torch.from_numpy(b_np)
    pairs = [
        (fg.div(a, b, rounding_mode="trunc"), torch.div(ta, tb, rounding_mode="trunc")),
        (fg.floor_divide(a, b), torch.floor_divide(ta, tb)),
        (fg.remainder(a, b), torch.remainder(ta, tb)),
        (fg.fmod(a, b), torch.fmod(ta, tb)),
        (fg.bitwise_and(a, b), torch.bitwise_and(ta, tb)),
        (fg.bitwise_or(a, b), torch.bitwise_or(ta, tb)),
        (fg.bitwise_xor(a, b), torch.bitwise_xor(ta, tb)),
        (fg.bitwise_not(a), torch.bitwise_not(ta)),
        (fg.logical_xor(a, b), torch.logical_xor(ta, tb)),
    ]
    for mine, theirs in pairs:
        assert mine.tolist() == theirs.tolist()
    for name in ("exp2", "reciprocal", "atan", "erf", "lgamma", "digamma"):
        mine, theirs = getattr(fg, name)(a), getattr(torch, name)(ta)
        assert mine.dtype == np.float32 and theirs.dtype == torch.float32
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-5)


def test_clamp_with_tensor_bounds_gives_ties_to_the_input_as_torch():
    x = fg.tensor([5.0, 3.0, 7.0, 0.0, 1.0], requires_grad=True)
    lo = fg.tensor([1.0, 1.0, 1.0, 1.0, 1.0], requires_grad=True)
    hi = fg.tensor([5.0, 5.0, 5.0, 5.0, 5.0], requires_grad=True)
    y = x.clamp(min=lo, max=hi)
    assert y.tolist() == [5.0, 3.0, 5.0, 1.0, 1.0]
    gx, glo, ghi = fg.grad(y.sum(), [x, lo, hi])
    assert gx.tolist() == [1.0, 1.0, 0.0, 0.0, 1.0]  # ties (x == max, x == min) go to x, as in torch
    assert glo.tolist() == [0.0, 0.0, 0.0, 1.0, 0.0]
    assert ghi.tolist() == [0.0, 0.0, 1.0, 0.0, 0.0]
    (g_inverted,) = fg.grad(fg.clamp(x, min=hi, max=lo).sum(), [lo])  # max < min: the result is max
    assert g_inverted.tolist() == [1.0] * 5
