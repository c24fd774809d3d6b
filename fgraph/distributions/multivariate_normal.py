"""``MultivariateNormal(loc, covariance_matrix= | precision_matrix= | scale_tril=)``: the Gaussian on vectors.

Every computation goes through the lower Cholesky factor ``L`` of the covariance
(``Sigma = L L^T``): given directly as ``scale_tril``, or factorised from the covariance
or precision matrix. ``loc`` and the matrix broadcast over their batch dims; the
factor is kept at its own (unbroadcast) batch shape, so ``log_prob`` of many draws
solves one triangular system per distinct matrix.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions.multivariate_normal import MultivariateNormal
    >>> loc = fg.zeros(2, requires_grad=True)
    >>> d = MultivariateNormal(loc, covariance_matrix=fg.tensor([[2.0, 0.5], [0.5, 1.0]]))
    >>> x = d.rsample((4,), key=jax.random.key(0))
    >>> d.batch_shape, d.event_shape, x.shape, d.log_prob(x).shape
    ((), (2,), (4, 2), (4,))
    >>> round(d.entropy().item(), 4)
    3.1177
"""
from __future__ import annotations

import math
from typing import Any, Optional

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions.distribution import Distribution
from fgraph.distributions.utils import as_float, lazy_property, standard_normal
from fgraph.tensor import Tensor

__all__ = ["MultivariateNormal"]


def _batch_mv(bmat: Tensor, bvec: Tensor) -> Tensor:
    """Matrix-vector products ``bmat @ bvec`` with broadcasting batch dims."""
    return fg.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL: Tensor, bx: Tensor) -> Tensor:
    """The squared Mahalanobis distance ``x^T (L L^T)^{-1} x`` for lower-triangular ``L``, batched.

    ``bL`` is ``(..., n, n)`` and ``bx`` is ``(..., n)``; their batch dims broadcast. As in
    torch, the leading dims of ``bx`` that ``bL`` does not have (and the dims where ``bL``
    has size 1) are moved into the columns of one right-hand side per distinct matrix, so
    ``bL`` is never expanded over sample dims.
    """
    n = bx.shape[-1]
    target = fg.broadcast_shapes(tuple(bL.shape[:-2]), tuple(bx.shape[:-1]))
    if tuple(bx.shape[:-1]) != tuple(target):
        bx = bx.expand(tuple(target) + (n,))
    x_batch = tuple(bx.shape[:-1])
    l_batch = tuple(bL.shape[:-2])
    l_dims = len(l_batch)
    outer = len(x_batch) - l_dims
    # split each batch dim of x shared with L into (size // size_L, size_L)
    split_shape = x_batch[:outer]
    for size_l, size_x in zip(l_batch, x_batch[outer:]):
        split_shape += (size_x // size_l, size_l)
    bx = bx.reshape(split_shape + (n,))
    new_dims = outer + 2 * l_dims
    order = list(range(outer)) + list(range(outer, new_dims, 2)) + list(range(outer + 1, new_dims, 2)) + [new_dims]
    bx = bx.permute(order)

    flat_l = bL.reshape(-1, n, n)  # (b, n, n)
    flat_x = bx.reshape(-1, flat_l.shape[0], n)  # (c, b, n)
    columns = flat_x.permute(1, 2, 0)  # (b, n, c)
    m = fg.linalg.solve_triangular(flat_l, columns, upper=False).square().sum(-2).T  # (c, b)

    permuted = m.reshape(tuple(bx.shape[:-1]))
    inverse = list(range(outer))
    for i in range(l_dims):
        inverse += [outer + i, outer + l_dims + i]
    return permuted.permute(inverse).reshape(x_batch)


def _precision_to_scale_tril(precision: Tensor) -> Tensor:
    """The lower Cholesky factor of ``precision^{-1}``, without inverting ``precision``.

    With ``J`` the exchange matrix and ``J P J = Lf Lf^T``, ``P = U U^T`` for the upper
    triangular ``U = J Lf J``; so ``P^{-1} = U^{-T} U^{-1}``, whose lower factor is
    ``(U^T)^{-1}``: one triangular solve against the identity.
    """
    lf = fg.linalg.cholesky(fg.flip(precision, (-2, -1)))
    l_inv = fg.flip(lf, (-2, -1)).mT
    eye = fg.eye(precision.shape[-1], dtype=precision.dtype)
    return fg.linalg.solve_triangular(l_inv, eye, upper=False)


def half_log_det(scale_tril: Tensor) -> Tensor:
    """``log |L|`` for a lower-triangular ``L``: half the log-determinant of ``L L^T``."""
    return scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)


