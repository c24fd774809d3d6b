"""Gradient clipping with ``torch.nn.utils``' names and arithmetic, for gradients that are *returned*.

PyTorch clips the ``.grad`` stored on parameters in place. fgraph stores no gradients:
``fg.backward`` returns them as a :class:`fgraph.Gradients` mapping, so these functions
take that mapping (or a dict of gradients, a sequence of gradients, or one gradient)
and return new gradients in the same kind of container with the same keys::

    grads = loss.backward()
    grads, total_norm = clip_grad_norm_(grads, max_norm=1.0)
    opt.step(grads)

The arithmetic is PyTorch's: the total norm is the ``norm_type``-norm of the
per-gradient norms, every gradient is multiplied by
``min(max_norm / (total_norm + 1e-6), 1)`` (a non-finite norm makes the gradients
non-finite, unless ``error_if_nonfinite=True`` raises). All gradients go through one
jitted kernel. Like PyTorch (which clips under ``no_grad``) the results carry no
graph. ``foreach`` is accepted and ignored: the single kernel already fuses the work.

Example:
    >>> import fgraph as fg
    >>> from fgraph.nn.utils import clip_grad_norm_, clip_grad_value_
    >>> w = fg.tensor([3.0, 4.0], requires_grad=True)
    >>> grads = (w * w).sum().backward()          # gradient [6, 8], norm 10
    >>> clipped, norm = clip_grad_norm_(grads, max_norm=5.0)
    >>> norm.item(), [round(v, 4) for v in clipped[w].tolist()]
    (10.0, [3.0, 4.0])
    >>> clip_grad_value_(grads, 7.0)[w].tolist()
    [6.0, 7.0]
"""
from __future__ import annotations

import types
import warnings
from collections.abc import Mapping
from functools import partial
from typing import Any, Optional, Union

import jax
import jax.numpy as jnp

from fgraph._dtypes import default_float_dtype
from fgraph.autograd.engine import Gradients
from fgraph.nn.functional._utils import is_traced
from fgraph.nn.parameter import Parameter
from fgraph.tensor import Tensor, _wrap

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]

GradsLike = Union[Gradients, Mapping, Tensor, Any]


# -- containers -------------------------------------------------------------------------------------
def _unpack(grads: GradsLike, op: str) -> tuple[str, list, list]:
    """``(kind, keys, values)`` of a gradient container; values are Tensors or ``None``."""
    if isinstance(grads, Gradients):
        keys = list(grads)
        kind, values = "gradients", [grads[k] for k in keys]
    elif isinstance(grads, Mapping):
        keys = list(grads)
        kind, values = "dict", [grads[k] for k in keys]
    elif isinstance(grads, Tensor):
        kind, keys, values = "tensor", [None], [grads]
    else:
        if isinstance(grads, (str, bytes)) or not hasattr(grads, "__iter__"):
            raise TypeError(
                f"{op}: expected the gradients returned by backward (fg.Gradients), a dict or a sequence of gradient "
                f"tensors, or one tensor; got {type(grads).__name__}."
            )
        is_generator = isinstance(grads, types.GeneratorType)
        values = list(grads)
        if is_generator and not values:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=4)
        kind = "tuple" if isinstance(grads, tuple) else "list"
        keys = [None] * len(values)
    for key, v in zip(keys, values):
        if isinstance(v, Parameter) and kind != "gradients":
            raise TypeError(
                f"{op}: got a Parameter where a gradient was expected. fgraph parameters carry no .grad: pass the "
                "gradients that backward returned, e.g. `grads = loss.backward(); grads, norm = "
                f"{op}(grads, max_norm)` (for a subset: {{p: grads[p] for p in params}})."
            )
        if v is not None and not isinstance(v, Tensor):
            where = "" if key is None else f" for key {key!r}" if not isinstance(key, Tensor) else " for a tensor key"
            raise TypeError(f"{op}: expected gradient tensors (or None), got {type(v).__name__}{where}.")
    return kind, keys, values


def _repack(kind: str, keys: list, values: list) -> GradsLike:
    if kind == "gradients":
        return Gradients({id(k): (k, v) for k, v in zip(keys, values)})
    if kind == "dict":
        return dict(zip(keys, values))
    if kind == "tensor":
        return values[0]
    return tuple(values) if kind == "tuple" else list(values)


