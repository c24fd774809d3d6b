"""A gradient takes its input's sharding: what ``grad`` and ``backward`` return for a sharded tensor.

A data-parallel weight gradient is a sum over a sharded batch; the contraction kernels give it
the natural sharding of that sum (see :mod:`fgraph.ops._natural_sharding`), which for a parameter
sharded FSDP-style is replicated, not the parameter's. PyTorch returns a gradient on its tensor's
device; fgraph returns it with its tensor's sharding (a slice of the replicated sum: the
reduce-scatter of FSDP), so optimizer state built from it is sharded like the parameter too.
Tensors on one device, and tensors of the same sharding, are returned untouched (one type check).
"""
from __future__ import annotations

from typing import Any

import jax
from jax.sharding import NamedSharding

from fgraph.tensor import Tensor, _wrap

__all__ = ["like_input"]


def like_input(grad: Any, x: Any) -> Any:
    """``grad`` with the sharding of ``x`` when ``x`` is an array sharded over a mesh (eager or traced with
    Explicit axes); otherwise ``grad`` itself.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.autograd._leaf_sharding import like_input
        >>> x = fg.ones(2)
        >>> like_input(x * 2, x).tolist()
        [2.0, 2.0]
    """
    if not isinstance(grad, Tensor) or not isinstance(x, Tensor):
        return grad
    target = x._array
    if isinstance(target, jax.core.Tracer):
        return _traced(grad, target)
    sharding = getattr(target, "sharding", None)
    if type(sharding) is not NamedSharding or len(sharding.device_set) == 1:
        return grad
    g = grad._array
    if isinstance(g, jax.core.Tracer) or g.shape != target.shape:
        return grad
    if g.sharding == sharding or g.sharding.is_equivalent_to(sharding, g.ndim):
        return grad
    if grad.grad_fn is not None:  # create_graph: the move stays differentiable
        return grad.to(sharding)
    return _wrap(jax.device_put(g, sharding))


def _traced(grad: Tensor, target: Any) -> Tensor:
    if grad.grad_fn is not None:
        return grad
    want = jax.typeof(target).sharding
    mesh = getattr(want, "mesh", None)
    g = grad._array
    if mesh is None or mesh.empty or not mesh.explicit_axes or g.shape != target.shape:
        return grad
    if jax.typeof(g).sharding.spec == want.spec:
        return grad
    return _wrap(jax.sharding.reshard(g, want))
