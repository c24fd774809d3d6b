"""Random ops: rand, randn, randint, randperm, normal, bernoulli, multinomial, poisson and the ``*_like`` forms.

Every op takes ``key=`` (a JAX PRNG key: the op is then a pure, traceable
function of it) or ``generator=`` (a :class:`fgraph.Generator`; the default
generator when neither is given) -- see :mod:`fgraph.random` and
``docs/randomness.md``. Sizes are varargs (``fg.rand(2, 3)``) or one tuple
(``fg.rand((2, 3))``). The key is a kernel input, so one kernel is compiled per
shape and dtype and reused for every key.

Gradients:

``device=`` places a new tensor (``"cpu"``, ``"cuda"``, an :class:`fgraph.device`; the ``*_like`` forms
default to their input's device, as in PyTorch); the draws do not depend on the device.

* ``rand``, ``randn``, ``randint``, ``randperm`` make new leaves (``requires_grad=``
  where PyTorch has it, floating dtypes only).
* ``normal(mean, std)`` with tensor ``mean``/``std`` is **reparameterised**:
  ``mean + std * eps`` with ``eps ~ N(0, 1)`` drawn from the key, built from
  fgraph ops, so it is differentiable (to any order) w.r.t. ``mean`` and ``std``.
  PyTorch instead returns zero gradients for ``torch.normal`` (it treats the draw
  as a sample; its ``Normal.rsample`` is what matches this).
* ``bernoulli``, ``poisson`` and ``multinomial`` never carry a gradient (its output does not require grad;
  PyTorch's requires grad and gets zero gradients).

Values outside the valid range of a *tensor* argument are not checked (that would
need the values on the host): a negative ``std`` flips the sign of the noise, a
``bernoulli`` probability above 1 acts as 1 and below 0 as 0.

Example:
    >>> import jax
    >>> import fgraph as fg
    >>> key = jax.random.key(0)
    >>> fg.rand(2, 3, key=key).shape, fg.randint(0, 10, (4,), key=key).shape
    ((2, 3), (4,))
    >>> mean = fg.zeros(3, requires_grad=True)
    >>> fg.normal(mean, 1.0, key=key).grad_fn.name()
    'AddBackward0'
"""
from __future__ import annotations

from typing import Any, Optional

import jax
import jax.numpy as jnp
import numpy as np

from fgraph._dtypes import canonical_dtype, narrowing_hint, x64_enabled
from fgraph.errors import OpError
from fgraph.ops._declare import OpDef, apply_op, declare
from fgraph.device import like_device
from fgraph.ops.creation import float_dtype, leaf, size_arg
from fgraph.ops.elementwise import add, mul
from fgraph.random import Generator, check_implicit_key, resolve_key
from fgraph.tensor import Tensor, type_name

__all__ = ["rand", "randn", "randint", "randperm", "normal", "bernoulli", "rand_like", "randn_like", "randint_like",
           "multinomial", "poisson"]

Key = Any  # a JAX PRNG key: jax.random.key(seed) or jax.random.PRNGKey(seed)


# -- kernels: the key is the first input ---------------------------------------------------------
def _rand_forward(key, *, shape, dtype):
    return jax.random.uniform(key, shape, dtype)


def _randn_forward(key, *, shape, dtype):
    return jax.random.normal(key, shape, dtype)


def _draw_int_dtype(dtype: np.dtype) -> np.dtype:
    if jnp.issubdtype(dtype, jnp.integer):
        return dtype
    return np.dtype("int64") if x64_enabled() else np.dtype("int32")


def _randint_forward(key, low, high, *, shape, dtype):
    return jax.random.randint(key, shape, low, high, _draw_int_dtype(dtype)).astype(dtype)


def _randperm_forward(key, *, n, dtype):
    return jax.random.permutation(key, n).astype(dtype)


def _normal_forward(key, mean, std, *, shape, dtype):
    return mean + std * jax.random.normal(key, shape, dtype)


def _bernoulli_forward(key, p, *, shape, dtype):
    return jax.random.bernoulli(key, p, shape).astype(dtype)


