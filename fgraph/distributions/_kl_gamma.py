"""Closed-form KL divergences of the gamma family (Gamma, Beta, Dirichlet, Poisson, InverseGamma) with
each other and with Normal, Exponential, Uniform and Gumbel: the pairs torch registers.

Each function is ``KL(p || q)`` for its registered pair of types; see :mod:`fgraph.distributions.kl`.
A pair whose supports do not nest (``q`` is zero where ``p`` is not) is ``inf``.

Example:
    >>> import fgraph as fg
    >>> from fgraph.distributions import kl_divergence
    >>> from fgraph.distributions.gamma import Gamma
    >>> import fgraph.distributions._kl_gamma
    >>> round(kl_divergence(Gamma(2.0, 1.0), Gamma(2.0, 2.0)).item(), 4)
    0.6137
"""
from __future__ import annotations

import math

import fgraph as fg
from fgraph.distributions.beta import Beta
from fgraph.distributions.dirichlet import Dirichlet
from fgraph.distributions.exponential import Exponential
from fgraph.distributions.gamma import Gamma
from fgraph.distributions.gumbel import Gumbel
from fgraph.distributions.inverse_gamma import InverseGamma
from fgraph.distributions.kl import infinite_like, kl_divergence, register_kl, x_log_x
from fgraph.distributions.normal import Normal
from fgraph.distributions.poisson import Poisson
from fgraph.distributions.uniform import Uniform
from fgraph.distributions.utils import euler_constant
from fgraph.tensor import Tensor

__all__: list = []


def _inf_where(mask: Tensor, value: Tensor) -> Tensor:
    return fg.where(mask, infinite_like(value), value)


# -- same family ----------------------------------------------------------------------------------------------------
@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> Tensor:
    sum_params_p = p.concentration1 + p.concentration0
    sum_params_q = q.concentration1 + q.concentration0
    t1 = q.concentration1.lgamma() + q.concentration0.lgamma() + sum_params_p.lgamma()
    t2 = p.concentration1.lgamma() + p.concentration0.lgamma() + sum_params_q.lgamma()
    t3 = (p.concentration1 - q.concentration1) * fg.digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * fg.digamma(p.concentration0)
    t5 = (sum_params_q - sum_params_p) * fg.digamma(sum_params_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = sum_p.lgamma() - sum_q.lgamma()
    t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = p.concentration.digamma() - sum_p.digamma().unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = fg.lgamma(q.concentration) - fg.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * fg.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(InverseGamma, InverseGamma)
def _kl_inverse_gamma_inverse_gamma(p: InverseGamma, q: InverseGamma) -> Tensor:
    """KL is invariant under the shared bijection ``x -> 1 / x``: the base gammas' KL (torch's transformed pair)."""
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p: Poisson, q: Poisson) -> Tensor:
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


# -- Beta against others --------------------------------------------------------------------------------------------
@register_kl(Beta, Exponential)
def _kl_beta_exponential(p: Beta, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * (p.concentration1 / (p.concentration1 + p.concentration0))


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p: Beta, q: Gamma) -> Tensor:
    t1 = -p.entropy()
    t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
    t3 = (q.concentration - 1) * (p.concentration1.digamma() - (p.concentration1 + p.concentration0).digamma())
    t4 = q.rate * p.concentration1 / (p.concentration1 + p.concentration0)
    return t1 + t2 - t3 + t4


@register_kl(Beta, Normal)
def _kl_beta_normal(p: Beta, q: Normal) -> Tensor:
    e_beta = p.concentration1 / (p.concentration1 + p.concentration0)
    var_normal = q.scale.pow(2)
    t1 = -p.entropy()
    t2 = 0.5 * (var_normal * 2 * math.pi).log()
    t3 = (e_beta * (1 - e_beta) / (p.concentration1 + p.concentration0 + 1) + e_beta.pow(2)) * 0.5
    t4 = q.loc * e_beta
    t5 = q.loc.pow(2) * 0.5
    return t1 + t2 + (t3 - t4 + t5) / var_normal


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p: Beta, q: Uniform) -> Tensor:
    result = -p.entropy() + (q.high - q.low).log()
    return _inf_where((q.low > 0.0) | (q.high < 1.0), result)


# -- Gamma against others -------------------------------------------------------------------------------------------
@register_kl(Gamma, Beta)
@register_kl(Gamma, Uniform)
def _kl_gamma_infinity(p: Gamma, q: object) -> Tensor:
    return infinite_like(p.concentration)


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p: Gamma, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p: Gamma, q: Gumbel) -> Tensor:
    beta_scale_prod = p.rate * q.scale
    loc_scale_ratio = q.loc / q.scale
    t1 = (p.concentration - 1) * p.concentration.digamma() - p.concentration.lgamma() - p.concentration
    t2 = beta_scale_prod.log() + p.concentration / beta_scale_prod
    t3 = fg.exp(loc_scale_ratio) * (1 + beta_scale_prod.reciprocal()).pow(-p.concentration) - loc_scale_ratio
    return t1 + t2 + t3


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p: Gamma, q: Normal) -> Tensor:
    var_normal = q.scale.pow(2)
    beta_sqr = p.rate.pow(2)
    t1 = 0.5 * fg.log(beta_sqr * var_normal * 2 * math.pi) - p.concentration - p.concentration.lgamma()
    t2 = 0.5 * (p.concentration.pow(2) + p.concentration) / beta_sqr
    t3 = q.loc * p.concentration / p.rate
    t4 = 0.5 * q.loc.pow(2)
    return t1 + (p.concentration - 1) * p.concentration.digamma() + (t2 - t3 + t4) / var_normal


# -- others against Beta and Gamma ----------------------------------------------------------------------------------
@register_kl(Exponential, Beta)
def _kl_exponential_beta(p: Exponential, q: Beta) -> Tensor:
    return infinite_like(p.rate)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p: Exponential, q: Gamma) -> Tensor:
    ratio = q.rate / p.rate
    t1 = -q.concentration * fg.log(ratio)
    return t1 + ratio + q.concentration.lgamma() + q.concentration * euler_constant - (1 + euler_constant)


@register_kl(Gumbel, Beta)
@register_kl(Gumbel, Gamma)
@register_kl(Normal, Beta)
@register_kl(Normal, Gamma)
def _kl_real_line_infinity(p: Gumbel, q: object) -> Tensor:
    return infinite_like(p.loc)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p: Uniform, q: Beta) -> Tensor:
    common_term = p.high - p.low
    t1 = fg.log(common_term)
    t2 = (q.concentration1 - 1) * (x_log_x(p.high) - x_log_x(p.low) - common_term) / common_term
    t3 = (q.concentration0 - 1) * (x_log_x(1 - p.high) - x_log_x(1 - p.low) + common_term) / common_term
    t4 = q.concentration1.lgamma() + q.concentration0.lgamma() - (q.concentration1 + q.concentration0).lgamma()
    result = t3 + t4 - t1 - t2
    return _inf_where((p.high > 1.0) | (p.low < 0.0), result)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p: Uniform, q: Gamma) -> Tensor:
    common_term = p.high - p.low
    t1 = common_term.log()
    t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * (x_log_x(p.high) - x_log_x(p.low) - common_term) / common_term
    t4 = q.rate * (p.high + p.low) / 2
    result = -t1 + t2 + t3 + t4
    return _inf_where(p.low < 0.0, result)
