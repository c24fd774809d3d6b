"""Normalization layers with ``torch.nn.functional``'s names and arguments.

All are composites of fgraph ops (mean, var, rsqrt, ...), so every order of
derivative works, except ``layer_norm``: one primitive (``_layer_norm.py``, one kernel,
node ``NativeLayerNormBackward0`` as in PyTorch) whose rule is written in fgraph ops, so
every order works there too. Variances are biased (``correction=0``), as in PyTorch.

``batch_norm`` cannot update ``running_mean``/``running_var`` in place (fgraph
tensors are immutable): in training mode it normalises with the batch statistics
and leaves the running statistics untouched; call :func:`batch_norm_running_stats`
to get the updated ``(mean, var)`` pair PyTorch would have written.

Example:
    >>> import fgraph as fg
    >>> import fgraph.nn.functional as F
    >>> [round(v, 3) for v in F.layer_norm(fg.tensor([[1.0, 3.0]]), (2,)).tolist()[0]]
    [-1.0, 1.0]
"""
from __future__ import annotations

from typing import Optional, Sequence, Union

from fgraph.errors import OpError
from fgraph.nn.functional._layer_norm import native_batch_norm, native_layer_norm
from fgraph.nn.functional._utils import check_float, check_tensor
from fgraph.nn.functional.pooling import avg_pool2d
from fgraph.ops._complex import refuse_complex
from fgraph.ops.elementwise import add, div, mul, pow, sub
from fgraph.ops.elementwise_math import rsqrt
from fgraph.ops.reduction import mean, var
from fgraph.ops.padding import pad
from fgraph.ops.shape import reshape
from fgraph.tensor import Tensor
from fgraph.amp.autocast_mode import autocast_policy

__all__ = [
    "layer_norm",
    "rms_norm",
    "group_norm",
    "instance_norm",
    "batch_norm",
    "batch_norm_running_stats",
    "local_response_norm",
]

TENSOR_METHODS: dict = {}


def _normalize(x: Tensor, dims: tuple[int, ...], eps: float) -> Tensor:
    m = mean(x, dim=dims, keepdim=True)
    v = var(x, dim=dims, keepdim=True, correction=0)
    return mul(sub(x, m), rsqrt(add(v, eps)))


def _affine(y: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], shape: tuple[int, ...]) -> Tensor:
    if weight is not None:
        y = mul(y, reshape(weight, shape))
    if bias is not None:
        y = add(y, reshape(bias, shape))
    return y


def _check_param(p: Optional[Tensor], numel_shape: tuple[int, ...], op: str, name: str) -> None:
    if p is None:
        return
    check_tensor(p, op, name)
    if tuple(p.shape) != tuple(numel_shape):
        raise OpError(
            f"{op}: '{name}' must have shape {tuple(numel_shape)}, got {tuple(p.shape)}; "
            "pass one value per normalized feature/channel."
        )


def _norm_shape(normalized_shape: Union[int, Sequence[int]]) -> tuple[int, ...]:
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(int(s) for s in normalized_shape)


def _check_trailing(input: Tensor, ns: tuple[int, ...], op: str) -> None:
    if len(ns) == 0 or input.ndim < len(ns) or tuple(input.shape[input.ndim - len(ns):]) != ns:
        raise OpError(
            f"{op}: normalized_shape {ns} must be non-empty and match the trailing dimensions of the "
            f"input of shape {tuple(input.shape)}; pass input.shape[-k:]."
        )


