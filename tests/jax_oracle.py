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

Forward mode (:mod:`fgraph.autograd.forward_ad`), with the ``v_i`` as tangents:

* the output's tangent against ``jax.jvp`` of the reference;
* with ``mixed=True`` (a sample of the cases: the op tables pass it for each entry's first
  case in float64), forward-over-reverse -- the tangent of the gradients at dual inputs
  against the same Hessian-vector product -- and reverse-over-forward: ``fg.grad`` of
  ``real((tangent * w).sum())`` against ``jax.grad`` of the same function of ``jax.jvp``.

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
import fgraph.autograd.forward_ad as fwAD

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
    return np.zeros(x.shape, x.dtype) if g is None else np.asarray(g.array)


def _reference(ref_fn: Callable, n: int, mixed: bool, jvp_ref: Optional[Callable]) -> Callable:
    """(arrays, extra, w, vs) -> (forward, first derivatives, Hessian-vector products, the tangent along vs,
    reverse-over-forward derivatives or None), in pure JAX."""
    argnums = tuple(range(n))

    def run(arrays, extra, w, vs):
        def loss(*ys):
            return jnp.real(jnp.sum(ref_fn(*ys, *extra) * w))

        def tangent(*ys):
            return jax.jvp(lambda *zs: (jvp_ref or ref_fn)(*zs, *extra), tuple(ys), tuple(vs))[1]

        out = ref_fn(*arrays, *extra)
        jvp_out = tangent(*arrays)
        grads = jax.grad(loss, argnums=argnums)(*arrays)
        _, hvp = jax.jvp(lambda *ys: jax.grad(loss, argnums=argnums)(*ys), tuple(arrays), tuple(vs))
        rof = None
        if mixed and jvp_ref is None:  # with jvp_ref, the tangent's gradient follows neither reference
            rof = jax.grad(lambda *ys: jnp.real(jnp.sum(tangent(*ys) * w)), argnums=argnums)(*arrays)
            rof = tuple(map(jnp.conj, rof))
        conj = tuple(map(jnp.conj, grads)), tuple(map(jnp.conj, hvp))  # PyTorch's convention
        return out, conj[0], conj[1], jvp_out, rof

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
    mixed: bool = False,
    jvp_ref: Optional[Callable[..., jax.Array]] = None,
    forward: bool = True,
) -> None:
    """Check ``fg_fn(*tensors)`` against ``ref_fn(*arrays, *extra)`` (see module docstring).

    ``extra`` are non-differentiable array arguments of the reference (index
    arrays, conditions). With ``jit_key``, the reference is compiled once per key
    (and shapes) with ``jax.jit`` -- one compilation instead of one per primitive;
    ``ref_fn`` must then depend only on its arguments and the key. ``jvp_ref`` (same arguments)
    is the tangent's reference where the op's reverse rule is not its value's derivative
    (embedding's scaled gradient, as in PyTorch): forward mode differentiates the value.
    ``forward=False`` leaves forward mode out (callers that check it elsewhere).
    """
    arrays = [np.asarray(a) for a in arrays]
    extra = tuple(np.asarray(e) for e in extra)
    n = len(arrays)

    out_struct = jax.eval_shape(ref_fn, *arrays, *extra)
    w = fixed_random(out_struct.shape, out_struct.dtype, "w")
    vs = [fixed_random(a.shape, a.dtype, f"v{i}") for i, a in enumerate(arrays)]
    if jit_key is None:
        reference = _reference(ref_fn, n, mixed, jvp_ref)
    else:
        reference = _JITTED.get((jit_key, n, mixed))
        if reference is None:
            reference = _JITTED[(jit_key, n, mixed)] = jax.jit(_reference(ref_fn, n, mixed, jvp_ref))
    ref_out, ref_grads, ref_hvp, ref_jvp, ref_rof = reference(arrays, extra, w, vs)

    # -- forward -----------------------------------------------------------------------
    xs = [fg.tensor(a, dtype=a.dtype, requires_grad=True) for a in arrays]
    out = fg_fn(*xs)
    assert_close(out.array, ref_out, tol, "forward")
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

    if forward:
        _check_forward_mode(fg_fn, xs, w, vs, ref_jvp, ref_hvp if mixed else None, ref_rof, tol)


def _check_forward_mode(fg_fn: Callable, xs: list, w: np.ndarray, vs: list, ref_jvp, ref_hvp, ref_rof,
                        tol: tuple[float, float]) -> None:
    """The tangent along ``vs``; with ``ref_hvp``, forward-over-reverse; with ``ref_rof``, reverse-over-forward
    (module docstring)."""
    with fwAD.dual_level():
        duals = [fwAD.make_dual(x, fg.tensor(v, dtype=v.dtype)) for x, v in zip(xs, vs)]
        out = fg_fn(*duals)
        tangent = fwAD.unpack_dual(out).tangent
        assert_close(_or_zeros(tangent, out), ref_jvp, tol, "forward-mode tangent")
        if ref_hvp is None:
            return
        loss = fg.real((out * fg.tensor(w, dtype=w.dtype)).sum())
        grads = fg.grad(loss, duals, allow_unused=True) if loss.requires_grad else [None] * len(xs)
        for i, (g, rh, x) in enumerate(zip(grads, ref_hvp, xs)):
            g_tangent = None if g is None else fwAD.unpack_dual(g).tangent
            assert_close(_or_zeros(g_tangent, x), rh, tol, f"forward-over-reverse (HVP) w.r.t. input {i}")
    if ref_rof is None:
        return
    target = None if tangent is None else fg.real((tangent * fg.tensor(w, dtype=w.dtype)).sum())
    rof = fg.grad(target, xs, allow_unused=True) if target is not None and target.requires_grad else [None] * len(xs)
    for i, (g, rg, x) in enumerate(zip(rof, ref_rof, xs)):
        assert_close(_or_zeros(g, x), rg, tol, f"reverse-over-forward w.r.t. input {i}")