RAND = declare("rand", _rand_forward, None, params=("shape", "dtype"), differentiable=False)
RANDN = declare("randn", _randn_forward, None, params=("shape", "dtype"), differentiable=False)
RANDINT = declare("randint", _randint_forward, None, params=("shape", "dtype"), differentiable=False)
RANDPERM = declare("randperm", _randperm_forward, None, params=("n", "dtype"), differentiable=False)
NORMAL = declare("normal", _normal_forward, None, params=("shape", "dtype"), differentiable=False)
BERNOULLI = declare("bernoulli", _bernoulli_forward, None, params=("shape", "dtype"), differentiable=False)


def _multinomial_forward(key, weights, *, num_samples, replacement, dtype):
    logits = jnp.log(weights)  # zero weight -> -inf: never drawn while another category is left
    if replacement:
        draws = jax.random.categorical(key, logits, axis=-1, shape=(num_samples,) + weights.shape[:-1])
        return jnp.moveaxis(draws, 0, -1).astype(dtype)
    # Gumbel top-k: the k largest of logits + Gumbel noise are k draws without replacement
    perturbed = logits + jax.random.gumbel(key, weights.shape, weights.dtype)
    return jax.lax.top_k(perturbed, num_samples)[1].astype(dtype)


def _poisson_forward(key, rates):
    return jax.random.poisson(key, rates, rates.shape).astype(rates.dtype)


MULTINOMIAL = declare("multinomial", _multinomial_forward, None, params=("num_samples", "replacement", "dtype"),
                      differentiable=False)
POISSON = declare("poisson", _poisson_forward, None, differentiable=False)


def _sample(op: OpDef, args: tuple, params: Any, key: Optional[Key], generator: Optional[Generator],
            name: str) -> Tensor:
    """Run a random kernel on ``(key, *args)``; refuse a generator's key while traced."""
    k = resolve_key(key, generator, name)
    out = apply_op(op, (k, *args), params)
    check_implicit_key(out._array, key is not None, k, name)
    return out


def _default_int_dtype() -> np.dtype:
    return np.dtype("int64") if x64_enabled() else np.dtype("int32")


def _check_tensor(t: Any, name: str, op: str) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type_name(t)}.")
    return t


# -- uniform and standard normal ----------------------------------------------------------------------
def rand(*size: Any, key: Optional[Key] = None, generator: Optional[Generator] = None, dtype: Any = None,
         device: Any = None, requires_grad: bool = False) -> Tensor:
    """Uniform samples in ``[0, 1)`` of ``size``.

    Example:
        >>> import jax
        >>> import fgraph as fg
        >>> x = fg.rand(2, 3, key=jax.random.key(0))
        >>> x.shape, bool(((x >= 0) & (x < 1)).all())
        ((2, 3), True)
    """
    shape = size_arg(size, "rand")
    dt = float_dtype(dtype, "rand")
    return leaf(_sample(RAND, (), RAND.Params(shape, dt), key, generator, "rand"), requires_grad, device)


def randn(*size: Any, key: Optional[Key] = None, generator: Optional[Generator] = None, dtype: Any = None,
          device: Any = None, requires_grad: bool = False) -> Tensor:
    """Standard normal samples (mean 0, variance 1) of ``size``.

    Example:
        >>> import jax
        >>> import fgraph as fg
        >>> fg.randn((2, 3), key=jax.random.key(0), dtype=fg.float16).dtype
        dtype('float16')
    """
    shape = size_arg(size, "randn")
    dt = float_dtype(dtype, "randn")
    return leaf(_sample(RANDN, (), RANDN.Params(shape, dt), key, generator, "randn"), requires_grad, device)


