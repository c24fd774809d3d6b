"""More activation layers: ``Hardshrink``, ``Softshrink``, ``Tanhshrink``, ``Threshold``, ``RReLU``, ``Softmin``.

Thin modules over ``fgraph.nn.functional`` with PyTorch's arguments and reprs.
``RReLU`` draws its slopes in training mode (``module.train()``, the default) from
``forward(input, key=...)`` or the default generator, like ``Dropout``; in eval mode
it uses the fixed slope ``(lower + upper) / 2``. ``inplace=True`` is accepted and
ignored (fgraph tensors are immutable).

Example:
    >>> import fgraph as fg
    >>> from fgraph import nn
    >>> nn.Softshrink(1.0)(fg.tensor([-2.0, 0.5, 3.0])).tolist()
    [-1.0, 0.0, 2.0]
    >>> nn.Threshold(0.1, 20.0)
    Threshold(threshold=0.1, value=20.0)
"""
from __future__ import annotations

from typing import Any, Optional

from fgraph.nn import functional as F
from fgraph.nn.modules.module import Module
from fgraph.tensor import Tensor

__all__ = ["Hardshrink", "Softshrink", "Tanhshrink", "Threshold", "RReLU", "Softmin"]


def _inplace(inplace: bool) -> str:
    return ", inplace=True" if inplace else ""


class Hardshrink(Module):
    """``x`` where ``|x| > lambd``, else 0.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.Hardshrink()(fg.tensor([-1.0, 0.25])).tolist()
        [-1.0, 0.0]
    """

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return F.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Module):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.Softshrink()
        Softshrink(0.5)
    """

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return F.softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Tanhshrink(Module):
    """``x - tanh(x)``.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.Tanhshrink()(fg.tensor([0.0])).tolist()
        [0.0]
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.tanhshrink(input)


class Threshold(Module):
    """``x`` where ``x > threshold``, else ``value``.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.Threshold(1.0, -5.0)(fg.tensor([0.0, 2.0])).tolist()
        [-5.0, 2.0]
    """

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace(self.inplace)}"


class RReLU(Module):
    """Randomized leaky ReLU: random slopes in ``[lower, upper]`` for ``x <= 0`` in training, their mean in eval.

    Example:
        >>> import fgraph as fg, jax
        >>> m = fg.nn.RReLU(0.1, 0.3)
        >>> m
        RReLU(lower=0.1, upper=0.3)
        >>> y = m(-fg.ones(100), key=jax.random.PRNGKey(0))
        >>> 0.1 <= -y.max().item() and -y.min().item() <= 0.3
        True
        >>> [round(v, 4) for v in m.eval()(fg.tensor([-1.0])).tolist()]
        [-0.2]
    """

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input: Tensor, *, key: Any = None) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, key=key)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}{_inplace(self.inplace)}"


class Softmin(Module):
    """``softmax(-x)`` along ``dim``.

    Example:
        >>> import fgraph as fg
        >>> [round(v, 4) for v in fg.nn.Softmin(dim=0)(fg.tensor([0.0, 1.0])).tolist()]
        [0.7311, 0.2689]
    """

    def __init__(self, dim: Optional[int] = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmin(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
