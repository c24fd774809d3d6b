"""Linear maps, distances, dropout, embeddings and one-hot encoding (``torch.nn.functional`` names).

``linear``, ``bilinear``, ``normalize``, ``cosine_similarity`` and
``pairwise_distance`` are composites of fgraph ops over the p-norm primitive of
``fgraph.linalg.vector_norm`` (its rule is written in fgraph ops, so every order of
derivative works; the gradient at a zero vector is 0, as in PyTorch).
``embedding`` is a primitive whose gradient is PyTorch's (rows at ``padding_idx``
get none, ``scale_grad_by_freq`` divides by each index's count); its double
backward is exact too. ``one_hot`` is not differentiable. ``dropout`` (and the
channel-wise ``dropout1d``/``dropout2d``/``dropout3d``) draws its mask from ``key=``
(or the default generator): the same key gives the same mask.

Example:
    >>> import fgraph as fg
    >>> import fgraph.nn.functional as F
    >>> F.linear(fg.ones(2, 3), fg.ones(4, 3), fg.zeros(4)).shape
    (2, 4)
    >>> F.one_hot(fg.tensor([0, 2]), 3).tolist()
    [[1, 0, 0], [0, 0, 1]]
"""
from __future__ import annotations

import warnings
from typing import Any, Optional, Sequence, Union

import jax
import jax.numpy as jnp
import numpy as np

from fgraph._dtypes import x64_enabled
from fgraph.errors import OpError
from fgraph.nn.functional._linear import affine, project
from fgraph.nn.functional._utils import (
    broadcast_shape,
    broadcasts_to,
    check_float,
    check_integer,
    dim_index,
    is_traced,
    no_inplace,
)
from fgraph.ops import _natural_sharding as natural_sharding
from fgraph.ops._declare import apply_op, declare
from fgraph.ops._complex import refuse_complex
from fgraph.ops.elementwise import clamp, mul, relu
from fgraph.ops.linalg_norms import vector_norm_of
from fgraph.ops.einsum import einsum
from fgraph.ops.linalg import matmul
from fgraph.ops.reduction import sum as _sum
from fgraph.ops.shape import expand, permute, reshape, squeeze, unsqueeze
from fgraph.random import Generator, check_implicit_key, resolve_key
from fgraph.tensor import Tensor
from fgraph.amp.autocast_mode import autocast_policy

Dim = Union[int, Sequence[int]]


# -- p-norm (the primitive of fgraph.linalg.vector_norm) ---------------------------------------------------
def _norm(x: Tensor, p: float, dims: tuple[int, ...], keepdim: bool) -> Tensor:
    return vector_norm_of(x, p, dims, keepdim)


def _dims(dim: Dim, ndim: int, op: str) -> tuple[int, ...]:
    if ndim == 0:
        dim_index(dim if isinstance(dim, int) else 0, 0, op)
        return ()
    wanted = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    dims = tuple(sorted({dim_index(d, ndim, op) for d in wanted}))
    if len(dims) != len(wanted):
        raise OpError(f"{op}: dim {dim} names a dimension twice.")
    return dims


def _clamp_min_keep_grad(n: Tensor, eps: float) -> Tensor:
    """``max(n, eps)`` whose gradient still flows to ``n``, as PyTorch's in-place clamp under no_grad."""
    return n + relu(eps - n.detach())


