"""``Gradients``: the read-only mapping from tensor to gradient that ``backward`` returns.

PyTorch sums every ``backward()`` into ``.grad``; fgraph returns fresh gradients each time, so
a ported loop that runs several backward passes before one step (micro-batches, a GAN's real
and fake losses) must add them: ``grads = g1 + g2`` or ``sum([g1, g2, g3])``. Forgetting to
is caught where it is certain: gradients that ``backward`` returned and nobody read before
they were dropped (the bare ``loss.backward()`` statement, a micro-batch's result overwritten
by the next one's) raise an :class:`UnusedGradientsWarning` when they are freed, unless hooks
ran during that pass (``backward`` may then be wanted for its hooks alone).
"""
from __future__ import annotations

import sys
import warnings
from collections.abc import Mapping
from typing import Any, Iterator, Optional

from fgraph.tensor import Tensor

__all__ = ["Gradients", "UnusedGradientsWarning"]


class UnusedGradientsWarning(UserWarning):
    """Gradients returned by ``backward`` were freed without being read: usually a forgotten ``+``."""


class Gradients(Mapping):
    """Read-only mapping from tensor (by identity) to its gradient, returned by ``backward``.

    Results add with ``+`` (also ``sum([g1, g2, ...])``): the keys are the union, and the
    gradients of tensors in both are summed, which is what PyTorch's ``.grad`` accumulation does.

    Example:
        >>> import fgraph as fg
        >>> x = fg.tensor([1.0, 2.0], requires_grad=True)
        >>> grads = fg.backward((x * x).sum())
        >>> grads[x].tolist()
        [2.0, 4.0]
        >>> total = sum([fg.backward((x * x).sum()), fg.backward(x.sum())])  # two micro-batches
        >>> total[x].tolist()
        [3.0, 5.0]
    """

    __slots__ = ("_items", "_watch", "_read")

    def __init__(self, items: Optional[dict] = None, *, watch: bool = False) -> None:
        object.__setattr__(self, "_items", dict(items or {}))  # id(tensor) -> (tensor, grad)
        object.__setattr__(self, "_watch", watch)  # warn if freed unread (backward's results)
        object.__setattr__(self, "_read", False)

    def _mark_read(self) -> None:
        if not self._read:
            object.__setattr__(self, "_read", True)

    def __del__(self) -> None:
        if self._watch and not self._read and self._items and not sys.is_finalizing():
            warnings.warn(
                f"the gradients that backward() returned ({len(self._items)} tensors) were freed without being "
                "read. fgraph returns gradients instead of summing them into .grad: write grads = loss.backward() "
                "and pass them on (opt.step(grads)); to accumulate several backward passes as PyTorch does "
                "(micro-batches, a GAN's real and fake losses), add them: grads = g1 + g2, or "
                "sum(loss.backward() for loss in losses).", UnusedGradientsWarning, stacklevel=2)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Gradients is read-only")

    def __setitem__(self, tensor: Tensor, value: Any) -> None:
        raise TypeError(_READ_ONLY)

    def __delitem__(self, tensor: Tensor) -> None:
        raise TypeError(_READ_ONLY)

    def __getitem__(self, tensor: Tensor) -> Tensor:
        self._mark_read()
        try:
            return self._items[id(tensor)][1]
        except KeyError:
            raise KeyError(
                "no gradient for this tensor: it is not a leaf reached by backward (or not in `inputs`)"
            ) from None

    def __contains__(self, tensor: object) -> bool:
        self._mark_read()
        entry = self._items.get(id(tensor))
        return entry is not None and entry[0] is tensor

    def __iter__(self) -> Iterator[Tensor]:
        self._mark_read()
        return (t for t, _ in self._items.values())

    def __len__(self) -> int:
        self._mark_read()
        return len(self._items)

    def __add__(self, other: "Gradients") -> "Gradients":
        if not isinstance(other, Gradients):
            return NotImplemented
        self._mark_read()
        other._mark_read()
        merged = dict(self._items)
        for key, (t, g) in other._items.items():
            merged[key] = (t, merged[key][1] + g) if key in merged else (t, g)
        return Gradients(merged)

    def __radd__(self, other: Any) -> "Gradients":
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:  # sum()'s start
            self._mark_read()
            return Gradients(self._items)
        return NotImplemented

    def __repr__(self) -> str:
        return f"Gradients({len(self)} tensors)"


_READ_ONLY = ("Gradients is read-only: it does not support item assignment (grads[x] = g) or deletion. To change "
              "gradients make a dict: new = dict(grads); new[x] = g (opt.step takes any {param: grad} mapping), "
              "or change them during backward with x.register_hook(fn).")


# -- public entry points --------------------------------------------------------------------------
