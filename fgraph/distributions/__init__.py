"""``fgraph.distributions``: torch.distributions' names and semantics on fgraph Tensors.

Distributions (``Normal``, ``Categorical``, ...) with ``sample``/``rsample`` (``key=``
or ``generator=``, as fgraph's random ops), ``log_prob``, ``entropy``, ``cdf``/``icdf``
and moments; ``constraints``, ``transforms`` and ``biject_to``/``transform_to``;
``kl_divergence`` with ``register_kl``. Everything is built from fgraph ops, so it is
differentiable to any order and runs inside ``fg.compile``, ``jax.jit`` and ``vmap``.
See ``docs/distributions.md``.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions import Normal, kl_divergence
    >>> mu = fg.tensor([0.5], requires_grad=True)
    >>> q = Normal(mu, 1.0)
    >>> z = q.rsample(key=jax.random.key(0))
    >>> (g,) = fg.grad(kl_divergence(q, Normal(0.0, 1.0)).sum(), [mu])
    >>> g.tolist()
    [0.5]
"""
from fgraph.distributions import constraints, transforms
from fgraph.distributions.bernoulli import Bernoulli
from fgraph.distributions.beta import Beta
from fgraph.distributions.binomial import Binomial
from fgraph.distributions.categorical import Categorical
from fgraph.distributions.cauchy import Cauchy
from fgraph.distributions.chi2 import Chi2
from fgraph.distributions.constraint_registry import biject_to, transform_to
from fgraph.distributions.continuous_bernoulli import ContinuousBernoulli
from fgraph.distributions.dirichlet import Dirichlet
from fgraph.distributions.distribution import Distribution
from fgraph.distributions.exp_family import ExponentialFamily
from fgraph.distributions.exponential import Exponential
from fgraph.distributions.fishersnedecor import FisherSnedecor
from fgraph.distributions.gamma import Gamma
from fgraph.distributions.geometric import Geometric
from fgraph.distributions.gumbel import Gumbel
from fgraph.distributions.half_cauchy import HalfCauchy
from fgraph.distributions.half_normal import HalfNormal
from fgraph.distributions.independent import Independent
from fgraph.distributions.inverse_gamma import InverseGamma
from fgraph.distributions.kl import kl_divergence, register_kl
from fgraph.distributions.kumaraswamy import Kumaraswamy
from fgraph.distributions.laplace import Laplace
from fgraph.distributions.lkj_cholesky import LKJCholesky
from fgraph.distributions.log_normal import LogNormal
from fgraph.distributions.logistic_normal import LogisticNormal
from fgraph.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from fgraph.distributions.mixture_same_family import MixtureSameFamily
from fgraph.distributions.multinomial import Multinomial
from fgraph.distributions.multivariate_normal import MultivariateNormal
from fgraph.distributions.negative_binomial import NegativeBinomial
from fgraph.distributions.normal import Normal
from fgraph.distributions.one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from fgraph.distributions.pareto import Pareto
from fgraph.distributions.poisson import Poisson
from fgraph.distributions.relaxed_bernoulli import LogitRelaxedBernoulli, RelaxedBernoulli
from fgraph.distributions.relaxed_categorical import ExpRelaxedCategorical, RelaxedOneHotCategorical
from fgraph.distributions.studentT import StudentT
from fgraph.distributions.transformed_distribution import TransformedDistribution
from fgraph.distributions.transforms import *  # noqa: F401,F403  (torch exports the transforms at top level)
from fgraph.distributions.uniform import Uniform
from fgraph.distributions.von_mises import VonMises
from fgraph.distributions.weibull import Weibull

# The closed-form KL pairs register themselves on import (after every distribution they name).
from fgraph.distributions import _kl_common, _kl_univariate, _kl_gamma, _kl_discrete, _kl_multivariate, _kl_cross  # noqa: F401,E402,I001

__all__ = [
    "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "ContinuousBernoulli", "Dirichlet",
    "Distribution", "ExpRelaxedCategorical", "Exponential", "ExponentialFamily", "FisherSnedecor", "Gamma",
    "Geometric", "Gumbel", "HalfCauchy", "HalfNormal", "Independent", "InverseGamma", "Kumaraswamy", "LKJCholesky",
    "Laplace", "LogNormal", "LogisticNormal", "LogitRelaxedBernoulli", "LowRankMultivariateNormal",
    "MixtureSameFamily", "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical",
    "OneHotCategoricalStraightThrough", "Pareto", "Poisson", "RelaxedBernoulli", "RelaxedOneHotCategorical",
    "StudentT", "TransformedDistribution", "Uniform", "VonMises", "Weibull", "biject_to", "constraints",
    "kl_divergence", "register_kl", "transform_to", "transforms",
]
__all__.extend(transforms.__all__)
