"""Closed-form KL divergences: same-family pairs of the base distributions, and exponential families.

Each function is ``KL(p || q)`` for the registered pair of types; see :mod:`fgraph.distributions.kl`.
"""
from __future__ import annotations

import fgraph as fg
from fgraph.distributions.categorical import Categorical
from fgraph.distributions.exp_family import ExponentialFamily
from fgraph.distributions.kl import infinite_like, register_kl
from fgraph.distributions.normal import Normal
from fgraph.tensor import Tensor

__all__: list = []


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    var_ratio = (p.scale / q.scale).square()
    t1 = ((p.loc - q.loc) / q.scale).square()
    return 0.5 * (var_ratio + t1 - 1 - fg.log(var_ratio))


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    t = p.probs * (p.logits - q.logits)
    t = fg.where(q.probs == 0, infinite_like(t), t)
    t = fg.where(p.probs == 0, fg.zeros_like(t), t)
    return t.sum(-1)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p: ExponentialFamily, q: ExponentialFamily) -> Tensor:
    """The Bregman divergence of the log normaliser: ``F(q) - F(p) - <theta_q - theta_p, grad F(p)>``."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential families cannot be "
                                  f"computed using Bregman divergences ({type(p).__name__} vs {type(q).__name__}).")
    p_nparams = [t if t.requires_grad else t.detach().requires_grad_() for t in p._natural_params]
    q_nparams = q._natural_params
    with fg.enable_grad():
        p_norm = p._log_normalizer(*p_nparams)
        grads = fg.grad(p_norm.sum(), p_nparams, create_graph=True)
    result = q._log_normalizer(*q_nparams) - p_norm
    for pp, qp, g in zip(p_nparams, q_nparams, grads):
        result = result - ((qp - pp) * g).reshape(p.batch_shape + (-1,)).sum(-1)
    return result
