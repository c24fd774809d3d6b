"""Parameter initialisation with PyTorch's names and distributions (``torch.nn.init``).

fgraph tensors are immutable, so each ``name_`` function *returns* a new tensor
of the same shape and dtype instead of filling one in place. When it is given a
:class:`~fgraph.nn.Parameter` held by modules, the new Parameter is also rebound
on those modules, so PyTorch's style keeps working::

    nn.init.xavier_uniform_(layer.weight)      # layer.weight is now the new Parameter

Randomness comes from ``key=`` (a JAX key), ``generator=`` or the default
generator (:func:`fgraph.manual_seed`); values differ from PyTorch's for the same
seed, the distributions are the same.

Example:
    >>> import fgraph as fg
    >>> from fgraph import nn
    >>> layer = nn.Linear(3, 2)
    >>> w = nn.init.zeros_(layer.weight)
    >>> layer.weight is w, w.tolist()
    (True, [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    >>> round(nn.init.calculate_gain("relu") ** 2, 6)
    2.0
"""
from __future__ import annotations

import functools
import math
from typing import Any, Optional

import jax
import jax.numpy as jnp
import numpy as np

from fgraph.errors import OpError
from fgraph.nn.parameter import Parameter, _make_parameter, rebind
from fgraph.random import Generator, resolve_key
from fgraph.tensor import Tensor

__all__ = [
    "calculate_gain",
    "uniform_",
    "normal_",
    "trunc_normal_",
    "constant_",
    "ones_",
    "zeros_",
    "eye_",
    "dirac_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "orthogonal_",
]

_LINEAR_GAIN = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                "conv_transpose3d", "sigmoid")


def calculate_gain(nonlinearity: str, param: Optional[float] = None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table).

    linear/conv/sigmoid 1, tanh 5/3, relu sqrt(2), leaky_relu sqrt(2 / (1 + slope^2))
    (``param`` is the slope, default 0.01), selu 3/4.

    Example:
        >>> from fgraph.nn import init
        >>> init.calculate_gain("tanh")
        1.6666666666666667
    """
    if nonlinearity in _LINEAR_GAIN:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = float(param)
        else:
            raise ValueError(f"calculate_gain: negative_slope {param!r} is not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}; one of {_LINEAR_GAIN + ('tanh', 'relu', 'leaky_relu', 'selu')}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """``(fan_in, fan_out)``: ``shape[1] * receptive field`` and ``shape[0] * receptive field``."""
    if tensor.ndim < 2:
        raise ValueError(
            f"Fan in and fan out can not be computed for tensor with fewer than 2 dimensions (shape {tensor.shape}); "
            "use uniform_/normal_ with explicit bounds for biases and vectors."
        )
    receptive = int(np.prod(tensor.shape[2:])) if tensor.ndim > 2 else 1
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _check(tensor: Any, op: str) -> Tensor:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"init.{op}: expected an fgraph Tensor or Parameter, got {type(tensor).__name__}.")
    if not jnp.issubdtype(tensor.dtype, jnp.inexact):
        raise OpError(f"init.{op}: expected a floating point tensor, got dtype {tensor.dtype}.")
    return tensor


def _replace(tensor: Tensor, array: Any) -> Tensor:
    """A new tensor like ``tensor`` holding ``array``; a Parameter is rebound on the modules holding it."""
    array = jnp.asarray(array, tensor.dtype)
    if isinstance(tensor, Parameter):
        return rebind({tensor: _make_parameter(array, tensor.requires_grad)})[tensor]
    return Tensor(array, requires_grad=tensor.requires_grad)


def _key(key: Any, generator: Optional[Generator], op: str) -> jax.Array:
    return resolve_key(key, generator, f"init.{op}")


@functools.partial(jax.jit, static_argnames=("kind", "size", "dtype"))
def _flat_draw(key: jax.Array, a: Any, b: Any, *, kind: str, size: int, dtype: Any) -> jax.Array:
    if kind == "uniform":
        return jax.random.uniform(key, (size,), dtype, a, b)
    if kind == "normal":
        return a + b * jax.random.normal(key, (size,), dtype)
    return jax.random.truncated_normal(key, a, b, (size,), dtype)  # standard normal truncated to [a, b]


def _draw(kind: str, key: jax.Array, shape: tuple, dtype: Any, a: float, b: float) -> jax.Array:
    """Samples of ``shape``, drawn flat in a power-of-two size and cut to fit.

    Compiling a sampler costs ~0.3 s per size, and a model has many parameter shapes:
    drawing in power-of-two sizes compiles one sampler per size class instead of one
    per shape; the cut to size happens on the host (eagerly; traced, it is an op).
    """
    numel = math.prod(shape)
    size = 1 << max(numel - 1, 0).bit_length()
    flat = _flat_draw(key, a, b, kind=kind, size=size, dtype=np.dtype(dtype))
    if isinstance(flat, jax.core.Tracer):
        return flat[:numel].reshape(shape)
    return jnp.asarray(np.asarray(flat)[:numel].reshape(shape))  # cut on the host: nothing to compile


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Optional[Generator] = None, *,
             key: Any = None) -> Tensor:
    """Values drawn from ``U(a, b)``.

    Example:
        >>> import fgraph as fg, jax
        >>> w = fg.nn.init.uniform_(fg.empty(100), -1.0, 1.0, key=jax.random.key(0))
        >>> bool(((w >= -1) & (w < 1)).all())
        True
    """
    _check(tensor, "uniform_")
    k = _key(key, generator, "uniform_")
    return _replace(tensor, _draw("uniform", k, tensor.shape, tensor.dtype, a, b))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Optional[Generator] = None, *,
            key: Any = None) -> Tensor:
    """Values drawn from ``N(mean, std^2)``."""
    _check(tensor, "normal_")
    k = _key(key, generator, "normal_")
    return _replace(tensor, _draw("normal", k, tensor.shape, tensor.dtype, mean, std))


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator: Optional[Generator] = None, *, key: Any = None) -> Tensor:
    """``N(mean, std^2)`` truncated to ``[a, b]`` (``a``, ``b`` are absolute bounds, as in PyTorch).

    Example:
        >>> import fgraph as fg, jax
        >>> w = fg.nn.init.trunc_normal_(fg.empty(1000), std=1.0, a=-0.5, b=0.5, key=jax.random.key(1))
        >>> bool((w.abs() <= 0.5).all())
        True
    """
    _check(tensor, "trunc_normal_")
    k = _key(key, generator, "trunc_normal_")
    lower, upper = (a - mean) / std, (b - mean) / std
    z = _draw("trunc", k, tensor.shape, jnp.float64 if tensor.dtype == jnp.float64 else jnp.float32, lower, upper)
    return _replace(tensor, jnp.clip(mean + std * z, a, b))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Every value ``val``."""
    _check(tensor, "constant_")
    return _replace(tensor, jnp.full(tensor.shape, val, tensor.dtype))


