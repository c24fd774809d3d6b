"""The fused ``nll_loss`` primitive (``fgraph/nn/functional/_nll.py``) against ``jax.grad`` of the op-table reference.

The op tables check ``nll_loss``/``cross_entropy`` with the class weight as a constant; here the
weight is differentiated too (PyTorch has no such gradient, fgraph's rule does), to second order,
for every reduction, 1-D to 3-D inputs and an ``ignore_index`` that hits.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
import fgraph.nn.functional as F
from op_tables.nn_loss import _cross_entropy_ref, _nll_ref

FUNCTIONS = {"nll_loss": (F.nll_loss, _nll_ref), "cross_entropy": (F.cross_entropy, _cross_entropy_ref)}


def _case(shape: tuple, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    c = shape[1] if len(shape) > 1 else shape[0]
    target = rng.integers(0, c, shape[:1] + shape[2:] if len(shape) > 1 else ())
    if target.ndim:
        target.reshape(-1)[0] = 1  # the ignored class below: some targets ignored, not all
    return rng.standard_normal(shape), target, rng.uniform(0.5, 2.0, c), rng.standard_normal(shape)


# cross_entropy is log_softmax then this primitive: one case of it; the op tables cover the rest of both.
CASES = [("nll_loss", r, s) for r in ("mean", "sum", "none") for s in ((5,), (3, 4, 2))] + [
    ("cross_entropy", "mean", (4, 3))]


@pytest.mark.parametrize("name,reduction,shape", CASES)
def test_first_and_second_derivatives_in_input_and_weight_equal_jax(name, reduction, shape):
    fn, ref = FUNCTIONS[name]
    x, target, w, v = _case(shape, seed=len(shape))
    ignore = -100 if len(shape) == 1 else 1

    def fg_loss(xt, wt):
        out = fn(xt, fg.tensor(target), wt, reduction=reduction, ignore_index=ignore)
        return (out * out).sum()

    def jax_loss(xa, wa):
        out = ref(xa, jnp.asarray(target), wa, reduction=reduction, ignore_index=ignore)
        return jnp.sum(out * out)

    def jax_second(xa, wa):  # d/d(x, w) of <grad_x, v> + <grad_w, w0>
        gx, gw = jax.grad(jax_loss, (0, 1))(xa, wa)
        return jnp.sum(gx * v) + jnp.sum(gw * w)

    xt, wt = fg.tensor(x, requires_grad=True), fg.tensor(w, requires_grad=True)
    gx, gw = fg.grad(fg_loss(xt, wt), [xt, wt], create_graph=True)
    hx, hw = fg.grad((gx * fg.tensor(v)).sum() + (gw * fg.tensor(w)).sum(), [xt, wt])
    expected = jax.grad(jax_loss, (0, 1))(jnp.asarray(x), jnp.asarray(w))
    expected2 = jax.grad(jax_second, (0, 1))(jnp.asarray(x), jnp.asarray(w))
    for got, want in zip((gx, gw, hx, hw), (*expected, *expected2)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)


def test_every_target_ignored_gives_nan_loss_and_zero_gradients_at_every_order():
    x = fg.tensor(np.random.default_rng(0).standard_normal((3, 4)), requires_grad=True)
    w = fg.tensor(np.ones(4), requires_grad=True)
    loss = F.cross_entropy(x, fg.tensor([2, 2, 2]), w, ignore_index=2)
    assert np.isnan(loss.item())  # 0 / 0, as PyTorch
    gx, gw = fg.grad(loss, [x, w], create_graph=True)
    hx, hw = fg.grad(gx.sum() + gw.sum(), [x, w])
    for g in (gx, gw, hx, hw):
        assert np.all(g.numpy() == 0)


def test_cross_entropy_records_torchs_nodes():
    x = fg.randn(4, 3, requires_grad=True)
    loss = F.cross_entropy(x, fg.tensor([0, 1, 2, 0]))
    assert type(loss.grad_fn).__name__ == "NllLossBackward0"
    assert type(loss.grad_fn.next_functions[0][0]).__name__ == "LogSoftmaxBackward0"
