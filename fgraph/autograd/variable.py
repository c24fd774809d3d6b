"""``torch.autograd.Variable``: the pre-0.4 wrapper, kept so that old code runs unchanged.

In PyTorch, ``Variable(t, requires_grad=True)`` has returned a plain ``Tensor`` since 0.4:
a new leaf with ``t``'s values, detached from ``t``'s graph, requiring grad as asked, and
``isinstance(x, Variable)`` is true of every tensor. fgraph's :class:`Variable` does the same
(it is not a type of its own: calling it returns an :class:`fgraph.Tensor`). New code writes
``x = t.detach().requires_grad_()`` or ``fg.tensor(values, requires_grad=True)``.

Example:
    >>> import fgraph as fg
    >>> from fgraph.autograd import Variable
    >>> x = Variable(fg.ones(2), requires_grad=True)
    >>> type(x).__name__, x.requires_grad, x.is_leaf, isinstance(x, Variable)
    ('Tensor', True, True, True)
"""
from __future__ import annotations

import warnings
from typing import Any, Optional

from fgraph.tensor import Tensor, _init_leaf, _new_object, tensor, type_name

__all__ = ["Variable"]


class _VariableMeta(type):
    """Makes ``isinstance(t, Variable)`` true for every Tensor, as in PyTorch."""

    def __instancecheck__(cls, other: Any) -> bool:
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """``Variable(data, requires_grad=False)``: a new leaf Tensor with ``data``'s values (PyTorch's deprecated
    wrapper, a no-op since 0.4). ``volatile`` is accepted and ignored with PyTorch's warning.

    Example:
        >>> import fgraph as fg
        >>> y = fg.ones(2, requires_grad=True) * 2
        >>> v = fg.autograd.Variable(y)
        >>> v.requires_grad, v.grad_fn is None, v.tolist()
        (False, True, [2.0, 2.0])
    """

    def __new__(cls, data: Optional[Tensor] = None, requires_grad: bool = False,  # type: ignore[misc]
                volatile: Optional[bool] = None) -> Tensor:
        if volatile is not None:
            warnings.warn("Variable: volatile was removed and now has no effect. Use `with fg.no_grad():` instead.",
                          UserWarning, stacklevel=2)
        if data is None:
            return tensor([], requires_grad=requires_grad)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type_name(data)}; make one with "
                            "fg.tensor(values, requires_grad=...) (Variable itself is deprecated, as in PyTorch).")
        out = _new_object(Tensor)
        _init_leaf(out, data.detach()._array, requires_grad)
        return out
