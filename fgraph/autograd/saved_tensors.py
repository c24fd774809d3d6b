"""Saved-tensor hooks: change what backward nodes keep for their rules.

Inside ``saved_tensors_hooks(pack, unpack)``, every tensor a new node saves is
passed to ``pack`` and the node keeps whatever ``pack`` returns; when the rule
runs, ``unpack`` turns it back into a Tensor. Only the innermost pair applies,
as in PyTorch. The output a node saves is packed as a detached record (the node
never holds its own output strongly); backward re-attaches it.

Example:
    >>> import fgraph as fg
    >>> from fgraph.autograd.graph import saved_tensors_hooks
    >>> packed = []
    >>> def pack(t):
    ...     packed.append(t.shape)
    ...     return t.to(fg.float16)
    >>> def unpack(t):
    ...     return t.to(fg.float32)
    >>> x = fg.tensor([1.0, 2.0], requires_grad=True)
    >>> with saved_tensors_hooks(pack, unpack):
    ...     y = (x * x).sum()
    >>> packed
    [(2,), (2,)]
    >>> fg.grad(y, [x])[0].tolist()
    [2.0, 4.0]
"""
from __future__ import annotations

import contextvars
from typing import Any, Callable, Optional

import jax

from fgraph.autograd._record_state import RECORD_EXTRAS, push_extras
from fgraph.autograd._token_stack import TokenStack
from fgraph.autograd.grad_mode import _GRAD_ENABLED

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks", "Packed", "pack_saved", "unpack_saved"]


class Packed:
    """What a node keeps for a saved tensor under hooks: the packed object, the unpack hook,
    and the tensor's graph edge (``None`` for a node's own output), so the unpacked
    tensor is reconnected to the graph for higher-order derivatives, as in PyTorch."""

    __slots__ = ("value", "unpack", "edge")

    #: Whether any saved tensor was ever packed in this process: until one is, a backward pass need
    #: not look for packed saved tensors in its nodes.
    ever_made = False

    def __init__(self, value: Any, unpack: Callable[[Any], Any], edge: Any) -> None:
        Packed.ever_made = True
        self.value = value
        self.unpack = unpack
        self.edge = edge

    def get(self) -> Any:
        from fgraph.tensor import Tensor, _rewrap

        token = push_extras(saved_hooks=None)  # what the unpack hook's own ops save is not packed again
        try:
            out = self.unpack(self.value)
        finally:
            RECORD_EXTRAS.reset(token)
        if not isinstance(out, Tensor):
            raise TypeError(
                f"saved_tensors_hooks: unpack_hook returned a {type(out).__name__}; it must return an fgraph Tensor."
            )
        return _rewrap(out._array, self.edge)


def pack_saved(values: Any, hooks: tuple) -> Any:
    """Pack the Tensors among a node's saved inputs (other saved values stay as they are)."""
    from fgraph.tensor import Tensor

    pack, unpack = hooks
    # As in PyTorch, the pack hook runs with grad mode off; its own ops are not packed again
    # (``lambda t: 2 * t`` would otherwise recurse forever).
    token = push_extras(saved_hooks=None)
    grad_token = _GRAD_ENABLED.set(False)
    try:
        return tuple(Packed(pack(v), unpack, v._edge) if isinstance(v, Tensor) else v for v in values)
    finally:
        _GRAD_ENABLED.reset(grad_token)
        RECORD_EXTRAS.reset(token)


def unpack_saved(values: tuple) -> tuple:
    return tuple(v.get() if type(v) is Packed else v for v in values)


class saved_tensors_hooks:
    """Context manager installing ``pack_hook(tensor) -> Any`` and ``unpack_hook(Any) -> Tensor``."""

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook
        self._tokens = TokenStack()  # per thread: one instance may be entered by several threads

    def __enter__(self) -> "saved_tensors_hooks":
        message = _DISABLED_MESSAGE.get()
        if message is not None:
            raise RuntimeError(message)
        self._tokens.push(push_extras(saved_hooks=(self.pack_hook, self.unpack_hook)))
        return self

    def __exit__(self, *exc: object) -> None:
        RECORD_EXTRAS.reset(self._tokens.pop())


#: The message of the innermost active ``disable_saved_tensors_hooks`` (None: hooks allowed).
_DISABLED_MESSAGE: contextvars.ContextVar[Optional[str]] = contextvars.ContextVar(
    "fgraph_saved_hooks_disabled", default=None
)


class disable_saved_tensors_hooks:
    """Refuse saved-tensor hooks inside this block: installing one raises ``RuntimeError(error_message)``.

    As in PyTorch, entering the block while hooks are installed raises the same error.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.autograd.graph import disable_saved_tensors_hooks, saved_tensors_hooks
        >>> with disable_saved_tensors_hooks("no hooks in this library"):
        ...     try:
        ...         saved_tensors_hooks(str, str).__enter__()
        ...     except RuntimeError as e:
        ...         print(e)
        no hooks in this library
    """

    def __init__(self, error_message: str = "saved tensors default hooks are disabled") -> None:
        self.error_message = error_message
        self._tokens = TokenStack()  # per thread: one instance may be entered by several threads

    def __enter__(self) -> None:
        extras = RECORD_EXTRAS.get()
        if extras is not None and extras.saved_hooks is not None:
            raise RuntimeError(self.error_message)
        self._tokens.push(_DISABLED_MESSAGE.set(self.error_message))

    def __exit__(self, *exc: object) -> None:
        _DISABLED_MESSAGE.reset(self._tokens.pop())


def _to_host(t: Any) -> tuple:
    cpu = jax.devices("cpu")[0]
    devices = getattr(t._array, "devices", None)
    home = next(iter(devices())) if callable(devices) and not isinstance(t._array, jax.core.Tracer) else None
    return jax.device_put(t._array, cpu), home


def _from_host(packed: tuple) -> Any:
    from fgraph.tensor import _wrap

    data, home = packed
    return _wrap(data if home is None else jax.device_put(data, home))


class save_on_cpu(saved_tensors_hooks):
    """Keep saved tensors in host memory and move them back to their device for backward.

    ``pin_memory`` is accepted for PyTorch compatibility (JAX manages host buffers).
    """

    def __init__(self, pin_memory: bool = False) -> None:
        super().__init__(_to_host, _from_host)
