"""Closed-form KL divergences of the Bernoulli family: Bernoulli, Binomial, Geometric, OneHotCategorical,
ContinuousBernoulli, and their pairs with Poisson, Normal, Uniform, Exponential (and the pairs torch
registers as infinite). Each function is ``KL(p || q)`` for its registered pair of types.

Example:
    >>> import fgraph as fg
    >>> from fgraph.distributions import kl_divergence
    >>> from fgraph.distributions.bernoulli import Bernoulli
    >>> from fgraph.distributions import _kl_discrete  # noqa: F401  (registers the pairs)
    >>> round(kl_divergence(Bernoulli(0.5), Bernoulli(0.25)).item(), 4)
    0.1438
"""
from __future__ import annotations

import math

import fgraph as fg
import fgraph.nn.functional as F
from fgraph.distributions._kl_common import _kl_categorical_categorical
from fgraph.distributions.bernoulli import Bernoulli
from fgraph.distributions.beta import Beta
from fgraph.distributions.binomial import Binomial
from fgraph.distributions.continuous_bernoulli import ContinuousBernoulli
from fgraph.distributions.distribution import all_true
from fgraph.distributions.exponential import Exponential
from fgraph.distributions.gamma import Gamma
from fgraph.distributions.geometric import Geometric
from fgraph.distributions.gumbel import Gumbel
from fgraph.distributions.kl import infinite_like, register_kl
from fgraph.distributions.laplace import Laplace
from fgraph.distributions.normal import Normal
from fgraph.distributions.one_hot_categorical import OneHotCategorical
from fgraph.distributions.pareto import Pareto
from fgraph.distributions.poisson import Poisson
from fgraph.distributions.uniform import Uniform
from fgraph.tensor import Tensor

__all__: list = []


# -- same family ----------------------------------------------------------------------------------------------------
@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1 = fg.where(q.probs == 0, infinite_like(t1), t1)
    t1 = fg.where(p.probs == 0, fg.zeros_like(t1), t1)
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2 = fg.where(q.probs == 1, infinite_like(t2), t2)
    t2 = fg.where(p.probs == 1, fg.zeros_like(t2), t2)
    return t1 + t2


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p: Binomial, q: Binomial) -> Tensor:
    """Finite for equal counts, infinite where ``p`` has more trials; NaN (traced) or an error where fewer."""
    fewer = p.total_count < q.total_count
    if all_true(~fewer) is False:
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p())
    kl = fg.where(p.total_count > q.total_count, infinite_like(kl), kl)
    return fg.where(fewer, fg.full_like(kl, float("nan")), kl)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Geometric, q: Geometric) -> Tensor:
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p: OneHotCategorical, q: OneHotCategorical) -> Tensor:
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p: ContinuousBernoulli, q: ContinuousBernoulli) -> Tensor:
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + (-p.probs).log1p()
    t3 = -q._cont_bern_log_norm() - (-q.probs).log1p()
    return t1 + t2 + t3


# -- with Poisson ---------------------------------------------------------------------------------------------------
@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p: Bernoulli, q: Poisson) -> Tensor:
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Poisson, Bernoulli)
@register_kl(Poisson, Binomial)
def _kl_poisson_infinity(p: Poisson, q: Bernoulli) -> Tensor:
    return infinite_like(p.rate)


# -- ContinuousBernoulli and continuous distributions ---------------------------------------------------------------
def _cross_entropy_with_continuous_bernoulli(p: object, q: ContinuousBernoulli) -> Tensor:
    """``KL(p || q)`` for ``p`` on ``[0, 1]``: ``-H(p) - E_p[x] logit(q) - log(1 - q) - log C(q)``."""
    return -p.entropy() - p.mean * q.logits - (-q.probs).log1p() - q._cont_bern_log_norm()


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p: ContinuousBernoulli, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p: ContinuousBernoulli, q: Normal) -> Tensor:
    t1 = -p.entropy()
    t2 = 0.5 * (math.log(2.0 * math.pi) + (q.loc / q.scale).square()) + q.scale.log()
    t3 = (p.variance + p.mean.square() - 2.0 * q.loc * p.mean) / (2.0 * q.scale.square())
    return t1 + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p: ContinuousBernoulli, q: Uniform) -> Tensor:
    """As torch: infinite unless ``q``'s interval strictly contains ``[0, 1]`` (``low < 0`` and ``high > 1``)."""
    result = -p.entropy() + (q.high - q.low).log()
    outside = (q.low >= 0.0) | (q.high <= 1.0)
    return fg.where(outside, infinite_like(result), result)


@register_kl(ContinuousBernoulli, Pareto)
def _kl_continuous_bernoulli_infinity(p: ContinuousBernoulli, q: Pareto) -> Tensor:
    return infinite_like(p.probs)


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_continuous_bernoulli(p: Beta, q: ContinuousBernoulli) -> Tensor:
    return _cross_entropy_with_continuous_bernoulli(p, q)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p: Uniform, q: ContinuousBernoulli) -> Tensor:
    """As torch: infinite unless ``p``'s interval lies strictly inside ``(0, 1)``."""
    result = _cross_entropy_with_continuous_bernoulli(p, q)
    outside = (p.high >= 1.0) | (p.low <= 0.0)
    return fg.where(outside, infinite_like(result), result)


@register_kl(Exponential, ContinuousBernoulli)
def _kl_exponential_continuous_bernoulli(p: Exponential, q: ContinuousBernoulli) -> Tensor:
    return infinite_like(p.rate)


@register_kl(Gamma, ContinuousBernoulli)
def _kl_gamma_continuous_bernoulli(p: Gamma, q: ContinuousBernoulli) -> Tensor:
    return infinite_like(p.concentration)


@register_kl(Gumbel, ContinuousBernoulli)
@register_kl(Laplace, ContinuousBernoulli)
@register_kl(Normal, ContinuousBernoulli)
def _kl_real_line_continuous_bernoulli(p: Normal, q: ContinuousBernoulli) -> Tensor:
    return infinite_like(p.loc)


@register_kl(Pareto, ContinuousBernoulli)
def _kl_pareto_continuous_bernoulli(p: Pareto, q: ContinuousBernoulli) -> Tensor:
    return infinite_like(p.scale)
