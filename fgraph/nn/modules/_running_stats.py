"""Batch norm's running-statistics update as one kernel call.

A training forward of ``BatchNorm*d`` rebinds three buffers with PyTorch's formulas::

    num_batches_tracked += 1
    running_mean = (1 - momentum) * running_mean + momentum * batch_mean
    running_var  = (1 - momentum) * running_var  + momentum * unbiased_batch_var

(``momentum=None``: ``1 / num_batches_tracked``, the cumulative average). Written with
fgraph ops that is about ten kernel dispatches per layer; here it is one jitted kernel
(one record under deferred dispatch), so a ResNet's forward dispatches about half as
many kernels. The statistics are the ``mean``/``var`` ops' formulas, in the input's
dtype, then cast to the buffer's dtype.

Example:
    >>> import jax.numpy as jnp
    >>> from fgraph.nn.modules._running_stats import updated_running_stats
    >>> x = jnp.array([[1.0, 2.0], [3.0, 6.0]])
    >>> mean, var, count = updated_running_stats(x, jnp.zeros(2), jnp.ones(2), jnp.array(0), (0,), 0.1)
    >>> [round(float(v), 4) for v in mean], [round(float(v), 4) for v in var], int(count)
    ([0.2, 0.4], [1.1, 1.7], 1)
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp

from fgraph._kernel_jit import kernel_jit, placed
from fgraph.lazy._state import LAZY
from fgraph.ops.reduction import _var_forward

__all__ = ["updated_running_stats"]

_KERNELS: dict = {}  # (dims, momentum) -> the jitted kernel (a stable object: deferred dispatch keys records by it)


def _blend(running: Any, batch_stat: Any, factor: Any) -> Any:
    return ((1 - factor) * running + factor * batch_stat.astype(running.dtype)).astype(running.dtype)


def _update(x: Any, running_mean: Optional[Any], running_var: Optional[Any], count: Optional[Any], *,
            dims: tuple, momentum: Optional[float]) -> tuple:
    new_count = None if count is None else count + 1
    factor: Any = momentum
    if momentum is None and (running_mean is not None or running_var is not None):
        # the cumulative moving average: 1 / (batches seen, this one included)
        factor = 1.0 / new_count.astype((running_mean if running_mean is not None else running_var).dtype)
    new_mean = None if running_mean is None else _blend(running_mean, jnp.mean(x, axis=dims), factor)
    new_var = None if running_var is None else _blend(
        running_var, _var_forward(x, dims=dims, correction=1, keepdim=False), factor)
    return new_mean, new_var, new_count


def _kernel(dims: tuple, momentum: Optional[float]) -> Callable:
    key = (dims, momentum)
    kernel = _KERNELS.get(key)
    if kernel is None:
        kernel = _KERNELS[key] = kernel_jit(functools.partial(_update, dims=dims, momentum=momentum))
    return kernel


def updated_running_stats(x: Any, running_mean: Optional[Any], running_var: Optional[Any], count: Optional[Any],
                          dims: tuple, momentum: Optional[float]) -> tuple:
    """``(running_mean, running_var, num_batches_tracked)`` after one training batch ``x`` (arrays; ``None``
    for a buffer the layer does not keep), reduced over ``dims``. ``momentum=None`` needs ``count``.
    One kernel call (recorded under deferred dispatch and ``fg.lazy``)."""
    kernel = _kernel(dims, None if momentum is None else float(momentum))
    lazy = LAZY.get()
    args = (x, running_mean, running_var, count)
    return placed(kernel)(*args) if lazy is None else lazy.call(kernel, args)
