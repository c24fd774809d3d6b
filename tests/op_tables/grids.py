"""Tensors assembled from pieces (fgraph/ops/grids.py) against pure JAX: meshgrid, cartesian_prod,
combinations, block_diag, vander, diff (with prepend/append).

``meshgrid`` returns a tuple: its grids are stacked into one output here. ``vander`` is checked on
``REAL`` values, which include 0 (the powers' gradients are finite there; the reference is
written with integer powers because ``jnp.vander``'s gradient is NaN at 0).
``triu_indices``/``tril_indices`` are integer outputs, checked in ``tests/test_products_distances.py``.
"""
import itertools

import jax.numpy as jnp
import numpy as np

import fgraph as fg
from op_harness import REAL, Case, OpEntry, cases, torch

#: No op here lacks a second derivative.
FIRST_ORDER_ONLY: dict = {}


def _e(name, fg_fn, ref_fn, arity, case_strategy, domain=REAL, max_examples=None) -> OpEntry:
    return OpEntry(name, fg_fn, ref_fn, arity, case_strategy, domain, max_examples)


MESHGRID_CASES = cases(Case(((2,), (3,)), dict(indexing="ij")), Case(((2,), (), (3,)), dict(indexing="xy")))


def _meshgrid_ref(*xs, indexing):
    return jnp.stack(jnp.meshgrid(*[jnp.reshape(x, (-1,)) for x in xs], indexing=indexing))


def _cartesian_ref(*xs):
    if len(xs) == 1:
        return xs[0]
    return jnp.stack([g.reshape(-1) for g in jnp.meshgrid(*xs, indexing="ij")], 1)


COMBINATIONS_CASES = cases(*(Case(((4,),), dict(r=r, with_replacement=w)) for r, w in [
    (2, False), (3, True), (1, False), (5, False),  # ... r > n: no combinations, shape (0, 5)
]))


def _combinations_ref(x, *, r, with_replacement):
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = np.array(list(pick(range(x.shape[0]), r)), dtype=np.int32).reshape(-1, r)
    return x[idx]


def _block_diag_ref(*xs):
    mats = [jnp.reshape(x, (1, -1)) if x.ndim < 2 else x for x in xs]
    cols = sum(m.shape[1] for m in mats)
    rows, start = [], 0
    for m in mats:
        rows.append(jnp.pad(m, ((0, 0), (start, cols - start - m.shape[1]))))
        start += m.shape[1]
    return jnp.concatenate(rows, 0)


VANDER_CASES = cases(Case(((3,),), dict(N=None, increasing=False)), Case(((4,),), dict(N=3, increasing=True)),
                     Case(((2,),), dict(N=5, increasing=False)))

def _vander_ref(x, N, increasing):
    """Integer powers (jnp.vander's gradient is NaN at 0, PyTorch's and fgraph's are finite)."""
    out = jnp.stack([x ** k for k in range(x.shape[0] if N is None else N)], 1)
    return out if increasing else out[:, ::-1]


DIFF_CASES = cases(
    Case(((3, 4),), dict(n=1, dim=-1)),
    Case(((3, 4), (1, 4), (2, 4)), dict(n=2, dim=0)),  # prepend and append
    Case(((2, 3),), dict(n=4, dim=1)),  # n > size: an empty result
)


def _diff_ref(x, *pa, n, dim):
    kwargs = dict(zip(("prepend", "append"), pa))
    return jnp.diff(x, n, axis=dim, **kwargs)


TABLE = [
    _e("meshgrid", lambda *xs, indexing: fg.stack(fg.meshgrid(*xs, indexing=indexing)), _meshgrid_ref, None,
       MESHGRID_CASES),
    _e("cartesian_prod", fg.cartesian_prod, _cartesian_ref, None, cases(Case(((2,), (3,))), Case(((2,), (1,), (2,))),
                                                                         Case(((3,),)))),
    _e("combinations", lambda x, r, with_replacement: fg.combinations(x, r, with_replacement), _combinations_ref, 1,
       COMBINATIONS_CASES),
    _e("block_diag", fg.block_diag, _block_diag_ref, None, cases(Case(((2, 3), (2,), ())), Case(((2, 2), (0, 1))))),
    _e("vander", lambda x, N, increasing: fg.vander(x, N, increasing), _vander_ref, 1, VANDER_CASES),
    _e("diff", lambda x, *pa, n, dim: fg.diff(x, n, dim, *pa), _diff_ref, None, DIFF_CASES),
]

def _torch_vander(x, N, increasing):
    """torch.vander's values; its backward fails in torch 2.13 (an in-place cumprod), so the gradient comes
    from torch's own integer powers, added as ``powers - powers.detach()`` (zero in value)."""
    powers = torch.stack([x ** k for k in range(x.shape[0] if N is None else N)], 1)
    powers = powers if increasing else powers.flip(1)
    return torch.vander(x.detach(), N, increasing) + (powers - powers.detach())


TORCH = {
    "meshgrid": lambda *xs, indexing: torch.stack(torch.meshgrid(*xs, indexing=indexing)),
    "cartesian_prod": lambda *xs: torch.cartesian_prod(*xs),
    "combinations": lambda x, r, with_replacement: torch.combinations(x, r, with_replacement),
    "block_diag": lambda *xs: torch.block_diag(*xs),
    "vander": _torch_vander,
    "diff": lambda x, *pa, n, dim: torch.diff(x, n, dim, *pa),
}
