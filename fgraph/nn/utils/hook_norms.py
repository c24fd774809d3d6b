"""PyTorch's legacy hook-based ``weight_norm`` and ``spectral_norm`` (``torch.nn.utils.weight_norm`` ...).

Prefer :mod:`fgraph.nn.utils.parametrizations`. These keep the old layout, for old code and
old checkpoints: a forward pre-hook recomputes ``module.<name>`` (a plain tensor attribute,
not a parameter) before each call.

* :func:`weight_norm`: parameters ``<name>_g`` (magnitude) and ``<name>_v`` (direction);
  deprecated in PyTorch, and here too (a ``FutureWarning``).
* :func:`spectral_norm`: parameter ``<name>_orig``, buffers ``<name>_u`` and ``<name>_v``
  (power-iteration estimates, started at random *without* the parametrized version's 15
  warm-up iterations, as in PyTorch; rebound by each training-mode call).

State dict keys are PyTorch's, so a PyTorch ``state_dict`` of such a module loads. Not
reproduced: the ``spectral_norm`` version entry PyTorch writes in the state dict's metadata,
and the conversion of checkpoints written before PyTorch 1.1 (a ``<name>`` key instead of
``<name>_v``), which relies on it. Under ``fg.compile``/``jax.jit`` the plain attribute
``module.<name>`` is left holding a traced value after the call (the next call recomputes it).

Example:
    >>> import fgraph as fg
    >>> from fgraph.nn.utils import spectral_norm, remove_spectral_norm
    >>> layer = spectral_norm(fg.nn.Linear(3, 2))
    >>> list(layer.state_dict())
    ['bias', 'weight_orig', 'weight_u', 'weight_v']
    >>> layer(fg.ones(1, 3)).shape
    (1, 2)
    >>> list(remove_spectral_norm(layer).state_dict())
    ['bias', 'weight']
"""
from __future__ import annotations

import warnings
from typing import Any, Optional, TypeVar

import fgraph.nn.functional as F
from fgraph.autograd.grad_mode import no_grad
from fgraph.nn.modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from fgraph.nn.modules.module import Module
from fgraph.nn.modules._state_dict import _on_device_of
from fgraph.nn.parameter import Parameter, _make_parameter
from fgraph.nn.utils.parametrizations import _norm_except_dim, _weight_norm
from fgraph.ops.linalg import dot, mv
from fgraph.ops.random_ops import randn
from fgraph.tensor import Tensor, _wrap

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm", "SpectralNorm", "spectral_norm",
           "remove_spectral_norm"]

T_module = TypeVar("T_module", bound=Module)


def _find_parameter(module: Module, name: str, what: str) -> Parameter:
    if not isinstance(module, Module):
        raise TypeError(f"{what}: module must be an fgraph.nn.Module, got {type(module).__name__}")
    weight = module._parameters.get(name)
    if weight is None:
        reason = "is None" if name in module._parameters else "does not exist"
        raise ValueError(f"{what}: the parameter `{name}` of {type(module).__name__} {reason}; there is nothing "
                         "to normalize.")
    return weight


