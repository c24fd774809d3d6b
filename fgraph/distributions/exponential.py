"""``Exponential(rate)``: waiting times of a Poisson process, density ``rate * exp(-rate * x)``.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.exponential import Exponential
    >>> d = Exponential(fg.tensor([1.0, 2.0]))
    >>> d.rsample((3,), key=jax.random.key(0)).shape
    (3, 2)
    >>> [round(v, 4) for v in d.log_prob(fg.tensor([1.0, 1.0])).tolist()]
    [-1.0, -1.3069]
    >>> d.mean.tolist()
    [1.0, 0.5]
"""
from __future__ import annotations

from typing import Any, Optional

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions.exp_family import ExponentialFamily
from fgraph.distributions.utils import broadcast_all, uniform_open
from fgraph.tensor import Tensor

__all__ = ["Exponential"]


class Exponential(ExponentialFamily):
    """The exponential distribution with ``rate`` (inverse scale); reparameterised as ``-log(u) / rate``."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, rate: Any, validate_args: Optional[bool] = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["Exponential"] = None) -> "Exponential":
        return self._expand_params(Exponential, batch_shape, _instance, ("rate",))

    @property
    def mean(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def mode(self) -> Tensor:
        return fg.zeros_like(self.rate)

    @property
    def stddev(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.rate.pow(-2)

    def rsample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return -fg.log(uniform_open(shape, self.rate.dtype, key, generator)) / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 1 - fg.exp(-self.rate * value)

    def icdf(self, value: Tensor) -> Tensor:
        return -fg.log1p(-value) / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - fg.log(self.rate)

    @property
    def _natural_params(self) -> tuple:
        return (-self.rate,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return -fg.log(-x)
