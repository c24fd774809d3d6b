"""Check fgraph's derivatives against ``jax.grad`` of the same program.

:func:`check_grads` differentiates a scalar fgraph function twice over: once with
fgraph's engine (``fg.grad``, through ``create_graph`` for higher orders) and once with
``jax.grad`` of the *same program traced by JAX* -- the inputs are plain Tensors around
JAX tracers, nothing is recorded, and JAX differentiates the forward kernels
themselves. Derivative rules, custom :class:`fgraph.autograd.Function` backwards and
the engine are therefore checked against an AD system that shares none of them.

Order ``k > 1`` compares directional derivatives: with a fixed random direction ``v``
per input, order 2 is the gradient of ``sum_i <g_i, v_i>`` (Hessian-vector products),
order 3 the gradient of ``sum_i <h_i, v_i>``, and so on.

Complex inputs: fgraph's gradients follow PyTorch's convention (``dL/dx + i dL/dy``),
``jax.grad``'s is its conjugate, so JAX's side is conjugated before the comparison, and
``<g, v>`` is the real inner product ``real(sum(g * conj(v)))`` (``sum(g * v)`` for real ``v``).

Example:
    >>> import fgraph as fg
    >>> from interop.check import check_grads
    >>> report = check_grads(lambda x: (fg.sin(x) * x).sum(), fg.tensor([0.5, 1.5]))
    >>> report.passed, [(e.input, e.order) for e in report.entries]
    (True, [('args[0]', 1), ('args[0]', 2)])
"""
from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from fgraph.autograd.engine import grad as _fg_grad
from fgraph.autograd.grad_mode import enable_grad
from fgraph.errors import TracedValueError
from fgraph.ops.complex_parts import real
from fgraph.tensor import Tensor

__all__ = ["check_grads", "GradientMismatch", "GradCheckReport", "GradCheckEntry", "default_tolerances"]

_MODES = ("rev", "fwd")
#: What JAX raises when a traced function reads a value on the host.
_HOST_READS = (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError,
               jax.errors.TracerBoolConversionError, jax.errors.TracerIntegerConversionError, TracedValueError)
#: ``(rtol, atol)`` by the least precise floating dtype among the inputs and the output.
#: Both sides are exact derivatives of the same kernels, so the only differences are
#: rounding in differently arranged formulas (a rule's ``x * cos(x)`` against JAX's
#: transposed JVP). Over the whole registry (``docs/crosscheck.md``) the largest
#: differences are ~1e-14 relative in float64 and ~5e-5 in float32 (on entries near zero),
#: so both leave a wide margin while a backward off by 0.1% still fails.
_TOLERANCES = {
    np.dtype("float64"): (1e-9, 1e-11),
    np.dtype("float32"): (2e-4, 2e-5),
    np.dtype("float16"): (2e-2, 2e-3),
    np.dtype(jnp.bfloat16): (5e-2, 5e-3),
}


class GradCheckEntry(NamedTuple):
    """One compared gradient: an input (or the JVP) at one order."""

    input: str  #: ``'args[i]'`` (position in ``check_grads``'s arguments) or ``'jvp'``
    order: int  #: derivative order (1: gradient, 2: Hessian-vector product, ...)
    mode: str  #: ``'rev'`` (gradients) or ``'fwd'`` (Jacobian-vector product)
    shape: tuple  #: shape of the compared arrays
    max_abs: float  #: largest ``|fgraph - jax|``
    max_rel: float  #: largest ``|fgraph - jax| / |jax|`` over entries with ``|jax| > atol``
    worst_index: tuple  #: index of the entry that uses most of its tolerance
    fgraph_value: complex  #: fgraph's value there (a float for real inputs)
    jax_value: complex  #: JAX's value there, in PyTorch's convention (conjugated for complex inputs)
    ratio: float  #: ``|fgraph - jax| / (atol + rtol * |jax|)`` there; above 1 is a mismatch
    passed: bool
    note: str = ""  #: why it failed beyond the numbers (a shape mismatch, NaN on one side)


