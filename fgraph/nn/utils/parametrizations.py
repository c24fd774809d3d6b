"""``fgraph.nn.utils.parametrizations``: ``weight_norm``, ``spectral_norm`` and ``orthogonal`` (PyTorch's).

Each registers a parametrization (:func:`fgraph.nn.utils.parametrize.register_parametrization`)
with PyTorch's module, state_dict keys, initial values and arithmetic:

* :func:`weight_norm`: ``weight = g * v / ||v||`` with ``original0 = g`` and ``original1 = v``;
* :func:`spectral_norm`: ``weight / sigma(weight)``, ``sigma`` estimated by power iteration
  with the buffers ``_u`` and ``_v`` of ``parametrizations.weight[0]``, which each access
  of the weight in training mode advances (the buffers are *rebound*, as BatchNorm rebinds its
  running statistics; PyTorch writes them in place);
* :func:`orthogonal`: an orthogonal (unitary) matrix from the ``"matrix_exp"``, ``"cayley"``
  or ``"householder"`` map, with PyTorch's dynamic trivialization (the ``base`` buffer).

Example:
    >>> import fgraph as fg
    >>> from fgraph import nn
    >>> from fgraph.nn.utils import parametrizations
    >>> layer = parametrizations.weight_norm(nn.Linear(3, 4))
    >>> list(layer.state_dict())
    ['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
    >>> layer.parametrizations.weight.original0.shape, layer.weight.shape
    ((4, 1), (4, 3))
    >>> grads = layer(fg.ones(2, 3)).sum().backward()      # for g and v
    >>> grads[layer.parametrizations.weight.original1].shape
    (4, 3)
"""
from __future__ import annotations

from enum import Enum, auto
from typing import Any, Optional

import jax
import jax.numpy as jnp
import numpy as np

import fgraph.nn.functional as F
from fgraph.autograd.grad_mode import no_grad
from fgraph.ops.creation import eye
from fgraph.ops.decompositions import qr
from fgraph.ops.linalg import mv, vdot
from fgraph.ops.linalg_more import householder_product, matrix_exp
from fgraph.ops.linalg_norms import vector_norm
from fgraph.ops.linalg_solve import solve
from fgraph.ops.numerics import allclose
from fgraph.ops.random_ops import randn
from fgraph.ops.shape import cat
from fgraph.nn.modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from fgraph.nn.modules.module import Module
from fgraph.nn.modules._state_dict import _on_device_of
from fgraph.nn.utils import parametrize
from fgraph.tensor import Tensor, _wrap

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# -- weight_norm ----------------------------------------------------------------------------------------------
def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """``torch.norm_except_dim(v, 2, dim)``: the 2-norm over every dim but ``dim``, keeping them (size 1);
    ``dim == -1`` is the norm of the whole tensor (a 0-dim tensor), as in PyTorch."""
    if dim == -1:
        return vector_norm(v)
    dim = dim + v.ndim if dim < 0 else dim
    others = [d for d in range(v.ndim) if d != dim]
    if not others:
        return v.abs()
    return vector_norm(v, 2, dim=others, keepdim=True)


def _weight_norm(v: Tensor, g: Tensor, dim: int) -> Tensor:
    """``torch._weight_norm(v, g, dim)``: ``v * (g / norm_except_dim(v, 2, dim))``."""
    return v * (g / _norm_except_dim(v, dim))


