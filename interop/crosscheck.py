"""``python -m interop.crosscheck``: every differentiable registered op against ``jax.grad``.

For each differentiable primitive in :data:`fgraph.ops._declare.registry` it builds the
scalar ``sum_k real(sum(w_k * out_k))`` (fixed random weights ``w_k``, one per float or
complex output, complex for a complex one) over ``apply_op(OP, inputs, params)`` at the op's
sample (:mod:`interop._samples`) and runs :func:`interop.check.check_grads` on it, orders 1
and 2 of reverse mode and, in float64 and complex128, forward mode's Jacobian-vector product
(the op's tangent along a random direction against ``jax.jvp``), in float32, float64, complex64 and complex128
(PyTorch's convention for complex gradients; ops declared ``real_only`` are listed as such
in the complex columns). It prints one row per op (dtypes, orders, largest absolute and
relative errors, the forward-mode errors, status) and the wall time, and exits with status 1
when any op mismatches, fails to run, or has no sample.

Usage::

    python -m interop.crosscheck                  # every op, float and complex dtypes, 2 workers
    python -m interop.crosscheck --op exp --op cat --dtype float64 --dtype complex128
    python -m interop.crosscheck --markdown docs/crosscheck.md --jobs 2

Example:
    >>> from interop.crosscheck import check_op
    >>> check_op("tanh", "float64").status
    'ok'
"""
from __future__ import annotations

import argparse
import concurrent.futures
import functools
import multiprocessing
import os
import sys
import time
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np

__all__ = ["OpResult", "check_op", "differentiable_ops", "run", "main"]

DTYPES = ("float32", "float64", "complex64", "complex128")
_FAILED = ("MISMATCH", "ERROR", "NO SAMPLE")
_QUIET = ("skipped", "real only")  # neither checked nor failed


class OpResult(NamedTuple):
    """The outcome of one op in one dtype."""

    op: str
    dtype: str
    orders: int  #: highest order checked (0 when skipped)
    max_abs: float
    max_rel: float
    status: str  #: ``'ok'``, ``'skipped'``, ``'real only'``, ``'MISMATCH'``, ``'ERROR'`` or ``'NO SAMPLE'``
    message: str = ""  #: the report of a mismatch, the error, or the reason for a skip
    seconds: float = 0.0
    fwd_abs: float = float("nan")  #: largest ``|fgraph - jax|`` of the forward-mode JVP

    @property
    def failed(self) -> bool:
        return self.status in _FAILED


def differentiable_ops() -> list[str]:
    """Names of the registry's differentiable primitives, in declaration order.

    Example:
        >>> from interop.crosscheck import differentiable_ops
        >>> "mul" in differentiable_ops(), "eq" in differentiable_ops()
        (True, False)
    """
    import fgraph  # noqa: F401 - declares every op (nn.functional included)
    from fgraph.ops._declare import registry

    return [name for name, op in registry.items()
            if op.differentiable and name not in COMPLEX_OUTPUTS and name not in FIRST_ORDER_ONLY]


#: Ops left out: eigenvectors are defined up to a phase per column, and ``sum(w * V)`` depends on it, so its
#: gradient is not defined. ``linalg.eig``'s derivatives are checked in the op tables on phase-free functions
#: of its results (``tests/op_tables/linalg_more.py``: against JAX, and against torch's ``linalg_eig_backward``).
COMPLEX_OUTPUTS = {
    "linalg_eig": "eigenvectors are defined up to a phase, which sum(w * V) depends on",
}

#: Ops left out because their derivative has no derivative (the crosscheck runs orders 1-2), as in torch: the
#: gamma sampler's implicit gradient and the incomplete gamma function's derivative in its shape parameter. Their
#: first derivatives are checked in tests/test_distributions_gamma.py (against finite differences of the gamma
#: CDF, and against JAX's gradients of gammainc); the second derivative's error is checked there too.
FIRST_ORDER_ONLY = {
    "standard_gamma": "a sampler (its key is an input); the implicit gradient is first order only",
    "standard_gamma_grad": "the implicit gradient itself: no derivative, as torch's _standard_gamma_grad",
    "gammainc": "differentiable once in the shape parameter (igamma_grad_a has no derivative)",
    "igamma_grad_a": "JAX's derivative of gammainc in the shape parameter: no derivative of its own",
}


