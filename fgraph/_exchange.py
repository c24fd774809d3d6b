"""Arrays in from other libraries (DLPack), and a Tensor as a JAX pytree node.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> jax.tree_util.tree_leaves({"w": fg.ones(2)})
    [Array([1., 1.], dtype=float32)]
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from fgraph.lazy._array import LazyArray
from fgraph.tensor import Tensor, _wrap

__all__ = ["from_dlpack"]


def from_dlpack(ext_tensor: Any, *, copy: Optional[bool] = None) -> Tensor:
    """A leaf Tensor (not requiring grad) from any DLPack producer: a NumPy array, torch tensor, JAX array...

    ``copy=None`` shares the producer's memory where JAX can (same device, a buffer
    aligned as XLA needs; otherwise JAX copies): a later in-place change of a NumPy or
    torch producer then shows in the Tensor. ``copy=True`` always copies.

    Example:
        >>> import numpy as np
        >>> import fgraph as fg
        >>> fg.from_dlpack(np.arange(3, dtype=np.int16), copy=True)
        tensor([0, 1, 2], dtype=int16)
    """
    if not hasattr(ext_tensor, "__dlpack__"):
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ (a NumPy array, torch tensor, JAX array...), "
                        f"got {type(ext_tensor).__name__}; fg.tensor(data) converts other data.")
    if isinstance(ext_tensor, np.ndarray) and not ext_tensor.flags.writeable:
        return _wrap(jnp.array(ext_tensor))  # NumPy refuses to export read-only arrays through DLPack
    try:  # copy=True is ours to do below: JAX's CUDA backend cannot import with a copy (UNIMPLEMENTED)
        array = jax.dlpack.from_dlpack(ext_tensor, copy=False if copy is False else None)
    except (RuntimeError, TypeError, ValueError, BufferError) as exc:
        raise TypeError(f"from_dlpack: cannot import a {type(ext_tensor).__name__} (shape "
                        f"{tuple(getattr(ext_tensor, 'shape', ()))}, dtype {getattr(ext_tensor, 'dtype', '?')}) through "
                        f"DLPack: {exc} Use fg.tensor(...) (for torch: interop.from_torch, which detaches).") from None
    return _wrap(jnp.array(array, copy=True) if copy else array)  # JAX may alias even when asked to copy


# A Tensor is a pytree node whose one leaf is its array (key ``.array``); the graph is not in the tree, and
# unflattening makes a plain record of whatever leaf JAX gives (array, tracer, sentinel). A pending value of
# deferred dispatch is run first: as a leaf it would be a pytree node of its own, and a jax.jit call given it
# would trace once more for the changed structure.
def _flatten_keyed(t: Tensor) -> tuple:
    return ((_ARRAY_KEY, _leaf(t._array)),), None


def _flatten(t: Tensor) -> tuple:
    return (_leaf(t._array),), None


def _leaf(array: Any) -> Any:
    if type(array) is LazyArray and not array.abstract:
        return array.value()
    return array


def _unflatten(aux: None, children: Sequence[Any]) -> Tensor:
    return _wrap(children[0])


_ARRAY_KEY = jax.tree_util.GetAttrKey("array")
jax.tree_util.register_pytree_with_keys(Tensor, _flatten_keyed, _unflatten, _flatten)
