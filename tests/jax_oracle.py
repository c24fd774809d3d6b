"""Shared oracle for the property tests: run one program in fgraph and in pure JAX.

``check_against_jax(fg_fn, ref_fn, arrays, tol)`` takes the same program written
twice -- ``fg_fn(*tensors)`` in fgraph ops and ``ref_fn(*arrays)`` in ``jax.numpy``
-- and checks, for the given input arrays:

* the forward value (shape, dtype and numbers);
* the first derivative: ``fg.grad`` of ``real((f(*xs) * w).sum())`` against ``jax.grad``
  of the same pure-JAX program, for every input;
* the second derivative: first gradients with ``create_graph=True``, then
  ``fg.grad`` of ``sum_i real((g_i * conj(v_i)).sum())`` against the Hessian-vector product
  ``jax.jvp(jax.grad(loss), xs, vs)`` (forward-over-reverse, so the oracle does
  not share fgraph's reverse-over-reverse structure).

``w`` and ``v_i`` are fixed pseudo-random arrays that depend only on the shapes,
so a failing example reproduces exactly; they are complex where the output or
input is. Complex inputs: fgraph's gradients follow PyTorch's convention
(``dL/dx + i dL/dy``), ``jax.grad``'s is its conjugate, so every JAX derivative is
conjugated before the comparison. Both HVPs are the same real Hessian applied to
``v`` (the jvp of ``jax.grad`` is ``jax.grad`` of ``real(sum(jax.grad(loss) * v))``,
and that function is fgraph's ``sum_i real((g_i * conj(v_i)).sum())``). For real
tensors ``real`` and ``conj`` change nothing.
"""
from __future__ import annotations

import zlib
from typing import Callable, Hashable, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

import fgraph as fg

#: (rtol, atol) per dtype.
TOLERANCES = {
    np.dtype("float64"): (1e-9, 1e-10),
    np.dtype("float32"): (1e-4, 1e-5),
}


def fixed_random(shape: tuple, dtype, tag: str) -> np.ndarray:
    """A pseudo-random array in [-1, 1] (both parts, for a complex dtype) that depends only on
    ``shape``, ``dtype`` and ``tag``."""
    seed = zlib.crc32(f"{tag}:{tuple(shape)}:{np.dtype(dtype).name}".encode())
    rng = np.random.default_rng(seed)
    values = rng.uniform(-1.0, 1.0, size=shape)
    if np.dtype(dtype).kind == "c":
        values = values + 1j * rng.uniform(-1.0, 1.0, size=shape)
    return values.astype(dtype)


def assert_close(actual, expected, tol: tuple[float, float], what: str) -> None:
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != expected {expected.shape}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != expected {expected.dtype}"
    rtol, atol = tol
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def _or_zeros(g, x) -> np.ndarray:
    return np.zeros(x.shape, x.dtype) if g is None else np.asarray(g.data)


def _reference(ref_fn: Callable, n: int) -> Callable:
    """(arrays, extra, w, vs) -> (forward, first derivatives, Hessian-vector products), in pure JAX."""
    argnums = tuple(range(n))

    def run(arrays, extra, w, vs):
        def loss(*ys):
            return jnp.real(jnp.sum(ref_fn(*ys, *extra) * w))

        out = ref_fn(*arrays, *extra)
        grads = jax.grad(loss, argnums=argnums)(*arrays)
        _, hvp = jax.jvp(lambda *ys: jax.grad(loss, argnums=argnums)(*ys), tuple(arrays), tuple(vs))
        return out, tuple(map(jnp.conj, grads)), tuple(map(jnp.conj, hvp))  # PyTorch's convention

    return run


_JITTED: dict = {}


def check_against_jax(
    fg_fn: Callable[..., fg.Tensor],
    ref_fn: Callable[..., jax.Array],
    arrays: Sequence[np.ndarray],
    tol: tuple[float, float],
    *,
    extra: Sequence[np.ndarray] = (),
    jit_key: Optional[Hashable] = None,
) -> None:
    """Check ``fg_fn(*tensors)`` against ``ref_fn(*arrays, *extra)`` (see module docstring).

    ``extra`` are non-differentiable array arguments of the reference (index
    arrays, conditions). With ``jit_key``, the reference is compiled once per key
    (and shapes) with ``jax.jit`` -- one compilation instead of one per primitive;
    ``ref_fn`` must then depend only on its arguments and the key.
    """
    arrays = [np.asarray(a) for a in arrays]
    extra = tuple(np.asarray(e) for e in extra)
    n = len(arrays)

    out_struct = jax.eval_shape(ref_fn, *arrays, *extra)
    w = fixed_random(out_struct.shape, out_struct.dtype, "w")
    vs = [fixed_random(a.shape, a.dtype, f"v{i}") for i, a in enumerate(arrays)]
    if jit_key is None:
        reference = _reference(ref_fn, n)
    else:
        reference = _JITTED.get((jit_key, n))
        if reference is None:
            reference = _JITTED[(jit_key, n)] = jax.jit(_reference(ref_fn, n))
    ref_out, ref_grads, ref_hvp = reference(arrays, extra, w, vs)

    # -- forward -----------------------------------------------------------------------
    xs = [fg.tensor(a, dtype=a.dtype, requires_grad=True) for a in arrays]
    out = fg_fn(*xs)
    assert_close(out.data, ref_out, tol, "forward")
    assert out.requires_grad, "the output of a differentiable op on inputs that require grad must require grad"

    # -- first derivative of real((f(*xs) * w).sum()) -------------------------------------------
    loss = fg.real((out * fg.tensor(w, dtype=w.dtype)).sum())
    grads = fg.grad(loss, xs, allow_unused=True)
    assert len(grads) == n
    for i, (g, rg, x) in enumerate(zip(grads, ref_grads, xs)):
        assert_close(_or_zeros(g, x), rg, tol, f"first derivative w.r.t. input {i}")

    # -- second derivative: grad of sum_i real((g_i * conj(v_i)).sum()), a Hessian-vector product
    grads = fg.grad(loss, xs, create_graph=True, allow_unused=True)
    total = None
    for g, v in zip(grads, vs):
        if g is not None and g.requires_grad:
            term = fg.real((g * fg.tensor(np.conj(v), dtype=v.dtype)).sum())
            total = term if total is None else total + term
    if total is None:  # no first derivative depends on the inputs: f is linear
        hvp = [None] * n
    else:
        hvp = fg.grad(total, xs, allow_unused=True)
    for i, (h, rh, x) in enumerate(zip(hvp, ref_hvp, xs)):
        assert_close(_or_zeros(h, x), rh, tol, f"second derivative (HVP) w.r.t. input {i}")
