"""Loss functions (fgraph/nn/functional/loss.py) against pure-JAX references.

The references restate PyTorch's definitions (weighted means, ignore_index, label
smoothing, the -100 log clamp...) in ``jax.numpy``. Integer class targets are
non-differentiable constants drawn per example (``Case.consts``), as are the
per-class ``weight``/``pos_weight`` arrays (float32, which promotes to either test
dtype). Differences ``input - target`` from GRID_A/GRID_B stay 0.05 away from every
multiple of 0.5, the kinks of l1/smooth_l1/huber for the betas and deltas used.
Every loss here has second derivatives (in PyTorch too): FIRST_ORDER_ONLY is empty.
"""
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fgraph.nn.functional as F
from op_harness import Case, GRID_A, GRID_B, OpEntry, POSITIVE, REAL, TF, cases

PROB = st.floats(0.05, 0.95)
CLASS_WEIGHT = np.array([0.5, 1.0, 2.0, 1.5], np.float32)


def _reduce(loss, reduction):
    if reduction == "mean":
        return jnp.mean(loss)
    if reduction == "sum":
        return jnp.sum(loss)
    return loss


def _pair_cases(extra_params=({},)):
    return cases(*(
        Case(shapes, dict(reduction=r, **p))
        for shapes, r in [(((2, 3), (2, 3)), "mean"), (((2, 3), (3,)), "sum")]
        for p in extra_params
    ))


# -- regression --------------------------------------------------------------------------------------------------
def _mse_ref(x, t, reduction="mean"):
    return _reduce((x - t) ** 2, reduction)


def _weighted_fg(fn):
    def run(x, t, w, **params):
        return fn(x, t, weight=w, **params)

    return run


def _mse_w_ref(x, t, w, reduction="mean"):
    loss = (x - t) ** 2 * w
    return jnp.sum(loss) / jnp.sum(w) if reduction == "mean" else _reduce(loss, reduction)


