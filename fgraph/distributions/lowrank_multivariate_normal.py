"""``LowRankMultivariateNormal(loc, cov_factor, cov_diag)``: a Gaussian with covariance ``W W^T + diag(D)``.

``W`` (``cov_factor``) is ``n x m`` with a small rank ``m``. The log-determinant and the
Mahalanobis distance never touch an ``n x n`` matrix: the matrix determinant lemma and
the Woodbury identity reduce both to the ``m x m`` "capacitance" matrix
``C = I + W^T D^{-1} W`` and its Cholesky factor.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
    >>> d = LowRankMultivariateNormal(fg.zeros(3), fg.tensor([[1.0], [0.5], [0.0]]), fg.ones(3))
    >>> x = d.rsample((4,), key=jax.random.key(0))
    >>> d.event_shape, x.shape, d.log_prob(x).shape
    ((3,), (4, 3), (4,))
    >>> [round(v, 4) for v in d.variance.tolist()]
    [2.0, 1.25, 1.0]
"""
from __future__ import annotations

import math
from typing import Any, Optional

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions.distribution import Distribution
from fgraph.distributions.multivariate_normal import _batch_mahalanobis, _batch_mv
from fgraph.distributions.utils import as_float, lazy_property, split_key, standard_normal
from fgraph.tensor import Tensor

__all__ = ["LowRankMultivariateNormal"]


def _plus_identity(k: Tensor) -> Tensor:
    return k + fg.eye(k.shape[-1], dtype=k.dtype)


def _batch_capacitance_tril(w: Tensor, d: Tensor) -> Tensor:
    """The Cholesky factor of ``I + W^T D^{-1} W`` (batched ``W``, diagonal ``D`` as a vector)."""
    wt_dinv = w.mT / d.unsqueeze(-2)
    return fg.linalg.cholesky(_plus_identity(fg.matmul(wt_dinv, w)))


def _batch_lowrank_logdet(w: Tensor, d: Tensor, capacitance_tril: Tensor) -> Tensor:
    """``log |W W^T + D| = log |C| + log |D|`` (the matrix determinant lemma)."""
    return 2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + d.log().sum(-1)


def _batch_lowrank_mahalanobis(w: Tensor, d: Tensor, x: Tensor, capacitance_tril: Tensor) -> Tensor:
    """``x^T (W W^T + D)^{-1} x`` by Woodbury: ``x^T D^{-1} x - |C_L^{-1} W^T D^{-1} x|^2``."""
    wt_dinv = w.mT / d.unsqueeze(-2)
    wt_dinv_x = _batch_mv(wt_dinv, x)
    return (x.square() / d).sum(-1) - _batch_mahalanobis(capacitance_tril, wt_dinv_x)


class LowRankMultivariateNormal(Distribution):
    """The multivariate normal with mean ``loc`` and covariance ``cov_factor @ cov_factor.T + diag(cov_diag)``.

    Shapes: ``loc`` is ``batch + (n,)``, ``cov_factor`` is ``batch + (n, m)``, ``cov_diag`` is
    ``batch + (n,)``; their batch dims broadcast.
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Any, cov_factor: Any, cov_diag: Any, validate_args: Optional[bool] = None) -> None:
        like = next((v for v in (loc, cov_factor, cov_diag) if isinstance(v, Tensor)), None)
        loc, cov_factor, cov_diag = (as_float(v, like) for v in (loc, cov_factor, cov_diag))
        if loc.dim() < 1:
            raise ValueError("LowRankMultivariateNormal: loc must be at least one-dimensional (a vector of means); "
                             f"got shape {tuple(loc.shape)}.")
        event_shape = tuple(loc.shape[-1:])
        if cov_factor.dim() < 2:
            raise ValueError("LowRankMultivariateNormal: cov_factor must be at least two-dimensional, with optional "
                             f"leading batch dimensions (got shape {tuple(cov_factor.shape)}).")
        if tuple(cov_factor.shape[-2:-1]) != event_shape:
            raise ValueError(f"LowRankMultivariateNormal: cov_factor must be a batch of matrices with shape "
                             f"{event_shape[0]} x m (got shape {tuple(cov_factor.shape)}).")
        if tuple(cov_diag.shape[-1:]) != event_shape:
            raise ValueError(f"LowRankMultivariateNormal: cov_diag must be a batch of vectors with shape "
                             f"{event_shape} (got shape {tuple(cov_diag.shape)}).")
        try:
            batch_shape = tuple(fg.broadcast_shapes(tuple(loc.shape[:-1]), tuple(cov_factor.shape[:-2]),
                                                    tuple(cov_diag.shape[:-1])))
        except (RuntimeError, ValueError) as err:
            raise ValueError(f"Incompatible batch shapes: loc {tuple(loc.shape)}, cov_factor "
                             f"{tuple(cov_factor.shape)}, cov_diag {tuple(cov_diag.shape)}") from err
        self.loc = loc.expand(batch_shape + event_shape)
        self.cov_factor = cov_factor.expand(batch_shape + tuple(cov_factor.shape[-2:]))
        self.cov_diag = cov_diag.expand(batch_shape + event_shape)
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any,
               _instance: Optional["LowRankMultivariateNormal"] = None) -> "LowRankMultivariateNormal":
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = tuple(batch_shape)
        loc_shape = batch_shape + self._event_shape
        new.loc = self.loc.expand(loc_shape)
        new.cov_diag = self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + tuple(self.cov_factor.shape[-1:]))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        super(LowRankMultivariateNormal, new).__init__(batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self) -> tuple:
        return self._batch_shape + self._event_shape + self._event_shape

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @lazy_property
    def variance(self) -> Tensor:
        var = self._unbroadcasted_cov_factor.square().sum(-1) + self._unbroadcasted_cov_diag
        return var.expand(self._batch_shape + self._event_shape)

    @lazy_property
    def scale_tril(self) -> Tensor:
        # Sigma = D^{1/2} (I + D^{-1/2} W W^T D^{-1/2}) D^{1/2}: factor the bracket, scale its rows
        sqrt_d = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        dinvsqrt_w = self._unbroadcasted_cov_factor / sqrt_d
        k = _plus_identity(fg.matmul(dinvsqrt_w, dinvsqrt_w.mT))
        return (sqrt_d * fg.linalg.cholesky(k)).expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        w = self._unbroadcasted_cov_factor
        cov = fg.matmul(w, w.mT) + fg.diag_embed(self._unbroadcasted_cov_diag)
        return cov.expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        wt_dinv = self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)
        a = fg.linalg.solve_triangular(self._capacitance_tril, wt_dinv, upper=False)
        precision = fg.diag_embed(self._unbroadcasted_cov_diag.reciprocal()) - fg.matmul(a.mT, a)
        return precision.expand(self._matrix_shape())

    def rsample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        shape = self._extended_shape(sample_shape)
        w_shape = shape[:-1] + tuple(self.cov_factor.shape[-1:])
        key_w, key_d = split_key(key, 2)
        eps_w = standard_normal(w_shape, self.loc.dtype, key_w, generator)
        eps_d = standard_normal(shape, self.loc.dtype, key_d, generator)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_w)
                + self._unbroadcasted_cov_diag.sqrt() * eps_d)

    def _log_det(self) -> Tensor:
        return _batch_lowrank_logdet(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                     self._capacitance_tril)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = _batch_lowrank_mahalanobis(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, diff,
                                       self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._log_det() + m)

    def entropy(self) -> Tensor:
        h = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return h if len(self._batch_shape) == 0 else h.expand(self._batch_shape)
