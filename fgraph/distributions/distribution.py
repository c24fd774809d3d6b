"""``Distribution``: the base class, with torch's shapes, validation and sampling API.

A distribution has a ``batch_shape`` (independent, differently parameterised copies)
and an ``event_shape`` (the shape of one draw). ``sample(sample_shape)`` returns
``sample_shape + batch_shape + event_shape``; ``log_prob(value)`` returns the
broadcast of ``value``'s leading dims with ``batch_shape``.

Randomness: ``sample``/``rsample`` take fgraph's ``key=`` (a JAX key: a pure function
of it, for ``jax.jit``/``vmap``) or ``generator=``; with neither they take the next key
of the default generator (``fg.manual_seed`` makes runs repeat, and ``fg.compile``
threads that generator through its program). See ``docs/randomness.md``.

Validation (on by default, as in torch; ``Distribution.set_default_validate_args``, or
``validate_args=`` per instance) checks parameters against ``arg_constraints`` and
``log_prob``'s values against ``support``, raising torch's ``ValueError`` messages. It
needs the values on the host, so it is skipped while traced (inside ``fg.compile``,
``jax.jit`` or ``vmap``).

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> from fgraph.distributions import Normal
    >>> d = Normal(fg.zeros(3), 1.0)
    >>> d.batch_shape, d.event_shape, d.sample((2,), key=jax.random.key(0)).shape
    ((3,), (), (2, 3))
    >>> Normal(0.0, -1.0)
    Traceback (most recent call last):
    ...
    ValueError: Expected parameter scale (Tensor of shape ()) of distribution Normal(loc: 0.0, scale: -1.0) to satisfy the constraint GreaterThan(lower_bound=0.0), but found invalid values:
    -1.0
"""
from __future__ import annotations

import warnings
from typing import Any, Optional, Sequence

import numpy as np

import fgraph as fg
from fgraph.distributions import constraints
from fgraph.distributions.utils import lazy_property
from fgraph.ops._index_checks import is_traced
from fgraph.random import Generator
from fgraph.tensor import Tensor

__all__ = ["Distribution"]

Key = Any  # a JAX PRNG key
Shape = Sequence[int]


def _shape(shape: Any, what: str = "sample_shape") -> tuple:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        return (int(shape),)
    try:
        dims = tuple(shape)
    except TypeError:
        raise TypeError(f"{what} must be a tuple of ints (e.g. (10,)), got {type(shape).__name__}") from None
    if not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0 for d in dims):
        raise TypeError(f"{what} must be a tuple of non-negative ints (e.g. (10,)), got {shape!r}")
    return tuple(int(d) for d in dims)


def all_true(valid: Tensor) -> Optional[bool]:
    """Whether every entry of a boolean Tensor is true; ``None`` while traced (values unknown)."""
    if is_traced(valid):
        return None
    return bool(valid.all())


