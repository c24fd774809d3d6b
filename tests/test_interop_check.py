"""interop.check_grads (fgraph's derivatives against jax.grad of the same program) and the
``python -m interop.crosscheck`` CLI over the op registry."""
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fgraph as fg
import fgraph.nn.functional as F
from interop import GradientMismatch, check_grads
from interop import crosscheck
from interop._samples import SAMPLES, sample_for, resolve_params
from fgraph.ops._declare import registry


# -- functions with a deliberately wrong backward ---------------------------------------------------
class WrongScale(fg.autograd.Function):
    """x**2 with a backward off by 0.05%: 2.001 * x instead of 2 * x."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return fg.tensor(x.array ** 2)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x * 2.001


class WrongJvp(fg.autograd.Function):
    """x**2 with a right backward and a forward derivative off by 0.05%."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return fg.tensor(x.array ** 2)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x * 2

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return t * x * 2.001


class CubeDetachedBackward(fg.autograd.Function):
    """x**3 whose backward is right (3 x**2) but built from a detached copy of x: the second
    derivative through it is missing (0 instead of 6 x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return fg.tensor(x.array ** 3)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3.0 * fg.tensor(x.array) ** 2


class WrongAtOneEntry(fg.autograd.Function):
    """a * b with the gradient of ``b`` wrong at entry (1, 2) only."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return fg.tensor(a.array * b.array)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        bump = np.zeros(b.shape)
        bump[1, 2] = 0.5
        return g * b, g * a + fg.tensor(bump)


X = np.array([1.0, 2.0])


# -- passing programs ------------------------------------------------------------------------------
def test_passes_on_correct_ops_and_reports_every_input_and_order():
    a = np.array([[0.3, -1.2, 0.7], [1.1, 0.4, -0.6]])
    b = np.array([0.5, -0.25, 2.0])
    report = check_grads(lambda x, y: (fg.exp(x) * fg.sin(y) + x / (1.5 + fg.tanh(y))).sum(), a, b, order=3)
    assert report.passed
    assert [(e.input, e.order) for e in report.entries] == [
        ("args[0]", 1), ("args[1]", 1), ("args[0]", 2), ("args[1]", 2), ("args[0]", 3), ("args[1]", 3)]
    assert [e.shape for e in report.entries[:2]] == [(2, 3), (3,)]
    assert report.max_abs < 1e-12


def test_mlp_loss_with_positional_parameters_and_integer_labels():
    rng = np.random.default_rng(0)
    w1, b1 = rng.standard_normal((4, 5)) * 0.5, rng.standard_normal(5) * 0.1
    w2, b2 = rng.standard_normal((5, 3)) * 0.5, rng.standard_normal(3) * 0.1
    x = rng.standard_normal((6, 4))
    y = fg.tensor(np.array([0, 2, 1, 1, 0, 2]))  # integer: a constant, passed through

    def loss(w1, b1, w2, b2, x, y):
        h = fg.tanh(x @ w1 + b1)
        return F.cross_entropy(h @ w2 + b2, y)

    report = check_grads(loss, w1, b1, w2, b2, x, y, modes=("rev", "fwd"))
    assert report.passed
    assert {e.input for e in report.entries} == {"args[0]", "args[1]", "args[2]", "args[3]", "args[4]", "jvp"}


def test_integer_and_python_constants_are_passed_through():
    seen = []

    def fn(x, k, idx, scale):
        seen.append((type(k), type(scale)))
        return (fg.roll(x, k, 0)[idx] ** 2 * scale).sum()

    report = check_grads(fn, fg.tensor([0.5, -1.0, 2.0]), 1, np.array([0, 2]), 3.0)
    assert report.passed and [e.input for e in report.entries] == ["args[0]", "args[0]"]
    assert set(seen) == {(int, float)}


def test_accepts_tensors_numpy_and_jax_arrays_and_float32():
    report = check_grads(lambda a, b, c: (a * b * c).sum(), fg.tensor([1.0, 2.0], requires_grad=True),
                         np.array([3.0, 4.0], np.float32), jnp.array([0.5, 0.25], jnp.float32))
    assert report.passed and report.dtype == np.dtype("float32")
    assert (report.rtol, report.atol) == (2e-4, 2e-5)


@settings(max_examples=5, deadline=None)
@given(st.lists(st.floats(-2.0, 2.0), min_size=3, max_size=3))
def test_passes_on_drawn_values(values):
    x = np.array(values)
    assert check_grads(lambda t: (fg.sigmoid(t) * fg.cos(t) + t ** 2).sum(), x).passed


# -- catching wrong derivatives -------------------------------------------------------------------
def test_wrong_custom_backward_is_caught_at_order_1():
    with pytest.raises(GradientMismatch) as info:
        check_grads(lambda x: WrongScale.apply(x).sum(), X, order=1)
    err = info.value
    assert isinstance(err, AssertionError)
    (entry,) = err.report.entries
    assert not entry.passed and entry.order == 1
    # independent reference: the error is exactly 0.001 * x, largest at x = 2
    assert entry.max_abs == pytest.approx(0.002, rel=1e-9)
    assert entry.worst_index == (1,)
    assert (entry.fgraph_value, entry.jax_value) == (pytest.approx(4.002), pytest.approx(4.0))
    assert "MISMATCH" in str(err) and "args[0]" in str(err)


