"""The recurrent cells (one time step): ``RNNCell``, ``LSTMCell``, ``GRUCell``, with torch's parameters and checks.

They share their step functions and checks with the sequence layers in :mod:`fgraph.nn.modules.rnn`.

Example:
    >>> import fgraph as fg
    >>> fg.nn.GRUCell(2, 3)(fg.ones(4, 2)).shape
    (4, 3)
"""
from __future__ import annotations

import math
from typing import Any, Optional

from fgraph.errors import OpError
from fgraph.nn import init
from fgraph.nn.modules._factory import empty_parameter
from fgraph.nn.modules.module import Module
from fgraph.nn.modules.rnn import (
    RNNShapeError, _check_bool, _check_dtype, _check_size, _check_tensor, _gru_step, _lstm_step, _project, _rnn_step,
)
from fgraph.ops.elementwise import relu, tanh
from fgraph.ops.shape import matrix_transpose, squeeze, unsqueeze
from fgraph.tensor import Tensor

__all__ = ["RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


# -- cells --------------------------------------------------------------------------------------------------------
class RNNCellBase(Module):
    """Shared parameters (``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh``), checks and repr of the cells.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.RNNCellBase(2, 3, True, num_chunks=4).weight_hh.shape
        (12, 3)
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        layer = type(self).__name__
        self.input_size = _check_size(input_size, "input_size", layer)
        self.hidden_size = _check_size(hidden_size, "hidden_size", layer)
        self.bias = _check_bool(bias, "bias", layer)
        self.weight_ih = empty_parameter((num_chunks * hidden_size, input_size), dtype, device, layer)
        self.weight_hh = empty_parameter((num_chunks * hidden_size, hidden_size), dtype, device, layer)
        if bias:
            self.bias_ih = empty_parameter((num_chunks * hidden_size,), dtype, device, layer)
            self.bias_hh = empty_parameter((num_chunks * hidden_size,), dtype, device, layer)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def reset_parameters(self) -> None:
        """Draw every parameter from ``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))`` (the default generator)."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in list(self.parameters()):
            init.uniform_(weight, -stdv, stdv)

    def _prepare(self, input: Any, states: tuple) -> tuple[Tensor, tuple, bool]:
        """Checks; returns the 2-D input, the 2-D states (``None`` kept) and whether the input was batched."""
        layer = type(self).__name__
        _check_tensor(input, "input", layer)
        if input.ndim not in (1, 2):
            raise OpError(f"{layer}: Expected input to be 1D or 2D, got {input.ndim}D instead "
                          f"(shape {tuple(input.shape)}; expected (N, {self.input_size}) or ({self.input_size},)).")
        _check_dtype(input, self.weight_ih, "input", layer)
        if input.shape[-1] != self.input_size:
            raise RNNShapeError(f"{layer}: input has inconsistent input_size: got {input.shape[-1]} expected "
                                f"{self.input_size} (input shape {tuple(input.shape)}).")
        batched = input.ndim == 2
        names = ["hx"] if len(states) == 1 else [f"hx[{i}]" for i in range(len(states))]
        for i, (s, name) in enumerate(zip(states, names)):
            if s is None:
                continue
            _check_tensor(s, name, layer)
            if s.ndim not in (1, 2):
                raise OpError(f"{layer}: Expected {'hidden' if len(states) == 1 else name} to be 1D or 2D, "
                              f"got {s.ndim}D instead (shape {tuple(s.shape)}).")
            if s.ndim != input.ndim:
                raise RNNShapeError(f"{layer}: {name} of shape {tuple(s.shape)} does not fit the "
                                    f"{'batched 2-D' if batched else 'unbatched 1-D'} input of shape "
                                    f"{tuple(input.shape)}; it should be {input.ndim}-D.")
            if s.shape[-1] != self.hidden_size:
                raise RNNShapeError(f"{layer}: hidden{i} has inconsistent hidden_size: got {s.shape[-1]}, expected "
                                    f"{self.hidden_size}")
            if batched and s.shape[0] != input.shape[0]:
                raise RNNShapeError(f"{layer}: Input batch size {input.shape[0]} doesn't match hidden{i} batch size "
                                    f"{s.shape[0]}")
            _check_dtype(s, self.weight_ih, name, layer)
        if not batched:
            input = unsqueeze(input, 0)
            states = tuple(None if s is None else unsqueeze(s, 0) for s in states)
        return input, states, batched

    def _projection(self, x: Tensor, fold_bias: bool) -> Tensor:
        bias = self.bias_ih if not fold_bias or self.bias_ih is None else self.bias_ih + self.bias_hh
        return _project(x, self.weight_ih, bias)


class RNNCell(RNNCellBase):
    """One Elman RNN step: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or ``relu``).

    ``forward(input, hx=None)``: ``input`` ``(N, input_size)`` or ``(input_size,)``, ``hx`` likewise with
    ``hidden_size`` (zeros when ``None``); returns ``h'``.

    Example:
        >>> import fgraph as fg
        >>> cell = fg.nn.RNNCell(3, 4, nonlinearity="relu")
        >>> cell
        RNNCell(3, 4, nonlinearity=relu)
        >>> cell(fg.ones(2, 3)).shape
        (2, 4)
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: Unknown nonlinearity: {nonlinearity!r}. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        x, (h,), batched = self._prepare(input, (hx,))
        out = _rnn_step(self._projection(x, True), h, matrix_transpose(self.weight_hh), self.nonlinearity == "relu")
        return out if batched else squeeze(out, 0)


class LSTMCell(RNNCellBase):
    """One LSTM step with PyTorch's gates (``i, f, g, o``).

    ``forward(input, hx=None)``: ``hx`` is ``(h, c)`` (zeros when ``None``); returns ``(h', c')``.

    Example:
        >>> import fgraph as fg
        >>> cell = fg.nn.LSTMCell(3, 4)
        >>> h, c = cell(fg.ones(3))
        >>> h.shape, c.shape
        ((4,), (4,))
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx: Optional[tuple[Tensor, Tensor]] = None) -> tuple[Tensor, Tensor]:
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise TypeError(f"LSTMCell: hx must be a tuple (h, c) of two tensors, got {type(hx).__name__}.")
        x, (h, c), batched = self._prepare(input, (None, None) if hx is None else tuple(hx))
        h, c = _lstm_step(self._projection(x, True), h, c, matrix_transpose(self.weight_hh), None)
        return (h, c) if batched else (squeeze(h, 0), squeeze(c, 0))


class GRUCell(RNNCellBase):
    """One GRU step with PyTorch's gates (``r, z, n``; ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``).

    ``forward(input, hx=None)`` as :class:`RNNCell`; returns ``h'``.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.GRUCell(3, 4)(fg.ones(2, 3), fg.zeros(2, 4)).shape
        (2, 4)
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        x, (h,), batched = self._prepare(input, (hx,))
        out = _gru_step(self._projection(x, False), h, matrix_transpose(self.weight_hh), self.bias_hh)
        return out if batched else squeeze(out, 0)
