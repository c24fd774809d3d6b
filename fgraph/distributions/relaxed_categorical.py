"""``ExpRelaxedCategorical`` and ``RelaxedOneHotCategorical``: the Concrete (Gumbel-softmax) relaxation.

``ExpRelaxedCategorical(temperature, probs=... | logits=...)`` draws the log of a point of
the simplex, ``log_softmax((logits + G) / temperature)`` with Gumbel noise ``G``;
``RelaxedOneHotCategorical`` is its ``exp``, a point of the simplex that tends to a
one-hot ``OneHotCategorical`` draw as the temperature goes to 0 (Maddison et al., 2017;
Jang et al., 2017). Both are reparameterised.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.relaxed_categorical import RelaxedOneHotCategorical
    >>> logits = fg.tensor([0.0, 1.0, -1.0], requires_grad=True)
    >>> d = RelaxedOneHotCategorical(fg.tensor(0.5), logits=logits)
    >>> x = d.rsample((4,), key=jax.random.key(0))
    >>> x.shape, [round(v, 4) for v in x.sum(-1).tolist()]
    ((4, 3), [1.0, 1.0, 1.0, 1.0])
    >>> round(d.log_prob(fg.tensor([0.2, 0.5, 0.3])).item(), 4)
    -1.1628
"""
from __future__ import annotations

from typing import Any, Optional

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions.categorical import Categorical
from fgraph.distributions.distribution import Distribution
from fgraph.distributions.transformed_distribution import TransformedDistribution
from fgraph.distributions.transforms import ExpTransform
from fgraph.distributions.utils import as_float, broadcast_all, clamp_probs
from fgraph.tensor import Tensor

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class ExpRelaxedCategorical(Distribution):
    """The log of a :class:`RelaxedOneHotCategorical` draw (its support is a submanifold of ``R^K``)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature: Any, probs: Optional[Tensor] = None, logits: Optional[Tensor] = None,
                 validate_args: Optional[bool] = None) -> None:
        self._categorical = Categorical(probs, logits)
        self.temperature = as_float(temperature, like=self._categorical._param)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["ExpRelaxedCategorical"] = None
               ) -> "ExpRelaxedCategorical":
        new = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        batch_shape = tuple(batch_shape)
        new.temperature = self.temperature
        new._categorical = self._categorical.expand(batch_shape)
        super(ExpRelaxedCategorical, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def param_shape(self) -> tuple:
        return self._categorical.param_shape

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    def rsample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        shape = self._extended_shape(sample_shape)
        uniforms = clamp_probs(fg.rand(shape, dtype=self.logits.dtype, key=key, generator=generator))
        gumbels = -((-(uniforms.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value: Tensor) -> Tensor:
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # log (K - 1)! + (K - 1) log(temperature): the density's normaliser
        log_scale = fg.lgamma(fg.full_like(self.temperature, float(k))) + (k - 1) * self.temperature.log()
        score = logits - value * self.temperature
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """A relaxed one-hot categorical on the simplex: ``exp`` of an :class:`ExpRelaxedCategorical` draw."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature: Any, probs: Optional[Tensor] = None, logits: Optional[Tensor] = None,
                 validate_args: Optional[bool] = None) -> None:
        base_dist = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["RelaxedOneHotCategorical"] = None
               ) -> "RelaxedOneHotCategorical":
        new = self._get_checked_instance(RelaxedOneHotCategorical, _instance)
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
