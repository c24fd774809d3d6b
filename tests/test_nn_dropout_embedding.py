"""Dropout and embeddings beyond the value checks: mask statistics, keys, gradients, tracing, max_norm, errors.

Dropout masks cannot equal PyTorch's, so dropout is checked statistically (fraction zeroed,
scaling, same key same mask, gradient is the mask); the layer cases against PyTorch and the
pure-JAX references are in test_nn_norm_dropout_embedding.py.
"""
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
import fgraph.nn.functional as F
from fgraph import nn


def _x(*shape, scale=1.0, shift=0.0):
    return lambda rng: (scale * rng.standard_normal(shape) + shift,)


# -- dropout: statistics, keys, gradient ------------------------------------------------------------
def test_dropout_fraction_scaling_keys_and_eval():
    module = nn.Dropout(0.3)
    x = fg.ones(20000, dtype=fg.float64)
    y = module(x, key=jax.random.PRNGKey(1)).numpy()
    assert abs((y == 0).mean() - 0.3) < 0.02
    np.testing.assert_allclose(y[y != 0], 1 / 0.7, rtol=1e-15)
    assert np.array_equal(module(x, key=jax.random.PRNGKey(1)).numpy(), y)
    assert not np.array_equal(module(x, key=jax.random.PRNGKey(2)).numpy(), y)
    fg.manual_seed(3)
    a = module(x).numpy()
    fg.manual_seed(3)
    assert np.array_equal(module(x).numpy(), a) and not np.array_equal(module(x).numpy(), a)
    assert module.eval()(x) is x
    assert nn.Dropout(1.0)(x).numpy().max() == 0.0


def test_dropout_gradient_is_the_mask():
    rng = np.random.default_rng(8)
    x = fg.tensor(rng.standard_normal(64) + 3.0, requires_grad=True)
    c = rng.standard_normal(64)
    y = nn.Dropout(0.5)(x, key=jax.random.PRNGKey(4))
    mask = y.numpy() / x.numpy()
    assert set(np.round(mask, 12)) == {0.0, 2.0}
    (g,) = fg.grad((y * fg.tensor(c)).sum(), [x])
    np.testing.assert_allclose(g.numpy(), c * mask, rtol=1e-12)


def _channels_constant(y, batched_dims=2):
    flat = y.reshape(y.shape[:batched_dims] + (-1,))
    return np.all(flat == flat[..., :1])


def test_dropout2d_drops_whole_channels():
    module = nn.Dropout2d(0.25)
    y = module(fg.ones(8, 500, 2, 2, dtype=fg.float64), key=jax.random.PRNGKey(5)).numpy()
    assert _channels_constant(y) and set(np.unique(y)) == {0.0, 1 / 0.75}
    assert abs((y[:, :, 0, 0] == 0).mean() - 0.25) < 0.04
    x = fg.tensor(np.random.default_rng(9).standard_normal((2, 6, 2, 2)), requires_grad=True)
    out = module(x, key=jax.random.PRNGKey(6))
    (g,) = fg.grad(out.sum(), [x])
    kept = (out.numpy() != 0)
    np.testing.assert_allclose(g.numpy(), kept / 0.75, rtol=1e-12)
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        y3 = module(fg.ones(4, 50, 3, dtype=fg.float64), key=jax.random.PRNGKey(7)).numpy()
    assert _channels_constant(y3) and (y3 == 0).any()  # (N, C, L): channel-wise 1D dropout, as PyTorch


def test_dropout1d_and_3d_unbatched_inputs():
    y = nn.Dropout1d(0.5)(fg.ones(40, 3, dtype=fg.float64), key=jax.random.PRNGKey(0)).numpy()
    assert y.shape == (40, 3) and _channels_constant(y, 1) and (y == 0).any() and (y != 0).any()
    y = nn.Dropout3d(0.5)(fg.ones(40, 2, 2, 2, dtype=fg.float64), key=jax.random.PRNGKey(1)).numpy()
    assert y.shape == (40, 2, 2, 2) and _channels_constant(y, 1) and (y == 0).any() and (y != 0).any()


def test_dropout_under_jit_needs_a_key():
    x = jnp.ones(16)

    def with_key(a, key):
        return nn.Dropout(0.5)(fg.Tensor(a), key=key).array

    key = jax.random.PRNGKey(2)
    np.testing.assert_array_equal(jax.jit(with_key)(x, key), with_key(x, key))

    def without_key(a):
        return nn.Dropout1d(0.5)(fg.Tensor(a).reshape(2, 8)).array

    with pytest.raises(fg.OpError, match="without key="):
        jax.jit(without_key)(x)


# -- embeddings -------------------------------------------------------------------------------------
def test_embedding_init_padding_and_from_pretrained():
    fg.manual_seed(0)
    emb = nn.Embedding(400, 50, padding_idx=3)
    w = emb.weight.numpy()
    assert np.all(w[3] == 0) and emb.weight.requires_grad
    assert abs(w.mean()) < 0.02 and abs(w.std() - 1) < 0.02  # N(0, 1)
    table = np.arange(6.0).reshape(3, 2)
    frozen = nn.Embedding.from_pretrained(fg.tensor(table), padding_idx=0)
    assert not frozen.weight.requires_grad and frozen.weight.tolist() == table.tolist()  # rows kept as given
    assert frozen(fg.tensor([0, 2])).tolist() == [[0.0, 1.0], [4.0, 5.0]]
    assert nn.Embedding.from_pretrained(fg.tensor(table), freeze=False).weight.requires_grad
    bag = nn.EmbeddingBag.from_pretrained(fg.tensor(table), mode="max")
    assert not bag.weight.requires_grad and bag.mode == "max"
    assert nn.EmbeddingBag.from_pretrained(fg.tensor(table), freeze=False).weight.requires_grad
    assert nn.Embedding(3, 2, _weight=fg.tensor(table), _freeze=True).weight.requires_grad is False


