"""Closed-form KL divergences between Gaussians on vectors, and between ``Independent`` distributions.

``KL(p || q) = 1/2 (log|S_q| - log|S_p| + tr(S_q^{-1} S_p) + (mu_q - mu_p)^T S_q^{-1} (mu_q - mu_p) - n)``,
with the trace and log-determinants taken through Cholesky factors (full covariance) or
the capacitance matrix (low-rank covariance), as torch does.

Example:
    >>> import fgraph as fg
    >>> from fgraph.distributions import kl_divergence
    >>> from fgraph.distributions import _kl_multivariate  # registers the pairs
    >>> from fgraph.distributions.multivariate_normal import MultivariateNormal
    >>> p = MultivariateNormal(fg.zeros(2), scale_tril=fg.eye(2))
    >>> q = MultivariateNormal(fg.ones(2), scale_tril=2 * fg.eye(2))
    >>> round(kl_divergence(p, q).item(), 4)
    0.8863
"""
from __future__ import annotations

import fgraph as fg
from fgraph.distributions.independent import Independent
from fgraph.distributions.kl import kl_divergence, register_kl
from fgraph.distributions.lowrank_multivariate_normal import (LowRankMultivariateNormal, _batch_lowrank_logdet,
                                                              _batch_lowrank_mahalanobis)
from fgraph.distributions.multivariate_normal import MultivariateNormal, _batch_mahalanobis, half_log_det
from fgraph.distributions.utils import sum_rightmost
from fgraph.tensor import Tensor

__all__: list = []


def _batch_trace_xxt(bmat: Tensor) -> Tensor:
    """``tr(X X^T)``: the sum of squares over the two rightmost dims."""
    return bmat.square().sum((-2, -1))


def _check_events(p: object, q: object, what: str) -> None:
    if p.event_shape != q.event_shape:
        raise ValueError(f"KL-divergence between two {what} with different event shapes cannot be computed "
                         f"({p.event_shape} vs {q.event_shape}).")


def _lowrank_logdet(d: LowRankMultivariateNormal) -> Tensor:
    return _batch_lowrank_logdet(d._unbroadcasted_cov_factor, d._unbroadcasted_cov_diag, d._capacitance_tril)


def _lowrank_mahalanobis(q: LowRankMultivariateNormal, x: Tensor) -> Tensor:
    return _batch_lowrank_mahalanobis(q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag, x,
                                      q._capacitance_tril)


def _woodbury_factor(q: LowRankMultivariateNormal) -> Tensor:
    """``A = C_L^{-1} W^T D^{-1}``, so that ``S_q^{-1} = D^{-1} - A^T A``."""
    wt_dinv = q._unbroadcasted_cov_factor.mT / q._unbroadcasted_cov_diag.unsqueeze(-2)
    return fg.linalg.solve_triangular(q._capacitance_tril, wt_dinv, upper=False)


def _common_batch(a: Tensor, b: Tensor) -> tuple:
    return tuple(fg.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2])))


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p: MultivariateNormal, q: MultivariateNormal) -> Tensor:
    _check_events(p, q, "Multivariate Normals")
    half_term1 = half_log_det(q._unbroadcasted_scale_tril) - half_log_det(p._unbroadcasted_scale_tril)
    batch = _common_batch(q._unbroadcasted_scale_tril, p._unbroadcasted_scale_tril)
    n = p.event_shape[0]
    q_tril = q._unbroadcasted_scale_tril.expand(batch + (n, n))
    p_tril = p._unbroadcasted_scale_tril.expand(batch + (n, n))
    term2 = _batch_trace_xxt(fg.linalg.solve_triangular(q_tril, p_tril, upper=False))
    term3 = _batch_mahalanobis(q._unbroadcasted_scale_tril, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrankmultivariatenormal_lowrankmultivariatenormal(p: LowRankMultivariateNormal,
                                                            q: LowRankMultivariateNormal) -> Tensor:
    _check_events(p, q, "Low Rank Multivariate Normals")
    term1 = _lowrank_logdet(q) - _lowrank_logdet(p)
    term3 = _lowrank_mahalanobis(q, q.loc - p.loc)
    # tr(S_q^{-1} S_p) = tr((D_q^{-1} - A^T A)(D_p + W_p W_p^T)), four traces of X X^T
    a = _woodbury_factor(q)
    p_diag, q_diag = p._unbroadcasted_cov_diag, q._unbroadcasted_cov_diag
    p_factor = p._unbroadcasted_cov_factor
    term21 = (p_diag / q_diag).sum(-1)
    term22 = _batch_trace_xxt(p_factor * q_diag.rsqrt().unsqueeze(-1))
    term23 = _batch_trace_xxt(a * p_diag.sqrt().unsqueeze(-2))
    term24 = _batch_trace_xxt(fg.matmul(a, p_factor))
    term2 = term21 + term22 - term23 - term24
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_multivariatenormal_lowrankmultivariatenormal(p: MultivariateNormal,
                                                     q: LowRankMultivariateNormal) -> Tensor:
    _check_events(p, q, "(Low Rank) Multivariate Normals")
    term1 = _lowrank_logdet(q) - 2 * half_log_det(p._unbroadcasted_scale_tril)
    term3 = _lowrank_mahalanobis(q, q.loc - p.loc)
    # tr(S_q^{-1} S_p) = tr((D_q^{-1} - A^T A) L_p L_p^T)
    a = _woodbury_factor(q)
    p_tril = p._unbroadcasted_scale_tril
    term21 = _batch_trace_xxt(p_tril * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1))
    term22 = _batch_trace_xxt(fg.matmul(a, p_tril))
    return 0.5 * (term1 + term21 - term22 + term3 - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrankmultivariatenormal_multivariatenormal(p: LowRankMultivariateNormal,
                                                     q: MultivariateNormal) -> Tensor:
    _check_events(p, q, "(Low Rank) Multivariate Normals")
    term1 = 2 * half_log_det(q._unbroadcasted_scale_tril) - _lowrank_logdet(p)
    term3 = _batch_mahalanobis(q._unbroadcasted_scale_tril, q.loc - p.loc)
    # tr(S_q^{-1} S_p) = |L_q^{-1} W_p|^2 + |L_q^{-1} D_p^{1/2}|^2
    n = p.event_shape[0]
    p_diag = fg.diag_embed(p._unbroadcasted_cov_diag.sqrt())
    batch = tuple(fg.broadcast_shapes(_common_batch(q._unbroadcasted_scale_tril, p._unbroadcasted_cov_factor),
                                      tuple(p_diag.shape[:-2])))
    q_tril = q._unbroadcasted_scale_tril.expand(batch + (n, n))
    p_factor = p._unbroadcasted_cov_factor.expand(batch + (n, p.cov_factor.shape[-1]))
    p_diag = p_diag.expand(batch + (n, n))
    term21 = _batch_trace_xxt(fg.linalg.solve_triangular(q_tril, p_factor, upper=False))
    term22 = _batch_trace_xxt(fg.linalg.solve_triangular(q_tril, p_diag, upper=False))
    return 0.5 * (term1 + term21 + term22 + term3 - p.event_shape[0])


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("KL(Independent || Independent) needs equal reinterpreted_batch_ndims, got "
                                  f"{p.reinterpreted_batch_ndims} and {q.reinterpreted_batch_ndims}.")
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)
