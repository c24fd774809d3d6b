"""L-BFGS with an optional strong Wolfe line search (``torch.optim.LBFGS``), on one flat vector of all parameters.

A port of PyTorch's algorithm (itself after minFunc): the two-loop recursion over the
last ``history_size`` curvature pairs ``(y, s)``, the initial Hessian scale
``H_diag = y.s / y.y``, the first step ``min(1, 1 / |g|_1) * lr``, the tolerances and
counters, and ``_strong_wolfe`` with ``_cubic_interpolate`` for the line search.

Unlike the other optimizers, LBFGS is **host-driven**, as in PyTorch: every iteration
reads scalars (the loss, ``g.d``, the tolerances) back to Python to decide what to do
next, and the line search calls the closure a data-dependent number of times. So a
step cannot run under ``jax.jit`` (or ``fg.compile``); the vector work of an iteration
(the history update and the two-loop recursion) is one jitted kernel.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp

from fgraph.autograd.engine import grad
from fgraph.autograd.grad_mode import enable_grad
from fgraph.optim._state_placement import place_like_param, replicated
from fgraph.optim.optimizer import Optimizer, ParamsT, check_hyper
from fgraph.tensor import Tensor, _wrap

__all__ = ["LBFGS"]

_GROUPS_ERROR = "LBFGS doesn't support per-parameter options (parameter groups)"


class LBFGS(Optimizer):
    """L-BFGS (``torch.optim.LBFGS``): ``step(closure)`` runs up to ``max_iter`` quasi-Newton iterations.

    ``closure()`` recomputes the loss and returns it (the optimizer differentiates it
    w.r.t. its parameters) or returns ``(loss, grads)``; it is called several times per
    step, each time with the trial parameters **rebound** on the modules, so a closure
    that calls ``model(x)`` sees them. ``step`` returns the first loss, as PyTorch does.
    ``line_search_fn="strong_wolfe"`` finds each step length with PyTorch's strong Wolfe
    line search (``c1=1e-4``, ``c2=0.9``); without it the step length is ``lr``.

    All parameters form one flat vector (one parameter group only, as in PyTorch). The
    state lives on the first parameter in PyTorch's layout (``func_evals``, ``n_iter``,
    ``d``, ``t``, ``old_dirs``, ``old_stps``, ``ro``, ``H_diag``, ``prev_flat_grad``,
    ``prev_loss``, ``al``), so ``state_dict()`` matches PyTorch's and PyTorch's loads.

    The step is host-driven (Python floats steer the iterations and the line search,
    as in PyTorch), so it is not traceable: call it eagerly, not under ``jax.jit``.

    Example:
        >>> import fgraph as fg
        >>> xy = fg.nn.Parameter(fg.tensor([-1.5, 2.0], dtype=fg.float64))
        >>> opt = fg.optim.LBFGS([xy], line_search_fn="strong_wolfe")
        >>> def rosenbrock():
        ...     x, y = opt.param_groups[0]["params"][0]     # the current parameters
        ...     return (1 - x) ** 2 + 100 * (y - x ** 2) ** 2
        >>> for _ in range(5):
        ...     first_loss = opt.step(rosenbrock)
        >>> [round(v, 4) for v in opt.param_groups[0]["params"][0].tolist()]  # the minimiser (1, 1)
        [1.0, 1.0]
    """

    def __init__(self, params: ParamsT, lr: float = 1, max_iter: int = 20, max_eval: Optional[int] = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: Optional[str] = None) -> None:
        check_hyper(lr, "learning rate", "LBFGS")
        _check_count(max_iter, "max_iter")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        _check_count(max_eval, "max_eval")
        check_hyper(tolerance_grad, "tolerance_grad", "LBFGS")
        check_hyper(tolerance_change, "tolerance_change", "LBFGS")
        _check_count(history_size, "history_size")
        _check_line_search(line_search_fn, ValueError)
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError(_GROUPS_ERROR)
        # The history as fixed-size device buffers (one compiled kernel for every iteration), and the
        # lists of PyTorch's state layout last exported from them (to know when a loaded state replaced them).
        self._memory: Optional[_Memory] = None
        self._exported: Optional[list] = None

    # -- flat vector <-> parameters ------------------------------------------------------------------
    def _gather_flat(self) -> jax.Array:
        return _flatten(*(replicated(p._array) for p in self.param_groups[0]["params"]))  # sharded: gathered

    def _set_flat(self, flat: jax.Array) -> None:
        """Make the parameters ``flat`` (split in parameter order) and rebind them where the old ones are held."""
        group = self.param_groups[0]
        first = group["params"][0]
        pieces = _unflatten(flat, tuple((p.shape, p.dtype) for p in group["params"]))
        pieces = [place_like_param(piece, p._array) for piece, p in zip(pieces, group["params"])]  # sharded: split
        self._rebind_group(group, dict(enumerate(pieces)))
        if first in self.state:  # PyTorch keeps LBFGS's state on the first parameter
            self.state[group["params"][0]] = self.state.pop(first)

    def _evaluate_flat(self, closure: Callable[[], Any]) -> tuple[Any, float, jax.Array]:
        """Call the closure at the current parameters: ``(loss Tensor, loss as a float, flat gradient)``."""
        with enable_grad():
            result = closure()
        loss, grads = result if isinstance(result, tuple) and len(result) == 2 else (result, None)
        if not isinstance(loss, Tensor) or loss.numel() != 1:
            got = f"shape {tuple(loss.shape)}" if isinstance(loss, Tensor) else type(loss).__name__
            raise ValueError(f"LBFGS: the closure must return the loss as a one-element Tensor (or (loss, grads)), "
                             f"got {got}; reduce it, e.g. with .mean() or .sum().")
        if grads is None:
            params = [p for p in self.param_groups[0]["params"] if p.requires_grad]
            grads = dict(zip(params, grad(loss, params, allow_unused=True)))
        lookup = self._gradient_lookup(grads)
        pieces = []
        for i, p in enumerate(self.param_groups[0]["params"]):
            g = lookup(p)
            if g is None:  # PyTorch gathers zeros for a parameter without a gradient
                pieces.append(jnp.zeros(p.shape, p.dtype))
            elif g.shape != p.shape:
                raise ValueError(f"LBFGS.step: the gradient of parameter {i} has shape {g.shape}, the parameter "
                                 f"{p.shape}; return the gradients of the loss w.r.t. the optimizer's parameters.")
            else:
                pieces.append(replicated(g._array))
        return loss, float(loss.item()), _flatten(*pieces)

    # -- the step ------------------------------------------------------------------------------------
    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:  # type: ignore[override]
        """Run up to ``max_iter`` L-BFGS iterations; return the loss the closure gave first (a Tensor).

        ``closure`` recomputes the loss from the current parameters (read them from the
        model, or from ``opt.param_groups[0]["params"]``) and returns it, or returns
        ``(loss, grads)``.
        """
        if closure is None or not callable(closure):
            got = "nothing" if closure is None else f"a {type(closure).__name__}"
            raise TypeError(
                f"LBFGS.step needs a closure (got {got}): L-BFGS evaluates the loss several times per step, so pass "
                "a function that recomputes it, e.g. opt.step(lambda: loss_fn(model(x), y)), not the gradients.")
        self._refresh()
        if len(self.param_groups) != 1:
            raise ValueError(_GROUPS_ERROR)
        group = self.param_groups[0]
        lr = float(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]
        _check_line_search(line_search_fn, RuntimeError)

        state = self.state.setdefault(group["params"][0], {})
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        # evaluate initial f(x) and df/dx
        orig_loss, loss, flat_grad = self._evaluate_flat(closure)
        current_evals = 1
        state["func_evals"] += 1
        opt_cond = float(_abs_max(flat_grad)) <= tolerance_grad
        if opt_cond:
            return orig_loss

        x = self._gather_flat()
        memory = self._load_memory(state, x, history_size)
        d, t = _array_or_none(state.get("d")), state.get("t")
        t = None if t is None else float(t)
        prev_flat_grad, prev_loss = _array_or_none(state.get("prev_flat_grad")), state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1

            # compute the descent direction
            if state["n_iter"] == 1:
                d = -flat_grad
                memory = _Memory.empty(x, history_size)
            else:
                state.setdefault("al", None)  # PyTorch creates it here: keep its place in the state's order
                d, *arrays = _direction(flat_grad, prev_flat_grad, d, jnp.asarray(t, x.dtype), *memory)
                memory = _Memory(*arrays)
            prev_flat_grad, prev_loss = flat_grad, loss

            # compute the step length
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / float(jnp.abs(flat_grad).sum())) * lr
            else:
                t = lr
            gtd = float(_dot(flat_grad, d))  # directional derivative
            if gtd > -tolerance_change:
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                def obj_func(x_: jax.Array, t_: float, d_: jax.Array) -> tuple[float, jax.Array]:
                    self._set_flat(_axpy(x_, t_, d_))
                    return self._evaluate_flat(closure)[1:]

                # as PyTorch: the line search keeps its own tolerance_change (1e-9), not the group's
                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj_func, x, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals)
                x = _axpy(x, t, d)
                self._set_flat(x)
                opt_cond = float(_abs_max(flat_grad)) <= tolerance_grad
            else:
                # no line search: move by the fixed step
                x = _axpy(x, t, d)
                self._set_flat(x)
                if n_iter != max_iter:
                    # re-evaluate only if not in the last iteration (PyTorch: no use in a stochastic setting)
                    _, loss, flat_grad = self._evaluate_flat(closure)
                    opt_cond = float(_abs_max(flat_grad)) <= tolerance_grad
                    ls_func_evals = 1

            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            # check conditions
            if n_iter == max_iter:
                break
            if current_evals >= max_eval:
                break
            if opt_cond:
                break
            if float(_abs_max(d * t)) <= tolerance_change:  # lack of progress
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        self._store(state, memory, d, t, prev_flat_grad, prev_loss, history_size)
        return orig_loss

    # -- state ---------------------------------------------------------------------------------------
    def _store(self, state: dict, memory: "_Memory", d: jax.Array, t: float, prev_flat_grad: jax.Array,
               prev_loss: float, history_size: int) -> None:
        """Write the state in PyTorch's layout (lists of Tensors) and remember what the buffers exported."""
        count = int(memory.count)
        # Unstack whole buffers (one compiled program per shape; a slice [:count] would compile per count).
        old_dirs = [_wrap(v) for v in list(memory.dirs)[:count]]
        old_stps = [_wrap(v) for v in list(memory.stps)[:count]]
        ro = [_wrap(v) for v in list(memory.ro)[:count]]
        state["d"] = _wrap(d)
        state["t"] = t
        state["old_dirs"] = old_dirs
        state["old_stps"] = old_stps
        state["ro"] = ro
        state["H_diag"] = _wrap(memory.h_diag) if count else 1  # PyTorch: the int 1 until the first update
        state["prev_flat_grad"] = _wrap(prev_flat_grad)
        state["prev_loss"] = prev_loss
        if "al" in state:
            state["al"] = [_wrap(v) for v in list(memory.al)[:count]] + [None] * (history_size - count)
        self._memory, self._exported = memory, [old_dirs, old_stps, ro, state["H_diag"]]

    def _load_memory(self, state: dict, x: jax.Array, history_size: int) -> "_Memory":
        """The history buffers for the state's lists: the cached ones, or rebuilt (after ``load_state_dict``)."""
        memory, exported = self._memory, self._exported
        current = [state.get(k) for k in ("old_dirs", "old_stps", "ro", "H_diag")]
        if memory is not None and exported is not None and all(a is b for a, b in zip(current, exported)) \
                and memory.dirs.shape == (history_size, x.size) and memory.dirs.dtype == x.dtype:
            return memory
        if current[0] is None:
            return _Memory.empty(x, history_size)
        old_dirs, old_stps, ro = (list(v)[-history_size:] for v in current[:3])
        count = len(old_dirs)
        memory = _Memory.empty(x, history_size)
        h_diag = current[3]
        if count:
            memory = _Memory(
                memory.dirs.at[:count].set(jnp.stack([_array_or_none(v).astype(x.dtype) for v in old_dirs])),
                memory.stps.at[:count].set(jnp.stack([_array_or_none(v).astype(x.dtype) for v in old_stps])),
                memory.ro.at[:count].set(jnp.stack([jnp.asarray(_array_or_none(v), x.dtype) for v in ro])),
                jnp.asarray(count, jnp.int32), jnp.asarray(_array_or_none(h_diag), x.dtype), memory.al)
        return memory


