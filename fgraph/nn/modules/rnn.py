"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their cells (PyTorch's parameters, gates and initialisation).

Parameter names, shapes and registration order are PyTorch's (``weight_ih_l0``,
``weight_hh_l0``, ``bias_ih_l0``, ``bias_hh_l0``, ``weight_hr_l0`` with ``proj_size``,
``..._reverse`` for the backward direction), so a torch ``state_dict`` loads unchanged;
every parameter starts as ``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``. Gate order is
PyTorch's: LSTM ``i, f, g, o``; GRU ``r, z, n`` with
``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``.

The time loop is a Python loop over the steps (one small set of nodes per step), but
the input projections ``x @ W_ih.T + b`` of all steps are computed by one matmul per
layer and direction, as PyTorch's fused kernels do. Missing initial states are zeros.
Between layers, dropout (``dropout > 0``) applies in training mode only; its masks come
from ``forward(..., key=...)`` when a JAX key is given, else from the default generator
(:func:`fgraph.manual_seed`), so they differ from PyTorch's for the same seed.
A :class:`~fgraph.nn.utils.rnn.PackedSequence` input gives a PackedSequence output (``_rnn_packed``).

Example:
    >>> import fgraph as fg
    >>> lstm = fg.nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    >>> lstm
    LSTM(3, 4, num_layers=2, bidirectional=True)
    >>> output, (h_n, c_n) = lstm(fg.ones(5, 2, 3))          # (seq, batch, feature)
    >>> output.shape, h_n.shape, c_n.shape
    ((5, 2, 8), (4, 2, 4), (4, 2, 4))