def _mse_broadcast(x, t, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # PyTorch's warning for a target of another shape
        return F.mse_loss(x, t, **params)


def _l1_ref(x, t, reduction="mean"):
    return _reduce(jnp.abs(x - t), reduction)


def _smooth_l1_ref(x, t, reduction="mean", beta=1.0):
    d = jnp.abs(x - t)
    loss = d if beta == 0 else jnp.where(d < beta, 0.5 * (x - t) ** 2 / beta, d - 0.5 * beta)
    return _reduce(loss, reduction)


def _huber_ref(x, t, reduction="mean", delta=1.0):
    d = jnp.abs(x - t)
    return _reduce(jnp.where(d < delta, 0.5 * (x - t) ** 2, delta * (d - 0.5 * delta)), reduction)


def _huber_w_ref(x, t, w, reduction="mean", delta=1.0):
    return _reduce(_huber_ref(x, t, "none", delta) * w, reduction)


# -- classification with class indices -----------------------------------------------------------------------
@st.composite
def class_cases(draw, templates):
    """Logits/log-probs shape, integer targets (some ignored), optional class weights."""
    shape, reduction, weighted, ignore_index, smoothing = draw(st.sampled_from(templates))
    c = shape[1] if len(shape) > 1 else shape[0]
    tshape = shape[:1] + shape[2:] if len(shape) > 1 else ()
    target = draw(hnp.arrays(np.int64, tshape, elements=st.integers(0, c - 1)))
    params = dict(reduction=reduction, ignore_index=ignore_index)
    if smoothing is not None:
        params["label_smoothing"] = smoothing
    consts = (target, CLASS_WEIGHT[:c]) if weighted else (target,)
    return Case((shape,), params, consts)


def _nll_ref(x, t, w=None, reduction="mean", ignore_index=-100, label_smoothing=0.0):
    class_dim = 0 if x.ndim == 1 else 1
    c = x.shape[class_dim]
    valid = t != ignore_index
    safe = jnp.where(valid, t, 0)
    picked = jnp.squeeze(jnp.take_along_axis(x, jnp.expand_dims(safe, class_dim), axis=class_dim), class_dim)
    wt = jnp.ones(c, x.dtype) if w is None else w
    sw = jnp.where(valid, wt[safe], 0.0)
    loss = jnp.where(valid, -picked * wt[safe], 0.0)  # all ignored: nan loss, zero gradient (as PyTorch)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return jnp.sum(loss)
    return jnp.sum(loss) / jnp.sum(sw)


def _cross_entropy_ref(x, t, w=None, reduction="mean", ignore_index=-100, label_smoothing=0.0):
    class_dim = 0 if x.ndim == 1 else 1
    c = x.shape[class_dim]
    logp = jax.nn.log_softmax(x, axis=class_dim)
    nll = _nll_ref(logp, t, w, reduction, ignore_index)
    if label_smoothing == 0:
        return nll
    shape = [1] * x.ndim
    shape[class_dim] = c
    wb = 1.0 if w is None else w.reshape(shape)
    valid = t != ignore_index
    smooth = jnp.where(valid, -jnp.sum(logp * wb, axis=class_dim), 0.0)
    if reduction == "mean":
        wt = jnp.ones(c, x.dtype) if w is None else w
        smooth = jnp.sum(smooth) / jnp.sum(jnp.where(valid, wt[jnp.where(valid, t, 0)], 0.0))
    else:
        smooth = _reduce(smooth, reduction)
    return (1 - label_smoothing) * nll + smooth * (label_smoothing / c)


def _class_fn(fn):
    def run(x, t, w=None, **params):
        return fn(x, t, w, **params)

    return run


# -- classification with probabilities and binary targets ------------------------------------------------------
def _soft_ce_cases():
    return cases(
        Case(((2, 3), (2, 3)), dict(reduction="mean", label_smoothing=0.2)),
        Case(((2, 3, 2), (2, 3, 2)), dict(reduction="sum"), (CLASS_WEIGHT[:3],)),
    )


def _soft_ce_ref(x, t, w=None, reduction="mean", label_smoothing=0.0):
    class_dim = 0 if x.ndim == 1 else 1
    c = x.shape[class_dim]
    logp = jax.nn.log_softmax(x, axis=class_dim)
    t = t * (1 - label_smoothing) + label_smoothing / c
    shape = [1] * x.ndim
    shape[class_dim] = c
    prod = logp * t if w is None else logp * t * w.reshape(shape)
    if reduction == "none":
        return -jnp.sum(prod, axis=class_dim)
    if reduction == "sum":
        return -jnp.sum(prod)
    return -jnp.sum(prod) / (x.size / c)


def _soft_ce(x, t, w=None, **params):
    return F.cross_entropy(x, t, w, **params)


def _bce_ref(x, t, w=None, reduction="mean"):
    loss = -(t * jnp.maximum(jnp.log(x), -100) + (1 - t) * jnp.maximum(jnp.log(1 - x), -100))
    return _reduce(loss if w is None else loss * w, reduction)


def _bce(x, t, w=None, **params):
    return F.binary_cross_entropy(x, t, w, **params)


def _bce_logits_ref(x, t, w=None, pos_weight=None, reduction="mean"):
    log_sig = jax.nn.log_sigmoid(x)
    if pos_weight is not None:
        log_sig = log_sig * ((pos_weight - 1) * t + 1)
    loss = (1 - t) * x - log_sig
    return _reduce(loss if w is None else loss * w, reduction)


def _bce_logits(x, t, w=None, pos_weight=None, **params):
    return F.binary_cross_entropy_with_logits(x, t, w, pos_weight=pos_weight, **params)


def _kl_ref(x, t, reduction="mean", log_target=False):
    if log_target:
        loss = jnp.exp(t) * (t - x)
    else:
        loss = t * jnp.log(t) - t * x
    if reduction == "batchmean":
        return jnp.sum(loss) / x.shape[0]
    return _reduce(loss, reduction)


def _triplet_ref(a, p, n, margin=1.0, p_norm=2.0, eps=1e-6, swap=False, reduction="mean"):
    def dist(u, v):
        d = jnp.abs(u - v + eps)
        if p_norm == 2:
            return jnp.sqrt(jnp.sum(d * d, axis=-1))
        return jnp.sum(d**p_norm, axis=-1) ** (1.0 / p_norm)

    d_neg = dist(a, n)
    if swap:
        d_neg = jnp.minimum(d_neg, dist(p, n))
    return _reduce(jnp.maximum(margin + dist(a, p) - d_neg, 0.0), reduction)


def _triplet(a, p, n, p_norm=2.0, **params):
    return F.triplet_margin_loss(a, p, n, p=p_norm, **params)


#: (shape, reduction, class weights?, ignore_index, label_smoothing or None): each compiles its own kernels.
NLL_TEMPLATES = [
    ((2, 3), "mean", True, 1, None),
    ((3,), "sum", True, -100, None),
]
CE_TEMPLATES = [
    ((2, 3), "mean", True, 1, 0.1),
    ((2, 3, 2), "none", False, -100, 0.0),
    ((0, 3), "mean", False, -100, 0.1),
]

ONES_W = np.array([[1.0, 0.5, 2.0], [0.25, 1.0, 1.5]], np.float32)

TABLE = [
    OpEntry("mse_loss", _mse_broadcast, _mse_ref, 2, cases(
        Case(((2, 3), (2, 3)), dict(reduction="mean")), Case(((2, 3), (3,)), dict(reduction="sum")),
        Case(((2, 1), (3,)), dict(reduction="none")), Case(((0, 3), (3,)), dict(reduction="mean")),
    ), REAL, max_examples=8),
    OpEntry("mse_loss_weighted", _weighted_fg(F.mse_loss), _mse_w_ref, 2,
            cases(Case(((2, 3), (2, 3)), dict(reduction="mean"), (ONES_W,))), REAL, max_examples=4),
    OpEntry("l1_loss", F.l1_loss, _l1_ref, 2, cases(Case(((2, 3), (2, 3)), dict(reduction="mean"))),
            (GRID_A, GRID_B), max_examples=5),
    OpEntry("smooth_l1_loss", F.smooth_l1_loss, _smooth_l1_ref, 2,
            cases(*(Case(((2, 3), (2, 3)), dict(reduction="mean", beta=b)) for b in (0.5, 0.0))),
            (GRID_A, GRID_B), max_examples=8),
    OpEntry("huber_loss", F.huber_loss, _huber_ref, 2,
            cases(Case(((2, 3), (2, 3)), dict(reduction="sum", delta=1.5))),
            (GRID_A, GRID_B), max_examples=5),
    OpEntry("huber_loss_weighted", _weighted_fg(F.huber_loss), _huber_w_ref, 2,
            cases(Case(((2, 3), (2, 3)), dict(reduction="mean"), (ONES_W,))), (GRID_A, GRID_B), max_examples=4),
    OpEntry("nll_loss", _class_fn(F.nll_loss), _nll_ref, 1, class_cases(NLL_TEMPLATES), REAL, max_examples=10),
    OpEntry("cross_entropy", _class_fn(F.cross_entropy), _cross_entropy_ref, 1, class_cases(CE_TEMPLATES), REAL,
            max_examples=10),
    OpEntry("cross_entropy_probs", _soft_ce, _soft_ce_ref, 2, _soft_ce_cases(), (REAL, POSITIVE), max_examples=8),
    OpEntry("binary_cross_entropy", _bce, _bce_ref, 2, cases(
        Case(((2, 3), (2, 3)), dict(reduction="mean")),
        Case(((2, 3), (2, 3)), dict(reduction="none"), (ONES_W,)),
    ), PROB, max_examples=8),
    OpEntry("binary_cross_entropy_with_logits", _bce_logits, _bce_logits_ref, 2, cases(
        Case(((2, 3), (2, 3)), dict(reduction="mean")),
        Case(((2, 3), (2, 3)), dict(reduction="sum"), (ONES_W, CLASS_WEIGHT[:3])),
    ), (REAL, PROB), max_examples=8),
    OpEntry("kl_div", F.kl_div, _kl_ref, 2, cases(
        Case(((2, 3), (2, 3)), dict(reduction="batchmean")),
        Case(((2, 3), (2, 3)), dict(reduction="sum", log_target=True)),
    ), (REAL, POSITIVE), max_examples=8),
    OpEntry("triplet_margin_loss", _triplet, _triplet_ref, 3, cases(
        Case(((2, 3), (2, 3), (2, 3)), dict(reduction="none", margin=2.0, p_norm=1.0, swap=True)),
        Case(((3,), (3,), (3,)), dict(reduction="mean")),
    ), REAL, max_examples=8),
]

#: Entries whose op has no second derivative in PyTorch: none.
FIRST_ORDER_ONLY: dict = {}


def _t(c, dtype=None):
    """A constant as a torch tensor (class indices as int64, weights in the inputs' dtype)."""
    import torch

    if c is None:
        return None
    t = torch.as_tensor(np.asarray(c))
    if not t.is_floating_point():
        return t.long()
    return t if dtype is None else t.to(dtype)


def _torch_mse_broadcast(x, t, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return TF.mse_loss(x, t, **params)


#: The PyTorch oracle (``torch.nn.functional``), with the entries' call signatures.
TORCH = {
    "mse_loss": _torch_mse_broadcast,
    "mse_loss_weighted": lambda x, t, w, **p: TF.mse_loss(x, t, weight=_t(w, x.dtype), **p),
    "l1_loss": lambda x, t, **p: TF.l1_loss(x, t, **p),
    "smooth_l1_loss": lambda x, t, **p: TF.smooth_l1_loss(x, t, **p),
    "huber_loss": lambda x, t, **p: TF.huber_loss(x, t, **p),
    "huber_loss_weighted": lambda x, t, w, **p: TF.huber_loss(x, t, weight=_t(w, x.dtype), **p),
    "nll_loss": lambda x, t, w=None, **p: TF.nll_loss(x, _t(t), _t(w, x.dtype), **p),
    "cross_entropy": lambda x, t, w=None, **p: TF.cross_entropy(x, _t(t), _t(w, x.dtype), **p),
    "cross_entropy_probs": lambda x, t, w=None, **p: TF.cross_entropy(x, t, _t(w, x.dtype), **p),
    "binary_cross_entropy": lambda x, t, w=None, **p: TF.binary_cross_entropy(x, t, _t(w, x.dtype), **p),
    "binary_cross_entropy_with_logits": lambda x, t, w=None, pos_weight=None, **p: TF.binary_cross_entropy_with_logits(
        x, t, _t(w, x.dtype), pos_weight=_t(pos_weight, x.dtype), **p),
    "kl_div": lambda x, t, **p: TF.kl_div(x, t, **p),
    "triplet_margin_loss": lambda a, pos, neg, p_norm=2.0, **p: TF.triplet_margin_loss(a, pos, neg, p=p_norm, **p),
}


#: Entries whose ops refuse complex inputs (an OpError); every other entry is also checked on complex ones.
REAL_ONLY = {
    "mse_loss", "mse_loss_weighted", "smooth_l1_loss", "huber_loss", "huber_loss_weighted", "nll_loss",
    "cross_entropy", "cross_entropy_probs", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div"
}
#: torch's weight= path squares complex differences; its plain mse_loss refuses them, as fgraph does.
TORCH_TAKES_COMPLEX = {"mse_loss_weighted"}
