"""Per-thread stacks of context-variable reset tokens, for mode context managers.

A mode context manager (``no_grad``, ``detect_anomaly``, ``saved_tensors_hooks``...)
sets a :mod:`contextvars` variable on entry and resets it with the token on exit. One
instance may be entered by several threads at once (a module-level
``NO_GRAD = fg.no_grad()``), and a token can only be reset in the context (the thread)
that created it, so each thread keeps its own last-in-first-out stack of tokens.
"""
from __future__ import annotations

from threading import get_ident
from typing import Any

__all__ = ["TokenStack"]


class TokenStack:
    """The tokens of one context manager's open ``with`` blocks, one stack per thread.

    Only the owning thread touches its own list; the dict of lists changes by single
    (atomic) operations, so no lock is needed.
    """

    __slots__ = ("_stacks",)

    def __init__(self) -> None:
        self._stacks: dict[int, list] = {}

    def push(self, token: Any) -> None:
        ident = get_ident()
        stack = self._stacks.get(ident)
        if stack is None:
            stack = self._stacks[ident] = []
        stack.append(token)

    def pop(self) -> Any:
        ident = get_ident()
        stack = self._stacks.get(ident)
        if not stack:
            raise RuntimeError("context manager exited on a thread that did not enter it (or exited twice)")
        token = stack.pop()
        if not stack:
            del self._stacks[ident]
        return token