def _present(values: list) -> tuple[list[int], tuple]:
    """Positions and arrays of the gradients that are not ``None``."""
    pos = [i for i, v in enumerate(values) if v is not None]
    return pos, tuple(values[i]._array for i in pos)


def _replace(values: list, pos: list[int], arrays: tuple) -> list:
    out = list(values)
    for i, a in zip(pos, arrays):
        out[i] = _wrap(a)
    return out


def _norm_type(norm_type: Any, op: str) -> float:
    try:
        return float(norm_type)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: norm_type must be a number (or 'inf'), got {norm_type!r}.") from None


def _scalar(value: Any, op: str, name: str) -> Any:
    """A Python float, or the array of a 0-d Tensor / jax.Array (kept traceable)."""
    if isinstance(value, (Tensor, jax.Array)):
        if value.ndim != 0:
            raise TypeError(f"{op}: {name} must be a number or a 0-d tensor, got shape {tuple(value.shape)}.")
        return value._array if isinstance(value, Tensor) else value
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: {name} must be a number, got {type(value).__name__}.") from None


# -- kernels ------------------------------------------------------------------------------------------
def _vector_norm(a: jax.Array, norm_type: float) -> jax.Array:
    a = a.ravel()
    if a.size == 0:
        return jnp.zeros((), jnp.abs(a).dtype)
    return jnp.linalg.vector_norm(a, ord=norm_type)


def _total(arrays: tuple, norm_type: float) -> jax.Array:
    return _vector_norm(jnp.stack([_vector_norm(a, norm_type) for a in arrays]), norm_type)


def _scale(arrays: tuple, max_norm: Any, total: jax.Array) -> tuple:
    coef = jnp.minimum(jnp.asarray(max_norm).astype(total.dtype) / (total + 1e-6), 1.0)
    return tuple(a * coef.astype(a.dtype) for a in arrays)


@partial(jax.jit, static_argnames=("norm_type",))
def _total_kernel(arrays: tuple, norm_type: float) -> jax.Array:
    return _total(arrays, norm_type)


@jax.jit
def _scale_kernel(arrays: tuple, max_norm: Any, total: jax.Array) -> tuple:
    return _scale(arrays, max_norm, total)


@partial(jax.jit, static_argnames=("norm_type",))
def _clip_norm_kernel(arrays: tuple, max_norm: Any, norm_type: float) -> tuple:
    total = _total(arrays, norm_type)
    return _scale(arrays, max_norm, total), total


@jax.jit
def _clip_value_kernel(arrays: tuple, clip_value: Any) -> tuple:
    out = []
    for a in arrays:
        v = jnp.asarray(clip_value).astype(a.dtype)
        out.append(jnp.clip(a, -v, v))
    return tuple(out)


def _check_finite(total: jax.Array, norm_type: float, op: str) -> None:
    """PyTorch's ``error_if_nonfinite`` check: the one place that reads a value on the host."""
    if is_traced(total):
        raise RuntimeError(
            f"{op}: error_if_nonfinite=True needs the value of the total norm, which is not available while the "
            "step is traced (fg.compile / jax.jit). Pass error_if_nonfinite=False there and check the returned "
            "norm afterwards."
        )
    if not bool(jnp.isfinite(total)):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot be "
            "clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
            "`error_if_nonfinite=False`"
        )