class GradCheckReport:
    """What :func:`check_grads` compared: one :class:`GradCheckEntry` per input, order and mode.

    ``str(report)`` is a readable table; :attr:`worst` is the entry closest to (or
    furthest past) its tolerance.

    Example:
        >>> import fgraph as fg
        >>> from interop.check import check_grads
        >>> r = check_grads(lambda x: (x ** 3).sum(), fg.tensor([1.0, 2.0]), order=1)
        >>> r.worst.input, r.worst.order, r.passed
        ('args[0]', 1, True)
    """

    def __init__(self, entries: Sequence[GradCheckEntry], dtype: np.dtype, rtol: float, atol: float) -> None:
        self.entries = tuple(entries)
        self.dtype = dtype
        self.rtol = rtol
        self.atol = atol

    @property
    def passed(self) -> bool:
        """Every entry is within tolerance."""
        return all(e.passed for e in self.entries)

    @property
    def worst(self) -> GradCheckEntry:
        """The entry with the largest tolerance ratio (failed entries first)."""
        return max(self.entries, key=_badness)

    @property
    def max_abs(self) -> float:
        """Largest absolute error over all entries."""
        return max(e.max_abs for e in self.entries)

    @property
    def max_rel(self) -> float:
        """Largest relative error over all entries."""
        return max(e.max_rel for e in self.entries)

    def __str__(self) -> str:
        orders = sorted({e.order for e in self.entries})
        modes = list(dict.fromkeys(e.mode for e in self.entries))
        head = (f"check_grads: fgraph against jax.grad, orders {orders[0]}-{orders[-1]}, modes {','.join(modes)}, "
                f"{self.dtype} (rtol={self.rtol:g}, atol={self.atol:g}): {'passed' if self.passed else 'MISMATCH'}")
        rows = [("input", "order", "mode", "shape", "max abs err", "max rel err", "worst index", "status")]
        for e in self.entries:
            status = "ok" if e.passed else "MISMATCH" + (f" ({e.note})" if e.note else "")
            rows.append((e.input, str(e.order), e.mode, str(e.shape), f"{e.max_abs:.3g}", f"{e.max_rel:.3g}",
                         str(e.worst_index), status))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = [head] + ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        w = self.worst
        lines.append(f"  worst: {w.input} order {w.order} ({w.mode}) at index {w.worst_index}: "
                     f"fgraph {w.fgraph_value!r}, jax {w.jax_value!r} ({w.ratio:.3g} x tolerance)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        w = self.worst
        return (f"<GradCheckReport {'passed' if self.passed else 'MISMATCH'}: {len(self.entries)} entries, "
                f"max abs {self.max_abs:.3g}, worst {w.input} order {w.order}>")


class GradientMismatch(AssertionError):
    """fgraph's derivatives differ from ``jax.grad``'s; ``.report`` holds the :class:`GradCheckReport`."""

    def __init__(self, report: GradCheckReport) -> None:
        super().__init__(str(report))
        self.report = report


def default_tolerances(dtype: Any) -> tuple[float, float]:
    """``(rtol, atol)`` that :func:`check_grads` uses for ``dtype`` when none are given.

    Example:
        >>> from interop.check import default_tolerances
        >>> default_tolerances("float64"), default_tolerances("float32")
        ((1e-09, 1e-11), (0.0002, 2e-05))
    """
    return _TOLERANCES.get(np.dtype(dtype), _TOLERANCES[np.dtype("float32")])


def check_grads(fn: Callable[..., Tensor], *args: Any, order: int = 2, modes: Sequence[str] = ("rev",),
                atol: Optional[float] = None, rtol: Optional[float] = None) -> GradCheckReport:
    """Compare fgraph's derivatives of ``fn`` with ``jax.grad`` of the same program, orders 1..``order``.

    ``fn(*args)`` must return a scalar Tensor. Floating-point array arguments
    (Tensors, NumPy or JAX arrays) are the inputs differentiated; every other
    argument (integer index arrays, masks, Python numbers, strings...) is passed
    through unchanged as a constant. Order 1 compares ``fg.grad(fn(*xs), xs,
    create_graph=True)`` with ``jax.grad``; order ``k`` compares the gradient of
    ``sum_i <d_{k-1} f / dx_i, v_i>`` for a fixed random direction ``v`` (the last
    order runs without ``create_graph``, through the rules' compiled kernels).
    ``modes=("rev", "fwd")`` also compares the Jacobian-vector product along ``v``
    (fgraph's forward mode, :func:`fgraph.autograd.functional.jvp`, against
    ``jax.jvp``); a custom :class:`fgraph.autograd.Function` then needs a ``jvp``.

    Entries match when ``|fgraph - jax| <= atol + rtol * |jax|`` elementwise (NaN
    matches NaN). Defaults depend on the least precise floating dtype involved: see
    :func:`default_tolerances`. The JAX side sees through ``detach()`` and
    ``fg.no_grad()`` (they only steer fgraph's recording), so a function that relies
    on them to cut gradients will not match. Both sides run their matrix products in full
    float32 (``jax.default_matmul_precision("float32")``): on a GPU, JAX's default would use
    TF32, whose rounding differs with the order of the products and is far above float32's.

    Returns a :class:`GradCheckReport`; raises :class:`GradientMismatch` (an
    ``AssertionError`` whose message is the report) when any entry differs.

    Example:
        >>> import fgraph as fg
        >>> from interop.check import check_grads
        >>> w = fg.tensor([[1.0, -2.0], [0.5, 3.0]])
        >>> r = check_grads(lambda w, x: fg.tanh(x @ w).sum(), w, fg.tensor([0.3, -0.7]))
        >>> r.passed, len(r.entries)
        (True, 4)
    """
    order = _check_order(order)
    modes = _check_modes(modes)
    call_args, positions, arrays = _split_args(args)
    rng = np.random.default_rng(0)
    vs = tuple(jnp.asarray(_direction(rng, a), a.dtype) for a in arrays)
    with jax.default_matmul_precision("float32"):
        out_dtype, ours = _fgraph_orders(fn, call_args, positions, arrays, vs, order)
        theirs = _jax_orders(fn, call_args, positions, arrays, vs, order)
        if "fwd" in modes:
            jvps = (_fgraph_jvp(fn, call_args, positions, arrays, vs), _jax_jvp(fn, call_args, positions, arrays, vs))
    dtype = _least_precise([a.dtype for a in arrays] + [out_dtype])
    d_rtol, d_atol = default_tolerances(dtype)
    rtol = d_rtol if rtol is None else float(rtol)
    atol = d_atol if atol is None else float(atol)
    entries = []
    for k in range(order):
        for p, a, b in zip(positions, ours[k], theirs[k]):
            entries.append(_compare(f"args[{p}]", k + 1, "rev", a, b, rtol, atol))
    if "fwd" in modes:
        entries.append(_compare("jvp", 1, "fwd", *jvps, rtol, atol))
    report = GradCheckReport(entries, dtype, rtol, atol)
    if not report.passed:
        raise GradientMismatch(report)
    return report


def _direction(rng: np.random.Generator, a: Any) -> np.ndarray:
    """A random direction for input ``a`` (complex for a complex input)."""
    v = rng.standard_normal(a.shape)
    return v + 1j * rng.standard_normal(a.shape) if jnp.issubdtype(a.dtype, jnp.complexfloating) else v


# -- arguments -------------------------------------------------------------------------------------
def _check_order(order: Any) -> int:
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 1:
        raise ValueError(f"check_grads: order must be an integer >= 1 (1: gradients, 2: Hessian-vector "
                         f"products, ...), got {order!r}")
    return int(order)


def _check_modes(modes: Any) -> tuple:
    if isinstance(modes, str):
        modes = (modes,)
    modes = tuple(modes)
    bad = [m for m in modes if m not in _MODES]
    if bad or not modes:
        raise ValueError(f"check_grads: modes must be a non-empty subset of {_MODES}, got {modes!r}")
    if "rev" not in modes:
        modes = ("rev",) + modes
    return modes


def _is_float_array(a: Any) -> bool:
    """A floating-point or complex array: an input to differentiate."""
    if isinstance(a, (Tensor, np.ndarray, jax.Array, np.generic)):
        return jnp.issubdtype(a.dtype, jnp.inexact)
    return False


def _split_args(args: tuple) -> tuple[list, tuple, tuple]:
    """``(call arguments with inputs as None, input positions, input arrays)``."""
    call_args, positions, arrays = [], [], []
    for i, a in enumerate(args):
        if _is_float_array(a):
            positions.append(i)
            arrays.append(jnp.asarray(a.array if isinstance(a, Tensor) else a))
            call_args.append(None)
        else:
            call_args.append(a)
    if not positions:
        kinds = ", ".join(_describe(a) for a in args) or "no arguments"
        raise TypeError(f"check_grads: no floating-point array arguments to differentiate (got {kinds}). "
                        "Pass the inputs as float Tensors, NumPy or JAX arrays, e.g. "
                        "check_grads(fn, fg.tensor([1.0, 2.0])); integer arrays and Python numbers are constants.")
    return call_args, tuple(positions), tuple(arrays)


def _describe(a: Any) -> str:
    if hasattr(a, "shape") and hasattr(a, "dtype"):
        return f"{type(a).__name__} {tuple(a.shape)} {a.dtype}"
    return type(a).__name__


def _least_precise(dtypes: Sequence[Any]) -> np.dtype:
    """The least precise real dtype among ``dtypes`` (complex64 counts as float32)."""
    floats = [np.dtype(d).type(0).real.dtype for d in dtypes if d is not None and jnp.issubdtype(d, jnp.inexact)]
    return min(floats, key=_precision)


def _precision(dtype: np.dtype) -> int:
    return int(jnp.finfo(dtype).nmant)


def _fill(call_args: Sequence[Any], positions: tuple, tensors: Sequence[Tensor]) -> list:
    filled = list(call_args)
    for p, t in zip(positions, tensors):
        filled[p] = t
    return filled


def _check_output(out: Any) -> Tensor:
    if not isinstance(out, Tensor):
        raise TypeError(f"check_grads: fn must return a scalar fgraph Tensor, got {type(out).__name__}. "
                        "Wrap a result with fg.tensor(...) only if it is computed from the inputs with fgraph ops.")
    if out.shape != ():
        raise ValueError(f"check_grads: fn must return a scalar Tensor, got shape {tuple(out.shape)}. Reduce it, "
                         "e.g. return fn(...).sum() or (w * fn(...)).sum() with fixed random weights w.")
    if not jnp.issubdtype(out.dtype, jnp.floating):
        raise TypeError(f"check_grads: fn must return a floating-point scalar, got dtype {out.dtype}.")
    return out


# -- fgraph's side ---------------------------------------------------------------------------------
def _fgraph_orders(fn: Callable, call_args: list, positions: tuple, arrays: tuple, vs: tuple,
                   order: int) -> tuple[np.dtype, list]:
    """The output's dtype and ``[[d^k f / dx_i for each input] for k in 1..order]`` by fgraph's engine."""
    with enable_grad():
        leaves = [Tensor(a, requires_grad=True) for a in arrays]
        target = _check_output(fn(*_fill(call_args, positions, leaves)))
        out_dtype = np.dtype(target.dtype)
        results = []
        for k in range(1, order + 1):
            if target.requires_grad:
                grads = _fg_grad(target, leaves, create_graph=k < order, allow_unused=True, materialize_grads=True)
            else:  # nothing (left) depends on the inputs: every derivative is zero
                grads = [Tensor(jnp.zeros_like(a)) for a in arrays]
            results.append([g.array for g in grads])
            if k < order:
                target = _directional(grads, vs)
    return out_dtype, results


def _directional(grads: Sequence[Tensor], vs: tuple) -> Tensor:
    """``sum_i real(sum(g_i * conj(v_i)))``: the real inner product of the gradients with the directions."""
    total = None
    for g, v in zip(grads, vs):
        term = real((g * Tensor(jnp.conj(v))).sum())
        total = term if total is None else total + term
    return total


def _fgraph_jvp(fn: Callable, call_args: list, positions: tuple, arrays: tuple, vs: tuple) -> Any:
    from fgraph.autograd.functional import jvp

    only_inputs = functools.partial(_call_with_inputs, fn, call_args, positions)
    _, tangent = jvp(only_inputs, tuple(Tensor(a) for a in arrays), tuple(Tensor(v) for v in vs))
    return tangent.array


def _call_with_inputs(fn: Callable, call_args: list, positions: tuple, *inputs: Tensor) -> Tensor:
    return fn(*_fill(call_args, positions, inputs))


# -- JAX's side ------------------------------------------------------------------------------------
def _reference_value(fn: Callable, call_args: list, positions: tuple, *arrays: Any) -> Any:
    """The program as a JAX function: Tensors around tracers that record nothing."""
    out = _check_output(fn(*_fill(call_args, positions, [Tensor(a) for a in arrays])))
    return out.array


def _inner_product(grad_fn: Callable, vs: tuple, *arrays: Any) -> Any:
    """fgraph's :func:`_directional` in JAX's convention: ``real(sum(conj(g_jax) * conj(v)))``."""
    grads = grad_fn(*arrays)
    return sum(jnp.real(jnp.sum(g * v)) for g, v in zip(grads, vs))


def _conjugated(level: Callable) -> Callable:
    """``level``'s gradients in PyTorch's convention (the conjugates of JAX's) for the comparison."""
    return functools.partial(_conjugate_all, level)


def _conjugate_all(level: Callable, *arrays: Any) -> tuple:
    return tuple(map(jnp.conj, level(*arrays)))


def _all_orders(levels: Sequence[Callable], *arrays: Any) -> tuple:
    return tuple(level(*arrays) for level in levels)


def _jax_orders(fn: Callable, call_args: list, positions: tuple, arrays: tuple, vs: tuple, order: int) -> tuple:
    """The same derivatives by ``jax.grad`` of the traced program, in one jitted call."""
    argnums = tuple(range(len(arrays)))
    scalar = functools.partial(_reference_value, fn, call_args, positions)
    levels = []
    for _ in range(order):
        level = jax.grad(scalar, argnums=argnums)
        levels.append(level)
        scalar = functools.partial(_inner_product, level, vs)
    try:
        return jax.jit(functools.partial(_all_orders, [_conjugated(level) for level in levels]))(*arrays)
    except _HOST_READS as exc:
        raise _not_traceable(exc) from None


def _not_traceable(exc: Exception) -> TypeError:
    return TypeError(
        "check_grads: fn is not traceable by JAX (it reads a value on the host, e.g. float(t), t.item(), "
        f"t.tolist() or an if on a tensor's value), so jax.grad cannot differentiate the same program. Keep "
        f"values as Tensors (fg.where instead of if). JAX said: {str(exc).splitlines()[0]}")


def _jax_jvp(fn: Callable, call_args: list, positions: tuple, arrays: tuple, vs: tuple) -> Any:
    scalar = functools.partial(_reference_value, fn, call_args, positions)
    try:
        return jax.jit(functools.partial(jax.jvp, scalar))(arrays, vs)[1]
    except _HOST_READS as exc:
        raise _not_traceable(exc) from None


# -- comparing -------------------------------------------------------------------------------------
def _compare(name: str, order: int, mode: str, ours: Any, theirs: Any, rtol: float, atol: float) -> GradCheckEntry:
    wide = np.complex128 if np.iscomplexobj(ours) or np.iscomplexobj(theirs) else np.float64
    a = np.asarray(ours, dtype=wide)
    b = np.asarray(theirs, dtype=wide)
    if a.shape != b.shape:
        nan = float("nan")
        return GradCheckEntry(name, order, mode, b.shape, nan, nan, (), nan, nan, float("inf"), False,
                              f"fgraph's shape {a.shape} != jax's {b.shape}")
    same_nan = np.isnan(a) & np.isnan(b)
    diff = np.where(same_nan, 0.0, np.abs(a - b))
    with np.errstate(invalid="ignore"):
        diff = np.where(a == b, 0.0, diff)  # equal infinities
    diff = np.where(np.isnan(diff), np.inf, diff)  # NaN on one side only
    ratio = diff / (atol + rtol * np.abs(np.nan_to_num(b)))
    big = np.abs(b) > atol
    rel = np.where(big, diff / np.where(big, np.abs(b), 1.0), 0.0)
    if a.size == 0:
        return GradCheckEntry(name, order, mode, a.shape, 0.0, 0.0, (), 0.0, 0.0, 0.0, True)
    flat = int(np.argmax(ratio))
    idx = tuple(int(i) for i in np.unravel_index(flat, a.shape))
    worst = float(ratio.reshape(-1)[flat])
    note = "NaN/inf on one side" if np.isinf(diff).any() else ""
    return GradCheckEntry(name, order, mode, a.shape, float(diff.max()), float(rel.max()), idx,
                          a.reshape(-1)[flat].item(), b.reshape(-1)[flat].item(), worst, worst <= 1.0, note)


def _badness(entry: GradCheckEntry) -> tuple:
    ratio = entry.ratio if entry.ratio == entry.ratio else float("inf")
    return (not entry.passed, ratio)
