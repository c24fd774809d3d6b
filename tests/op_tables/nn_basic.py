"""Linear maps, norms, distances, dropout and embedding (fgraph/nn/functional/basic.py) against pure JAX.

References are written from the formulas (``jnp.linalg.norm``-free p-norms,
``x[idx]`` with a stop-gradient trick for embedding's modified gradient). Inputs of
p-norms with p = 1 or infinity stay away from zero and from ties. ``one_hot`` is not
differentiable, so it is tested in tests/test_nn_functional.py, not here.
Every op here has second derivatives (in PyTorch too): FIRST_ORDER_ONLY is empty.
"""
import math

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fgraph.nn.functional as F
from op_harness import Case, GRID_A, GRID_B, NONZERO, OpEntry, REAL, TF, cases, magnitude

_KEY = jax.random.PRNGKey(42)


def _pnorm(x, p, axis, keepdims=False):
    a = magnitude(x)
    if p == math.inf:
        return jnp.max(a, axis=axis, keepdims=keepdims)
    if p == 2:
        return jnp.sqrt(jnp.sum(a * a, axis=axis, keepdims=keepdims))
    return jnp.sum(a**p, axis=axis, keepdims=keepdims) ** (1.0 / p)


def _linear(x, w, b=None):
    return F.linear(x, w, b)


def _linear_ref(x, w, b=None):
    out = x @ (w.T if w.ndim == 2 else w)
    return out if b is None else out + b


def _bilinear(x1, x2, w, b=None):
    return F.bilinear(x1, x2, w, b)


def _bilinear_ref(x1, x2, w, b=None):
    out = jnp.einsum("...i,kij,...j->...k", x1, w, x2)
    return out if b is None else out + b


def _normalize_ref(x, p=2.0, dim=1, eps=1e-12):
    return x / jnp.maximum(_pnorm(x, p, dim, keepdims=True), eps)


def _cosine_ref(x1, x2, dim=1, eps=1e-8):
    x1, x2 = jnp.broadcast_arrays(x1, x2)
    n1 = jnp.maximum(_pnorm(x1, 2, dim, keepdims=True), eps)
    n2 = jnp.maximum(_pnorm(x2, 2, dim, keepdims=True), eps)
    return jnp.sum((x1 / n1) * (x2 / n2), axis=dim)


