"""The random activations (rrelu, gumbel_softmax, alpha_dropout), ctc_loss's options and PyTorch's
raw CTC gradient, the new Modules, and clear errors for misuse.

Values of the deterministic ops are checked in tests/op_tables/nn_{activation,loss}_more.py;
here the random ops are checked for their distributions (moments, supports) and for
reproducibility (same key or seed, same draw), and ctc_loss's reductions, target layouts,
zero_infinity and infeasible targets against PyTorch.
"""
import jax
import numpy as np
import pytest

import fgraph as fg
import fgraph.nn.functional as F
from fgraph import nn

torch = pytest.importorskip("torch")
TF = torch.nn.functional


# -- random activations ----------------------------------------------------------------------------------------
def test_rrelu_training_slopes_are_uniform_and_are_the_gradient():
    x = fg.tensor(-np.linspace(0.5, 2.0, 4000), requires_grad=True)
    y = F.rrelu(x, 0.1, 0.3, training=True, key=jax.random.PRNGKey(0))
    slope = np.asarray((y / x).array)
    assert slope.min() >= 0.1 and slope.max() <= 0.3
    assert abs(slope.mean() - 0.2) < 0.005 and abs(slope.var() - 0.2 ** 2 / 12) < 5e-4  # U(0.1, 0.3)
    (g,) = fg.grad(y.sum(), [x])
    np.testing.assert_allclose(np.asarray(g.array), slope, rtol=1e-6)
    pos = F.rrelu(fg.tensor([1.0, 2.0]), training=True, key=jax.random.PRNGKey(0))
    assert pos.tolist() == [1.0, 2.0]


def test_random_ops_are_reproducible_with_a_key_or_a_seed():
    x = fg.randn(50, key=jax.random.PRNGKey(3))
    for fn in (lambda **k: F.rrelu(x, training=True, **k), lambda **k: F.gumbel_softmax(x, **k),
               lambda **k: F.alpha_dropout(x, 0.3, training=True, **k)):
        a, b = fn(key=jax.random.PRNGKey(7)), fn(key=jax.random.PRNGKey(7))
        assert a.tolist() == b.tolist()
        assert fn(key=jax.random.PRNGKey(8)).tolist() != a.tolist()
        fg.manual_seed(11)
        c = fn()
        fg.manual_seed(11)
        assert fn().tolist() == c.tolist()


def test_gumbel_softmax_samples_the_categorical_distribution():
    logits = fg.tensor(np.log([0.1, 0.2, 0.7]))
    y = F.gumbel_softmax(logits.expand(4000, 3), tau=0.5, hard=True, key=jax.random.PRNGKey(0))
    counts = np.asarray(y.array).sum(0) / 4000
    assert set(np.unique(np.asarray(y.array))) == {0.0, 1.0}
    np.testing.assert_allclose(counts, [0.1, 0.2, 0.7], atol=0.03)
    soft = F.gumbel_softmax(logits.expand(5, 3), tau=2.0, dim=1, key=jax.random.PRNGKey(1))
    np.testing.assert_allclose(np.asarray(soft.sum(1).array), 1.0, rtol=1e-6)


def test_gumbel_softmax_hard_passes_the_soft_gradient():
    x = fg.tensor([[0.5, -1.0, 2.0]], requires_grad=True)
    hard = F.gumbel_softmax(x, tau=0.7, hard=True, key=jax.random.PRNGKey(5))
    soft = F.gumbel_softmax(x, tau=0.7, key=jax.random.PRNGKey(5))
    assert hard.tolist()[0] == [float(i == int(np.argmax(soft.tolist()[0]))) for i in range(3)]
    w = fg.tensor([[1.0, 2.0, -3.0]])
    (gh,) = fg.grad((hard * w).sum(), [x])
    (gs,) = fg.grad((soft * w).sum(), [x])
    np.testing.assert_allclose(np.asarray(gh.array), np.asarray(gs.array), rtol=1e-6)


@pytest.mark.parametrize("feature", [False, True])
def test_alpha_dropout_keeps_mean_and_variance(feature):
    x = fg.randn(200, 100, key=jax.random.PRNGKey(0))
    fn = F.feature_alpha_dropout if feature else F.alpha_dropout
    y = np.asarray(fn(x, 0.3, training=True, key=jax.random.PRNGKey(1)).array)
    assert abs(y.mean()) < 0.05 and abs(y.std() - 1) < 0.05
    dropped = -1.7580993408473766 * (1 / np.sqrt((1.7580993408473766 ** 2 * 0.3 + 1) * 0.7)) * 0.7
    frac = np.isclose(y, dropped).mean()
    assert abs(frac - 0.3) < 0.03
    if feature:  # one draw per (n, c) channel of an (N, C, L) input
        y3 = np.asarray(fn(fg.ones(4, 6, 5), 0.5, training=True, key=jax.random.PRNGKey(2)).array).reshape(24, 5)
        assert (y3 == y3[:, :1]).all() and len(np.unique(y3)) == 2
    assert fn(x, 0.3).tolist() == x.tolist()  # eval (training=False is the default, as in PyTorch)
    assert F.alpha_dropout(x, 1.0, training=True).abs().sum().item() == 0.0


