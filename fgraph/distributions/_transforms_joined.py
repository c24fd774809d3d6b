"""Transforms that apply other transforms piecewise: ``CatTransform`` and ``StackTransform``.

Re-exported from :mod:`fgraph.distributions.transforms`.

Example:
    >>> import fgraph as fg
    >>> from fgraph.distributions.transforms import CatTransform, ExpTransform, identity_transform
    >>> t = CatTransform([ExpTransform(), identity_transform], dim=0, lengths=[1, 2])
    >>> t(fg.tensor([0.0, 3.0, -1.0])).tolist()
    [1.0, 3.0, -1.0]
"""
from __future__ import annotations

from typing import Optional, Sequence

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions._transform_base import Transform
from fgraph.distributions.utils import lazy_property, sum_rightmost
from fgraph.tensor import Tensor

__all__ = ["CatTransform", "StackTransform"]


def _check_dim(name: str, t: Tensor, dim: int, size: int, what: str) -> None:
    if not -t.dim() <= dim < t.dim():
        raise ValueError(f"{name}: dim {dim} is out of range for an input with {t.dim()} dims")
    if t.shape[dim] != size:
        raise ValueError(f"{name}: the input's size along dim {dim} is {t.shape[dim]}, but {what} is {size}")


class CatTransform(Transform):
    """``tseq[i]`` applied to consecutive pieces (of ``lengths[i]``) along ``dim``, as ``fg.cat`` joins them."""

    def __init__(self, tseq: Sequence[Transform], dim: int = 0, lengths: Optional[Sequence[int]] = None,
                 cache_size: int = 0) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError("CatTransform: every element of tseq must be a Transform")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = list(lengths) if lengths is not None else [1] * len(self.transforms)
        if len(self.lengths) != len(self.transforms):
            raise ValueError(f"CatTransform: {len(self.transforms)} transforms but {len(self.lengths)} lengths")
        self.dim = dim

    @lazy_property
    def event_dim(self) -> int:  # type: ignore[override]
        return max(t.event_dim for t in self.transforms)

    @lazy_property
    def length(self) -> int:
        return sum(self.lengths)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _pieces(self, t: Tensor) -> list:
        _check_dim("CatTransform", t, self.dim, self.length, "sum(lengths)")
        pieces, start = [], 0
        for length in self.lengths:
            pieces.append(t.narrow(self.dim, start, length))
            start += length
        return pieces

    def _call(self, x: Tensor) -> Tensor:
        return fg.cat([t(p) for t, p in zip(self.transforms, self._pieces(x))], dim=self.dim)

    def _inverse(self, y: Tensor) -> Tensor:
        return fg.cat([t.inv(p) for t, p in zip(self.transforms, self._pieces(y))], dim=self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        terms = []
        for t, xp, yp in zip(self.transforms, self._pieces(x), self._pieces(y)):
            terms.append(sum_rightmost(t.log_abs_det_jacobian(xp, yp), self.event_dim - t.event_dim))
        dim = self.dim - x.dim() if self.dim >= 0 else self.dim
        dim += self.event_dim
        if dim < 0:  # the joined dim is a batch dim: keep it
            return fg.cat(terms, dim=dim)
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        return total

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self) -> constraints.Constraint:
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self) -> constraints.Constraint:
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """``tseq[i]`` applied to slice ``i`` along ``dim``, as ``fg.stack`` joins them."""

    def __init__(self, tseq: Sequence[Transform], dim: int = 0, cache_size: int = 0) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError("StackTransform: every element of tseq must be a Transform")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slices(self, t: Tensor) -> list:
        _check_dim("StackTransform", t, self.dim, len(self.transforms), "the number of transforms")
        return [t.select(self.dim, i) for i in range(t.shape[self.dim])]

    def _call(self, x: Tensor) -> Tensor:
        return fg.stack([t(s) for t, s in zip(self.transforms, self._slices(x))], dim=self.dim)

    def _inverse(self, y: Tensor) -> Tensor:
        return fg.stack([t.inv(s) for t, s in zip(self.transforms, self._slices(y))], dim=self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        terms = [t.log_abs_det_jacobian(xs, ys) for t, xs, ys in zip(self.transforms, self._slices(x),
                                                                      self._slices(y))]
        return fg.stack(terms, dim=self.dim)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self) -> constraints.Constraint:
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self) -> constraints.Constraint:
        return constraints.stack([t.codomain for t in self.transforms], self.dim)
