"""Forward-mode AD: dual tensors, with ``torch.autograd.forward_ad``'s names and semantics.

Inside ``with dual_level():``, ``make_dual(primal, tangent)`` returns a new record (records
are immutable) that carries ``tangent``; every op then computes its output's tangent as it
runs, ``unpack_dual(out)`` returns ``(primal, tangent)``, and leaving the level drops the
tangents. Forward mode gives a Jacobian-vector product in one forward pass: the cheap
direction when a function has few inputs and many outputs.

What fgraph adds to PyTorch's forward AD:

* **Levels nest** (PyTorch supports one): a tangent computed at an inner level is itself a
  dual tensor at the outer ones, as nested ``jax.jvp``, so forward-over-forward gives
  second derivatives.
* **One source of truth.** No op has a second, forward rule: a primitive's tangent is
  ``jax.jvp`` of its forward kernel (:mod:`fgraph.autograd._forward_rules`), run as an op of
  its own, so tangents are recorded on the autograd graph (``fg.grad`` of a tangent is
  reverse-over-forward) and have tangents themselves (forward-over-forward). Composites
  need nothing. Custom :class:`~fgraph.autograd.Function`\\ s give theirs with
  ``jvp(ctx, *tangents)``, as in PyTorch.

As in PyTorch: tangents flow under ``fg.no_grad()`` too; integer and bool outputs carry
none; ``detach()`` drops them; ``fg.grad`` of a function of dual tensors returns dual
gradients (forward-over-reverse: the tangent of a gradient is a Hessian-vector product),
with or without ``create_graph``. A tangent must have its primal's shape and dtype.

The tangents live in a table keyed by the record, not in the record, so ops pay nothing
for forward mode unless a dual level is open (one counter read).

Example:
    >>> import fgraph as fg
    >>> import fgraph.autograd.forward_ad as fwAD
    >>> x = fg.tensor([1.0, 2.0])
    >>> with fwAD.dual_level():
    ...     y = fg.sin(fwAD.make_dual(x, fg.tensor([1.0, 0.5]))) * 3
    ...     primal, tangent = fwAD.unpack_dual(y)
    >>> [round(v, 4) for v in tangent.tolist()]   # 3 cos(x) * (1, 0.5)
    [1.6209, -0.6242]
"""
from __future__ import annotations

import contextvars
import functools
import weakref
from typing import Any, Callable, NamedTuple, Optional, TypeVar

from fgraph.lazy._deferred import eager_section
from fgraph.tensor import Tensor, _rewrap

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "UnpackedDualTensor"]

F = TypeVar("F", bound=Callable[..., Any])


class _Level:
    """One ``dual_level``: a token (tangents are keyed by it, so a level entered again is a new one)."""

    __slots__ = ("index", "eager", "__weakref__")

    def __init__(self, index: int) -> None:
        self.index = index
        self.eager = eager_section()  # dual numbers run op by op: deferred dispatch waits outside the level

    def __repr__(self) -> str:
        return f"<dual level {self.index}>"


#: The open levels of this context, outermost first.
_LEVELS: contextvars.ContextVar[tuple] = contextvars.ContextVar("fgraph_dual_levels", default=())
#: Open levels over every context: while 0, ops skip forward mode after one read of this list.
OPEN = [0]


def enter_dual_level() -> int:
    """Open a new dual level (innermost) and return its index (0 for the first), as PyTorch's."""
    levels = _LEVELS.get()
    level = _Level(len(levels))
    level.eager.__enter__()
    _LEVELS.set(levels + (level,))
    OPEN[0] += 1
    return len(levels)


def exit_dual_level(*, level: Optional[int] = None) -> None:
    """Close the innermost dual level (``level``, if given, must be its index); its tangents are gone."""
    levels = _LEVELS.get()
    if not levels:
        raise RuntimeError("exit_dual_level: no dual level is open; open one with enter_dual_level() or "
                           "`with fwAD.dual_level():`.")
    if level is not None and level != levels[-1].index:
        raise RuntimeError(f"exit_dual_level: level {level} is not the innermost open level "
                           f"({levels[-1].index}); levels close innermost first.")
    _LEVELS.set(levels[:-1])
    OPEN[0] -= 1
    levels[-1].eager.__exit__()


