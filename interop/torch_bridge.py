"""Moving tensors between PyTorch and fgraph: :func:`from_torch` and :func:`to_torch`.

Both go through DLPack (bfloat16, float8, bool, complex and every integer type
included) and **copy** by default, so neither side can change the other's values:
a later in-place op on the torch tensor (``t.add_(1)``) never reaches the fgraph
tensor, whose promise is to be immutable, and an in-place op on the torch result of
``to_torch`` never reaches the JAX buffer. ``to_torch(x, copy=False)`` shares the
buffer instead (zero-copy; then do not modify the torch tensor in place). For a
zero-copy import, ``fg.from_dlpack(t.detach())`` aliases the torch buffer on CPU (then
do not modify ``t`` in place); docs/arrays.md has the whole table of conversions.

The graph does not cross: ``from_torch`` gives an fgraph leaf, ``to_torch`` a torch
leaf; each side differentiates its own computation. torch is imported only when one
of these functions is called; fgraph never depends on it.

Example:
    >>> import torch  # doctest: +SKIP
    >>> from interop import from_torch, to_torch
    >>> t = torch.tensor([1.0, 2.0], dtype=torch.bfloat16)  # doctest: +SKIP
    >>> x = from_torch(t)  # doctest: +SKIP
    >>> x.dtype, to_torch(x * 2).tolist()  # doctest: +SKIP
    (dtype(bfloat16), [2.0, 4.0])
"""
from __future__ import annotations

from typing import Any, Optional

import jax

from fgraph.nn.parameter import _make_parameter
from fgraph.tensor import Tensor, _array_from_torch, _init_leaf, _is_torch_tensor, _new_object

__all__ = ["from_torch", "to_torch"]


def _import_torch(op: str) -> Any:
    try:
        import torch
    except ImportError:
        raise ImportError(
            f"{op} needs PyTorch, which is not installed (fgraph itself never needs it). Install it with "
            "`pip install torch`."
        ) from None
    return torch


def from_torch(t: Any, requires_grad: Optional[bool] = None) -> Tensor:
    """An fgraph leaf Tensor holding a copy of the torch tensor ``t``'s values.

    The dtype is kept (float64 needs JAX's x64 mode; with it off 64-bit dtypes
    become 32-bit, as for any array given to JAX). A CUDA tensor stays on the GPU
    when JAX has one, otherwise it is copied through host memory; a CPU tensor
    lands on JAX's default device. ``requires_grad`` defaults to
    ``t.requires_grad``; a ``torch.nn.Parameter`` becomes an ``fg.nn.Parameter``.
    Conjugate and negative views are resolved, non-contiguous tensors made
    contiguous.

    Example:
        >>> import torch  # doctest: +SKIP
        >>> from interop import from_torch
        >>> x = from_torch(torch.arange(3.0, requires_grad=True))  # doctest: +SKIP
        >>> x.requires_grad, x.tolist()  # doctest: +SKIP
        (True, [0.0, 1.0, 2.0])
    """
    torch = _import_torch("from_torch")
    if not isinstance(t, torch.Tensor):
        kind = "an fgraph Tensor already" if isinstance(t, Tensor) else f"a {type(t).__name__}"
        raise TypeError(f"from_torch: expected a torch.Tensor, got {kind}; fg.tensor(...) converts other arrays.")
    if t.is_sparse or t.layout != torch.strided:
        raise TypeError(f"from_torch: only dense (strided) tensors convert, got layout {t.layout}; call .to_dense().")
    if t.is_quantized:
        raise TypeError("from_torch: quantized tensors do not convert; call .dequantize() first.")
    if requires_grad is None:
        requires_grad = bool(t.requires_grad)
    array = _array_from_torch(t)
    if isinstance(t, torch.nn.Parameter):
        return _make_parameter(array, requires_grad)
    out = _new_object(Tensor)
    _init_leaf(out, array, requires_grad)
    return out


def to_torch(x: Any, *, copy: bool = True, requires_grad: Optional[bool] = None) -> Any:
    """A torch tensor with the values of the fgraph Tensor (or JAX array) ``x``.

    The dtype is kept (bfloat16 included). With ``copy=True`` (the default) the
    result owns its memory; ``copy=False`` shares the JAX buffer (zero-copy): do not
    modify that torch tensor in place, JAX assumes its arrays never change. A GPU
    array becomes a CUDA tensor when torch has CUDA, else it is copied to the CPU.
    ``requires_grad`` defaults to ``x.requires_grad``; the result is a torch leaf.

    Example:
        >>> import fgraph as fg
        >>> from interop import to_torch
        >>> to_torch(fg.tensor([1, 2], dtype=fg.int16))  # doctest: +SKIP
        tensor([1, 2], dtype=torch.int16)
    """
    torch = _import_torch("to_torch")
    if isinstance(x, Tensor):
        data = x.array
        if requires_grad is None:
            requires_grad = x.requires_grad
    elif isinstance(x, jax.Array):
        data = x
    elif _is_torch_tensor(x):
        raise TypeError("to_torch: x is already a torch.Tensor.")
    else:
        raise TypeError(f"to_torch: expected an fgraph Tensor or a JAX array, got {type(x).__name__}.")
    if isinstance(data, jax.core.Tracer):
        raise TypeError(
            "to_torch: x is traced (inside fg.compile, jax.jit or vmap) and has no values yet; convert the "
            "tensors the traced function returns."
        )
    try:
        out = torch.from_dlpack(data)
    except (RuntimeError, TypeError, ValueError, BufferError):  # e.g. a GPU array and a CPU-only torch
        out = torch.from_dlpack(jax.device_put(data, jax.devices("cpu")[0]))
    if copy:
        out = out.clone()
    if requires_grad:
        out.requires_grad_(True)
    return out
