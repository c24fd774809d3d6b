"""The worked examples of the design seeds, as exact tests."""
import numpy as np
import pytest

import fgraph as fg


def _scalar(v):
    return fg.tensor(v, requires_grad=True)


def test_linear_then_square_gradients_and_graph():
    x, w, b = _scalar(2.0), _scalar(3.0), _scalar(1.0)
    y = x * w + b
    z = y**2
    gx, gw, gb = fg.grad(z, [x, w, b])
    assert (gx.item(), gw.item(), gb.item()) == (42.0, 28.0, 14.0)

    assert z.grad_fn.name() == "PowBackward0"
    ((add, add_nr),) = z.grad_fn.next_functions
    assert (add.name(), add_nr) == ("AddBackward0", 0)
    (mul, _), (b_acc, _) = add.next_functions
    assert mul.name() == "MulBackward0"
    assert b_acc.name() == "AccumulateGrad" and b_acc.variable is b
    (x_acc, _), (w_acc, _) = mul.next_functions
    assert x_acc.variable is x and w_acc.variable is w


def test_backward_returns_all_leaf_gradients():
    x, w, b = _scalar(2.0), _scalar(3.0), _scalar(1.0)
    z = (x * w + b) ** 2
    grads = z.backward()
    assert isinstance(grads, fg.Gradients)
    assert {id(t) for t in grads} == {id(x), id(w), id(b)}
    assert [grads[t].item() for t in (x, w, b)] == [42.0, 28.0, 14.0]


def test_exp_sum_backward_and_node_names():
    x = fg.tensor([0.5, 0.75], requires_grad=True)
    y = fg.exp(x).sum()
    assert y.grad_fn.name() == "SumBackward0"
    assert [fn.name() for fn, _ in y.grad_fn.next_functions] == ["ExpBackward0"]
    grads = fg.backward(y)
    np.testing.assert_allclose(grads[x].numpy(), np.exp([0.5, 0.75]), rtol=1e-6)


def test_backward_inputs_leaves_others_out():
    x = fg.tensor([0.5, 0.75], requires_grad=True)
    y = fg.tensor([0.1, 0.90], requires_grad=True)
    z = fg.exp(x * y).sum()
    grads = fg.backward([z], inputs=[x])
    assert x in grads and y not in grads and len(grads) == 1
    np.testing.assert_allclose(grads[x].numpy(), [0.1051, 1.7676], atol=1e-4)


def test_topological_nr_on_small_graph():
    # a = x * w (topo 1), b = a + x (topo 2), c = exp(b) * a (topo 3, max over children + 1)
    x, w = _scalar(1.0), _scalar(2.0)
    assert x._edge.node.topological_nr == 0
    a = x * w
    b = a + x
    e = fg.exp(b)
    c = e * a
    assert a.grad_fn.topological_nr == 1
    assert b.grad_fn.topological_nr == 2
    assert e.grad_fn.topological_nr == 3
    assert c.grad_fn.topological_nr == 4
    # A node over leaves only, created late, still has topo 1.
    late = x * 3.0
    assert late.grad_fn.topological_nr == 1


def test_sequence_nr_orders_creation_and_accumulate_grad_is_max():
    x = _scalar(1.0)
    a = x * 2.0
    b = a + 1.0
    assert b.grad_fn.sequence_nr > a.grad_fn.sequence_nr
    assert x._edge.node.sequence_nr == 2**64 - 1


def test_node_that_cannot_reach_inputs_never_runs():
    x, y = _scalar(2.0), _scalar(3.0)
    fired = []
    side = fg.exp(y)  # only reaches y
    side.grad_fn.register_hook(lambda gi, go: fired.append("exp"))
    main = x * 4.0
    main.grad_fn.register_hook(lambda gi, go: fired.append("mul"))
    z = main + side
    (gx,) = fg.grad(z, [x])
    assert gx.item() == 4.0
    assert fired == ["mul"]
    fired.clear()
    fg.backward(z)
    assert sorted(fired) == ["exp", "mul"]


def test_pruning_by_topological_nr_skips_old_subgraph():
    x = _scalar(1.0)
    old = x
    for _ in range(5):
        old = old * 1.5  # topo grows to 5
    inp = fg.tensor(2.0, requires_grad=True) * 1.0  # topo 1, created later
    visited = []
    old.grad_fn.register_prehook(lambda go: visited.append("old"))
    z = old + inp * inp
    (g,) = fg.grad(z, [inp])
    assert g.item() == 4.0
    assert visited == []  # the branch holding `old` cannot reach `inp`


def test_third_derivative_through_create_graph():
    x = _scalar(1.5)
    (g1,) = fg.grad(fg.sin(x) * x**3, [x], create_graph=True)
    (g2,) = fg.grad(g1, [x], create_graph=True)
    (g3,) = fg.grad(g2, [x])
    v = 1.5
    expected = (-np.cos(v) * v**3 - 9 * np.sin(v) * v**2 + 18 * np.cos(v) * v + 6 * np.sin(v))
    np.testing.assert_allclose(g3.item(), expected, rtol=1e-5)
