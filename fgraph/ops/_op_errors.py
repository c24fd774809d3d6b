"""How a failed op call is explained: an OpError naming the op, its arguments' shapes and dtypes, and the fix.

:func:`fgraph.ops._declare.apply_op` calls :func:`explain` when a kernel raises on the arguments it was given,
so no user mistake surfaces as a traceback from inside JAX.
"""
from __future__ import annotations

from typing import Any

from fgraph.errors import OpError
from fgraph.ops._complex import ComplexRefused, complex_refused
from fgraph.tensor import Tensor, _is_torch_tensor, _torch_message

__all__ = ["explain", "describe"]


def explain(op: Any, args: tuple, params: Any, exc: Exception) -> OpError:
    """The OpError for op ``op`` called on ``args`` (with ``params``) whose kernel raised ``exc``."""
    for i, a in enumerate(args):
        if _is_torch_tensor(a):
            return OpError(_torch_message(op.name, f"argument {i}", a))
        if isinstance(a, (list, tuple)):
            return OpError(f"{op.name}: argument {i} is a {type(a).__name__}; fgraph ops take Tensors: wrap it "
                           f"with fg.tensor(...) first.")
    described = ", ".join(describe(a) for a in args)
    if isinstance(exc, ComplexRefused):
        return complex_refused(op.name, described, op.complex_fix)
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    hint = op.hint(args, params) if op.hint is not None else ""
    settings = f" with {params._asdict()}" if params else ""
    msg = f"{op.name}: invalid arguments ({described}){settings}: {first_line}"
    if hint:
        msg += f". {hint}"
    return OpError(msg)


def describe(a: Any) -> str:
    """An argument in an error message: a tensor's shape and dtype, anything else's repr."""
    if isinstance(a, Tensor) or hasattr(a, "shape"):
        return f"shape {tuple(a.shape)} {a.dtype}"
    return repr(a)
