"""Fused passes on dual values: a repeated backward under forward mode runs as one op whose tangent is jax.jvp."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
import fgraph.autograd.forward_ad as fwAD
from fgraph.autograd import fused_dual, fusion

jax.config.update("jax_enable_x64", True)

RNG = np.random.default_rng(11)
X0, V0, U0, S0 = (RNG.standard_normal(6) for _ in range(4))
W1 = RNG.standard_normal((6, 5)) / 2
W2 = RNG.standard_normal((5, 6)) / 2
IDX = np.array([4, 0, 2, 2])


def loss_of(x, lib, idx):
    """Matmuls, tanh and sin (rules read their results and inputs), a max, integer indexing, a product."""
    h = lib.tanh(x @ W1)
    out = lib.sin(h @ W2) * x
    return (out ** 2).sum() + out[idx].sum() * out.max()


def _jax_grad(x):
    return jax.grad(lambda y: loss_of(y, jnp, jnp.asarray(IDX)))(x)


def _compiling(background: bool):
    fusion.wait_for_compiles()
    fusion.clear_cache()
    fusion.set_background(background)
    try:
        yield
    finally:
        fusion.wait_for_compiles()
        fusion.set_background(True)
        fusion.clear_cache()


@pytest.fixture(params=["foreground", "background"])
def both_modes(request):
    yield from _compiling(request.param == "background")


@pytest.fixture
def compile_mode():
    """Compiles on the caller's thread (the background worker is checked once, by the first test)."""
    yield from _compiling(False)


def _taken(monkeypatch, name: str) -> list:
    """Per call of ``fused_dual.<name>`` from now on: whether it answered (not ``None``)."""
    taken = []
    original = getattr(fused_dual, name)

    def counting(*args):
        result = original(*args)
        taken.append(result is not None)
        return result

    monkeypatch.setattr(fused_dual, name, counting)
    return taken


@pytest.fixture
def fused_runs(monkeypatch):
    """Per pass under a dual level: whether it ran as one fused op."""
    return _taken(monkeypatch, "try_run")


def test_forward_over_reverse_runs_fused_and_equals_jax(both_modes, fused_runs, monkeypatch):
    """Without create_graph nothing is recorded, so the fused pass runs value and tangent on the saved arrays
    (no input records built, ``_run_untaped``): the results are graph-free and equal jax.jvp of jax.grad."""
    untaped = _taken(monkeypatch, "_run_untaped")
    expected = jax.jvp(_jax_grad, (X0,), (V0,))
    idx = fg.tensor(IDX)
    for _ in range(6):
        x = fg.tensor(X0, requires_grad=True)
        with fwAD.dual_level():
            (g,) = fg.grad(loss_of(fwAD.make_dual(x, fg.tensor(V0)), fg, idx), [x])
            primal, tangent = fwAD.unpack_dual(g)
            np.testing.assert_allclose(primal.numpy(), expected[0], rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(tangent.numpy(), expected[1], rtol=1e-10, atol=1e-12)
        assert primal.grad_fn is None and tangent.grad_fn is None
        fusion.wait_for_compiles()
    assert any(fused_runs[-2:]), fused_runs
    assert any(untaped[-2:]), untaped


def test_fused_transforms_equal_jax(compile_mode, fused_runs):
    """fg.func.jvp of fg.func.grad, the benchmark's Hessian-vector product."""
    expected = jax.jvp(_jax_grad, (X0,), (V0,))[1]
    idx = fg.tensor(IDX)
    grad = fg.func.grad(lambda y: loss_of(y, fg, idx))
    for _ in range(6):
        hv = fg.func.jvp(grad, (fg.tensor(X0),), (fg.tensor(V0),))[1]
        np.testing.assert_allclose(hv.numpy(), expected, rtol=1e-10, atol=1e-12)
        fusion.wait_for_compiles()
    assert any(fused_runs[-2:]), fused_runs


def test_create_graph_pass_records_one_op_with_all_orders(compile_mode, fused_runs):
    """Under create_graph the fused op is recorded: the gradient's tangent differentiates again (reverse over
    forward over reverse: a third derivative) and the gradient itself too (its value's second derivative)."""
    def third(x):  # d/dx <jvp(grad)(x; v), u>
        return jax.grad(lambda y: jnp.vdot(jax.jvp(_jax_grad, (y,), (V0,))[1], U0))(x)

    def second(x):  # d/dx <grad(x), s>
        return jax.grad(lambda y: jnp.vdot(_jax_grad(y), S0))(x)

    idx = fg.tensor(IDX)
    names = set()
    for _ in range(6):
        x = fg.tensor(X0, requires_grad=True)
        with fwAD.dual_level():
            (g,) = fg.grad(loss_of(fwAD.make_dual(x, fg.tensor(V0)), fg, idx), [x], create_graph=True)
            primal, tangent = fwAD.unpack_dual(g)
        names.add((type(primal.grad_fn).__name__, type(tangent.grad_fn).__name__))
        (d3,) = fg.grad((tangent * fg.tensor(U0)).sum(), [x])
        (d2,) = fg.grad((primal * fg.tensor(S0)).sum(), [x])
        np.testing.assert_allclose(d3.numpy(), third(X0), rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(d2.numpy(), second(X0), rtol=1e-9, atol=1e-11)
        fusion.wait_for_compiles()
    assert any(fused_runs[-2:]), fused_runs
    assert ("FusedPassBackward0", "FusedPassJvpBackward0") in names, names


def test_nested_levels_through_a_fused_pass(compile_mode, fused_runs):
    """Forward over forward over reverse: the inner level's tangent of the gradient is dual at the outer."""
    expected = jax.jvp(lambda y: jax.jvp(_jax_grad, (y,), (V0,))[1], (X0,), (U0,))[1]
    idx = fg.tensor(IDX)
    for _ in range(6):
        x = fg.tensor(X0, requires_grad=True)
        with fwAD.dual_level():
            outer = fwAD.make_dual(x, fg.tensor(U0))
            with fwAD.dual_level():
                inner = fwAD.make_dual(outer, fg.tensor(V0))
                (g,) = fg.grad(loss_of(inner, fg, idx), [x])
                hv = fwAD.unpack_dual(g).tangent
            result = fwAD.unpack_dual(hv).tangent
        np.testing.assert_allclose(result.numpy(), expected, rtol=1e-9, atol=1e-11)
        fusion.wait_for_compiles()
    assert any(fused_runs[-2:]), fused_runs


def test_a_pass_without_tangents_under_a_level_gives_plain_gradients(compile_mode, fused_runs):
    idx = fg.tensor(IDX)
    expected = _jax_grad(X0)
    for _ in range(6):
        x = fg.tensor(X0, requires_grad=True)
        with fwAD.dual_level():
            (g,) = fg.grad(loss_of(x, fg, idx), [x])
            assert fwAD.unpack_dual(g).tangent is None
        np.testing.assert_allclose(g.numpy(), expected, rtol=1e-10, atol=1e-12)
        fusion.wait_for_compiles()
    assert any(fused_runs[-2:]), fused_runs

