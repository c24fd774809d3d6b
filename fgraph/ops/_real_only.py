"""The one error for a complex tensor given to an op that is defined for real numbers only.

Primitives say so when they are declared (``declare(..., real_only=True)``: checked when
the kernel is traced, so it costs nothing per call); composites whose parts all accept
complex numbers but whose meaning does not (``F.layer_norm``, ``F.mse_loss``, average
pooling...) call :func:`refuse_complex` first, wherever PyTorch refuses them too.

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

from typing import Any, Optional

from fgraph.errors import OpError

__all__ = ["complex_refused", "refuse_complex"]

_DEFAULT_FIX = "take the real part (x.real), the magnitude (x.abs()) or the angle (x.angle()) first"


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