def test_random_ops_refuse_a_generator_under_jit():
    @jax.jit
    def f(a):
        return F.rrelu(fg.tensor(a), training=True).array

    with pytest.raises(fg.OpError, match="key="):
        f(np.ones(3))


# -- ctc_loss ---------------------------------------------------------------------------------------------------
Z = np.random.default_rng(0).standard_normal((6, 3, 4))
TARGETS = np.array([[1, 1, 2], [3, 2, 0], [1, 0, 0]])
IL, TL = np.array([6, 5, 4]), np.array([3, 2, 0])


def _ctc_pair(z, targets, il, tl, normalise=True, **kw):
    x, tx = fg.tensor(z, requires_grad=True), torch.tensor(z, requires_grad=True)
    lp, tlp = (F.log_softmax(x, -1), TF.log_softmax(tx, -1)) if normalise else (x, tx)
    y = F.ctc_loss(lp, fg.tensor(targets), il, tl, **kw)
    ty = TF.ctc_loss(tlp, torch.as_tensor(targets), torch.as_tensor(il), torch.as_tensor(tl), **kw)
    np.testing.assert_allclose(np.asarray(y.array), ty.detach().numpy(), rtol=1e-10)
    (g,) = fg.grad(y.sum(), [x])
    (tg,) = torch.autograd.grad(ty.sum(), tx)
    return np.asarray(g.array), tg.numpy()


def test_ctc_loss_matches_torch_through_log_softmax():
    """'mean' is in the op table's torch oracle; here the other reductions."""
    for reduction in ("none", "sum"):
        g, tg = _ctc_pair(Z, TARGETS, IL, TL, reduction=reduction)
        np.testing.assert_allclose(g, tg, rtol=1e-9, atol=1e-12)


def test_ctc_loss_concatenated_targets_lists_and_unbatched():
    flat = np.concatenate([TARGETS[i, : TL[i]] for i in range(3)])
    g, tg = _ctc_pair(Z, flat, tuple(IL), tuple(TL))
    np.testing.assert_allclose(g, tg, rtol=1e-9, atol=1e-12)
    g, tg = _ctc_pair(Z[:, 0], TARGETS[0], 6, 3, reduction="none")
    np.testing.assert_allclose(g, tg, rtol=1e-9, atol=1e-12)


def test_ctc_raw_gradient_is_exact_and_torch_adds_exp_log_probs():
    """PyTorch's kernel returns d loss / d log_probs + exp(log_probs) on the frames before each input
    length (it cancels through log_softmax); fgraph's is the exact derivative (= jax.grad)."""
    g, tg = _ctc_pair(Z, TARGETS, IL, TL, normalise=False, reduction="sum")
    used = (np.arange(6)[:, None] < IL[None])[..., None]
    np.testing.assert_allclose(tg - g, np.exp(Z) * used, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_unalignable_target_is_infinite_or_zeroed(zero_infinity):
    il = np.array([3, 5, 4])  # "1 1 2" needs 4 frames (a blank between the repeated 1s)
    g, tg = _ctc_pair(Z, TARGETS, il, TL, reduction="none", zero_infinity=zero_infinity)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(tg))
    np.testing.assert_allclose(np.nan_to_num(g), np.nan_to_num(tg), rtol=1e-9, atol=1e-12)


def test_ctc_module_matches_functional():  # (jit: the op tables run every entry jitted too)
    args = (fg.tensor(TARGETS), fg.tensor(IL), fg.tensor(TL))
    lp = F.log_softmax(fg.tensor(Z), 2)
    assert nn.CTCLoss(reduction="sum")(lp, *args).item() == F.ctc_loss(lp, *args, reduction="sum").item()


def test_ctc_loss_errors():
    lp = F.log_softmax(fg.tensor(Z), 2)
    with pytest.raises(fg.OpError, match="input_lengths must lie in"):
        F.ctc_loss(lp, fg.tensor(TARGETS), [7, 5, 4], TL)
    with pytest.raises(IndexError, match="target labels"):
        F.ctc_loss(lp, fg.tensor(TARGETS + 2), IL, TL)
    with pytest.raises(fg.OpError, match="one length per batch element"):
        F.ctc_loss(lp, fg.tensor(TARGETS), [6, 5], TL)
    with pytest.raises(fg.OpError, match="sum to"):
        F.ctc_loss(lp, fg.tensor([1, 2]), IL, TL)
    with pytest.raises(fg.OpError, match="integer"):
        F.ctc_loss(lp, fg.tensor(TARGETS.astype(np.float32)), IL, TL)


