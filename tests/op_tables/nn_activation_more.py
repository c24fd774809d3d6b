"""Shrinkage, threshold, softmin and eval-mode rrelu (fgraph/nn/functional/activation_more.py,
activation_random.py) against pure-JAX references written from the formulas.

GRID_B keeps inputs 0.15 away from every multiple of 0.5: the kinks of hardshrink and
softshrink (``+-lambd`` for ``lambd`` 0.5 and 1.0) and threshold's jump at 0.5.
The random ops (training-mode rrelu, gumbel_softmax, alpha_dropout) are tested for
their distributions in tests/test_nn_functional_more.py.
"""
import jax
import jax.numpy as jnp

import fgraph.nn.functional as F
from op_harness import Case, GRID_B, NONZERO, OpEntry, REAL, TF, cases, grid

M = [((2, 3),)]


def _hardshrink_ref(x, lambd=0.5):
    return jnp.where(jnp.abs(x) > lambd, x, 0.0)


def _softshrink_ref(x, lambd=0.5):
    return jnp.where(x > lambd, x - lambd, jnp.where(x < -lambd, x + lambd, 0.0))


def _threshold_ref(x, threshold, value):
    return jnp.where(x > threshold, x, value)


def _softmin_ref(x, dim):
    return jax.nn.softmax(-x, axis=dim)


def _rrelu_eval_ref(x, lower=1.0 / 8, upper=1.0 / 3):
    return jnp.where(x >= 0, x, x * (lower + upper) / 2)


TABLE = [
    OpEntry("hardshrink", F.hardshrink, _hardshrink_ref, 1, grid(M), GRID_B, max_examples=4),
    OpEntry("softshrink", F.softshrink, _softshrink_ref, 1, grid(M, [dict(lambd=1.0)]), GRID_B, max_examples=4),
    OpEntry("tanhshrink", F.tanhshrink, lambda x: x - jnp.tanh(x), 1, grid(M), REAL, max_examples=4),
    OpEntry("threshold", F.threshold, _threshold_ref, 1, grid(M, [dict(threshold=0.5, value=-1.0)]), GRID_B,
            max_examples=4),
    OpEntry("softmin", F.softmin, _softmin_ref, 1, cases(Case(((2, 3),), dict(dim=0))), REAL,
            max_examples=4),
    OpEntry("rrelu_eval", F.rrelu, _rrelu_eval_ref, 1, grid(M, [dict(lower=0.1, upper=0.3)]), NONZERO,
            max_examples=4),
]

#: Entries whose op has no second derivative in PyTorch: none.
FIRST_ORDER_ONLY: dict = {}

#: The PyTorch oracle (``torch.nn.functional``), with the entries' call signatures.
TORCH = {
    "hardshrink": lambda x, **p: TF.hardshrink(x, **p),
    "softshrink": lambda x, **p: TF.softshrink(x, **p),
    "tanhshrink": lambda x: TF.tanhshrink(x),
    "threshold": lambda x, **p: TF.threshold(x, **p),
    "softmin": lambda x, **p: TF.softmin(x, **p),
    "rrelu_eval": lambda x, **p: TF.rrelu(x, training=False, **p),
}


#: Entries whose ops refuse complex inputs (an OpError); every other entry is also checked on complex ones.
REAL_ONLY = {
    "hardshrink", "softshrink", "threshold", "softmin", "rrelu_eval"
}
