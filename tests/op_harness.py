"""The per-op harness shared by every op family's table.

A family's table is a list of :class:`OpEntry` in ``tests/op_tables/<family>.py``
(``TABLE = [...]``); ``tests/test_op_tables.py`` runs every entry against its pure-JAX
reference (forward, first derivative, Hessian-vector product) in float64 and
float32 through :func:`check_entry`. A table may also define
``TORCH = {entry_name: torch_fn}`` (``torch_fn(*torch_tensors, *consts, **params)``)
for the optional PyTorch oracle in ``tests/test_ops_against_torch.py`` (and
``TORCH_TOLERANCES = {entry_name: (rtol, atol)}`` where torch itself is less exact).
Every case of a fixed case list runs (hypothesis then varies the values only).
"""
from __future__ import annotations

import importlib
import pkgutil

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fgraph as fg
from jax_oracle import TOLERANCES, check_against_jax
from test_ops_against_jax import (  # noqa: F401  (re-exported for the family tables)
    GRID_A,
    GRID_B,
    NONZERO,
    POSITIVE,
    REAL,
    Case,
    OpEntry,
    cases,
    shape_cases,
)

DTYPES = [np.dtype("float64"), np.dtype("float32")]


def family_tables() -> dict:
    """``{family: module}`` for every module in ``tests/op_tables``."""
    import op_tables

    return {
        info.name: importlib.import_module(f"op_tables.{info.name}")
        for info in pkgutil.iter_modules(op_tables.__path__)
        if not info.name.startswith("_")
    }


def draw_inputs(data, entry: OpEntry, case: Case, dtype: np.dtype) -> list:
    if entry.arity is not None:
        assert len(case.shapes) == entry.arity, f"{entry.name}: case {case} does not have {entry.arity} inputs"
    domains = entry.domain if isinstance(entry.domain, tuple) else (entry.domain,) * len(case.shapes)
    return [
        data.draw(hnp.arrays(np.float64, shape, elements=dom), label=f"x{i}").astype(dtype)
        for i, (shape, dom) in enumerate(zip(case.shapes, domains))
    ]


def listed_cases(entry: OpEntry) -> list:
    """The entry's cases when they are a fixed list (``cases(...)``), else ``[None]`` (drawn)."""
    elements = getattr(entry.cases, "elements", None)
    return list(elements) if elements is not None else [None]


def check_entry(data, entry: OpEntry, dtype: np.dtype, case: Case = None) -> None:
    """Check ``case`` of ``entry`` (drawn when ``None``) against its JAX reference, on drawn values."""
    if case is None:
        case = data.draw(entry.cases, label="case")
    arrays = draw_inputs(data, entry, case, dtype)
    fg_consts = [fg.tensor(c, dtype=c.dtype) for c in case.consts]
    params = case.params
    key = (entry.name, repr(params))
    if entry.static_consts:  # e.g. boolean masks: the output shape depends on their values
        key += tuple((c.shape, c.tobytes()) for c in case.consts)
        ref_fn, extra = (lambda *xs: entry.ref_fn(*xs, *case.consts, **params)), ()
    else:
        ref_fn, extra = (lambda *xs_and_consts: entry.ref_fn(*xs_and_consts, **params)), case.consts
    check_against_jax(
        lambda *xs: entry.fg_fn(*xs, *fg_consts, **params),
        ref_fn,
        arrays,
        TOLERANCES[dtype],
        extra=extra,
        jit_key=key,
    )

