"""``VonMises(loc, concentration)``: the circular normal distribution on angles (radians).

``loc`` and the values given to ``log_prob`` are any real numbers, read modulo ``2 pi``.
``sample`` is Best & Fisher's rejection sampler (torch's), run as one traceable
``jax.lax.while_loop`` (:func:`fgraph.distributions._ops_gamma.von_mises_rejection`), in double
precision when JAX's x64 mode is on; there is no ``rsample`` (as torch). ``log_prob`` and the
moments use torch's polynomial approximations of ``log I0`` and ``log I1``.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.von_mises import VonMises
    >>> d = VonMises(fg.tensor([0.0, 1.0]), fg.tensor([1.0, 4.0]))
    >>> d.sample((3,), key=jax.random.key(0)).shape, d.has_rsample
    ((3, 2), False)
    >>> [round(v, 4) for v in d.log_prob(fg.tensor([0.0, 1.0])).tolist()]
    [-1.0738, -0.2628]
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions._ops_gamma import von_mises_rejection
from fgraph.distributions.distribution import Distribution
from fgraph.distributions.utils import broadcast_all, lazy_property
from fgraph.tensor import Tensor

__all__ = ["VonMises"]

_LOG_TWO_PI = math.log(2 * math.pi)

# Abramowitz & Stegun 9.8.1-9.8.4 (torch's coefficients): I0 and I1 below and above x = 3.75
_I0_COEF_SMALL = [1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2]
_I0_COEF_LARGE = [0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2, -0.2057706e-1, 0.2635537e-1,
                  -0.1647633e-1, 0.392377e-2]
_I1_COEF_SMALL = [0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3]
_I1_COEF_LARGE = [0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1, 0.2282967e-1, -0.2895312e-1,
                  0.1787654e-1, -0.420059e-2]
_COEF_SMALL = (_I0_COEF_SMALL, _I1_COEF_SMALL)
_COEF_LARGE = (_I0_COEF_LARGE, _I1_COEF_LARGE)


def _eval_poly(y: Tensor, coef: Sequence[float]) -> Tensor:
    result = coef[-1]
    for c in reversed(coef[:-1]):
        result = c + y * result
    return result


def _log_modified_bessel_fn(x: Tensor, order: int = 0) -> Tensor:
    """``log(I_order(x))`` for ``x > 0`` and ``order`` 0 or 1 (torch's approximation)."""
    if order not in (0, 1):
        raise ValueError(f"_log_modified_bessel_fn: order must be 0 or 1, got {order}")
    y = x / 3.75
    y = y * y
    small = _eval_poly(y, _COEF_SMALL[order])
    if order == 1:
        small = x.abs() * small
    small = small.log()
    large = x - 0.5 * x.log() + _eval_poly(3.75 / x, _COEF_LARGE[order]).log()
    return fg.where(x < 3.75, small, large)


class VonMises(Distribution):
    """The von Mises distribution with mean direction ``loc`` and ``concentration`` (kappa)."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc: Any, concentration: Any, validate_args: Optional[bool] = None) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, (), validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["VonMises"] = None) -> "VonMises":
        new = self._get_checked_instance(VonMises, _instance)
        batch_shape = tuple(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        super(VonMises, new).__init__(batch_shape, (), validate_args=False)
        new._validate_args = self._validate_args
        return new

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * fg.cos(value - self.loc)
        return log_prob - _LOG_TWO_PI - _log_modified_bessel_fn(self.concentration, order=0)

    @lazy_property
    def _proposal_r(self) -> Tensor:
        """The wrapped-Cauchy envelope's ``r``, with ``rho`` written without cancellation for small kappa."""
        kappa = self.concentration.detach()
        tau = 1 + (1 + 4 * kappa ** 2).sqrt()
        rho = 2 * kappa / (tau + (2 * tau).sqrt())  # = (tau - sqrt(2 tau)) / (2 kappa)
        proposal_r = (1 + rho ** 2) / (2 * rho)
        return fg.where(kappa < 1e-5, 1 / kappa + kappa, proposal_r)

    def sample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        """Draws by Best & Fisher's rejection sampler ("Efficient simulation of the von Mises distribution",
        Applied Statistics 1979), in ``[-pi, pi)``."""
        shape = self._extended_shape(sample_shape)
        return von_mises_rejection(self.loc, self.concentration, self._proposal_r, shape, key=key,
                                   generator=generator)

    @property
    def mean(self) -> Tensor:
        """The circular mean, ``loc``."""
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @lazy_property
    def variance(self) -> Tensor:
        """The circular variance ``1 - I1(kappa) / I0(kappa)``."""
        return 1 - (_log_modified_bessel_fn(self.concentration, order=1)
                    - _log_modified_bessel_fn(self.concentration, order=0)).exp()
