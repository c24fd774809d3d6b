"""Activation checkpointing: same gradients (first and second order), fewer saved tensors, RNG replay."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
from fgraph.autograd import checkpoint
from fgraph.autograd.function import FunctionBackward
from fgraph.ops._declare import OpNode
from fgraph.tensor import Tensor

WIDTH, DEPTH, BATCH = 8, 20, 4


def _np(t):
    return np.asarray(t.array)


def tanh_layer(h, w, b):
    """A gated scaled tanh, 1.7159 * tanh(z) * sigmoid(z) with z = 2/3 * (h @ w + b): a layer whose
    internal activations (matmul inputs, tanh and sigmoid results, both factors of the gate) outnumber
    its three arguments. Products with Python constants save nothing, as in PyTorch."""
    z = (h @ w + b) * (2.0 / 3.0)
    return fg.tanh(z) * fg.sigmoid(z) * 1.7159


def make_mlp(seed=0):
    rng = np.random.default_rng(seed)
    x = fg.tensor(rng.normal(size=(BATCH, WIDTH)), dtype="float64", requires_grad=True)
    params = []
    for _ in range(DEPTH):
        w = fg.tensor(rng.normal(size=(WIDTH, WIDTH)) / np.sqrt(WIDTH), dtype="float64", requires_grad=True)
        b = fg.tensor(rng.normal(size=(WIDTH,)) * 0.1, dtype="float64", requires_grad=True)
        params.append((w, b))
    return x, params


def mlp_loss(x, params, use_checkpoint):
    h = x
    for w, b in params:
        h = checkpoint(tanh_layer, h, w, b, use_reentrant=False) if use_checkpoint else tanh_layer(h, w, b)
    return (h * h).sum()


def count_saved_tensors(root):
    """Saved entries of every node reachable from ``root`` (iterative walk)."""
    count = 0
    stack = [root.grad_fn]
    seen = {root.grad_fn}
    while stack:
        node = stack.pop()
        if isinstance(node, OpNode):
            if node.saved_inputs is not None:
                count += sum(isinstance(a, Tensor) for a in node.saved_inputs)
            if node.saved_result is not None:
                count += len(node.saved_result) if isinstance(node.saved_result, tuple) else 1
        elif isinstance(node, FunctionBackward):
            count += sum(t is not None for t in node.saved_tensors)
        for fn, _ in node.next_functions:
            if fn is not None and fn not in seen:
                seen.add(fn)
                stack.append(fn)
    return count


def test_checkpointed_mlp_matches_and_saves_less():
    x, params = make_mlp()
    leaves = [x] + [p for pair in params for p in pair]
    plain = mlp_loss(x, params, use_checkpoint=False)
    ckpt = mlp_loss(x, params, use_checkpoint=True)
    np.testing.assert_allclose(ckpt.item(), plain.item(), rtol=1e-14)
    square = ckpt.grad_fn.next_functions[0][0]  # SumBackward0 -> MulBackward0 -> the last block
    assert square.next_functions[0][0].name() == "CheckpointFunctionBackward"
    g_plain = fg.grad(plain, leaves)
    g_ckpt = fg.grad(ckpt, leaves)
    for a, b in zip(g_plain, g_ckpt):
        np.testing.assert_allclose(_np(b), _np(a), rtol=1e-12, atol=1e-14)
    n_plain, n_ckpt = count_saved_tensors(plain), count_saved_tensors(ckpt)
    assert n_ckpt < n_plain, (n_ckpt, n_plain)
    assert n_ckpt == 3 * DEPTH + 2  # each block keeps (h, w, b); the final h * h keeps (h, h)
    assert n_plain == 6 * DEPTH + 2  # matmul (h, w), tanh and sigmoid results, the gate's two factors
    # backward() sees the same leaves.
    grads = fg.backward(ckpt)
    np.testing.assert_allclose(_np(grads[params[3][0]]), _np(g_plain[1 + 6]), rtol=1e-12)


def test_second_order_through_checkpoint_matches_plain():
    x, params = make_mlp(1)
    params = params[:3]
    leaves = [x, params[0][0], params[1][1]]
    results = []
    for use in (False, True):
        loss = mlp_loss(x, params, use_checkpoint=use)
        grads = fg.grad(loss, leaves, create_graph=True)
        inner = sum(((g * g).sum() for g in grads), fg.tensor(0.0, dtype="float64"))
        results.append([_np(g) for g in grads] + [_np(h) for h in fg.grad(inner, leaves)])
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)


def test_second_order_matches_jax_hessian():
    w0 = np.array([[0.3, -0.5], [0.8, 0.1]])
    x0 = np.array([0.7, -0.2])

    def block(x, w):
        return fg.tanh(x @ w) * x

    x = fg.tensor(x0, dtype="float64", requires_grad=True)
    w = fg.tensor(w0, dtype="float64")
    (g,) = fg.grad(checkpoint(block, x, w).sum(), [x], create_graph=True)
    hess = np.stack([_np(fg.grad(g[i], [x])[0]) for i in range(2)])
    expected = jax.hessian(lambda a: jnp.sum(jnp.tanh(a @ w0) * a))(x0)
    np.testing.assert_allclose(hess, expected, rtol=1e-10, atol=1e-12)


def noisy_block(h):
    noise = fg.tensor(jax.random.normal(fg.random.next_key(), h.shape, dtype=h.dtype))
    return h * noise


def test_rng_replay_inside_checkpoint():
    x = fg.tensor([0.5, -1.0, 2.0], dtype="float64", requires_grad=True)
    fg.manual_seed(7)
    (g_plain,) = fg.grad(noisy_block(x).sum(), [x])
    after_plain = fg.random.get_rng_state()
    fg.manual_seed(7)
    y = checkpoint(noisy_block, x).sum()
    after_forward = fg.random.get_rng_state()
    (g_ckpt,) = fg.grad(y, [x])
    np.testing.assert_array_equal(_np(g_ckpt), _np(g_plain))  # the gradient is the forward's noise
    assert np.array_equal(np.asarray(after_forward), np.asarray(after_plain))
    assert np.array_equal(np.asarray(fg.random.get_rng_state()), np.asarray(after_forward))  # restored
    fg.manual_seed(7)
    (g_fresh,) = fg.grad(checkpoint(noisy_block, x, preserve_rng_state=False).sum(), [x])
    assert not np.allclose(_np(g_fresh), _np(g_plain))  # without replay, recompute draws new noise


def test_explicit_key_replays_by_construction():
    key = jax.random.PRNGKey(3)

    def block(h, key):
        return h * fg.tensor(jax.random.normal(key, h.shape, dtype=h.dtype))

    x = fg.tensor([1.0, 2.0], dtype="float64", requires_grad=True)
    (g,) = fg.grad(checkpoint(block, x, key=key, preserve_rng_state=False).sum(), [x])
    np.testing.assert_array_equal(_np(g), np.asarray(jax.random.normal(key, (2,), dtype="float64")))


def test_keyword_tensors_tuple_outputs_and_inputs_as_outputs():
    def block(a, scale, *, bias, label="x"):
        assert label == "tag"
        return a * scale + bias, a, "meta"

    a = fg.tensor([1.0, 2.0], dtype="float64", requires_grad=True)
    bias = fg.tensor([0.5, 0.5], dtype="float64", requires_grad=True)
    out, same, meta = checkpoint(block, a, 3.0, bias=bias, label="tag")
    assert meta == "meta" and same is not a and same.grad_fn is out.grad_fn
    ga, gb = fg.grad((out * 2.0).sum() + (same * same).sum(), [a, bias])
    np.testing.assert_array_equal(_np(ga), [6.0 + 2.0, 6.0 + 4.0])
    np.testing.assert_array_equal(_np(gb), [2.0, 2.0])
    (ga,) = fg.grad(out.sum(), [a])  # `same` unused: no gradient arrives for it
    np.testing.assert_array_equal(_np(ga), [3.0, 3.0])


def test_nested_checkpoints():
    w = fg.tensor([[0.2, -0.3], [0.4, 0.9]], dtype="float64", requires_grad=True)
    x = fg.tensor([[1.0, -1.0]], dtype="float64", requires_grad=True)

    def inner(h, w):
        return fg.tanh(h @ w)

    def outer(h, w):
        return checkpoint(inner, checkpoint(inner, h, w), w)

    plain = inner(inner(x, w), w).sum()
    nested = checkpoint(outer, x, w).sum()
    for a, b in zip(fg.grad(plain, [x, w]), fg.grad(nested, [x, w])):
        np.testing.assert_allclose(_np(b), _np(a), rtol=1e-12)


def test_closure_captured_tensor_requiring_grad_is_an_error():
    w = fg.tensor([2.0], dtype="float64", requires_grad=True)
    x = fg.tensor([3.0], dtype="float64", requires_grad=True)
    y = checkpoint(lambda h: h * w, x).sum()
    with pytest.raises(fg.GradError, match="not passed as an argument"):
        fg.grad(y, [x])
    # With no argument requiring grad there is nothing to checkpoint: fn runs with its normal graph.
    z = checkpoint(lambda h: h * w, fg.tensor([3.0], dtype="float64")).sum()
    assert fg.grad(z, [w])[0].item() == 3.0


def test_no_grad_and_aliases():
    x = fg.tensor([1.0], requires_grad=True)
    with fg.no_grad():
        assert not checkpoint(fg.exp, x).requires_grad
    from fgraph.utils.checkpoint import checkpoint as utils_checkpoint

    assert utils_checkpoint is checkpoint is fg.autograd.checkpoint
    with pytest.raises(TypeError, match="Tensor or a tuple"):
        checkpoint(lambda h: [h * 2.0], x)


def test_saved_tensor_hooks_count_fewer_saved_arrays_when_checkpointed():
    from fgraph.autograd.graph import saved_tensors_hooks

    x, params = make_mlp()
    counts = {}
    for use_checkpoint in (False, True):
        packed = []

        def pack(t, packed=packed):
            packed.append(t.shape)
            return t

        with saved_tensors_hooks(pack, lambda t: t):
            loss = mlp_loss(x, params, use_checkpoint)
        counts[use_checkpoint] = len(packed)
        (g,) = fg.grad(loss, [params[0][0]])  # unpacking through the hooks still gives gradients
        assert np.isfinite(_np(g)).all()
    assert counts[True] < counts[False], counts
    assert counts == {False: 6 * DEPTH + 2, True: 3 * DEPTH + 2}
