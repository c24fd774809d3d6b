"""``MixtureSameFamily(mixture_distribution, component_distribution)``: a finite mixture of one family.

``mixture_distribution`` is a ``Categorical`` over ``k`` components; the rightmost batch
dim (of size ``k``) of ``component_distribution`` indexes the components. The density is
``log sum_j pi_j p_j(x)``, computed with ``logsumexp``; samples pick a component, then
draw from it (no ``rsample``: the choice of component is discrete).

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions import Categorical, Normal
    >>> from fgraph.distributions.mixture_same_family import MixtureSameFamily
    >>> gmm = MixtureSameFamily(Categorical(probs=fg.tensor([0.25, 0.75])),
    ...                         Normal(fg.tensor([-1.0, 1.0]), fg.tensor([0.5, 0.5])))
    >>> gmm.batch_shape, gmm.event_shape, gmm.sample((3,), key=jax.random.key(0)).shape
    ((), (), (3,))
    >>> round(gmm.mean.item(), 4), round(gmm.variance.item(), 4)
    (0.5, 1.0)
"""
from __future__ import annotations

from typing import Any, Optional

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions.categorical import Categorical
from fgraph.distributions.distribution import Distribution, _shape
from fgraph.distributions.utils import split_key
from fgraph.tensor import Tensor

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """A batch of mixtures whose ``k`` components are the rightmost batch dim of ``component_distribution``.

    ``mixture_distribution.batch_shape`` must broadcast with
    ``component_distribution.batch_shape[:-1]``, and its number of categories must be ``k``.
    """

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mixture_distribution: Categorical, component_distribution: Distribution,
                 validate_args: Optional[bool] = None) -> None:
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError("MixtureSameFamily: the mixture distribution needs to be an instance of "
                             f"fgraph.distributions.Categorical, got {type(mixture_distribution).__name__}.")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("MixtureSameFamily: the component distribution needs to be an instance of "
                             f"fgraph.distributions.Distribution, got {type(component_distribution).__name__}.")
        if len(component_distribution.batch_shape) < 1:
            raise ValueError("MixtureSameFamily: component_distribution needs a batch dim of components (its "
                             "rightmost batch dim); got batch_shape (). Wrap scalars, e.g. Normal(fg.zeros(k), 1.0).")
        mdbs = tuple(mixture_distribution.batch_shape)
        cdbs = tuple(component_distribution.batch_shape[:-1])
        for size1, size2 in zip(reversed(mdbs), reversed(cdbs)):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mdbs}) is not compatible with "
                                 f"`component_distribution.batch_shape`({cdbs})")
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        self._num_component = km
        event_shape = tuple(component_distribution.event_shape)
        self._event_ndims = len(event_shape)
        super().__init__(batch_shape=cdbs, event_shape=event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["MixtureSameFamily"] = None) -> "MixtureSameFamily":
        batch_shape = tuple(batch_shape)
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        new._component_distribution = self._component_distribution.expand(batch_shape + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        super(MixtureSameFamily, new).__init__(batch_shape=batch_shape,
                                               event_shape=new._component_distribution.event_shape,
                                               validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property
    def support(self) -> constraints.Constraint:
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self) -> Categorical:
        return self._mixture_distribution

    @property
    def component_distribution(self) -> Distribution:
        return self._component_distribution

    def _pad(self, x: Tensor) -> Tensor:
        """Insert the components' dim just left of the event dims."""
        return x.unsqueeze(-1 - self._event_ndims)

    def _weights(self) -> Tensor:
        """The mixture probabilities, shaped ``mixture batch + (k,) + (1,) * event dims`` to broadcast."""
        probs = self.mixture_distribution.probs
        return probs.reshape(tuple(probs.shape) + (1,) * self._event_ndims)

    @property
    def mean(self) -> Tensor:
        return (self._weights() * self.component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self) -> Tensor:
        """The law of total variance: mean of the variances plus variance of the means."""
        probs = self._weights()
        comp = self.component_distribution
        dim = -1 - self._event_ndims
        mean_cond_var = (probs * comp.variance).sum(dim)
        var_cond_mean = (probs * (comp.mean - self._pad(self.mean)).square()).sum(dim)
        return mean_cond_var + var_cond_mean

    def cdf(self, x: Tensor) -> Tensor:
        cdf_x = self.component_distribution.cdf(self._pad(x))
        return (cdf_x * self.mixture_distribution.probs).sum(-1)

    def log_prob(self, x: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(x)
        log_prob_x = self.component_distribution.log_prob(self._pad(x))  # sample + batch + (k,)
        log_mix_prob = fg.log_softmax(self.mixture_distribution.logits, dim=-1)
        return fg.logsumexp(log_prob_x + log_mix_prob, dim=-1)

    def sample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        sample_shape = _shape(sample_shape)
        key_mix, key_comp = split_key(key, 2)
        with fg.no_grad():
            gather_dim = len(sample_shape) + len(self._batch_shape)
            mixture = self.mixture_distribution
            if tuple(mixture.batch_shape) != self._batch_shape:
                # one independent choice per batch element (torch gathers with the unbroadcast index)
                mixture = mixture.expand(self._batch_shape)
            mix_sample = mixture.sample(sample_shape, key=key_mix, generator=generator)
            comp_samples = self.component_distribution.sample(sample_shape, key=key_comp, generator=generator)
            index = mix_sample.reshape(tuple(mix_sample.shape) + (1,) * (self._event_ndims + 1))
            index = index.expand(tuple(mix_sample.shape) + (1,) + self._event_shape)
            return fg.gather(comp_samples, gather_dim, index).squeeze(gather_dim)

    def __repr__(self) -> str:
        return f"MixtureSameFamily(\n  {self.mixture_distribution!r},\n  {self.component_distribution!r})"
