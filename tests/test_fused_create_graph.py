"""Fused create_graph passes: a repeated differentiable backward runs as one node whose rule is jax.vjp."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
from fgraph.autograd import fusion
from fgraph.autograd.graph import saved_tensors_hooks

RNG = np.random.default_rng(7)
X0 = RNG.standard_normal(6)
V0 = RNG.standard_normal(6)
W1 = RNG.standard_normal((6, 5)) / 2
W2 = RNG.standard_normal((5, 6)) / 2
IDX = np.array([4, 0, 2, 2])


def loss_of(x, w1, w2, lib, idx):
    """Matmuls, tanh, a max (saves its argmax), integer indexing (saves indices) and a product."""
    h = lib.tanh(x @ w1)
    out = lib.sin(h @ w2) * x
    return (out ** 2).sum() + out[idx].sum() * out.max()


def _jax_loss(x):
    return loss_of(x, jnp.asarray(W1), jnp.asarray(W2), jnp, jnp.asarray(IDX))


@pytest.fixture(params=["foreground", "background"])
def compile_mode(request):
    fusion.wait_for_compiles()
    fusion.clear_cache()
    fusion.set_background(request.param == "background")
    try:
        yield request.param
    finally:
        fusion.wait_for_compiles()
        fusion.set_background(True)
        fusion.clear_cache()


def _leaves():
    x = fg.tensor(X0, requires_grad=True)
    return x, fg.tensor(V0), fg.tensor(W1), fg.tensor(W2), fg.tensor(IDX)


def _hvp(x, v, w1, w2, idx):
    (g,) = fg.grad(loss_of(x, w1, w2, fg, idx), [x], create_graph=True)
    (hv,) = fg.grad((g * v).sum(), [x])
    return g, hv


def test_repeated_hvp_runs_fused_and_equals_jax(compile_mode):
    expected_g = jax.grad(_jax_loss)(X0)
    expected_hv = jax.jvp(jax.grad(_jax_loss), (X0,), (V0,))[1]
    x, v, w1, w2, idx = _leaves()
    names = []
    for _ in range(6):
        g, hv = _hvp(x, v, w1, w2, idx)
        fusion.wait_for_compiles()
        names.append(g.grad_fn.name())
        np.testing.assert_allclose(g.numpy(), expected_g, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(hv.numpy(), expected_hv, rtol=1e-10, atol=1e-12)
    assert names[0] != "FusedBackward"  # first sighting: recorded op by op
    assert names[-1] == "FusedBackward", names


def test_third_order_through_a_fused_pass_equals_jax(compile_mode):
    hvp = jax.grad(lambda x: jnp.vdot(jax.jvp(jax.grad(_jax_loss), (x,), (V0,))[1], V0))
    x, v, w1, w2, idx = _leaves()
    for _ in range(4):
        (g,) = fg.grad(loss_of(x, w1, w2, fg, idx), [x], create_graph=True)
        (hv,) = fg.grad((g * v).sum(), [x], create_graph=True)
        (third,) = fg.grad((hv * v).sum(), [x])
        fusion.wait_for_compiles()
        np.testing.assert_allclose(third.numpy(), hvp(X0), rtol=1e-9, atol=1e-11)
    assert g.grad_fn.name() == "FusedBackward"


def test_backward_with_create_graph_gives_differentiable_leaf_gradients(compile_mode):
    x, v, w1, w2, idx = _leaves()
    expected = jax.jvp(jax.grad(_jax_loss), (X0,), (V0,))[1]
    for _ in range(4):
        grads = fg.backward(loss_of(x, w1, w2, fg, idx), create_graph=True)
        (hv,) = fg.grad((grads[x] * v).sum(), [x])
        fusion.wait_for_compiles()
        np.testing.assert_allclose(hv.numpy(), expected, rtol=1e-10, atol=1e-12)


def test_hooks_and_saved_tensor_hooks_keep_the_pass_node_by_node(compile_mode):
    x, v, w1, w2, idx = _leaves()
    calls = []
    for _ in range(4):
        h = fg.tanh(x @ w1)
        h.register_hook(calls.append)
        (g,) = fg.grad(fg.sin(h @ w2).sum(), [x], create_graph=True)
        fusion.wait_for_compiles()
        assert g.grad_fn.name() != "FusedBackward"
    assert len(calls) == 4
    packed = []
    for _ in range(4):
        with saved_tensors_hooks(lambda t: packed.append(1) or t, lambda t: t):
            out = fg.sin(fg.tanh(x @ w1) @ w2).sum()
        (g,) = fg.grad(out, [x], create_graph=True)
        fusion.wait_for_compiles()
        assert g.grad_fn.name() != "FusedBackward"


def test_disabled_fusion_records_the_rules_ops(compile_mode):
    x, v, w1, w2, idx = _leaves()
    fusion.set_enabled(False)
    try:
        for _ in range(3):
            g, _ = _hvp(x, v, w1, w2, idx)
        assert g.grad_fn.name() != "FusedBackward"
    finally:
        fusion.set_enabled(True)


def _first_order_only_sin_rule(ctx, g):
    (x,) = ctx.inputs
    return (g * fg.cos(x.detach()),)  # the right first derivative, cut from the graph: no second


FIRST_ORDER_SIN = fg.ops.registry.get("test_fused_first_order_sin") or fg.ops.declare(
    "test_fused_first_order_sin", jnp.sin, _first_order_only_sin_rule, save_inputs=True)


def test_a_detached_value_in_a_rule_has_no_second_derivative_when_fused(compile_mode):
    # Node by node, detach() cuts cos(x) from the graph; the fused pass's derivative is jax.vjp of the
    # traced rules, where detach() must stop the gradient too, or the second derivative is -sin(x).
    x = fg.tensor(X0, requires_grad=True)
    names = []
    for _ in range(5):
        (g,) = fg.grad((fg.ops.apply_op(FIRST_ORDER_SIN, (x,)) * x).sum(), [x], create_graph=True)
        fusion.wait_for_compiles()
        np.testing.assert_allclose(g.numpy(), np.cos(X0) * X0 + np.sin(X0), rtol=1e-12)
        names.append(g.grad_fn.name())
        (h,) = fg.grad(g.sum(), [x])
        # d/dx [cos(x).detach() * x + sin(x)]: the detached factor counts as a constant
        np.testing.assert_allclose(h.numpy(), np.cos(X0) + np.cos(X0), rtol=1e-12)
    assert names[0] != "FusedBackward" and names[-1] == "FusedBackward", names
