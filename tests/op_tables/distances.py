"""Distances and second moments (fgraph/ops/distances.py) against pure JAX: cdist, pdist, dist,
cosine_similarity, pairwise_distance (top level), cov, corrcoef.

Points are spread out inside the functions (``spread``: row ``i`` moved by ``20 i (m + 1)`` in
coordinate ``m``, with ``|x| <= 2``), so no two points coincide, no coordinate difference is 0
(``p = 1`` and ``p < 1`` are smooth there) and the largest difference of every pair is unique
(``p = inf`` has no ties). Coincident points and ties are checked in
``tests/test_products_distances.py`` against PyTorch. ``corrcoef`` is compared off the diagonal,
whose entries PyTorch and fgraph clip to 1 (gradient 0 or 1 depending on the last bit).
"""
import math

import jax.numpy as jnp
import numpy as np

import fgraph as fg
from op_harness import GRID_A, GRID_B, NONZERO, REAL, Case, OpEntry, cases, norm_input, torch

#: No op here lacks a second derivative.
FIRST_ORDER_ONLY: dict = {}

INF = math.inf


def _like(x, array):
    if isinstance(x, fg.Tensor):
        return fg.tensor(np.asarray(array), dtype=x.dtype)
    if type(x).__module__.startswith("torch"):
        return torch.tensor(np.asarray(array), dtype=x.dtype)
    return jnp.asarray(array, dtype=x.dtype)


def spread(x, shift=0.0):
    rows, cols = x.shape[-2:]
    return x + _like(x, 20.0 * (np.arange(rows)[:, None] + shift) * (np.arange(cols)[None, :] + 1))


def _pairs_ref(x1, x2, p):
    diff = x1[..., :, None, :] - x2[..., None, :, :]
    return jnp.linalg.norm(diff, ord=p, axis=-1)


CDIST_CASES = cases(*(Case(shapes, dict(p=p)) for shapes, p in [
    (((2, 3), (4, 3)), 2.0),
    (((2, 2, 3), (1, 3, 3)), 1.0),  # batch dims broadcast
    (((2, 3), (4, 3)), INF),
    (((2, 3), (4, 3)), 3.0),
    (((2, 3), (4, 3)), 0.5),
    (((2, 3), (4, 3)), 0.0),  # a count: no gradient
    (((0, 3), (2, 3)), 2.0),  # no rows
]))


def _cdist_fg(x1, x2, p):
    return fg.cdist(spread(x1), spread(x2, 0.5), p)


def _cdist_ref(x1, x2, p):
    return _pairs_ref(spread(x1), spread(x2, 0.5), p)


PDIST_CASES = cases(*(Case(((4, 3),), dict(p=p)) for p in (2.0, 1.0, INF)))


def _pdist_ref(x, p):
    x = spread(x)
    i, j = np.triu_indices(x.shape[0], 1)
    return jnp.linalg.norm(x[i] - x[j], ord=p, axis=-1)


DIST_CASES = cases(*(Case(((2, 3), (3,)), dict(p=p)) for p in (2, 1, INF, 3)))


def _dist_ref(a, b, p):
    return jnp.linalg.norm(norm_input(a - b).reshape(-1), ord=p)


COSINE_CASES = cases(Case(((2, 3), (2, 3)), dict(dim=1)), Case(((2, 3), (3,)), dict(dim=-1)))


def _cosine_ref(a, b, dim):
    a, b = jnp.broadcast_arrays(a, b)
    na = jnp.maximum(jnp.linalg.norm(a, axis=dim), 1e-8)
    nb = jnp.maximum(jnp.linalg.norm(b, axis=dim), 1e-8)
    return jnp.sum(a * b, axis=dim) / (na * nb)


PAIRWISE_CASES = cases(Case(((2, 3), (2, 3)), dict(p=2.0, keepdim=False)), Case(((2, 3), (3,)), dict(p=1.0,
                                                                                                  keepdim=True)))


def _pairwise_ref(a, b, p, keepdim):
    return jnp.linalg.norm(norm_input(a - b + 1e-6), ord=p, axis=-1, keepdims=keepdim)


