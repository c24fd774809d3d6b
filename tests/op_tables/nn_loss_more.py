"""Margin, ranking, likelihood and CTC losses (fgraph/nn/functional/loss_more.py, ctc.py) against
pure-JAX references that restate PyTorch's definitions.

Value domains keep every hinge away from its kink: with GRID_A/GRID_B inputs,
``x1 - x2`` stays 0.05 from every multiple of 0.5 (margin_ranking's margins 0 and 0.5);
multi_margin draws every input from GRID_A (differences within 0.2 of a multiple of
0.5) with margins 0.75/1.25; multilabel_margin (margin 1) draws from STEP04, whose
differences stay 0.1 from 1. poisson_nll's Stirling term jumps at target 1, avoided.
``ctc_loss`` is checked through ``log_softmax`` (its usual input; PyTorch's raw gradient
differs, see tests/test_nn_functional_more.py) against a probability-space alpha
recursion written out with Python loops, an independent formulation of the log-space scan.
"""
import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st

import fgraph.nn.functional as F
from op_harness import Case, GRID_A, GRID_B, OpEntry, POSITIVE, REAL, TF, cases

PM = np.array([[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0]], np.float32)  # +-1 labels
CLASS_W = np.array([0.5, 1.0, 2.0, 1.5], np.float32)
STEP04 = st.builds(lambda k, e: 0.4 * k + e, st.integers(-4, 4), st.floats(-0.05, 0.05))
AWAY_FROM_1 = st.one_of(st.floats(0.2, 0.8), st.floats(1.2, 2.5))
PROB = st.floats(0.05, 0.95)


def _reduce(loss, reduction):
    if reduction == "mean":
        return jnp.mean(loss)
    if reduction == "sum":
        return jnp.sum(loss)
    return loss


def _gaussian_ref(x, t, v, reduction="mean", full=False, eps=1e-6):
    if v.shape != x.shape and v.shape == x.shape[:-1]:
        v = v[..., None]
    v = v + jax.lax.stop_gradient(jnp.maximum(v, eps) - v)  # PyTorch clamps in place under no_grad
    loss = 0.5 * (jnp.log(v) + (x - t) ** 2 / v) + (0.5 * np.log(2 * np.pi) if full else 0.0)
    return _reduce(loss, reduction)


def _poisson_ref(x, t, reduction="mean", log_input=True, full=False, eps=1e-8):
    loss = jnp.exp(x) - t * x if log_input else x - t * jnp.log(x + eps)
    if full:
        loss = loss + jnp.where(t > 1, t * jnp.log(t) - t + 0.5 * jnp.log(2 * np.pi * t), 0.0)
    return _reduce(loss, reduction)


def _soft_margin_ref(x, y, reduction="mean"):
    return _reduce(jnp.log1p(jnp.exp(-y * x)), reduction)


def _hinge_ref(x, y, reduction="mean", margin=1.0):
    return _reduce(jnp.where(y == 1, x, jnp.maximum(margin - x, 0.0)), reduction)


def _ranking_ref(x1, x2, y, reduction="mean", margin=0.0):
    return _reduce(jnp.maximum(-y * (x1 - x2) + margin, 0.0), reduction)


def _multi_margin_ref(x, y, w=None, reduction="mean", p=1, margin=1.0):
    """PyTorch's kernel, one sample and class at a time (``y`` and ``w`` concrete)."""
    xs = x[None] if x.ndim == 1 else x
    ys = np.atleast_1d(y)
    rows = []
    for n, yn in enumerate(ys):
        terms = [jnp.maximum(margin - xs[n, yn] + xs[n, i], 0.0) ** p for i in range(xs.shape[1]) if i != yn]
        row = sum(terms) / xs.shape[1]
        rows.append(row * (1.0 if w is None else w[yn]))
    loss = jnp.stack(rows)
    return _reduce(loss if x.ndim == 2 else loss[0], reduction)