# -- public API ----------------------------------------------------------------------------------------
def get_total_norm(tensors: GradsLike, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: Optional[bool] = None) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` together (the norm of their individual norms).

    ``tensors``: a ``fg.Gradients``, a dict or sequence of tensors, or one tensor (``None``
    entries are skipped). ``norm_type`` may be ``inf``. No tensors: ``tensor(0.)``.
    ``error_if_nonfinite=True`` raises ``RuntimeError`` for a nan/inf norm; that check reads
    the value on the host (as PyTorch does), so it cannot run while traced.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.utils import get_total_norm
        >>> get_total_norm([fg.tensor([3.0]), fg.tensor([4.0])]).item()
        5.0
        >>> get_total_norm([fg.tensor([3.0]), fg.tensor([-4.0])], norm_type="inf").item()
        4.0
    """
    op = "get_total_norm"
    _, _, values = _unpack(tensors, op)
    p = _norm_type(norm_type, op)
    _, arrays = _present(values)
    if not arrays:
        return _wrap(jnp.zeros((), default_float_dtype()))
    total = _total_kernel(arrays, p)
    if error_if_nonfinite:
        _check_finite(total, p, op)
    return _wrap(total)


def clip_grads_with_norm_(grads: GradsLike, max_norm: float, total_norm: Union[Tensor, float],
                          foreach: Optional[bool] = None) -> GradsLike:
    """Scale every gradient by ``min(max_norm / (total_norm + 1e-6), 1)`` for a precomputed ``total_norm``.

    Returns new gradients in the same container as ``grads`` (``fg.Gradients``, dict,
    list/tuple or one tensor), with the same keys.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.utils import clip_grads_with_norm_, get_total_norm
        >>> gs = [fg.tensor([6.0]), fg.tensor([8.0])]
        >>> [round(g.item(), 4) for g in clip_grads_with_norm_(gs, 1.0, get_total_norm(gs))]
        [0.6, 0.8]
    """
    op = "clip_grads_with_norm_"
    kind, keys, values = _unpack(grads, op)
    pos, arrays = _present(values)
    if not arrays:
        return _repack(kind, keys, values)
    total = total_norm._array if isinstance(total_norm, Tensor) else jnp.asarray(total_norm)
    scaled = _scale_kernel(arrays, _scalar(max_norm, op, "max_norm"), total)
    return _repack(kind, keys, _replace(values, pos, scaled))


def clip_grad_norm_(grads: GradsLike, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: Optional[bool] = None) -> tuple[GradsLike, Tensor]:
    """Clip the total norm of ``grads`` to ``max_norm``; returns ``(new_grads, total_norm)``.

    ``total_norm`` is the ``norm_type``-norm of all gradients together (``inf``: the largest
    absolute value); every gradient is multiplied by ``min(max_norm / (total_norm + 1e-6), 1)``,
    as in PyTorch. ``grads`` is what ``backward`` returned (``fg.Gradients``), a dict or
    sequence of gradient tensors (``None`` entries are kept and skipped) or one tensor; the
    result is the same kind of container with the same keys. ``error_if_nonfinite=True``
    raises ``RuntimeError`` if the norm is nan or inf (reading it on the host, as PyTorch does).

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.utils import clip_grad_norm_
        >>> model = fg.nn.Linear(3, 1)
        >>> grads = model(fg.ones(4, 3)).sum().backward()
        >>> grads, total_norm = clip_grad_norm_(grads, max_norm=0.5)
        >>> round(sum((grads[p] ** 2).sum().item() for p in model.parameters()) ** 0.5, 4)
        0.5
    """
    op = "clip_grad_norm_"
    kind, keys, values = _unpack(grads, op)
    p = _norm_type(norm_type, op)
    pos, arrays = _present(values)
    if not arrays:
        return _repack(kind, keys, values), _wrap(jnp.zeros((), default_float_dtype()))
    scaled, total = _clip_norm_kernel(arrays, _scalar(max_norm, op, "max_norm"), p)
    if error_if_nonfinite:
        _check_finite(total, p, op)
    return _repack(kind, keys, _replace(values, pos, scaled)), _wrap(total)


def clip_grad_norm(grads: GradsLike, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: Optional[bool] = None) -> tuple[GradsLike, Tensor]:
    """Deprecated alias of :func:`clip_grad_norm_` (as in PyTorch).

    Example:
        >>> import fgraph as fg, warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     _, norm = fg.nn.utils.clip_grad_norm([fg.tensor([3.0, 4.0])], 1.0)
        >>> norm.item()
        5.0
    """
    warnings.warn("`fgraph.nn.utils.clip_grad_norm` is now deprecated in favor of `fgraph.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(grads, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(grads: GradsLike, clip_value: float, foreach: Optional[bool] = None) -> GradsLike:
    """Clamp every gradient to ``[-clip_value, clip_value]``; returns new gradients (same container and keys).

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.utils import clip_grad_value_
        >>> clip_grad_value_({"w": fg.tensor([-3.0, 0.5, 2.0])}, 1.0)["w"].tolist()
        [-1.0, 0.5, 1.0]
    """
    op = "clip_grad_value_"
    kind, keys, values = _unpack(grads, op)
    pos, arrays = _present(values)
    if not arrays:
        return _repack(kind, keys, values)
    clipped = _clip_value_kernel(arrays, _scalar(clip_value, op, "clip_value"))
    return _repack(kind, keys, _replace(values, pos, clipped))
