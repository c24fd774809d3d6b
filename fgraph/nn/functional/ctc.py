"""``ctc_loss``: the connectionist temporal classification loss (``torch.nn.functional.ctc_loss``).

The per-sample negative log-likelihood is the primitive ``ctc_loss``: a JAX kernel
running the log-space alpha recursion over the ``2 S + 1`` blank-extended labels with
``jax.lax.scan`` (frames past a sample's input length leave its alphas unchanged).
"log 0" is a large finite negative number, so unreachable states carry exactly zero
gradient instead of ``inf - inf`` NaNs; a sample whose target cannot be aligned (its
final alphas stay at "log 0") gets an infinite loss, as in PyTorch.

Derivatives: the rule is ``g * G(log_probs)`` where ``G``, the gradient of the
per-sample NLLs, is an internal op computed by ``jax.grad`` of the same kernel; ``G``'s
own rule is a Hessian-vector product (``jax.jvp`` of ``jax.grad``), so first and second
derivatives work; a third raises. The gradient is the exact derivative with respect to
``log_probs``. PyTorch's kernel returns that plus ``exp(log_probs)`` on every frame
before the input length (its formula assumes ``log_probs`` come from ``log_softmax``,
through which that term cancels): through ``log_softmax`` the two agree exactly;
fed raw, unnormalised scores, fgraph's gradient is the true one. Infinite losses have
NaN gradients, or zero loss and gradient with ``zero_infinity=True``.

Example:
    >>> import fgraph as fg
    >>> import fgraph.nn.functional as F
    >>> lp = F.log_softmax(fg.zeros(3, 1, 2), 2)  # T=3 frames, N=1, C=2 (blank 0)
    >>> round(F.ctc_loss(lp, fg.tensor([[1]]), [3], [1], reduction="sum").item(), 4)  # 6 of the 8 paths
    0.2877
"""
from __future__ import annotations

import functools
from typing import Sequence, Union

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from fgraph.errors import OpError
from fgraph.nn.functional._utils import check_float, check_integer, check_reduction, check_tensor, is_traced
from fgraph.ops._declare import OpDef, apply_op, declare
from fgraph.ops.elementwise import clamp, to_dtype
from fgraph.ops.reduction import mean, sum as _sum
from fgraph.ops.shape import squeeze, unsqueeze
from fgraph.tensor import Tensor, _wrap

#: "log 0": finite, so that gradients through unreachable states are exactly 0 (float32 holds it).
_LOG_ZERO = -1e30

Lengths = Union[Tensor, Sequence[int]]


def _ctc_log_likelihood(lp, targets, input_lengths, target_lengths, blank):
    """``(log p(target | log_probs), aligned)`` per sample; ``lp`` is ``(T, N, C)``, targets ``(N, S)``."""
    t_len, n, _ = lp.shape
    s_len = targets.shape[1]
    width = 2 * s_len + 1
    targets = targets.astype(jnp.int32)
    ext = jnp.full((n, width), blank, jnp.int32).at[:, 1::2].set(targets)
    pos = jnp.arange(width)
    emit = jnp.take_along_axis(lp, jnp.broadcast_to(ext[None], (t_len, n, width)), axis=2)  # (T, N, 2S+1)
    before2 = jnp.concatenate([jnp.full((n, 2), -1, jnp.int32), ext[:, :-2]], axis=1)
    skip = (ext != blank) & (ext != before2)
    log_zero = jnp.asarray(_LOG_ZERO, lp.dtype)
    alpha0 = jnp.where(pos[None] < jnp.minimum(2, 2 * target_lengths + 1)[:, None], emit[0], log_zero)

    def shifted(a, k):
        return jnp.concatenate([jnp.full((n, k), log_zero), a[:, :-k]], axis=1)

    def step(alpha, xs):
        emit_t, t = xs
        a1 = shifted(alpha, 1)
        a2 = jnp.where(skip, shifted(alpha, 2), log_zero) if width > 2 else jnp.full_like(alpha, log_zero)
        m = lax.stop_gradient(jnp.maximum(jnp.maximum(alpha, a1), a2))
        new = m + jnp.log(jnp.exp(alpha - m) + jnp.exp(a1 - m) + jnp.exp(a2 - m)) + emit_t
        return jnp.where((t < input_lengths)[:, None], new, alpha), None

    alpha, _ = lax.scan(step, alpha0, (emit[1:], jnp.arange(1, t_len)))
    last = jnp.take_along_axis(alpha, (2 * target_lengths)[:, None], axis=1)[:, 0]
    prev = jnp.take_along_axis(alpha, jnp.maximum(2 * target_lengths - 1, 0)[:, None], axis=1)[:, 0]
    prev = jnp.where(target_lengths > 0, prev, log_zero)
    m = lax.stop_gradient(jnp.maximum(last, prev))
    ll = m + jnp.log(jnp.exp(last - m) + jnp.exp(prev - m))
    aligned = ll > _LOG_ZERO / 2
    empty = input_lengths == 0  # no frames: only the empty target has probability (1)
    ll = jnp.where(empty, 0.0, ll)
    aligned = jnp.where(empty, target_lengths == 0, aligned)
    return ll, aligned