def _multilabel_ref(x, y, reduction="mean"):
    xs = x[None] if x.ndim == 1 else x
    ys = y[None] if y.ndim == 1 else y
    rows = []
    for n in range(xs.shape[0]):
        labels = []
        for v in ys[n]:
            if v < 0:
                break
            labels.append(int(v))
        others = [i for i in range(xs.shape[1]) if i not in labels]
        terms = [jnp.maximum(1 - (xs[n, j] - xs[n, i]), 0.0) for j in labels for i in others]
        rows.append(sum(terms, jnp.zeros((), x.dtype)) / xs.shape[1])
    loss = jnp.stack(rows)
    return _reduce(loss if x.ndim == 2 else loss[0], reduction)


def _multilabel_soft_ref(x, t, w=None, reduction="mean"):
    loss = -(t * jax.nn.log_sigmoid(x) + (1 - t) * jax.nn.log_sigmoid(-x))
    if w is not None:
        loss = loss * w
    return _reduce(jnp.mean(loss, axis=-1), reduction)


def _ctc_ref(x, targets, il, tl, reduction="mean", zero_infinity=False, blank=0):
    """Probability-space alpha recursion of the CTC forward algorithm, unrolled over the frames
    (concrete targets and lengths; small T), all samples at once."""
    t_len, n = x.shape[0], x.shape[1]
    p = jnp.exp(jax.nn.log_softmax(x, axis=2))
    width = 2 * targets.shape[1] + 1
    lab = np.full((n, width), blank)
    lab[:, 1::2] = targets
    skip = np.zeros((n, width), bool)
    skip[:, 2:] = (lab[:, 2:] != blank) & (lab[:, 2:] != lab[:, :-2])
    rows = np.arange(n)[:, None]
    alpha = p[0][rows, lab] * (np.arange(width) < np.minimum(2, 2 * tl + 1)[:, None])
    for t in range(1, t_len):
        a1 = jnp.pad(alpha[:, :-1], ((0, 0), (1, 0)))
        a2 = jnp.pad(alpha[:, :-2], ((0, 0), (2, 0))) * skip
        alpha = jnp.where((t < il)[:, None], (alpha + a1 + a2) * p[t][rows, lab], alpha)
    end = alpha[np.arange(n), 2 * tl] + jnp.where(tl > 0, alpha[np.arange(n), np.maximum(2 * tl - 1, 0)], 0.0)
    loss = -jnp.log(end)
    if reduction == "mean":
        return jnp.mean(loss / np.maximum(tl, 1))
    return _reduce(loss, reduction)


def _with_weight(fn):
    def run(x, *rest, **params):
        *args, w = rest
        return fn(x, *args, weight=w, **params)

    return run


def _ctc(x, targets, il, tl, **params):
    return F.ctc_loss(F.log_softmax(x, 2), targets, il, tl, **params)


_I = np.int64
#: Padded targets with a repeated label (needs a blank between), a shorter input and an empty target.
CTC_CASE = (np.array([[1, 1], [2, 0], [1, 2]], _I), np.array([4, 3, 2], _I), np.array([2, 1, 0], _I))
MULTI_Y = np.array([3, 0], _I)
MULTILABEL_Y = np.array([[3, 0, -1, 1], [1, 1, 2, -1]], _I)

