"""Clear errors for what cannot run inside a compiled step: Python decisions on traced values.

JAX reports these as tracer conversion errors from deep inside its own code; a user
wants the line of *their* function that asked for a concrete value, and what to write
instead.
"""
from __future__ import annotations

import contextlib
import linecache
import os
from typing import Iterator, Optional

import jax

from fgraph.errors import OpError

__all__ = ["CompileError", "translating_tracer_errors"]

_SKIP = tuple(os.path.dirname(m.__file__) + os.sep for m in (jax,)) + (
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,
)

_FIXES = {
    "bool": "a Python `if`/`while`/`and`/`or` (or bool()) on a tensor: use fg.where(cond, a, b) to choose "
            "between values, or decide on static values (shapes, arguments listed in static_argnums)",
    "value": "reading a value (.item(), .tolist(), .numpy(), float(t), int(t)): return the tensor from the "
             "compiled function and read it after the call",
    "mask": "boolean-mask indexing (x[mask]), whose result shape depends on the values: use "
            "fg.where(mask, x, 0) and masked reductions instead",
}


class CompileError(RuntimeError):
    """A compiled function did something that needs concrete values while it is traced."""


def _what(exc: BaseException) -> str:
    if isinstance(exc, jax.errors.NonConcreteBooleanIndexError):
        return "mask"
    names = set()
    tb = exc.__traceback__
    while tb is not None:
        names.add(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    if isinstance(exc, jax.errors.TracerBoolConversionError) or "__bool__" in names:
        return "bool"
    if "getitem" in names or "__getitem__" in names:
        return "mask"
    return "value"


def _user_frame(exc: BaseException) -> Optional[tuple[str, int]]:
    tb = exc.__traceback__
    found = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(_SKIP) and "site-packages" not in filename:
            found = (filename, tb.tb_lineno)
        tb = tb.tb_next
    return found


@contextlib.contextmanager
def translating_tracer_errors(name: str) -> Iterator[None]:
    """Re-raise JAX's tracer errors from a compiled function as a :class:`CompileError` naming the line."""
    try:
        yield
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError,
            jax.errors.TracerIntegerConversionError, jax.errors.NonConcreteBooleanIndexError) as exc:
        where = _user_frame(exc)
        if where is None:
            at = "inside the function"
        else:
            line = linecache.getline(where[0], where[1]).strip()
            at = f"at {where[0]}:{where[1]}: `{line}`"
        raise CompileError(
            f"fgraph.compile({name}): {at} needs the value of a traced tensor, which does not exist while the "
            f"step is compiled ({_FIXES[_what(exc)]})."
        ) from exc
    except (OpError, TypeError, RuntimeError) as exc:
        # fgraph's own refusals of traced values (boolean masks, item() under a trace): add the user's line.
        if isinstance(exc, CompileError) or "trace" not in str(exc):
            raise
        where = _user_frame(exc)
        at = "" if where is None else f" at {where[0]}:{where[1]}: `{linecache.getline(*where).strip()}`"
        raise CompileError(f"fgraph.compile({name}){at}: {exc}") from exc