def _symmetrized(a: Any) -> Any:
    return (a + a.mT) * 0.5


def _weighted_output(op: Any, params: Any, sym: tuple, weights: tuple, *args: Any) -> Any:
    """``sum_k sum(w_k * out_k)`` over the float outputs of ``op`` (the checked scalar)."""
    from fgraph.ops._declare import apply_op
    from fgraph.ops.complex_parts import real as fg_real

    args = tuple(_symmetrized(a) if i in sym else a for i, a in enumerate(args))
    out = apply_op(op, args, params)
    outs = out if isinstance(out, tuple) else (out,)
    total = None
    for o, w in zip(outs, weights):
        if w is None:
            continue
        term = fg_real((o * w).sum())
        total = term if total is None else total + term
    return total


def build(name: str, dtype: str) -> tuple:
    """``(fn, args)`` for ``check_grads(fn, *args)`` at op ``name``'s sample in ``dtype``.

    Example:
        >>> from interop.crosscheck import build
        >>> fn, args = build("mul", "float32")
        >>> [a.shape for a in args], fn(*args).shape
        ([(2, 3), (2, 3)], ())
    """
    import jax.numpy as jnp

    import fgraph as fg
    from fgraph.ops._declare import registry
    from interop._samples import Arg, make_values, resolve_params, sample_for

    op = registry[name]
    sample = sample_for(name)
    if sample is None:
        raise LookupError(f"no sample for op '{name}': add one to interop/_samples.py (SAMPLES)")
    params = resolve_params(sample)
    params = op.Params(**params) if op.Params is not None else None
    args, sym = [], []
    for i, a in enumerate(sample.args):
        if isinstance(a, Arg):
            args.append(make_values(name, a, i, dtype))
            if a.sym:
                sym.append(i)
        else:
            args.append(a)
    probe = [fg.tensor(a) if isinstance(a, np.ndarray) and a.dtype.kind in "fc" else a for a in args]
    probe = [_symmetrized(a) if i in sym else a for i, a in enumerate(probe)]
    from fgraph.ops._declare import apply_op

    out = apply_op(op, tuple(probe), params)
    outs = out if isinstance(out, tuple) else (out,)
    rng = np.random.default_rng(1)
    weights = tuple(fg.tensor(jnp.asarray(_weight(rng, o), o.dtype)) if jnp.issubdtype(o.dtype, jnp.inexact)
                    else None for o in outs)
    return functools.partial(_weighted_output, op, params, tuple(sym), weights), args


def _weight(rng: np.random.Generator, out: Any) -> np.ndarray:
    w = rng.standard_normal(out.shape)
    return w + 1j * rng.standard_normal(out.shape) if np.dtype(out.dtype).kind == "c" else w


def check_op(name: str, dtype: str, order: int = 2) -> OpResult:
    """Run :func:`interop.check.check_grads` on op ``name``'s sample in ``dtype``."""
    from fgraph.ops._declare import registry
    from interop._samples import sample_for
    from interop.check import GradientMismatch, check_grads

    start = time.perf_counter()
    try:
        sample = sample_for(name)
        if sample is None:
            return OpResult(name, dtype, 0, 0.0, 0.0, "NO SAMPLE",
                            "add a Sample to SAMPLES in interop/_samples.py")
        if sample.skip:
            return OpResult(name, dtype, 0, 0.0, 0.0, "skipped", sample.skip)
        if np.dtype(dtype).kind == "c" and registry[name].real_only:
            return OpResult(name, dtype, 0, 0.0, 0.0, "real only", "refuses complex tensors (real_only)")
        fn, args = build(name, dtype)
        # forward mode in the double-precision dtypes: float32 runs the same tangent kernels (the op tables
        # check them in float32 too), and each dtype compiles them anew
        modes = ("rev", "fwd") if dtype in ("float64", "complex128") else ("rev",)
        report = check_grads(fn, *args, order=order, modes=modes)
        status, message = "ok", ""
    except GradientMismatch as exc:
        report, status, message = exc.report, "MISMATCH", str(exc)
    except Exception as exc:  # noqa: BLE001 - a crash is a failed check, reported in the table
        return OpResult(name, dtype, order, float("nan"), float("nan"), "ERROR",
                        f"{type(exc).__name__}: {exc}", time.perf_counter() - start)
    fwd_abs = max((e.max_abs for e in report.entries if e.mode == "fwd"), default=float("nan"))
    return OpResult(name, dtype, order, report.max_abs, report.max_rel, status, message,
                    time.perf_counter() - start, fwd_abs)


