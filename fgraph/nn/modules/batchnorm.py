"""Batch normalization layers: ``BatchNorm1d``, ``BatchNorm2d``, ``BatchNorm3d`` (PyTorch's arguments and buffers).

Each normalises every channel (dim 1) of its input with the statistics of the
batch in training mode and with the running statistics in eval mode, then applies
the learned per-channel ``weight`` and ``bias`` (``affine=True``).

The buffers are PyTorch's, in PyTorch's order: ``running_mean`` (zeros),
``running_var`` (ones) and ``num_batches_tracked`` (int64 with JAX's x64 mode on,
int32 otherwise). fgraph tensors are immutable, so a training forward *rebinds*
them (``self.running_mean = new``) instead of writing in place; the new values are
computed without recording a graph, with PyTorch's formula::

    running_mean = (1 - momentum) * running_mean + momentum * batch_mean
    running_var  = (1 - momentum) * running_var  + momentum * unbiased_batch_var

``momentum=None`` uses the cumulative moving average (``momentum = 1 /
num_batches_tracked``), computed on tensors, so a forward stays JAX-traceable.

Example:
    >>> import fgraph as fg
    >>> bn = fg.nn.BatchNorm1d(2)
    >>> bn
    BatchNorm1d(2, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
    >>> y = bn(fg.tensor([[1.0, 2.0], [3.0, 6.0]]))
    >>> [round(v, 4) for v in y[:, 0].tolist()]
    [-1.0, 1.0]
    >>> [round(v, 4) for v in bn.running_mean.tolist()], bn.num_batches_tracked.tolist()
    ([0.2, 0.4], 1)
"""
from __future__ import annotations

from typing import Any, Optional, Union

import jax
import jax.numpy as jnp
import numpy as np

from fgraph._dtypes import x64_enabled
from fgraph.autograd.grad_mode import no_grad
from fgraph.errors import OpError
from fgraph.nn import functional as F
from fgraph.nn.functional._utils import check_tensor
from fgraph.nn.modules._running_stats import updated_running_stats
from fgraph.nn.modules._factory import check_positive_int, full_buffer, register_affine, reset_affine, zeros_buffer
from fgraph.nn.modules.module import Module
from fgraph.ops.reduction import mean, var
from fgraph.tensor import Tensor, _wrap

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]

Momentum = Optional[Union[float, Tensor]]


def index_dtype() -> np.dtype:
    """``num_batches_tracked``'s dtype: int64 (torch.long) with x64 on, else int32, the widest JAX allows."""
    return np.dtype(np.int64) if x64_enabled() else np.dtype(np.int32)


def _refill(t: Tensor, value: Any) -> Tensor:
    """A new buffer like ``t`` (shape, dtype, device) filled with ``value``."""
    data = t._array
    out = jnp.full(data.shape, value, data.dtype)
    if not isinstance(data, jax.core.Tracer):
        out = jax.device_put(out, data.sharding)
    return _wrap(out)


def _array_of(t: Optional[Tensor]) -> Any:
    return None if t is None else t._array


def blend(running: Tensor, batch_stat: Tensor, factor: Momentum) -> Tensor:
    """``(1 - factor) * running + factor * batch_stat`` in ``running``'s dtype (no graph: callers use no_grad)."""
    if isinstance(factor, Tensor):
        factor = factor.to(running.dtype)
    return ((1 - factor) * running + factor * batch_stat.to(running.dtype)).to(running.dtype)


def _default_num_batches_tracked(module: Module, state_dict: dict, prefix: str, *args: Any) -> None:
    """PyTorch loads checkpoints without ``num_batches_tracked`` (saved before it existed) keeping the current count."""
    key = prefix + "num_batches_tracked"
    if module.track_running_stats and module.num_batches_tracked is not None and key not in state_dict:
        state_dict[key] = module.num_batches_tracked


class _NormBase(Module):
    """The common part of batch and instance normalization (``torch.nn.modules.batchnorm._NormBase``)."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: Optional[float] = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        name = type(self).__name__
        self.num_features = check_positive_int(num_features, "num_features", name)
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        register_affine(self, (num_features,), affine, bias, dtype, device, name)
        if track_running_stats:
            self.register_buffer("running_mean", zeros_buffer((num_features,), dtype, device, name))
            self.register_buffer("running_var", full_buffer((num_features,), 1, dtype, device, name))
            self.register_buffer("num_batches_tracked", full_buffer((), 0, index_dtype(), device, name))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.register_load_state_dict_pre_hook(_default_num_batches_tracked)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Running mean back to 0, running variance to 1, ``num_batches_tracked`` to 0 (buffers rebound)."""
        if self.track_running_stats:
            self.running_mean = _refill(self.running_mean, 0)
            self.running_var = _refill(self.running_var, 1)
            self.num_batches_tracked = _refill(self.num_batches_tracked, 0)

    def reset_parameters(self) -> None:
        """Reset the running statistics; ``weight`` to ones and ``bias`` to zeros (PyTorch's initialisation)."""
        self.reset_running_stats()
        reset_affine(self)

    def _check_input_dim(self, input: Tensor) -> None:
        raise NotImplementedError

    def _check_channels(self, input: Tensor, dim: int, *tensors: Optional[Tensor]) -> None:
        """The input's channel count must equal ``num_features`` whenever a per-channel tensor is used."""
        if all(t is None for t in tensors) or input.shape[dim] == self.num_features:
            return
        raise OpError(
            f"{type(self).__name__}: expected input with {self.num_features} channels (num_features) at dim {dim}, "
            f"got input of shape {tuple(input.shape)}; build the layer with num_features={input.shape[dim]} "
            f"or fix the input's layout (channels at dim {dim})."
        )

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