# -- weight_norm ----------------------------------------------------------------------------------------------
class WeightNorm:
    """The forward pre-hook of the legacy :func:`weight_norm`: ``<name> = g * v / ||v||`` before each call."""

    def __init__(self, name: str, dim: Optional[int]) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Tensor:
        return _weight_norm(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"), self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: Optional[int]) -> "WeightNorm":
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        weight = _find_parameter(module, name, "weight_norm")
        fn = WeightNorm(name, dim)
        delattr(module, name)
        module.register_parameter(name + "_g", _make_parameter(_norm_except_dim(weight.detach(), fn.dim)._array, True))
        module.register_parameter(name + "_v", _make_parameter(weight._array, True))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        delattr(module, self.name + "_g")
        delattr(module, self.name + "_v")
        setattr(module, self.name, _make_parameter(weight._array, True))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: T_module, name: str = "weight", dim: Optional[int] = 0) -> T_module:
    """Legacy weight normalization (``torch.nn.utils.weight_norm``, deprecated: a ``FutureWarning``).

    Replaces the parameter ``<name>`` by ``<name>_g`` (its norm over every dim but ``dim``;
    ``None``: the whole tensor) and ``<name>_v`` (its value), and recomputes
    ``module.<name> = g * v / ||v||`` in a forward pre-hook. Use
    :func:`fgraph.nn.utils.parametrizations.weight_norm` instead (it loads these checkpoints).

    Example:
        >>> import warnings
        >>> import fgraph as fg
        >>> from fgraph.nn.utils import weight_norm, remove_weight_norm
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", FutureWarning)
        ...     layer = weight_norm(fg.nn.Linear(3, 2))
        >>> list(layer.state_dict()), layer.weight_g.shape
        (['bias', 'weight_g', 'weight_v'], (2, 1))
        >>> list(remove_weight_norm(layer).state_dict())
        ['bias', 'weight']
    """
    warnings.warn(
        "`fgraph.nn.utils.weight_norm` is deprecated in favor of `fgraph.nn.utils.parametrizations.weight_norm` "
        "(as in PyTorch).", FutureWarning, stacklevel=2,
    )
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: T_module, name: str = "weight") -> T_module:
    """Undo the legacy :func:`weight_norm`: ``<name>`` is a Parameter again, holding the current weight."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            module._forward_pre_hooks_with_kwargs.pop(key, None)
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")


# -- spectral_norm --------------------------------------------------------------------------------------------
class SpectralNorm:
    """The forward pre-hook of the legacy :func:`spectral_norm`: ``<name> = <name>_orig / sigma`` before each call."""

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        self.name = name
        self.dim = dim
        if isinstance(n_power_iterations, bool) or not isinstance(n_power_iterations, int) or n_power_iterations <= 0:
            raise ValueError(
                f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}"
            )
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.ndim) if d != self.dim])
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                mat = weight_mat.detach()
                for _ in range(self.n_power_iterations):
                    v = F.normalize(mv(mat.t(), u), dim=0, eps=self.eps)
                    u = F.normalize(mv(mat, v), dim=0, eps=self.eps)
                setattr(module, self.name + "_u", u)  # rebound (PyTorch writes them in place)
                setattr(module, self.name + "_v", v)
        sigma = dot(u, mv(weight_mat, v))
        return weight / sigma

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, _make_parameter(weight._array, True))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int, eps: float) -> "SpectralNorm":
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = _find_parameter(module, name, "spectral_norm")
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight.detach()).shape
            u = F.normalize(_wrap(_on_device_of(randn(h, dtype=weight.dtype)._array, weight._array)), dim=0, eps=fn.eps)
            v = F.normalize(_wrap(_on_device_of(randn(w, dtype=weight.dtype)._array, weight._array)), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        # module.<name> stays readable (code that initializes weights expects it): a plain attribute
        setattr(module, fn.name, weight.detach())
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module: T_module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: Optional[int] = None) -> T_module:
    """Legacy spectral normalization (``torch.nn.utils.spectral_norm``).

    The parameter ``<name>`` moves to ``<name>_orig``; a forward pre-hook sets
    ``module.<name> = <name>_orig / sigma`` before each call, ``sigma = u . (W v)`` with the
    buffers ``<name>_u`` and ``<name>_v``, which training-mode calls advance by
    ``n_power_iterations`` power iterations (``v`` first, then ``u``, as in PyTorch). ``dim``
    defaults to 0, or 1 for ``ConvTranspose1d``/``2d``/``3d``. Prefer
    :func:`fgraph.nn.utils.parametrizations.spectral_norm`.
    """
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: T_module, name: str = "weight") -> T_module:
    """Undo the legacy :func:`spectral_norm`: ``<name>`` is a Parameter again, holding ``<name>_orig / sigma``
    (no further power iteration)."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            module._forward_pre_hooks_with_kwargs.pop(key, None)
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