# -- running many ---------------------------------------------------------------------------------
def _init_worker() -> None:
    import jax

    jax.config.update("jax_enable_x64", True)
    import fgraph  # noqa: F401


def _check_many(tasks: Sequence[tuple], order: int) -> list:
    return [check_op(name, dtype, order) for name, dtype in tasks]


def run(names: Sequence[str], dtypes: Sequence[str], order: int = 2, jobs: int = 1) -> list[OpResult]:
    """Check ``names`` in ``dtypes``; ``jobs > 1`` spreads them over that many processes.

    Example:
        >>> from interop.crosscheck import run
        >>> [r.status for r in run(["sin", "cat"], ["float64"])]
        ['ok', 'ok']
    """
    tasks = [(n, d) for n in names for d in dtypes]
    if jobs <= 1 or len(tasks) < 2:
        _init_worker()
        return _check_many(tasks, order)
    # Interleaved chunks: neighbours in the registry cost alike, so each worker gets a fair mix;
    # several chunks per worker keep both busy to the end.
    chunks = [tasks[i::jobs * 4] for i in range(jobs * 4)]
    context = multiprocessing.get_context("spawn")  # JAX is not fork-safe
    results = []
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context, initializer=_init_worker) as pool:
        for part in pool.map(functools.partial(_check_many, order=order), [c for c in chunks if c]):
            results.extend(part)
    position = {t: i for i, t in enumerate(tasks)}
    return sorted(results, key=functools.partial(_task_position, position))


def _task_position(position: dict, result: OpResult) -> int:
    return position[(result.op, result.dtype)]


# -- the table ------------------------------------------------------------------------------------
def _fmt(x: float) -> str:
    return "-" if x != x else f"{x:.1e}"


def table_rows(results: Sequence[OpResult]) -> list[tuple]:
    """One row per op: ``(op, dtypes, orders, max abs errs, max rel errs, forward-mode abs errs, status)``."""
    by_op: dict[str, list] = {}
    for r in results:
        by_op.setdefault(r.op, []).append(r)
    rows = []
    for name, rs in by_op.items():
        worst = next((r for r in rs if r.failed), None) or next((r for r in rs if r.status == "skipped"), rs[0])
        if worst.failed:
            status = f"{worst.status} ({worst.dtype}): {worst.message.splitlines()[0][:120]}"
        elif worst.status == "skipped":
            status = f"skipped: {worst.message}"
        else:
            status = "ok" + (" (real only)" if any(r.status == "real only" for r in rs) else "")
        orders = max(r.orders for r in rs)
        checked = [r for r in rs if r.status not in _QUIET]
        dtypes = ", ".join(r.dtype for r in checked) or "-"
        rows.append((name, dtypes, "1-" + str(orders) if orders > 1 else str(orders),
                     " / ".join(_fmt(r.max_abs) for r in checked), " / ".join(_fmt(r.max_rel) for r in checked),
                     " / ".join(_fmt(r.fwd_abs) for r in checked), status))
    return rows


_HEADER = ("op", "dtypes", "orders", "max abs err", "max rel err", "jvp abs err", "status")


