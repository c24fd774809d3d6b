"""``fg.autocast``: run the ops PyTorch's autocast lists name in a low dtype (or in float32), per region.

Inside ``with fg.autocast("cpu", dtype=fg.bfloat16):`` an op on PyTorch's *lower precision* list
(matmul, linear, convolutions, bmm, addmm, ...) casts its floating inputs (not float64 ones) to the
low dtype; an op on the *float32* list (losses, prod, linear algebra, FFTs on CPU; also exp, log,
softmax, norms, sums... on CUDA) casts low-precision inputs up to float32; a *promote* op casts its
inputs to their widest floating type. Other ops run in whatever dtype they get, as in PyTorch. The
casts are ordinary differentiable ops, so parameters stay float32 and their gradients come back in
float32. Regions nest, ``enabled=False`` turns autocast off inside one, and an autocast region works
inside ``fg.compile`` (it only changes which ops are recorded).

Example:
    >>> import fgraph as fg
    >>> lin = fg.nn.Linear(3, 2)
    >>> with fg.autocast("cpu", dtype=fg.bfloat16):
    ...     y = lin(fg.ones(4, 3))
    ...     loss = fg.nn.functional.mse_loss(y, fg.zeros(4, 2))
    >>> y.dtype, loss.dtype
    (dtype(bfloat16), dtype('float32'))
"""
from __future__ import annotations

import contextvars
import functools
from typing import Any, Callable, NamedTuple, Optional, TypeVar

import jax.numpy as jnp
import numpy as np

from fgraph.amp._policy import FP32, LOWER, POLICIES, PROMOTE

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype", "is_autocast_available", "autocast_policy",
           "custom_fwd", "custom_bwd"]

F = TypeVar("F", bound=Callable[..., Any])

_DEFAULT_DTYPES = {"cpu": jnp.bfloat16, "cuda": jnp.float16, "gpu": jnp.float16}
_LOW = (np.dtype(jnp.bfloat16), np.dtype(jnp.float16))


class _State(NamedTuple):
    device_type: str
    dtype: np.dtype


_STATE: contextvars.ContextVar[Optional[_State]] = contextvars.ContextVar("fgraph_autocast", default=None)
#: How many enabled autocast regions are open in any thread: ops look at the state only when it is non-zero.
ACTIVE = [0]


class autocast:
    """A region (context manager or decorator) where listed ops run in ``dtype`` (``torch.autocast``).

    ``device_type``: ``"cpu"`` or ``"cuda"`` (PyTorch's per-device op lists); ``dtype`` defaults to
    bfloat16 on CPU and float16 on CUDA. ``cache_enabled`` is accepted (fgraph does not cache casts:
    a cast of the same parameter in one region is a separate op).

    Example:
        >>> import fgraph as fg
        >>> with fg.autocast("cpu"):
        ...     (fg.ones(2, 2) @ fg.ones(2, 2)).dtype
        dtype(bfloat16)
    """

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: Optional[bool] = None) -> None:
        if not isinstance(device_type, str) or device_type not in POLICIES:
            raise ValueError(f"autocast: device_type must be 'cpu' or 'cuda', got {device_type!r} (the device "
                             "type whose op lists apply, e.g. fg.autocast('cpu', dtype=fg.bfloat16)).")
        low = np.dtype(_DEFAULT_DTYPES[device_type] if dtype is None else dtype)
        if low not in _LOW:
            raise ValueError(f"autocast: dtype must be fg.bfloat16 or fg.float16, got {low}; autocast runs listed "
                             "ops in a lower precision than float32.")
        self.device_type, self.fast_dtype, self.enabled = device_type, low, bool(enabled)
        self._tokens: list = []

    def __enter__(self) -> "autocast":
        state = _State(self.device_type, self.fast_dtype) if self.enabled else None
        self._tokens.append((_STATE.set(state), state is not None))
        if state is not None:
            ACTIVE[0] += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        token, counted = self._tokens.pop()
        _STATE.reset(token)
        if counted:
            ACTIVE[0] -= 1

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with autocast(self.device_type, self.fast_dtype, self.enabled):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast has op lists for ``device_type`` (``"cpu"``, ``"cuda"``).

    Example:
        >>> import fgraph as fg
        >>> fg.amp.is_autocast_available("cpu")
        True
    """
    return device_type in POLICIES


def is_autocast_enabled(device_type: Optional[str] = None) -> bool:
    """Whether an enabled autocast region (for ``device_type``, if given) is open here.

    Example:
        >>> import fgraph as fg
        >>> with fg.autocast("cpu"):
        ...     fg.amp.is_autocast_enabled("cpu")
        True
    """
    state = _STATE.get()
    return state is not None and (device_type is None or state.device_type == device_type)


def get_autocast_dtype(device_type: str) -> Any:
    """The low dtype of the open region for ``device_type``, else that device type's default.

    Example:
        >>> import fgraph as fg
        >>> fg.amp.get_autocast_dtype("cpu")
        dtype(bfloat16)
    """
    state = _STATE.get()
    if state is not None and state.device_type == device_type:
        return state.dtype
    return np.dtype(_DEFAULT_DTYPES.get(device_type, jnp.bfloat16))


# -- the casts ---------------------------------------------------------------------------------------------
_FLOATING: dict = {}  # dtype -> whether it is a real floating type (bfloat16's NumPy kind is "V")


def _floating(x: Any) -> bool:
    from fgraph.tensor import Tensor

    if not isinstance(x, Tensor):
        return False
    dtype = x.dtype
    found = _FLOATING.get(dtype)
    if found is None:
        found = _FLOATING[dtype] = bool(jnp.issubdtype(dtype, jnp.floating))
    return found


def _cast_all(args: tuple, kwargs: Optional[dict], policy: str, state: _State) -> tuple:
    from fgraph.tensor import Tensor

    values = list(args) + ([] if kwargs is None else list(kwargs.values()))
    if policy == LOWER:
        target = state.dtype

        def eligible(x: Any) -> bool:  # float64 stays float64, as in PyTorch
            return _floating(x) and x.dtype != target and np.dtype(x.dtype) != np.float64
    elif policy == FP32:
        target = np.dtype(np.float32)

        def eligible(x: Any) -> bool:
            return _floating(x) and np.dtype(x.dtype) in _LOW
    else:
        floats = [np.dtype(x.dtype) for x in values if _floating(x)]
        if not floats:
            return args, kwargs
        target = functools.reduce(jnp.promote_types, floats)

        def eligible(x: Any) -> bool:
            return _floating(x) and np.dtype(x.dtype) != target

    def cast(x: Any) -> Any:
        return x.to(target) if isinstance(x, Tensor) and eligible(x) else x

    new_args = tuple(cast(a) for a in args)
    return new_args, None if kwargs is None else {k: cast(v) for k, v in kwargs.items()}


def cast_op_args(name: str, args: tuple) -> tuple:
    """``args`` of primitive ``name`` cast by the open region's policy (the hook in ``apply_op``)."""
    state = _STATE.get()
    if state is None:
        return args
    policy = POLICIES[state.device_type].get(name)
    if policy is None:
        return args
    return _cast_all(args, None, policy, state)[0]