# -- linear maps ----------------------------------------------------------------------------------------------
@autocast_policy("linear")
def linear(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """``input @ weight.T + bias``; ``weight`` is ``(out_features, in_features)`` (or ``(in_features,)``).

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.linear(fg.tensor([[1.0, 2.0]]), fg.tensor([[1.0, 1.0], [0.0, 1.0]]), fg.tensor([0.5, 0.0])).tolist()
        [[3.5, 2.0]]
    """
    check_float(input, "linear")
    check_float(weight, "linear", "weight")
    if input.ndim == 0 or weight.ndim not in (1, 2) or input.shape[-1] != weight.shape[-1]:
        raise OpError(
            f"linear: input of shape {tuple(input.shape)} and weight of shape {tuple(weight.shape)} do not fit: "
            "weight must be (out_features, in_features) with in_features equal to input.shape[-1]."
        )
    out_shape = tuple(input.shape[:-1]) + tuple(weight.shape[:-1])
    if bias is not None:
        check_float(bias, "linear", "bias")
        if not broadcasts_to(bias, out_shape):
            raise OpError(
                f"linear: bias of shape {tuple(bias.shape)} does not broadcast to the output shape {out_shape}; "
                "it should be (out_features,)."
            )
        if weight.ndim == 2 and bias.ndim == 1:  # the layer's case: one kernel, one node
            return affine(input, weight, bias)
    if bias is None and weight.ndim == 2:  # one kernel, one node (PyTorch's MmBackward0)
        return project(input, weight)
    # One contraction against the (out, in) weight: no transposed copy of it, and its gradient is formed directly.
    out = einsum("...i,oi->...o", input, weight) if weight.ndim == 2 else matmul(input, weight)
    return out if bias is None else out + bias


@autocast_policy("bilinear")
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """``y[..., k] = sum_ij input1[..., i] * weight[k, i, j] * input2[..., j] + bias[k]``.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.bilinear(fg.ones(5, 2), fg.ones(5, 3), fg.ones(4, 2, 3)).shape
        (5, 4)
    """
    for name, t in (("input1", input1), ("input2", input2), ("weight", weight)):
        check_float(t, "bilinear", name)
    s1, s2, sw = tuple(input1.shape), tuple(input2.shape), tuple(weight.shape)
    if not s1 or not s2 or s1[:-1] != s2[:-1]:
        raise OpError(f"bilinear: input1 {s1} and input2 {s2} must be at least 1-d with equal batch dimensions.")
    if len(sw) != 3 or sw[1] != s1[-1] or sw[2] != s2[-1]:
        raise OpError(
            f"bilinear: weight must have shape (out_features, {s1[-1]}, {s2[-1]}) for inputs {s1} and {s2}, got {sw}."
        )
    w = reshape(permute(weight, (1, 0, 2)), (sw[1], sw[0] * sw[2]))  # (in1, out * in2)
    t = reshape(matmul(input1, w), s1[:-1] + (sw[0], sw[2]))  # (..., out, in2)
    out = _sum(t * unsqueeze(input2, -2), -1)
    if bias is not None:
        check_float(bias, "bilinear", "bias")
        if tuple(bias.shape) != (sw[0],):
            raise OpError(f"bilinear: bias must have shape ({sw[0]},) (out_features), got {tuple(bias.shape)}.")
        out = out + bias
    return out


# -- norms and distances -----------------------------------------------------------------------------------
def normalize(input: Tensor, p: float = 2.0, dim: Dim = 1, eps: float = 1e-12, out: Any = None) -> Tensor:
    """``input / max(||input||_p over dim, eps)``.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.normalize(fg.tensor([[3.0, 4.0]])).tolist()
        [[0.6000000238418579, 0.800000011920929]]
    """
    check_float(input, "normalize")
    if out is not None:
        raise OpError("normalize: out= is not supported (fgraph tensors are immutable); use the returned tensor.")
    n = _norm(input, p, _dims(dim, input.ndim, "normalize"), True)
    return input / clamp(n, min=eps)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim`` (after broadcasting); norms below ``eps``
    count as ``eps``.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.cosine_similarity(fg.tensor([[1.0, 0.0]]), fg.tensor([[1.0, 1.0]])).tolist()
        [0.7071067690849304]
    """
    refuse_complex("cosine_similarity", x1, x2)
    check_float(x1, "cosine_similarity", "x1")
    check_float(x2, "cosine_similarity", "x2")
    shape = broadcast_shape("cosine_similarity", x1, x2)
    d = _dims(dim, len(shape), "cosine_similarity")
    x1, x2 = expand(x1, shape), expand(x2, shape)
    n1 = _clamp_min_keep_grad(_norm(x1, 2, d, True), eps)
    n2 = _clamp_min_keep_grad(_norm(x2, 2, d, True), eps)
    return _sum((x1 / n1) * (x2 / n2), d)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` over the last dimension (after broadcasting).

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.pairwise_distance(fg.tensor([[3.0, 4.0]]), fg.zeros(1, 2), eps=0.0).tolist()
        [5.0]
    """
    check_float(x1, "pairwise_distance", "x1")
    check_float(x2, "pairwise_distance", "x2")
    ndim = len(broadcast_shape("pairwise_distance", x1, x2))
    return _norm(x1 - x2 + eps, p, (ndim - 1,) if ndim else (), keepdim)


# -- dropout -------------------------------------------------------------------------------------------------------
def _dropout_mask_forward(key, *, p, shape, dtype):
    keep = jax.random.bernoulli(key, 1.0 - p, shape)
    return jnp.where(keep, 1.0 / (1.0 - p), 0.0).astype(dtype)


_DROPOUT_MASK = declare("nn_dropout_mask", _dropout_mask_forward, None, params=("p", "shape", "dtype"),
                        differentiable=False)


def dropout(
    input: Tensor,
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
    *,
    key: Any = None,
    generator: Optional[Generator] = None,
) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)`` (when ``training``).

    The mask comes from ``key`` (a ``jax.random`` key: the same key, the same mask), or from
    ``generator``/the default generator (see :mod:`fgraph.random`).

    Example:
        >>> import fgraph as fg, jax
        >>> import fgraph.nn.functional as F
        >>> y = F.dropout(fg.ones(1000), 0.5, key=jax.random.PRNGKey(0))
        >>> sorted(set(y.tolist()))
        [0.0, 2.0]
        >>> F.dropout(fg.ones(3), 0.5, training=False).tolist()
        [1.0, 1.0, 1.0]
    """
    refuse_complex("dropout", input)
    _check_p(p, "dropout")
    no_inplace("dropout", inplace)
    check_float(input, "dropout")
    if not training or p == 0:
        return input
    if p == 1:
        return mul(input, 0.0)
    return mul(input, _mask(input, p, tuple(input.shape), key, generator, "dropout"))


def _check_p(p: Any, op: str) -> None:
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise OpError(f"{op}: dropout probability has to be between 0 and 1, but got {p!r}.")


def _mask(input: Tensor, p: float, shape: tuple, key: Any, generator: Optional[Generator], op: str) -> Tensor:
    """``keep / (1 - p)`` of ``shape``; refuses a generator's key while traced (it would be baked in)."""
    k = resolve_key(key, generator, op)
    mask = apply_op(_DROPOUT_MASK, (k,), _DROPOUT_MASK.Params(float(p), shape, input.dtype))
    check_implicit_key(mask._array, key is not None, k, op)
    return mask