"""
from __future__ import annotations

import math
import warnings
from functools import partial
from typing import TYPE_CHECKING, Any, Optional, Union

import jax

from fgraph.errors import OpError
from fgraph.nn import functional as F
from fgraph.nn import init
from fgraph.nn.modules._factory import empty_parameter
from fgraph.nn.modules.module import Module
from fgraph.nn.parameter import Parameter
from fgraph.ops.elementwise import relu, sigmoid, tanh
from fgraph.ops.linalg import matmul
from fgraph.ops.shape import cat, matrix_transpose, squeeze, stack, unsqueeze
from fgraph.ops.splitting import split, unbind
from fgraph.random import check_key
from fgraph.tensor import Tensor

if TYPE_CHECKING:
    from fgraph.nn.utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


class RNNShapeError(OpError, RuntimeError):
    """A wrong input or state shape: an :class:`~fgraph.OpError` that is also the ``RuntimeError`` PyTorch raises."""


# -- one time step (``x_t`` is the precomputed input projection; ``None`` states are zeros) -------------------
def _rnn_step(x_t: Tensor, h: Optional[Tensor], whh_t: Tensor, relu_: bool) -> Tensor:
    pre = x_t if h is None else x_t + matmul(h, whh_t)
    return relu(pre) if relu_ else tanh(pre)


def _lstm_step(x_t: Tensor, h: Optional[Tensor], c: Optional[Tensor], whh_t: Tensor,
               whr_t: Optional[Tensor]) -> tuple[Tensor, Tensor]:
    gates = x_t if h is None else x_t + matmul(h, whh_t)
    i, f, g, o = split(gates, gates.shape[-1] // 4, -1)
    ig = sigmoid(i) * tanh(g)
    c = ig if c is None else sigmoid(f) * c + ig
    h = sigmoid(o) * tanh(c)
    return (h if whr_t is None else matmul(h, whr_t)), c


def _gru_step(x_t: Tensor, h: Optional[Tensor], whh_t: Tensor, b_hh: Optional[Tensor]) -> Tensor:
    xr, xz, xn = split(x_t, x_t.shape[-1] // 3, -1)
    gh = b_hh if h is None else (matmul(h, whh_t) if b_hh is None else matmul(h, whh_t) + b_hh)
    if gh is None:  # h = 0 and no bias: the recurrent term vanishes
        z, n = sigmoid(xz), tanh(xn)
    else:
        hr, hz, hn = split(gh, gh.shape[-1] // 3, -1)
        r, z = sigmoid(xr + hr), sigmoid(xz + hz)
        n = tanh(xn + r * hn)
    # h' = (1 - z) * n + z * h, written as PyTorch's kernel computes it
    return n - z * n if h is None else n + z * (h - n)


def _project(x: Tensor, w_ih: Tensor, bias: Optional[Tensor]) -> Tensor:
    """``x @ w_ih.T + bias`` for every step at once."""
    xw = matmul(x, matrix_transpose(w_ih))
    return xw if bias is None else xw + bias


def _input_bias(mode: str, b_ih: Optional[Tensor], b_hh: Optional[Tensor]) -> Optional[Tensor]:
    """The bias added to the input projection; RNN and LSTM fold both biases into it, GRU keeps ``b_hn`` inside."""
    return b_ih if b_ih is None or mode == "GRU" else b_ih + b_hh


def _run_direction(mode: str, time_dim: int, projected: Tensor, weights: dict, h: Optional[Tensor],
                   c: Optional[Tensor], reverse: bool) -> tuple[Tensor, Tensor, Optional[Tensor]]:
    """Run one layer in one direction over the projected steps; the outputs (time order), last ``h`` and ``c``."""
    steps = unbind(projected, time_dim)
    whh_t = matrix_transpose(weights["hh"])
    whr_t = None if weights["hr"] is None else matrix_transpose(weights["hr"])
    outs: list = [None] * len(steps)
    order = range(len(steps) - 1, -1, -1) if reverse else range(len(steps))
    for t in order:
        h, c = _step(mode, steps[t], h, c, whh_t, whr_t, weights["b_hh"])
        outs[t] = h
    return stack(outs, time_dim), h, c


def _step(mode: str, x_t: Tensor, h: Optional[Tensor], c: Optional[Tensor], whh_t: Tensor, whr_t: Optional[Tensor],
          b_hh: Optional[Tensor]) -> tuple[Tensor, Optional[Tensor]]:
    if mode == "LSTM":
        return _lstm_step(x_t, h, c, whh_t, whr_t)
    return (_gru_step(x_t, h, whh_t, b_hh) if mode == "GRU" else _rnn_step(x_t, h, whh_t, mode == "RNN_RELU")), c


# -- argument checks ------------------------------------------------------------------------------------------
def _check_size(value: Any, name: str, layer: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{layer}: {name} should be of type int, got: {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"{layer}: {name} must be greater than zero, got {value}")
    return value


def _check_bool(value: Any, name: str, layer: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{layer}: {name} should be of type bool, got: {type(value).__name__}")
    return value


def _check_tensor(x: Any, what: str, layer: str, extra: str = "") -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{layer}: expected an fgraph Tensor{extra} as {what}, got {type(x).__name__}.")
    return x


def _check_dtype(x: Tensor, weight: Tensor, what: str, layer: str) -> None:
    if x.dtype != weight.dtype:
        raise OpError(f"{layer}: {what} dtype ({x.dtype}) does not match weight dtype ({weight.dtype}). "
                      f"Convert {what}: {what}.to({weight.dtype}), or convert model: model.to({x.dtype})")


class RNNBase(Module):
    """Shared construction, checks and time loop of :class:`RNN`, :class:`LSTM` and :class:`GRU`.

    ``mode`` is ``'RNN_TANH'``, ``'RNN_RELU'``, ``'LSTM'`` or ``'GRU'`` (as PyTorch's).

    Example:
        >>> import fgraph as fg
        >>> fg.nn.RNNBase("GRU", 2, 3).weight_ih_l0.shape
        (9, 2)
    """

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + str(mode))
        layer = "RNN" if mode.startswith("RNN") else mode
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout <= 1:
            raise ValueError(f"{layer}: dropout should be a number in range [0, 1] representing the probability "
                             f"of an element being zeroed, got {dropout!r}")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=3)
        _check_bool(bias, "bias", layer)
        _check_bool(batch_first, "batch_first", layer)
        _check_bool(bidirectional, "bidirectional", layer)
        _check_size(input_size, "input_size", layer)
        _check_size(hidden_size, "hidden_size", layer)
        _check_size(num_layers, "num_layers", layer)
        if isinstance(proj_size, bool) or not isinstance(proj_size, int) or proj_size < 0:
            raise ValueError(f"{layer}: proj_size should be a positive integer or zero to disable projections, "
                             f"got {proj_size!r}")
        if proj_size >= hidden_size:
            raise ValueError(f"{layer}: proj_size has to be smaller than hidden_size, got proj_size={proj_size} "
                             f"and hidden_size={hidden_size}")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        num_directions = 2 if bidirectional else 1
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for lay in range(num_layers):
            layer_input = input_size if lay == 0 else real_hidden * num_directions
            for direction in range(num_directions):
                shapes = [("weight_ih", (gate_size, layer_input)), ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                suffix = "_reverse" if direction == 1 else ""
                names = [f"{base}_l{lay}{suffix}" for base, _ in shapes]
                for name, (_, shape) in zip(names, shapes):
                    setattr(self, name, empty_parameter(shape, dtype, device, layer))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self) -> list[Optional[Parameter]]:
        return [getattr(self, name, None) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters grouped by layer and direction, in PyTorch's order."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """Does nothing: there is no cuDNN weight buffer to compact (kept for code written for PyTorch)."""

    def reset_parameters(self) -> None:
        """Draw every parameter from ``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))`` (the default generator)."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in list(self.parameters()):
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- forward --------------------------------------------------------------------------------------------
    def _layout(self) -> str:
        return "(N, L, H_in)" if self.batch_first else "(L, N, H_in)"

    def _split_hx(self, hx: Any) -> tuple:
        return (hx,)

    def _prepare(self, input: Any, hx: Any) -> tuple[Tensor, tuple, bool]:
        """Checks; returns the 3-D input, the initial states as 3-D tensors (``()`` when ``hx`` is ``None``)
        and whether the input was batched."""
        layer = type(self).__name__
        _check_tensor(input, "input", layer, " or a PackedSequence")
        if input.ndim not in (2, 3):
            raise OpError(f"{layer}: Expected input to be 2D or 3D, got {input.ndim}D tensor instead "
                          f"(shape {tuple(input.shape)}; expected {self._layout()}, or (L, H_in) unbatched).")
        weight = self.weight_ih_l0
        _check_dtype(input, weight, "input", layer)
        if input.shape[-1] != self.input_size:
            raise RNNShapeError(f"{layer}: input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                                f"got {input.shape[-1]} (input shape {tuple(input.shape)}, expected "
                                f"{self._layout()}).")
        batched = input.ndim == 3
        time_dim = 1 if self.batch_first else 0
        if not batched:
            input = unsqueeze(input, 1 - time_dim)
        if input.shape[time_dim] == 0:
            raise RNNShapeError(f"{layer}: Expected sequence length to be larger than 0 in RNN "
                                f"(input shape {tuple(input.shape)}).")
        return input, self._check_hx(hx, input.shape[1 - time_dim], batched), batched

    def _check_hx(self, hx: Any, batch: int, batched: bool) -> tuple:
        """The initial states as 3-D tensors (``()`` when ``hx`` is ``None``), checked against the batch size."""
        if hx is None:
            return ()
        layer, weight = type(self).__name__, self.weight_ih_l0
        states = self._split_hx(hx)
        names = ("hx", "cx")[:len(states)]
        for s, name in zip(states, names):
            _check_tensor(s, name, layer)
        rank = 3 if batched else 2
        if any(s.ndim != rank for s in states):
            got = ", ".join(f"{s.ndim}-D" for s in states)
            got = f"({got}) tensors" if len(states) == 2 else f"{got} tensor"
            raise RNNShapeError(f"{layer}: For {'batched 3-D' if batched else 'unbatched 2-D'} input, "
                                f"{' and '.join(names)} should also be {rank}-D but got {got}")
        if not batched:
            states = tuple(unsqueeze(s, 1) for s in states)
        directions = 2 if self.bidirectional else 1
        sizes = (self.proj_size or self.hidden_size, self.hidden_size)
        for i, s in enumerate(states):
            expected = (self.num_layers * directions, batch, sizes[i])
            if tuple(s.shape) != expected:
                shown = expected if batched else (expected[0], expected[2])
                raise RNNShapeError(
                    f"{layer}: Expected {f'hidden[{i}]' if len(states) == 2 else 'hidden'} size {expected}, got "
                    f"{list(s.shape)}: {names[i]} must be {shown} (num_layers * num_directions, "
                    f"{'batch, ' if batched else ''}{'proj_size' if i == 0 and self.proj_size else 'hidden_size'}).")
            _check_dtype(s, weight, names[i], layer)
        return states

    def _run(self, input: Tensor, states: tuple, key: Any, runner: Any = None) -> tuple[Tensor, list]:
        """The stacked layers over a 3-D input: the output and the final states (``[h_n]`` or ``[h_n, c_n]``,
        each a list over layers and directions). ``runner(projected, weights, h, c, reverse)`` runs one layer
        in one direction (the packed path passes its own)."""
        runner = runner or partial(_run_direction, self.mode, 1 if self.batch_first else 0)
        directions = 2 if self.bidirectional else 1
        n = self.num_layers * directions
        h0 = unbind(states[0], 0) if states else [None] * n
        c0 = unbind(states[1], 0) if len(states) == 2 else [None] * n
        dropout = self.dropout if self.training else 0.0
        if key is not None and dropout > 0:
            key = check_key(key, type(self).__name__)
        params = self._parameters
        h_n, c_n = [], []
        x = input
        for lay in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                suffix = f"_l{lay}_reverse" if direction else f"_l{lay}"
                b_ih, b_hh = params.get("bias_ih" + suffix), params.get("bias_hh" + suffix)
                weights = {"hh": params["weight_hh" + suffix], "hr": params.get("weight_hr" + suffix), "b_hh": b_hh}
                projected = _project(x, params["weight_ih" + suffix], _input_bias(self.mode, b_ih, b_hh))
                index = lay * directions + direction
                out, h, c = runner(projected, weights, h0[index], c0[index], direction == 1)
                outputs.append(out)
                h_n.append(h)
                c_n.append(c)
            x = outputs[0] if directions == 1 else cat(outputs, -1)
            if dropout > 0 and lay < self.num_layers - 1:
                x = F.dropout(x, dropout, True, key=None if key is None else jax.random.fold_in(key, lay))
        return x, [h_n, c_n] if self.mode == "LSTM" else [h_n]

    def _forward(self, input: Any, hx: Any, key: Any) -> tuple[Any, tuple]:
        if not isinstance(input, Tensor):
            from fgraph.nn.modules._rnn_packed import forward_packed, is_packed
            if is_packed(input):
                return forward_packed(self, input, hx, key)
        x, states, batched = self._prepare(input, hx)
        output, finals = self._run(x, states, key)
        finals = tuple(stack(f, 0) for f in finals)
        if not batched:
            output = squeeze(output, 0 if self.batch_first else 1)
            finals = tuple(squeeze(f, 1) for f in finals)
        return output, finals


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or ``relu``), stacked and optionally
    bidirectional.

    ``forward(input, hx=None)`` takes ``input`` ``(L, N, H_in)`` (``(N, L, H_in)`` with ``batch_first``) or
    unbatched ``(L, H_in)``, and ``hx`` ``(num_layers * num_directions, N, H_out)`` (zeros when ``None``);
    returns ``output, h_n``. ``key=`` (keyword) seeds the inter-layer dropout.

    Example:
        >>> import fgraph as fg
        >>> rnn = fg.nn.RNN(3, 4, 2, nonlinearity="relu", batch_first=True)
        >>> rnn
        RNN(3, 4, num_layers=2, batch_first=True)
        >>> output, h_n = rnn(fg.ones(2, 5, 3))
        >>> output.shape, h_n.shape
        ((2, 5, 4), (2, 2, 4))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device: Any = None, dtype: Any = None, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if kwargs:
            raise TypeError(f"RNN.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'")
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, num_layers,
                         bias, batch_first, dropout, bidirectional, 0, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Union[Tensor, PackedSequence], hx: Optional[Tensor] = None, *,
                key: Any = None) -> tuple[Union[Tensor, PackedSequence], Tensor]:
        output, (h_n,) = self._forward(input, hx, key)
        return output, h_n