# -- Modules and misuse ------------------------------------------------------------------------------------------
def test_modules_match_functionals_and_torch_reprs():
    pairs = [
        (nn.Hardshrink(), torch.nn.Hardshrink()), (nn.Softshrink(1.0), torch.nn.Softshrink(1.0)),
        (nn.Tanhshrink(), torch.nn.Tanhshrink()), (nn.Threshold(0.1, 20.0), torch.nn.Threshold(0.1, 20.0)),
        (nn.RReLU(0.1, 0.3), torch.nn.RReLU(0.1, 0.3)), (nn.Softmin(dim=1), torch.nn.Softmin(dim=1)),
        (nn.AlphaDropout(0.2), torch.nn.AlphaDropout(0.2)),
        (nn.FeatureAlphaDropout(0.2), torch.nn.FeatureAlphaDropout(0.2)),
    ]
    x = np.random.default_rng(1).standard_normal((2, 3))
    for mine, theirs in pairs:
        assert repr(mine) == repr(theirs)
        mine.eval(), theirs.eval()
        np.testing.assert_allclose(np.asarray(mine(fg.tensor(x)).array), theirs(torch.tensor(x)).numpy(), rtol=1e-12)
    losses = [
        (nn.GaussianNLLLoss(), torch.nn.GaussianNLLLoss(), 3), (nn.PoissonNLLLoss(), torch.nn.PoissonNLLLoss(), 2),
        (nn.SoftMarginLoss(), torch.nn.SoftMarginLoss(), 2), (nn.HingeEmbeddingLoss(), torch.nn.HingeEmbeddingLoss(), 2),
        (nn.MarginRankingLoss(0.5), torch.nn.MarginRankingLoss(0.5), 3),
        (nn.MultiLabelSoftMarginLoss(), torch.nn.MultiLabelSoftMarginLoss(), 2),
    ]
    pos = np.abs(x) + 0.5
    for mine, theirs, n in losses:
        assert repr(mine) == repr(theirs)
        args = (x, np.sign(x), pos)[:n]
        np.testing.assert_allclose(mine(*map(fg.tensor, args)).item(), theirs(*map(torch.tensor, args)).item(), rtol=1e-12)
    y = np.array([2, 0])
    w = np.array([1.0, 2.0, 3.0])
    mm, tmm = nn.MultiMarginLoss(p=2, weight=fg.tensor(w)), torch.nn.MultiMarginLoss(p=2, weight=torch.tensor(w))
    assert [n for n, _ in mm.named_buffers()] == ["weight"]
    np.testing.assert_allclose(mm(fg.tensor(x), fg.tensor(y)).item(), tmm(torch.tensor(x), torch.tensor(y)).item())
    ml = np.array([[2, -1, 0], [0, 1, 2]])
    np.testing.assert_allclose(nn.MultiLabelMarginLoss()(fg.tensor(x), fg.tensor(ml)).item(),
                               torch.nn.MultiLabelMarginLoss()(torch.tensor(x), torch.tensor(ml)).item())


def test_new_ops_explain_misuse():
    x = fg.tensor([[0.5, -1.0, 2.0]])
    with pytest.raises(fg.OpError, match="softshrink: lambda must be greater or equal to 0"):
        F.softshrink(x, -1.0)
    with pytest.raises(fg.OpError, match="rrelu: lower bound"):
        F.rrelu(x, 0.5, 0.1, training=True)
    with pytest.raises(fg.OpError, match="inplace=True is not supported"):
        F.threshold(x, 0.0, 1.0, inplace=True)
    with pytest.raises(fg.OpError, match="dropout probability"):
        F.alpha_dropout(x, 1.5, training=True)
    with pytest.raises(fg.OpError, match="floating-point"):
        F.hardshrink(fg.tensor([1, 2]))
    with pytest.raises(ValueError, match="var has negative"):
        F.gaussian_nll_loss(x, x, fg.tensor([[1.0, -1.0, 1.0]]))
    with pytest.raises(ValueError, match="incorrect size"):
        F.gaussian_nll_loss(x, x, fg.ones(2, 3))
    with pytest.raises(IndexError, match="multi_margin_loss: target 3 is out of bounds"):
        F.multi_margin_loss(x, fg.tensor([3]))
    with pytest.raises(fg.OpError, match="only p == 1 and p == 2"):
        F.multi_margin_loss(x, fg.tensor([0]), p=3)
    with pytest.raises(fg.OpError, match="same dimension"):
        F.margin_ranking_loss(x, x, fg.tensor([1.0]))
    with pytest.raises(fg.OpError, match="integer tensor of class indices"):
        F.multilabel_margin_loss(x, x)
