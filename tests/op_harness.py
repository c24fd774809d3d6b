"""The per-op harness shared by every op family's table.

A family's table is a list of :class:`OpEntry` in ``tests/op_tables/<family>.py``
(``TABLE = [...]``); ``tests/test_op_tables.py`` runs every entry against its pure-JAX
reference (forward, first derivative, Hessian-vector product) in float64 and
float32 through :func:`check_entry`. A table may also define
``TORCH = {entry_name: torch_fn}`` (``torch_fn(*torch_tensors, *consts, **params)``)
for the optional PyTorch oracle in ``tests/test_ops_against_torch.py`` (and
``TORCH_TOLERANCES = {entry_name: (rtol, atol)}`` where torch itself is less exact).
Every case of a fixed case list runs (hypothesis then varies the values only).

Complex numbers: every entry is also checked on complex128 and complex64 inputs (real
parts from its domain, imaginary parts from :data:`IMAG` or the entry's ``imag_domain``), unless its table lists it in
``REAL_ONLY`` (the op refuses complex tensors, as PyTorch does: checked too). An entry
whose op takes some inputs real and others complex names the complex ones in
``complex_inputs``.

Each entry names an op, its fgraph call, a pure-JAX reference, the number of tensor
inputs, a strategy of *cases* (input shapes from small fixed pools -- every new shape
compiles new kernels -- plus static parameters and non-differentiable constants such
as index arrays), and a value *domain* that keeps inputs away from points where the op
is not differentiable or not defined.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Callable, NamedTuple, Optional, Sequence

import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fgraph as fg
from jax_oracle import TOLERANCES, check_against_jax


# -- value domains --------------------------------------------------------------------------
def _grid(offset: float) -> st.SearchStrategy[float]:
    """Values ``0.5 * k + offset`` jittered by at most 0.1: two grids with offsets 0 and 0.25
    never come closer than 0.05, and grid 0.25 stays 0.15 away from every multiple of 0.5."""
    return st.builds(lambda k, e: 0.5 * k + offset + e, st.integers(-4, 4), st.floats(-0.1, 0.1))


REAL = st.floats(-2.0, 2.0)
POSITIVE = st.floats(0.5, 2.0)
NONZERO = st.one_of(st.floats(0.25, 2.0), st.floats(-2.0, -0.25))  # abs, relu, divisors
GRID_A = _grid(0.0)  # maximum/minimum: first operand...
GRID_B = _grid(0.25)  # ...second operand (never ties); clamp input (bounds are multiples of 0.5)
#: Imaginary parts of complex inputs: off the real axis (where log, sqrt, pow, asin, acosh, atanh...
#: have their branch cuts) and inside the unit strip (asinh's and atan's cuts start at +-i).
IMAG = st.one_of(st.floats(0.25, 0.75), st.floats(-0.75, -0.25))


class Case(NamedTuple):
    shapes: tuple  # one shape per differentiable tensor input
    params: dict = {}  # static keyword arguments for both implementations
    consts: tuple = ()  # non-differentiable array arguments (NumPy), passed after the inputs


class OpEntry(NamedTuple):
    name: str
    fg_fn: Callable[..., Any]  # fg_fn(*tensors, *consts, **params)
    ref_fn: Callable[..., Any]  # ref_fn(*arrays, *consts, **params), pure jax.numpy
    arity: Optional[int]  # number of differentiable tensor inputs (None: variadic)
    cases: st.SearchStrategy[Case]
    domain: Any  # elements strategy, or a tuple of them (one per input)
    max_examples: Optional[int] = None
    static_consts: bool = False  # consts must be concrete in the reference (boolean masks)
    tolerances: Optional[dict] = None  # {dtype: (rtol, atol)} where the entry's math is less exact than its dtype
    complex_inputs: Optional[tuple] = None  # positions of the inputs made complex in the complex checks (None: all)
    imag_domain: Any = None  # elements strategy of their imaginary parts (None: IMAG)
    jvp_ref: Optional[Callable[..., Any]] = None  # the tangent's reference, where ref_fn's gradient is modified


def cases(*items: Case) -> st.SearchStrategy[Case]:
    return st.sampled_from(items)


def shape_cases(shapes: Sequence[tuple], **params: Any) -> st.SearchStrategy[Case]:
    return cases(*(Case(s, params) for s in shapes))



def grid(shapes: Sequence[tuple], param_list: Sequence[dict] = ({},)) -> st.SearchStrategy[Case]:
    """Every shape (a tuple of input shapes) with every parameter set, as listed cases."""
    return cases(*(Case(s, dict(p)) for p in param_list for s in shapes))


class LazyModule:
    """A module imported on first attribute access: PyTorch is an optional oracle, slow to import."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