def _feature_dropout(input: Tensor, p: float, training: bool, key: Any, generator: Optional[Generator],
                     op: str) -> Tensor:
    """Zero whole channels: one mask value per ``(n, c)``, broadcast over the remaining dims."""
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        return mul(input, 0.0)
    if input.ndim < 2:
        raise OpError(
            f"{op}: feature dropout requires at least 2 dimensions in the input (N, C, ...), got input of shape "
            f"{tuple(input.shape)}; use F.dropout for element-wise dropout."
        )
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return mul(input, _mask(input, p, shape, key, generator, op))


def _channel_dropout(input: Tensor, p: float, training: bool, inplace: bool, key: Any,
                     generator: Optional[Generator], op: str, spatial: int) -> Tensor:
    """dropout1d / dropout3d: ``(N, C, *spatial)`` or unbatched ``(C, *spatial)``."""
    _check_p(p, op)
    no_inplace(op, inplace)
    check_float(input, op)
    batched = input.ndim == spatial + 2
    x = input if batched else unsqueeze(input, 0)
    out = _feature_dropout(x, p, training, key, generator, op)
    if out is x:
        return input
    return out if batched else squeeze(out, 0)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False, *, key: Any = None,
              generator: Optional[Generator] = None) -> Tensor:
    """Zero whole channels of a ``(N, C, L)`` or ``(C, L)`` input with probability ``p``, scale the rest by
    ``1 / (1 - p)`` (when ``training``). ``key``/``generator`` as :func:`dropout`.

    Example:
        >>> import fgraph as fg, jax
        >>> import fgraph.nn.functional as F
        >>> y = F.dropout1d(fg.ones(2, 8, 3), 0.5, key=jax.random.PRNGKey(0))
        >>> all(len(set(row)) == 1 for row in y.reshape(16, 3).tolist())
        True
    """
    refuse_complex("dropout1d", input)
    _check_p(p, "dropout1d")
    if isinstance(input, Tensor) and input.ndim not in (2, 3):
        raise OpError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input (shape {tuple(input.shape)}). "
            "dropout1d drops whole channels of (N, C, L) or (C, L) inputs; use dropout2d/dropout3d or dropout."
        )
    return _channel_dropout(input, p, training, inplace, key, generator, "dropout1d", 1)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False, *, key: Any = None,
              generator: Optional[Generator] = None) -> Tensor:
    """Zero whole channels of a ``(N, C, H, W)`` input with probability ``p`` (PyTorch's ``dropout2d``).

    As in PyTorch, a 3D input is taken as ``(N, C, L)`` (channel-wise 1D dropout, with a
    warning) and other ranks warn and drop per ``(dim 0, dim 1)`` pair.

    Example:
        >>> import fgraph as fg, jax
        >>> import fgraph.nn.functional as F
        >>> y = F.dropout2d(fg.ones(1, 6, 2, 2), 0.5, key=jax.random.PRNGKey(1))
        >>> sorted({v for c in y[0].reshape(6, 4).tolist() for v in set(c)})
        [0.0, 2.0]
    """
    refuse_complex("dropout2d", input)
    return _warned_feature_dropout(input, p, training, inplace, key, generator, "dropout2d", 2)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False, *, key: Any = None,
              generator: Optional[Generator] = None) -> Tensor:
    """Zero whole channels of a ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input with probability ``p``.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.dropout3d(fg.ones(2, 3, 2, 2, 2), 0.5, training=False).shape
        (2, 3, 2, 2, 2)
    """
    refuse_complex("dropout3d", input)
    return _warned_feature_dropout(input, p, training, inplace, key, generator, "dropout3d", 3)