class _Memory:
    """The curvature history: ``dirs`` (y) and ``stps`` (s), oldest first, ``(history_size, n)``; ``ro = 1 / y.s``;
    ``count`` pairs valid; the Hessian scale ``h_diag``; ``al``, the two-loop's first-loop coefficients."""

    __slots__ = ("dirs", "stps", "ro", "count", "h_diag", "al")

    def __init__(self, dirs: jax.Array, stps: jax.Array, ro: jax.Array, count: jax.Array, h_diag: jax.Array,
                 al: jax.Array) -> None:
        self.dirs, self.stps, self.ro, self.count, self.h_diag, self.al = dirs, stps, ro, count, h_diag, al

    def __iter__(self):
        return iter((self.dirs, self.stps, self.ro, self.count, self.h_diag, self.al))

    @classmethod
    def empty(cls, x: jax.Array, history_size: int) -> "_Memory":
        return cls(*_empty_memory(x, history_size))


@functools.partial(jax.jit, static_argnums=(1,))
def _empty_memory(x: jax.Array, history_size: int) -> tuple:
    buffers = jnp.zeros((history_size, x.size), x.dtype)
    ro = jnp.zeros((history_size,), x.dtype)
    return buffers, buffers, ro, jnp.asarray(0, jnp.int32), jnp.asarray(1, x.dtype), ro


