"""Loss layers against PyTorch and pure-JAX references (see nn_harness), plus reprs, buffers and errors."""
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
from fgraph import nn
from fgraph.errors import OpError
from nn_harness import LayerCase, MODES, case_ids, check_against_reference, check_against_torch

W3 = np.array([0.3, 1.7, 0.9])  # class weights for 3 classes


# -- input makers ------------------------------------------------------------------------------------
def _pair(*shape):
    return lambda rng: (rng.standard_normal(shape), rng.standard_normal(shape))


def _classes(n_classes, shape, ignore=None, spatial=()):
    """Logits ``shape`` and integer targets (with ``ignore`` at two positions)."""
    def make(rng):
        target_shape = (shape[0],) + tuple(spatial) if len(shape) > 1 else ()
        target = rng.integers(0, n_classes, size=target_shape)
        if ignore is not None:
            flat = target.reshape(-1)
            flat[[0, -1]] = ignore
        return rng.standard_normal(shape), np.asarray(target, dtype=np.int64)
    return make


def _probs(*shape):
    def make(rng):
        return rng.standard_normal(shape), np.asarray(jax.nn.softmax(rng.standard_normal(shape), axis=1))
    return make


def _bce_inputs(*shape):
    return lambda rng: (rng.uniform(0.05, 0.95, shape), rng.uniform(0.0, 1.0, shape))


def _kl_inputs(log_target):
    def make(rng):
        x = np.asarray(jax.nn.log_softmax(rng.standard_normal((3, 4)), axis=1))
        t = rng.standard_normal((3, 4))
        t = np.asarray(jax.nn.log_softmax(t, axis=1) if log_target else jax.nn.softmax(t, axis=1))
        return x, t
    return make


def _cosine_inputs(n, d):
    def make(rng):
        labels = np.array([1, -1, 1, -1][:n]) if n else np.array(-1)
        shape = (n, d) if n else (d,)
        return rng.standard_normal(shape), rng.standard_normal(shape), labels.astype(np.int64)
    return make


def _triplet_inputs(rng):
    return tuple(rng.standard_normal((4, 5)) for _ in range(3))


# -- pure-JAX references -----------------------------------------------------------------------------
def _reduce(loss, reduction):
    if reduction == "mean":
        return jnp.mean(loss)
    if reduction == "sum":
        return jnp.sum(loss)
    return loss


def _mse_ref(reduction):
    return lambda state, x, t, training: _reduce((x - t) ** 2, reduction)


def _l1_ref(reduction):
    return lambda state, x, t, training: _reduce(jnp.abs(x - t), reduction)


def _smooth_l1_ref(reduction, beta):
    def ref(state, x, t, training):
        d = jnp.abs(x - t)
        loss = d if beta == 0 else jnp.where(d < beta, 0.5 * d ** 2 / beta, d - 0.5 * beta)
        return _reduce(loss, reduction)
    return ref


def _huber_ref(reduction, delta):
    def ref(state, x, t, training):
        d = jnp.abs(x - t)
        return _reduce(jnp.where(d < delta, 0.5 * d ** 2, delta * (d - 0.5 * delta)), reduction)
    return ref


def _nll_core(logp, target, weight, ignore_index, reduction):
    """PyTorch's nll_loss: logp (N, C, ...) or (C,), integer target; 'mean' divides by the summed weights."""
    batched = logp.ndim > 1
    lp = jnp.moveaxis(logp, 1, -1) if batched else logp
    c = lp.shape[-1]
    w = jnp.ones(c, logp.dtype) if weight is None else weight
    valid = target != ignore_index
    safe = jnp.where(valid, target, 0)
    picked = jnp.take_along_axis(lp, safe[..., None], axis=-1)[..., 0]
    wt = jnp.where(valid, w[safe], 0.0)
    loss = -picked * wt
    if reduction == "none":
        return loss
    if reduction == "sum":
        return jnp.sum(loss)
    return jnp.sum(loss) / jnp.sum(wt)


def _nll_ref(reduction, ignore_index=-100):
    return lambda state, x, t, training: _nll_core(x, t, state.get("weight"), ignore_index, reduction)