class dual_level:
    """Context manager (and decorator) for a dual level: ``with dual_level(): ...``.

    Entering returns the level's index. Levels nest: make duals at an outer level, then
    at an inner one, for forward-over-forward derivatives.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.autograd.forward_ad as fwAD
        >>> with fwAD.dual_level() as level:
        ...     d = fwAD.make_dual(fg.tensor(2.0), fg.tensor(1.0))
        ...     level, fwAD.unpack_dual(d * d).tangent.item()
        (0, 4.0)
    """

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc: Any) -> None:
        exit_dual_level()

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with dual_level():
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


def open_levels() -> tuple:
    """The open levels of this context, outermost first (empty outside ``dual_level``)."""
    return _LEVELS.get() if OPEN[0] else ()


class masked_to:
    """Only the levels before index ``k`` stay open: a level-``k`` tangent is differentiated by the outer
    levels only (it is not dual at its own level, nor at an inner one), as nested ``jax.jvp``."""

    __slots__ = ("levels", "token")

    def __init__(self, levels: tuple) -> None:
        self.levels = levels

    def __enter__(self) -> None:
        self.token = _LEVELS.set(self.levels)

    def __exit__(self, *exc: Any) -> None:
        _LEVELS.reset(self.token)


# -- the tangents of records ------------------------------------------------------------------------
#: id(record) -> (weak reference to it, {level: tangent}). An entry goes with its record.
_TANGENTS: dict[int, tuple] = {}


def _forget(key: int, ref: weakref.ref, table: dict = _TANGENTS) -> None:
    entry = table.get(key)  # the table as an argument: it outlives this module's globals at exit
    if entry is not None and entry[0] is ref:
        del table[key]


def tangents_of(t: Any) -> Optional[dict]:
    """``{level: tangent}`` of a record (levels open or not), or ``None``."""
    entry = _TANGENTS.get(id(t))
    if entry is None or entry[0]() is not t:
        return None
    return entry[1]


def tangent_at(t: Any, level: _Level) -> Optional[Tensor]:
    """``t``'s tangent at ``level``, or ``None``."""
    found = tangents_of(t)
    return None if found is None else found.get(level)


def attach(t: Tensor, tangents: dict) -> Tensor:
    """Give the new record ``t`` its tangents (done once, as it is made: records stay immutable)."""
    if tangents:
        key = id(t)
        _TANGENTS[key] = (weakref.ref(t, functools.partial(_forget, key)), tangents)
    return t


def remember_result(node: Any, output_nr: int, tangents: dict) -> None:
    """Keep on ``node`` (an op's node whose rule reads its result) the tangents of its output ``output_nr``:
    the node keeps the result's array, and a rule run on dual gradients (forward-over-reverse) needs them."""
    found = result_tangents(node)
    if found is None:
        found = node.result_tangents = {}
    found[output_nr] = tangents


def result_tangents(node: Any) -> Optional[dict]:
    """``{output_nr: {level: tangent}}`` remembered on ``node``, or ``None``."""
    return getattr(node, "result_tangents", None)


def with_result_tangents(node: Any, result: Any) -> Any:
    """The records a node's rule reads as its result, with the tangents they had when they were made."""
    found = result_tangents(node)
    if not found:
        return result
    if isinstance(result, tuple):
        return tuple(attach(r, found.get(i, {})) for i, r in enumerate(result))
    return attach(result, found.get(0, {}))


def _innermost(op: str) -> _Level:
    levels = open_levels()
    if not levels:
        raise RuntimeError(f"{op}: no dual level is open; call it inside `with fgraph.autograd.forward_ad."
                           "dual_level():` (tangents exist only there).")
    return levels[-1]


