"""Anomaly mode: nodes remember where the forward created them; backward errors and NaNs say so.

Inside ``detect_anomaly()``, every recorded node stores the user's forward
stack in ``node.metadata["traceback_"]``. During backward an exception raised
by a node, or (with ``check_nan=True``) a NaN in a gradient it returns, is
re-raised as an :class:`AnomalyError` naming the node and showing that stack.
Anomaly mode checks values on the host, so it runs node by node and is meant
for debugging, not for traced code.

Example:
    >>> import fgraph as fg
    >>> x = fg.tensor([0.0], requires_grad=True)
    >>> with fg.autograd.detect_anomaly():
    ...     y = fg.sqrt(x) * 0.0      # d/dx sqrt at 0 is inf; inf * 0 = nan
    ...     try:
    ...         fg.grad(y.sum(), [x])
    ...     except fg.autograd.AnomalyError as err:
    ...         print(str(err).splitlines()[0])
    Function 'SqrtBackward0' returned nan values in its 0th output.
"""
from __future__ import annotations

import os
import traceback
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp

from fgraph.autograd._record_state import RECORD_EXTRAS, push_extras
from fgraph.autograd._token_stack import TokenStack

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
           "AnomalyError"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class AnomalyError(RuntimeError):
    """A backward node failed or produced NaN while anomaly mode was on."""


def is_anomaly_enabled() -> bool:
    extras = RECORD_EXTRAS.get()
    return extras is not None and extras.anomaly is not None


def is_anomaly_check_nan_enabled() -> bool:
    extras = RECORD_EXTRAS.get()
    return extras is not None and bool(extras.anomaly)


class detect_anomaly:
    """Context manager (and decorator) turning anomaly mode on for its block."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = bool(check_nan)
        self._tokens = TokenStack()  # per thread: one instance may be entered by several threads

    def __enter__(self) -> None:
        self._tokens.push(push_extras(anomaly=self.check_nan))

    def __exit__(self, *exc: object) -> None:
        RECORD_EXTRAS.reset(self._tokens.pop())

    def __call__(self, func: Callable) -> Callable:
        def run_with_anomaly_detection(*args: Any, **kwargs: Any) -> Any:
            with detect_anomaly(self.check_nan):
                return func(*args, **kwargs)

        return run_with_anomaly_detection


class set_detect_anomaly(detect_anomaly):
    """Turn anomaly mode on or off: as a plain call for the current context, or as a context manager."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        super().__init__(check_nan)
        self.mode = bool(mode)
        self._previous = RECORD_EXTRAS.get()
        push_extras(anomaly=self.check_nan if self.mode else None)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        RECORD_EXTRAS.set(self._previous)


def forward_stack() -> list[str]:
    """The current Python stack without fgraph's own frames, formatted."""
    frames = [f for f in traceback.extract_stack()[:-1] if not f.filename.startswith(_PACKAGE_DIR)]
    return traceback.format_list(frames)


def _stack_of(fn: Any) -> str:
    meta = fn._metadata or {}
    stack = meta.get("traceback_")
    if not stack:
        return "(no forward traceback recorded: the node was created outside detect_anomaly)"
    return "".join(stack)


def anomaly_apply(check_nan: bool) -> Callable:
    """An ``apply`` for the engine that reports failures and NaNs with the node's forward stack."""

    def apply_with_checks(fn: Any, grads: list, needs: Optional[tuple]) -> tuple:
        try:
            outputs = fn.apply(grads, needs)
        except AnomalyError:
            raise
        except Exception as exc:
            raise AnomalyError(
                f"Error detected in {fn.name()}: {type(exc).__name__}: {exc}\n"
                f"Traceback of forward call that caused the error:\n{_stack_of(fn)}"
            ) from exc
        if check_nan:
            for i, g in enumerate(outputs):
                if g is None or isinstance(g._array, jax.core.Tracer):
                    continue
                if bool(jnp.isnan(g._array).any()):
                    raise AnomalyError(
                        f"Function '{fn.name()}' returned nan values in its {i}th output.\n"
                        f"Traceback of forward call that caused the error:\n{_stack_of(fn)}"
                    )
        return outputs

    return apply_with_checks
