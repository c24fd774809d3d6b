"""Normalization layers (fgraph/nn/functional/normalization.py) against pure JAX.

References are written from the formulas (biased variance, ``1/sqrt(var + eps)``).
Most cases use ``eps=0.1`` so that nearly-constant draws stay well conditioned in
float32. All ops are composites: every op has second derivatives (FIRST_ORDER_ONLY empty).
"""
import jax.numpy as jnp

import fgraph.nn.functional as F
from op_harness import POSITIVE, REAL, Case, OpEntry, cases


def _norm_ref(x, axes, eps):
    m = jnp.mean(x, axis=axes, keepdims=True)
    v = jnp.mean((x - m) ** 2, axis=axes, keepdims=True)
    return (x - m) / jnp.sqrt(v + eps)


def _chan(p, ndim):
    return p.reshape((-1,) + (1,) * (ndim - 2))


def _layer_norm_ref(x, w=None, b=None, *, normalized_shape, eps=1e-5):
    k = len(normalized_shape)
    y = _norm_ref(x, tuple(range(x.ndim - k, x.ndim)), eps)
    y = y if w is None else y * w
    return y if b is None else y + b


def _layer_norm(x, w=None, b=None, *, normalized_shape, eps=1e-5):
    return F.layer_norm(x, normalized_shape, w, b, eps)


def _rms_norm_ref(x, w=None, *, normalized_shape, eps):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    y = x / jnp.sqrt(jnp.mean(x * x, axis=axes, keepdims=True) + eps)
    return y if w is None else y * w


def _rms_norm(x, w=None, *, normalized_shape, eps):
    return F.rms_norm(x, normalized_shape, w, eps)


def _group_norm_ref(x, w=None, b=None, *, num_groups, eps):
    n, c = x.shape[:2]
    y = _norm_ref(x.reshape(n, num_groups, -1), (2,), eps).reshape(x.shape)
    y = y if w is None else y * _chan(w, x.ndim)
    return y if b is None else y + _chan(b, x.ndim)


def _group_norm(x, w=None, b=None, *, num_groups, eps):
    return F.group_norm(x, num_groups, w, b, eps)


def _instance_norm_ref(x, w=None, b=None, *, eps):
    y = _norm_ref(x, tuple(range(2, x.ndim)), eps)
    y = y if w is None else y * _chan(w, x.ndim)
    return y if b is None else y + _chan(b, x.ndim)


def _instance_norm(x, w=None, b=None, *, eps):
    return F.instance_norm(x, None, None, w, b, eps=eps)


def _batch_norm_train_ref(x, w, b, *, eps):
    y = _norm_ref(x, (0,) + tuple(range(2, x.ndim)), eps)
    return y * _chan(w, x.ndim) + _chan(b, x.ndim)


def _batch_norm_train(x, w, b, *, eps):
    return F.batch_norm(x, None, None, w, b, training=True, eps=eps)


def _batch_norm_eval_ref(x, rm, rv, w, b, *, eps):
    y = (x - _chan(rm, x.ndim)) / jnp.sqrt(_chan(rv, x.ndim) + eps)
    return y * _chan(w, x.ndim) + _chan(b, x.ndim)


def _batch_norm_eval(x, rm, rv, w, b, *, eps):
    return F.batch_norm(x, rm, rv, w, b, training=False, eps=eps)


def _running_stats_ref(x, rm, rv, *, momentum):
    axes = (0,) + tuple(range(2, x.ndim))
    n = x.size // x.shape[1]
    m = jnp.mean(x, axis=axes)
    v = jnp.sum((x - jnp.mean(x, axis=axes, keepdims=True)) ** 2, axis=axes) / (n - 1)
    return ((1 - momentum) * rm + momentum * m) * 2.0 + (1 - momentum) * rv + momentum * v


def _running_stats(x, rm, rv, *, momentum):
    m, v = F.batch_norm_running_stats(x, rm, rv, momentum)
    return m * 2.0 + v


TABLE = [
    OpEntry("layer_norm", _layer_norm, _layer_norm_ref, None, cases(
        Case(((2, 3), (3,), (3,)), dict(normalized_shape=(3,), eps=0.1)),
        Case(((2, 2, 3),), dict(normalized_shape=(2, 3), eps=0.1)),
        Case(((2, 1),), dict(normalized_shape=(1,), eps=1e-5)),
        Case(((0, 3), (3,), (3,)), dict(normalized_shape=(3,), eps=0.1)),
        Case(((3, 2, 2), (2, 2)), dict(normalized_shape=(2, 2), eps=0.1)),  # weight without bias
    ), REAL, max_examples=6),
    OpEntry("rms_norm", _rms_norm, _rms_norm_ref, None, cases(
        Case(((2, 3), (3,)), dict(normalized_shape=(3,), eps=0.1)),
        Case(((2, 2, 3),), dict(normalized_shape=(2, 3), eps=0.1)),
    ), REAL, max_examples=6),
    OpEntry("group_norm", _group_norm, _group_norm_ref, None, cases(
        Case(((2, 4, 3), (4,), (4,)), dict(num_groups=2, eps=0.1)),
        Case(((1, 2, 2, 2),), dict(num_groups=1, eps=0.1)),
    ), REAL, max_examples=6),
    OpEntry("instance_norm", _instance_norm, _instance_norm_ref, None, cases(
        Case(((2, 2, 3), (2,), (2,)), dict(eps=0.1)),
        Case(((1, 2, 2, 2),), dict(eps=0.1)),
    ), REAL, max_examples=6),
    OpEntry("batch_norm_train", _batch_norm_train, _batch_norm_train_ref, 3, cases(
        Case(((3, 2), (2,), (2,)), dict(eps=0.1)),
        Case(((2, 2, 3), (2,), (2,)), dict(eps=0.1)),
    ), REAL, max_examples=6),
    OpEntry("batch_norm_eval", _batch_norm_eval, _batch_norm_eval_ref, 5, cases(
        Case(((2, 2, 3), (2,), (2,), (2,), (2,)), dict(eps=1e-5)),
    ), (REAL, REAL, POSITIVE, REAL, REAL), max_examples=6),
    OpEntry("batch_norm_running_stats", _running_stats, _running_stats_ref, 3, cases(
        Case(((3, 2, 2), (2,), (2,)), dict(momentum=0.1)),
    ), REAL, max_examples=4),
]

FIRST_ORDER_ONLY: dict = {}


def _torch_F():
    import torch.nn.functional as TF

    return TF


#: batch_norm_eval is not mapped: torch refuses gradients w.r.t. running_mean/running_var
#: (fgraph differentiates them, as the formula does).
TORCH = {
    "layer_norm": lambda x, w=None, b=None, *, normalized_shape, eps=1e-5: _torch_F().layer_norm(
        x, normalized_shape, w, b, eps),
    "rms_norm": lambda x, w=None, *, normalized_shape, eps: _torch_F().rms_norm(x, normalized_shape, w, eps),
    "group_norm": lambda x, w=None, b=None, *, num_groups, eps: _torch_F().group_norm(x, num_groups, w, b, eps),
    "instance_norm": lambda x, w=None, b=None, *, eps: _torch_F().instance_norm(x, weight=w, bias=b, eps=eps),
    "batch_norm_train": lambda x, w, b, *, eps: _torch_F().batch_norm(x, None, None, w, b, training=True, eps=eps),
}


#: Entries whose ops refuse complex inputs (an OpError); every other entry is also checked on complex ones.
REAL_ONLY = {
    "layer_norm", "group_norm", "instance_norm", "batch_norm_train", "batch_norm_eval", "batch_norm_running_stats"
}