@jax.jit
def _direction(flat_grad: jax.Array, prev_flat_grad: jax.Array, d: jax.Array, t: jax.Array, dirs: jax.Array,
               stps: jax.Array, ro: jax.Array, count: jax.Array, h_diag: jax.Array, al: jax.Array) -> tuple:
    """PyTorch's L-BFGS update: push ``(y, s)`` when ``y.s > 1e-10`` (dropping the oldest when full), then the
    two-loop recursion ``d = -H g``. Returns ``d`` and the new memory."""
    history_size = dirs.shape[0]
    y = flat_grad - prev_flat_grad
    s = d * t
    ys = jnp.dot(y, s)

    def push(buffers: jax.Array, row: jax.Array) -> jax.Array:
        full = count == history_size
        shifted = jnp.where(full, jnp.roll(buffers, -1, axis=0), buffers)
        return shifted.at[jnp.where(full, history_size - 1, count)].set(row)

    update = ys > 1e-10
    dirs = jnp.where(update, push(dirs, y), dirs)
    stps = jnp.where(update, push(stps, s), stps)
    ro = jnp.where(update, push(ro, 1.0 / ys), ro)
    h_diag = jnp.where(update, ys / jnp.dot(y, y), h_diag)
    count = jnp.where(update, jnp.minimum(count + 1, history_size), count)

    def first_loop(j: jax.Array, carry: tuple) -> tuple:
        q, al = carry
        i = count - 1 - j
        al_i = jnp.dot(stps[i], q) * ro[i]
        return q + (-al_i) * dirs[i], al.at[i].set(al_i)

    q, al = jax.lax.fori_loop(0, count, first_loop, (-flat_grad, al))

    def second_loop(i: jax.Array, r: jax.Array) -> jax.Array:
        be_i = jnp.dot(dirs[i], r) * ro[i]
        return r + (al[i] - be_i) * stps[i]

    d = jax.lax.fori_loop(0, count, second_loop, q * h_diag)
    return d, dirs, stps, ro, count, h_diag, al


