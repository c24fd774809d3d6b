"""Exceptions raised for user mistakes.

Each message names the op, the shapes and dtypes involved, and how to fix the call.
"""
from __future__ import annotations

__all__ = ["OpError", "GradError", "TracedValueError", "DeviceUnavailableError"]


class OpError(ValueError, TypeError):
    """An op was called with arguments it cannot take (shapes, dtypes, indices).

    Subclasses both ``ValueError`` and ``TypeError`` so code written against
    either keeps working.
    """


class GradError(RuntimeError):
    """``grad``/``backward`` was asked for something the graph cannot give."""


class TracedValueError(TypeError):
    """A traced tensor's value was read on the host (``t.item()``, ``if t > 0:``) under ``jax.jit``/``vmap``.

    A ``TypeError``, as JAX's own tracer conversion errors are.
    """


class DeviceUnavailableError(RuntimeError):
    """Data was asked onto a device this machine does not have (``x.to("cuda")`` without a GPU).

    The message names the portable idiom: ``device = "cuda" if fg.cuda.is_available() else "cpu"``.
    """