def ones_(tensor: Tensor) -> Tensor:
    """Every value 1."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Every value 0."""
    return constant_(tensor, 0.0)


def eye_(tensor: Tensor) -> Tensor:
    """The identity matrix (2-D tensors only).

    Example:
        >>> import fgraph as fg
        >>> fg.nn.init.eye_(fg.empty(2, 3)).tolist()
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    """
    _check(tensor, "eye_")
    if tensor.ndim != 2:
        raise ValueError(f"init.eye_: only 2-D tensors are supported, got shape {tensor.shape}")
    return _replace(tensor, jnp.eye(*tensor.shape, dtype=tensor.dtype))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """The Dirac delta for 3-5-D convolution weights: convolving with it keeps the input channels."""
    _check(tensor, "dirac_")
    if tensor.ndim not in (3, 4, 5):
        raise ValueError(f"init.dirac_: only 3, 4, 5-D tensors are supported, got shape {tensor.shape}")
    out_per_group = tensor.shape[0] // groups
    if tensor.shape[0] % groups != 0:
        raise ValueError(f"init.dirac_: dim 0 ({tensor.shape[0]}) must be divisible by groups ({groups})")
    min_dim = min(out_per_group, tensor.shape[1])
    array = np.zeros(tensor.shape, dtype=np.float64)
    centre = tuple(s // 2 for s in tensor.shape[2:])
    for g in range(groups):
        for d in range(min_dim):
            array[(g * out_per_group + d, d) + centre] = 1
    return _replace(tensor, array)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Optional[Generator] = None, *,
                    key: Any = None) -> Tensor:
    """``U(-a, a)`` with ``a = gain * sqrt(6 / (fan_in + fan_out))`` (Glorot & Bengio, 2010)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(_check(tensor, "xavier_uniform_"))
    a = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a, generator, key=key)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Optional[Generator] = None, *,
                   key: Any = None) -> Tensor:
    """``N(0, std^2)`` with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(_check(tensor, "xavier_normal_"))
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator, key=key)


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator: Optional[Generator] = None, *, key: Any = None) -> Tensor:
    """``U(-bound, bound)`` with ``bound = gain * sqrt(3 / fan)`` (He et al., 2015).

    ``a`` is the negative slope for ``leaky_relu``; ``mode`` picks ``fan_in`` or ``fan_out``.
    ``a=sqrt(5)`` is what ``Linear`` and ``Conv`` use: ``bound = 1 / sqrt(fan_in)``.
    """
    _check(tensor, "kaiming_uniform_")
    if 0 in tensor.shape:
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator, key=key)


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator: Optional[Generator] = None, *, key: Any = None) -> Tensor:
    """``N(0, std^2)`` with ``std = gain / sqrt(fan)``."""
    _check(tensor, "kaiming_normal_")
    if 0 in tensor.shape:
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator, key=key)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator: Optional[Generator] = None, *,
                key: Any = None) -> Tensor:
    """A (semi-)orthogonal matrix from the QR decomposition of a Gaussian one (Saxe et al., 2013).

    Tensors with more than two dims are flattened to ``(shape[0], -1)``.

    Example:
        >>> import fgraph as fg, jax, numpy as np
        >>> q = fg.nn.init.orthogonal_(fg.empty(3, 5), key=jax.random.key(0)).numpy()
        >>> bool(np.allclose(q @ q.T, np.eye(3), atol=1e-5))
        True
    """
    _check(tensor, "orthogonal_")
    if tensor.ndim < 2:
        raise ValueError(f"init.orthogonal_: only tensors with 2 or more dimensions are supported, got {tensor.shape}")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    k = _key(key, generator, "orthogonal_")
    flat = jax.random.normal(k, (rows, cols), tensor.dtype)
    if rows < cols:
        flat = flat.T
    q, r = jnp.linalg.qr(flat)
    q = q * jnp.sign(jnp.diagonal(r))
    if rows < cols:
        q = q.T
    return _replace(tensor, gain * q.reshape(tensor.shape))