class _WeightNorm(Module):
    def __init__(self, dim: Optional[int] = 0) -> None:
        super().__init__()
        if dim is None:
            dim = -1
        self.dim = dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: Optional[int] = 0) -> Module:
    """Weight normalization (``torch.nn.utils.parametrizations.weight_norm``): ``w = g * v / ||v||``.

    ``module.<name>`` becomes parametrized by its magnitude ``g``
    (``parametrizations.<name>.original0``) and direction ``v`` (``original1``), both
    Parameters; the initial ``g`` is the current norm and ``v`` the current weight. The norm is
    over every dim but ``dim`` (``dim=None``, or ``-1`` as in PyTorch: over the whole tensor,
    ``g`` then a scalar). A state_dict of the legacy ``weight_norm`` (keys ``<name>_g`` and
    ``<name>_v``) loads too. Undo it with ``parametrize.remove_parametrizations(module, name)``.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.utils.parametrizations import weight_norm
        >>> conv = weight_norm(fg.nn.Conv1d(2, 3, 3))
        >>> conv.parametrizations.weight.original0.shape, conv.parametrizations.weight.original1.shape
        ((3, 1, 1), (3, 2, 3))
        >>> conv(fg.ones(1, 2, 5)).shape
        (1, 3, 3)
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(module: Module, state_dict: dict, prefix: str, *args: Any) -> None:
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module.register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


# -- spectral_norm --------------------------------------------------------------------------------------------
class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if not isinstance(dim, int) or isinstance(dim, bool) or dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if isinstance(n_power_iterations, bool) or not isinstance(n_power_iterations, int) or n_power_iterations <= 0:
            raise ValueError(
                f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            # For ndim == 1 nothing is estimated (see forward).
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight.detach())
            h, w = weight_mat.shape
            u = _on_device_of(randn(h, dtype=weight.dtype)._array, weight._array)
            v = _on_device_of(randn(w, dtype=weight.dtype)._array, weight._array)
            self.register_buffer("_u", F.normalize(_wrap(u), dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(_wrap(v), dim=0, eps=self.eps))
            # Start from reasonable singular vectors: 15 iterations of the power method.
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        """``n_power_iterations`` steps of the power method on ``weight_mat``; ``_u`` and ``_v`` are rebound
        (no graph: the estimate is a constant for differentiation, as in PyTorch)."""
        with no_grad():
            weight_mat = weight_mat.detach()
            u, v = self._u, self._v
            for _ in range(n_power_iterations):
                u = F.normalize(mv(weight_mat, v), dim=0, eps=self.eps)
                v = F.normalize(mv(weight_mat.H, u), dim=0, eps=self.eps)
            self._u = u
            self._v = v

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)  # exact: no need to estimate anything
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        sigma = vdot(self._u, mv(weight_mat, self._v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: Optional[int] = None) -> Module:
    """Spectral normalization (``torch.nn.utils.parametrizations.spectral_norm``): ``W / sigma(W)``.

    ``sigma``, the largest singular value of the weight seen as a matrix (``dim`` first, the
    other dims flattened), is ``u^H W v`` with the singular-vector estimates ``_u`` and ``_v``,
    buffers of ``module.parametrizations.<name>[0]`` (state_dict keys
    ``parametrizations.<name>.0._u`` / ``._v``). They start from random vectors refined by 15
    power iterations; each access of ``module.<name>`` in training mode runs
    ``n_power_iterations`` more and rebinds them (eval mode leaves them). No gradient flows
    through them. A 1-D weight is just divided by its norm. ``dim`` defaults to 0, or 1 for
    ``ConvTranspose1d``/``2d``/``3d``. Values differ from PyTorch's for the same seed (the
    random start); load PyTorch's ``_u``/``_v`` through ``load_state_dict`` to match it.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.utils.parametrizations import spectral_norm
        >>> _ = fg.manual_seed(0)
        >>> layer = spectral_norm(fg.nn.Linear(4, 3))
        >>> sigma = fg.linalg.matrix_norm(layer.weight, 2)     # a training-mode access: one more iteration
        >>> abs(float(sigma) - 1.0) < 1e-2
        True
        >>> sorted(layer.state_dict())
        ['bias', 'parametrizations.weight.0._u', 'parametrizations.weight.0._v', 'parametrizations.weight.original']
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.is_complex():
        raise NotImplementedError(
            "spectral_norm: complex weights are not supported in fgraph yet (the power iteration's random start "
            "needs complex normal draws); PyTorch supports them."
        )
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


# -- orthogonal -----------------------------------------------------------------------------------------------
class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


def _is_orthogonal(Q: Tensor) -> bool:
    n, k = Q.shape[-2], Q.shape[-1]
    eps = 10.0 * n * float(jnp.finfo(Q.dtype).eps)
    return bool(allclose(Q.mH @ Q, eye(k, dtype=Q.dtype), atol=eps))


def _make_orthogonal(A: Tensor) -> Tensor:
    """The Q of ``A = QR`` (``A`` tall) with ``diag(R)`` real and non-negative."""
    Q, R = qr(A)
    return Q * R.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _geqrf_2d(a: jax.Array) -> tuple[jax.Array, jax.Array]:
    """LAPACK's ``geqrf`` (Householder QR, ``dlarfg``'s conventions) of a real ``m x n`` matrix, ``m >= n``."""
    m, n = a.shape
    rows = jnp.arange(m)
    cols = jnp.arange(n)

    def step(j: Any, state: tuple) -> tuple:
        a, tau = state
        col = a[:, j]
        alpha = col[j]
        below = rows > j
        x = jnp.where(below, col, 0)
        xnorm = jnp.sqrt(jnp.sum(x * x))
        reflect = xnorm != 0
        beta = jnp.where(reflect, -jnp.copysign(jnp.hypot(alpha, xnorm), alpha), alpha)
        t = jnp.where(reflect, (beta - alpha) / jnp.where(reflect, beta, 1), 0)
        scale = jnp.where(reflect, 1 / jnp.where(reflect, alpha - beta, 1), 0)
        v = jnp.where(below, x * scale, 0) + (rows == j).astype(a.dtype)
        update = t * jnp.outer(v, v @ a)
        a = a - jnp.where(cols[None, :] > j, update, 0)
        a = a.at[:, j].set(jnp.where(below, v, jnp.where(rows == j, beta, col)))
        return a, tau.at[j].set(t)

    return jax.lax.fori_loop(0, n, step, (a, jnp.zeros((n,), a.dtype)))


