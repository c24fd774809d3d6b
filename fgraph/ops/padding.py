"""Padding: ``pad`` with ``torch.nn.functional.pad``'s semantics (also ``fgraph.nn.functional.pad``).

``pad`` lists (left, right) amounts starting from the LAST dimension and moving
backwards: ``(1, 1)`` pads the last dimension, ``(1, 1, 2, 0)`` also the one before.
Negative amounts crop. Modes:

* ``constant`` (any number of dimensions): fill with ``value``. Primitive
  ``constant_pad_nd``; its rule is the same op with negated amounts (cropping the
  gradient), so every derivative order works.
* ``reflect``, ``replicate``, ``circular``: as in PyTorch, the last 1, 2 or 3 dimensions
  of a tensor with one or two more dimensions (batch, channels). Primitives that gather
  from the input at static indices (nodes ``ReflectionPad{1,2,3}DBackward0``,
  ``ReplicationPad{1,2,3}DBackward0``, ``PadCircularBackward0``); their rule scatter-adds
  the gradient back (``pad_backward``), whose own rule gathers again.

Differences from PyTorch: only the padded dimensions must be non-empty (PyTorch also
rejects an empty channel dimension), and ``circular`` padding may not exceed the size
left after cropping by negative amounts (PyTorch then wraps inconsistently).

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([[1.0, 2.0, 3.0]])
    >>> fg.pad(x, (1, 2)).tolist(), fg.pad(x, (2, 1), mode="reflect").tolist()
    ([[0.0, 1.0, 2.0, 3.0, 0.0, 0.0]], [[3.0, 2.0, 1.0, 2.0, 3.0, 2.0]])
    >>> fg.pad(x, (1, 1), mode="replicate").tolist(), fg.pad(x, (1, 1), mode="circular").tolist()
    ([[1.0, 1.0, 2.0, 3.0, 3.0]], [[3.0, 1.0, 2.0, 3.0, 1.0]])
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from fgraph.errors import OpError
from fgraph.ops._declare import apply_unary, declare
from fgraph.tensor import Tensor, type_name

_NAN = float("nan")  # one object, so that value=nan hits the same cached kernel every time
_MODES = ("constant", "reflect", "replicate", "circular")


# -- constant --------------------------------------------------------------------------------------------
def _constant_pad_forward(x, *, pads, value):
    return jax.lax.pad(x, jnp.asarray(value, x.dtype), [(lo, hi, 0) for lo, hi in pads])


def _constant_pad_rule(ctx, g):
    pads = tuple((-lo, -hi) for lo, hi in ctx.params.pads)
    return (apply_unary(CONSTANT_PAD, g, CONSTANT_PAD.Params(pads, 0.0)),)


CONSTANT_PAD = declare("constant_pad_nd", _constant_pad_forward, _constant_pad_rule, params=("pads", "value"))


# -- reflect / replicate / circular: gathers at static indices --------------------------------------------
def _source_index(n: int, lo: int, hi: int, mode: str) -> np.ndarray:
    """For each output position along one dimension, the input position it copies."""
    if mode == "circular":  # wrap around what is left after cropping by negative amounts
        start, size = max(-lo, 0), n - max(-lo, 0) - max(-hi, 0)
        return start + np.mod(np.arange(-max(lo, 0), size + max(hi, 0)), size)
    i = np.arange(-lo, n + hi)
    if mode == "replicate":
        return np.clip(i, 0, n - 1)
    i = np.abs(i)
    return np.where(i >= n, 2 * (n - 1) - i, i)


def _gather_forward(x, *, mode, pads):
    for dim, lo, hi in pads:
        x = jnp.take(x, _source_index(x.shape[dim], lo, hi, mode), axis=dim)
    return x


def _scatter_forward(g, *, mode, pads, shape):
    shapes = [tuple(shape)]
    for dim, lo, hi in pads:
        s = list(shapes[-1])
        s[dim] += lo + hi
        shapes.append(tuple(s))
    for k in reversed(range(len(pads))):
        dim, lo, hi = pads[k]
        before = shapes[k]
        index = (slice(None),) * dim + (_source_index(before[dim], lo, hi, mode),)
        g = jnp.zeros(before, g.dtype).at[index].add(g)
    return g


def _gather_rule(ctx, g):
    p = ctx.params
    return (apply_unary(PAD_BACKWARD, g, PAD_BACKWARD.Params(p.mode, p.pads, ctx.shapes[0])),)


def _scatter_rule(ctx, g):
    p = ctx.params
    op = _GATHER_OPS[(p.mode, len(p.pads))]
    return (apply_unary(op, g, op.Params(p.mode, p.pads)),)


_GATHER_OPS = {}
for _mode, _torch in (("reflect", "ReflectionPad"), ("replicate", "ReplicationPad")):
    for _k in (1, 2, 3):
        _GATHER_OPS[(_mode, _k)] = declare(
            f"{_torch.lower().replace('pad', '_pad')}{_k}d", _gather_forward, _gather_rule,
            params=("mode", "pads"), node_name=f"{_torch}{_k}DBackward0",
        )
PAD_CIRCULAR = declare("pad_circular", _gather_forward, _gather_rule, params=("mode", "pads"))
for _k in (1, 2, 3):
    _GATHER_OPS[("circular", _k)] = PAD_CIRCULAR
PAD_BACKWARD = declare("pad_backward", _scatter_forward, _scatter_rule, params=("mode", "pads", "shape"))


# -- the public function ---------------------------------------------------------------------------------
def _check_gather_pad(input: Tensor, pairs: list, mode: str) -> None:
    k, nd = len(pairs), input.ndim
    if k not in (1, 2, 3) or nd not in (k + 1, k + 2):
        raise OpError(
            f"pad: mode '{mode}' with a pad of length {2 * k} is not supported for a {nd}-d input "
            f"(shape {input.shape}). Supported: a pad of length 2 for 2-d/3-d input, 4 for 3-d/4-d, "
            "6 for 4-d/5-d (the padded dimensions plus channel and optional batch dimensions); "
            "use mode='constant' for other cases."
        )
    for dim, lo, hi in pairs:
        n = input.shape[dim]
        if n == 0:
            raise OpError(
                f"pad: mode '{mode}' cannot pad dimension {dim} of size 0 (input shape {input.shape}); "
                "there is nothing to copy from."
            )
        if mode == "reflect" and (lo >= n or hi >= n):
            raise OpError(
                f"pad: reflect padding ({lo}, {hi}) must be less than the size of dimension {dim} ({n}) "
                f"of the input (shape {input.shape})."
            )
        if mode == "circular":
            left = n - max(-lo, 0) - max(-hi, 0)
            if left <= 0 or lo > left or hi > left:
                raise OpError(
                    f"pad: circular padding ({lo}, {hi}) of dimension {dim} (size {n}, {left} after cropping) "
                    f"would wrap around more than once (input shape {input.shape}); each amount must be "
                    "at most the size left after cropping."
                )


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: Optional[float] = None) -> Tensor:
    """Pad (or, with negative amounts, crop) the last ``len(pad) // 2`` dimensions.

    ``pad = (left_last, right_last, left_second_last, right_second_last, ...)``;
    ``mode`` is ``'constant'`` (filled with ``value``, default 0), ``'reflect'``,
    ``'replicate'`` or ``'circular'`` (see the module docstring).

    Example:
        >>> import fgraph as fg
        >>> fg.pad(fg.ones(1, 2, 2), (1, 1, 0, 1), value=5.0).shape
        (1, 3, 4)
    """
    if not isinstance(input, Tensor):
        raise OpError(f"pad: input must be a Tensor, got {type_name(input)}.")
    amounts = tuple(pad)
    if not all(isinstance(p, (int, np.integer)) and not isinstance(p, bool) for p in amounts):
        raise OpError(f"pad: pad must be a sequence of ints, got {amounts}.")
    amounts = tuple(int(p) for p in amounts)
    nd = input.ndim
    if len(amounts) % 2:
        raise OpError(f"pad: the pad length must be divisible by 2 (left, right per dimension), got {amounts}.")
    if len(amounts) // 2 > nd:
        raise OpError(
            f"pad: pad {amounts} names {len(amounts) // 2} dimensions but the input has only {nd} "
            f"(shape {input.shape}); pad pairs start from the last dimension."
        )
    if mode not in _MODES:
        raise OpError(f"pad: unrecognised padding mode {mode!r}; expected one of {list(_MODES)}.")
    pairs = [(nd - 1 - i, amounts[2 * i], amounts[2 * i + 1]) for i in range(len(amounts) // 2)]
    for dim, lo, hi in pairs:
        if input.shape[dim] + lo + hi < 0:
            raise OpError(
                f"pad: padding ({lo}, {hi}) of dimension {dim} (size {input.shape[dim]}) of the input "
                f"(shape {input.shape}) would give a negative size {input.shape[dim] + lo + hi}."
            )
    if mode == "constant":
        fill = 0.0 if value is None else value
        if isinstance(fill, Tensor) or not isinstance(fill, (int, float, np.integer, np.floating)):
            raise OpError(f"pad: value must be a Python number, got {type(fill).__name__}.")
        fill = _NAN if math.isnan(fill) else fill.item() if isinstance(fill, np.generic) else fill
        if not any(lo or hi for _, lo, hi in pairs):
            return input
        per_dim = [(0, 0)] * nd
        for dim, lo, hi in pairs:
            per_dim[dim] = (lo, hi)
        return apply_unary(CONSTANT_PAD, input, CONSTANT_PAD.Params(tuple(per_dim), fill))
    if value is not None and value != 0:
        raise OpError(f"pad: padding mode {mode!r} doesn't take a value argument (got value={value}).")
    _check_gather_pad(input, pairs, mode)
    active = tuple((dim, lo, hi) for dim, lo, hi in pairs if lo or hi)
    if not active:
        return input
    op = _GATHER_OPS[(mode, len(pairs))]
    return apply_unary(op, input, op.Params(mode, active))


#: Exported as ``fgraph.<name>`` (and as ``fgraph.nn.functional.pad``).
__all__ = ["pad"]
#: Installed as ``Tensor.<name>`` methods (PyTorch has no ``Tensor.pad``).
TENSOR_METHODS: dict = {}
