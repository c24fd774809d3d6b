"""More complex-number functions: ``angle``, ``polar``, ``sgn``, ``isreal``,
``view_as_real``, ``view_as_complex``.

Each is a composite of :mod:`fgraph.ops.complex_parts`' ``real``/``imag``/``complex`` and real ops,
so its gradients follow PyTorch's convention for complex tensors (``dL/dx + i dL/dy``)
exactly as those do, to any order. ``view_as_real``/``view_as_complex`` return new
arrays, not views: fgraph tensors are immutable, so nothing can observe the difference.

Example:
    >>> import fgraph as fg
    >>> z = fg.polar(fg.tensor([2.0]), fg.tensor([0.0]))
    >>> fg.view_as_real(fg.conj(z)).tolist()
    [[2.0, -0.0]]
    >>> fg.angle(fg.tensor([-1.0, 1.0], dtype=fg.float64)).tolist()
    [3.141592653589793, 0.0]
"""
from __future__ import annotations

import math

import jax.numpy as jnp

from fgraph._dtypes import default_float_dtype
from fgraph.errors import OpError
from fgraph.ops._linalg_util import check_tensor
from fgraph.ops.complex_parts import complex, imag, real
from fgraph.ops.elementwise import cos, eq, lt, sign, sin, to_dtype, where
from fgraph.ops.elementwise_math import hypot
from fgraph.ops.rounding import isnan
from fgraph.ops.shape import stack
from fgraph.ops.structure import select
from fgraph.ops.trigonometric import atan2
from fgraph.tensor import Tensor, _wrap


def _is_complex(x: Tensor) -> bool:
    return bool(jnp.issubdtype(x.dtype, jnp.complexfloating))


def _check_complex(x: Tensor, op: str, fix: str) -> None:
    if not _is_complex(x):
        raise OpError(f"{op}: expected a complex tensor, got dtype {x.dtype} (shape {x.shape}); {fix}")


def angle(input: Tensor) -> Tensor:
    """The argument of each element: ``atan2(imag, real)``; for real input ``pi`` where negative, else 0
    (NaN stays NaN), with zero gradient, as ``torch.angle``. Integer input gives the default float dtype.

    Example:
        >>> import fgraph as fg
        >>> round(fg.angle(fg.complex(fg.tensor([0.0]), fg.tensor([1.0]))).item() * 2, 6)
        3.141593
    """
    check_tensor(input, "angle")
    if _is_complex(input):
        return atan2(imag(input), real(input))
    x = input if jnp.issubdtype(input.dtype, jnp.floating) else to_dtype(input, default_float_dtype())
    pi = _wrap(jnp.asarray(math.pi, x.dtype))
    return where(isnan(x), x, where(lt(x, 0), pi, 0.0))


def polar(abs: Tensor, angle: Tensor) -> Tensor:
    """The complex tensor ``abs * (cos(angle) + i sin(angle))`` (both float32 or both float64), as ``torch.polar``.

    Example:
        >>> import fgraph as fg
        >>> z = fg.polar(fg.tensor([2.0]), fg.tensor([3.141592653589793 / 2]))
        >>> [round(abs(v), 6) for v in fg.view_as_real(z)[0].tolist()]
        [0.0, 2.0]
    """
    check_tensor(abs, "polar", "abs")
    check_tensor(angle, "polar", "angle")
    if abs.dtype != angle.dtype or abs.dtype not in (jnp.float32, jnp.float64):
        raise OpError(f"polar: expected abs and angle to be both float32 or both float64, got {abs.dtype} and "
                      f"{angle.dtype}; convert with .float() or .double().")
    return complex(abs * cos(angle), abs * sin(angle))


def sgn(input: Tensor) -> Tensor:
    """``input / |input|`` for complex tensors (0 at 0), ``sign(input)`` for real ones, as ``torch.sgn``.

    The gradient at 0 is 0, as in PyTorch.

    Example:
        >>> import fgraph as fg
        >>> z = fg.complex(fg.tensor([3.0, 0.0], dtype=fg.float64), fg.tensor([4.0, 0.0], dtype=fg.float64))
        >>> fg.view_as_real(fg.sgn(z)).tolist()
        [[0.6, 0.8], [0.0, 0.0]]
    """
    check_tensor(input, "sgn")
    if not _is_complex(input):
        return sign(input)
    re, im = real(input), imag(input)
    zero = eq(hypot(re, im), 0)
    # The modulus of a value moved off 0: hypot's gradient at (0, 0) is 0/0, and a where() after it would
    # still multiply that NaN by 0 (second derivatives of |z| at 0 were NaN; PyTorch's are 0).
    re, im = where(zero, 1.0, re), where(zero, 0.0, im)
    r = hypot(re, im)
    return complex(where(zero, 0.0, re / r), where(zero, 0.0, im / r))


def isreal(input: Tensor) -> Tensor:
    """Whether each element is real: ``imag == 0`` for complex tensors, all True otherwise (a bool tensor).

    Example:
        >>> import fgraph as fg
        >>> fg.isreal(fg.complex(fg.tensor([1.0, 1.0]), fg.tensor([0.0, 2.0]))).tolist()
        [True, False]
    """
    check_tensor(input, "isreal")
    if not _is_complex(input):
        return _wrap(jnp.ones(input.shape, jnp.bool_))
    return eq(imag(input.detach()), 0)


def view_as_real(input: Tensor) -> Tensor:
    """A complex tensor as a real one with a last dimension of 2 (real and imaginary parts), as
    ``torch.view_as_real`` (a new tensor rather than a view: fgraph tensors are immutable).

    Example:
        >>> import fgraph as fg
        >>> fg.view_as_real(fg.complex(fg.tensor([1.0]), fg.tensor([2.0]))).tolist()
        [[1.0, 2.0]]
    """
    check_tensor(input, "view_as_real")
    _check_complex(input, "view_as_real", "build one with fg.complex(real, imag) or fg.view_as_complex(x).")
    return stack([real(input), imag(input)], -1)


def view_as_complex(input: Tensor) -> Tensor:
    """A float32/float64 tensor whose last dimension has size 2 as a complex tensor, as ``torch.view_as_complex``.

    Example:
        >>> import fgraph as fg
        >>> fg.imag(fg.view_as_complex(fg.tensor([[1.0, 2.0]]))).tolist()
        [2.0]
    """
    check_tensor(input, "view_as_complex")
    if input.dtype not in (jnp.float32, jnp.float64):
        raise OpError(f"view_as_complex: expected a float32 or float64 tensor, got {input.dtype}; "
                      "convert it with .float() or .double().")
    if input.ndim == 0 or input.shape[-1] != 2:
        raise OpError(f"view_as_complex: the last dimension must have size 2 (real, imaginary), got shape "
                      f"{tuple(input.shape)}.")
    return complex(select(input, -1, 0), select(input, -1, 1))


__all__ = ["angle", "polar", "sgn", "isreal", "view_as_real", "view_as_complex"]
#: Installed as ``Tensor.<name>`` methods (PyTorch has no ``Tensor.polar``/``view_as_*``).
TENSOR_METHODS = {"angle": angle, "sgn": sgn, "isreal": isreal}
