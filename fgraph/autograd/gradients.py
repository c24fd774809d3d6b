"""``Gradients``: the read-only mapping from tensor to gradient that ``backward`` returns."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Iterator, Optional

from fgraph.tensor import Tensor

__all__ = ["Gradients"]


class Gradients(Mapping):
    """Read-only mapping from tensor (by identity) to its gradient, returned by ``backward``.

    Two results add with ``+``: gradients of shared tensors are summed.

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([1.0, 2.0], requires_grad=True)
        >>> grads = fg.backward((x * x).sum())
        >>> grads[x].tolist()
        [2.0, 4.0]
    """

    __slots__ = ("_items",)

    def __init__(self, items: Optional[dict] = None) -> None:
        object.__setattr__(self, "_items", dict(items or {}))  # id(tensor) -> (tensor, grad)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Gradients is read-only")

    def __setitem__(self, tensor: Tensor, value: Any) -> None:
        raise TypeError(_READ_ONLY)

    def __delitem__(self, tensor: Tensor) -> None:
        raise TypeError(_READ_ONLY)

    def __getitem__(self, tensor: Tensor) -> Tensor:
        try:
            return self._items[id(tensor)][1]
        except KeyError:
            raise KeyError(
                "no gradient for this tensor: it is not a leaf reached by backward (or not in `inputs`)"
            ) from None

    def __contains__(self, tensor: object) -> bool:
        entry = self._items.get(id(tensor))
        return entry is not None and entry[0] is tensor

    def __iter__(self) -> Iterator[Tensor]:
        return (t for t, _ in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __add__(self, other: "Gradients") -> "Gradients":
        if not isinstance(other, Gradients):
            return NotImplemented
        merged = dict(self._items)
        for key, (t, g) in other._items.items():
            merged[key] = (t, merged[key][1] + g) if key in merged else (t, g)
        return Gradients(merged)

    def __repr__(self) -> str:
        return f"Gradients({len(self)} tensors)"


_READ_ONLY = ("Gradients is read-only: it does not support item assignment (grads[x] = g) or deletion. To change "
              "gradients make a dict: new = dict(grads); new[x] = g (opt.step takes any {param: grad} mapping), "
              "or change them during backward with x.register_hook(fn).")


# -- public entry points --------------------------------------------------------------------------
