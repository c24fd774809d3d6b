"""Randomness: explicit JAX keys, and a seeded default generator for eager convenience.

Every random op (``rand``, ``randn``, ``randint``, ``randperm``, ``normal``,
``bernoulli``, the ``*_like`` forms) takes ``key=`` and ``generator=``:

* ``key=`` -- a JAX PRNG key (``jax.random.key(0)`` or ``jax.random.PRNGKey(0)``).
  The op is then a pure function of the key: the same key gives the same values,
  eagerly, under ``jax.jit``/``vmap``, inside ``fg.compile`` or exported to JAX.
  This is the way to write traced code: pass the key in as an argument and
  split it (``jax.random.split``) for each draw.
* ``generator=`` -- a :class:`Generator`, a stream of keys: each op takes the
  next key from it. Without either, the op takes the next key of the default
  generator, which :func:`manual_seed` resets: ``fg.manual_seed(0)`` followed by
  the same sequence of ops gives the same values, like ``torch.manual_seed``.
  A generator's state is a key (:meth:`Generator.get_state`, :func:`get_rng_state`);
  putting a state back replays the same draws (activation checkpointing does this).

A generator is Python state, so it cannot advance inside a compiled program: a
key drawn from it while tracing would be a constant baked into the program, and
every call would repeat the same "random" numbers. Random ops therefore refuse an
implicit key while traced (a clear ``OpError`` asking for ``key=``), unless the
generator's state is itself a traced value -- a transform that threads the RNG
state through the program (``set_rng_state(traced_key)`` before tracing, read
back with ``get_rng_state()`` after) is allowed. Drawing a key never stages
anything into an enclosing trace, so no tracer leaks into the generator.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> _ = fg.manual_seed(0)
    >>> a = fg.rand(3)
    >>> _ = fg.manual_seed(0)
    >>> fg.rand(3).tolist() == a.tolist()
    True
    >>> key = jax.random.key(42)
    >>> fg.randn(2, key=key).tolist() == fg.randn(2, key=key).tolist()
    True
    >>> jax.jit(lambda k: fg.randn(2, key=k).array)(key).tolist() == fg.randn(2, key=key).tolist()
    True
"""
from __future__ import annotations

import secrets
import threading
from typing import Any, Optional

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "Generator",
    "default_generator",
    "manual_seed",
    "seed",
    "initial_seed",
    "next_key",
    "get_rng_state",
    "set_rng_state",
    "resolve_key",
    "check_key",
    "check_implicit_key",
]


def _split_pair(key: jax.Array) -> tuple[jax.Array, jax.Array]:
    keys = jax.random.split(key)
    return keys[0], keys[1]


_split = jax.jit(_split_pair)


class Generator:
    """A stream of JAX PRNG keys: each :meth:`next_key` splits off a fresh key.

    Like ``torch.Generator``: ``Generator(seed)``, :meth:`manual_seed`,
    :meth:`initial_seed`, :meth:`get_state`/:meth:`set_state`. Pass it to a
    random op as ``generator=``.

    Example:
        >>> import fgraph as fg
        >>> g = fg.Generator(3)
        >>> a = fg.randn(2, generator=g)
        >>> fg.randn(2, generator=g.manual_seed(3)).tolist() == a.tolist()
        True
    """

    def __init__(self, seed: int = 0) -> None:
        self._lock = threading.Lock()
        self._seed = _seed_value(seed)
        self._state: Optional[jax.Array] = None  # the key, made on first use (see _key)

    @property
    def _key(self) -> jax.Array:
        # Made on first use, not in __init__: making an array starts JAX's backend, and importing
        # fgraph (which makes the default generator) must not, so that JAX settings made after the
        # import still apply. The key depends only on the seed, so when it is made does not matter.
        state = self._state
        if state is None:
            state = self._state = _seed_key(self._seed)
        return state

    @_key.setter
    def _key(self, state: jax.Array) -> None:
        self._state = state

    def __repr__(self) -> str:
        return f"<fgraph.Generator initial_seed={self._seed}>"

    def manual_seed(self, seed: int) -> "Generator":
        """Restart the stream from ``seed``; returns the generator."""
        seed = _seed_value(seed)
        with self._lock:
            self._seed = seed
            self._state = None  # the new stream's key is made on first use
        return self

    def seed(self) -> int:
        """Restart the stream from a fresh non-deterministic 64-bit seed (``os.urandom``); returns that seed."""
        seed = secrets.randbits(64)
        self.manual_seed(seed)
        return seed

    def initial_seed(self) -> int:
        """The seed the stream was last started from."""
        return self._seed

    def next_key(self) -> jax.Array:
        """A fresh key; advances the stream.

        When the state is a concrete array the split runs eagerly even while a JAX
        trace is active (nothing is staged into it, so no tracer leaks into the
        generator); a traced state (threaded through a program) is split traced.
        """
        with self._lock:
            state = self._key
            if isinstance(state, jax.core.Tracer):
                self._key, key = _split(state)
            else:
                with jax.ensure_compile_time_eval():
                    self._key, key = _split(state)
        return key

    def get_state(self) -> jax.Array:
        """The current state (a key); :meth:`set_state` with it replays the same draws."""
        return self._key

    def set_state(self, state: Any) -> None:
        """Restore a state from :meth:`get_state` (or any JAX PRNG key)."""
        state = check_key(state, "Generator.set_state")
        with self._lock:
            self._key = state


