"""``x.data`` is PyTorch's (a detached Tensor); ``x.array`` is the raw ``jax.Array`` (docs/arrays.md)."""
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
import fgraph.nn.functional as F
import interop
from fgraph.errors import GradError
from fgraph.nn.parameter import rebind

RNG = np.random.default_rng(0)
LOGITS = RNG.normal(size=(4, 3))
VALUES = RNG.normal(size=(3,))


def _leaf_non_leaf_and_parameter():
    x = fg.tensor(LOGITS, requires_grad=True)
    return {"leaf": x, "non-leaf": x * 2.0 + 1.0, "parameter": fg.nn.Parameter(fg.tensor(LOGITS))}


# -- torch-free -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["leaf", "non-leaf", "parameter"])
def test_data_is_a_detached_leaf_holding_the_same_array(kind):
    t = _leaf_non_leaf_and_parameter()[kind]
    d = t.data
    assert type(d) is fg.Tensor  # a Parameter's .data is a plain Tensor, as in PyTorch
    assert d is not t and not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert d.array is t.array  # no copy: records are immutable
    np.testing.assert_array_equal(d.numpy(), t.detach().numpy())
    assert t.requires_grad  # reading .data changes nothing


def test_array_is_the_raw_jax_array_and_the_implicit_routes_agree():
    x = fg.tensor(VALUES, requires_grad=True)
    assert isinstance(x.array, jax.Array) and not isinstance(x.array, fg.Tensor)
    assert jnp.asarray(x) is x.array  # __jax_array__
    np.testing.assert_array_equal(np.asarray(x), np.asarray(x.array))
    np.testing.assert_array_equal(x.data.array, x.array)


def test_torch_idioms_through_data_read_the_values():
    output = fg.tensor(LOGITS, requires_grad=True) * 3.0
    values, indices = output.data.max(1)
    np.testing.assert_array_equal(indices.numpy(), np.argmax(3.0 * LOGITS, axis=1))
    np.testing.assert_array_equal(output.data.max(1)[1].numpy(), indices.numpy())
    np.testing.assert_allclose(values.numpy(), np.max(3.0 * LOGITS, axis=1))
    assert output.data.size() == output.shape and output.data.size(1) == output.shape[1]
    loss = output.sum()
    assert loss.data.item() == loss.item()
    np.testing.assert_array_equal(output.data.cpu().numpy(), output.numpy())
    assert output.data.tolist() == output.numpy().tolist()


def test_a_loss_built_through_data_gives_no_gradient():
    x = fg.tensor(VALUES, requires_grad=True)
    y = fg.tensor(VALUES, requires_grad=True)
    with pytest.raises(GradError, match="does not require grad"):
        fg.autograd.grad((x.data * 2.0).sum(), [x])
    both = (x.data * 2.0).sum() + (y * 3.0).sum()
    with pytest.raises(GradError, match="not used in the graph"):
        fg.autograd.grad(both, [x, y])
    gx, gy = fg.autograd.grad(both, [x, y], allow_unused=True)
    assert gx is None and gy.tolist() == fg.full_like(y, 3.0).tolist()
    (gx,) = fg.autograd.grad(both, [x], allow_unused=True, materialize_grads=True)
    assert gx.tolist() == fg.zeros_like(x).tolist()
    (gx,) = fg.grad((x * x.data).sum(), [x])  # d/dx sum(x * c) = c: the .data factor is a constant
    np.testing.assert_array_equal(gx.numpy(), x.numpy())


@pytest.mark.parametrize("mode", ["vjp", "trace"])
def test_data_stops_the_gradient_when_jax_differentiates(mode):
    def fn(t):
        return (t * t.data).sum()

    def reference(a):
        return jnp.sum(a * jax.lax.stop_gradient(a))

    a = jnp.asarray(VALUES)
    np.testing.assert_allclose(jax.grad(interop.to_jax(fn, mode=mode))(a), jax.grad(reference)(a), rtol=1e-12)


def test_data_under_jax_jit_is_a_detached_traced_tensor():
    seen = []

    def program(a):
        x = fg.tensor(a, requires_grad=True)
        d = (x * 2.0).data
        seen.append((type(d), d.requires_grad, d.grad_fn, isinstance(d.array, jax.core.Tracer)))
        (g,) = fg.grad((x * d).sum(), [x])
        return g.array, d.max(0)[1].array

    g, indices = jax.jit(program)(jnp.asarray(LOGITS))
    assert seen == [(fg.Tensor, False, None, True)]
    np.testing.assert_allclose(g, 2.0 * LOGITS, rtol=1e-12)
    np.testing.assert_array_equal(indices, np.argmax(LOGITS, axis=0))


def test_data_inside_fg_compile_matches_eager():
    def train_step(model, opt, x, y):
        output = model(x)
        loss = F.cross_entropy(output, y)
        opt.step(loss.backward())
        correct = (output.data.max(1)[1] == y).sum()
        return loss.data, correct

    x, y = fg.tensor(LOGITS), fg.tensor(np.argmax(LOGITS, axis=1))
    results = []
    for step in (train_step, fg.compile(train_step)):
        fg.manual_seed(0)
        model = fg.nn.Linear(3, 3).double()
        opt = fg.optim.SGD(model.parameters(), lr=0.1)
        results.append([step(model, opt, x, y) for _ in range(2)])
    for (loss_e, correct_e), (loss_c, correct_c) in zip(*results):
        assert not loss_c.requires_grad and loss_c.grad_fn is None
        np.testing.assert_allclose(loss_c.item(), loss_e.item(), rtol=1e-12)
        assert correct_c.item() == correct_e.item()


