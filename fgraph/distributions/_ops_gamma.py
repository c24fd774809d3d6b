"""Primitives behind the gamma family: a gamma sampler with an implicit gradient, the regularised
incomplete gamma function, and the von Mises rejection sampler.

* :func:`standard_gamma` draws ``Gamma(concentration, 1)`` from a JAX key (``jax.random.gamma``,
  or ``jax.random.loggamma`` with ``log_space=True``). Its derivative is the implicit
  reparameterisation gradient ``dx/dalpha = -(dF/dalpha) / (dF/dx)`` of the gamma CDF ``F``, which
  is torch's ``_standard_gamma_grad`` (JAX: ``jax.lax.random_gamma_grad``). That derivative is a
  primitive of its own (``standard_gamma_grad``) whose derivative is *not* implemented, as in
  torch (JAX's kernel is a ``while_loop`` it cannot differentiate in reverse mode): samples are
  differentiable once in the concentration; differentiating twice raises a clear error.
* :func:`gammainc` is ``P(a, x)`` (``torch.special.gammainc``), differentiable in ``x`` to any
  order and once in ``a`` (JAX's ``igamma_grad_a``; torch has no derivative in ``a`` at all).
* :func:`von_mises_rejection` is Best & Fisher's rejection sampler (torch's) in one
  ``jax.lax.while_loop``: traceable, never differentiable.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions._ops_gamma import standard_gamma
    >>> alpha = fg.tensor([0.5, 3.0], requires_grad=True)
    >>> x = standard_gamma(alpha, key=jax.random.key(0))
    >>> (g,) = fg.grad(x.sum(), [alpha])
    >>> x.shape, g.shape, bool((g > 0).all())
    ((2,), (2,), True)
"""
from __future__ import annotations

import math
from typing import Any, Optional

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp

import fgraph as fg
from fgraph._dtypes import x64_enabled
from fgraph.ops._declare import apply_op, declare
from fgraph.random import Generator, check_implicit_key, resolve_key
from fgraph.tensor import Tensor

__all__ = ["standard_gamma", "gammainc", "von_mises_rejection"]

Key = Any  # a JAX PRNG key


# -- gamma sampling ---------------------------------------------------------------------------------------------
def _standard_gamma_forward(key, alpha, *, log_space):
    if log_space:
        return jax.random.loggamma(key, alpha, alpha.shape, alpha.dtype)
    x = jax.random.gamma(key, alpha, alpha.shape, alpha.dtype)
    return jnp.maximum(x, jnp.finfo(alpha.dtype).tiny)  # torch clamps its draws to the smallest normal number


def _standard_gamma_rule(ctx, g):
    alpha = ctx.inputs[1]
    if not ctx.params.log_space:
        return None, g * _standard_gamma_grad(alpha, ctx.result)
    # d log(x) / d alpha = (dx / d alpha) / x, with x clamped as JAX does where exp underflows
    x = fg.exp(ctx.result).clamp(min=float(fg.finfo(alpha.dtype).tiny))
    return None, g * _standard_gamma_grad(alpha, x) / x


def _standard_gamma_grad_forward(alpha, x):
    return jax.lax.random_gamma_grad(alpha, x)


def _standard_gamma_grad_rule(ctx, g):
    raise NotImplementedError(
        "the derivative of standard_gamma_grad (d sample / d concentration of a gamma draw) is not implemented, "
        "as in torch: rsample of Gamma, Chi2, Beta, Dirichlet, StudentT... is differentiable once in the "
        "concentration. Differentiate the sample once (create_graph=False), or use a score-function estimator "
        "(log_prob) for higher derivatives.")


STANDARD_GAMMA = declare("standard_gamma", _standard_gamma_forward, _standard_gamma_rule, params=("log_space",),
                         save_inputs=(1,), save_result=True)
STANDARD_GAMMA_GRAD = declare("standard_gamma_grad", _standard_gamma_grad_forward, _standard_gamma_grad_rule,
                              real_only=True)


def _standard_gamma_grad(alpha: Tensor, x: Tensor) -> Tensor:
    return apply_op(STANDARD_GAMMA_GRAD, (alpha, x))


