"""fgraph.nn.functional behaviour the op tables cannot check: randomness, integer outputs,
PyTorch's special gradients, node names, and tracing under jax.jit."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
import fgraph.nn.functional as F


# -- dropout ------------------------------------------------------------------------------------------------------
def test_dropout_is_deterministic_given_the_key():
    x = fg.ones(200)
    a = F.dropout(x, 0.3, key=jax.random.PRNGKey(1))
    b = F.dropout(x, 0.3, key=jax.random.PRNGKey(1))
    c = F.dropout(x, 0.3, key=jax.random.PRNGKey(2))
    assert a.tolist() == b.tolist()
    assert a.tolist() != c.tolist()
    values = np.asarray(a.array)
    np.testing.assert_allclose(np.unique(values), [0.0, 1 / 0.7], rtol=1e-6)
    assert 0.15 < np.mean(values == 0) < 0.45


def test_dropout_default_generator_follows_manual_seed():
    x = fg.ones(50)
    fg.manual_seed(3)
    a = F.dropout(x, 0.5)
    b = F.dropout(x, 0.5)
    fg.manual_seed(3)
    assert F.dropout(x, 0.5).tolist() == a.tolist()
    assert a.tolist() != b.tolist()  # each call draws a fresh key


def test_dropout_edge_cases_and_gradient():
    x = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    zero = F.dropout(x, 1.0)
    assert zero.tolist() == [0.0, 0.0, 0.0] and zero.requires_grad
    assert fg.grad(zero.sum(), [x])[0].tolist() == [0.0, 0.0, 0.0]
    y = F.dropout(x, 0.5, key=jax.random.PRNGKey(0))
    (g,) = fg.grad(y.sum(), [x])
    np.testing.assert_allclose(g.numpy(), np.where(y.numpy() != 0, 2.0, 0.0))


def test_dropout_traces_with_a_traced_key():
    def f(x, key):
        return F.dropout(fg.Tensor(x), 0.5, key=key).array

    x = jnp.ones(8)
    out = jax.jit(f)(x, jax.random.PRNGKey(5))
    np.testing.assert_array_equal(out, F.dropout(fg.Tensor(x), 0.5, key=jax.random.PRNGKey(5)).array)


# -- one_hot ---------------------------------------------------------------------------------------------------------
def test_one_hot_values_dtype_and_no_grad():
    out = F.one_hot(fg.tensor([[2, 0], [1, 2]]))
    assert out.shape == (2, 2, 3)
    assert np.issubdtype(out.dtype, np.integer)
    assert not out.requires_grad
    assert out.tolist() == [[[0, 0, 1], [1, 0, 0]], [[0, 1, 0], [0, 0, 1]]]
    assert F.one_hot(fg.tensor([0]), 4).tolist() == [[1, 0, 0, 0]]
    assert F.one_hot(fg.tensor(np.zeros(0, np.int32)), 3).shape == (0, 3)


def test_one_hot_under_jit_with_num_classes():
    out = jax.jit(lambda a: F.one_hot(fg.Tensor(a), 3).array)(jnp.array([2, 1]))
    assert out.tolist() == [[0, 0, 1], [0, 1, 0]]


# -- gradients with PyTorch's special rules ----------------------------------------------------------------------------
def test_embedding_padding_idx_gets_no_gradient():
    w = fg.tensor(np.arange(8.0).reshape(4, 2), requires_grad=True)
    idx = fg.tensor([[1, 0, 1], [3, 0, 2]])
    out = F.embedding(idx, w, padding_idx=0)
    np.testing.assert_array_equal(out.numpy()[0, 1], [0.0, 1.0])  # the forward still reads row 0
    (g,) = fg.grad(out.sum(), [w])
    assert g.tolist() == [[0.0, 0.0], [2.0, 2.0], [1.0, 1.0], [1.0, 1.0]]
    (g,) = fg.grad(F.embedding(idx, w, scale_grad_by_freq=True).sum(), [w])
    assert g.tolist() == [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]
    assert out.grad_fn.name() == "EmbeddingBackward0"


def test_cross_entropy_with_every_target_ignored():
    x = fg.tensor(np.random.default_rng(0).normal(size=(3, 4)), requires_grad=True)
    loss = F.cross_entropy(x, fg.tensor([-100, -100, -100]))
    assert np.isnan(loss.item())
    (g,) = fg.grad(loss, [x])
    assert not np.any(g.numpy())


def test_binary_cross_entropy_clamps_the_log():
    x = fg.tensor([0.0, 1.0], requires_grad=True)
    loss = F.binary_cross_entropy(x, fg.tensor([1.0, 0.0]), reduction="none")
    assert loss.tolist() == [100.0, 100.0]
    (g,) = fg.grad(loss.sum(), [x])
    assert np.all(np.isfinite(g.numpy()))


def test_softmax_is_stable_and_double_differentiable():
    x = fg.tensor([1000.0, 0.0, -1000.0], requires_grad=True)
    assert F.softmax(x, 0).tolist() == [1.0, 0.0, 0.0]
    assert F.log_softmax(x, 0).tolist()[1] == -1000.0
    y = F.softmax(fg.tensor([0.5, -0.25], dtype=fg.float64, requires_grad=True), 0)
    assert y.grad_fn.name() == "SoftmaxBackward0"


@pytest.mark.parametrize("fn, name", [
    (lambda x: F.gelu(x), "GeluBackward0"),
    (lambda x: F.selu(x), "EluBackward0"),
    (lambda x: F.relu6(x), "HardtanhBackward0"),
    (lambda x: F.log_softmax(x, -1), "LogSoftmaxBackward0"),
    (lambda x: F.logsigmoid(x), "LogSigmoidBackward0"),
])
def test_node_names_follow_pytorch(fn, name):
    assert fn(fg.tensor([0.5, -0.5], requires_grad=True)).grad_fn.name() == name


# -- tracing and dtypes ----------------------------------------------------------------------------------------------
def test_losses_trace_under_jit():
    def losses(x, t, p):
        x, t, p = fg.tensor(x), fg.tensor(t), fg.tensor(p)  # (fg.Tensor(ndarray) is float, as torch.Tensor)
        return (F.cross_entropy(x, t, label_smoothing=0.1) + F.nll_loss(F.log_softmax(x, 1), t)
                + F.binary_cross_entropy(fg.sigmoid(x), p)
                + F.embedding(t, x).sum() + F.dropout(x, 0.5, key=jax.random.PRNGKey(0)).sum()).array

    x = np.random.default_rng(1).normal(size=(3, 3))
    t = np.array([0, 2, 1])
    p = np.full((3, 3), 0.25)
    np.testing.assert_allclose(jax.jit(losses)(x, t, p), losses(x, t, p), rtol=1e-6)


def test_float32_stays_float32():
    x = fg.tensor(np.ones((2, 3), np.float32), requires_grad=True)
    assert F.gelu(x).dtype == np.float32
    assert F.cross_entropy(x, fg.tensor([0, 1])).dtype == np.float32
    assert F.normalize(x).dtype == np.float32
    assert F.dropout(x, 0.5, key=jax.random.PRNGKey(0)).dtype == np.float32


def test_cosine_similarity_broadcasts():
    a = np.random.default_rng(2).normal(size=(2, 1, 3))
    b = np.random.default_rng(3).normal(size=(4, 3))
    out = F.cosine_similarity(fg.tensor(a), fg.tensor(b), dim=-1)
    a2, b2 = np.broadcast_arrays(a, b)
    expected = (a2 * b2).sum(-1) / (np.linalg.norm(a2, axis=-1) * np.linalg.norm(b2, axis=-1))
    assert out.shape == (2, 4)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5)


@pytest.mark.parametrize("name", ["nll_loss", "cross_entropy", "max_pool1d", "adaptive_max_pool1d"])
def test_cached_constants_first_made_under_jit_are_reusable_eagerly(name):
    # Layers cache per-shape constants (class ids, pool window tables); one made inside a jax.jit trace must be
    # concrete, or the next eager call meets a leaked tracer.
    shape = (2, 7, 9) if "pool" in name else (2, 7, 5)  # a shape no other test uses, so the cache starts empty
    call = {
        "nll_loss": lambda x: F.nll_loss(x, fg.tensor(np.array([[0, 6, 1, 2, 3], [4, 5, 0, 1, 2]]))),
        "cross_entropy": lambda x: F.cross_entropy(x, fg.tensor(np.array([[0, 6, 1, 2, 3], [4, 5, 0, 1, 2]]))),
        "max_pool1d": lambda x: F.max_pool1d(x, 3, 2),
        "adaptive_max_pool1d": lambda x: F.adaptive_max_pool1d(x, 4),
    }[name]
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    jitted = jax.jit(lambda arr: call(fg.tensor(arr)).array)(a)
    eager = call(fg.tensor(a)).array
    np.testing.assert_allclose(np.asarray(eager), np.asarray(jitted), rtol=1e-6)
