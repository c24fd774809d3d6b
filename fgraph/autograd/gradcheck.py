"""Check gradients against central finite differences: ``gradcheck`` and ``gradgradcheck``.

``gradcheck`` compares, for every output ``o`` that requires grad and every
input ``i`` that requires grad, two Jacobians of shape
``(outputs[o].numel(), inputs[i].numel())``:

* **numerical** — each input element is perturbed by ``±eps`` and
  ``(f(x + eps) - f(x - eps)) / (2 eps)`` is taken, in float64;
* **analytical** — one row per output element, from ``fg.grad`` seeded with a
  unit ``grad_outputs`` (all rows in one backward pass under ``jax.vmap``,
  ``is_grads_batched=True``; row by row if the backward cannot be traced).

They must satisfy ``|analytical - numerical| <= atol + rtol * |numerical|``
entry-wise. A mismatch raises :class:`GradcheckError`, whose message names the
output and input, the worst entry, its numerical and analytical values and the
largest absolute difference. Inputs that require grad must be float64 or
complex128: finite differences in lower precision are too noisy to tell a wrong
gradient from rounding (JAX's 64-bit mode must be on).

Complex inputs and outputs are checked through their real and imaginary parts as
real numbers (``view_as_real``): the Jacobians compared are those of the real map,
which do not depend on a convention, while the analytical one comes through
fgraph's complex gradients (PyTorch's convention), so a rule that conjugates where
it should not fails the check.

``gradgradcheck`` runs ``gradcheck`` on the function
``(inputs, grad_outputs) -> fg.grad(func(*inputs), inputs, grad_outputs, create_graph=True)``,
which checks second derivatives.

Example:
    >>> import jax
    >>> jax.config.update("jax_enable_x64", True)
    >>> import fgraph as fg
    >>> from fgraph.autograd import gradcheck
    >>> x = fg.tensor([0.5, 1.5], dtype=fg.float64, requires_grad=True)
    >>> gradcheck(lambda t: (fg.sin(t) * t).sum(), (x,))
    True
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import jax.numpy as jnp
import numpy as np

from fgraph.autograd.engine import grad as _engine_grad
from fgraph.autograd.functional import _NOT_TRACEABLE
from fgraph.autograd.grad_mode import enable_grad
from fgraph.tensor import Tensor, _wrap

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]

_FLOAT64 = np.dtype("float64")
_COMPLEX128 = np.dtype("complex128")
_MAX_PRINTED_ENTRIES = 400
#: Relative difference between two backward passes put down to reassociation, not nondeterminism.
_REASSOCIATION_RTOL = 1e-12


class GradcheckError(RuntimeError):
    """Raised by :func:`gradcheck` / :func:`gradgradcheck` when a gradient disagrees with finite differences."""


# -- public entry points --------------------------------------------------------------------------
def gradcheck(
    func: Callable[..., Any],
    inputs: Any,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    fast_mode: bool = False,
) -> bool:
    """Check the gradients of ``func(*inputs)`` against central finite differences.

    Args:
        func: takes the inputs, returns a Tensor or a tuple of Tensors.
        inputs: a Tensor or a tuple of inputs; the Tensors that require grad
            (they must be float64) are checked, everything else is passed through.
        eps: finite-difference step.
        atol: absolute tolerance: an entry passes if ``|a - n| <= atol + rtol * |n|``.
        rtol: relative tolerance (see ``atol``).
        raise_exception: raise :class:`GradcheckError` on failure (else return False).
        nondet_tol: how far two backward passes with the same seeds may differ. Differences
            up to 1e-12 relative to the Jacobian's scale are always allowed: a repeated
            graph may run as one fused XLA program, which reorders sums.
        check_undefined_grad: also check that all-zero ``grad_outputs`` give zero
            (or no) input gradients. fgraph has no "undefined" gradients: missing
            output gradients are zeros, so this is the analogue of PyTorch's check.
        fast_mode: compare ``v^T J u`` for random unit ``u``, ``v`` instead of whole
            Jacobians (one numerical difference per input); a failure is re-examined
            entry by entry for the report.

    Returns:
        True if every check passed (False on failure with ``raise_exception=False``).

    Example:
        >>> import jax
        >>> jax.config.update("jax_enable_x64", True)
        >>> import fgraph as fg
        >>> a = fg.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=fg.float64, requires_grad=True)
        >>> b = fg.tensor([0.5, -1.0], dtype=fg.float64, requires_grad=True)
        >>> fg.autograd.gradcheck(lambda a, b: fg.tanh(a @ b), (a, b))
        True
    """
    tupled = _as_tuple(inputs)
    diff_idx = _differentiable_inputs(tupled, "gradcheck")
    try:
        _run_checks(func, tupled, diff_idx, eps=eps, atol=atol, rtol=rtol, nondet_tol=nondet_tol,
                    check_undefined_grad=check_undefined_grad, fast_mode=fast_mode,
                    labels=_Labels())
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def gradgradcheck(
    func: Callable[..., Any],
    inputs: Any,
    grad_outputs: Any = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    fast_mode: bool = False,
) -> bool:
    """Check second derivatives by :func:`gradcheck` of the gradient function.

    The function checked is
    ``(*inputs, *grad_outputs) -> fg.grad(func(*inputs), inputs, grad_outputs, create_graph=True)``;
    its gradients are checked with respect to the inputs and to ``grad_outputs``.
    Without ``grad_outputs``, random float64 values in ``[-1, 1)`` are drawn from
    a fixed NumPy seed (so the check is reproducible). ``gen_non_contig_grad_outputs``
    is accepted for PyTorch compatibility and ignored: JAX arrays expose no strides.

    Example:
        >>> import jax
        >>> jax.config.update("jax_enable_x64", True)
        >>> import fgraph as fg
        >>> x = fg.tensor([0.5, 1.5], dtype=fg.float64, requires_grad=True)
        >>> fg.autograd.gradgradcheck(lambda t: fg.exp(t) * t, (x,))
        True
    """
    tupled = _as_tuple(inputs)
    diff_in = _differentiable_inputs(tupled, "gradgradcheck")
    if grad_outputs is None:
        with enable_grad():
            outs = [o for o in _call(func, tupled) if o.requires_grad]
        rng = np.random.default_rng(0)
        tupled_go: tuple = tuple(_leaf(_uniform(rng, o), o.dtype if o.dtype.kind == "c" else _FLOAT64, True)
                                 for o in outs)
    else:
        tupled_go = _as_tuple(grad_outputs)
        for k, g in enumerate(tupled_go):
            if isinstance(g, Tensor) and g.requires_grad and g.dtype not in (_FLOAT64, _COMPLEX128):
                raise TypeError(
                    f"gradgradcheck: grad_outputs[{k}] requires grad and has dtype {g.dtype}; it must be float64 "
                    "or complex128 (or not require grad)."
                )
    n_out = len(tupled_go)
    if n_out == 0:
        raise ValueError("gradgradcheck: func has no output that requires grad, so there is no gradient to check.")
    n_in = len(tupled)
    diff_go = [k for k, g in enumerate(tupled_go) if isinstance(g, Tensor) and g.requires_grad]

    def grad_of_func(*args: Any) -> tuple:
        input_args = tuple(_ensure_requires_grad(x) if i in diff_in else x for i, x in enumerate(args[:n_in]))
        outputs = tuple(o for o in _call(func, input_args) if o.requires_grad)
        seeds = tuple(_ensure_requires_grad(g) if k in diff_go else g for k, g in enumerate(args[n_in:]))
        wrt = tuple(input_args[i] for i in diff_in)
        return _engine_grad(outputs, wrt, seeds, create_graph=True, materialize_grads=True)

    labels = _Labels(
        inputs={n_in + k: f"input {n_in + k} (grad_outputs[{k}])" for k in range(n_out)},
        outputs={k: f"output {k} (the gradient with respect to input {i})" for k, i in enumerate(diff_in)},
    )
    all_inputs = tupled + tupled_go
    try:
        _run_checks(grad_of_func, all_inputs, _differentiable_inputs(all_inputs, "gradgradcheck"), eps=eps,
                    atol=atol, rtol=rtol, nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad,
                    fast_mode=fast_mode, labels=labels)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


# -- argument handling ------------------------------------------------------------------------------
class _Labels:
    """How inputs and outputs are named in reports (gradgradcheck renames some)."""

    def __init__(self, inputs: Optional[dict] = None, outputs: Optional[dict] = None) -> None:
        self._inputs = inputs or {}
        self._outputs = outputs or {}

    def input(self, i: int) -> str:
        return self._inputs.get(i, f"input {i}")

    def output(self, o: int) -> str:
        return self._outputs.get(o, f"output {o}")


def _as_tuple(x: Any) -> tuple:
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _differentiable_inputs(tupled: tuple, fn: str) -> list[int]:
    """Indices of the inputs that require grad; each must be float64 or complex128."""
    diff = []
    for i, x in enumerate(tupled):
        if isinstance(x, Tensor) and x.requires_grad:
            if x.dtype not in (_FLOAT64, _COMPLEX128):
                wider = "complex128" if x.dtype.kind == "c" else "double()"
                raise TypeError(
                    f"{fn}: input {i} requires grad and has dtype {x.dtype}, but gradient checks need float64 "
                    "(or complex128) inputs: finite differences in lower precision cannot tell a wrong gradient "
                    f"from rounding error. Pass x.detach().{'to(fg.complex128)' if wider == 'complex128' else wider}"
                    ".requires_grad_() (with jax_enable_x64 on)."
                )
            diff.append(i)
    if not diff:
        raise ValueError(f"{fn} expects at least one input tensor to require gradient, but none of them have "
                         "requires_grad=True.")
    return diff


def _call(func: Callable[..., Any], args: Sequence[Any]) -> tuple:
    out = _as_tuple(func(*args))
    for o, t in enumerate(out):
        if not isinstance(t, Tensor):
            raise TypeError(f"gradcheck: output {o} of the function is a {type(t).__name__}, expected a Tensor.")
    return out


def _leaf(values: np.ndarray, dtype: Any, requires_grad: bool) -> Tensor:
    t = _wrap(jnp.asarray(values, dtype=dtype))
    return t.requires_grad_() if requires_grad else t


def _uniform(rng: np.random.Generator, like: Tensor) -> np.ndarray:
    """Values in ``[-1, 1)`` shaped like ``like`` (both parts, for a complex ``like``)."""
    values = rng.uniform(-1.0, 1.0, size=like.shape)
    return values + 1j * rng.uniform(-1.0, 1.0, size=like.shape) if like.dtype.kind == "c" else values


def _ensure_requires_grad(x: Any) -> Any:
    return x if not isinstance(x, Tensor) or x.requires_grad else x.detach().requires_grad_()


def _is_float(t: Tensor) -> bool:
    return bool(jnp.issubdtype(t.dtype, jnp.floating))


# -- the checks ---------------------------------------------------------------------------------------
def _run_checks(func: Callable[..., Any], tupled: tuple, diff_idx: list[int], *, eps: float, atol: float,
                rtol: float, nondet_tol: float, check_undefined_grad: bool, fast_mode: bool,
                labels: _Labels) -> None:
    func, tupled = _real_view(func, tupled, diff_idx)
    with enable_grad():
        outputs = _call(func, tupled)
        diff_out = [o for o, t in enumerate(outputs) if t.requires_grad]
        if not diff_out:
            _check_no_differentiable_outputs(func, tupled, outputs, diff_idx, eps, labels)
            return
        if fast_mode:
            _fast_check(func, tupled, outputs, diff_idx, diff_out, eps, atol, rtol, nondet_tol, labels)
        else:
            _slow_check(func, tupled, outputs, diff_idx, diff_out, eps, atol, rtol, nondet_tol, labels)
        if check_undefined_grad:
            _check_zero_grad_outputs(outputs, tupled, diff_idx, diff_out, labels)


def _real_view(func: Callable[..., Any], tupled: tuple, diff_idx: list[int]) -> tuple[Callable[..., Any], tuple]:
    """``func`` and ``tupled`` with complex inputs that require grad passed as ``view_as_real`` leaves (float64,
    a last dimension of 2) and complex outputs returned so too (see the module docstring)."""
    complex_in = tuple(i for i in diff_idx if tupled[i].dtype.kind == "c")
    with enable_grad():
        complex_out = any(t.dtype.kind == "c" for t in _call(func, tupled))
    if not complex_in and not complex_out:
        return func, tupled
    from fgraph.ops.complex_more import view_as_real

    real = tuple(view_as_real(x).detach().requires_grad_() if i in complex_in else x for i, x in enumerate(tupled))
    return _RealView(func, complex_in), real


class _RealView:
    """``func`` on ``view_as_real`` leaves for the inputs ``complex_in``, with complex outputs as real views."""

    __slots__ = ("func", "complex_in")

    def __init__(self, func: Callable[..., Any], complex_in: tuple) -> None:
        self.func, self.complex_in = func, complex_in

    def __call__(self, *args: Any) -> tuple:
        from fgraph.ops.complex_more import view_as_complex, view_as_real

        args = tuple(view_as_complex(a) if i in self.complex_in else a for i, a in enumerate(args))
        return tuple(view_as_real(o) if o.dtype.kind == "c" else o for o in _call(self.func, args))


def _evaluate(func: Callable[..., Any], tupled: tuple, i: int, values: np.ndarray, outputs: tuple,
              eps: float) -> list:
    """``func`` with input ``i`` replaced by ``values``: each float output as a float64 array (else None).

    The perturbed outputs must keep the original outputs' number, shapes and dtypes (as in PyTorch).
    """
    args = list(tupled)
    args[i] = _leaf(values, tupled[i].dtype, True)
    outs = _call(func, args)
    if len(outs) != len(outputs):
        raise GradcheckError(f"gradcheck: func returned {len(outs)} outputs for perturbed inputs, "
                             f"{len(outputs)} at the original ones.")
    for o, (new, old) in enumerate(zip(outs, outputs)):
        if new.shape != old.shape or new.dtype != old.dtype:
            what = "shape" if new.shape != old.shape else "dtype"
            raise GradcheckError(
                f"gradcheck: expected func to return outputs with the same {what} when input {i} is perturbed by "
                f"{eps}, but output {o} has {what} {getattr(old, what)} at the original inputs and "
                f"{getattr(new, what)} at the perturbed ones; the function must not branch on input values."
            )
    return [np.asarray(o._array, dtype=np.float64) if _is_float(o) else None for o in outs]


def _numerical_jacobians(func: Callable[..., Any], tupled: tuple, outputs: tuple, i: int, eps: float) -> list:
    """For input ``i``: one ``(outputs[o].numel(), inputs[i].numel())`` matrix per float output (else None)."""
    base = np.array(tupled[i]._array, dtype=np.float64)
    flat = base.reshape(-1)
    columns: list[list] = []
    for k in range(flat.size):
        orig = flat[k]
        flat[k] = orig + eps
        plus = _evaluate(func, tupled, i, base.copy(), outputs, eps)
        flat[k] = orig - eps
        minus = _evaluate(func, tupled, i, base.copy(), outputs, eps)
        flat[k] = orig
        columns.append([None if p is None else ((p - m) / (2 * eps)).reshape(-1) for p, m in zip(plus, minus)])
    result = []
    for o, out in enumerate(outputs):
        if not _is_float(out):
            result.append(None)
        elif columns:
            result.append(np.stack([c[o] for c in columns], axis=1))
        else:
            result.append(np.zeros((out.numel(), 0)))
    return result


def _batched_vjps(outputs: tuple, inputs: tuple, seeds: tuple) -> tuple:
    """``fg.grad`` for a batch of seeds (leading dim): under ``jax.vmap`` if possible, else row by row."""
    try:
        return _engine_grad(outputs, inputs, seeds, allow_unused=True, is_grads_batched=True)
    except _NOT_TRACEABLE:
        pass
    n = seeds[0].shape[0]
    rows = [_engine_grad(outputs, inputs, tuple(_wrap(s._array[r]) for s in seeds), allow_unused=True)
            for r in range(n)]
    return tuple(None if rows[0][k] is None else _wrap(jnp.stack([row[k]._array for row in rows]))
                 for k in range(len(inputs)))


def _analytical_jacobians(outputs: tuple, tupled: tuple, diff_idx: list[int], diff_out: list[int]) -> dict:
    """``{(o, i): (outputs[o].numel(), inputs[i].numel()) matrix}`` from unit-seeded backward passes."""
    outs = tuple(outputs[o] for o in diff_out)
    inputs = tuple(tupled[i] for i in diff_idx)
    numels = [o.numel() for o in outs]
    total = sum(numels)
    if total:
        eye = np.eye(total)
        starts = np.cumsum([0] + numels)
        seeds = tuple(_wrap(jnp.asarray(eye[:, starts[k]:starts[k + 1]].reshape((total,) + out.shape), out.dtype))
                      for k, out in enumerate(outs))
        grads = _batched_vjps(outs, inputs, seeds)
    else:
        grads = (None,) * len(inputs)
    result = {}
    start = 0
    for o, n in zip(diff_out, numels):
        for i, x, g in zip(diff_idx, inputs, grads):
            if g is None:
                result[(o, i)] = np.zeros((n, x.numel()))
            else:
                result[(o, i)] = np.asarray(g._array, dtype=np.float64).reshape(total, -1)[start:start + n]
        start += n
    return result


def _slow_check(func: Callable[..., Any], tupled: tuple, outputs: tuple, diff_idx: list[int], diff_out: list[int],
                eps: float, atol: float, rtol: float, nondet_tol: float, labels: _Labels) -> None:
    analytical = _analytical_jacobians(outputs, tupled, diff_idx, diff_out)
    for i in diff_idx:
        numerical = _numerical_jacobians(func, tupled, outputs, i, eps)
        for o in diff_out:
            a, n = analytical[(o, i)], numerical[o]
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                raise GradcheckError(_mismatch_report(a, n, outputs[o], tupled[i], o, i, atol, rtol, labels))
    _check_reentrant(analytical, _analytical_jacobians(outputs, tupled, diff_idx, diff_out), nondet_tol, labels)


def _rounding_allowance(*values: Any) -> float:
    """Differences a repeated backward may show without being nondeterministic.

    The engine runs a graph it has seen before as one fused XLA program (see
    :mod:`fgraph.autograd.fusion`), which may reassociate sums: the two passes then
    differ in the last bits. That much is always allowed on top of ``nondet_tol``.
    """
    scale = max([1.0] + [float(np.max(np.abs(v))) for v in values if np.size(v) and np.all(np.isfinite(v))])
    return _REASSOCIATION_RTOL * scale


def _check_reentrant(first: dict, second: dict, nondet_tol: float, labels: _Labels) -> None:
    for key, a in first.items():
        b = second[key]
        if a.size and not np.all(np.abs(a - b) <= nondet_tol + _rounding_allowance(a, b)):
            o, i = key
            raise GradcheckError(
                f"Backward is not reentrant, i.e., running backward with same input and grad_output multiple "
                f"times gives different values (for {labels.output(o)} with respect to {labels.input(i)}: max "
                f"difference {np.max(np.abs(a - b)):.6g}), although analytical gradient matches numerical "
                f"gradient. The tolerance for nondeterminism was {nondet_tol}."
            )


def _fast_check(func: Callable[..., Any], tupled: tuple, outputs: tuple, diff_idx: list[int], diff_out: list[int],
                eps: float, atol: float, rtol: float, nondet_tol: float, labels: _Labels) -> None:
    """Compare ``v^T J u`` (numerical: one directional difference per input; analytical: one vjp per output)."""
    rng = np.random.default_rng(0)
    u = {i: _unit(rng.random(tupled[i].numel())) for i in diff_idx}
    v = {o: _unit(rng.random(outputs[o].numel())) for o in diff_out}

    def analytical_vju() -> dict:
        res = {}
        wrt = tuple(tupled[i] for i in diff_idx)
        for o in diff_out:
            seed = _wrap(jnp.asarray(v[o].reshape(outputs[o].shape), outputs[o].dtype))
            grads = _engine_grad((outputs[o],), wrt, (seed,), allow_unused=True)
            for i, g in zip(diff_idx, grads):
                res[(o, i)] = 0.0 if g is None else float(np.asarray(g._array, np.float64).reshape(-1) @ u[i])
        return res

    analytical = analytical_vju()
    for i in diff_idx:
        base = np.array(tupled[i]._array, dtype=np.float64)
        step = eps * u[i].reshape(base.shape)
        plus = _evaluate(func, tupled, i, base + step, outputs, eps)
        minus = _evaluate(func, tupled, i, base - step, outputs, eps)
        for o in diff_out:
            n = float(v[o] @ ((plus[o] - minus[o]) / (2 * eps)).reshape(-1))
            a = analytical[(o, i)]
            tol = atol * u[i].sum() * v[o].sum() + rtol * abs(n)
            if not abs(a - n) <= tol:
                slow_a = _analytical_jacobians(outputs, tupled, [i], [o])[(o, i)]
                slow_n = _numerical_jacobians(func, tupled, outputs, i, eps)[o]
                slow = _mismatch_report(slow_a, slow_n, outputs[o], tupled[i], o, i, atol, rtol, labels)
                verdict = ("" if not np.allclose(slow_a, slow_n, rtol=rtol, atol=atol) else
                           "Entry by entry the Jacobians agree within tolerance: the fast-mode check is stricter "
                           "here; rerun with fast_mode=False.\n")
                raise GradcheckError(
                    f"Jacobian mismatch for {labels.output(o)} with respect to {labels.input(i)} (fast mode: "
                    f"v^T J u for random unit u, v):\n  numerical:  {n:.10g}\n  analytical: {a:.10g}\n"
                    f"  abs difference: {abs(a - n):.6g} (allowed {tol:.6g})\n\n"
                    f"Recomputed entry by entry:\n{slow}{verdict}"
                )
    second = analytical_vju()
    for key, a in analytical.items():
        if not abs(a - second[key]) <= nondet_tol + _rounding_allowance(a, second[key]):
            o, i = key
            raise GradcheckError(
                f"Backward is not reentrant, i.e., running backward with same input and grad_output multiple "
                f"times gives different values (for {labels.output(o)} with respect to {labels.input(i)}), "
                f"although analytical gradient matches numerical gradient. The tolerance for nondeterminism "
                f"was {nondet_tol}."
            )


def _unit(vec: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(vec)
    return vec / norm if norm > 0 else vec


def _check_no_differentiable_outputs(func: Callable[..., Any], tupled: tuple, outputs: tuple, diff_idx: list[int],
                                     eps: float, labels: _Labels) -> None:
    """No output requires grad: then every numerical derivative must be zero."""
    for i in diff_idx:
        for o, n in enumerate(_numerical_jacobians(func, tupled, outputs, i, eps)):
            if n is not None and not np.allclose(n, 0.0):
                raise GradcheckError(
                    f"Numerical gradient for function expected to be zero: {labels.output(o)} does not require "
                    f"grad, but its numerical derivative with respect to {labels.input(i)} is not zero (max abs "
                    f"{np.max(np.abs(n)):.6g}). The output was computed outside the graph (detached, no_grad, or "
                    "through a non-differentiable op)."
                )


def _check_zero_grad_outputs(outputs: tuple, tupled: tuple, diff_idx: list[int], diff_out: list[int],
                             labels: _Labels) -> None:
    """All-zero grad_outputs must give zero (or no) input gradients: backward is linear in them."""
    outs = tuple(outputs[o] for o in diff_out)
    zeros = tuple(_wrap(jnp.zeros(o.shape, o.dtype)) for o in outs)
    try:
        grads = _engine_grad(outs, tuple(tupled[i] for i in diff_idx), zeros, allow_unused=True)
    except Exception as exc:  # noqa: BLE001 - reported with its cause
        raise GradcheckError(f"Expected backward to handle all-zero output gradients, but it raised "
                             f"{type(exc).__name__}: {exc}") from exc
    for i, g in zip(diff_idx, grads):
        if g is not None and np.any(np.asarray(g._array) != 0):
            raise GradcheckError(
                f"Expected all input grads to be zero when all output grads are zero, but the gradient for "
                f"{labels.input(i)} has max abs value {np.max(np.abs(np.asarray(g.array))):.6g}: the backward is "
                "not linear in grad_outputs (a derivative rule or hook adds a constant?)."
            )


# -- reports --------------------------------------------------------------------------------------------
def _mismatch_report(a: np.ndarray, n: np.ndarray, out: Tensor, inp: Tensor, o: int, i: int, atol: float,
                     rtol: float, labels: _Labels) -> str:
    """Which entry is worst, its values, and (when small) both Jacobians."""
    diff = np.abs(a - n)
    allowed = atol + rtol * np.abs(n)
    excess = np.where(np.isnan(diff), np.inf, diff - allowed)
    row, col = np.unravel_index(int(np.argmax(excess)), a.shape)
    out_index = _multi_index(row, out.shape)
    in_index = _multi_index(col, inp.shape)
    bad = int(np.sum(~np.isclose(a, n, rtol=rtol, atol=atol)))
    lines = [
        f"Jacobian mismatch for {labels.output(o)} with respect to {labels.input(i)}:",
        f"  {labels.output(o)} has shape {out.shape}, {labels.input(i)} has shape {inp.shape} and dtype {inp.dtype}; "
        f"the Jacobian has shape {a.shape} (rows: output elements, columns: input elements).",
        f"  worst entry: Jacobian[{row}, {col}] = d output[{o}]{out_index} / d input[{i}]{in_index}",
        f"    numerical:  {n[row, col]:.10g}",
        f"    analytical: {a[row, col]:.10g}",
        f"  max abs difference: {np.nanmax(diff) if not np.all(np.isnan(diff)) else float('nan'):.6g} "
        f"(at the worst entry: {diff[row, col]:.6g}, allowed {allowed[row, col]:.6g} = atol + rtol * |numerical| "
        f"with atol={atol}, rtol={rtol}); {bad} of {a.size} entries outside tolerance.",
    ]
    if a.size <= _MAX_PRINTED_ENTRIES:
        with np.printoptions(precision=6, suppress=True, linewidth=120):
            lines += ["numerical:", str(n), "analytical:", str(a)]
    return "\n".join(lines) + "\n"


def _multi_index(flat: int, shape: tuple) -> str:
    if not shape:
        return ""
    return "[" + ", ".join(str(int(k)) for k in np.unravel_index(flat, shape)) + "]"