def _matrix(value: Any, name: str, like: Optional[Tensor]) -> Tensor:
    value = as_float(value, like)
    if value.dim() < 2:
        raise ValueError(f"MultivariateNormal: {name} must be at least two-dimensional, with optional leading "
                         f"batch dimensions (got shape {tuple(value.shape)}).")
    return value


class MultivariateNormal(Distribution):
    """The multivariate normal distribution with mean ``loc`` and covariance ``L L^T``.

    Give exactly one of ``covariance_matrix``, ``precision_matrix`` (both positive definite)
    or ``scale_tril`` (lower triangular with a positive diagonal).
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Any, covariance_matrix: Optional[Tensor] = None,
                 precision_matrix: Optional[Tensor] = None, scale_tril: Optional[Tensor] = None,
                 validate_args: Optional[bool] = None) -> None:
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ValueError("MultivariateNormal: Exactly one of covariance_matrix or precision_matrix or "
                             f"scale_tril may be specified (got {len(given)}).")
        like = given[0] if isinstance(given[0], Tensor) else None
        loc = as_float(loc, like)
        if loc.dim() < 1:
            raise ValueError("MultivariateNormal: loc must be at least one-dimensional (a vector of means); "
                             f"got shape {tuple(loc.shape)}.")
        n = loc.shape[-1]
        if scale_tril is not None:
            matrix, name = _matrix(scale_tril, "scale_tril", loc), "scale_tril"
        elif covariance_matrix is not None:
            matrix, name = _matrix(covariance_matrix, "covariance_matrix", loc), "covariance_matrix"
        else:
            matrix, name = _matrix(precision_matrix, "precision_matrix", loc), "precision_matrix"
        if tuple(matrix.shape[-2:]) != (n, n):
            raise ValueError(f"MultivariateNormal: {name} must be a batch of {n} x {n} matrices to match loc's last "
                             f"dim, got shape {tuple(matrix.shape)}.")
        try:
            batch_shape = tuple(fg.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1])))
        except (RuntimeError, ValueError) as err:
            raise ValueError(f"MultivariateNormal: the batch shapes of loc {tuple(loc.shape)} and {name} "
                             f"{tuple(matrix.shape)} do not broadcast.") from err
        setattr(self, name, matrix.expand(batch_shape + (n, n)))
        self.loc = loc.expand(batch_shape + (n,))
        super().__init__(batch_shape, (n,), validate_args=validate_args)

        if name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = fg.linalg.cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(matrix)

    def expand(self, batch_shape: Any, _instance: Optional["MultivariateNormal"] = None) -> "MultivariateNormal":
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = tuple(batch_shape)
        loc_shape = batch_shape + self._event_shape
        cov_shape = loc_shape + self._event_shape
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        super(MultivariateNormal, new).__init__(batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self) -> tuple:
        return self._batch_shape + self._event_shape + self._event_shape

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        tril = self._unbroadcasted_scale_tril
        return fg.matmul(tril, tril.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        # (L L^T)^{-1} as a function of the whole of L: the gradient reaching L's upper triangle is
        # torch's (its cholesky_inverse differentiates L L^T, not the triangle LAPACK reads)
        tril = self._unbroadcasted_scale_tril
        precision = fg.linalg.inv(fg.matmul(tril, tril.mT))
        return (0.5 * (precision + precision.mT)).expand(self._matrix_shape())

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return self._unbroadcasted_scale_tril.square().sum(-1).expand(self._batch_shape + self._event_shape)

    def rsample(self, sample_shape: Any = (), *, key: Any = None, generator: Any = None) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = standard_normal(shape, self.loc.dtype, key, generator)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + m) - half_log_det(self._unbroadcasted_scale_tril)

    def entropy(self) -> Tensor:
        h = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det(self._unbroadcasted_scale_tril)
        return h if len(self._batch_shape) == 0 else h.expand(self._batch_shape)
