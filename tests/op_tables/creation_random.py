"""Random ops with differentiable inputs (fgraph/ops/random_ops.py) against pure JAX.

Only ``normal`` with tensor ``mean``/``std`` is differentiable: it is
reparameterised, ``mean + std * eps`` with ``eps = jax.random.normal(key, ...)``, so
the reference is that same program with the same key. It is linear in ``mean`` and
``std``: the Hessian-vector products are zero. The creation and other random ops
make leaves (nothing to differentiate); tests/test_creation_random.py covers them.

No PyTorch oracle: torch draws from a different stream, and ``torch.normal`` gives
zero gradients (fgraph's ``normal`` is reparameterised on purpose).
"""
import jax
import jax.numpy as jnp

import fgraph as fg
from op_harness import POSITIVE, REAL, Case, OpEntry, cases

#: (mean shape, std shape): equal, both stretched, scalar mean, empty.
PAIRS = [((2, 3), (2, 3)), ((2, 1), (1, 3)), ((), (2, 3)), ((0, 3), (1, 3))]


def _normal_tensors(mean, std, *, seed):
    return fg.normal(mean, std, key=jax.random.PRNGKey(seed))


def _normal_tensors_ref(mean, std, *, seed):
    shape = jnp.broadcast_shapes(mean.shape, std.shape)
    return mean + std * jax.random.normal(jax.random.PRNGKey(seed), shape, jnp.result_type(mean, std))


def _normal_float_std(mean, *, std, seed):
    return fg.normal(mean, std, key=jax.random.key(seed))  # a typed key this time


def _normal_float_std_ref(mean, *, std, seed):
    return mean + std * jax.random.normal(jax.random.key(seed), mean.shape, mean.dtype)


def _normal_float_mean(std, *, mean, seed):
    return fg.normal(mean, std, key=jax.random.PRNGKey(seed))


def _normal_float_mean_ref(std, *, mean, seed):
    return mean + std * jax.random.normal(jax.random.PRNGKey(seed), std.shape, std.dtype)


TABLE = [
    OpEntry("normal_tensor_mean_std", _normal_tensors, _normal_tensors_ref, 2,
            cases(*(Case(shapes, dict(seed=seed)) for shapes in PAIRS for seed in (0, 1))), (REAL, POSITIVE)),
    OpEntry("normal_float_std", _normal_float_std, _normal_float_std_ref, 1,
            cases(*(Case((s,), dict(std=std, seed=3)) for s in [(2, 3), ()] for std in (0.5, 2.0))), REAL,
            max_examples=10),
    OpEntry("normal_float_mean", _normal_float_mean, _normal_float_mean_ref, 1,
            cases(*(Case((s,), dict(mean=mean, seed=4)) for s in [(2, 3), (3, 0)] for mean in (-1.0, 0.0))),
            POSITIVE, max_examples=10),
]

#: No entry here has a PyTorch counterpart with the same values (see the module docstring).
TORCH = {}


#: Entries whose ops refuse complex inputs (an OpError); every other entry is also checked on complex ones.
REAL_ONLY = {
    "normal_tensor_mean_std", "normal_float_std", "normal_float_mean"
}