def _ctc_forward(lp, targets, input_lengths, target_lengths, *, blank, zero_infinity):
    ll, aligned = _ctc_log_likelihood(lp, targets, input_lengths, target_lengths, blank)
    return jnp.where(aligned, -ll, 0.0 if zero_infinity else jnp.inf).astype(lp.dtype)


def _masked_total(lp, targets, input_lengths, target_lengths, blank):
    ll, aligned = _ctc_log_likelihood(lp, targets, input_lengths, target_lengths, blank)
    return jnp.sum(jnp.where(aligned, -ll, 0.0)), aligned


def _ctc_grad_forward(lp, targets, input_lengths, target_lengths, *, blank, zero_infinity):
    """d nll_n / d log_probs[:, n] for every sample (each NLL reads only its own column)."""
    total = functools.partial(_masked_total, targets=targets, input_lengths=input_lengths,
                              target_lengths=target_lengths, blank=blank)
    grad, aligned = jax.grad(total, has_aux=True)(lp)
    if zero_infinity:
        return grad
    unused = jnp.arange(lp.shape[0])[:, None] >= input_lengths[None, :]  # frames past the input length: 0
    return jnp.where((aligned[None, :] | unused)[:, :, None], grad, jnp.nan)


def _ctc_hvp_forward(lp, v, targets, input_lengths, target_lengths, *, blank, zero_infinity):
    """Hessian of the summed NLLs times ``v`` (the Hessian is symmetric: this is also its vjp)."""
    grad = functools.partial(_ctc_grad_forward, targets=targets, input_lengths=input_lengths,
                             target_lengths=target_lengths, blank=blank, zero_infinity=zero_infinity)
    return jax.jvp(grad, (lp,), (v,))[1]


def _ctc_rule(ctx, g):
    lp, targets, il, tl = ctx.inputs
    grad = apply_op(_CTC_GRAD, (lp, targets, il, tl), _CTC_GRAD.Params(*ctx.params))
    return unsqueeze(unsqueeze(g, 0), 2) * grad, None, None, None


def _ctc_grad_rule(ctx, g):
    lp, targets, il, tl = ctx.inputs
    return apply_op(_CTC_HVP, (lp, g, targets, il, tl), _CTC_HVP.Params(*ctx.params)), None, None, None


def _ctc_hvp_rule(ctx, g):
    lp, _, targets, il, tl = ctx.inputs
    if ctx.needs[0]:
        raise NotImplementedError(
            "ctc_loss: third and higher derivatives with respect to log_probs are not implemented "
            "(first and second derivatives are)."
        )
    return None, apply_op(_CTC_HVP, (lp, g, targets, il, tl), ctx.params), None, None, None


_PARAMS = ("blank", "zero_infinity")
_CTC = declare("ctc_loss", _ctc_forward, _ctc_rule, params=_PARAMS, save_inputs=True, node_name="CtcLossBackward0",
               real_only=True)
# Internal (not registered): the gradient and Hessian-vector product of the per-sample NLLs.
_CTC_GRAD = OpDef("ctc_loss_backward", _ctc_grad_forward, _ctc_grad_rule, params=_PARAMS, save_inputs=True,
                  node_name="CtcLossBackwardBackward0")
_CTC_HVP = OpDef("ctc_loss_hvp", _ctc_hvp_forward, _ctc_hvp_rule, params=_PARAMS, save_inputs=True,
                 node_name="CtcLossHvpBackward0")


# -- argument handling -------------------------------------------------------------------------------------------
def _lengths(v: Lengths, n: int, name: str) -> Tensor:
    op = "ctc_loss"
    if not isinstance(v, Tensor):
        try:
            arr = np.asarray(v, dtype=np.int64)
        except (TypeError, ValueError):
            raise TypeError(f"{op}: {name} must be a Tensor or a sequence of ints, got {type(v).__name__}.") from None
        v = _wrap(jnp.asarray(arr.reshape(-1) if arr.ndim else arr))
    check_integer(v, op, name)
    if v.ndim > 1 or (v.ndim == 1 and v.shape[0] != n) or (v.ndim == 0 and n != 1):
        raise OpError(f"{op}: {name} must hold one length per batch element ({n}), got shape {tuple(v.shape)}.")
    return v.reshape((n,))


def _padded_targets(targets: Tensor, target_lengths: Tensor, n: int) -> Tensor:
    """1-D concatenated targets as an ``(N, S)`` array (``S`` the longest, or the total when traced)."""
    total = targets.shape[0]
    if is_traced(target_lengths) or is_traced(targets):
        s = total
    else:
        lengths = np.asarray(target_lengths._array)
        if lengths.sum() != total:
            raise OpError(
                f"ctc_loss: 1-D (concatenated) targets hold {total} labels but target_lengths sum to "
                f"{int(lengths.sum())}; they must be equal."
            )
        s = int(lengths.max()) if n else 0
    tl = target_lengths._array.astype(jnp.int32)
    starts = jnp.cumsum(tl) - tl
    idx = starts[:, None] + jnp.arange(s)[None]
    inside = jnp.arange(s)[None] < tl[:, None]
    data = targets._array
    gathered = jnp.take(data, jnp.clip(idx, 0, max(total - 1, 0)), axis=0) if total else jnp.zeros((n, s), data.dtype)
    return _wrap(jnp.where(inside, gathered, 0))


