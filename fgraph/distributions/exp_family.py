"""``ExponentialFamily``: densities ``p(x) = h(x) exp(<theta, t(x)> - F(theta))``.

A subclass names its natural parameters ``theta`` (``_natural_params``), its log
normaliser ``F`` (``_log_normalizer``) and the mean of its log carrier measure
(``_mean_carrier_measure``). The entropy then follows from ``F`` and its gradient, and
the KL divergence between two members of one family is the Bregman divergence of
``F`` (registered in :mod:`fgraph.distributions._kl_common`). Both are differentiable,
to any order, with respect to the parameters: the gradient of ``F`` is taken with
``create_graph=True``.

Example:
    >>> import fgraph as fg
    >>> from fgraph.distributions import ExponentialFamily, Normal
    >>> d = Normal(fg.tensor(0.0), fg.tensor(2.0))
    >>> round(ExponentialFamily.entropy(d).item(), 5) == round(d.entropy().item(), 5)
    True
"""
from __future__ import annotations

import fgraph as fg
from fgraph.distributions.distribution import Distribution
from fgraph.tensor import Tensor

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Base class of exponential-family distributions (``torch.distributions.ExponentialFamily``)."""

    @property
    def _natural_params(self) -> tuple:
        raise NotImplementedError

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> float:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """``F(theta) - <theta, grad F(theta)> - E[log h(x)]`` (the Bregman form of the entropy)."""
        tracked = any(p.requires_grad for p in self._natural_params)
        nparams = [p if p.requires_grad else p.detach().requires_grad_() for p in self._natural_params]
        with fg.enable_grad():
            log_norm = self._log_normalizer(*nparams)
            grads = fg.grad(log_norm.sum(), nparams, create_graph=True)
        result = log_norm - self._mean_carrier_measure
        for theta, g in zip(nparams, grads):
            result = result - (theta * g).reshape(self._batch_shape + (-1,)).sum(-1)
        return result if tracked else result.detach()