def _ce_ref(reduction, ignore_index=-100, smoothing=0.0):
    def ref(state, x, t, training):
        axis = 1 if x.ndim > 1 else 0
        logp = jax.nn.log_softmax(x, axis=axis)
        c = x.shape[axis]
        weight = state.get("weight")
        wshape = [1] * x.ndim
        wshape[axis] = c
        w = jnp.ones(c, x.dtype) if weight is None else weight
        wb = w.reshape(wshape)
        if jnp.issubdtype(t.dtype, jnp.floating):  # class probabilities
            t = t * (1 - smoothing) + smoothing / c
            per = -jnp.sum(logp * t * wb, axis=axis)
            if reduction == "mean":
                return jnp.sum(per) / (x.size / c)
            return _reduce(per, reduction)
        nll = _nll_core(logp, t, weight, ignore_index, reduction)
        if smoothing == 0:
            return nll
        valid = t != ignore_index
        smooth = jnp.where(valid, -jnp.sum(logp * wb, axis=axis), 0.0)
        if reduction == "mean":
            smooth = jnp.sum(smooth) / jnp.sum(jnp.where(valid, w[jnp.where(valid, t, 0)], 0.0))
        else:
            smooth = _reduce(smooth, reduction)
        return (1 - smoothing) * nll + smoothing / c * smooth
    return ref


def _bce_ref(reduction):
    def ref(state, x, t, training):
        loss = -(t * jnp.maximum(jnp.log(x), -100.0) + (1 - t) * jnp.maximum(jnp.log(1 - x), -100.0))
        if state.get("weight") is not None:
            loss = loss * state["weight"]
        return _reduce(loss, reduction)
    return ref


def _bce_logits_ref(reduction):
    def ref(state, x, t, training):
        pw = state.get("pos_weight")
        pos = t * jax.nn.log_sigmoid(x) * (1.0 if pw is None else pw)
        loss = -(pos + (1 - t) * jax.nn.log_sigmoid(-x))
        if state.get("weight") is not None:
            loss = loss * state["weight"]
        return _reduce(loss, reduction)
    return ref


def _kl_ref(reduction, log_target):
    def ref(state, x, t, training):
        loss = jnp.exp(t) * (t - x) if log_target else jax.scipy.special.xlogy(t, t) - t * x
        if reduction == "batchmean":
            return jnp.sum(loss) / x.shape[0]
        return _reduce(loss, reduction)
    return ref


def _cosine_ref(reduction, margin):
    def ref(state, x1, x2, y, training):
        axis = x1.ndim - 1
        dot = jnp.sum(x1 * x2, axis=axis)
        cos = dot / jnp.sqrt((jnp.sum(x1 ** 2, axis=axis) + 1e-12) * (jnp.sum(x2 ** 2, axis=axis) + 1e-12))
        loss = jnp.where(y == 1, 1 - cos, jnp.where(y == -1, jnp.maximum(cos - margin, 0.0), 0.0))
        return _reduce(loss, reduction)
    return ref


def _triplet_ref(reduction, margin=1.0, p=2.0, eps=1e-6, swap=False):
    def dist(a, b):
        return jnp.sum(jnp.abs(a - b + eps) ** p, axis=-1) ** (1 / p)

    def ref(state, a, pos, neg, training):
        d_neg = dist(a, neg)
        if swap:
            d_neg = jnp.minimum(d_neg, dist(pos, neg))
        return _reduce(jnp.maximum(dist(a, pos) - d_neg + margin, 0.0), reduction)
    return ref


def _w(t):
    return t.tensor(W3)


