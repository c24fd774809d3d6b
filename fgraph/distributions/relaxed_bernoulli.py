"""``LogitRelaxedBernoulli`` and ``RelaxedBernoulli``: the binary Concrete (Gumbel-softmax) relaxation.

``LogitRelaxedBernoulli(temperature, probs=... | logits=...)`` draws
``(logit(p) + logit(U)) / temperature`` with ``U ~ U(0, 1)``, a reparameterised
sample on the real line; ``RelaxedBernoulli`` is its sigmoid, on ``(0, 1)``, and tends
to ``Bernoulli(p)`` as the temperature goes to 0 (Maddison et al., 2017; Jang et al., 2017).

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.relaxed_bernoulli import RelaxedBernoulli
    >>> logits = fg.tensor([0.0, 3.0], requires_grad=True)
    >>> d = RelaxedBernoulli(fg.tensor(0.5), logits=logits)
    >>> x = d.rsample((4,), key=jax.random.key(0))            # differentiable in logits
    >>> x.shape, bool(((x > 0) & (x < 1)).all())
    ((4, 2), True)
    >>> [round(v, 4) for v in d.log_prob(fg.tensor([0.5, 0.9])).tolist()]
    [-0.6931, -0.465]
"""
from __future__ import annotations

from typing import Any, Optional

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions.bernoulli import binary_parameter, expand_binary_parameter
from fgraph.distributions.distribution import Distribution
from fgraph.distributions.transformed_distribution import TransformedDistribution
from fgraph.distributions.transforms import SigmoidTransform
from fgraph.distributions.utils import (as_float, broadcast_all, clamp_probs, lazy_property, logits_to_probs,
                                        probs_to_logits)
from fgraph.tensor import Tensor

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


class LogitRelaxedBernoulli(Distribution):
    """The logit of a :class:`RelaxedBernoulli` draw: a real-valued, reparameterised relaxation."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    # torch leaves has_rsample False here although rsample is reparameterised; kept equal to torch

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None,
                 validate_args: Optional[bool] = None) -> None:
        param = binary_parameter(self, probs, logits)
        self.temperature = as_float(temperature, like=param)
        self._param = param
        super().__init__(param.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["LogitRelaxedBernoulli"] = None
               ) -> "LogitRelaxedBernoulli":
        new = self._get_checked_instance(LogitRelaxedBernoulli, _instance)
        batch_shape = tuple(batch_shape)
        new.temperature = self.temperature
        expand_binary_parameter(self, new, batch_shape)
        super(LogitRelaxedBernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> tuple:
        return tuple(self._param.shape)

    def rsample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        uniforms = clamp_probs(fg.rand(shape, dtype=probs.dtype, key=key, generator=generator))
        # logistic noise logit(U) shifted by the log-odds, then scaled by 1 / temperature
        return (uniforms.log() - (-uniforms).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """A relaxed Bernoulli on ``(0, 1)``: ``sigmoid`` of a :class:`LogitRelaxedBernoulli` draw."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None,
                 validate_args: Optional[bool] = None) -> None:
        base_dist = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base_dist, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["RelaxedBernoulli"] = None) -> "RelaxedBernoulli":
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def temperature(self) -> Tensor:
        return self.base_dist.temperature

    @property
    def logits(self) -> Tensor:
        return self.base_dist.logits

    @property
    def probs(self) -> Tensor:
        return self.base_dist.probs