def format_text(rows: Sequence[tuple]) -> str:
    widths = [max(len(str(r[i])) for r in [_HEADER, *rows]) for i in range(len(_HEADER))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in [_HEADER, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_markdown(rows: Sequence[tuple], summary: str, command: str) -> str:
    out = [
        "# Cross-check of every differentiable op against `jax.grad` and `jax.jvp`",
        "",
        f"Generated by `{command}` (do not edit by hand). For each differentiable primitive",
        "in `fgraph.ops._declare.registry`, `interop.check_grads` compares fgraph's first",
        "derivatives and Hessian-vector products (orders 1-2) of `real(sum(w * op(sample)))` with",
        "`jax.grad` of the same program traced by JAX (conjugated for complex inputs: fgraph follows",
        "PyTorch's convention), and its forward-mode Jacobian-vector product (dual tensors,",
        "[forward-mode AD](forward-ad.md)) with `jax.jvp` (float64 and complex128), in each dtype listed;",
        "errors are listed in that order (*max abs/rel err* cover both modes, *jvp abs err* is forward",
        "mode's, `-` where not checked). Ops marked",
        "*real only* refuse complex tensors. Samples live in `interop/_samples.py`; see",
        "[checking gradients](checking-gradients.md) and [complex numbers](complex.md).",
        "",
        summary,
        "",
        "| " + " | ".join(_HEADER) + " |",
        "|" + "---|" * len(_HEADER),
    ]
    out += ["| " + " | ".join(f"`{c}`" if i == 0 else str(c).replace("|", "\\|") for i, c in enumerate(r)) + " |"
            for r in rows]
    return "\n".join(out) + "\n"


def _summary(results: Sequence[OpResult]) -> str:
    ops = {r.op for r in results}
    failed = sorted({r.op for r in results if r.failed})
    skipped = sorted({r.op for r in results if r.status == "skipped"})
    checks = sum(r.status not in _QUIET for r in results)
    real_only = len({r.op for r in results if r.status == "real only"})
    text = f"{len(ops)} ops, {checks} checks: {len(ops) - len(failed) - len(skipped)} ops passed"
    text += f" ({real_only} of them real only)" if real_only else ""
    text += f", {len(skipped)} skipped" if skipped else ""
    text += f", {len(failed)} FAILED ({', '.join(failed)})" if failed else ", none failed"
    return text + "."


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The command line; returns the exit status (1 on any mismatch, error or missing sample)."""
    parser = argparse.ArgumentParser(prog="python -m interop.crosscheck", description=__doc__.split("\n\n")[0])
    parser.add_argument("--op", action="append", metavar="NAME", help="check only this op (repeatable)")
    parser.add_argument("--dtype", choices=DTYPES, action="append", help="only this dtype (default: both)")
    parser.add_argument("--order", type=int, default=2, help="highest derivative order (default 2)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="worker processes (default: min(2, cores))")
    parser.add_argument("--markdown", metavar="PATH", help="also write the table as Markdown to PATH")
    parser.add_argument("-v", "--verbose", action="store_true", help="print the full report of every failure")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    known = differentiable_ops()
    names = args.op or known
    unknown = [n for n in names if n not in known]
    if unknown:
        parser.error(f"not differentiable registry ops: {unknown} (choose from: {', '.join(known)})")
    dtypes = tuple(args.dtype or DTYPES)
    results = run(names, dtypes, args.order, args.jobs)
    rows = table_rows(results)
    summary = _summary(results)
    print(format_text(rows))
    for r in results:
        if r.failed and (args.verbose or len(names) <= 5):
            print(f"\n{r.op} ({r.dtype}):\n{r.message}")
    elapsed = time.perf_counter() - start
    print(f"\n{summary} Wall time {elapsed:.1f} s with {args.jobs} worker(s).")
    if args.markdown:
        command = "python -m interop.crosscheck --markdown " + args.markdown
        with open(args.markdown, "w", encoding="utf-8") as fh:
            fh.write(format_markdown(rows, summary, command))
    return 1 if any(r.failed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