CASES = [
    LayerCase("MSELoss", nn.MSELoss, _pair(3, 4), lambda t: t.nn.MSELoss(), _mse_ref("mean")),
    LayerCase("MSELoss-none", lambda: nn.MSELoss(reduction="none"), _pair(3, 4),
              lambda t: t.nn.MSELoss(reduction="none"), _mse_ref("none")),
    LayerCase("MSELoss-legacy-sum", lambda: nn.MSELoss(size_average=False), _pair(2, 3),
              lambda t: t.nn.MSELoss(size_average=False), _mse_ref("sum")),
    LayerCase("L1Loss-sum", lambda: nn.L1Loss(reduction="sum"), _pair(3, 4),
              lambda t: t.nn.L1Loss(reduction="sum"), _l1_ref("sum")),
    LayerCase("L1Loss-legacy-none", lambda: nn.L1Loss(reduce=False), _pair(3, 4),
              lambda t: t.nn.L1Loss(reduce=False), _l1_ref("none")),
    LayerCase("SmoothL1Loss-beta", lambda: nn.SmoothL1Loss(beta=0.5), _pair(3, 4),
              lambda t: t.nn.SmoothL1Loss(beta=0.5), _smooth_l1_ref("mean", 0.5)),
    LayerCase("SmoothL1Loss-beta0-none", lambda: nn.SmoothL1Loss(reduction="none", beta=0.0), _pair(3, 4),
              lambda t: t.nn.SmoothL1Loss(reduction="none", beta=0.0), _smooth_l1_ref("none", 0.0)),
    LayerCase("HuberLoss", nn.HuberLoss, _pair(3, 4), lambda t: t.nn.HuberLoss(), _huber_ref("mean", 1.0)),
    LayerCase("HuberLoss-delta-sum", lambda: nn.HuberLoss(reduction="sum", delta=0.7), _pair(3, 4),
              lambda t: t.nn.HuberLoss(reduction="sum", delta=0.7), _huber_ref("sum", 0.7)),
    LayerCase("CrossEntropyLoss", nn.CrossEntropyLoss, _classes(3, (4, 3)), lambda t: t.nn.CrossEntropyLoss(),
              _ce_ref("mean")),
    LayerCase("CrossEntropyLoss-weight-ignore", lambda: nn.CrossEntropyLoss(fg.tensor(W3), ignore_index=-100),
              _classes(3, (5, 3), ignore=-100), lambda t: t.nn.CrossEntropyLoss(_w(t), ignore_index=-100),
              _ce_ref("mean")),
    LayerCase("CrossEntropyLoss-weight-smooth-ignore1",
              lambda: nn.CrossEntropyLoss(fg.tensor(W3), ignore_index=1, label_smoothing=0.2),
              _classes(3, (5, 3), ignore=1),
              lambda t: t.nn.CrossEntropyLoss(_w(t), ignore_index=1, label_smoothing=0.2),
              _ce_ref("mean", ignore_index=1, smoothing=0.2)),
    LayerCase("CrossEntropyLoss-smooth-sum", lambda: nn.CrossEntropyLoss(reduction="sum", label_smoothing=0.1),
              _classes(3, (4, 3), ignore=-100), lambda t: t.nn.CrossEntropyLoss(reduction="sum", label_smoothing=0.1),
              _ce_ref("sum", smoothing=0.1)),
    LayerCase("CrossEntropyLoss-spatial-none", lambda: nn.CrossEntropyLoss(reduction="none", ignore_index=2),
              _classes(3, (2, 3, 4), ignore=2, spatial=(4,)),
              lambda t: t.nn.CrossEntropyLoss(reduction="none", ignore_index=2), _ce_ref("none", ignore_index=2)),
    LayerCase("CrossEntropyLoss-unbatched", nn.CrossEntropyLoss, _classes(3, (3,)),
              lambda t: t.nn.CrossEntropyLoss(), _ce_ref("mean")),
    LayerCase("CrossEntropyLoss-probs-weight-smooth",
              lambda: nn.CrossEntropyLoss(fg.tensor(W3), label_smoothing=0.3), _probs(4, 3),
              lambda t: t.nn.CrossEntropyLoss(_w(t), label_smoothing=0.3), _ce_ref("mean", smoothing=0.3)),
    LayerCase("NLLLoss", nn.NLLLoss, _classes(3, (4, 3)), lambda t: t.nn.NLLLoss(), _nll_ref("mean")),
    LayerCase("NLLLoss-weight-ignore", lambda: nn.NLLLoss(fg.tensor(W3), ignore_index=0),
              _classes(3, (5, 3), ignore=0), lambda t: t.nn.NLLLoss(_w(t), ignore_index=0),
              _nll_ref("mean", ignore_index=0)),
    LayerCase("NLLLoss-2d-sum", lambda: nn.NLLLoss(reduction="sum"), _classes(3, (2, 3, 2, 2), spatial=(2, 2)),
              lambda t: t.nn.NLLLoss(reduction="sum"), _nll_ref("sum")),
    LayerCase("BCELoss", nn.BCELoss, _bce_inputs(3, 4), lambda t: t.nn.BCELoss(), _bce_ref("mean")),
    LayerCase("BCELoss-weight-none", lambda: nn.BCELoss(fg.tensor([0.5, 2.0, 1.0, 0.1]), reduction="none"),
              _bce_inputs(3, 4), lambda t: t.nn.BCELoss(t.tensor([0.5, 2.0, 1.0, 0.1]), reduction="none"),
              _bce_ref("none")),
    LayerCase("BCEWithLogitsLoss", nn.BCEWithLogitsLoss, _bce_inputs(3, 4), lambda t: t.nn.BCEWithLogitsLoss(),
              _bce_logits_ref("mean")),
    LayerCase("BCEWithLogitsLoss-weights-sum",
              lambda: nn.BCEWithLogitsLoss(fg.tensor([[1.5], [0.5], [1.0]]), reduction="sum",
                                           pos_weight=fg.tensor([2.0, 0.5, 1.0, 3.0])),
              lambda rng: (3 * rng.standard_normal((3, 4)), rng.uniform(0.0, 1.0, (3, 4))),
              lambda t: t.nn.BCEWithLogitsLoss(t.tensor([[1.5], [0.5], [1.0]]), reduction="sum",
                                               pos_weight=t.tensor([2.0, 0.5, 1.0, 3.0])),
              _bce_logits_ref("sum")),
    LayerCase("KLDivLoss-batchmean", lambda: nn.KLDivLoss(reduction="batchmean"), _kl_inputs(False),
              lambda t: t.nn.KLDivLoss(reduction="batchmean"), _kl_ref("batchmean", False)),
    LayerCase("KLDivLoss-logtarget-mean", lambda: nn.KLDivLoss(log_target=True), _kl_inputs(True),
              lambda t: t.nn.KLDivLoss(log_target=True), _kl_ref("mean", True)),
    LayerCase("KLDivLoss-none", lambda: nn.KLDivLoss(reduction="none"), _kl_inputs(False),
              lambda t: t.nn.KLDivLoss(reduction="none"), _kl_ref("none", False)),
    LayerCase("CosineEmbeddingLoss", lambda: nn.CosineEmbeddingLoss(margin=-0.2), _cosine_inputs(4, 5),
              lambda t: t.nn.CosineEmbeddingLoss(margin=-0.2), _cosine_ref("mean", -0.2)),
    LayerCase("CosineEmbeddingLoss-none", lambda: nn.CosineEmbeddingLoss(reduction="none"), _cosine_inputs(4, 5),
              lambda t: t.nn.CosineEmbeddingLoss(reduction="none"), _cosine_ref("none", 0.0)),
    LayerCase("CosineEmbeddingLoss-unbatched-sum", lambda: nn.CosineEmbeddingLoss(margin=-0.5, reduction="sum"),
              _cosine_inputs(0, 5), lambda t: t.nn.CosineEmbeddingLoss(margin=-0.5, reduction="sum"),
              _cosine_ref("sum", -0.5)),
    LayerCase("TripletMarginLoss", nn.TripletMarginLoss, _triplet_inputs, lambda t: t.nn.TripletMarginLoss(),
              _triplet_ref("mean")),
    LayerCase("TripletMarginLoss-p1-swap-none",
              lambda: nn.TripletMarginLoss(margin=2.0, p=1.0, swap=True, reduction="none"), _triplet_inputs,
              lambda t: t.nn.TripletMarginLoss(margin=2.0, p=1.0, swap=True, reduction="none"),
              _triplet_ref("none", margin=2.0, p=1.0, swap=True)),
]