@autocast_policy("layer_norm")
def layer_norm(input: Tensor, normalized_shape: Union[int, Sequence[int]], weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    """Layer normalization over the trailing ``normalized_shape`` dimensions.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.layer_norm(fg.tensor([[2.0, 2.0]]), [2]).tolist()
    [[0.0, 0.0]]
    """
    refuse_complex("layer_norm", input)
    check_float(input, "layer_norm")
    ns = _norm_shape(normalized_shape)
    _check_trailing(input, ns, "layer_norm")
    _check_param(weight, ns, "layer_norm", "weight")
    _check_param(bias, ns, "layer_norm", "bias")
    return native_layer_norm(input, weight, bias, len(ns), eps)


def rms_norm(input: Tensor, normalized_shape: Union[int, Sequence[int]], weight: Optional[Tensor] = None,
             eps: Optional[float] = None) -> Tensor:
    """RMS normalization ``x / sqrt(mean(x**2) + eps) * weight`` over the trailing dims.

    ``eps=None`` uses the dtype's machine epsilon, as PyTorch.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> [round(v, 3) for v in F.rms_norm(fg.tensor([3.0, 4.0]), [2]).tolist()]
    [0.849, 1.131]
    """
    import jax.numpy as jnp

    check_float(input, "rms_norm")
    ns = _norm_shape(normalized_shape)
    _check_trailing(input, ns, "rms_norm")
    _check_param(weight, ns, "rms_norm", "weight")
    if eps is None:
        eps = float(jnp.finfo(input.dtype).eps)
    dims = tuple(range(input.ndim - len(ns), input.ndim))
    y = mul(input, rsqrt(add(mean(mul(input, input), dim=dims, keepdim=True), eps)))
    return _affine(y, weight, None, ns)


def _channel_shape(input: Tensor) -> tuple[int, ...]:
    return (input.shape[1],) + (1,) * (input.ndim - 2)


@autocast_policy("group_norm")
def group_norm(input: Tensor, num_groups: int, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
               eps: float = 1e-5) -> Tensor:
    """Group normalization of an ``(N, C, *)`` input over groups of ``C // num_groups`` channels.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> [round(v, 4) for v in F.group_norm(fg.tensor([[[1.0], [3.0]]]), 1).reshape(-1).tolist()]
    [-1.0, 1.0]
    """
    refuse_complex("group_norm", input)
    check_float(input, "group_norm")
    if input.ndim < 2:
        raise OpError(f"group_norm: expected an input of shape (N, C, *), got {tuple(input.shape)}.")
    n, c = input.shape[0], input.shape[1]
    if num_groups <= 0 or c % num_groups != 0:
        raise OpError(
            f"group_norm: the number of channels {c} (input shape {tuple(input.shape)}) must be divisible by "
            f"num_groups={num_groups}; choose a divisor of {c}."
        )
    _check_param(weight, (c,), "group_norm", "weight")
    _check_param(bias, (c,), "group_norm", "bias")
    grouped = reshape(input, (n, num_groups, (c // num_groups) * _prod(input.shape[2:])))
    y = reshape(_normalize(grouped, (2,), eps), tuple(input.shape))
    return _affine(y, weight, bias, _channel_shape(input))


def _prod(shape) -> int:
    out = 1
    for s in shape:
        out *= int(s)
    return out


def instance_norm(input: Tensor, running_mean: Optional[Tensor] = None, running_var: Optional[Tensor] = None,
                  weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Instance normalization: each ``(n, c)`` slice of an ``(N, C, *)`` input over its spatial dims.

    With ``use_input_stats=False`` the running statistics are used instead.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.instance_norm(fg.tensor([[[1.0, 1.0]]])).tolist()
    [[[0.0, 0.0]]]
    """
    refuse_complex("instance_norm", input)
    check_float(input, "instance_norm")
    if input.ndim < 3:
        raise OpError(
            f"instance_norm: expected an input of shape (N, C, L, ...) with at least one spatial dim, "
            f"got {tuple(input.shape)}; add a batch/spatial dim with unsqueeze."
        )
    c = input.shape[1]
    _check_param(weight, (c,), "instance_norm", "weight")
    _check_param(bias, (c,), "instance_norm", "bias")
    shape = _channel_shape(input)
    if use_input_stats:
        y = _normalize(input, tuple(range(2, input.ndim)), eps)
    else:
        if running_mean is None or running_var is None:
            raise OpError("instance_norm: use_input_stats=False needs running_mean and running_var.")
        y = mul(sub(input, reshape(running_mean, shape)), rsqrt(add(reshape(running_var, shape), eps)))
    return _affine(y, weight, bias, shape)


def batch_norm(input: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
               weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Batch normalization of an ``(N, C, *)`` input per channel.

    ``training=True`` normalises with the batch statistics (biased variance). The running
    statistics are NOT updated (tensors are immutable): use :func:`batch_norm_running_stats`.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> [round(v, 4) for v in F.batch_norm(fg.tensor([[1.0], [3.0]]), None, None, training=True).reshape(-1).tolist()]
    [-1.0, 1.0]
    """
    refuse_complex("batch_norm", input)
    check_float(input, "batch_norm")
    if input.ndim < 2:
        raise OpError(f"batch_norm: expected an input of shape (N, C, *), got {tuple(input.shape)}.")
    c = input.shape[1]
    _check_param(weight, (c,), "batch_norm", "weight")
    _check_param(bias, (c,), "batch_norm", "bias")
    shape = _channel_shape(input)
    if training:
        if _prod(input.shape) // max(c, 1) <= 1 and c:
            raise OpError(
                f"batch_norm: expected more than 1 value per channel when training, got input of shape "
                f"{tuple(input.shape)}; use a larger batch or training=False."
            )
        return native_batch_norm(input, weight, bias, eps)
    else:
        if running_mean is None or running_var is None:
            raise OpError("batch_norm: training=False needs running_mean and running_var (got None).")
        _check_param(running_mean, (c,), "batch_norm", "running_mean")
        _check_param(running_var, (c,), "batch_norm", "running_var")
        y = mul(sub(input, reshape(running_mean, shape)), rsqrt(add(reshape(running_var, shape), eps)))
    return _affine(y, weight, bias, shape)


def batch_norm_running_stats(input: Tensor, running_mean: Tensor, running_var: Tensor,
                             momentum: float = 0.1) -> tuple[Tensor, Tensor]:
    """The running statistics PyTorch's training-mode ``batch_norm`` would write in place.

    ``new = (1 - momentum) * running + momentum * batch_stat`` with the unbiased batch variance.

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> m, v = F.batch_norm_running_stats(fg.tensor([[1.0], [3.0]]), fg.zeros(1), fg.ones(1), 0.5)
    >>> m.tolist(), v.tolist()
    ([1.0], [1.5])
    """
    refuse_complex("batch_norm_running_stats", input)
    check_float(input, "batch_norm_running_stats")
    dims = (0,) + tuple(range(2, input.ndim))
    bm = mean(input, dim=dims)
    bv = var(input, dim=dims, correction=1)
    new_mean = add(mul(running_mean, 1.0 - momentum), mul(bm, momentum))
    new_var = add(mul(running_var, 1.0 - momentum), mul(bv, momentum))
    return new_mean, new_var


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """Divide each channel of ``(N, C, *)`` by ``(k + alpha * mean of x**2 over `size` neighbouring channels)
    ** beta`` (the window is zero-padded by ``size // 2`` before and ``(size - 1) // 2`` after, as torch).

    >>> import fgraph as fg, fgraph.nn.functional as F
    >>> F.local_response_norm(fg.tensor([[[2.0], [0.0]]]), 2, alpha=1.0, beta=1.0, k=0.0).tolist()
    [[[1.0], [0.0]]]
    """
    refuse_complex("local_response_norm", input)
    op = "local_response_norm"
    check_float(input, op)
    if input.ndim < 3:
        raise OpError(f"{op}: expected a 3-D or higher input (N, C, *), got shape {tuple(input.shape)}.")
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
        raise OpError(f"{op}: size must be a positive int (the number of channels to sum over), got {size!r}.")
    if _prod(input.shape) == 0:
        return input
    n, c = input.shape[0], input.shape[1]
    sq = reshape(mul(input, input), (n, 1, c, _prod(input.shape[2:])))
    window = avg_pool2d(pad(sq, (0, 0, size // 2, (size - 1) // 2)), (size, 1), 1)
    scale = pow(add(mul(reshape(window, tuple(input.shape)), alpha), k), beta)
    return div(input, scale)