def _rank_error(layer: str, expected: str, input: Tensor, layout: str) -> ValueError:
    return ValueError(
        f"{layer}: expected {expected} input (got {input.ndim}D input); input shape {tuple(input.shape)}: "
        f"{layer} takes {layout}."
    )


class _BatchNorm(_NormBase):
    def forward(self, input: Tensor) -> Tensor:
        check_tensor(input, type(self).__name__)
        self._check_input_dim(input)
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_buffers = not self.training or self.track_running_stats
        running_mean = self.running_mean if use_buffers else None
        running_var = self.running_var if use_buffers else None
        self._check_channels(input, 1, self.weight, self.bias, running_mean, running_var)
        if bn_training:
            out = F.batch_norm(input, None, None, self.weight, self.bias, True, 0.0, self.eps)
        else:
            out = F.batch_norm(input, running_mean, running_var, self.weight, self.bias, False, 0.0, self.eps)
        count = self.num_batches_tracked if self.training and self.track_running_stats else None
        if bn_training and (running_mean is not None or running_var is not None or count is not None):
            self._update_running_stats(input, running_mean, running_var, count)
        return out

    def _update_running_stats(self, input: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
                              count: Optional[Tensor]) -> None:
        """Rebind the buffers after a training batch (PyTorch's formulas: ``_running_stats.py``)."""
        dims = (0,) + tuple(range(2, input.ndim))
        momentum = self.momentum
        if isinstance(momentum, Tensor) or (momentum is None and count is None):
            self._blend_running_stats(input, running_mean, running_var, count, dims)
            return
        new_mean, new_var, new_count = updated_running_stats(
            input._array, _array_of(running_mean), _array_of(running_var), _array_of(count), dims, momentum)
        if new_count is not None:
            self.num_batches_tracked = _wrap(new_count)
        if new_mean is not None:
            self.running_mean = _wrap(new_mean)
        if new_var is not None:
            self.running_var = _wrap(new_var)

    def _blend_running_stats(self, input: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
                             count: Optional[Tensor], dims: tuple) -> None:
        """The update op by op: a Tensor momentum (or no batch count to average over)."""
        factor: Momentum = 0.0 if self.momentum is None else self.momentum
        if count is not None:
            count = count + 1
            self.num_batches_tracked = count
        with no_grad():
            x = input.detach()
            if running_mean is not None:
                self.running_mean = blend(running_mean, mean(x, dim=dims), factor)
            if running_var is not None:
                self.running_var = blend(running_var, var(x, dim=dims, correction=1), factor)


class BatchNorm1d(_BatchNorm):
    """Batch normalization over a 2D ``(N, C)`` or 3D ``(N, C, L)`` input.

    Example:
        >>> import fgraph as fg
        >>> bn = fg.nn.BatchNorm1d(3, momentum=None).eval()
        >>> bn(fg.ones(4, 3, 5)).shape
        (4, 3, 5)
    """

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim not in (2, 3):
            raise _rank_error("BatchNorm1d", "2D or 3D", input, "(N, C) or (N, C, L); use BatchNorm2d for (N, C, H, W)")


class BatchNorm2d(_BatchNorm):
    """Batch normalization over a 4D ``(N, C, H, W)`` input.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.BatchNorm2d(3, affine=False)(fg.randn(2, 3, 4, 4)).shape
        (2, 3, 4, 4)
    """

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim != 4:
            raise _rank_error("BatchNorm2d", "4D", input, "(N, C, H, W); add a batch dim with unsqueeze(0)")


class BatchNorm3d(_BatchNorm):
    """Batch normalization over a 5D ``(N, C, D, H, W)`` input.

    Example:
        >>> import fgraph as fg
        >>> fg.nn.BatchNorm3d(2)(fg.randn(2, 2, 3, 3, 3)).shape
        (2, 2, 3, 3, 3)
    """

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim != 5:
            raise _rank_error("BatchNorm3d", "5D", input, "(N, C, D, H, W); add a batch dim with unsqueeze(0)")
