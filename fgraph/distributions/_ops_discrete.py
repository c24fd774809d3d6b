"""Samplers of the count distributions: binomial and gamma-Poisson (negative binomial) draws.

Each is a primitive whose kernel takes the JAX key as its first input (as
:mod:`fgraph.ops.random_ops`), so ``key=`` makes it a pure, traceable function and the
default generator is used otherwise. Draws carry no gradient (``differentiable=False``):
these distributions have no reparameterised sampler.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions._ops_discrete import binomial_sample
    >>> binomial_sample(fg.tensor([0.0, 4.0]), fg.tensor([0.5, 1.0]), key=jax.random.key(0)).tolist()
    [0.0, 4.0]
"""
from __future__ import annotations

from typing import Any, Optional

import jax

from fgraph.ops._declare import declare
from fgraph.ops.random_ops import _sample
from fgraph.random import Generator
from fgraph.tensor import Tensor

__all__ = ["binomial_sample", "gamma_poisson_sample"]

Key = Any  # a JAX PRNG key


def _binomial_forward(key, total_count, probs):
    return jax.random.binomial(key, total_count, probs, total_count.shape, probs.dtype)


def _gamma_poisson_forward(key, concentration, scale):
    k_gamma, k_poisson = jax.random.split(key)
    rate = jax.random.gamma(k_gamma, concentration, concentration.shape, concentration.dtype) * scale
    return jax.random.poisson(k_poisson, rate, rate.shape).astype(rate.dtype)


BINOMIAL_SAMPLE = declare("distributions.binomial_sample", _binomial_forward, None, differentiable=False)
GAMMA_POISSON_SAMPLE = declare("distributions.gamma_poisson_sample", _gamma_poisson_forward, None,
                               differentiable=False)


def binomial_sample(total_count: Tensor, probs: Tensor, *, key: Optional[Key] = None,
                    generator: Optional[Generator] = None) -> Tensor:
    """Binomial counts (``probs``' floating dtype) for ``total_count`` and ``probs`` of one shape."""
    return _sample(BINOMIAL_SAMPLE, (total_count.detach(), probs.detach()), None, key, generator,
                   "Binomial.sample")


def gamma_poisson_sample(concentration: Tensor, scale: Tensor, *, key: Optional[Key] = None,
                         generator: Optional[Generator] = None) -> Tensor:
    """``Poisson(Gamma(concentration, 1) * scale)`` draws, for parameters of one shape."""
    return _sample(GAMMA_POISSON_SAMPLE, (concentration.detach(), scale.detach()), None, key, generator,
                   "NegativeBinomial.sample")