_geqrf = jax.jit(jnp.vectorize(_geqrf_2d, signature="(m,n)->(m,n),(n)"))


class _Orthogonal(Module):
    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *, use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        # X is tall: n >= k
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = cat([X, X.new_zeros(*X.shape[:-2], n, n - k)], dim=-1)  # embed in a square matrix
            A = X - X.mH  # skew-symmetric (skew-hermitian)
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = matrix_exp(A)
            else:  # the Cayley retraction (I + A/2)(I - A/2)^{-1}, computed as torch does
                Id = eye(n, dtype=A.dtype)
                Q = solve(Id + A * -0.5, Id + A * 0.5)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = householder_product(A, tau)
            # X's diagonal holds the signs (1 or -1); it is not differentiated through
            Q = Q * X.diagonal(dim1=-2, dim2=-1).detach().int().unsqueeze(-2)
        if "base" in self._buffers:
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        if tuple(Q.shape) != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of shape "
                             f"{tuple(Q.shape)}.")
        with no_grad():
            Q = Q.detach()
            Q_init = Q
            n, k = Q.shape[-2], Q.shape[-1]
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley parametrizations when "
                        "use_trivialization=False."
                    )
                # householder: the reflectors of Q's QR decomposition, with the signs of diag(R) on the diagonal
                a, tau = _geqrf(Q._array)
                diagonal = jnp.sign(jnp.diagonal(a, axis1=-2, axis2=-1))
                diagonal = jnp.where(tau == 0, -diagonal, diagonal)
                eye = jnp.eye(n, k, dtype=bool)
                a = jnp.where(eye, diagonal[..., None, :], a)
                out = _wrap(a)
                return out.mT if transpose else out
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:  # complete Q to an n x n orthogonal matrix
                N = _wrap(_on_device_of(randn(*Q.shape[:-2], n, n - k, dtype=Q.dtype)._array, Q._array))
                Q = _make_orthogonal(cat([Q, N], dim=-1))
            self.base = Q
            # -Id: householder(zeros) would be eye; the diagonal carries the signs
            neg_id = np.broadcast_to(-np.eye(*Q_init.shape[-2:], dtype=Q_init.dtype), Q_init.shape)  # on the host
            return _wrap(_on_device_of(jnp.asarray(neg_id), Q_init._array))


def orthogonal(module: Module, name: str = "weight", orthogonal_map: Optional[str] = None, *,
               use_trivialization: bool = True) -> Module:
    """Make ``module.<name>`` an orthogonal (unitary) matrix or batch of matrices
    (``torch.nn.utils.parametrizations.orthogonal``).

    The weight ``Q`` (``(..., m, n)``) has orthonormal columns when ``m >= n``, orthonormal
    rows otherwise. ``orthogonal_map``: ``"matrix_exp"`` (``Q = exp(A)``), ``"cayley"``
    (``Q = (I + A/2)(I - A/2)^{-1}``), both of a skew-symmetric ``A`` built from the
    original's lower triangle, or ``"householder"`` (a product of Householder reflectors,
    real tensors only). Default: ``"matrix_exp"`` for a square or complex weight,
    ``"householder"`` otherwise.

    ``use_trivialization=True`` (default): PyTorch's dynamic trivialization; an extra
    ``n x n`` orthogonal buffer ``base`` (``parametrizations.<name>.0.base``) multiplies the
    map's output. At registration the weight keeps its value if it is already orthogonal, and
    is orthogonalized by a QR decomposition otherwise (a non-square weight is completed with
    random columns first, so ``base`` is random there: load PyTorch's to match it). The
    original is then ``-I``.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.utils.parametrizations import orthogonal
        >>> layer = orthogonal(fg.nn.Linear(4, 3), orthogonal_map="cayley")    # weight (3, 4): orthonormal rows
        >>> bool(fg.allclose(layer.weight @ layer.weight.mT, fg.eye(3), atol=1e-5))
        True
        >>> sorted(layer.state_dict())
        ['bias', 'parametrizations.weight.0.base', 'parametrizations.weight.original']
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None) if isinstance(orthogonal_map, str) else None
    if orth_enum is None:
        raise ValueError(
            f'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: {orthogonal_map}'
        )
    if weight.is_complex() and use_trivialization:
        raise NotImplementedError(
            "orthogonal: a complex (unitary) weight with use_trivialization=True needs a complex QR decomposition, "
            "which fgraph lacks yet; pass use_trivialization=False (matrix_exp or cayley), as PyTorch also allows."
        )
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