# -- covariance ---------------------------------------------------------------------------------------------
FWEIGHTS = np.array([1, 2, 0, 3, 1], dtype=np.int64)
AWEIGHTS = np.array([0.5, 1.0, 2.0, 0.25, 1.5])
COV_CASES = cases(
    Case(((3, 5),), dict(correction=1)),
    Case(((5,),), dict(correction=0)),  # one variable: a 0-d result
    Case(((3, 5),), dict(correction=1), (FWEIGHTS,)),
    Case(((3, 5),), dict(correction=2), (FWEIGHTS, AWEIGHTS)),
)


def _cov_fg(x, *weights, correction):
    fw = weights[0] if weights else None
    aw = weights[1] if len(weights) > 1 else None
    return fg.cov(x, correction=correction, fweights=fw, aweights=aw)


def _cov_ref(x, *weights, correction):
    fw = weights[0] if weights else None
    aw = weights[1] if len(weights) > 1 else None
    return jnp.cov(x, ddof=correction, fweights=fw, aweights=aw)


def _cov_torch(x, *weights, correction):
    fw = weights[0] if weights else None
    aw = weights[1] if len(weights) > 1 else None
    return torch.cov(x, correction=correction, fweights=fw, aweights=aw)


RAMPS = 3.0 * np.array([[0, 1, 2, 3, 4], [3, 0, 4, 1, 2], [4, 2, 0, 3, 1]], dtype=float)  # correlations -0.5..-0.1


def _ramped(x):
    """Rows with clearly nonzero variance and correlations away from +-1."""
    return x + _like(x, RAMPS[: x.shape[0], : x.shape[1]])


def _off_diagonal(c):
    return c * _like(c, 1.0 - np.eye(c.shape[-1]))


def _e(name, fg_fn, ref_fn, arity, case_strategy, domain=REAL, max_examples=None) -> OpEntry:
    return OpEntry(name, fg_fn, ref_fn, arity, case_strategy, domain, max_examples)


TABLE = [
    _e("cdist", _cdist_fg, _cdist_ref, 2, CDIST_CASES),
    _e("pdist", lambda x, p: fg.pdist(spread(x), p), _pdist_ref, 1, PDIST_CASES),
    _e("dist", lambda a, b, p: fg.dist(a, b, p), _dist_ref, 2, DIST_CASES, (GRID_A, GRID_B)),
    _e("cosine_similarity", lambda a, b, dim: fg.cosine_similarity(a, b, dim), _cosine_ref, 2, COSINE_CASES,
       NONZERO),
    _e("pairwise_distance", lambda a, b, p, keepdim: fg.pairwise_distance(a, b, p, keepdim=keepdim), _pairwise_ref,
       2, PAIRWISE_CASES, (GRID_A, GRID_B)),
    _e("cov", _cov_fg, _cov_ref, 1, COV_CASES),
    _e("corrcoef", lambda x: _off_diagonal(fg.corrcoef(_ramped(x))),
       lambda x: _off_diagonal(jnp.corrcoef(_ramped(x))), 1, cases(Case(((3, 5),)))),
    _e("tensor_cov_method", lambda x: x.cov(correction=0), lambda x: jnp.cov(x, ddof=0), 1, cases(Case(((2, 4),)))),
]

TORCH = {
    "cdist": lambda x1, x2, p: torch.cdist(spread(x1), spread(x2, 0.5), p),
    "pdist": lambda x, p: torch.pdist(spread(x), p),
    "dist": lambda a, b, p: torch.dist(a, b, p),
    "cosine_similarity": lambda a, b, dim: torch.cosine_similarity(a, b, dim),
    "pairwise_distance": lambda a, b, p, keepdim: torch.pairwise_distance(a, b, p, keepdim=keepdim),
    "cov": _cov_torch,
    "corrcoef": lambda x: _off_diagonal(torch.corrcoef(_ramped(x))),
    "tensor_cov_method": lambda x: x.cov(correction=0),
}


#: Entries whose ops refuse complex inputs (an OpError); every other entry is also checked on complex ones.
REAL_ONLY = {
    "cdist", "pdist", "cosine_similarity"
}