def _warned_feature_dropout(input: Tensor, p: float, training: bool, inplace: bool, key: Any,
                            generator: Optional[Generator], op: str, spatial: int) -> Tensor:
    _check_p(p, op)
    check_float(input, op)
    ndim = input.ndim
    if ndim not in (spatial + 1, spatial + 2):
        warnings.warn(
            f"{op}: Received a {ndim}-D input to {op}, which is deprecated and will result in an error in a future "
            f"release. To retain the behavior and silence this warning, please use dropout instead. Note that {op} "
            f"exists to provide channel-wise dropout on inputs with {spatial} spatial dimensions, a channel "
            f"dimension, and an optional batch dimension (i.e. {spatial + 1}D or {spatial + 2}D inputs).",
            stacklevel=3,
        )
    if spatial == 2:  # PyTorch keeps dropout2d's historical reading of 3D inputs as (N, C, L)
        if ndim == 3:
            warnings.warn(
                "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior is "
                "desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior will "
                "change in a future release to interpret the input as one without a batch dimension, i.e. shape "
                "(C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using dropout1d "
                "instead.",
                stacklevel=3,
            )
        no_inplace(op, inplace)
        return _feature_dropout(input, p, training, key, generator, op)
    return _channel_dropout(input, p, training, inplace, key, generator, op, spatial)


# -- embedding -----------------------------------------------------------------------------------------------------
def _position_weights(indices, num_weights, padding_idx, scale_grad_by_freq, dtype):
    """Per-index gradient weights: 0 at ``padding_idx``, ``1 / count`` with ``scale_grad_by_freq``."""
    w = jnp.ones(indices.shape, dtype)
    if padding_idx is not None:
        w = jnp.where(indices == padding_idx, 0, w)
    if scale_grad_by_freq:
        counts = jnp.zeros((num_weights,), dtype).at[indices].add(1)
        w = w / counts[indices]
    return w


def _embedding_forward(weight, indices, *, padding_idx, scale_grad_by_freq, weighted):
    rows = natural_sharding.take_rows(weight, indices)
    if weighted:  # double backward: padding positions read zeros
        w = _position_weights(indices, weight.shape[0], padding_idx, scale_grad_by_freq, weight.dtype)
        rows = rows * w.reshape(w.shape + (1,) * (rows.ndim - w.ndim))
    return rows


def _embedding_backward_forward(g, indices, *, num_weights, padding_idx, scale_grad_by_freq):
    if padding_idx is not None or scale_grad_by_freq:
        w = _position_weights(indices, num_weights, padding_idx, scale_grad_by_freq, g.dtype)
        g = g * w.reshape(w.shape + (1,) * (g.ndim - w.ndim))
    return natural_sharding.scatter_add_rows(num_weights, g, indices)


def _embedding_rule(ctx, g):
    indices = ctx.inputs[1]
    p = ctx.params
    params = _EMBEDDING_BACKWARD.Params(ctx.shapes[0][0], p.padding_idx, p.scale_grad_by_freq)
    return apply_op(_EMBEDDING_BACKWARD, (g, indices), params), None


def _embedding_backward_rule(ctx, g):
    # PyTorch's double backward: a gather that zeroes padding positions but does not rescale by
    # frequency (the rescaling is applied once, by the first backward's scatter, in every chain).
    _, indices = ctx.inputs
    params = _EMBEDDING.Params(ctx.params.padding_idx, False, True)
    return apply_op(_EMBEDDING, (g, indices), params), None


_EMBEDDING = declare("embedding", _embedding_forward, _embedding_rule,
                     params=("padding_idx", "scale_grad_by_freq", "weighted"), save_inputs=(1,))
