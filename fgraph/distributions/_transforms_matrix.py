"""Transforms onto the simplex and onto Cholesky factors and positive-definite matrices.

``SoftmaxTransform``, ``StickBreakingTransform``, ``LowerCholeskyTransform``,
``PositiveDefiniteTransform`` and ``CorrCholeskyTransform``; re-exported from
:mod:`fgraph.distributions.transforms`.

Example:
    >>> import fgraph as fg
    >>> from fgraph.distributions.transforms import StickBreakingTransform
    >>> t = StickBreakingTransform()
    >>> y = t(fg.zeros(3))
    >>> y.shape, round(y.sum().item(), 6), [round(v, 6) for v in t.inv(y).tolist()]
    ((4,), 1.0, [0.0, 0.0, 0.0])
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import fgraph as fg
import fgraph.nn.functional as F
from fgraph.distributions import constraints
from fgraph.distributions._transform_base import Transform
from fgraph.distributions._transforms_elementwise import clipped_sigmoid
from fgraph.distributions.utils import tril_matrix_to_vec, vec_to_tril_matrix
from fgraph.tensor import Tensor

__all__ = ["SoftmaxTransform", "StickBreakingTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
           "CorrCholeskyTransform"]


def _at_least_1d(name: str, shape: Sequence[int]) -> tuple:
    if len(shape) < 1:
        raise ValueError(f"{name}: too few dimensions on input (needs a vector, got shape {tuple(shape)})")
    return tuple(shape)


class SoftmaxTransform(Transform):
    """``y = exp(x) / sum(exp(x))`` over the last dim (not bijective: ``inv`` is ``log``)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, SoftmaxTransform)

    def _call(self, x: Tensor) -> Tensor:
        probs = (x - x.max(-1, keepdim=True).values).exp()
        return probs / probs.sum(-1, keepdim=True)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def forward_shape(self, shape: Sequence[int]) -> tuple:
        return _at_least_1d("SoftmaxTransform", shape)

    def inverse_shape(self, shape: Sequence[int]) -> tuple:
        return _at_least_1d("SoftmaxTransform", shape)


def _stick_offset(n: int, like: Tensor) -> Tensor:
    """``log([n, n - 1, ..., 1])``: centres stick ``k`` so that ``x = 0`` maps to the uniform point."""
    return fg.arange(n, 0, -1, dtype=like.dtype).log()


class StickBreakingTransform(Transform):
    """``R^K`` to the ``K + 1``-simplex by stick breaking (bijective; mixes coordinates)."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, StickBreakingTransform)

    def _call(self, x: Tensor) -> Tensor:
        z = clipped_sigmoid(x - _stick_offset(x.shape[-1], x))
        remaining = (1 - z).cumprod(-1)
        return F.pad(z, (0, 1), value=1.0) * F.pad(remaining, (1, 0), value=1.0)

    def _inverse(self, y: Tensor) -> Tensor:
        y_crop = y[..., :-1]
        rest = (1 - y_crop.cumsum(-1)).clamp(min=float(fg.finfo(y.dtype).tiny))
        return y_crop.log() - rest.log() + _stick_offset(y_crop.shape[-1], y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        x = x - _stick_offset(x.shape[-1], x)
        return (-x + F.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape: Sequence[int]) -> tuple:
        shape = _at_least_1d("StickBreakingTransform", shape)
        return shape[:-1] + (shape[-1] + 1,)

    def inverse_shape(self, shape: Sequence[int]) -> tuple:
        shape = _at_least_1d("StickBreakingTransform", shape)
        return shape[:-1] + (shape[-1] - 1,)


class LowerCholeskyTransform(Transform):
    """Square matrices to lower-triangular ones with a positive diagonal (``exp`` of the diagonal)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, LowerCholeskyTransform)

    def _call(self, x: Tensor) -> Tensor:
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(Transform):
    """Square matrices to positive-definite ones: ``L L^T`` of their :class:`LowerCholeskyTransform`."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, PositiveDefiniteTransform)

    def _call(self, x: Tensor) -> Tensor:
        lower = LowerCholeskyTransform()(x)
        return lower @ lower.mT

    def _inverse(self, y: Tensor) -> Tensor:
        return LowerCholeskyTransform().inv(fg.linalg.cholesky(y))


class CorrCholeskyTransform(Transform):
    """``D (D - 1) / 2`` reals to the Cholesky factor of a ``D x D`` correlation matrix.

    Each row of the strictly lower triangle, squashed by ``tanh``, is turned into a unit-norm row
    by a signed stick breaking: entry ``j`` takes ``r_j`` of the length ``sqrt(1 - sum_{k<j} y_k^2)``
    left, and the diagonal takes the rest.
    """

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, CorrCholeskyTransform)

    def _call(self, x: Tensor) -> Tensor:
        eps = float(fg.finfo(x.dtype).eps)
        r = vec_to_tril_matrix(x.tanh().clamp(min=-1 + eps, max=1 - eps), diag=-1)
        remaining = (1 - r.square()).sqrt().cumprod(-1)
        r = r + fg.eye(r.shape[-1], dtype=r.dtype)
        return r * F.pad(remaining[..., :-1], (1, 0), value=1.0)

    def _inverse(self, y: Tensor) -> Tensor:
        left = 1 - (y * y).cumsum(-1)
        left_before = F.pad(left[..., :-1], (1, 0), value=1.0)
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(left_before, diag=-1).sqrt()
        return (t.log1p() - t.neg().log1p()) / 2

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        left = 1 - (y * y).cumsum(-1)
        stick_breaking = 0.5 * tril_matrix_to_vec(left, diag=-2).log().sum(-1)
        tanh = -2 * (x + F.softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking + tanh

    def forward_shape(self, shape: Sequence[int]) -> tuple:
        shape = _at_least_1d("CorrCholeskyTransform", shape)
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError(f"CorrCholeskyTransform: the last dim ({n}) is not D * (D - 1) / 2 for any D")
        return shape[:-1] + (d, d)

    def inverse_shape(self, shape: Sequence[int]) -> tuple:
        shape = tuple(shape)
        if len(shape) < 2:
            raise ValueError(f"CorrCholeskyTransform: too few dimensions on input (got shape {shape})")
        if shape[-2] != shape[-1]:
            raise ValueError(f"CorrCholeskyTransform: the input is not square (shape {shape})")
        d = shape[-1]
        return shape[:-2] + (d * (d - 1) // 2,)
