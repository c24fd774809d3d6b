"""scaled_dot_product_attention (fgraph/nn/functional/attention.py) against pure JAX.

The reference is the formula ``softmax(q k^T * scale + mask) v``. A composite of
fgraph ops: it has second derivatives (FIRST_ORDER_ONLY empty). Dropout is random
and is not checked here.
"""
import math

import jax
import jax.numpy as jnp
import numpy as np

import fgraph.nn.functional as F
from op_harness import REAL, Case, OpEntry, cases

_BOOL_MASK = np.array([[True, False, True], [True, True, False]])
_FLOAT_MASK = np.array([[0.0, -1.0, 0.5], [0.25, 0.0, -0.5]])


def _sdpa_ref(q, k, v, mask=None, *, is_causal=False, scale=None):
    s = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ jnp.swapaxes(k, -1, -2) * s
    if is_causal:
        mask = np.tril(np.ones((q.shape[-2], k.shape[-2]), bool))
    if mask is not None:
        scores = jnp.where(mask, scores, -jnp.inf) if mask.dtype == bool else scores + mask
    return jax.nn.softmax(scores, axis=-1) @ v


def _sdpa(q, k, v, mask=None, *, is_causal=False, scale=None):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal, scale=scale)


TABLE = [
    OpEntry("scaled_dot_product_attention", _sdpa, _sdpa_ref, 3, cases(
        Case(((2, 3), (3, 3), (3, 2)), {}),
        Case(((2, 2, 3), (2, 3, 3), (1, 3, 2)), dict(is_causal=True)),
        Case(((2, 3), (3, 3), (3, 2)), dict(scale=0.7), (_BOOL_MASK,)),
        Case(((2, 3), (3, 3), (3, 2)), {}, (_FLOAT_MASK,)),
    ), REAL, max_examples=6),
]

FIRST_ORDER_ONLY: dict = {}


def _torch_sdpa(q, k, v, mask=None, *, is_causal=False, scale=None):
    import torch.nn.functional as TF

    return TF.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal, scale=scale)


TORCH = {"scaled_dot_product_attention": _torch_sdpa}


#: Entries whose ops refuse complex inputs (an OpError); every other entry is also checked on complex ones.
REAL_ONLY = {
    "scaled_dot_product_attention"
}