_EMBEDDING_BACKWARD = declare("embedding_dense_backward", _embedding_backward_forward, _embedding_backward_rule,
                              params=("num_weights", "padding_idx", "scale_grad_by_freq"), save_inputs=(1,))


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: Optional[int] = None,
    max_norm: Optional[float] = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Rows of ``weight`` (``(num_embeddings, embedding_dim)``) at the integer ``input``.

    The row at ``padding_idx`` gets no gradient; ``scale_grad_by_freq`` divides each row's
    gradient by how often its index occurs in ``input``. Indices are checked eagerly
    (not under tracing). ``max_norm`` (which renormalises ``weight`` in place in PyTorch)
    raises ``NotImplementedError``; ``sparse=True`` gives the same gradient, dense.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> w = fg.tensor([[0.0, 0.0], [1.0, 2.0]], requires_grad=True)
        >>> F.embedding(fg.tensor([[1, 0, 1]]), w, padding_idx=0).tolist()
        [[[1.0, 2.0], [0.0, 0.0], [1.0, 2.0]]]
    """
    check_integer(input, "embedding", "input")
    check_float(weight, "embedding", "weight")
    if weight.ndim != 2:
        raise OpError(f"embedding: weight must be 2-D (num_embeddings, embedding_dim), got shape {tuple(weight.shape)}.")
    if max_norm is not None:
        raise NotImplementedError(
            "embedding: max_norm renormalises the weight in place in PyTorch, which immutable fgraph tensors cannot "
            "do; renormalise the weight explicitly (e.g. with F.normalize) before the lookup."
        )
    num = weight.shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise OpError(f"embedding: padding_idx {padding_idx} must be within num_embeddings ({num}).")
        padding_idx = int(padding_idx) % num
    if not is_traced(input) and input.numel():
        values = np.asarray(input._array)
        lo, hi = int(values.min()), int(values.max())
        if lo < 0 or hi >= num:
            raise IndexError(
                f"embedding: index {lo if lo < 0 else hi} is out of range for a weight with {num} rows "
                f"(indices must lie in [0, {num - 1}])."
            )
    params = _EMBEDDING.Params(padding_idx, bool(scale_grad_by_freq), False)
    return apply_op(_EMBEDDING, (weight, input), params)


# -- one-hot -------------------------------------------------------------------------------------------------------
def _one_hot_forward(x, *, num_classes, dtype):
    return (x[..., None] == jnp.arange(num_classes, dtype=x.dtype)).astype(dtype)


_ONE_HOT = declare("one_hot", _one_hot_forward, None, params=("num_classes", "dtype"), differentiable=False)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """``out[..., c] = 1`` where ``tensor == c``, else 0 (integer output, not differentiable).

    ``num_classes=-1`` means ``tensor.max() + 1``, which needs the values: it works eagerly
    only; under tracing pass ``num_classes``. Values are checked eagerly.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.nn.functional as F
        >>> F.one_hot(fg.tensor([1, 0])).tolist()
        [[0, 1], [1, 0]]
    """
    check_integer(tensor, "one_hot", "tensor")
    if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)) or num_classes < -1:
        raise OpError(f"one_hot: num_classes must be a non-negative int or -1, got {num_classes!r}.")
    traced = is_traced(tensor)
    if traced and num_classes == -1:
        raise OpError(
            "one_hot: num_classes=-1 infers the number of classes from the values, which is impossible under "
            "tracing (jax.jit/vmap or fg.compile); pass num_classes explicitly."
        )
    if not traced:
        if tensor.numel():
            values = np.asarray(tensor._array)
            lo, hi = int(values.min()), int(values.max())
            if lo < 0:
                raise OpError(f"one_hot: class values must be non-negative, got {lo}.")
            if num_classes == -1:
                num_classes = hi + 1
            elif hi >= num_classes:
                raise OpError(f"one_hot: class values must be smaller than num_classes ({num_classes}), got {hi}.")
        elif num_classes == -1:
            raise OpError("one_hot: cannot infer the number of classes from an empty tensor; pass num_classes.")
    dtype = np.dtype("int64") if x64_enabled() else np.dtype("int32")
    return apply_op(_ONE_HOT, (tensor,), _ONE_HOT.Params(int(num_classes), dtype))


#: Exported as ``fgraph.nn.functional.<name>``.
__all__ = ["linear", "bilinear", "normalize", "dropout", "dropout1d", "dropout2d", "dropout3d", "embedding", "one_hot",
           "cosine_similarity", "pairwise_distance"]
#: No Tensor methods: PyTorch has none for these.
TENSOR_METHODS: dict = {}