def rand_like(input: Tensor, *, key: Optional[Key] = None, generator: Optional[Generator] = None,
              dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """:func:`rand` with the shape (and dtype, unless given) of ``input``.

    Example:
        >>> import jax
        >>> import fgraph as fg
        >>> fg.rand_like(fg.zeros(2, dtype=fg.float16), key=jax.random.key(0)).dtype
        dtype('float16')
    """
    _check_tensor(input, "input", "rand_like")
    dt = float_dtype(input.dtype if dtype is None else dtype, "rand_like")
    return rand(input.shape, key=key, generator=generator, dtype=dt, requires_grad=requires_grad,
              device=like_device(input._array, device))


def randn_like(input: Tensor, *, key: Optional[Key] = None, generator: Optional[Generator] = None,
               dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """:func:`randn` with the shape (and dtype, unless given) of ``input``.

    Example:
        >>> import jax
        >>> import fgraph as fg
        >>> fg.randn_like(fg.zeros(2, 3), key=jax.random.key(0)).shape
        (2, 3)
    """
    _check_tensor(input, "input", "randn_like")
    dt = float_dtype(input.dtype if dtype is None else dtype, "randn_like")
    return randn(input.shape, key=key, generator=generator, dtype=dt, requires_grad=requires_grad,
               device=like_device(input._array, device))


# -- integers --------------------------------------------------------------------------------------------
def _int_value(v: Any, name: str, op: str) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{op}: {name} must be an int, got {type(v).__name__} {v!r}.")
    return int(v)


def _int_range(low: int, high: int, dt: np.dtype, op: str) -> None:
    if low >= high:
        raise OpError(f"{op}: low must be less than high, got low={low} >= high={high} (values are drawn "
                      "from [low, high)).")
    if dt == np.bool_:
        lo_ok, hi_ok = 0, 2
    elif jnp.issubdtype(dt, jnp.integer):
        info = jnp.iinfo(dt)
        lo_ok, hi_ok = int(info.min), int(info.max) + 1
    else:
        return
    if low < lo_ok or high > hi_ok:
        raise OpError(f"{op}: the range [{low}, {high}) does not fit dtype {dt}, whose values lie in "
                      f"[{lo_ok}, {hi_ok}); pass a wider dtype= or narrow the range.{narrowing_hint(dt)}")


def randint(low: Any = 0, high: Any = None, size: Any = None, *, key: Optional[Key] = None,
            generator: Optional[Generator] = None, dtype: Any = None, device: Any = None,
            requires_grad: bool = False) -> Tensor:
    """Integers drawn uniformly from ``[low, high)``: ``randint(high, size)`` or ``randint(low, high, size)``.

    The dtype defaults to int64 (int32 without JAX's x64 mode); floating dtypes
    hold integer values.

    Example:
        >>> import jax
        >>> import fgraph as fg
        >>> x = fg.randint(3, 7, (100,), key=jax.random.key(0))
        >>> int(x.min()) >= 3 and int(x.max()) < 7
        True
        >>> fg.randint(10, (2, 2), key=jax.random.key(0)).shape
        (2, 2)
    """
    if size is None and isinstance(high, (tuple, list)):  # randint(high, size)
        low, high, size = 0, low, high
    elif high is None:  # randint(high, size=...)
        low, high = 0, low
    if size is None:
        raise TypeError("randint: size is required, e.g. randint(10, (2, 3)) or randint(0, 10, (2, 3)).")
    shape = size_arg((size,), "randint")
    low, high = _int_value(low, "low", "randint"), _int_value(high, "high", "randint")
    dt = canonical_dtype(dtype, "randint")
    dt = _default_int_dtype() if dt is None else dt
    _int_range(low, high, dt, "randint")
    out = _sample(RANDINT, (low, high), RANDINT.Params(shape, dt), key, generator, "randint")
    return leaf(out, requires_grad, device)


def randint_like(input: Tensor, low: Any = 0, high: Any = None, *, key: Optional[Key] = None,
                 generator: Optional[Generator] = None, dtype: Any = None, device: Any = None,
                 requires_grad: bool = False) -> Tensor:
    """:func:`randint` with the shape (and dtype, unless given) of ``input``: ``randint_like(x, high)``
    or ``randint_like(x, low, high)``.

    Example:
        >>> import jax
        >>> import fgraph as fg
        >>> fg.randint_like(fg.zeros(3), 5, key=jax.random.key(0)).dtype
        dtype('float32')
    """
    _check_tensor(input, "input", "randint_like")
    if high is None:
        low, high = 0, low
    return randint(low, high, input.shape, key=key, generator=generator,
                   dtype=input.dtype if dtype is None else dtype, requires_grad=requires_grad,
                   device=like_device(input._array, device))


def randperm(n: int, *, key: Optional[Key] = None, generator: Optional[Generator] = None, dtype: Any = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """A random permutation of ``0 .. n-1`` (int64 by default, int32 without x64).

    Example:
        >>> import jax
        >>> import fgraph as fg
        >>> sorted(fg.randperm(5, key=jax.random.key(0)).tolist())
        [0, 1, 2, 3, 4]
    """
    (n,) = size_arg((n,), "randperm")
    dt = canonical_dtype(dtype, "randperm")
    dt = _default_int_dtype() if dt is None else dt
    if dt != np.bool_ and jnp.issubdtype(dt, jnp.integer) and n > int(jnp.iinfo(dt).max) + 1:
        raise OpError(f"randperm: n={n} does not fit dtype {dt}; pass a wider dtype=.{narrowing_hint(dt)}")
    return leaf(_sample(RANDPERM, (), RANDPERM.Params(n, dt), key, generator, "randperm"), requires_grad, device)


# -- normal -------------------------------------------------------------------------------------------------
def _real(v: Any, name: str, op: str) -> float:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"{op}: {name} must be a Tensor or a real number, got {type(v).__name__} {v!r}.")
    return float(v)


def normal(mean: Any = 0.0, std: Any = 1.0, size: Any = None, *, key: Optional[Key] = None,
           generator: Optional[Generator] = None, dtype: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """Normal samples with the given ``mean`` and ``std`` (standard deviation).

    * Tensor ``mean`` and/or ``std``: the shape is their broadcast shape, the dtype
      their promoted floating dtype, and the result is ``mean + std * eps`` with
      ``eps = randn(...)``: differentiable w.r.t. ``mean`` and ``std`` (PyTorch
      gives zero gradients here).
    * Numbers ``mean`` and ``std``: ``size`` is required; ``dtype=`` and
      ``requires_grad=`` and ``device=`` apply (a new leaf).

    Example:
        >>> import jax
        >>> import fgraph as fg
        >>> key = jax.random.key(0)
        >>> std = fg.ones(3, requires_grad=True)
        >>> y = fg.normal(2.0, std, key=key)
        >>> (g,) = fg.grad(y.sum(), [std])
        >>> g.tolist() == fg.randn(3, key=key).tolist()   # d(mean + std * eps)/dstd = eps
        True
        >>> fg.normal(0.0, 2.0, (2, 3), key=key).shape
        (2, 3)
    """
    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    if not tensors:
        m, s = _real(mean, "mean", "normal"), _real(std, "std", "normal")
        if size is None:
            raise TypeError("normal: with a number mean and std, size is required, e.g. normal(0.0, 1.0, (2, 3)); "
                            "or pass tensor mean/std, whose broadcast shape is the output's.")
        if s < 0:
            raise OpError(f"normal: std must be >= 0, got {s}.")
        shape = size_arg((size,), "normal")
        dt = float_dtype(dtype, "normal")
        return leaf(_sample(NORMAL, (m, s), NORMAL.Params(shape, dt), key, generator, "normal"), requires_grad,
                    device)

    if size is not None or dtype is not None or requires_grad or device is not None:
        raise TypeError(
            "normal: size=, dtype= and requires_grad= apply only to number mean and std (device= too); with tensor "
            "mean/std the shape is their broadcast shape, the dtype and device theirs, and gradients flow to them."
        )
    for name, v in (("mean", mean), ("std", std)):
        if isinstance(v, Tensor):
            if not jnp.issubdtype(v.dtype, jnp.floating):
                raise TypeError(f"normal: {name} must be a floating point tensor, got dtype {v.dtype}; "
                                "convert it with .float().")
        elif _real(v, name, "normal") < 0 and name == "std":
            raise OpError(f"normal: std must be >= 0, got {v}.")
    try:
        shape = tuple(np.broadcast_shapes(*(t.shape for t in tensors)))
    except ValueError:
        raise OpError(
            f"normal: the shapes of mean {tuple(getattr(mean, 'shape', ()))} and std "
            f"{tuple(getattr(std, 'shape', ()))} do not broadcast; align them from the right, where each pair "
            "of sizes is equal or one of them is 1."
        ) from None
    dt = np.dtype(jnp.result_type(*(v._array if isinstance(v, Tensor) else v for v in (mean, std))))
    eps = _sample(RANDN, (), RANDN.Params(shape, dt), key, generator, "normal")
    return add(mean, mul(std, eps))


# -- bernoulli ------------------------------------------------------------------------------------------------
def bernoulli(input: Tensor, p: Optional[float] = None, *, key: Optional[Key] = None,
              generator: Optional[Generator] = None) -> Tensor:
    """0/1 draws: 1 with probability ``input`` (elementwise), or with probability ``p`` if given.

    The output has ``input``'s shape and floating dtype and never requires grad.

    Example:
        >>> import jax
        >>> import fgraph as fg
        >>> fg.bernoulli(fg.tensor([0.0, 1.0, 1.0]), key=jax.random.key(0)).tolist()
        [0.0, 1.0, 1.0]
    """
    _check_tensor(input, "input", "bernoulli")
    if not jnp.issubdtype(input.dtype, jnp.floating):
        raise TypeError(f"bernoulli: input must be a floating point tensor of probabilities, got dtype "
                        f"{input.dtype}; convert it with .float().")
    params = BERNOULLI.Params(tuple(input.shape), input.dtype)
    if p is None:
        return _sample(BERNOULLI, (input,), params, key, generator, "bernoulli")
    pv = _real(p, "p", "bernoulli")
    if not 0.0 <= pv <= 1.0:
        raise OpError(f"bernoulli: p must be in [0, 1], got {pv}.")
    return _sample(BERNOULLI, (pv,), params, key, generator, "bernoulli")


# -- multinomial / poisson ------------------------------------------------------------------------------------
def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *, key: Optional[Key] = None,
                generator: Optional[Generator] = None) -> Tensor:
    """Indices of categories drawn with probabilities proportional to the rows of ``input``.

    ``input`` is 1-D (one distribution) or 2-D (one per row) of non-negative weights, not
    necessarily normalised. Without ``replacement`` each row's draws are distinct
    (``num_samples`` at most the number of categories); a category of weight zero is drawn
    only once every category of positive weight has been. The result has shape
    ``(..., num_samples)``, dtype int64 (int32 without x64), and never requires grad.
    Negative or non-finite weights are not checked (that would need the values on the host).

    Example:
        >>> import jax
        >>> import fgraph as fg
        >>> w = fg.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 5.0]])
        >>> fg.multinomial(w, 2, replacement=True, key=jax.random.key(0)).tolist()
        [[1, 1], [2, 2]]
        >>> sorted(fg.multinomial(fg.ones(4), 4, key=jax.random.key(1)).tolist())
        [0, 1, 2, 3]
    """
    op = "multinomial"
    _check_tensor(input, "input", op)
    if not jnp.issubdtype(input.dtype, jnp.floating):
        raise TypeError(f"{op}: input must be a floating point tensor of weights, got dtype {input.dtype}; "
                        "convert it with .float().")
    if input.ndim not in (1, 2):
        raise OpError(f"{op}: input must be 1-D or 2-D (one distribution per row), got shape {input.shape}.")
    n = _int_value(num_samples, "num_samples", op)
    categories = input.shape[-1]
    if n <= 0:
        raise OpError(f"{op}: num_samples must be positive, got {n}.")
    if categories == 0:
        raise OpError(f"{op}: input (shape {input.shape}) has no categories to draw from.")
    if not replacement and n > categories:
        raise OpError(f"{op}: cannot draw num_samples={n} > {categories} categories without replacement; "
                      "pass replacement=True or fewer samples.")
    params = MULTINOMIAL.Params(n, bool(replacement), _default_int_dtype())
    return _sample(MULTINOMIAL, (input,), params, key, generator, op)


def poisson(input: Tensor, generator: Optional[Generator] = None, *, key: Optional[Key] = None) -> Tensor:
    """Poisson draws with the rates in ``input`` (same shape and floating dtype); never requires grad.

    PyTorch's output requires grad and gets zero gradients; fgraph's leaves the graph, as ``bernoulli``.

    Example:
        >>> import jax
        >>> import fgraph as fg
        >>> fg.poisson(fg.tensor([0.0, 0.0]), key=jax.random.key(0)).tolist()
        [0.0, 0.0]
    """
    _check_tensor(input, "input", "poisson")
    if not jnp.issubdtype(input.dtype, jnp.floating):
        raise TypeError(f"poisson: input must be a floating point tensor of rates, got dtype {input.dtype}; "
                        "convert it with .float().")
    return _sample(POISSON, (input,), None, key, generator, "poisson")


#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {"bernoulli": bernoulli, "multinomial": multinomial}