def test_in_place_update_through_data_names_rebind():
    p = fg.nn.Parameter(fg.ones(2))
    with pytest.raises(AttributeError, match=re.escape("fgraph.nn.parameter.rebind({p: p.detach() + u})")) as info:
        p.data.add_(1)
    assert "no attribute 'add_'" in str(info.value)
    layer = fg.nn.Linear(2, 1)
    old = layer.bias
    new = rebind({old: old.detach() + 1.0})[old]  # the fix the message names
    assert layer.bias is new and new.requires_grad
    np.testing.assert_array_equal(new.numpy(), old.numpy() + 1.0)
    with pytest.raises(AttributeError, match=re.escape("fg.nn.Parameter(new)")):
        p.data = fg.zeros(2)
    with pytest.raises(AttributeError, match=re.escape("x = fg.tensor(values)")):
        p.array = jnp.zeros(2)


@pytest.mark.parametrize("make", [fg.tensor, fg.nn.Parameter], ids=["tensor", "parameter"])
def test_the_pytree_key_path_names_the_array_slot(make):
    t = make(VALUES)
    ((path, leaf),) = jax.tree_util.tree_flatten_with_path(t)[0]
    assert jax.tree_util.keystr(path) == ".array" and leaf is t.array
    assert getattr(t, path[0].name) is leaf  # the key path leads to the leaf


# -- against PyTorch --------------------------------------------------------------------------------------------
def _pair(torch, kind):
    tx = torch.tensor(LOGITS, requires_grad=True)
    t = {"leaf": tx, "non-leaf": tx * 2.0 + 1.0, "parameter": torch.nn.Parameter(torch.tensor(LOGITS))}[kind]
    return t, _leaf_non_leaf_and_parameter()[kind]


@pytest.mark.parametrize("kind", ["leaf", "non-leaf", "parameter"])
def test_data_fields_match_torch(kind):
    torch = pytest.importorskip("torch")
    theirs, mine = _pair(torch, kind)
    assert (mine.data.requires_grad, mine.data.is_leaf, mine.data.grad_fn) == (
        theirs.data.requires_grad, theirs.data.is_leaf, theirs.data.grad_fn)
    assert isinstance(mine.data, fg.nn.Parameter) == isinstance(theirs.data, torch.nn.Parameter)
    assert mine.data.size() == tuple(theirs.data.size()) and mine.data.size(1) == theirs.data.size(1)
    assert mine.data.tolist() == theirs.data.tolist()
    np.testing.assert_array_equal(mine.data.cpu().numpy(), theirs.data.cpu().numpy())


def test_data_idioms_match_torch():
    torch = pytest.importorskip("torch")
    theirs = torch.tensor(LOGITS, requires_grad=True) * 3.0
    mine = fg.tensor(LOGITS, requires_grad=True) * 3.0
    t_values, t_indices = theirs.data.max(1)
    m_values, m_indices = mine.data.max(1)
    np.testing.assert_array_equal(m_values.numpy(), t_values.numpy())
    assert m_indices.tolist() == t_indices.tolist() == mine.data.max(1)[1].tolist()
    assert mine.sum().data.item() == pytest.approx(theirs.sum().data.item(), rel=1e-12)


def test_unreached_input_matches_torch():
    torch = pytest.importorskip("torch")
    tx, ty = torch.tensor(VALUES, requires_grad=True), torch.tensor(VALUES, requires_grad=True)
    x, y = fg.tensor(VALUES, requires_grad=True), fg.tensor(VALUES, requires_grad=True)
    with pytest.raises(RuntimeError):
        torch.autograd.grad((tx.data * 2.0).sum(), [tx])
    with pytest.raises(RuntimeError):
        fg.autograd.grad((x.data * 2.0).sum(), [x])
    t_both, m_both = (tx.data * 2.0).sum() + (ty * 3.0).sum(), (x.data * 2.0).sum() + (y * 3.0).sum()
    with pytest.raises(RuntimeError):
        torch.autograd.grad(t_both, [tx, ty], retain_graph=True)
    with pytest.raises(RuntimeError):
        fg.autograd.grad(m_both, [x, y])
    theirs = torch.autograd.grad(t_both, [tx, ty], allow_unused=True, retain_graph=True)
    mine = fg.autograd.grad(m_both, [x, y], allow_unused=True)
    assert mine[0] is None and theirs[0] is None and mine[1].tolist() == theirs[1].tolist()
    theirs = torch.autograd.grad(t_both, [tx], allow_unused=True, materialize_grads=True, retain_graph=True)
    mine = fg.autograd.grad(m_both, [x], allow_unused=True, materialize_grads=True)
    assert mine[0].tolist() == theirs[0].tolist()
    (t_grad,) = torch.autograd.grad((tx * tx.data).sum(), [tx])
    (m_grad,) = fg.autograd.grad((x * x.data).sum(), [x])
    np.testing.assert_allclose(m_grad.numpy(), t_grad.numpy(), rtol=1e-12)
