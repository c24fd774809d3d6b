"""Grad modes: whether ops record graph nodes.

The mode lives in a :mod:`contextvars` variable, so each thread (and each asyncio
task) sees its own mode; switching it in one thread never leaks into another.

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([1.0, 2.0], requires_grad=True)
    >>> with fg.no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
"""
from __future__ import annotations

import contextvars
import functools
import inspect
import sys
from typing import Any, Callable, TypeVar

from fgraph.autograd._token_stack import TokenStack

__all__ = [
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
]

_GRAD_ENABLED: contextvars.ContextVar[bool] = contextvars.ContextVar("fgraph_grad_enabled", default=True)
_INFERENCE: contextvars.ContextVar[bool] = contextvars.ContextVar("fgraph_inference_mode", default=False)

F = TypeVar("F", bound=Callable[..., Any])

#: Fast accessor used on the hot path of every op.
grad_enabled_now = _GRAD_ENABLED.get


def is_grad_enabled() -> bool:
    """Return True if ops currently record graph nodes."""
    return _GRAD_ENABLED.get()


def is_inference_mode_enabled() -> bool:
    """Return True inside an active :class:`inference_mode` block."""
    return _INFERENCE.get()


class _GradModeContext:
    """Sets grad mode to ``self._grad`` on entry and restores it on exit.

    Instances are reentrant and also work as decorators, with or without
    parentheses (``@fg.no_grad`` and ``@fg.no_grad()``). On a generator function
    the mode holds inside each step of the generator and is restored between
    steps, as in PyTorch.
    """

    _grad: bool = True
    _inference: bool | None = None  # None: leave inference mode as it is

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls._decorates_bare(args, kwargs):
            return cls()(args[0])  # used as ``@no_grad`` without parentheses
        self = super().__new__(cls)
        self._stack = TokenStack()  # per thread: one instance may be entered by several threads
        return self

    @classmethod
    def _decorates_bare(cls, args: tuple, kwargs: dict) -> bool:
        return len(args) == 1 and not kwargs and callable(args[0])

    def __enter__(self) -> None:
        tokens = [_GRAD_ENABLED.set(self._grad)]
        if self._inference is not None:
            tokens.append(_INFERENCE.set(self._inference))
        self._stack.push(tokens)

    def __exit__(self, *exc: object) -> None:
        tokens = self._stack.pop()
        if len(tokens) == 2:
            _INFERENCE.reset(tokens[1])
        _GRAD_ENABLED.reset(tokens[0])

    def __call__(self, func: F) -> F:
        grad, inference = self._grad, self._inference
        if inspect.isgeneratorfunction(func):
            return _wrap_generator(func, grad, inference)  # type: ignore[return-value]

        @functools.wraps(func)
        def run_in_mode(*args: Any, **kwargs: Any) -> Any:
            with _Mode(grad, inference):
                return func(*args, **kwargs)

        return run_in_mode  # type: ignore[return-value]


class _Mode:
    """Grad (and inference) mode for one ``with`` block: what the decorators enter around each call."""

    __slots__ = ("grad", "inference", "tokens")

    def __init__(self, grad: bool, inference: bool | None) -> None:
        self.grad = grad
        self.inference = inference

    def __enter__(self) -> None:
        self.tokens = (_GRAD_ENABLED.set(self.grad),
                       None if self.inference is None else _INFERENCE.set(self.inference))

    def __exit__(self, *exc: object) -> None:
        grad_token, inference_token = self.tokens
        if inference_token is not None:
            _INFERENCE.reset(inference_token)
        _GRAD_ENABLED.reset(grad_token)


def _wrap_generator(func: Callable, grad: bool, inference: bool | None) -> Callable:
    """PyTorch's ``_wrap_generator``: the mode is set around every ``send``/``throw``/``close``."""

    @functools.wraps(func)
    def generator_in_mode(*args: Any, **kwargs: Any) -> Any:
        gen = func(*args, **kwargs)
        try:
            with _Mode(grad, inference):
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with _Mode(grad, inference):
                        gen.close()
                    raise
                except BaseException:
                    with _Mode(grad, inference):
                        response = gen.throw(*sys.exc_info())
                else:
                    with _Mode(grad, inference):
                        response = gen.send(request)
        except StopIteration as stop:
            return stop.value

    return generator_in_mode


class no_grad(_GradModeContext):
    """Disable graph recording inside the block or decorated function.

    Example:
        >>> import fgraph as fg
        >>> with fg.no_grad():
        ...     fg.is_grad_enabled()
        False
    """

    _grad = False


class enable_grad(_GradModeContext):
    """Enable graph recording inside the block, even within :class:`no_grad`.

    Example:
        >>> import fgraph as fg
        >>> with fg.no_grad(), fg.enable_grad():
        ...     fg.is_grad_enabled()
        True
    """

    _grad = True


class set_grad_enabled(_GradModeContext):
    """Set grad mode to ``mode`` as a context manager, a decorator, or a plain call.

    Used as a plain call (``fg.set_grad_enabled(False)``) the mode stays switched
    in the current context until switched again, as in PyTorch.

    Example:
        >>> import fgraph as fg
        >>> with fg.set_grad_enabled(False):
        ...     fg.is_grad_enabled()
        False
    """

    @classmethod
    def _decorates_bare(cls, args: tuple, kwargs: dict) -> bool:
        return False  # set_grad_enabled(mode) always takes the mode

    def __init__(self, mode: bool) -> None:
        from fgraph._checks import check_bool

        self._grad = check_bool(mode, "set_grad_enabled", "mode")
        self._previous = _GRAD_ENABLED.get()
        _GRAD_ENABLED.set(self._grad)

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        _GRAD_ENABLED.set(self._previous)

    def __call__(self, func: F) -> F:
        _GRAD_ENABLED.set(self._previous)  # decorating must not switch the mode
        return super().__call__(func)


class inference_mode(_GradModeContext):
    """Like :class:`no_grad`, and marks the block as inference-only.

    fgraph's tensors are immutable, so there are no version counters to skip;
    inference mode is :class:`no_grad` plus :func:`is_inference_mode_enabled`.

    Example:
        >>> import fgraph as fg
        >>> with fg.inference_mode():
        ...     fg.is_inference_mode_enabled()
        True
    """

    @classmethod
    def _decorates_bare(cls, args: tuple, kwargs: dict) -> bool:
        return len(args) == 1 and not kwargs and not isinstance(args[0], bool) and callable(args[0])

    def __init__(self, mode: bool = True) -> None:
        self._grad = not mode
        self._inference = bool(mode)
