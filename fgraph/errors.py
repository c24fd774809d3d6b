"""Exceptions raised for user mistakes.

Each message names the op, the shapes and dtypes involved, and how to fix the call.
"""
from __future__ import annotations

__all__ = ["OpError", "GradError", "TracedValueError", "DeviceUnavailableError", "TransformTypeError",
           "TransformValueError", "DimOutOfRangeError", "VmapSpecError", "VmapTracedValueError"]


class OpError(ValueError, TypeError, RuntimeError):
    """An op was called with arguments it cannot take (shapes, dtypes, indices).

    Subclasses ``ValueError`` and ``TypeError`` so code written against either keeps working, and
    ``RuntimeError``, the class torch raises for the same mistakes (a shape or dtype mismatch in an op
    or a layer), so ``except RuntimeError`` in code ported from PyTorch catches it.

    Example:
        >>> import fgraph as fg
        >>> try:
        ...     fg.nn.Linear(2, 2)(fg.zeros(3, 3))
        ... except RuntimeError as e:  # as with torch
        ...     print(type(e).__name__)
        OpError
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


# -- torch.func's exception classes ------------------------------------------------------------------
# fgraph raises TypeError/ValueError for a bad call; torch.func raises RuntimeError (IndexError for an
# out_dims out of range, ValueError for a malformed in_dims). Each class below is both, so
# ``except TypeError`` (fgraph's contract) and ``except RuntimeError`` (code ported from torch) catch it.
class TransformTypeError(TypeError, RuntimeError):
    """A :mod:`fgraph.func` transform got the wrong kind of value: an ``argnums`` that is not an int or a
    tuple of ints, ``has_aux=True`` without an ``(output, aux)`` pair, an output or aux that is not made of
    Tensors.

    A ``TypeError``, and a ``RuntimeError`` as torch.func raises in the same situation.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.errors import TransformTypeError
        >>> try:
        ...     fg.func.grad(lambda t: t.sum(), argnums=[0])(fg.ones(2))
        ... except RuntimeError as e:  # as with torch.func
        ...     isinstance(e, TypeError), isinstance(e, TransformTypeError)
        (True, True)
    """


class TransformValueError(ValueError, RuntimeError):
    """A :mod:`fgraph.func` transform got a value it cannot use: ``argnums`` out of range or repeated, an
    empty output, cotangents that do not match the output, names :func:`~fgraph.func.functional_call`
    cannot place, an unknown ``randomness``.

    A ``ValueError``, and a ``RuntimeError`` as torch.func raises in the same situation.

    Example:
        >>> import fgraph as fg
        >>> try:
        ...     fg.func.vmap(lambda t: t, randomness="bogus")
        ... except RuntimeError as e:
        ...     isinstance(e, ValueError)
        True
    """


class DimOutOfRangeError(ValueError, IndexError):
    """``vmap``'s ``out_dims`` names a dimension the output does not have.

    A ``ValueError``, and an ``IndexError`` as torch's "Dimension out of range".

    Example:
        >>> import fgraph as fg
        >>> try:
        ...     fg.func.vmap(lambda t: t, out_dims=3)(fg.ones(2, 3))
        ... except IndexError as e:
        ...     isinstance(e, ValueError)
        True
    """


class VmapSpecError(OpError):
    """``vmap``'s ``in_dims`` is not an int, ``None`` or a tuple (a list, a set, a string), or the
    vmapped function returned something other than Tensors.

    An :class:`OpError` (a ``ValueError`` as torch.func raises, and a ``TypeError`` as fgraph raised before).

    Example:
        >>> import fgraph as fg
        >>> try:
        ...     fg.func.vmap(lambda t: t, in_dims=[0])(fg.ones(2))
        ... except ValueError as e:
        ...     isinstance(e, TypeError)
        True
    """


class VmapTracedValueError(TracedValueError, RuntimeError):
    """A per-sample value was read on the host inside ``vmap`` (``t.item()``, ``if t > 0:``).

    A :class:`TracedValueError`, and a ``RuntimeError`` as torch.func raises for ``.item()`` under ``vmap``.

    Example:
        >>> import fgraph as fg
        >>> try:
        ...     fg.func.vmap(lambda t: t * t.sum().item())(fg.ones(2, 3))
        ... except RuntimeError as e:
        ...     isinstance(e, TypeError)
        True
    """
