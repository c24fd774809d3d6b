"""``parameters_to_vector`` / ``vector_to_parameters`` (``torch.nn.utils.convert_parameters``).

``parameters_to_vector`` flattens and concatenates, recording the graph like any op, so
gradients flow back to the parameters. ``vector_to_parameters`` cannot copy into the
parameters (they are immutable): it makes new Parameters from consecutive slices of the
vector and **rebinds** them on every module that holds the old ones
(:func:`fgraph.nn.parameter.rebind`), so tied parameters stay tied, and returns them.

Example:
    >>> import fgraph as fg
    >>> from fgraph.nn.utils import parameters_to_vector, vector_to_parameters
    >>> lin = fg.nn.Linear(2, 1)
    >>> vec = parameters_to_vector(lin.parameters())
    >>> vec.shape
    (3,)
    >>> new = vector_to_parameters(fg.tensor([1.0, 2.0, 3.0]), lin.parameters())
    >>> lin.weight.tolist(), lin.bias.tolist(), new[1] is lin.bias
    ([[1.0, 2.0]], [3.0], True)
"""
from __future__ import annotations

import math
from functools import partial
from typing import Iterable

import jax

from fgraph.nn.parameter import Parameter, _make_parameter, rebind
from fgraph.ops.shape import cat, reshape
from fgraph.tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check(parameters: Iterable[Tensor], op: str) -> list[Tensor]:
    """The parameters as a list, all Tensors on one device (PyTorch's rule)."""
    if isinstance(parameters, Tensor):
        raise TypeError(f"{op}: expected an iterable of parameters (e.g. model.parameters()), got one Tensor; "
                        "wrap it in a list.")
    params = list(parameters)
    device = None
    for i, p in enumerate(params):
        if not isinstance(p, Tensor):
            raise TypeError(f"{op}: parameter {i} is a {type(p).__name__}, expected an fgraph Tensor/Parameter.")
        d = p.device
        if d is None:
            continue
        if device is None:
            device = d
        elif d != device:
            raise TypeError(f"{op}: Found two parameters on different devices ({device} and {d}), this is currently "
                            "not supported; move the module to one device first (module.to(device)).")
    return params


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and concatenated into one vector (differentiable).

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.utils import parameters_to_vector
        >>> parameters_to_vector([fg.nn.Parameter(fg.ones(2, 2)), fg.nn.Parameter(fg.zeros(1))]).tolist()
        [1.0, 1.0, 1.0, 1.0, 0.0]
    """
    params = _check(parameters, "parameters_to_vector")
    if not params:
        raise ValueError("parameters_to_vector: expected a non-empty iterable of parameters (got none).")
    return cat([reshape(p, (-1,)) for p in params])


@partial(jax.jit, static_argnames=("shapes",))
def _split(vec: jax.Array, shapes: tuple) -> tuple:
    out = []
    offset = 0
    for shape in shapes:
        n = math.prod(shape)
        out.append(vec[offset:offset + n].reshape(shape))
        offset += n
    return tuple(out)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> list[Parameter]:
    """Make new Parameters from consecutive slices of ``vec`` and rebind them where the old ones are held.

    Each new Parameter has its old one's shape and ``requires_grad``, and ``vec``'s dtype
    and device (like PyTorch's ``param.data = ...``); it is a leaf, detached from ``vec``.
    Every module slot holding an old parameter (tied ones included) now holds the new one.
    Returns the new Parameters, in the order of ``parameters``. Unlike PyTorch, whose
    trailing elements would be ignored silently, ``vec`` must hold exactly the parameters'
    total number of elements.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.utils import parameters_to_vector, vector_to_parameters
        >>> model = fg.nn.Sequential(fg.nn.Linear(2, 2), fg.nn.Linear(2, 1))
        >>> vec = parameters_to_vector(model.parameters())
        >>> _ = vector_to_parameters(vec * 0, model.parameters())
        >>> float(parameters_to_vector(model.parameters()).abs().sum())
        0.0
    """
    op = "vector_to_parameters"
    if not isinstance(vec, Tensor):
        raise TypeError(f"{op}: expected an fgraph Tensor, but got: {type(vec).__name__}")
    params = _check(parameters, op)
    if vec.ndim != 1:
        raise ValueError(f"{op}: expected a 1-D vector, got shape {tuple(vec.shape)}; flatten it with vec.reshape(-1).")
    total = sum(p.numel() for p in params)
    if vec.shape[0] != total:
        raise ValueError(
            f"{op}: the vector has {vec.shape[0]} elements but the {len(params)} parameters hold {total}; "
            "build it with parameters_to_vector over the same parameters, in the same order."
        )
    if not params:
        return []
    arrays = _split(vec._array, tuple(tuple(p.shape) for p in params))
    mapping: dict = {}
    for p, a in zip(params, arrays):
        mapping[p] = _make_parameter(a, p.requires_grad)
    new = rebind(mapping)
    return [new[p] for p in params]