# Losses do not depend on the mode; eval mode is checked on a few of them only.
EVAL_CASES = {"CrossEntropyLoss-weight-smooth-ignore1", "BCEWithLogitsLoss-weights-sum", "MSELoss-none"}
PARAMS = [pytest.param(c, m, id=f"{c.name}-{m}") for c in CASES for m in MODES if m == "train" or c.name in EVAL_CASES]

pytestmark = [pytest.mark.filterwarnings("ignore:size_average and reduce args will be deprecated"),
              pytest.mark.filterwarnings("ignore:reduction. .mean. divides the total loss")]


@pytest.mark.parametrize("case, mode", PARAMS)
def test_against_reference(case, mode, node_by_node):
    check_against_reference(case, mode)


@pytest.mark.parametrize("case, mode", PARAMS)
def test_against_torch(case, mode, node_by_node):
    torch = pytest.importorskip("torch")
    check_against_torch(case, mode, torch)


def test_case_names_unique():
    assert len(set(case_ids(CASES))) == len(CASES)


# -- reprs, buffers, legacy arguments ----------------------------------------------------------------
def _pairs(torch):
    w = [1.0, 2.0, 3.0]
    return [
        (nn.MSELoss(), torch.nn.MSELoss()), (nn.L1Loss(reduction="sum"), torch.nn.L1Loss(reduction="sum")),
        (nn.SmoothL1Loss(beta=0.5), torch.nn.SmoothL1Loss(beta=0.5)),
        (nn.HuberLoss(delta=2.0), torch.nn.HuberLoss(delta=2.0)),
        (nn.CrossEntropyLoss(fg.tensor(w), label_smoothing=0.1),
         torch.nn.CrossEntropyLoss(torch.tensor(w), label_smoothing=0.1)),
        (nn.NLLLoss(ignore_index=3), torch.nn.NLLLoss(ignore_index=3)), (nn.BCELoss(), torch.nn.BCELoss()),
        (nn.BCEWithLogitsLoss(pos_weight=fg.tensor(w)), torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(w))),
        (nn.KLDivLoss(reduction="batchmean"), torch.nn.KLDivLoss(reduction="batchmean")),
        (nn.CosineEmbeddingLoss(0.5), torch.nn.CosineEmbeddingLoss(0.5)),
        (nn.TripletMarginLoss(swap=True), torch.nn.TripletMarginLoss(swap=True)),
    ]