class Distribution:
    """The abstract base class of probability distributions (``torch.distributions.Distribution``)."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn validation on or off for every distribution built afterwards (default: on, like ``assert``)."""
        if value not in (True, False):
            raise ValueError(f"set_default_validate_args: value must be True or False, got {value!r}")
        Distribution._validate_args = value

    def __init__(self, batch_shape: Shape = (), event_shape: Shape = (),
                 validate_args: Optional[bool] = None) -> None:
        self._batch_shape = _shape(batch_shape, "batch_shape")
        self._event_shape = _shape(event_shape, "event_shape")
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_args()

    def _check_args(self) -> None:
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            arg_constraints = {}
            warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set `arg_constraints = {{}}` "
                          "or initialize the distribution with `validate_args=False` to turn off validation.",
                          stacklevel=3)
        for param, constraint in arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue  # cannot be checked
            if param not in self.__dict__ and isinstance(getattr(type(self), param, None), lazy_property):
                continue  # a lazily derived parameter (probs from logits): checked through its source
            value = getattr(self, param)
            if all_true(constraint.check(value)) is False:
                raise ValueError(f"Expected parameter {param} ({type(value).__name__} of shape "
                                 f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                                 f"{constraint!r}, but found invalid values:\n{_format(value)}")

    def expand(self, batch_shape: Shape, _instance: Optional["Distribution"] = None) -> "Distribution":
        """A new distribution with its parameters expanded to ``batch_shape`` (no copies, no re-validation)."""
        raise NotImplementedError

    def _expand_params(self, cls: type, batch_shape: Shape, _instance: Optional["Distribution"],
                       names: Sequence[str]) -> "Distribution":
        """:meth:`expand` for a distribution whose state is its parameters ``names`` (each of ``batch_shape``)."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = _shape(batch_shape, "batch_shape")
        for name in names:
            setattr(new, name, getattr(self, name).expand(batch_shape))
        super(cls, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def batch_shape(self) -> tuple:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> tuple:
        """The shape of a single sample, without batching."""
        return self._event_shape

    @property
    def arg_constraints(self) -> dict:
        """``{parameter name: Constraint}`` for every Tensor parameter."""
        raise NotImplementedError

    @property
    def support(self) -> Optional[constraints.Constraint]:
        """The :class:`Constraint` the distribution's samples satisfy."""
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__.__name__} does not implement mean")

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__.__name__} does not implement variance")

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def sample(self, sample_shape: Shape = (), *, key: Optional[Key] = None,
               generator: Optional[Generator] = None) -> Tensor:
        """A draw of shape ``sample_shape + batch_shape + event_shape``, off the graph."""
        with fg.no_grad():
            return self.rsample(sample_shape, key=key, generator=generator).detach()

    def rsample(self, sample_shape: Shape = (), *, key: Optional[Key] = None,
                generator: Optional[Generator] = None) -> Tensor:
        """A reparameterised draw: differentiable with respect to every parameter (``has_rsample``)."""
        raise NotImplementedError(f"{self.__class__.__name__} has no reparameterised sampler (has_rsample is False); "
                                  "use .sample(), and a score-function estimator (log_prob) for gradients.")

    def sample_n(self, n: int, *, key: Optional[Key] = None, generator: Optional[Generator] = None) -> Tensor:
        """Deprecated: ``sample((n,))``."""
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.", FutureWarning, stacklevel=2)
        return self.sample((n,), key=key, generator=generator)

    def log_prob(self, value: Tensor) -> Tensor:
        """The log density (or mass) at ``value``."""
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError(f"{self.__class__.__name__} does not implement cdf")

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse cumulative distribution function at ``value``."""
        raise NotImplementedError(f"{self.__class__.__name__} does not implement icdf")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of a discrete distribution's support, along a new leading dim."""
        raise NotImplementedError(f"{self.__class__.__name__} does not implement enumerate_support")

    def entropy(self) -> Tensor:
        """The entropy, of shape ``batch_shape``."""
        raise NotImplementedError(f"{self.__class__.__name__} does not implement entropy")

    def perplexity(self) -> Tensor:
        """``exp(entropy())``."""
        return fg.exp(self.entropy())

    def _extended_shape(self, sample_shape: Shape = ()) -> tuple:
        return _shape(sample_shape) + self._batch_shape + self._event_shape

    def _validate_sample(self, value: Any) -> None:
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_start = value.dim() - len(self._event_shape)
        if tuple(value.shape[event_start:]) != self._event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: {tuple(value.shape)} vs "
                             f"{self._event_shape}.")
        actual, expected = tuple(value.shape), self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual} vs {expected}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. Please "
                          "initialize the distribution with `validate_args=False` to turn off validation.",
                          stacklevel=3)
            return
        if all_true(support.check(value)) is False:
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                             f"within the support ({support!r}) of the distribution {self!r}, but found invalid "
                             f"values:\n{_format(value)}")

    def _get_checked_instance(self, cls: type, _instance: Optional["Distribution"] = None) -> "Distribution":
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                                      "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self) -> str:
        try:
            names = [k for k in self.arg_constraints if k in self.__dict__]
        except NotImplementedError:
            names = []
        parts = []
        for name in names:
            value = self.__dict__[name]
            parts.append(f"{name}: {_format(value) if value.numel() == 1 else tuple(value.shape)}")
        return f"{self.__class__.__name__}({', '.join(parts)})"


def _format(value: Tensor) -> str:
    """A Tensor as torch's f-strings show it: a 0-d one by its value."""
    if value.dim() == 0 and not is_traced(value):
        return str(value.item())
    return repr(value)
