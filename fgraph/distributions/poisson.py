"""``Poisson(rate)``: counts with mean ``rate``; ``sample`` only (no reparameterisation of integers).

Samples are float counts of ``rate``'s dtype (as torch's ``torch.poisson``).

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.poisson import Poisson
    >>> d = Poisson(fg.tensor([1.0, 4.0]))
    >>> d.sample((3,), key=jax.random.key(0)).shape, d.has_rsample
    ((3, 2), False)
    >>> [round(v, 4) for v in d.log_prob(fg.tensor([0.0, 2.0])).tolist()]
    [-1.0, -1.9206]
"""
from __future__ import annotations

from numbers import Number
from typing import Any, Optional

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions.exp_family import ExponentialFamily
from fgraph.distributions.utils import broadcast_all
from fgraph.tensor import Tensor

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    """The Poisson distribution with mean ``rate`` (``rate ** k * exp(-rate) / k!``)."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate: Any, validate_args: Optional[bool] = None) -> None:
        (self.rate,) = broadcast_all(rate)
        batch_shape = () if isinstance(rate, Number) else self.rate.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["Poisson"] = None) -> "Poisson":
        return self._expand_params(Poisson, batch_shape, _instance, ("rate",))

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return fg.poisson(self.rate.detach().expand(shape), generator, key=key)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return fg.xlogy(value, rate) - rate - fg.lgamma(value + 1)

    @property
    def _natural_params(self) -> tuple:
        return (fg.log(self.rate),)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return fg.exp(x)
