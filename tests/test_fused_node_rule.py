"""A node's create_graph rule as one kernel and one node: new structures built of seen kinds, checked against JAX."""
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
from fgraph.autograd import fused_node_rule, fusion
from fgraph.autograd.graph import saved_tensors_hooks
from test_fused_create_graph import compile_mode  # noqa: F401 - the fixture: each test in both compile modes

WIDTH = 5
RNG = np.random.default_rng(11)
X0 = RNG.standard_normal(WIDTH)
V0 = RNG.standard_normal(WIDTH)
WEIGHTS = [RNG.standard_normal((WIDTH, WIDTH)) / 2 for _ in range(4)]


@pytest.fixture(autouse=True)
def new_structures_only():
    """No whole pass compiles (a structure would have to pay a huge rent): what a new structure meets."""
    fusion.set_compile_rent(1e9)
    yield
    fusion.set_compile_rent(0)  # the suite's rule (tests/conftest.py)


def network(h, kinds, lib):
    """``act(h @ W)`` per layer, ``act`` tanh (0) or sin (1), then a sum of squares times the input."""
    for w, k in zip(WEIGHTS, kinds):
        h = (lib.tanh if k == 0 else lib.sin)(h @ lib.asarray(w) if lib is jnp else h @ fg.tensor(w))
    return (h * h).sum()


def fg_hvp(kinds, x, v):
    (g,) = fg.grad(network(x, kinds, fg), [x], create_graph=True)
    (hv,) = fg.grad((g * v).sum(), [x])
    return g, hv


def jax_hvp(kinds):
    loss = lambda a: network(a, kinds, jnp)  # noqa: E731
    return jax.grad(loss)(X0), jax.jvp(jax.grad(loss), (X0,), (V0,))[1]


def _warm(kinds):
    x = fg.tensor(X0, requires_grad=True)
    for _ in range(fused_node_rule.COMPILE_AFTER):
        fg_hvp(kinds, x, fg.tensor(V0))
    fusion.wait_for_compiles()


