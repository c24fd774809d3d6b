"""Closed-form KL divergences among the univariate continuous distributions (torch's registered pairs).

Same-family pairs (Uniform, Exponential, Laplace, Cauchy, Gumbel, HalfNormal, Pareto,
TransformedDistribution with equal transforms, which covers LogNormal), the cross pairs with a
closed form (Normal, Uniform, Exponential, Laplace, Gumbel, Pareto), and ``inf`` where ``p``'s
support is not inside ``q``'s. Registered when this module is imported.

Example:
    >>> import fgraph as fg
    >>> from fgraph.distributions import Normal, kl_divergence
    >>> from fgraph.distributions.uniform import Uniform
    >>> import fgraph.distributions._kl_univariate
    >>> round(kl_divergence(Uniform(-1.0, 1.0), Normal(0.0, 1.0)).item(), 4)
    0.3925
"""
from __future__ import annotations

import math

import fgraph as fg
from fgraph.distributions._kl_common import _kl_normal_normal
from fgraph.distributions.cauchy import Cauchy
from fgraph.distributions.exponential import Exponential
from fgraph.distributions.gumbel import Gumbel
from fgraph.distributions.half_normal import HalfNormal
from fgraph.distributions.kl import infinite_like, kl_divergence, register_kl, x_log_x
from fgraph.distributions.laplace import Laplace
from fgraph.distributions.normal import Normal
from fgraph.distributions.pareto import Pareto
from fgraph.distributions.transformed_distribution import TransformedDistribution
from fgraph.distributions.uniform import Uniform
from fgraph.distributions.utils import euler_constant
from fgraph.tensor import Tensor

__all__: list = []


def _inf_where(mask: Tensor, result: Tensor) -> Tensor:
    return fg.where(mask, infinite_like(result), result)


# -- same family ----------------------------------------------------------------------------------------------------
@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential) -> Tensor:
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p: Gumbel, q: Gumbel) -> Tensor:
    ct1 = p.scale / q.scale
    ct2 = q.loc / q.scale
    ct3 = p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t2 = ct1 * euler_constant
    t3 = fg.exp(ct2 + (1 + ct1).lgamma() - ct3)
    return t1 + t2 + t3 - (1 + euler_constant)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p: HalfNormal, q: HalfNormal) -> Tensor:
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p: Laplace, q: Laplace) -> Tensor:
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    return -scale_ratio.log() + loc_abs_diff / q.scale + scale_ratio * fg.exp(-loc_abs_diff / p.scale) - 1


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p: Pareto, q: Pareto) -> Tensor:
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    return _inf_where(p.support.lower_bound < q.support.lower_bound, result)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p: TransformedDistribution, q: TransformedDistribution) -> Tensor:
    if p.transforms != q.transforms:
        raise NotImplementedError(f"KL({type(p).__name__} || {type(q).__name__}): the transforms differ, so the "
                                  "divergence does not reduce to the base distributions'")
    if p.event_shape != q.event_shape:
        raise NotImplementedError(f"KL({type(p).__name__} || {type(q).__name__}): the event shapes differ "
                                  f"({p.event_shape} vs {q.event_shape})")
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _inf_where((q.low > p.low) | (q.high < p.high), result)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p: Cauchy, q: Cauchy) -> Tensor:
    t1 = ((p.scale + q.scale).square() + (p.loc - q.loc).square()).log()
    return t1 - (4 * p.scale * q.scale).log()


# -- supports that do not nest --------------------------------------------------------------------------------------
@register_kl(Exponential, Pareto)
@register_kl(Exponential, Uniform)
def _kl_exponential_infinity(p: Exponential, q: Uniform) -> Tensor:
    return infinite_like(p.rate)


@register_kl(Gumbel, Exponential)
@register_kl(Gumbel, Pareto)
@register_kl(Gumbel, Uniform)
def _kl_gumbel_infinity(p: Gumbel, q: Uniform) -> Tensor:
    return infinite_like(p.loc)


@register_kl(Laplace, Exponential)
@register_kl(Laplace, Pareto)
@register_kl(Laplace, Uniform)
def _kl_laplace_infinity(p: Laplace, q: Uniform) -> Tensor:
    return infinite_like(p.loc)


@register_kl(Normal, Exponential)
@register_kl(Normal, Pareto)
@register_kl(Normal, Uniform)
def _kl_normal_infinity(p: Normal, q: Uniform) -> Tensor:
    return infinite_like(p.loc)


@register_kl(Pareto, Uniform)
def _kl_pareto_infinity(p: Pareto, q: Uniform) -> Tensor:
    return infinite_like(p.scale)