def test_reprs_and_attributes_match_torch():
    torch = pytest.importorskip("torch")
    for ours, theirs in _pairs(torch):
        assert repr(ours) == repr(theirs)
        for name in ("reduction", "ignore_index", "label_smoothing", "log_target", "beta", "delta", "margin",
                     "p", "eps", "swap"):
            assert getattr(ours, name, None) == getattr(theirs, name, None), (type(ours).__name__, name)
        assert list(ours.state_dict()) == list(theirs.state_dict())
        assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]


def test_reprs_without_torch():
    assert repr(nn.CrossEntropyLoss(label_smoothing=0.1)) == "CrossEntropyLoss()"
    assert repr(nn.TripletMarginLoss(margin=2.0)) == "TripletMarginLoss()"


def test_weight_buffers_follow_module_conversions():
    loss_fn = nn.BCEWithLogitsLoss(fg.tensor([1.0, 2.0]), pos_weight=fg.tensor([3.0, 4.0]))
    assert list(loss_fn.state_dict()) == ["weight", "pos_weight"]
    assert [p for p in loss_fn.parameters()] == []
    loss_fn.double()
    assert loss_fn.weight.dtype == np.float64 and loss_fn.pos_weight.dtype == np.float64
    ce = nn.CrossEntropyLoss()
    assert ce.weight is None and list(ce.state_dict()) == []
    ce2 = nn.CrossEntropyLoss(fg.tensor([1.0, 1.0, 1.0], dtype=fg.float64))
    ce2.load_state_dict({"weight": np.array([0.0, 1.0, 0.0])})
    x, y = fg.tensor(np.eye(3)), fg.tensor(np.array([0, 1, 2]))
    expected = -jax.nn.log_softmax(jnp.eye(3), axis=1)[1, 1]
    np.testing.assert_allclose(ce2(x, y).item(), expected, rtol=1e-12)


@pytest.mark.parametrize("size_average, reduce, expected", [
    (None, None, "mean"), (True, None, "mean"), (False, None, "sum"), (None, False, "none"),
    (True, False, "none"), (False, True, "sum"), (True, True, "mean"),
])
def test_legacy_size_average_reduce(size_average, reduce, expected):
    legacy = size_average is not None or reduce is not None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for cls in (nn.MSELoss, nn.L1Loss, nn.SmoothL1Loss, nn.KLDivLoss, nn.BCELoss, nn.NLLLoss,
                    nn.CrossEntropyLoss, nn.BCEWithLogitsLoss, nn.CosineEmbeddingLoss, nn.TripletMarginLoss):
            assert cls(size_average=size_average, reduce=reduce, reduction="sum").reduction == \
                (expected if legacy else "sum")
    messages = [str(w.message) for w in caught]
    assert all(f"reduction='{expected}'" in m for m in messages)
    assert len(messages) == (10 if legacy else 0)


# -- errors --------------------------------------------------------------------------------------------
def test_invalid_reduction_is_reported_with_the_layer_name():
    with pytest.raises(ValueError, match="MSELoss: 'avg' is not a valid value for reduction"):
        nn.MSELoss(reduction="avg")
    with pytest.raises(ValueError, match="CrossEntropyLoss: 'batchmean'"):
        nn.CrossEntropyLoss(reduction="batchmean")
    assert nn.KLDivLoss(reduction="batchmean").reduction == "batchmean"
    with pytest.raises(ValueError, match="TripletMarginLoss: expected margin to be greater than 0"):
        nn.TripletMarginLoss(margin=0.0)