#: ``torch`` and ``torch.nn.functional`` for the tables' ``TORCH`` maps.
torch = LazyModule("torch")
TF = LazyModule("torch.nn.functional")


DTYPES = [np.dtype("float64"), np.dtype("float32")]
COMPLEX_DTYPES = [np.dtype("complex128"), np.dtype("complex64")]


def magnitude(x):
    """``|x|`` for a reference: ``jnp.abs`` for real ``x``, ``sqrt(re^2 + im^2)`` for complex ``x``. At XLA's
    optimisation level 0 (the suite's), a jitted ``jax.grad`` through ``max(jnp.abs(z))`` of complex ``z``
    with ties finds no element equal to the max (a division by a zero count: inf); written out, it does."""
    if not jnp.iscomplexobj(x):
        return jnp.abs(x)
    return jnp.sqrt(jnp.real(x) ** 2 + jnp.imag(x) ** 2)


def norm_input(x):
    """What a norm's reference takes: :func:`magnitude` of a complex ``x`` (a complex norm is the norm of
    ``|z|``), a real ``x`` itself."""
    return magnitude(x) if jnp.iscomplexobj(x) else x


def real_dtype(dtype: np.dtype) -> np.dtype:
    """float64 for complex128, float32 for complex64, a real dtype itself (tolerances are by precision)."""
    return np.dtype(dtype).type(0).real.dtype


def real_only(module: Any) -> set:
    """The entries of a table's module that refuse complex inputs."""
    return set(getattr(module, "REAL_ONLY", ()))


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
    arrays = [
        data.draw(hnp.arrays(np.float64, shape, elements=dom), label=f"x{i}")
        for i, (shape, dom) in enumerate(zip(case.shapes, domains))
    ]
    if np.dtype(dtype).kind != "c":
        return [a.astype(dtype) for a in arrays]
    positions = range(len(arrays)) if entry.complex_inputs is None else entry.complex_inputs
    imag = IMAG if entry.imag_domain is None else entry.imag_domain
    return [
        (a + 1j * data.draw(hnp.arrays(np.float64, a.shape, elements=imag), label=f"imag x{i}")).astype(dtype)
        if i in positions else a.astype(real_dtype(dtype))
        for i, a in enumerate(arrays)
    ]


def listed_cases(entry: OpEntry) -> list:
    """The entry's cases when they are a fixed list (``cases(...)``), else ``[None]`` (drawn)."""
    elements = getattr(entry.cases, "elements", None)
    return list(elements) if elements is not None else [None]


def check_entry(data, entry: OpEntry, dtype: np.dtype, case: Case = None, mixed: bool = False,
                forward: bool = True) -> None:
    """Check ``case`` of ``entry`` (drawn when ``None``) against its JAX reference, on drawn values
    (``forward``: forward mode's tangent too; ``mixed``: forward-over-reverse and reverse-over-forward,
    see :func:`jax_oracle.check_against_jax`)."""
    if case is None:
        case = data.draw(entry.cases, label="case")
    arrays = draw_inputs(data, entry, case, dtype)
    fg_consts = [fg.tensor(c, dtype=c.dtype) for c in case.consts]
    params = case.params
    # The entry itself, not its name: tables share names ("norm", "softmax"...) for different references,
    # and a name alone made the second table compare against the first one's compiled reference.
    key = (id(entry), entry.name, repr(params))
    if entry.static_consts:  # e.g. boolean masks: the output shape depends on their values
        key += tuple((c.shape, c.tobytes()) for c in case.consts)
        ref_fn, extra = (lambda *xs: entry.ref_fn(*xs, *case.consts, **params)), ()
        jvp_ref = entry.jvp_ref and (lambda *xs: entry.jvp_ref(*xs, *case.consts, **params))
    else:
        ref_fn, extra = (lambda *xs_and_consts: entry.ref_fn(*xs_and_consts, **params)), case.consts
        jvp_ref = entry.jvp_ref and (lambda *xs_and_consts: entry.jvp_ref(*xs_and_consts, **params))
    check_against_jax(
        lambda *xs: entry.fg_fn(*xs, *fg_consts, **params),
        ref_fn,
        arrays,
        (entry.tolerances or {}).get(real_dtype(dtype), TOLERANCES[real_dtype(dtype)]),
        extra=extra,
        jit_key=key,
        mixed=mixed,
        jvp_ref=jvp_ref,
        forward=forward,
    )

