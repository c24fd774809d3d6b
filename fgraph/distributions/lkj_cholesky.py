"""``LKJCholesky(dim, concentration)``: the LKJ distribution on Cholesky factors of correlation matrices.

The density of ``L`` is proportional to ``det(L L^T)^(concentration - 1)`` times the
Jacobian of ``L -> L L^T``, so ``L L^T`` follows LKJ(``concentration``); with
``concentration == 1`` the correlation matrices are uniform. Sampling uses the onion
method (Lewandowski, Kurowicka and Joe, 2009, section 3), as torch and NumPyro do: row
``i`` of ``L`` is a uniform direction scaled by the square root of a Beta draw, with the
diagonal entry completing the row to unit length.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.lkj_cholesky import LKJCholesky
    >>> d = LKJCholesky(3, fg.tensor([0.5, 2.0]))
    >>> L = d.sample(key=jax.random.key(0))
    >>> d.batch_shape, d.event_shape, L.shape
    ((2,), (3, 3), (2, 3, 3))
    >>> [round(v, 6) for v in fg.matmul(L, L.mT).diagonal(dim1=-2, dim2=-1)[0].tolist()]
    [1.0, 1.0, 1.0]
"""
from __future__ import annotations

import math
from typing import Any, Optional

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions.beta import Beta
from fgraph.distributions.distribution import Distribution
from fgraph.distributions.utils import broadcast_all, split_key, standard_normal
from fgraph.tensor import Tensor

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """The LKJ distribution over ``dim x dim`` lower Cholesky factors of correlation matrices.

    ``concentration`` (eta, a float or a Tensor of batch shape) must be positive.
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration: Any = 1.0, validate_args: Optional[bool] = None) -> None:
        if not isinstance(dim, int) or isinstance(dim, bool) or dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        super().__init__(tuple(self.concentration.shape), (dim, dim), validate_args=validate_args)
        # row i's squared off-diagonal norm is Beta(i / 2, eta + (dim - 1 - i) / 2) (the onion method's
        # step for row i); row 0 has no off-diagonal entries and its draw is unused. torch's port uses
        # Beta(i - 1/2, ...) for rows i >= 2, whose samples do not follow its own log_prob.
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = fg.cat([fg.zeros(1, dtype=self.concentration.dtype),
                         0.5 * fg.arange(self.dim - 1, dtype=self.concentration.dtype)])
        beta_conc1 = offset + 0.5
        beta_conc0 = marginal_conc.unsqueeze(-1) - offset
        self._beta = Beta(beta_conc1, beta_conc0, validate_args=False)

    def expand(self, batch_shape: Any, _instance: Optional["LKJCholesky"] = None) -> "LKJCholesky":
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = tuple(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        super(LKJCholesky, new).__init__(batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        key_beta, key_normal = split_key(key, 2)
        with fg.no_grad():
            y = self._beta.sample(sample_shape, key=key_beta, generator=generator).unsqueeze(-1)
            u_normal = standard_normal(self._extended_shape(sample_shape), y.dtype, key_normal, generator).tril(-1)
            # row 0 has no off-diagonal entries: divide its zeros by 1 rather than by their zero norm
            first_row = (fg.arange(self.dim) == 0).unsqueeze(-1)
            norm = fg.linalg.vector_norm(u_normal, dim=-1, keepdim=True)
            u_hypersphere = u_normal / fg.where(first_row, fg.ones_like(norm), norm)
            w = y.sqrt() * u_hypersphere
            tiny = float(fg.finfo(w.dtype).tiny)
            diag_elems = (1 - w.square().sum(-1)).clamp(min=tiny).sqrt()
            return (w + fg.diag_embed(diag_elems)).detach()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = fg.arange(2, self.dim + 1, dtype=self.concentration.dtype)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = (order * diag_elems.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = fg.lgamma(alpha) * dm1
        numerator = fg.mvlgamma(alpha - 0.5, dm1)
        normalize_term = 0.5 * dm1 * math.log(math.pi) + numerator - denominator
        return unnormalized_log_pdf - normalize_term
