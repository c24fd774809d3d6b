"""gradcheck / gradgradcheck: correct programs pass, wrong gradients fail with a useful report."""
from __future__ import annotations

import re

import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
from fgraph.autograd import GradcheckError, gradcheck, gradgradcheck
from fgraph.ops import registry


def t64(a, requires_grad=True):
    return fg.tensor(np.asarray(a, dtype=np.float64), dtype=fg.float64, requires_grad=requires_grad)


X = [0.3, -0.7, 1.1]
A = [[0.5, -1.2, 0.8], [0.1, 0.9, -0.4]]


# -- passing programs ------------------------------------------------------------------------------
PROGRAMS = {
    "elementwise": (lambda x: fg.sin(x) * fg.exp(x) / (x * x + 1.0) + fg.sigmoid(x) ** 2, lambda: (t64(X),)),
    "matmul": (lambda a, x: fg.tanh(a @ x), lambda: (t64(A), t64(X))),
    "matmul_matrix": (lambda a, b: a @ b.transpose(0, 1), lambda: (t64(A), t64(A))),
    "reductions": (lambda a: (a.sum(1) * a.mean(0).sum(), a.mean()), lambda: (t64(A),)),
    "broadcast_shape_ops": (
        lambda a, x: fg.cat([(a * x).reshape(3, 2), fg.stack([x, x * x], 1)], 0)[1:, :].sqrt(),
        lambda: (t64(np.abs(A) + 0.5), t64(np.abs(X) + 0.5)),
    ),
    "mixed_args": (lambda x, k, c: x ** k * c, lambda: (t64(X), 3, t64([2.0, 1.0, -1.0], requires_grad=False))),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_gradcheck_and_gradgradcheck_pass(name):
    fn, make_inputs = PROGRAMS[name]
    assert gradcheck(fn, make_inputs())
    assert gradcheck(fn, make_inputs(), fast_mode=True)
    assert gradgradcheck(fn, make_inputs())


def test_single_tensor_input_and_given_grad_outputs():
    x = t64(X)
    assert gradcheck(lambda t: (t * t).sum(), x)
    assert gradgradcheck(lambda t: fg.exp(t) * t, x, t64([1.0, -2.0, 0.5]))
    assert gradgradcheck(lambda t: fg.exp(t) * t, x, t64([1.0, -2.0, 0.5], requires_grad=False))


# -- wrong gradients fail, with a report ------------------------------------------------------------
def _numbers(report, label):
    return float(re.search(label + r":\s+(-?[0-9.e+-]+)", report).group(1))


def test_doubled_gradient_hook_fails_with_report():
    a, x = t64(A), t64(X)
    x.register_hook(lambda g: g * 2)
    fn = lambda a, x: fg.tanh(a @ x)  # noqa: E731
    with pytest.raises(GradcheckError) as info:
        gradcheck(fn, (a, x))
    report = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert "Jacobian mismatch for output 0 with respect to input 1" in report
    numerical, analytical = _numbers(report, "numerical"), _numbers(report, "analytical")
    assert analytical == pytest.approx(2 * numerical, rel=1e-6)
    # the worst entry is named and its value is the true derivative d tanh(a@x)[r] / d x[c]
    row, col = map(int, re.search(r"Jacobian\[(\d+), (\d+)\]", report).groups())
    z = np.tanh(np.asarray(A) @ np.asarray(X))
    assert numerical == pytest.approx((1 - z[row] ** 2) * A[row][col], rel=1e-6)
    assert "max abs difference" in report and "d output[0]" in report and "d input[1]" in report
    assert not gradcheck(fn, (a, x), raise_exception=False)
    with pytest.raises(GradcheckError, match="with respect to input 1"):
        gradcheck(fn, (a, x), fast_mode=True)
    assert gradcheck(fn, (a, t64(X)))  # a fresh leaf has no hook


def _wrong_sin_rule(ctx, g):
    (x,) = ctx.inputs
    return (g * fg.sin(x),)  # should be cos


def _first_order_only_sin_rule(ctx, g):
    (x,) = ctx.inputs
    return (g * fg.cos(x.detach()),)  # right value, but cut from the graph: no second derivative


WRONG_SIN = registry.get("test_wrong_sin") or fg.ops.declare("test_wrong_sin", jnp.sin, _wrong_sin_rule,
                                                            save_inputs=True)
FIRST_ORDER_SIN = registry.get("test_first_order_sin") or fg.ops.declare(
    "test_first_order_sin", jnp.sin, _first_order_only_sin_rule, save_inputs=True)


def test_wrong_custom_rule_fails():
    x = t64(X)
    with pytest.raises(GradcheckError) as info:
        gradcheck(lambda t: fg.ops.apply_op(WRONG_SIN, (t,)) * 2.0, (x,))
    report = str(info.value)
    assert "output 0 with respect to input 0" in report
    row, col = map(int, re.search(r"Jacobian\[(\d+), (\d+)\]", report).groups())
    assert row == col
    assert _numbers(report, "numerical") == pytest.approx(2 * np.cos(X[col]), rel=1e-6)
    assert _numbers(report, "analytical") == pytest.approx(2 * np.sin(X[col]), rel=1e-8)


def test_gradgradcheck_catches_a_wrong_second_derivative():
    x = t64(X)
    fn = lambda t: fg.ops.apply_op(FIRST_ORDER_SIN, (t,))  # noqa: E731
    assert gradcheck(fn, (x,))
    with pytest.raises(GradcheckError) as info:
        gradgradcheck(fn, (x,))
    report = str(info.value)
    assert "output 0 (the gradient with respect to input 0) with respect to input 0" in report
    assert _numbers(report, "analytical") == 0.0
    assert not gradgradcheck(fn, (x,), raise_exception=False)


# -- argument errors ---------------------------------------------------------------------------------
def test_float32_input_raises_dtype_error():
    x32 = fg.tensor(X, dtype=fg.float32, requires_grad=True)
    with pytest.raises(TypeError, match=r"input 1 requires grad and has dtype float32.*float64"):
        gradcheck(lambda a, b: a * b, (t64(X), x32))
    with pytest.raises(TypeError, match="input 0 .* float32"):
        gradgradcheck(lambda a: a * a, (x32,))
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(lambda a: a * 2.0, (t64(X, requires_grad=False),))


# -- the secondary checks ------------------------------------------------------------------------------
def test_nonlinear_backward_fails_zero_grad_output_check():
    x = t64(X)
    # exact for every non-zero seed, but all-zero grad_outputs give ones
    x.register_hook(lambda g: g + fg.where((g * g).sum() == 0, 1.0, 0.0))
    with pytest.raises(GradcheckError, match="zero when all output grads are zero"):
        gradcheck(lambda t: fg.sin(t), (x,))
    assert gradcheck(lambda t: fg.sin(t), (x,), check_undefined_grad=False)


def test_nondeterministic_backward_is_reported():
    x = t64(X)
    calls = [0]

    def drifting(g):
        calls[0] += 1
        return g * (1.0 + 1e-6 * calls[0])

    x.register_hook(drifting)
    with pytest.raises(GradcheckError, match="not reentrant"):
        gradcheck(lambda t: fg.sin(t), (x,))
    assert gradcheck(lambda t: fg.sin(t), (x,), nondet_tol=1e-4)


def test_output_without_grad_must_have_zero_numerical_derivative():
    x = t64(X)
    assert gradcheck(lambda t: fg.tensor([1.0, 2.0], dtype=fg.float64), (x,))
    with pytest.raises(GradcheckError, match="expected to be zero"):
        gradcheck(lambda t: t.detach() * 2.0, (x,))


def test_backward_that_needs_concrete_values_runs_row_by_row():
    # the hook reads its gradient on the host, which jax.vmap cannot trace
    x = t64(X)
    x.register_hook(lambda g: g * (1.0 + 0.0 * float(np.asarray(g.array).sum())))
    assert gradcheck(lambda t: fg.sin(t) * t, (x,), check_undefined_grad=False)
    jac = fg.autograd.functional.jacobian(lambda t: fg.sin(t) * t, t64(X), vectorize=True)
    np.testing.assert_allclose(np.diag(jac.numpy()), np.sin(X) + np.asarray(X) * np.cos(X), rtol=1e-12)
