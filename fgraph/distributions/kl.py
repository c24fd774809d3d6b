"""``kl_divergence(p, q)`` and ``register_kl``: a table of closed forms keyed by the pair of types.

Lookup takes the most specific registered pair by subclass (as torch's): a pair
registered for ``(Normal, Normal)`` serves subclasses of ``Normal`` too. When the
most specific match on the left and on the right disagree, a ``RuntimeWarning`` says
which pair to register to break the tie. The closed forms themselves live in the
``_kl_*`` modules beside this one, one per family of distributions.

Example:
    >>> import fgraph as fg
    >>> from fgraph.distributions import Normal, kl_divergence, register_kl
    >>> round(kl_divergence(Normal(0.0, 1.0), Normal(1.0, 1.0)).item(), 4)
    0.5
    >>> class Point(Normal):
    ...     pass
    >>> round(kl_divergence(Point(0.0, 1.0), Normal(0.0, 2.0)).item(), 4)   # Normal's closed form
    0.3181
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

import fgraph as fg
from fgraph.distributions.distribution import Distribution
from fgraph.tensor import Tensor

__all__ = ["register_kl", "kl_divergence"]

_KL_REGISTRY: dict = {}  # (type_p, type_q) -> function: the source of truth
_KL_MEMOIZE: dict = {}  # (type(p), type(q)) -> function or NotImplemented: lookups already resolved


def register_kl(type_p: type, type_q: type) -> Callable:
    """Decorator: register ``fn(p, q) -> Tensor`` as ``KL(p || q)`` for ``p: type_p`` and ``q: type_q``.

    Example:
        >>> from fgraph.distributions import Distribution, register_kl
        >>> class Dirac(Distribution):
        ...     arg_constraints = {}
        >>> @register_kl(Dirac, Dirac)
        ... def _kl_dirac_dirac(p, q):
        ...     return fg.zeros(())
    """
    for name, t in (("type_p", type_p), ("type_q", type_q)):
        if not (isinstance(t, type) and issubclass(t, Distribution)):
            raise TypeError(f"register_kl: expected {name} to be a Distribution subclass but got {t!r}")

    def decorator(fn: Callable) -> Callable:
        _KL_REGISTRY[type_p, type_q] = fn
        _KL_MEMOIZE.clear()  # a new pair can change earlier resolutions
        return fn

    return decorator


def _depth(sub: type, sup: type) -> int:
    return sub.__mro__.index(sup)


def _dispatch_kl(type_p: type, type_q: type) -> Any:
    """The most specific registered pair for ``(type_p, type_q)``, or ``NotImplemented``."""
    matches = [(sp, sq) for sp, sq in _KL_REGISTRY if issubclass(type_p, sp) and issubclass(type_q, sq)]
    if not matches:
        return NotImplemented
    left = min(matches, key=lambda m: (_depth(type_p, m[0]), _depth(type_q, m[1])))
    right = min(matches, key=lambda m: (_depth(type_q, m[1]), _depth(type_p, m[0])))
    left_fn, right_fn = _KL_REGISTRY[left], _KL_REGISTRY[right]
    if left_fn is not right_fn:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
                      f"Please register_kl({left[0].__name__}, {right[1].__name__})", RuntimeWarning, stacklevel=3)
    return left_fn


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """``KL(p || q)``, batched over the distributions' ``batch_shape``.

    Raises:
        NotImplementedError: no closed form is registered for the pair's types (see :func:`register_kl`).
    """
    try:
        fn = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fn = _KL_MEMOIZE[type(p), type(q)] = _dispatch_kl(type(p), type(q))
    if fn is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {type(p).__name__} and q type "
                                  f"{type(q).__name__}; register one with "
                                  f"@fgraph.distributions.register_kl({type(p).__name__}, {type(q).__name__}).")
    return fn(p, q)


# -- helpers shared by the closed forms -----------------------------------------------------------------------------
def infinite_like(t: Tensor) -> Tensor:
    """``inf`` everywhere, shaped like ``t`` (a KL whose supports do not nest)."""
    return fg.full_like(t, float("inf"))


def x_log_x(t: Tensor) -> Tensor:
    """``t * log(t)``, with ``0 log 0 = 0``."""
    return fg.xlogy(t, t)
