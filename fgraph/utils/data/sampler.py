"""Samplers: which dataset indices a ``DataLoader`` visits, and in what order (torch's names and rules).

Random samplers draw from an fgraph :class:`~fgraph.Generator` (``generator=``) or, without one, from
fgraph's default generator, so ``fg.manual_seed(s)`` makes a run repeat. Each pass over a sampler takes
one key from the generator and shuffles with NumPy seeded by that key: the orders are reproducible
permutations, but not the ones torch draws for the same seed (the generators differ).

Example:
    >>> import fgraph as fg
    >>> from fgraph.utils.data import BatchSampler, RandomSampler, SequentialSampler
    >>> list(BatchSampler(SequentialSampler(range(7)), batch_size=3, drop_last=False))
    [[0, 1, 2], [3, 4, 5], [6]]
    >>> order = list(RandomSampler(range(5), generator=fg.Generator(0)))
    >>> sorted(order) == [0, 1, 2, 3, 4], order == list(RandomSampler(range(5), generator=fg.Generator(0)))
    (True, True)
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Any, Generic, Optional, TypeVar, Union

import jax
import numpy as np

from fgraph.random import Generator, default_generator

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]

T_co = TypeVar("T_co", covariant=True)


def numpy_rng(generator: Optional[Generator], op: str) -> np.random.Generator:
    """A NumPy generator seeded by the next key of ``generator`` (fgraph's default generator if ``None``).

    Example:
        >>> import fgraph as fg
        >>> from fgraph.utils.data.sampler import numpy_rng
        >>> a = numpy_rng(fg.Generator(1), "f").permutation(4).tolist()
        >>> a == numpy_rng(fg.Generator(1), "f").permutation(4).tolist()
        True
    """
    if generator is None:
        generator = default_generator
    elif not isinstance(generator, Generator):
        raise TypeError(f"{op}: generator must be an fgraph.Generator (fg.Generator(seed)), got "
                        f"{type(generator).__module__}.{type(generator).__qualname__}. A torch.Generator cannot "
                        "drive fgraph's shuffles; pass generator=fg.Generator(seed) instead.")
    key = generator.next_key()
    if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    return np.random.default_rng([int(word) for word in np.asarray(key).ravel()])


def draw_seed(generator: Optional[Generator], op: str = "DataLoader") -> int:
    """A 63-bit integer seed from ``generator`` (as torch's ``int64`` ``random_()``), for worker seeding."""
    return int(numpy_rng(generator, op).integers(0, 2**63))


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


class Sampler(Generic[T_co]):
    """Base class of samplers: subclasses define ``__iter__`` (indices, or lists of indices) and usually ``__len__``.

    Example:
        >>> from fgraph.utils.data import Sampler
        >>> class Evens(Sampler):
        ...     def __init__(self, n): self.n = n
        ...     def __iter__(self): return iter(range(0, self.n, 2))
        ...     def __len__(self): return (self.n + 1) // 2
        >>> list(Evens(5))
        [0, 2, 4]
    """

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """Indices ``0, 1, ..., len(data_source) - 1``, in order.

    Example:
        >>> from fgraph.utils.data import SequentialSampler
        >>> list(SequentialSampler("abc"))
        [0, 1, 2]
    """

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """A fresh random order of the indices on every pass; or ``num_samples`` draws with replacement.

    Without replacement, ``num_samples`` larger than the dataset chains several permutations (torch's rule).

    Example:
        >>> import fgraph as fg
        >>> from fgraph.utils.data import RandomSampler
        >>> sorted(RandomSampler(range(4), generator=fg.Generator(2)))
        [0, 1, 2, 3]
        >>> len(RandomSampler(range(4), replacement=True, num_samples=10))
        10
    """

    def __init__(self, data_source: Sized, replacement: bool = False, num_samples: Optional[int] = None,
                 generator: Optional[Generator] = None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        rng = numpy_rng(self.generator, "RandomSampler")
        if self.replacement:
            yield from rng.integers(0, n, self.num_samples).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from rng.permutation(n).tolist()
        yield from rng.permutation(n)[: self.num_samples % n].tolist()

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given indices in a fresh random order on every pass (no replacement).

    Example:
        >>> import fgraph as fg
        >>> from fgraph.utils.data import SubsetRandomSampler
        >>> sorted(SubsetRandomSampler([10, 20, 30], generator=fg.Generator(0)))
        [10, 20, 30]
    """

    def __init__(self, indices: Sequence[int], generator: Optional[Generator] = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in numpy_rng(self.generator, "SubsetRandomSampler").permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices of ``[0, len(weights))`` drawn with probabilities proportional to ``weights``.

    With ``replacement=False`` an index is drawn at most once per pass (so ``num_samples`` may not exceed
    the number of positive weights).

    Example:
        >>> import fgraph as fg
        >>> from fgraph.utils.data import WeightedRandomSampler
        >>> draws = list(WeightedRandomSampler([0.0, 1.0, 0.0], 4, generator=fg.Generator(0)))
        >>> draws
        [1, 1, 1, 1]
    """

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Optional[Generator] = None) -> None:
        if not _positive_int(num_samples):
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        w = _weights_array(weights)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError("WeightedRandomSampler: weights must be finite and non-negative (they are relative "
                             f"probabilities); got {w.tolist() if w.size <= 10 else 'an array with such entries'}.")
        positive = int(np.count_nonzero(w))
        if positive == 0:
            raise ValueError("WeightedRandomSampler: the weights sum to 0; at least one weight must be positive.")
        if not replacement and num_samples > positive:
            raise ValueError(f"WeightedRandomSampler: cannot draw num_samples={num_samples} without replacement from "
                             f"{positive} indices of positive weight; pass replacement=True or fewer samples.")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        rng = numpy_rng(self.generator, "WeightedRandomSampler")
        p = self.weights / self.weights.sum()
        yield from rng.choice(len(p), size=self.num_samples, replace=self.replacement, p=p).tolist()

    def __len__(self) -> int:
        return self.num_samples


def _weights_array(weights: Any) -> np.ndarray:
    from fgraph.tensor import Tensor, _is_torch_tensor

    if isinstance(weights, Tensor):
        weights = weights._array
    elif _is_torch_tensor(weights):
        weights = weights.detach().cpu().double().numpy()
    return np.asarray(weights, dtype=np.float64)


class BatchSampler(Sampler[list]):
    """Group the indices of ``sampler`` into lists of ``batch_size`` (the last one shorter unless ``drop_last``).

    Example:
        >>> from fgraph.utils.data import BatchSampler, SequentialSampler
        >>> list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=True))
        [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    """

    def __init__(self, sampler: Union[Sampler[int], Iterable[int]], batch_size: int, drop_last: bool) -> None:
        if not _positive_int(batch_size):
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list]:
        indices = iter(self.sampler)
        if self.drop_last:
            yield from (list(batch) for batch in zip(*[indices] * self.batch_size))
            return
        batch = list(itertools.islice(indices, self.batch_size))
        while batch:
            yield batch
            batch = list(itertools.islice(indices, self.batch_size))

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