def _pairwise_ref(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return _pnorm(x1 - x2 + eps, p, -1, keepdims=keepdim)


def _dropout(x, p):
    return F.dropout(x, p, key=_KEY)


def _dropout_ref(x, p):
    if p == 1:
        return x * 0.0
    keep = jax.random.bernoulli(_KEY, 1.0 - p, x.shape)
    return x * jnp.where(keep, 1.0 / (1.0 - p), 0.0).astype(x.dtype)


@st.composite
def embedding_cases(draw):
    (num, dim), idx_shape, params = draw(st.sampled_from([
        ((5, 3), (2, 4), {}),
        ((5, 3), (2, 4), dict(padding_idx=-1, scale_grad_by_freq=True)),
    ]))
    idx = draw(hnp.arrays(np.int64, idx_shape, elements=st.integers(0, num - 1)))
    return Case(((num, dim),), params, (idx,))


def _embedding(w, idx, **params):
    return F.embedding(idx, w, **params)


def _embedding_ref(w, idx, padding_idx=None, scale_grad_by_freq=False):
    rows = w[idx]
    scale = jnp.ones(idx.shape, w.dtype)
    if padding_idx is not None:
        scale = jnp.where(idx == padding_idx % w.shape[0], 0.0, scale)
    if scale_grad_by_freq:
        scale = scale / jnp.zeros(w.shape[0], w.dtype).at[idx].add(1.0)[idx]
    s = scale[..., None]
    return rows * s + jax.lax.stop_gradient(rows * (1 - s))  # value: rows; gradient: scaled rows


#: Each distinct case compiles its kernels (composites: dozens), so the cases are few and share shapes.
def _embedding_squared(w, idx, **params):
    return F.embedding(idx, w, **params) ** 2


def _embedding_squared_ref(w, idx, **params):
    return _embedding_ref(w, idx, **params) ** 2


def _rows(w, idx, **params):  # the tangent of an embedding is the rows of the weight's (PyTorch: auto_linear)
    return w[idx]


def _rows_squared(w, idx, **params):
    return w[idx] ** 2


NORM_CASES = cases(
    Case(((2, 3),), dict(p=1.0, dim=(0, 1))),
    Case(((2, 3),), dict(p=3.0)),
    Case(((2, 3),), dict(p=math.inf, dim=0)),
)

TABLE = [
    OpEntry("linear", _linear, _linear_ref, None, cases(
        Case(((2, 3), (4, 3), (4,))),
        Case(((3,), (3,))),
        Case(((2, 3), (4, 3))),  # no bias: the MmBackward0 primitive, for every input rank
        Case(((2, 2, 3), (4, 3))),
        Case(((3,), (4, 3))),
    ), REAL, max_examples=6),
    OpEntry("bilinear", _bilinear, _bilinear_ref, None, cases(Case(((2, 3), (2, 4), (5, 3, 4), (5,)))), REAL,
            max_examples=4),
    OpEntry("normalize", F.normalize, _normalize_ref, 1, NORM_CASES, NONZERO, max_examples=10),
    OpEntry("cosine_similarity", F.cosine_similarity, _cosine_ref, 2, cases(Case(((2, 3), (2, 3)), {})), NONZERO,
            max_examples=6),
    OpEntry("pairwise_distance", F.pairwise_distance, _pairwise_ref, 2, cases(
        Case(((2, 3), (2, 3)), {}),
        Case(((2, 3), (3,)), dict(p=1.0)),
        Case(((2, 3), (2, 3)), dict(p=math.inf, eps=0.0, keepdim=True)),
    ), (GRID_A, GRID_B), max_examples=8),
    OpEntry("dropout", _dropout, _dropout_ref, 1, cases(
        Case(((2, 3),), dict(p=0.5)),
        Case(((2, 3),), dict(p=0.0)),
        Case(((2, 3),), dict(p=1.0)),
    ), REAL, max_examples=8),
    OpEntry("embedding", _embedding, _embedding_ref, 1, embedding_cases(), REAL, max_examples=8, jvp_ref=_rows),
    # embedding is linear: squaring its output makes the Hessian-vector product check its double backward
    OpEntry("embedding_squared", _embedding_squared, _embedding_squared_ref, 1, cases(
        Case(((5, 3),), dict(padding_idx=1, scale_grad_by_freq=True), (np.array([[1, 0, 1], [3, 1, 2]]),)),
    ), REAL, max_examples=4, jvp_ref=_rows_squared),
]

#: Entries whose op has no second derivative in PyTorch: none.
FIRST_ORDER_ONLY: dict = {}


def _torch_index(idx):
    import torch

    return torch.as_tensor(np.asarray(idx), dtype=torch.int64)


#: The PyTorch oracle (``torch.nn.functional``), with the entries' call signatures. Dropout's
#: mask depends on the random stream, so it has no entry here.
TORCH = {
    "linear": lambda x, w, b=None: TF.linear(x, w, b),
    "bilinear": lambda x1, x2, w, b=None: TF.bilinear(x1, x2, w, b),
    "normalize": lambda x, **p: TF.normalize(x, **p),
    "cosine_similarity": lambda x1, x2, **p: TF.cosine_similarity(x1, x2, **p),
    "pairwise_distance": lambda x1, x2, **p: TF.pairwise_distance(x1, x2, **p),
    "embedding": lambda w, idx, **p: TF.embedding(_torch_index(idx), w, **p),
    "embedding_squared": lambda w, idx, **p: TF.embedding(_torch_index(idx), w, **p) ** 2,
}


#: Entries whose ops refuse complex inputs (an OpError); every other entry is also checked on complex ones.
REAL_ONLY = {
    "cosine_similarity", "dropout"
}
#: torch's autograd refuses complex outputs of these (its forward takes them).
TORCH_REFUSES_COMPLEX = {"bilinear", "embedding", "embedding_squared"}