def standard_gamma(concentration: Tensor, *, key: Optional[Key] = None, generator: Optional[Generator] = None,
                   log_space: bool = False) -> Tensor:
    """``Gamma(concentration, 1)`` draws (``log`` of them with ``log_space=True``), of ``concentration``'s shape.

    Differentiable once in ``concentration`` by the implicit reparameterisation gradient.
    Draws are clamped below at the dtype's smallest normal number, as torch's.
    """
    if not isinstance(concentration, Tensor) or not fg.is_floating_point(concentration):
        raise TypeError("standard_gamma: concentration must be a floating point Tensor, got "
                        f"{type(concentration).__name__}.")
    k = resolve_key(key, generator, "standard_gamma")
    out = apply_op(STANDARD_GAMMA, (k, concentration), STANDARD_GAMMA.Params(bool(log_space)))
    check_implicit_key(out._array, key is not None, k, "standard_gamma")
    return out


# -- regularised lower incomplete gamma function --------------------------------------------------------------------
def _gammainc_rule(ctx, g):
    a, x = ctx.inputs
    ga = gx = None
    if ctx.needs[0]:
        ga = g * apply_op(IGAMMA_GRAD_A, (a, x))
    if ctx.needs[1]:
        gx = g * fg.exp(fg.xlogy(a - 1, x) - x - fg.lgamma(a))
    return ga, gx


def _igamma_grad_a_rule(ctx, g):
    raise NotImplementedError(
        "the second derivative of gammainc with respect to its first argument (a) is not implemented; "
        "torch implements no derivative in a at all. Detach a, or differentiate once.")


GAMMAINC = declare("gammainc", jsp.gammainc, _gammainc_rule, save_inputs=True, real_only=True)
IGAMMA_GRAD_A = declare("igamma_grad_a", jax.lax.igamma_grad_a, _igamma_grad_a_rule, real_only=True)


def gammainc(a: Tensor, x: Tensor) -> Tensor:
    """The regularised lower incomplete gamma function ``P(a, x)`` (``torch.special.gammainc``)."""
    a, x = fg.broadcast_tensors(a, x)
    return apply_op(GAMMAINC, (a, x))


# -- von Mises rejection sampling -----------------------------------------------------------------------------------
_MAX_ROUNDS = 1000  # Best & Fisher accept with probability > 0.65 per round: 1000 rounds never run out


def _von_mises_forward(key, loc, concentration, proposal_r, *, shape):
    dtype = loc.dtype
    work = jnp.float64 if x64_enabled() else dtype  # torch samples in double
    loc, kappa, r = (jnp.broadcast_to(t, shape).astype(work) for t in (loc, concentration, proposal_r))

    def cond(state):
        _, _, done, rounds = state
        return jnp.logical_and(jnp.logical_not(jnp.all(done)), rounds < _MAX_ROUNDS)

    def body(state):
        k, x, done, rounds = state
        k, sub = jax.random.split(k)
        u1, u2, u3 = jax.random.uniform(sub, (3,) + shape, work)
        z = jnp.cos(math.pi * u1)
        f = (1 + r * z) / (r + z)
        c = kappa * (r - f)
        accept = ((c * (2 - c) - u2) > 0) | (jnp.log(c / u2) + 1 - c >= 0)
        accept = accept & jnp.logical_not(done)
        x = jnp.where(accept, jnp.sign(u3 - 0.5) * jnp.arccos(f), x)
        return k, x, done | accept, rounds + 1

    init = (key, jnp.full(shape, jnp.nan, work), jnp.zeros(shape, bool), 0)
    _, x, _, _ = jax.lax.while_loop(cond, body, init)
    return ((x + math.pi + loc) % (2 * math.pi) - math.pi).astype(dtype)


VON_MISES = declare("von_mises_rejection", _von_mises_forward, None, params=("shape",), differentiable=False)


def von_mises_rejection(loc: Tensor, concentration: Tensor, proposal_r: Tensor, shape: tuple, *,
                        key: Optional[Key] = None, generator: Optional[Generator] = None) -> Tensor:
    """Von Mises draws of ``shape`` (angles in ``[-pi, pi)``), off the graph.

    ``proposal_r`` is the wrapped-Cauchy envelope's parameter for each ``concentration``.
    """
    k = resolve_key(key, generator, "VonMises.sample")
    out = apply_op(VON_MISES, (k, loc.detach(), concentration.detach(), proposal_r.detach()),
                   VON_MISES.Params(tuple(shape)))
    check_implicit_key(out._array, key is not None, k, "VonMises.sample")
    return out