# -- cross pairs ----------------------------------------------------------------------------------------------------
@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p: Exponential, q: Gumbel) -> Tensor:
    scale_rate_prod = p.rate * q.scale
    loc_scale_ratio = q.loc / q.scale
    t1 = scale_rate_prod.log() - 1
    t2 = fg.exp(loc_scale_ratio) * scale_rate_prod / (scale_rate_prod + 1)
    return t1 - loc_scale_ratio + t2 + scale_rate_prod.reciprocal()


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p: Exponential, q: Normal) -> Tensor:
    var_normal = q.scale.square()
    rate_sqr = p.rate.square()
    t1 = 0.5 * fg.log(rate_sqr * var_normal * 2 * math.pi)
    return t1 - 1 + (rate_sqr.reciprocal() - q.loc / p.rate + q.loc.square() * 0.5) / var_normal


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p: Gumbel, q: Normal) -> Tensor:
    param_ratio = p.scale / q.scale
    t1 = (param_ratio / math.sqrt(2 * math.pi)).log()
    t2 = (math.pi * param_ratio * 0.5).square() / 3
    t3 = ((p.loc + p.scale * euler_constant - q.loc) / q.scale).square() * 0.5
    return -t1 + t2 + t3 - (euler_constant + 1)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p: Laplace, q: Normal) -> Tensor:
    var_normal = q.scale.square()
    scale_sqr_var_ratio = p.scale.square() / var_normal
    t1 = 0.5 * fg.log(2 * scale_sqr_var_ratio / math.pi)
    quad = 0.5 * p.loc.square() - p.loc * q.loc + 0.5 * q.loc.square()
    return -t1 + scale_sqr_var_ratio + quad / var_normal - 1


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p: Normal, q: Gumbel) -> Tensor:
    mean_scale_ratio = p.loc / q.scale
    var_scale_sqr_ratio = (p.scale / q.scale).square()
    loc_scale_ratio = q.loc / q.scale
    t1 = var_scale_sqr_ratio.log() * 0.5
    t2 = mean_scale_ratio - loc_scale_ratio
    t3 = fg.exp(-mean_scale_ratio + 0.5 * var_scale_sqr_ratio + loc_scale_ratio)
    return -t1 + t2 + t3 - (0.5 * (1 + math.log(2 * math.pi)))


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p: Normal, q: Laplace) -> Tensor:
    loc_diff = p.loc - q.loc
    scale_ratio = p.scale / q.scale
    loc_diff_scale_ratio = loc_diff / p.scale
    t2 = math.sqrt(2 / math.pi) * p.scale * fg.exp(-0.5 * loc_diff_scale_ratio.square())
    t3 = loc_diff * fg.erf(math.sqrt(0.5) * loc_diff_scale_ratio)
    return -fg.log(scale_ratio) + (t2 + t3) / q.scale - (0.5 * (1 + math.log(0.5 * math.pi)))


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p: Pareto, q: Exponential) -> Tensor:
    scale_rate_prod = p.scale * q.rate
    t1 = (p.alpha / scale_rate_prod).log()
    t3 = p.alpha * scale_rate_prod / (p.alpha - 1)
    return _inf_where(p.alpha <= 1, t1 - p.alpha.reciprocal() + t3 - 1)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p: Pareto, q: Normal) -> Tensor:
    var_normal = 2 * q.scale.square()
    common_term = p.scale / (p.alpha - 1)
    t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale).log()
    t3 = p.alpha * common_term.square() / (p.alpha - 2)
    t4 = (p.alpha * common_term - q.loc).square()
    return _inf_where(p.alpha <= 2, t1 - p.alpha.reciprocal() + (t3 + t4) / var_normal - 1)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p: Uniform, q: Exponential) -> Tensor:
    result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log()
    return _inf_where(p.low < q.support.lower_bound, result)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p: Uniform, q: Gumbel) -> Tensor:
    common_term = q.scale / (p.high - p.low)
    high_loc_diff = (p.high - q.loc) / q.scale
    low_loc_diff = (p.low - q.loc) / q.scale
    t1 = common_term.log() + 0.5 * (high_loc_diff + low_loc_diff)
    return t1 - common_term * (fg.exp(-high_loc_diff) - fg.exp(-low_loc_diff))


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p: Uniform, q: Normal) -> Tensor:
    width = p.high - p.low
    t1 = (math.sqrt(math.pi * 2) * q.scale / width).log()
    t2 = width.square() / 12
    t3 = ((p.high + p.low - 2 * q.loc) / 2).square()
    return t1 + 0.5 * (t2 + t3) / q.scale.square()


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p: Uniform, q: Pareto) -> Tensor:
    width = p.high - p.low
    t1 = (q.alpha * q.scale.pow(q.alpha) * width).log()
    t2 = (x_log_x(p.high) - x_log_x(p.low) - width) / width
    return _inf_where(p.low < q.support.lower_bound, t2 * (q.alpha + 1) - t1)