@jax.jit
def _flatten(*arrays: jax.Array) -> jax.Array:
    dtype = jnp.result_type(*arrays)
    return jnp.concatenate([a.reshape(-1).astype(dtype) for a in arrays])


@functools.partial(jax.jit, static_argnums=(1,))
def _unflatten(flat: jax.Array, layout: tuple) -> list:
    pieces, offset = [], 0
    for shape, dtype in layout:
        size = math.prod(shape)
        pieces.append(flat[offset:offset + size].reshape(shape).astype(dtype))
        offset += size
    return pieces


@jax.jit
def _axpy(x: jax.Array, t: Any, d: jax.Array) -> jax.Array:
    return x + t * d


@jax.jit
def _abs_max(v: jax.Array) -> jax.Array:
    return jnp.max(jnp.abs(v))


@jax.jit
def _dot(a: jax.Array, b: jax.Array) -> jax.Array:
    return jnp.dot(a, b)


# -- the line search (PyTorch's, after torch/optim's lswolfe.lua and polyinterp.lua) -------------------------
def _cubic_interpolate(x1: float, f1: float, g1: float, x2: float, f2: float, g2: float,
                       bounds: Optional[tuple] = None) -> float:
    """The minimiser of the cubic through ``(x1, f1, g1)`` and ``(x2, f2, g2)``, clamped to ``bounds``
    (default: between the two points); the middle of the bounds when the cubic has no minimiser."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    if x1 == x2:  # PyTorch divides by zero here (a nan step); the middle is the sensible answer
        return (xmin_bound + xmax_bound) / 2.0
    # Where x2 is the farther point: d1 = g1 + g2 - 3 (f1 - f2) / (x1 - x2), d2 = sqrt(d1^2 - g1 g2),
    # min_pos = x2 - (x2 - x1) (g2 + d2 - d1) / (g2 - g1 + 2 d2).
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square >= 0:
        d2 = math.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _strong_wolfe(obj_func: Callable, x: jax.Array, t: float, d: jax.Array, f: float, g: jax.Array, gtd: float,
                  c1: float = 1e-4, c2: float = 0.9, tolerance_change: float = 1e-9,
                  max_ls: int = 25) -> tuple[float, jax.Array, float, int]:
    """Find ``t`` with ``f(x + t d) <= f + c1 t gtd`` and ``|g(x + t d).d| <= -c2 gtd``: bracket, then zoom.

    Returns ``(f_new, g_new, t, evaluations)``.
    """
    d_norm = float(_abs_max(d))
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = float(_dot(g_new, d))

    # bracket an interval containing a point satisfying the Wolfe criteria
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        # interpolate
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        # next step
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new, gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = float(_dot(g_new, d))
        ls_iter += 1

    if ls_iter >= max_ls:  # reached the maximum number of iterations (PyTorch: ==, unbound names below 0)
        bracket, bracket_f, bracket_g = [0.0, t], [f, f_new], [g, g_new]

    # zoom: refine the bracket until a point satisfies the criteria
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:  # the bracket is too small
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        # A trial too close to the bracket's ends is moved 0.1 * width inside when the previous trial
        # already made insufficient progress, or when it is at (or beyond) an end.
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False

        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = float(_dot(g_new, d))
        ls_iter += 1

        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            # Armijo condition not satisfied or not lower than the lowest point
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new, gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True  # Wolfe conditions satisfied
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                # the old high becomes the new low
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos], bracket_gtd[high_pos] = bracket_g[low_pos], bracket_gtd[low_pos]
            # the new point becomes the new low
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = g_new, gtd_new

    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals


# -- helpers --------------------------------------------------------------------------------------------------
def _array_or_none(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, Tensor):
        return value._array
    return jnp.asarray(value)


def _check_count(value: Any, name: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"LBFGS: invalid {name} value: {value!r} (expected a positive int).")


def _check_line_search(line_search_fn: Any, error: type) -> None:
    if line_search_fn is not None and line_search_fn != "strong_wolfe":
        raise error(f"LBFGS: only 'strong_wolfe' is supported as line_search_fn (or None), got {line_search_fn!r}.")
