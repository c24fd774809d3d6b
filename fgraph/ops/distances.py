"""Distances and second moments: cdist, pdist, dist, cov, corrcoef (and the top-level
``cosine_similarity`` / ``pairwise_distance`` of ``fgraph.nn.functional``).

``cdist`` is one primitive (``CdistBackward0``) whose rule is PyTorch's
``_cdist_backward`` written in fgraph ops: zero where the distance is zero (coincident
points give 0, never NaN, for every ``p``), ``sign(diff)`` for ``p = 1``, and for
``p = inf`` every coordinate that attains the maximum gets the full gradient (as
PyTorch's cdist; ``dist``, a norm, shares it evenly instead, as ``torch.dist``).
The distances are always computed from the coordinate differences:
``compute_mode`` is checked and accepted for compatibility, but the matrix-product
shortcut PyTorch may take for ``p = 2`` (faster for large inputs, inexact by
cancellation, with a useless gradient at coincident points) is never used.
``pdist`` selects the upper triangle of ``cdist(x, x)``; ``dist`` is a primitive
(``DistBackward0``) with the rule of ``fgraph.linalg.vector_norm``; ``cov`` and
``corrcoef`` are composites.

Example:
    >>> import fgraph as fg
    >>> a = fg.tensor([[0.0, 0.0], [3.0, 4.0]], requires_grad=True)
    >>> d = fg.cdist(a, a)
    >>> d.tolist(), d.grad_fn.name()
    ([[0.0, 5.0], [5.0, 0.0]], 'CdistBackward0')
    >>> fg.grad(d.sum(), [a])[0].tolist()
    [[-1.2000000476837158, -1.600000023841858], [1.2000000476837158, 1.600000023841858]]
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Optional

import jax.numpy as jnp
import numpy as np

from fgraph._dtypes import default_float_dtype
from fgraph.errors import OpError
from fgraph.nn.functional.basic import cosine_similarity, pairwise_distance
from fgraph.ops._declare import RuleContext, apply_op, declare
from fgraph.ops._linalg_util import check_tensor
from fgraph.ops.complex_parts import complex, conj, imag, real
from fgraph.ops.elementwise import abs as fg_abs
from fgraph.ops.elementwise import clamp, eq, logical_or, pow, sign, sqrt, to_dtype, where
from fgraph.ops.linalg import matmul
from fgraph.ops.linalg_norms import _vector_norm_forward, _vector_norm_rule
from fgraph.ops.triangular import diagonal
from fgraph.tensor import Tensor, _wrap

_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


# -- cdist --------------------------------------------------------------------------------------------------
def _cdist_forward(x1, x2, *, p):
    # Roots and powers below 1 are taken away from 0 (``where``), so that JAX's own derivative of this
    # kernel (under jax.grad of a traced fgraph program) is 0 there, like the rule, instead of NaN.
    diff = x1[..., :, None, :] - x2[..., None, :, :]
    a = jnp.abs(diff)
    if p == 0:
        return jnp.sum(diff != 0, axis=-1).astype(diff.dtype)
    if p == 1:
        return jnp.sum(a, axis=-1)
    if p == math.inf:
        return jnp.max(a, axis=-1, initial=0)
    if p == 2:
        s = jnp.sum(diff * diff, axis=-1)
    else:
        if p < 1:
            flat = a == 0
            a = jnp.where(flat, 0.0, jnp.where(flat, 1.0, a) ** p)
        else:
            a = a ** p
        s = jnp.sum(a, axis=-1)
    zero = s == 0
    s = jnp.where(zero, 1.0, s)
    return jnp.where(zero, 0.0, jnp.sqrt(s) if p == 2 else s ** (1.0 / p)).astype(diff.dtype)


def _cdist_rule(ctx, g):
    """PyTorch's ``_cdist_backward``: the gradient of every pair's distance w.r.t. its difference vector."""
    x1, x2 = ctx.inputs
    p = ctx.params.p
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)  # (..., P, R, M)
    gd = g.unsqueeze(-1)
    d = ctx.result.unsqueeze(-1)
    zero = eq(d, 0)
    if p == 0:
        per_diff = diff * 0.0
    elif p == 1:
        per_diff = sign(diff) * gd
    elif p == 2:
        per_diff = where(zero, 0.0, diff * (gd / where(zero, 1.0, d)))
    elif p == math.inf:
        per_diff = sign(diff) * to_dtype(eq(fg_abs(diff), d), diff.dtype) * gd
    else:
        scale = gd / pow(where(zero, 1.0, d), p - 1)
        if p < 1:  # |diff|^(p-1) blows up where diff == 0: 0 there, as PyTorch
            flat = eq(diff, 0)
            zero = logical_or(zero, flat)
            per_diff = sign(diff) * pow(where(flat, 1.0, fg_abs(diff)), p - 1) * scale
        elif p < 2:
            per_diff = sign(diff) * pow(fg_abs(diff), p - 1) * scale
        else:
            per_diff = diff * pow(fg_abs(diff), p - 2) * scale
        per_diff = where(zero, 0.0, per_diff)
    g1 = per_diff.sum(-2) if ctx.needs[0] else None
    g2 = -per_diff.sum(-3) if ctx.needs[1] else None
    return g1, g2


CDIST = declare("cdist", _cdist_forward, _cdist_rule, params=("p",), save_inputs=True, save_result=True,
                real_only=True)  # as torch's


def _norm_order(p: Any, op: str) -> Any:
    if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)):
        raise TypeError(f"{op}: p must be a number (0, 1, 2, inf, ...), got {type(p).__name__}.")
    p = float(p)
    if p < 0 or math.isnan(p):
        raise OpError(f"{op}: only non-negative p values are supported, got p={p}.")
    return int(p) if p.is_integer() else p


def _check_float(x: Tensor, op: str, name: str) -> None:
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise OpError(f"{op}: only floating-point dtypes are supported for {name}, got {x.dtype} (shape {x.shape}); "
                      "convert with .float() or .double().")


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: Optional[str] = None) -> Tensor:
    """p-norm distances between the rows of ``x1`` ``(..., P, M)`` and of ``x2`` ``(..., R, M)``: shape
    ``(..., P, R)``, batch dims broadcast. ``p >= 0`` (``0`` counts differing coordinates, ``inf`` is the
    largest difference). ``compute_mode`` is accepted; the distances are always exact (see the module docstring).

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([[0.0, 0.0], [1.0, 1.0]])
        >>> fg.cdist(x, fg.tensor([[1.0, 0.0]]), p=1).tolist()
        [[1.0], [1.0]]
    """
    check_tensor(x1, "cdist", "x1")
    check_tensor(x2, "cdist", "x2")
    for x, name in ((x1, "x1"), (x2, "x2")):
        if x.ndim < 2:
            raise OpError(f"cdist: {name} must have at least 2 dimensions (..., rows, features), got shape {x.shape}.")
        _check_float(x, "cdist", name)
    if x1.shape[-1] != x2.shape[-1]:
        raise OpError(f"cdist: x1 and x2 must have the same number of columns, got shapes {x1.shape} and "
                      f"{x2.shape} ({x1.shape[-1]} != {x2.shape[-1]}).")
    if x1.dtype != x2.dtype:
        raise OpError(f"cdist: x1 ({x1.dtype}) and x2 ({x2.dtype}) must have the same dtype.")
    try:
        np.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    except ValueError:
        raise OpError(f"cdist: the batch dimensions of x1 {x1.shape} and x2 {x2.shape} do not broadcast.") from None
    if compute_mode is not None and compute_mode not in _MODES:
        raise OpError(f"cdist: {compute_mode!r} is not a valid value for compute_mode; expected one of {_MODES}.")
    return apply_op(CDIST, (x1, x2), CDIST.Params(_norm_order(p, "cdist")))


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """p-norm distances between all pairs of rows ``i < j`` of ``input`` ``(N, M)``, in row-major order:
    shape ``(N * (N - 1) / 2,)``. Gradients as :func:`cdist`.

    Example:
        >>> import fgraph as fg
        >>> fg.pdist(fg.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]])).tolist()
        [5.0, 1.0, 4.242640495300293]
    """
    check_tensor(input, "pdist", "input")
    if input.ndim != 2:
        raise OpError(f"pdist: input must be 2-D (rows, features), got shape {input.shape}.")
    _check_float(input, "pdist", "input")
    n = input.shape[0]
    rows, cols = np.triu_indices(n, 1)
    full = apply_op(CDIST, (input, input), CDIST.Params(_norm_order(p, "pdist")))
    return full.reshape(n * n)[_wrap(jnp.asarray(rows * n + cols, dtype=jnp.int32))]


def _dist_forward(a, b, *, ord, dims, keepdim):
    return _vector_norm_forward(a - b, ord=ord, dims=dims, keepdim=keepdim)


def _dist_rule(ctx, g):
    """The p-norm's rule (``fgraph.linalg.vector_norm``) on ``input - other``; ``other`` gets its negative."""
    a, b = ctx.inputs
    diff = a - b
    norm_ctx = RuleContext((diff,), ctx.result, ctx.params, (True,), ((diff.shape, diff.dtype),))
    (g_diff,) = _vector_norm_rule(norm_ctx, g)
    return (g_diff if ctx.needs[0] else None), (-g_diff if ctx.needs[1] else None)


