"""KL pairs across the families of different modules (Pareto and Laplace against the Gamma family).

Most are infinite: ``p``'s support is not inside ``q``'s. ``KL(Pareto || Gamma)`` has a closed form
where the Pareto's mean is finite (``alpha > 1``), and is infinite elsewhere, as in torch.
"""
from __future__ import annotations

import fgraph as fg
from fgraph.distributions.beta import Beta
from fgraph.distributions.distribution import Distribution
from fgraph.distributions.gamma import Gamma
from fgraph.distributions.kl import infinite_like, register_kl
from fgraph.distributions.laplace import Laplace
from fgraph.distributions.pareto import Pareto
from fgraph.tensor import Tensor

__all__: list = []


@register_kl(Beta, Pareto)
def _kl_beta_pareto(p: Beta, q: Pareto) -> Tensor:
    return infinite_like(p.concentration1)


@register_kl(Gamma, Pareto)
def _kl_gamma_pareto(p: Gamma, q: Pareto) -> Tensor:
    return infinite_like(p.concentration)


@register_kl(Laplace, Beta)
@register_kl(Laplace, Gamma)
def _kl_laplace_positive_support(p: Laplace, q: Distribution) -> Tensor:
    return infinite_like(p.loc)


@register_kl(Pareto, Beta)
def _kl_pareto_beta(p: Pareto, q: Beta) -> Tensor:
    return infinite_like(p.scale)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p: Pareto, q: Gamma) -> Tensor:
    common = fg.log(p.scale) + p.alpha.reciprocal()
    t1 = fg.log(p.alpha) - common
    t2 = fg.lgamma(q.concentration) - q.concentration * fg.log(q.rate)
    t3 = (1 - q.concentration) * common
    t4 = q.rate * p.alpha * p.scale / (p.alpha - 1)
    result = t1 + t2 + t3 + t4 - 1
    return fg.where(p.alpha <= 1, infinite_like(result), result)