class LSTM(RNNBase):
    """Long short-term memory, PyTorch's gates (``i, f, g, o``) and optional projection (``proj_size``).

    ``forward(input, hx=None)``: ``input`` as :class:`RNN`; ``hx`` is ``(h_0, c_0)`` with ``h_0``
    ``(num_layers * num_directions, N, proj_size or hidden_size)`` and ``c_0`` ``(..., N, hidden_size)``
    (zeros when ``None``). Returns ``output, (h_n, c_n)``.

    Example:
        >>> import fgraph as fg
        >>> lstm = fg.nn.LSTM(3, 4, proj_size=2)
        >>> [(name, p.shape) for name, p in lstm.named_parameters()][-1]
        ('weight_hr_l0', (2, 4))
        >>> output, (h_n, c_n) = lstm(fg.ones(5, 3))              # unbatched (seq, feature)
        >>> output.shape, h_n.shape, c_n.shape
        ((5, 2), (1, 2), (1, 4))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)

    def _split_hx(self, hx: Any) -> tuple:
        if not isinstance(hx, (tuple, list)) or len(hx) != 2:
            raise TypeError(f"LSTM: hx must be a tuple (h_0, c_0) of two tensors, got {type(hx).__name__}"
                            f"{f' of length {len(hx)}' if isinstance(hx, (tuple, list)) else ''}.")
        return tuple(hx)

    def forward(self, input: Union[Tensor, PackedSequence], hx: Optional[tuple[Tensor, Tensor]] = None, *,
                key: Any = None) -> tuple[Union[Tensor, PackedSequence], tuple[Tensor, Tensor]]:
        output, (h_n, c_n) = self._forward(input, hx, key)
        return output, (h_n, c_n)


class GRU(RNNBase):
    """Gated recurrent unit, PyTorch's gates: ``r, z, n`` with ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``
    and ``h' = (1 - z) * n + z * h``.

    ``forward(input, hx=None)`` as :class:`RNN`; returns ``output, h_n``.

    Example:
        >>> import fgraph as fg
        >>> gru = fg.nn.GRU(3, 4, bias=False)
        >>> gru
        GRU(3, 4, bias=False)
        >>> output, h_n = gru(fg.ones(5, 2, 3), fg.zeros(1, 2, 4))
        >>> output.shape, h_n.shape
        ((5, 2, 4), (1, 2, 4))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, device: Any = None,
                 dtype: Any = None, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if kwargs:
            raise TypeError(f"GRU.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'")
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, 0,
                         device, dtype)

    def forward(self, input: Union[Tensor, PackedSequence], hx: Optional[Tensor] = None, *,
                key: Any = None) -> tuple[Union[Tensor, PackedSequence], Tensor]:
        output, (h_n,) = self._forward(input, hx, key)
        return output, h_n


from fgraph.nn.modules.rnn_cells import GRUCell, LSTMCell, RNNCell, RNNCellBase  # noqa: E402  (the cells, one step)