def test_new_structures_of_seen_kinds_record_one_node_per_rule_and_equal_jax(compile_mode):
    _warm([0, 1, 0, 1])  # every layer kind, first and later layers
    x, v = fg.tensor(X0, requires_grad=True), fg.tensor(V0)
    hits = fusion.stats()["hits"]  # the counters are the process's
    for kinds in ([1, 0], [0, 0, 1], [1, 1, 0, 0], [0, 1, 1]):  # each structure once: no whole pass compiles
        applied = fused_node_rule.STATS["applied"]
        g, hv = fg_hvp(kinds, x, v)
        assert fused_node_rule.STATS["applied"] - applied >= len(kinds) + 2  # every layer's rules, the sum's, mul's
        expected_g, expected_hv = jax_hvp(kinds)
        np.testing.assert_allclose(g.numpy(), expected_g, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(hv.numpy(), expected_hv, rtol=1e-10, atol=1e-12)
    assert fusion.stats()["hits"] == hits  # no pass ran as a whole fused program


def test_fused_rules_are_named_like_pytorchs_backward_of_backward(compile_mode):
    x = fg.tensor(X0, requires_grad=True)
    names = []
    for _ in range(3):
        (g,) = fg.grad(fg.tanh(x).sum(), [x], create_graph=True)
        fusion.wait_for_compiles()
        names.append(g.grad_fn.name())
    assert names[0] != "TanhBackwardBackward0"  # the first sighting records the rule's ops
    assert names[-1] == "TanhBackwardBackward0"


def test_third_order_through_fused_rules_equals_jax(compile_mode):
    kinds = [1, 0]
    _warm(kinds)
    x = fg.tensor(X0, requires_grad=True)
    for _ in range(2):  # the second round runs the vjps' vjps as compiled programs too
        (g,) = fg.grad(network(x, kinds, fg), [x], create_graph=True)
        (h,) = fg.grad((g * fg.tensor(V0)).sum(), [x], create_graph=True)
        (t,) = fg.grad((h * h).sum(), [x])
        fusion.wait_for_compiles()
    hvp = lambda a: jax.jvp(jax.grad(lambda b: network(b, kinds, jnp)), (a,), (V0,))[1]  # noqa: E731
    expected = jax.grad(lambda a: (hvp(a) ** 2).sum())(X0)
    np.testing.assert_allclose(t.numpy(), expected, rtol=1e-9, atol=1e-12)


def test_a_gradient_that_does_not_read_an_input_does_not_depend_on_it(compile_mode):
    """``mul``'s rule for ``a`` in ``a * c`` reads ``c`` alone: recorded op by op the gradient of ``(a * c).sum()``
    does not depend on ``a``, and fused it must not either (``allow_unused`` and ``strict`` checks rely on it)."""
    a = fg.tensor(X0, requires_grad=True)
    c = fg.tensor(V0, requires_grad=True)
    results = []
    for _ in range(4):
        (g,) = fg.grad((a * c).sum(), [a], create_graph=True)
        fusion.wait_for_compiles()
        with pytest.raises(fg.errors.GradError, match="was not used in the graph"):
            fg.grad(g.sum(), [a])
        results.append(fg.grad(g.sum(), [a, c], allow_unused=True))
    assert fused_node_rule.STATS["applied"] > 0
    for ga, gc in results:
        assert ga is None
        np.testing.assert_allclose(gc.numpy(), np.ones(WIDTH))


def test_disabled_fusion_and_saved_tensor_hooks_record_the_rules_ops(compile_mode):
    x = fg.tensor(X0, requires_grad=True)
    for _ in range(3):
        fg.grad(fg.tanh(x).sum(), [x], create_graph=True)
        fusion.wait_for_compiles()
    fusion.set_enabled(False)
    try:
        (g,) = fg.grad(fg.tanh(x).sum(), [x], create_graph=True)
    finally:
        fusion.set_enabled(True)
    assert g.grad_fn.name() != "TanhBackwardBackward0"
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        y = fg.tanh(x).sum()
    (g,) = fg.grad(y, [x], create_graph=True)
    assert g.grad_fn.name() != "TanhBackwardBackward0"
    (g,) = fg.grad(fg.tanh(x).sum(), [x], create_graph=True)
    assert g.grad_fn.name() == "TanhBackwardBackward0"  # the same kind without hooks


def test_a_rule_jax_cannot_differentiate_keeps_recording_its_ops(monkeypatch):
    x = fg.tensor(X0, requires_grad=True)
    failures, applied = fused_node_rule.STATS["failures"], fused_node_rule.STATS["applied"]
    monkeypatch.setattr(fused_node_rule.FlatProgram, "vjp", _no_vjp)
    fusion.set_background(False)
    try:
        for _ in range(3):
            (g,) = fg.grad(fg.sin(x).sum(), [x], create_graph=True)
    finally:
        fusion.set_background(True)
        fusion.clear_cache()
    assert fused_node_rule.STATS["failures"] == failures + 2  # sum's kind and sin's: asked for once each
    assert fused_node_rule.STATS["applied"] == applied
    assert g.grad_fn.name() != "SinBackwardBackward0"
    (h,) = fg.grad(g.sum(), [x])
    np.testing.assert_allclose(h.numpy(), -np.sin(X0), rtol=1e-12)


def _no_vjp(*args):
    raise NotImplementedError("no vjp in this test")


def _table_entries() -> list:
    from test_random_table_programs import ENTRIES

    return [name for name, _ in ENTRIES][::STRIDE]


# The whole table (412 entries) passes this check in ~4 minutes (FGRAPH_NODE_RULE_STRIDE=1); CI takes every twelfth.
STRIDE = int(os.environ.get("FGRAPH_NODE_RULE_STRIDE", "12"))


@pytest.mark.parametrize("name", _table_entries())
def test_table_ops_second_derivatives_through_fused_rules_equal_jax(name, monkeypatch):
    """Each op's rule kernel differentiated by JAX (its kind compiled at first sighting, in the foreground) gives the
    op table's Hessian-vector products: the check of tests/test_random_table_programs.py, one op per program."""
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from test_random_table_programs import check_program, draw_step

    monkeypatch.setattr(fused_node_rule, "COMPILE_AFTER", 1)
    fusion.set_background(False)

    @settings(max_examples=1, derandomize=True, deadline=None)
    @given(data=st.data())
    def check(data):
        step = draw_step(data, name, [])
        if step is not None:
            check_program(data, [step], forward=False)

    try:
        check()
    finally:
        fusion.set_background(True)
