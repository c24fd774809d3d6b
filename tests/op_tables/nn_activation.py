"""Activations (fgraph/nn/functional/activation.py) against pure-JAX references.

References are written from the formulas (``erf`` for exact gelu, ``logaddexp`` for
softplus...), not from fgraph's kernels. Value domains keep inputs away from each
op's kinks: GRID_B avoids multiples of 0.5, ``2 * GRID_B`` every integer (hardtanh's
+-1, hardsigmoid/hardswish's +-3), ``4 * GRID_B`` every even integer (relu6's 0 and 6).
Every op here has second derivatives (in PyTorch too): FIRST_ORDER_ONLY is empty.
"""
import math

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp

import fgraph.nn.functional as F
from op_harness import Case, GRID_B, NONZERO, OpEntry, REAL, TF, cases, grid

WIDE2 = GRID_B.map(lambda v: 2 * v)  # at least 0.3 from every integer, in [-3.7, 4.7]
WIDE4 = GRID_B.map(lambda v: 4 * v)  # at least 0.6 from every even integer, in [-7.4, 9.4]

SHAPES = [((2, 3),), ((),), ((3, 0),)]


def _softplus_ref(x, beta=1.0, threshold=20.0):
    return jnp.where(x * beta > threshold, x, jnp.logaddexp(x * beta, 0.0) / beta)


def _elu_ref(x, alpha=1.0, scale=1.0, input_scale=1.0):
    return jnp.where(x > 0, scale * x, alpha * scale * (jnp.exp(x * input_scale) - 1))


def _gelu_ref(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + jnp.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + jsp.erf(x / math.sqrt(2)))


def _softmax_ref(x, dim, dtype=None):
    x = x if dtype is None else x.astype(dtype)
    axis = dim if x.ndim else ()
    z = x - jax.lax.stop_gradient(jnp.max(x, axis=axis, keepdims=True, initial=-jnp.inf))
    e = jnp.exp(z)
    return e / jnp.sum(e, axis=axis, keepdims=True)


def _log_softmax_ref(x, dim, dtype=None):
    x = x if dtype is None else x.astype(dtype)
    axis = dim if x.ndim else ()
    z = x - jax.lax.stop_gradient(jnp.max(x, axis=axis, keepdims=True, initial=-jnp.inf))
    return z - jnp.log(jnp.sum(jnp.exp(z), axis=axis, keepdims=True))


def _glu_ref(x, dim=-1):
    a, b = jnp.split(x, 2, axis=dim)
    return a * jax.nn.sigmoid(b)


def _hardswish_ref(x):
    return x * jnp.clip(x + 3, 0, 6) / 6


SOFTMAX_CASES = cases(
    Case(((2, 3),), dict(dim=0)),
    Case(((2, 3),), dict(dim=-1, dtype="float64")),
    Case(((),), dict(dim=0)),
)
LOG_SOFTMAX_CASES = cases(Case(((2, 3),), dict(dim=-1)), Case(((3, 0),), dict(dim=0)))

_SELU = dict(alpha=1.6732632423543772848170429916717, scale=1.0507009873554804934193349852946)
#: Each distinct case compiles its kernels (about half a second), so most entries use the shape (2, 3)
#: only; 0-d and empty inputs are covered by a few entries (the elementwise kernels share that machinery).
M = [((2, 3),)]