def test_correct_gradient_with_wrong_second_derivative_is_caught_at_order_2_only():
    fn = lambda x: CubeDetachedBackward.apply(x).sum()  # noqa: E731
    assert check_grads(fn, X, order=1).passed
    with pytest.raises(GradientMismatch) as info:
        check_grads(fn, X, order=2)
    first, second = info.value.report.entries
    assert first.passed and first.order == 1
    assert not second.passed and second.order == 2
    # order 2 compares H v = 6 x v; fgraph's missing term leaves 0
    v = np.random.default_rng(0).standard_normal(2)
    assert second.max_abs == pytest.approx(np.max(np.abs(6 * X * v)), rel=1e-9)


def test_forward_mode_check_catches_a_wrong_jvp_under_a_right_backward():
    with pytest.raises(GradientMismatch) as info:
        check_grads(lambda x: WrongJvp.apply(x).sum(), X, order=1, modes=("rev", "fwd"))
    assert [(e.mode, e.passed) for e in info.value.report.entries] == [("rev", True), ("fwd", False)]


def test_forward_mode_check_needs_a_jvp_on_custom_functions():
    with pytest.raises(NotImplementedError, match="jvp"):
        check_grads(lambda x: WrongScale.apply(x).sum(), X, order=1, modes=("rev", "fwd"))


def test_report_names_the_wrong_input_and_its_worst_entry():
    a = np.full((2, 3), 0.5)
    b = np.arange(6.0).reshape(2, 3)
    with pytest.raises(GradientMismatch) as info:
        check_grads(lambda a, b: WrongAtOneEntry.apply(a, b).sum(), a, b, order=1)
    report = info.value.report
    ea, eb = report.entries
    assert ea.passed and ea.max_abs == 0.0
    assert not eb.passed and eb.max_abs == pytest.approx(0.5)
    assert eb.worst_index == (1, 2) and report.worst is eb
    assert eb.max_rel == pytest.approx(1.0)  # 0.5 off a true value of 0.5
    text = str(report)
    assert "args[1]" in text and "(1, 2)" in text


def test_custom_tolerances_are_used():
    report = check_grads(lambda x: WrongScale.apply(x).sum(), X, order=1, rtol=1e-3, atol=0.0)
    assert report.passed and report.rtol == 1e-3


# -- bad input ------------------------------------------------------------------------------------
def test_non_scalar_output_is_rejected():
    with pytest.raises(ValueError, match=r"scalar Tensor, got shape \(2,\).*sum\(\)"):
        check_grads(lambda x: x * 2, X)


def test_no_float_arguments_is_rejected():
    with pytest.raises(TypeError, match="no floating-point array arguments.*int"):
        check_grads(lambda k: fg.tensor(float(k)), 3)
    with pytest.raises(TypeError, match="no floating-point"):
        check_grads(lambda i: i.sum(), np.array([1, 2]))


def test_bad_order_and_modes_and_output_type_are_rejected():
    with pytest.raises(ValueError, match="order must be an integer >= 1"):
        check_grads(lambda x: x.sum(), X, order=0)
    with pytest.raises(ValueError, match="modes must be"):
        check_grads(lambda x: x.sum(), X, modes=("backward",))
    with pytest.raises(TypeError, match="must return a scalar fgraph Tensor, got Array"):
        check_grads(lambda x: jnp.sum(x.array), X)


def test_untraceable_function_is_explained():
    def host_read(x):
        return x.sum() * float(x.sum().item())

    with pytest.raises(TypeError, match="not traceable by JAX"):
        check_grads(host_read, X)


# -- the registry-wide crosscheck -----------------------------------------------------------------
def test_every_differentiable_op_has_a_sample():
    missing = [name for name in crosscheck.differentiable_ops() if sample_for(name) is None]
    assert not missing, f"ops without a sample (add them to SAMPLES in interop/_samples.py): {missing}"
    stale = [name for name in SAMPLES if name not in registry or not registry[name].differentiable]
    assert not stale, f"samples for ops that are not differentiable registry ops: {stale}"
    for name, sample in SAMPLES.items():
        params = resolve_params(sample) or {}
        assert set(params) == set(registry[name].param_names), name


def test_crosscheck_reports_a_wrong_rule(monkeypatch):
    op = registry["exp"]

    def wrong_rule(ctx, g):
        return (g * ctx.result * 1.01,)

    monkeypatch.setattr(op, "rule", wrong_rule)
    monkeypatch.setattr(op, "_rule_kernels", {})
    result = crosscheck.check_op("exp", "float64")
    assert result.status == "MISMATCH" and "args[0]" in result.message
    assert result.max_rel == pytest.approx(1.01 ** 2 - 1, rel=1e-6)  # the rule runs twice at order 2
    assert crosscheck.main(["--op", "exp", "--dtype", "float64", "--jobs", "1"]) == 1


def test_crosscheck_cli_on_two_ops(tmp_path):
    md = tmp_path / "table.md"
    proc = subprocess.run(
        [sys.executable, "-m", "interop.crosscheck", "--op", "linalg_slogdet", "--op", "scatter_reduce",
         "--jobs", "1", "--markdown", str(md)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.startswith("linalg_slogdet") and line.endswith("ok (real only)") for line in lines)
    assert any(line.startswith("scatter_reduce") and "float32, float64" in line for line in lines)
    assert "Wall time" in proc.stdout
    text = md.read_text()
    assert "| `linalg_slogdet` | float32, float64 | 1-2 |" in text and "2 ops passed" in text


def test_crosscheck_rejects_an_unknown_op():
    with pytest.raises(SystemExit):
        crosscheck.main(["--op", "no_such_op"])


def test_jax_is_float64_here():
    assert jax.config.jax_enable_x64