def _level_at(index: Optional[int], op: str) -> _Level:
    if index is None:
        return _innermost(op)
    for level in open_levels():
        if level.index == index:
            return level
    raise RuntimeError(f"{op}: level {index} is not open (open levels: {[lv.index for lv in open_levels()]}).")


def make_dual(tensor: Tensor, tangent: Tensor, *, level: Optional[int] = None) -> Tensor:
    """A new record with ``tensor``'s values and graph, carrying ``tangent`` at ``level`` (the innermost).

    ``tangent`` must have ``tensor``'s shape and dtype; ``tensor`` must be floating point or
    complex, and not dual at that level already.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.autograd.forward_ad as fwAD
        >>> with fwAD.dual_level():
        ...     d = fwAD.make_dual(fg.tensor([1.0, 2.0]), fg.tensor([0.5, 0.5]))
        ...     fwAD.unpack_dual(d).tangent.tolist()
        [0.5, 0.5]
    """
    from fgraph._dtypes import is_differentiable_dtype

    lv = _level_at(level, "make_dual")
    for name, t in (("tensor", tensor), ("tangent", tangent)):
        if not isinstance(t, Tensor):
            raise TypeError(f"make_dual: {name} must be an fgraph Tensor, got {type(t).__name__}.")
    if not is_differentiable_dtype(tensor.dtype):
        raise ValueError(f"make_dual: expected primal to be floating point or complex, but got {tensor.dtype} "
                         f"(shape {tensor.shape}); convert it with .float() first.")
    if tangent.shape != tensor.shape or tangent.dtype != tensor.dtype:
        raise ValueError(
            f"make_dual: the tangent (shape {tangent.shape}, {tangent.dtype}) must have the primal's shape and dtype "
            f"(shape {tensor.shape}, {tensor.dtype}); reshape it or cast it with tangent.to(primal.dtype).")
    existing = tangents_of(tensor) or {}
    if lv in existing:
        raise RuntimeError(f"make_dual: the tensor already has a tangent at level {lv.index}; unpack_dual(t).primal "
                           "gives it without one.")
    return attach(_rewrap(tensor._array, tensor._edge), {**existing, lv: tangent})


class UnpackedDualTensor(NamedTuple):
    """What :func:`unpack_dual` returns: the primal and its tangent (``None`` where there is none)."""

    primal: Tensor
    tangent: Optional[Tensor]


def unpack_dual(tensor: Any, *, level: Optional[int] = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor`` at ``level`` (the innermost); ``tangent`` is ``None`` for a
    tensor that is not dual there (or outside every dual level). ``primal`` is a record on ``tensor``'s
    graph without that tangent.

    Example:
        >>> import fgraph as fg
        >>> import fgraph.autograd.forward_ad as fwAD
        >>> with fwAD.dual_level():
        ...     p, t = fwAD.unpack_dual(fwAD.make_dual(fg.tensor(1.0), fg.tensor(2.0)) * 5)
        >>> p.item(), t.item()
        (5.0, 10.0)
    """
    levels = open_levels()
    found = tangents_of(tensor) if isinstance(tensor, Tensor) else None
    if not levels or not found:
        return UnpackedDualTensor(tensor, None)
    lv = _level_at(level, "unpack_dual")
    tangent = found.get(lv)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    rest = {k: v for k, v in found.items() if k is not lv}
    return UnpackedDualTensor(attach(_rewrap(tensor._array, tensor._edge), rest), tangent)


def carry(src: Tensor, new: Tensor) -> Tensor:
    """``new`` (a record made from ``src``'s values: a fresh leaf, a copy cut from its graph) with ``src``'s
    tangents: cutting the autograd graph leaves forward mode alone, as PyTorch's transforms do."""
    found = tangents_of(src) if OPEN[0] else None
    return attach(new, dict(found)) if found else new


def is_dual(t: Any) -> bool:
    """Whether ``t`` has a tangent at an open level."""
    found = tangents_of(t)
    return bool(found) and any(lv in found for lv in open_levels())