TABLE = [
    OpEntry("gaussian_nll_loss", F.gaussian_nll_loss, _gaussian_ref, 3, cases(
        Case(((2, 3), (2, 3), (2, 3)), dict(reduction="mean")),
        Case(((2, 3), (2, 3), (2, 1)), dict(reduction="none", eps=0.75)),
    ), (REAL, REAL, POSITIVE), max_examples=6),
    OpEntry("poisson_nll_loss", F.poisson_nll_loss, _poisson_ref, 2, cases(
        Case(((2, 3), (2, 3)), dict(reduction="mean")),
        Case(((2, 3), (2, 3)), dict(reduction="none", log_input=False, full=True)),
    ), (POSITIVE, AWAY_FROM_1), max_examples=6, complex_inputs=(0,)),  # a complex rate, real counts
    OpEntry("soft_margin_loss", F.soft_margin_loss, _soft_margin_ref, 1,
            cases(Case(((2, 3),), dict(reduction="mean"), (PM,))), REAL, max_examples=4),
    OpEntry("hinge_embedding_loss", F.hinge_embedding_loss, _hinge_ref, 1,
            cases(Case(((2, 3),), dict(reduction="none", margin=0.5), (PM,))), GRID_B, max_examples=4),
    OpEntry("margin_ranking_loss", F.margin_ranking_loss, _ranking_ref, 2, cases(
        Case(((2, 3), (2, 3)), dict(reduction="mean", margin=0.5), (PM,)),
    ), (GRID_A, GRID_B), max_examples=4),
    OpEntry("multi_margin_loss", F.multi_margin_loss, _multi_margin_ref, 1, cases(
        Case(((2, 4),), dict(reduction="mean", margin=0.75), (MULTI_Y,)),
    ), GRID_A, max_examples=4, static_consts=True),
    OpEntry("multi_margin_loss_weighted", _with_weight(F.multi_margin_loss), _multi_margin_ref, 1, cases(
        Case(((2, 4),), dict(reduction="sum", p=2, margin=0.75), (MULTI_Y, CLASS_W)),
    ), GRID_A, max_examples=3, static_consts=True),
    OpEntry("multilabel_margin_loss", F.multilabel_margin_loss, _multilabel_ref, 1, cases(
        Case(((2, 4),), dict(reduction="mean"), (MULTILABEL_Y,)),
    ), STEP04, max_examples=4, static_consts=True),
    OpEntry("multilabel_soft_margin_loss", F.multilabel_soft_margin_loss, _multilabel_soft_ref, 2, cases(
        Case(((2, 4), (2, 4)), dict(reduction="none"), (CLASS_W,)),
    ), (REAL, PROB), max_examples=4),
    OpEntry("ctc_loss", _ctc, _ctc_ref, 1, cases(
        Case(((4, 3, 3),), dict(reduction="mean"), CTC_CASE),
    ), REAL, max_examples=4, static_consts=True),
]

#: Entries whose op has no second derivative in PyTorch: ctc_loss (fgraph has one: checked above).
FIRST_ORDER_ONLY: dict = {}


def _t(c, dtype=None):
    import torch

    t = torch.as_tensor(np.asarray(c))
    return t.long() if not t.is_floating_point() else (t if dtype is None else t.to(dtype))


#: The PyTorch oracle (``torch.nn.functional``), with the entries' call signatures.
TORCH = {
    "gaussian_nll_loss": lambda x, t, v, **p: TF.gaussian_nll_loss(x, t, v, **p),
    "poisson_nll_loss": lambda x, t, **p: TF.poisson_nll_loss(x, t, **p),
    "soft_margin_loss": lambda x, y, **p: TF.soft_margin_loss(x, _t(y, x.dtype), **p),
    "hinge_embedding_loss": lambda x, y, **p: TF.hinge_embedding_loss(x, _t(y, x.dtype), **p),
    "margin_ranking_loss": lambda a, b, y, **p: TF.margin_ranking_loss(a, b, _t(y, a.dtype), **p),
    "multi_margin_loss": lambda x, y, **p: TF.multi_margin_loss(x, _t(y), **p),
    "multi_margin_loss_weighted": lambda x, y, w, **p: TF.multi_margin_loss(x, _t(y), weight=_t(w, x.dtype), **p),
    "multilabel_margin_loss": lambda x, y, **p: TF.multilabel_margin_loss(x, _t(y), **p),
    "multilabel_soft_margin_loss": lambda x, t, w=None, **p: TF.multilabel_soft_margin_loss(
        x, t, weight=None if w is None else _t(w, x.dtype), **p),
    "ctc_loss": lambda x, t, il, tl, **p: TF.ctc_loss(TF.log_softmax(x, 2), _t(t), _t(il), _t(tl), **p),
}


#: Entries whose ops refuse complex inputs (an OpError); every other entry is also checked on complex ones.
REAL_ONLY = {
    "gaussian_nll_loss", "soft_margin_loss", "hinge_embedding_loss", "margin_ranking_loss", "multi_margin_loss",
    "multi_margin_loss_weighted", "multilabel_margin_loss", "multilabel_soft_margin_loss", "ctc_loss"
}