TABLE = [
    OpEntry("relu6", F.relu6, lambda x: jnp.clip(x, 0, 6), 1, grid(M), WIDE4, max_examples=5),
    OpEntry("leaky_relu", F.leaky_relu, lambda x, negative_slope=0.01: jnp.where(x > 0, x, negative_slope * x), 1,
            grid(M, [{}, dict(negative_slope=0.2)]), NONZERO, max_examples=8),
    OpEntry("elu", F.elu, _elu_ref, 1, grid([((),)], [dict(alpha=0.5)]), NONZERO, max_examples=5),
    OpEntry("selu", F.selu, lambda x: _elu_ref(x, **_SELU), 1, grid(M), NONZERO, max_examples=5),
    OpEntry("celu", F.celu, lambda x, alpha=1.0: _elu_ref(x, alpha, 1.0, 1.0 / alpha), 1,
            grid(M, [dict(alpha=2.0)]), NONZERO, max_examples=5),
    OpEntry("gelu", F.gelu, _gelu_ref, 1, grid(M, [{}, dict(approximate="tanh")]) | grid([((3, 0),)]), REAL,
            max_examples=10),
    OpEntry("silu", F.silu, lambda x: x * jax.nn.sigmoid(x), 1, grid(M), REAL, max_examples=5),
    OpEntry("mish", F.mish, lambda x: x * jnp.tanh(jnp.logaddexp(x, 0.0)), 1, grid(M), REAL, max_examples=5),
    OpEntry("softplus", F.softplus, _softplus_ref, 1, grid(M, [{}, dict(beta=2.0, threshold=1.0)]), GRID_B,
            max_examples=8),
    OpEntry("softsign", F.softsign, lambda x: x / (1 + jnp.abs(x)), 1, grid(M), NONZERO, max_examples=5),
    OpEntry("hardtanh", F.hardtanh, lambda x, min_val=-1.0, max_val=1.0: jnp.clip(x, min_val, max_val), 1,
            grid(M, [{}, dict(min_val=-2.0, max_val=3.0)]), WIDE2, max_examples=8),
    OpEntry("hardsigmoid", F.hardsigmoid, lambda x: jnp.clip(x + 3, 0, 6) / 6, 1, grid(M), WIDE2, max_examples=5),
    OpEntry("hardswish", F.hardswish, _hardswish_ref, 1, grid(M), WIDE2, max_examples=5),
    OpEntry("logsigmoid", F.logsigmoid, lambda x: -jnp.logaddexp(-x, 0.0), 1, grid(M), REAL, max_examples=5),
    OpEntry("softmax", F.softmax, _softmax_ref, 1, SOFTMAX_CASES, REAL, max_examples=10),
    OpEntry("log_softmax", F.log_softmax, _log_softmax_ref, 1, LOG_SOFTMAX_CASES, REAL, max_examples=8),
    OpEntry("glu", F.glu, _glu_ref, 1, cases(Case(((4, 3),), dict(dim=0))), REAL,
            max_examples=5),
]

#: Entries whose op has no second derivative in PyTorch: none.
FIRST_ORDER_ONLY: dict = {}


def _torch_dtype(dtype):
    import torch

    return None if dtype is None else getattr(torch, dtype)


#: The PyTorch oracle (``torch.nn.functional``), with the entries' call signatures.
TORCH = {
    "relu6": lambda x: TF.relu6(x),
    "leaky_relu": lambda x, **p: TF.leaky_relu(x, **p),
    "elu": lambda x, **p: TF.elu(x, **p),
    "selu": lambda x: TF.selu(x),
    "celu": lambda x, **p: TF.celu(x, **p),
    "gelu": lambda x, **p: TF.gelu(x, **p),
    "silu": lambda x: TF.silu(x),
    "mish": lambda x: TF.mish(x),
    "softplus": lambda x, **p: TF.softplus(x, **p),
    "softsign": lambda x: TF.softsign(x),
    "hardtanh": lambda x, **p: TF.hardtanh(x, **p),
    "hardsigmoid": lambda x: TF.hardsigmoid(x),
    "hardswish": lambda x: TF.hardswish(x),
    "logsigmoid": lambda x: TF.logsigmoid(x),
    "softmax": lambda x, dim, dtype=None: TF.softmax(x, dim=dim, dtype=_torch_dtype(dtype)),
    "log_softmax": lambda x, dim, dtype=None: TF.log_softmax(x, dim=dim, dtype=_torch_dtype(dtype)),
    "glu": lambda x, **p: TF.glu(x, **p),
}

#: PyTorch's float64 hardsigmoid multiplies by 1/6 rounded to float32 (relative error ~3e-8).
TORCH_TOLERANCES = {"hardsigmoid": (1e-7, 1e-10)}


#: Entries whose ops refuse complex inputs (an OpError); every other entry is also checked on complex ones.
REAL_ONLY = {
    "relu6", "leaky_relu", "elu", "selu", "celu", "gelu", "silu", "mish", "softplus", "hardtanh", "hardsigmoid",
    "hardswish", "logsigmoid", "softmax", "log_softmax", "glu"
}
