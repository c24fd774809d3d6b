"""Complex numbers where the engine meets the rules, and the ops that refuse them.

PyTorch's convention for complex gradients (``dL/dx + i dL/dy``) is what the engine carries; a
rule is written as the plain transpose of its op (JAX's convention). :func:`conj_grad` converts
between the two -- conjugation is its own inverse -- and :mod:`fgraph.ops._declare` applies it
around every rule, which is the only place the convention lives (see ``docs/complex.md``).

Ops defined for real numbers only refuse complex tensors with one error. Primitives say so
when they are declared (``declare(..., real_only=True)``: :class:`RealOnly` checks when the
kernel is traced, so it costs nothing per call); composites whose parts all accept complex
numbers but whose meaning does not (``F.layer_norm``, ``F.mse_loss``, average pooling...)
call :func:`refuse_complex` first, wherever PyTorch refuses them too.

Example:
    >>> import fgraph as fg
    >>> z = fg.complex(fg.tensor([1.0]), fg.tensor([2.0]))
    >>> try:
    ...     fg.relu(z)
    ... except fg.OpError as e:
    ...     print(str(e).split(";")[0])
    relu: complex tensors are not supported (shape (1,) complex64)
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from fgraph.errors import OpError

__all__ = ["conj_grad", "complex_refused", "refuse_complex", "ComplexRefused", "RealOnly"]

_DEFAULT_FIX = "take the real part (x.real), the magnitude (x.abs()) or the angle (x.angle()) first"


def conj_grad(g: Any) -> Any:
    """``conj(g)`` for a complex gradient (a Tensor), a real one as it is: PyTorch's convention <-> the rules'."""
    if g.dtype.kind != "c":
        return g
    from fgraph.ops.complex_parts import CONJ
    from fgraph.ops._declare import apply_unary

    return apply_unary(CONJ, g)


class ComplexRefused(TypeError):
    """A ``real_only`` op was traced on a complex array (turned into :func:`complex_refused`'s OpError)."""


class RealOnly:
    """A ``real_only`` op's forward: refuses complex arrays when traced (a real signature compiles as before)."""

    __slots__ = ("forward", "__weakref__")  # jax.jit keeps a weak reference to what it compiles

    def __init__(self, forward: Callable) -> None:
        self.forward = forward

    def __call__(self, *arrays: Any) -> Any:
        for a in arrays:
            if getattr(a, "dtype", None) is not None and a.dtype.kind == "c":
                raise ComplexRefused()
        return self.forward(*arrays)


def complex_refused(op: str, described: str, fix: Optional[str] = None) -> OpError:
    """The error for op ``op`` called on complex tensors (``described``: their shapes and dtypes)."""
    return OpError(f"{op}: complex tensors are not supported ({described}); it is defined for real numbers "
                   f"only, as in PyTorch: {fix or _DEFAULT_FIX}.")


def refuse_complex(op: str, *tensors: Any, fix: Optional[str] = None) -> None:
    """Raise :func:`complex_refused`'s error if any of ``tensors`` (``None`` and numbers allowed) is complex."""
    for t in tensors:
        dtype = getattr(t, "dtype", None)
        if dtype is not None and getattr(dtype, "kind", None) == "c":
            described = ", ".join(f"shape {tuple(x.shape)} {x.dtype}" for x in tensors if hasattr(x, "shape"))
            raise complex_refused(op, described, fix)