def _check_values(log_probs: Tensor, targets: Tensor, il: Tensor, tl: Tensor, blank: int, padded: bool) -> None:
    if any(is_traced(t) for t in (targets, il, tl)):
        return
    t_len, c = log_probs.shape[0], log_probs.shape[2]
    ils, tls = np.asarray(il._array), np.asarray(tl._array)
    if ils.size and (ils.min() < 0 or ils.max() > t_len):
        raise OpError(f"ctc_loss: input_lengths must lie in [0, {t_len}] (the number of frames), got {ils.tolist()}.")
    if tls.size and (tls.min() < 0 or (padded and tls.max() > targets.shape[1])):
        raise OpError(
            f"ctc_loss: target_lengths must lie in [0, {targets.shape[1] if padded else 'len(targets)'}], "
            f"got {tls.tolist()}."
        )
    vals = np.asarray(targets._array)
    if padded:
        vals = vals[np.arange(vals.shape[1])[None] < tls[:, None]]
    if vals.size and (vals.min() < 0 or vals.max() >= c):
        raise IndexError(f"ctc_loss: target labels must lie in [0, {c - 1}] ({c} classes), got {int(vals.min())} "
                         f"to {int(vals.max())}.")


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Lengths, target_lengths: Lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """CTC loss of label sequences ``targets`` under per-frame log-probabilities ``log_probs``.

    ``log_probs`` is ``(T, N, C)`` (or ``(T, C)`` unbatched), usually ``log_softmax`` output;
    ``targets`` is ``(N, S)`` padded or 1-D concatenated (``sum(target_lengths)`` labels), never
    containing ``blank``; ``input_lengths``/``target_lengths`` are ``(N)`` integer tensors or
    sequences. ``'mean'`` divides each loss by its target length (at least 1), then
    averages over the batch; ``zero_infinity`` replaces infinite losses (unalignable
    targets) and their gradients by 0.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> lp = F.log_softmax(fg.tensor([[[0.0, 2.0]], [[2.0, 0.0]]]), 2)
        >>> round(F.ctc_loss(lp, fg.tensor([[1]]), fg.tensor([2]), fg.tensor([1])).item(), 4)
        0.1109
    """
    op = "ctc_loss"
    check_float(log_probs, op, "log_probs")
    check_tensor(targets, op, "targets")
    check_integer(targets, op, "targets")
    reduction = check_reduction(reduction, op)
    if log_probs.dtype not in (np.dtype("float32"), np.dtype("float64")):
        raise OpError(f"{op}: log_probs must be float32 or float64, got {log_probs.dtype}; convert with .float().")
    unbatched = log_probs.ndim == 2
    if log_probs.ndim not in (2, 3):
        raise OpError(f"{op}: log_probs must be (T, N, C) or unbatched (T, C), got shape {tuple(log_probs.shape)}.")
    if unbatched:
        log_probs = unsqueeze(log_probs, 1)
        if targets.ndim != 1:
            raise OpError(f"{op}: unbatched log_probs (T, C) need 1-D targets (S), got shape {tuple(targets.shape)}.")
        targets = unsqueeze(targets, 0)
    n, c = log_probs.shape[1], log_probs.shape[2]
    if not 0 <= blank < c:
        raise OpError(f"{op}: blank must be in label range [0, {c - 1}], got {blank}.")
    il = _lengths(input_lengths, n, "input_lengths")
    tl = _lengths(target_lengths, n, "target_lengths")
    padded = targets.ndim == 2
    if padded and targets.shape[0] != n:
        raise OpError(f"{op}: padded targets must be (N={n}, S), got shape {tuple(targets.shape)}.")
    if targets.ndim not in (1, 2):
        raise OpError(f"{op}: targets must be (N, S) padded or 1-D concatenated, got shape {tuple(targets.shape)}.")
    _check_values(log_probs, targets, il, tl, blank, padded)
    if not padded:
        targets = _padded_targets(targets, tl, n)
    nll = apply_op(_CTC, (log_probs, targets, il, tl), _CTC.Params(int(blank), bool(zero_infinity)))
    if reduction == "mean":
        return mean(nll / clamp(to_dtype(tl, nll.dtype), min=1))
    if reduction == "sum":
        return _sum(nll)
    return squeeze(nll, 0) if unbatched else nll


#: Exported as ``fgraph.nn.functional.<name>``.
__all__ = ["ctc_loss"]
#: No Tensor methods: PyTorch has none for this.
TENSOR_METHODS: dict = {}
