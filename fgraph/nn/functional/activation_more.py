"""Shrinkage, threshold and softmin activations, plus ``F.sigmoid``/``F.tanh`` (``torch.nn.functional`` names).

All are composites of fgraph ops (``where`` with PyTorch's comparisons), so they have
every order of derivative. Values and gradients at the kinks follow PyTorch:
``hardshrink``/``softshrink`` output 0 and pass no gradient for ``-lambd <= x <= lambd``;
``threshold`` outputs ``value`` and passes no gradient for ``x <= threshold``; NaN
inputs stay NaN, as in PyTorch's kernels. ``F.sigmoid`` and ``F.tanh`` are
``fgraph.sigmoid``/``fgraph.tanh`` (PyTorch's are deprecated aliases of the tensor ops).

Example:
    >>> import fgraph as fg
    >>> import fgraph.nn.functional as F
    >>> F.softshrink(fg.tensor([-2.0, 0.25, 1.0])).tolist()
    [-1.5, 0.0, 0.5]
    >>> F.threshold(fg.tensor([0.5, 2.0]), 1.0, -1.0).tolist()
    [-1.0, 2.0]
"""
from __future__ import annotations

from typing import Any, Optional

from fgraph.errors import OpError
from fgraph.nn.functional._utils import check_float, no_inplace
from fgraph.nn.functional.activation import SOFTMAX, _softmax_dims
from fgraph.ops._declare import apply_unary
from fgraph.ops.elementwise import add, ge, gt, le, logical_and, mul, sigmoid, sub, tanh, where
from fgraph.tensor import Tensor


def _check_lambd(lambd: Any, op: str) -> float:
    if isinstance(lambd, bool) or not isinstance(lambd, (int, float)):
        raise TypeError(f"{op}: lambd must be a number, got {type(lambd).__name__}.")
    return float(lambd)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``input`` where ``|input| > lambd``, else 0.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.hardshrink(fg.tensor([-1.0, 0.5, 0.75])).tolist()
        [-1.0, 0.0, 0.75]
    """
    check_float(input, "hardshrink")
    lambd = _check_lambd(lambd, "hardshrink")
    return where(logical_and(ge(input, -lambd), le(input, lambd)), 0.0, input)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``input - lambd`` above ``lambd``, ``input + lambd`` below ``-lambd``, else 0; ``lambd >= 0``.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.softshrink(fg.tensor([-2.0, 0.5, 2.0]), lambd=1.0).tolist()
        [-1.0, 0.0, 1.0]
    """
    check_float(input, "softshrink")
    lambd = _check_lambd(lambd, "softshrink")
    if lambd < 0:
        raise OpError(f"softshrink: lambda must be greater or equal to 0, but found to be {lambd}.")
    inside = logical_and(ge(input, -lambd), le(input, lambd))
    return where(inside, mul(input, 0.0), where(gt(input, lambd), sub(input, lambd), add(input, lambd)))


def tanhshrink(input: Tensor) -> Tensor:
    """``input - tanh(input)``.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> [round(v, 4) for v in F.tanhshrink(fg.tensor([0.0, 1.0])).tolist()]
        [0.0, 0.2384]
    """
    check_float(input, "tanhshrink")
    return sub(input, tanh(input))


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``input`` where ``input > threshold``, else ``value`` (no gradient there).

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.threshold(fg.tensor([-1.0, 0.0, 3.0]), 0.0, 7.0).tolist()
        [7.0, 7.0, 3.0]
    """
    no_inplace("threshold", inplace)
    check_float(input, "threshold")
    for name, v in (("threshold", threshold), ("value", value)):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"threshold: '{name}' must be a number, got {type(v).__name__}.")
    return where(le(input, float(threshold)), float(value), input)


def softmin(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """``softmax(-input, dim)``; ``dtype`` casts (the negated input) first.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> [round(v, 4) for v in F.softmin(fg.tensor([0.0, 1.0]), dim=0).tolist()]
        [0.7311, 0.2689]
    """
    neg, dims = _softmax_dims(-input if isinstance(input, Tensor) else input, dim, dtype, "softmin")
    return apply_unary(SOFTMAX, neg, SOFTMAX.Params(dims))


#: Exported as ``fgraph.nn.functional.<name>``.
__all__ = ["hardshrink", "softshrink", "tanhshrink", "threshold", "softmin", "sigmoid", "tanh"]
#: No Tensor methods installed (``Tensor.hardshrink`` is left out: nn.functional modules are not op families).
TENSOR_METHODS: dict = {}