# dist of complex tensors is the norm of |input - other| (see dist), so the primitive sees real ones only.
DIST = declare("dist", _dist_forward, _dist_rule, params=("ord", "dims", "keepdim"), save_inputs=True,
               save_result=True, real_only=True)


def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """The p-norm of ``input - other`` (broadcast), over all elements (``DistBackward0``; ties of the
    inf-norms share the gradient evenly, as ``torch.dist``).

    Example:
        >>> import fgraph as fg
        >>> fg.dist(fg.tensor([3.0, 4.0]), fg.zeros(2)).item(), fg.dist(fg.tensor([3.0, 4.0]), fg.zeros(2), 1).item()
        (5.0, 7.0)
    """
    check_tensor(input, "dist", "input")
    check_tensor(other, "dist", "other")
    if input.dtype.kind == "c" or other.dtype.kind == "c":  # the norm of |input - other|, as PyTorch
        input, other = fg_abs(input - other), _wrap(jnp.zeros((), real(input).dtype))
    _check_float(input, "dist", "input")
    _check_float(other, "dist", "other")
    try:
        nd = len(np.broadcast_shapes(input.shape, other.shape))
    except ValueError:
        raise OpError(f"dist: shapes {input.shape} and {other.shape} do not broadcast.") from None
    if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)):
        raise TypeError(f"dist: p must be a number, got {type(p).__name__}.")
    p = float(p)
    if nd and (p < 0 or math.isinf(p)) and 0 in np.broadcast_shapes(input.shape, other.shape):
        raise OpError(f"dist: a norm of order {p} of an empty tensor is undefined.")
    return apply_op(DIST, (input, other), DIST.Params(int(p) if p.is_integer() else p, tuple(range(nd)), False))