def _seed_value(seed: Any) -> int:
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"manual_seed: seed must be an int, got {type(seed).__name__} {seed!r}.")
    seed = int(seed)
    if not -(2**63) <= seed < 2**64:
        raise ValueError(f"manual_seed: seed {seed} is out of range; use a value in [-2**63, 2**64).")
    return seed


def _seed_key(seed: int) -> jax.Array:
    """``jax.random.PRNGKey(seed)`` for all 64 bits of ``seed``, with or without x64 mode."""
    u = seed % 2**64
    with jax.ensure_compile_time_eval():
        if jax.config.jax_default_prng_impl == "threefry2x32":  # PRNGKey's layout: [high word, low word]
            return jnp.asarray(np.array([u >> 32, u & 0xFFFFFFFF], dtype=np.uint32))
        return jax.random.PRNGKey(u if jax.config.jax_enable_x64 else u & 0xFFFFFFFF)


default_generator = Generator(0)


def manual_seed(seed: int) -> Generator:
    """Reseed the default generator (like ``torch.manual_seed``); returns it.

    Example:
        >>> import fgraph as fg
        >>> _ = fg.manual_seed(0)
        >>> k1 = fg.random.next_key()
        >>> _ = fg.manual_seed(0)
        >>> bool((fg.random.next_key() == k1).all())
        True
    """
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Reseed the default generator from a non-deterministic 64-bit number and return it, like ``torch.seed``.

    Example:
        >>> import fgraph as fg
        >>> s = fg.seed()
        >>> fg.initial_seed() == s
        True
    """
    return default_generator.seed()


def initial_seed() -> int:
    """The seed the default generator was last started from.

    Example:
        >>> import fgraph as fg
        >>> fg.manual_seed(7).initial_seed(), fg.random.initial_seed()
        (7, 7)
    """
    return default_generator.initial_seed()


def next_key() -> jax.Array:
    """A fresh key from the default generator."""
    return default_generator.next_key()


def get_rng_state() -> jax.Array:
    """The default generator's state (a key), for :func:`set_rng_state`."""
    return default_generator.get_state()


def set_rng_state(state: jax.Array) -> None:
    """Restore the default generator to a state from :func:`get_rng_state`.

    Example:
        >>> import fgraph as fg
        >>> state = fg.get_rng_state()
        >>> a = fg.rand(2)
        >>> fg.set_rng_state(state)
        >>> fg.rand(2).tolist() == a.tolist()
        True
    """
    default_generator.set_state(state)


def check_key(key: Any, op: str = "random") -> jax.Array:
    """``key`` as a JAX key array (a Tensor's data is unwrapped), or a ``TypeError`` naming ``op``.

    A key is a typed key (``jax.random.key(seed)``, shape ``()``) or a raw
    ``uint32`` key (``jax.random.PRNGKey(seed)``, shape ``(2,)``).
    """
    from fgraph.tensor import Tensor

    k = key._array if isinstance(key, Tensor) else key
    if isinstance(k, np.ndarray):
        k = jnp.asarray(k)
    if isinstance(k, (jax.Array, jax.core.Tracer)):
        dtype, shape = k.dtype, tuple(k.shape)
        if jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key) and shape == ():
            return k
        if dtype == np.uint32 and len(shape) == 1 and shape[0] in (2, 4):
            return k
        what = f"an array of shape {shape} {dtype}"
        if jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key) or dtype == np.uint32:
            what += " (one key is needed, not a batch: split it and pass one, or use jax.vmap)"
    else:
        what = f"{type(key).__name__} {key!r}"
    raise TypeError(
        f"{op}: key must be a JAX PRNG key such as jax.random.key(0) or jax.random.PRNGKey(0), got {what}. "
        "To draw from a seed instead, call fgraph.manual_seed(seed) or pass generator=fgraph.Generator(seed)."
    )


def resolve_key(key: Optional[Any], generator: Optional[Generator] = None, op: str = "random") -> jax.Array:
    """``key`` itself (checked), or the next key of ``generator`` (the default generator if ``None``)."""
    if key is not None:
        if generator is not None:
            raise ValueError(f"{op}: pass either key= or generator=, not both.")
        return check_key(key, op)
    if generator is None:
        return default_generator.next_key()
    if not isinstance(generator, Generator):
        raise TypeError(f"{op}: generator must be a fgraph.Generator, got {type(generator).__name__}.")
    return generator.next_key()


def check_implicit_key(out: Any, key_given: bool, key: Any, op: str) -> None:
    """Refuse an output computed while traced from a key that a generator drew eagerly.

    ``out`` is the op's output array; a tracer means a JAX trace is active. Raises
    :class:`fgraph.OpError` when no ``key=`` was given and the key was a constant.
    """
    if key_given or not isinstance(out, jax.core.Tracer) or isinstance(key, jax.core.Tracer):
        return
    from fgraph.errors import OpError

    raise OpError(
        f"{op}: called inside a JAX trace (jax.jit, vmap, fg.compile...) without key=. A generator cannot "
        "advance inside a compiled program: its key would be baked in as a constant and every call would "
        f"draw the same numbers. Pass key= explicitly, e.g. make the key an argument of the traced function "
        f"and call {op}(..., key=jax.random.fold_in(key, i)) or split it with jax.random.split."
    )
