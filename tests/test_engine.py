"""Engine behaviour: inputs, seeds, multiple roots, hooks, tracing, deep graphs, errors."""
import gc
import threading
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg


def leaf(values, dtype="float64"):
    return fg.tensor(values, dtype=dtype, requires_grad=True)


def test_grad_wrt_intermediate_tensor():
    x = leaf([1.0, 2.0])
    h = x * x
    out = (h * 3.0).sum()
    (gh,) = fg.grad(out, [h])
    np.testing.assert_array_equal(gh.numpy(), [3.0, 3.0])
    grads = fg.backward(out, inputs=[h, x])
    np.testing.assert_array_equal(grads[h].numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(grads[x].numpy(), [6.0, 12.0])


def test_shared_subexpression_sums_in_input_buffer():
    x = leaf(3.0)
    a = x * x
    out = a + a * a  # a used twice: 2x + 4x^3
    (g,) = fg.grad(out, [x])
    assert g.item() == pytest.approx(2 * 3 + 4 * 27)


def test_multiple_roots_and_grad_outputs():
    x = leaf([1.0, 2.0])
    y1 = x * 2.0
    y2 = (x * x).sum()
    (g,) = fg.grad([y1, y2], [x], grad_outputs=[fg.tensor([1.0, 10.0], dtype="float64"), None])
    np.testing.assert_array_equal(g.numpy(), [2.0 + 2.0, 20.0 + 4.0])


def test_allow_unused_and_materialize_grads():
    x, y = leaf(1.0), leaf(2.0)
    out = x * 5.0
    with pytest.raises(fg.GradError, match="allow_unused"):
        fg.grad(out, [x, y])
    gx, gy = fg.grad(out, [x, y], allow_unused=True)
    assert gx.item() == 5.0 and gy is None
    gx, gy = fg.grad(out, [x, y], materialize_grads=True)
    assert gy.item() == 0.0 and gy.dtype == y.dtype


def test_gradients_mapping_is_read_only_and_adds():
    x = leaf(2.0)
    g1 = fg.backward(x * x)
    g2 = fg.backward(x * 3.0)
    total = g1 + g2
    assert total[x].item() == 7.0
    with pytest.raises(AttributeError):
        total.foo = 1
    with pytest.raises(TypeError):
        total[x] = x  # no item assignment


def test_graph_can_be_differentiated_twice():
    x = leaf(2.0)
    y = x**3
    assert fg.grad(y, [x])[0].item() == fg.grad(y, [x], retain_graph=False)[0].item() == 12.0


def test_hook_order_matches_pytorch():
    events = []
    x = leaf(1.0)
    y = x * 2.0
    z = y * 3.0
    y.register_hook(lambda g: events.append(("tensor", g.item())))
    y.grad_fn.register_prehook(lambda go: events.append(("pre", go[0].item())))
    y.grad_fn.register_hook(lambda gi, go: events.append(("post", gi[0].item(), go[0].item())))
    fg.backward(z)
    assert events == [("tensor", 3.0), ("pre", 3.0), ("post", 6.0, 3.0)]


def test_hooks_replace_gradients_and_handles_remove():
    x = leaf(1.0)
    y = x * 2.0
    h = y.register_hook(lambda g: g * 10.0)
    assert fg.grad(y * 1.0, [x])[0].item() == 20.0
    h.remove()
    assert fg.grad(y * 1.0, [x])[0].item() == 2.0
    hx = x.register_hook(lambda g: g + 1.0)
    assert fg.grad(y * 1.0, [x])[0].item() == 3.0  # tensor hooks on captured leaves fire
    hx.remove()
    post = y.grad_fn.register_hook(lambda gi, go: (gi[0] * 0.0, None))
    assert fg.grad(y * 1.0, [x])[0].item() == 0.0
    post.remove()


def test_hooks_survive_on_the_graph_not_the_record():
    x = leaf(1.0)
    seen = []
    x.register_hook(lambda g: seen.append(g.item()))
    fg.backward(x * 4.0)
    fg.backward(x * 5.0)
    assert seen == [4.0, 5.0]


def test_grad_inside_jax_jit_matches_jax_grad():
    def f_fg(a):
        x = fg.tensor(a, requires_grad=True)
        y = (fg.sin(x) * x + fg.exp(x * 0.5)).sum()
        (g,) = fg.grad(y, [x])
        return g.array

    def f_jax(a):
        return jnp.sum(jnp.sin(a) * a + jnp.exp(a * 0.5))

    a = jnp.linspace(-1.0, 1.0, 5)
    np.testing.assert_allclose(jax.jit(f_fg)(a), jax.grad(f_jax)(a), rtol=1e-6)
    np.testing.assert_allclose(jax.vmap(f_fg)(a[:, None] * jnp.ones(3)), jax.vmap(jax.grad(f_jax))(a[:, None] * jnp.ones(3)), rtol=1e-6)


def test_second_order_inside_jax_jit():
    def hvp_fg(a):
        x = fg.tensor(a, requires_grad=True)
        (g,) = fg.grad((x * x * x).sum(), [x], create_graph=True)
        (h,) = fg.grad(g.sum(), [x])
        return h.array

    a = jnp.arange(3.0)
    np.testing.assert_allclose(jax.jit(hvp_fg)(a), 6 * a)


def test_hundred_thousand_node_chain_and_no_leaks():
    x = fg.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    probe = weakref.ref(y.grad_fn.next_functions[0][0].next_functions[0][0])
    (g,) = fg.grad(y.sum(), [x])
    assert g.item() == 1.0
    assert fg.backward(y.sum())[x].item() == 1.0
    del y, g
    gc.disable()
    try:
        assert probe() is None, "an intermediate node outlived its graph (reference cycle?)"
    finally:
        gc.enable()


def test_grad_mode_is_thread_local():
    results = {}
    barrier = threading.Barrier(2)

    def worker(name, enabled):
        with fg.set_grad_enabled(enabled):
            barrier.wait()
            x = fg.tensor(1.0, requires_grad=True)
            results[name] = (x * 2.0).requires_grad

    threads = [threading.Thread(target=worker, args=("on", True)), threading.Thread(target=worker, args=("off", False))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {"on": True, "off": False}
    assert fg.is_grad_enabled()


def test_grad_modes_as_context_and_decorator():
    x = leaf(1.0)
    with fg.no_grad():
        assert not (x * 2.0).requires_grad
        with fg.enable_grad():
            assert (x * 2.0).requires_grad
    with fg.inference_mode():
        assert fg.is_inference_mode_enabled() and not (x * 2.0).requires_grad

    @fg.no_grad()
    def f(t):
        return t * 2.0

    assert not f(x).requires_grad and fg.is_grad_enabled()
    fg.set_grad_enabled(False)
    assert not fg.is_grad_enabled()
    fg.set_grad_enabled(True)
    assert fg.is_grad_enabled()


def test_tensor_is_immutable_and_repr():
    x = leaf([1.0, 2.0], dtype="float32")
    with pytest.raises(AttributeError, match="immutable"):
        x.data = None
    with pytest.raises(AttributeError):
        x.requires_grad = False
    y = x * 2.0
    assert repr(y) == "tensor([2., 4.], grad_fn=<MulBackward0>)"
    assert repr(x) == "tensor([1., 2.], requires_grad=True)"
    assert y.detach().requires_grad is False and y.detach().is_leaf
    assert fg.tensor([3.5]).item() == 3.5
    assert np.asarray(y).tolist() == [2.0, 4.0]
    assert y.ndim == 1 and y.shape == (2,) and y.dtype == np.float32 and y.device is not None


# -- errors ----------------------------------------------------------------------------------------
def test_error_backward_on_non_scalar():
    x = leaf([1.0, 2.0])
    with pytest.raises(fg.GradError, match="only for scalar outputs.*shape \\(2,\\)"):
        fg.backward(x * 2.0)


def test_error_grad_outputs_shape_and_count():
    x = leaf([1.0, 2.0])
    y = x * 2.0
    with pytest.raises(fg.GradError, match="mismatch in shape"):
        fg.grad(y, [x], grad_outputs=[fg.ones(3, dtype="float64")])
    with pytest.raises(fg.GradError, match="2 gradients for 1 outputs"):
        fg.grad(y, [x], grad_outputs=[fg.ones(2), fg.ones(2)])


def test_error_input_does_not_require_grad():
    x = leaf(1.0)
    c = fg.tensor(2.0)
    with pytest.raises(fg.GradError, match="does not require grad"):
        fg.grad(x * c, [c])
    with pytest.raises(fg.GradError, match="does not require grad"):
        fg.grad(c * 2.0, [x])


def test_error_integer_tensor_cannot_require_grad():
    with pytest.raises(TypeError, match="floating point"):
        fg.tensor([1, 2], requires_grad=True)


def test_error_shape_mismatch_names_op_and_shapes():
    with pytest.raises(fg.OpError, match=r"add: .*\(3,\).*\(4,\).*broadcast"):
        fg.ones(3) + fg.ones(4)
    with pytest.raises(fg.OpError, match=r"matmul: .*\(2, 3\).*\(4, 5\).*last dim"):
        fg.ones(2, 3) @ fg.ones(4, 5)
    with pytest.raises(fg.OpError, match="reshape"):
        fg.ones(2, 3).reshape(4, 2)


def test_error_float64_without_x64(monkeypatch):
    from fgraph import _dtypes

    monkeypatch.setattr(_dtypes, "x64_enabled", lambda: False)
    with pytest.raises(TypeError, match="jax_enable_x64"):
        fg.tensor([1.0], dtype="float64")


def test_fused_backward_matches_node_by_node():
    from fgraph.autograd import fusion

    def run():
        x = leaf([0.3, -0.7, 1.1])
        w = leaf([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]])
        h = fg.tanh(w @ x) * fg.sigmoid(x.sum())
        out = (h * h + fg.exp(h)).mean()
        return fg.grad(out, [x, w]), fg.backward(out)[w]

    fusion.set_enabled(False)
    try:
        (gx_ref, gw_ref), gw_b_ref = run()
    finally:
        fusion.set_enabled(True)
    before = fusion.stats()["fused_runs"]
    for _ in range(3):
        (gx, gw), gw_b = run()
        fusion.wait_for_compiles()  # compiles run in the background
    assert fusion.stats()["fused_runs"] > before, "a repeated structure should run fused"
    np.testing.assert_allclose(gx.numpy(), gx_ref.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gw.numpy(), gw_ref.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gw_b.numpy(), gw_b_ref.numpy(), rtol=1e-12)


def test_graphs_over_max_nodes_run_in_segments(monkeypatch):
    """XLA's compile time explodes with graph size, so large graphs are compiled in segments."""
    from fgraph.autograd import fusion

    monkeypatch.setattr(fusion, "MAX_NODES", 16)  # small segments keep the compiles cheap
    x = leaf([0.1, 0.2])
    before = fusion.stats()
    for _ in range(3):
        h = x
        for _ in range(fusion.MAX_NODES + 10):
            h = fg.sin(h)
        (g,) = fg.grad(h.sum(), [x])
        fusion.wait_for_compiles()
    assert fusion.stats()["fused_runs"] > before["fused_runs"]
    expected = np.array([0.1, 0.2])
    derivative = np.ones(2)
    for _ in range(fusion.MAX_NODES + 10):
        derivative = derivative * np.cos(expected)
        expected = np.sin(expected)
    np.testing.assert_allclose(g.numpy(), derivative, rtol=1e-10)


def test_hooks_disable_fusion_and_still_fire():
    seen = []
    for _ in range(3):
        x = leaf(2.0)
        y = x * x
        y.register_hook(lambda g: seen.append(g.item()))
        fg.grad(y * 3.0, [x])
    assert seen == [3.0, 3.0, 3.0]
