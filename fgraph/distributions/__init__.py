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
from fgraph.distributions import constraints
from fgraph.distributions.categorical import Categorical
from fgraph.distributions.distribution import Distribution
from fgraph.distributions.exp_family import ExponentialFamily
from fgraph.distributions.kl import kl_divergence, register_kl
from fgraph.distributions.normal import Normal
from fgraph.distributions import _kl_common  # noqa: F401  (registers the closed forms)

__all__ = [
    "Categorical", "Distribution", "ExponentialFamily", "Normal", "constraints", "kl_divergence", "register_kl",
]