@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_embedding_max_norm_rebinds_the_renormalised_weight_like_torch(norm_type):
    torch = pytest.importorskip("torch")
    t_emb = torch.nn.Embedding(5, 3, max_norm=0.8, norm_type=norm_type).double()
    emb = nn.Embedding(5, 3, max_norm=0.8, norm_type=norm_type).double()
    emb.load_state_dict(t_emb.state_dict())
    old = emb.weight
    idx = np.array([[0, 3], [3, 1]])
    out = emb(fg.tensor(idx))
    t_out = t_emb(torch.tensor(idx))
    assert emb.weight is not old and emb.weight.requires_grad
    np.testing.assert_allclose(emb.weight.numpy(), t_emb.weight.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-12)
    assert np.all(emb.weight.numpy()[[2, 4]] == old.numpy()[[2, 4]])  # rows not looked up are untouched


def test_embedding_bag_trailing_entries_after_last_offset_belong_to_no_bag():
    # PyTorch's CPU kernels disagree between modes here (pytorch/pytorch#191965); fgraph follows the
    # documented meaning of include_last_offset: offsets[-1] ends the last bag.
    w = fg.tensor([[1.0, 1.0], [5.0, 5.0], [9.0, 9.0]])
    idx, offsets = fg.tensor([0, 1, 2]), fg.tensor([0, 2])
    got = [F.embedding_bag(idx, w, offsets, mode=m, include_last_offset=True).tolist() for m in ("sum", "mean", "max")]
    assert got == [[[6.0, 6.0]], [[3.0, 3.0]], [[5.0, 5.0]]]


def test_embedding_bag_traces_under_jit():
    rng = np.random.default_rng(10)
    bag = nn.EmbeddingBag.from_pretrained(fg.tensor(rng.standard_normal((5, 2))), padding_idx=0)

    def f(idx, offsets):
        return bag(fg.Tensor(idx), fg.Tensor(offsets)).array

    idx, offsets = jnp.asarray([1, 0, 4, 2, 2, 3]), jnp.asarray([0, 2, 2, 3])
    np.testing.assert_allclose(jax.jit(f)(idx, offsets), f(idx, offsets), rtol=1e-12)



def test_dropout_errors():
    for p in (-0.1, 1.5):
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
            nn.Dropout(p)
    with pytest.raises(ValueError, match="dropout1d: Expected 2D or 3D input"):
        nn.Dropout1d()(fg.ones(2, 2, 2, 2))
    with pytest.raises(ValueError, match="feature dropout requires at least 2 dimensions"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nn.Dropout2d()(fg.ones(4), key=jax.random.PRNGKey(0))
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout3d"):
        nn.Dropout3d().eval()(fg.ones(2, 2))
    with pytest.raises(ValueError, match="floating-point"):
        nn.Dropout()(fg.tensor([1, 2]))
    with pytest.raises(TypeError, match="key must be a JAX PRNG key"):
        nn.Dropout()(fg.ones(2), key="not a key")


def test_embedding_errors():
    with pytest.raises(ValueError, match="padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=3)
    with pytest.raises(ValueError, match="padding_idx must be within num_embeddings"):
        nn.EmbeddingBag(3, 2, padding_idx=-4)
    with pytest.raises(IndexError, match="out of range"):
        nn.Embedding(3, 2)(fg.tensor([3]))
    with pytest.raises(ValueError, match="integer tensor"):
        nn.Embedding(3, 2)(fg.tensor([1.0]))
    with pytest.raises(ValueError, match="expected to be 2-dimensional"):
        nn.Embedding.from_pretrained(fg.ones(3))
    with pytest.raises(ValueError, match="Shape of weight does not match"):
        nn.Embedding(3, 2, _weight=fg.ones(2, 3))
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        nn.EmbeddingBag(3, 2, mode="median")
    bag = nn.EmbeddingBag(4, 2)
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        bag(fg.tensor([[0, 1]]), fg.tensor([0]))
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        bag(fg.tensor([0, 1]))
    with pytest.raises(ValueError, match="input has to be 1D or 2D Tensor"):
        bag(fg.tensor([[[0]]]))
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        bag(fg.tensor([[0, 1]]), None, fg.ones(1, 2))
    with pytest.raises(ValueError, match="must have the same shape as the input"):
        nn.EmbeddingBag(4, 2, mode="sum")(fg.tensor([[0, 1]]), None, fg.ones(2))
    with pytest.raises(ValueError, match="offsets\\[0\\] has to be 0"):
        bag(fg.tensor([0, 1, 2]), fg.tensor([1, 2]))
    with pytest.raises(ValueError, match="can not be greater than input's length 3"):
        bag(fg.tensor([0, 1, 2]), fg.tensor([0, 4]))
    with pytest.raises(ValueError, match="max mode does not support scaling the gradient"):
        nn.EmbeddingBag(4, 2, mode="max", scale_grad_by_freq=True)(fg.tensor([[0, 1]]))
    with pytest.raises(IndexError, match="out of range"):
        bag(fg.tensor([[0, 4]]))
