"""Linear layers: ``Identity``, ``Linear``, ``Bilinear`` (PyTorch's parameters, shapes and initialisation)."""
from __future__ import annotations

import math
from typing import Any

from fgraph.nn import functional as F
from fgraph.nn import init
from fgraph.nn.modules._factory import check_positive_int, empty_parameter
from fgraph.nn.modules.module import Module
from fgraph.tensor import Tensor

__all__ = ["Identity", "Linear", "Bilinear"]


class Identity(Module):
    """Returns its input; arguments are accepted and ignored (a placeholder layer).

    Example:
        >>> import fgraph as fg
        >>> fg.nn.Identity(54, unused="x")(fg.ones(2)).tolist()
        [1.0, 1.0]
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Linear(Module):
    """``y = x @ weight.T + bias`` with ``weight`` ``(out_features, in_features)``.

    Initialisation as PyTorch: ``weight`` and ``bias`` ~ ``U(-1/sqrt(in_features), 1/sqrt(in_features))``.

    Example:
        >>> import fgraph as fg
        >>> lin = fg.nn.Linear(3, 4)
        >>> lin
        Linear(in_features=3, out_features=4, bias=True)
        >>> lin(fg.ones(2, 3)).shape
        (2, 4)
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.in_features = check_positive_int(in_features, "in_features", "Linear", allow_zero=True)
        self.out_features = check_positive_int(out_features, "out_features", "Linear", allow_zero=True)
        self.weight = empty_parameter((out_features, in_features), dtype, device, "Linear")
        if bias:
            self.bias = empty_parameter((out_features,), dtype, device, "Linear")
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw new values from the default distribution (the default generator)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """``y = x1^T A x2 + b`` with ``weight`` ``(out_features, in1_features, in2_features)``.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.Bilinear(2, 3, 4)(fg.ones(5, 2), fg.ones(5, 3)).shape
        (5, 4)
    """

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in1_features = check_positive_int(in1_features, "in1_features", "Bilinear")
        self.in2_features = check_positive_int(in2_features, "in2_features", "Bilinear")
        self.out_features = check_positive_int(out_features, "out_features", "Bilinear")
        self.weight = empty_parameter((out_features, in1_features, in2_features), dtype, device, "Bilinear")
        if bias:
            self.bias = empty_parameter((out_features,), dtype, device, "Bilinear")
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
