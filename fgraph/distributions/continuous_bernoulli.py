"""``ContinuousBernoulli(probs=... | logits=...)``: the continuous Bernoulli on ``[0, 1]`` (Loaiza-Ganem & Cunningham, 2019).

The density is ``C(p) p^x (1 - p)^(1 - x)``. ``probs`` is not a probability here, only
the parameter whose name it borrows from the Bernoulli. Near ``p = 1/2`` the closed
forms are ``0 / 0``; inside ``lims`` (default ``(0.499, 0.501)``) a Taylor expansion in
``p - 1/2`` is used instead, and the closed forms are evaluated at a safe ``p`` so that
neither branch's gradient is NaN.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.continuous_bernoulli import ContinuousBernoulli
    >>> probs = fg.tensor([0.2, 0.5], requires_grad=True)
    >>> d = ContinuousBernoulli(probs)
    >>> x = d.rsample((3,), key=jax.random.key(0))            # inverse-CDF: differentiable in probs
    >>> x.shape, [round(v, 4) for v in d.mean.tolist()]
    ((3, 2), [0.388, 0.5])
    >>> [round(v, 4) for v in d.log_prob(fg.tensor([0.5, 0.5])).tolist()]
    [-0.0788, 0.0]
"""
from __future__ import annotations

import math
from typing import Any, Optional

import fgraph as fg
import fgraph.nn.functional as F
from fgraph.distributions import constraints
from fgraph.distributions.bernoulli import binary_parameter, expand_binary_parameter
from fgraph.distributions.distribution import _format, all_true
from fgraph.distributions.exp_family import ExponentialFamily
from fgraph.distributions.utils import (broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits,
                                        uniform_open)
from fgraph.tensor import Tensor

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """The continuous Bernoulli distribution, parameterised by ``probs`` in ``(0, 1)`` or real ``logits``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs: Any = None, logits: Any = None, lims: tuple = (0.499, 0.501),
                 validate_args: Optional[bool] = None) -> None:
        param = binary_parameter(self, probs, logits)
        if probs is not None:
            validate = self._validate_args if validate_args is None else validate_args
            # checked before the clamp below, which would otherwise hide values outside [0, 1]
            if validate and all_true(constraints.unit_interval.check(self.probs)) is False:
                raise ValueError(f"Expected parameter probs ({type(param).__name__} of shape {tuple(param.shape)}) "
                                 f"of distribution ContinuousBernoulli to satisfy the constraint "
                                 f"{constraints.unit_interval!r}, but found invalid values:\n{_format(param)}")
            self.probs = clamp_probs(self.probs)
            param = self.probs
        self._param = param
        self._lims = lims
        super().__init__(param.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["ContinuousBernoulli"] = None) -> "ContinuousBernoulli":
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = tuple(batch_shape)
        expand_binary_parameter(self, new, batch_shape)
        super(ContinuousBernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self) -> tuple:
        return tuple(self._param.shape)

    # -- the unstable region around p = 1/2 ----------------------------------------------------------------------
    def _outside_unstable_region(self) -> Tensor:
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self) -> Tensor:
        """``probs`` outside the unstable region, ``lims[0]`` inside it (a safe point for the closed forms)."""
        return fg.where(self._outside_unstable_region(), self.probs, fg.full_like(self.probs, self._lims[0]))

    def _cont_bern_log_norm(self) -> Tensor:
        """``log C(p)``, ``C(p) = 2 atanh(1 - 2p) / (1 - 2p)``, written as a function of ``probs``."""
        cut = self._cut_probs()
        below_half = fg.where(cut <= 0.5, cut, fg.zeros_like(cut))
        above_half = fg.where(cut >= 0.5, cut, fg.ones_like(cut))
        log_norm = fg.log(fg.abs(fg.log1p(-cut) - fg.log(cut))) - fg.where(
            cut <= 0.5, fg.log1p(-2.0 * below_half), fg.log(2.0 * above_half - 1.0))
        x = (self.probs - 0.5).square()
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return fg.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self) -> Tensor:
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (fg.log1p(-cut) - fg.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.square()) * x
        return fg.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    @property
    def variance(self) -> Tensor:
        cut = self._cut_probs()
        variances = cut * (cut - 1.0) / (1.0 - 2.0 * cut).square() + 1.0 / (fg.log1p(-cut) - fg.log(cut)).square()
        x = (self.probs - 0.5).square()
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return fg.where(self._outside_unstable_region(), variances, taylor)

    def sample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        with fg.no_grad():
            return self.rsample(sample_shape, key=key, generator=generator)

    def rsample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = uniform_open(shape, self.probs.dtype, key, generator)
        return self.icdf(u)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = fg.where(self._outside_unstable_region(), cdfs, value)
        return fg.where(value <= 0.0, fg.zeros_like(value),
                        fg.where(value >= 1.0, fg.ones_like(value), unbounded))

    def icdf(self, value: Tensor) -> Tensor:
        cut = self._cut_probs()
        inverted = (fg.log1p(-cut + value * (2.0 * cut - 1.0)) - fg.log1p(-cut)) / (fg.log(cut) - fg.log1p(-cut))
        return fg.where(self._outside_unstable_region(), inverted, value)

    def entropy(self) -> Tensor:
        log_probs0 = fg.log1p(-self.probs)
        log_probs1 = fg.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self) -> tuple:
        return (self.logits,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        """``log C`` as a function of the natural parameter (the logits), with its own Taylor region."""
        outside = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = fg.where(outside, x, fg.full_like(x, self._lims[0] - 0.5))
        log_norm = fg.log(fg.abs(fg.expm1(cut))) - fg.log(fg.abs(cut))
        taylor = 0.5 * x + x.square() / 24.0 - x.pow(4) / 2880.0
        return fg.where(outside, log_norm, taylor)