def test_forward_errors_name_the_layer():
    x = fg.tensor(np.zeros((2, 3)))
    with pytest.raises(OpError, match=r"cross_entropy: .*target must have shape \(2,\)"):
        nn.CrossEntropyLoss()(x, fg.tensor(np.array([0, 1, 2])))
    with pytest.raises(IndexError, match=r"nll_loss: target 3 is out of bounds for 3 classes"):
        nn.NLLLoss()(x, fg.tensor(np.array([0, 3])))
    with pytest.raises(TypeError, match=r"mse_loss: argument 'target' must be a Tensor"):
        nn.MSELoss()(x, np.zeros((2, 3)))
    with pytest.raises(OpError, match=r"cosine_embedding_loss: a 1D target tensor expects 2D"):
        nn.CosineEmbeddingLoss()(fg.tensor(np.zeros(3)), fg.tensor(np.zeros(3)), fg.tensor(np.array([1])))
    with pytest.raises(OpError, match="0D or 1D target"):
        nn.CosineEmbeddingLoss()(x, x, fg.tensor(np.ones((2, 1))))
    with pytest.raises(OpError, match="one label per row"):
        nn.CosineEmbeddingLoss()(x, x, fg.tensor(np.array([1, -1, 1])))


def test_cosine_embedding_loss_ignores_other_labels_and_float_targets():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    out = nn.CosineEmbeddingLoss(reduction="none")(fg.tensor(a), fg.tensor(b), fg.tensor(np.array([1.0, 0.0, -1.0])))
    cos = np.sum(a * b, 1) / np.sqrt((np.sum(a * a, 1) + 1e-12) * (np.sum(b * b, 1) + 1e-12))
    np.testing.assert_allclose(out.numpy(), [1 - cos[0], 0.0, max(cos[2], 0.0)], rtol=1e-12, atol=1e-15)


def test_losses_are_traceable_under_jit():
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((4, 3)), np.array([0, 2, 1, 2])
    loss_fn = nn.CrossEntropyLoss(fg.tensor(W3), label_smoothing=0.1)

    def f(logits, target):
        return loss_fn(fg.tensor(logits), fg.tensor(target)).array

    np.testing.assert_allclose(jax.jit(f)(x, y), f(x, y), rtol=1e-12)
    cos = nn.CosineEmbeddingLoss(margin=0.1)

    def g(a, b, t):
        return cos(fg.tensor(a), fg.tensor(b), fg.tensor(t)).array

    args = (rng.standard_normal((4, 3)), rng.standard_normal((4, 3)), np.array([1, -1, -1, 1]))
    np.testing.assert_allclose(jax.jit(g)(*args), g(*args), rtol=1e-12)


def test_class_target_range_is_read_once_across_reshapes(monkeypatch):
    """The targets' range check reads the host once per array; a reshape (``targets.view(-1)``, a new
    array every step of a sequence model) inherits it instead of waiting for the queue again."""
    from fgraph.ops import _known_ranges

    reads = []
    real = _known_ranges._read
    monkeypatch.setattr(_known_ranges, "_read", lambda array: reads.append(array) or real(array))
    logits = fg.tensor(np.zeros((2, 3, 4)))
    targets = fg.tensor(np.array([[0, 1, 2], [3, 1, 1]]))
    for _ in range(3):
        fg.nn.functional.cross_entropy(logits.view(-1, 4), targets.view(-1))
    assert len(reads) == 1
    fg.nn.functional.cross_entropy(logits.view(-1, 4), targets.view(-1), ignore_index=3)  # another ignored value: one more read
    assert len(reads) == 2
    with pytest.raises(IndexError, match=r"cross_entropy: target 3 is out of bounds for 3 classes"):
        fg.nn.functional.cross_entropy(logits[..., :3].reshape(6, 3), targets.reshape(6))
    bad = fg.tensor(np.array([[0, 4]]))
    with pytest.raises(IndexError, match=r"target 4 is out of bounds"):
        fg.nn.functional.cross_entropy(fg.tensor(np.zeros((2, 4))), bad.view(-1))