# -- covariance and correlation -----------------------------------------------------------------------------------
def _check_weights(w: Any, name: str, n: int, integer: bool) -> Tensor:
    check_tensor(w, "cov", name)
    if w.ndim != 1 or w.shape[0] != n:
        raise OpError(f"cov: {name} must be 1-D with one weight per observation ({n}), got shape {w.shape}.")
    kind = jnp.integer if integer else jnp.floating
    if not jnp.issubdtype(w.dtype, kind):
        raise OpError(f"cov: {name} must have {'an integer' if integer else 'a floating-point'} dtype, got {w.dtype}.")
    return w


def cov(input: Tensor, *, correction: int = 1, fweights: Optional[Tensor] = None,
        aweights: Optional[Tensor] = None) -> Tensor:
    """Covariance of the variables in the rows of ``input`` (observations in the columns; 1-D: one variable),
    with PyTorch's ``correction`` (1: unbiased), integer frequency weights ``fweights`` and float observation
    weights ``aweights``. Zero or negative degrees of freedom give inf/NaN (PyTorch's values; it warns only
    when they are known without weights, and so does fgraph). Weights are not checked for negative values
    (that would read them on the host; PyTorch raises).

    Example:
        >>> import fgraph as fg
        >>> fg.cov(fg.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])).tolist()
        [[1.0, -1.0], [-1.0, 1.0]]
        >>> fg.cov(fg.tensor([1.0, 2.0, 4.0]), correction=0, fweights=fg.tensor([2, 1, 1])).item()
        1.5
    """
    check_tensor(input, "cov", "input")
    if input.ndim > 2:
        raise OpError(f"cov: input must have at most 2 dimensions (variables, observations), got shape {input.shape}.")
    if isinstance(correction, bool) or not isinstance(correction, (int, float, np.integer, np.floating)):
        raise TypeError(f"cov: correction must be a number, got {type(correction).__name__}.")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        x = to_dtype(x, default_float_dtype())
    real_dtype = x.dtype.type(0).real.dtype
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = _check_weights(fweights, "fweights", n, integer=True)
    if aweights is not None:
        _check_weights(aweights, "aweights", n, integer=False)
        w = aweights if w is None else w * aweights
    if w is None:
        w_sum: Any = n
        avg = x.sum(1) / n
        norm_factor: Any = n - correction
        if norm_factor <= 0:
            warnings.warn("cov: degrees of freedom is <= 0. Correction should be strictly less than the number of "
                          "observations.", UserWarning, stacklevel=2)
            norm_factor = 0
    else:
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
        if correction == 0:
            norm_factor = w_sum
        elif aweights is None:
            norm_factor = w_sum - correction
        else:
            norm_factor = w_sum - correction * (w * aweights).sum() / w_sum
        norm_factor = clamp(to_dtype(norm_factor, real_dtype), min=0)
    xm = x - avg.unsqueeze(1)
    c = matmul(xm if w is None else xm * w, conj(xm).mT)  # conj: the Hermitian covariance of complex rows
    return (c / norm_factor).squeeze()


def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of the variables in the rows of ``input``, clipped to ``[-1, 1]``.

    Example:
        >>> import fgraph as fg
        >>> fg.corrcoef(fg.tensor([[0.0, 1.0, 2.0], [0.0, 2.0, 4.5]])).tolist()[0][0]
        1.0
    """
    c = cov(input)
    if c.ndim == 0:  # one variable: 1 (NaN where its variance is 0), as PyTorch
        return c / c
    std = sqrt(real(diagonal(c)))
    c = c / std.unsqueeze(1) / std.unsqueeze(0)
    if c.dtype.kind == "c":  # each part clipped, as PyTorch
        return complex(clamp(real(c), -1, 1), clamp(imag(c), -1, 1))
    return clamp(c, -1, 1)


#: Exported as ``fgraph.<name>``.
__all__ = ["cdist", "pdist", "dist", "cosine_similarity", "pairwise_distance", "cov", "corrcoef"]
#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {"dist": dist, "cov": cov, "corrcoef": corrcoef}