def autocast_policy(name: str) -> Callable[[F], F]:
    """Mark a composite function as one autocast op named ``name`` (its torch name, e.g. ``"mse_loss"``):
    under autocast its Tensor arguments are cast by that op's policy and its own ops run as they get them."""
    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not ACTIVE[0]:
                return fn(*args, **kwargs)
            state = _STATE.get()
            policy = None if state is None else POLICIES[state.device_type].get(name)
            if policy is None:
                return fn(*args, **kwargs)
            args, kwargs = _cast_all(args, kwargs, policy, state)
            token = _STATE.set(None)  # the op's own ops run below autocast, as in PyTorch
            try:
                return fn(*args, **kwargs)
            finally:
                _STATE.reset(token)

        return wrapper  # type: ignore[return-value]

    return decorate


def custom_fwd(fwd: Optional[Callable] = None, *, device_type: str, cast_inputs: Any = None) -> Callable:
    """Decorate a custom Function's ``forward`` (``torch.amp.custom_fwd``): with ``cast_inputs``, inside an
    autocast region for ``device_type`` its floating Tensor arguments are cast to ``cast_inputs`` and it runs
    with autocast off; either way :func:`custom_bwd` runs ``backward`` under the autocast state ``forward`` had.

    Example:
        >>> import fgraph as fg
        >>> class Square(fg.autograd.Function):
        ...     @staticmethod
        ...     @fg.amp.custom_fwd(device_type="cpu", cast_inputs=fg.float32)
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x * x
        ...     @staticmethod
        ...     @fg.amp.custom_bwd(device_type="cpu")
        ...     def backward(ctx, g):
        ...         (x,) = ctx.saved_tensors
        ...         return 2 * x * g
        >>> with fg.autocast("cpu"):
        ...     Square.apply(fg.ones(2, dtype=fg.bfloat16)).dtype
        dtype('float32')
    """
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def forward(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        state = _STATE.get()
        ctx._fg_autocast_state = state if state is not None and state.device_type == device_type else None
        if cast_inputs is None or ctx._fg_autocast_state is None:
            return fwd(ctx, *args, **kwargs)
        target = np.dtype(cast_inputs)
        from fgraph.tensor import Tensor

        def cast(x: Any) -> Any:
            return x.to(target) if isinstance(x, Tensor) and _floating(x) and x.dtype != target else x

        ctx._fg_autocast_state = None
        token = _STATE.set(None)
        try:
            return fwd(ctx, *[cast(a) for a in args], **{k: cast(v) for k, v in kwargs.items()})
        finally:
            _STATE.reset(token)

    return forward


def custom_bwd(bwd: Optional[Callable] = None, *, device_type: str) -> Callable:
    """Decorate a custom Function's ``backward`` (``torch.amp.custom_bwd``): it runs under the autocast state
    its :func:`custom_fwd` ``forward`` ran under (see there for an example)."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def backward(ctx: Any, *grads: Any) -> Any:
        state = getattr(ctx, "_fg_autocast_state", None)
        if state is None:
            with autocast(device_type, enabled=False):
                return bwd(ctx, *grads)
        with autocast(state.device_type, state.dtype):
            return bwd(ctx, *grads)

    return backward
