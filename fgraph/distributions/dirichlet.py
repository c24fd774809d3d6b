"""``Dirichlet(concentration)``: distributions over the simplex, reparameterised through gamma draws.

``rsample`` normalises independent gamma draws (taken in log space, then a softmax, so small
concentrations do not underflow). The gradient through the gamma sampler's implicit derivative and
the normalisation is an implicit reparameterisation gradient of the Dirichlet: per sample it is
not torch's ``_dirichlet_grad`` (a different transport), but its expectation is the same
``d E[f(x)] / d concentration``.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.dirichlet import Dirichlet
    >>> d = Dirichlet(fg.tensor([[1.0, 2.0, 3.0]]))
    >>> x = d.rsample((4,), key=jax.random.key(0))
    >>> x.shape, d.batch_shape, d.event_shape
    ((4, 1, 3), (1,), (3,))
    >>> [round(v, 4) for v in d.mean[0].tolist()]
    [0.1667, 0.3333, 0.5]
"""
from __future__ import annotations

from typing import Any, Optional

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions._ops_gamma import standard_gamma
from fgraph.distributions.exp_family import ExponentialFamily
from fgraph.tensor import Tensor

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution with ``concentration`` (alpha) along the last dim (the event dim)."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Tensor, validate_args: Optional[bool] = None) -> None:
        if not isinstance(concentration, Tensor) or concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional (a Tensor whose last dim "
                             "holds the concentrations of one Dirichlet).")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["Dirichlet"] = None) -> "Dirichlet":
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = tuple(batch_shape)
        new.concentration = self.concentration.expand(batch_shape + self.event_shape)
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        shape = self._extended_shape(sample_shape)
        log_gammas = standard_gamma(self.concentration.expand(shape), key=key, generator=generator, log_space=True)
        return fg.softmax(log_gammas, dim=-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return (fg.xlogy(self.concentration - 1.0, value).sum(-1) + fg.lgamma(self.concentration.sum(-1))
                - fg.lgamma(self.concentration).sum(-1))

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        """The mode; where every concentration is below 1 (modes at the vertices), the first vertex, as torch."""
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, keepdim=True)
        all_below_one = (self.concentration < 1).all(dim=-1, keepdim=True)
        first_vertex = fg.zeros_like(mode)
        first_vertex = fg.where(fg.arange(mode.shape[-1]) == 0, fg.ones_like(mode), first_vertex)
        return fg.where(all_below_one, first_vertex, mode)

    @property
    def variance(self) -> Tensor:
        con0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self) -> Tensor:
        k = self.concentration.shape[-1]
        a0 = self.concentration.sum(-1)
        return (fg.lgamma(self.concentration).sum(-1) - fg.lgamma(a0) - (k - a0) * fg.digamma(a0)
                - ((self.concentration - 1.0) * fg.digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self) -> tuple:
        return (self.concentration,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return fg.lgamma(x).sum(-1) - fg.lgamma(x.sum(-1))
