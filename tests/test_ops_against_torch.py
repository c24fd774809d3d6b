"""PyTorch as an optional oracle: forward values and gradients of every op a table maps to torch.

Sources: every table in ``tests/op_tables`` that defines ``TORCH = {entry_name: torch_fn}``, where
``torch_fn(*torch_tensors, *consts, **params)`` has the signature of the entry's
``fg_fn``. For a few drawn cases per entry (float64), both run on the same
numbers; the forward values (and dtypes) and the gradients of
``(out * w).sum()`` for a fixed pseudo-random ``w`` must agree (subnormal inputs are
flushed to zero first: XLA on CPU flushes them, PyTorch does not). This pins
PyTorch's argument conventions (dim, keepdim, padding order...), which the JAX
references cannot.

The tolerance is tight (float64 kernels of two libraries agree to a few ulps).
Where PyTorch itself is less precise (e.g. a constant it rounds to float32), a
table may loosen it per entry with ``TORCH_TOLERANCES = {entry_name: (rtol, atol)}``.

Complex inputs: every entry its table does not list in ``REAL_ONLY`` runs on complex128
inputs too, gradients of ``real((out * w).sum())`` with complex ``w`` (both libraries in
PyTorch's convention, so they are compared as they are). Where the two differ on whether
an op takes complex numbers at all, the table says so and a test checks it: an entry in
``TORCH_REFUSES_COMPLEX`` is one fgraph differentiates and torch refuses (its autograd or its
kernel); an entry in ``REAL_ONLY`` refuses as torch does, unless it is in
``TORCH_TAKES_COMPLEX`` (fgraph refuses what torch takes: see ``docs/complex.md``).
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

import fgraph as fg  # noqa: E402
from jax_oracle import fixed_random  # noqa: E402
from op_harness import draw_inputs, family_tables, real_only  # noqa: E402
from torch_oracle_version import skip_if_older_than_oracle  # noqa: E402
pytestmark = pytest.mark.usefixtures("node_by_node")

DTYPE = np.dtype("float64")
RTOL, ATOL = 1e-8, 1e-10  # two libraries' float64 kernels: a few ulps apart at most
#: Cases drawn per entry (each draw is new shapes or options, so new kernels for both libraries). CI (35 minutes
#: on 2 cores) draws 3 real and 2 complex ones: every entry still meets torch on each run, the derandomised draws
#: are fixed, and the float64 op tables check every listed case against JAX.
MAX_EXAMPLES = 3 if os.environ.get("CI") else 5
MAX_COMPLEX_EXAMPLES = 2 if os.environ.get("CI") else 3


def _sources() -> list[tuple[str, list, dict, dict]]:
    sources = []
    for family, module in family_tables().items():
        mapping = getattr(module, "TORCH", None)
        if mapping:
            sources.append((family, module.TABLE, mapping, getattr(module, "TORCH_TOLERANCES", {})))
    return sources


SOURCES = _sources()
PAIRS = [
    (family, entry, mapping[entry.name], tolerances.get(entry.name, (RTOL, ATOL)))
    for family, table, mapping, tolerances in SOURCES
    for entry in table
    if entry.name in mapping
]
UNKNOWN = sorted(
    f"{family}: {name}"
    for family, table, mapping, tolerances in SOURCES
    for name in (set(mapping) | set(tolerances)) - {entry.name for entry in table}
)


def test_torch_keys_name_table_entries():
    """A TORCH (or TORCH_TOLERANCES) key that names no entry is a typo or a renamed entry: it would never run."""
    assert not UNKNOWN, f"TORCH/TORCH_TOLERANCES keys that name no entry of their table: {UNKNOWN}"


# -- NumPy <-> torch ---------------------------------------------------------------------------------
def _to_torch(a: np.ndarray, requires_grad: bool = False):
    a = np.array(a, order="C")  # a writable, contiguous copy (np.ascontiguousarray would make 0-d arrays 1-d)
    if a.dtype.name == "bfloat16":  # torch.from_numpy knows no bfloat16
        t = torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16)
    elif np.issubdtype(a.dtype, np.integer):
        t = torch.from_numpy(a.astype(np.int64))
    else:
        t = torch.from_numpy(a)
    return t.requires_grad_(True) if requires_grad else t


def _torch_real(t):
    return t.real if t.is_complex() else t


def _from_torch(t) -> np.ndarray:
    t = t.detach().resolve_conj()
    if t.dtype == torch.bfloat16:
        return t.float().numpy().astype(fg.bfloat16)
    return t.numpy()


def _outputs(out) -> list:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _close(actual: np.ndarray, expected: np.ndarray, what: str, tol: tuple = (RTOL, ATOL)) -> None:
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != torch's {expected.shape}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != torch's {expected.dtype}"
    if actual.dtype == np.bool_ or np.issubdtype(actual.dtype, np.integer):
        np.testing.assert_array_equal(actual, expected, err_msg=what)
    else:
        wide = np.complex128 if actual.dtype.kind == "c" else np.float64
        np.testing.assert_allclose(actual.astype(wide), expected.astype(wide), rtol=tol[0], atol=tol[1],
                                   equal_nan=True, err_msg=what)


def _flush_subnormals(a: np.ndarray) -> np.ndarray:
    """XLA on CPU flushes subnormal floats to zero and PyTorch does not: give both the same zeros."""
    if a.dtype.kind == "c":
        return _flush_subnormals(a.real) + 1j * _flush_subnormals(a.imag)
    return np.where(np.abs(a) < np.finfo(a.dtype).tiny, np.zeros_like(a), a)


def check_against_torch(entry, torch_fn, data, tol: tuple = (RTOL, ATOL), dtype: np.dtype = DTYPE) -> None:
    case = data.draw(entry.cases, label="case")
    arrays = [_flush_subnormals(a) for a in draw_inputs(data, entry, case, dtype)]
    params = case.params

    xs = [fg.tensor(a, dtype=a.dtype, requires_grad=True) for a in arrays]
    fg_out = _outputs(entry.fg_fn(*xs, *[fg.tensor(c, dtype=c.dtype) for c in case.consts], **params))
    ts = [_to_torch(a, requires_grad=True) for a in arrays]
    torch_out = _outputs(torch_fn(*ts, *[_to_torch(c) for c in case.consts], **params))
    assert len(fg_out) == len(torch_out), f"{len(fg_out)} outputs, torch returns {len(torch_out)}"

    # -- forward -------------------------------------------------------------------------------------
    ws = []
    for i, (o, t) in enumerate(zip(fg_out, torch_out)):
        _close(np.asarray(o.array), _from_torch(t), f"forward (output {i})", tol)
        ws.append(fixed_random(o.shape, o.dtype, f"w{i}") if o.dtype.kind in "fc" or o.dtype.name == "bfloat16"
                  else None)

    # -- gradients of sum_i real((out_i * w_i).sum()) -----------------------------------------------------
    fg_terms = [fg.real((o * fg.tensor(w, dtype=w.dtype)).sum()) for o, w in zip(fg_out, ws)
                if w is not None and o.requires_grad]
    t_terms = [_torch_real((t * _to_torch(w)).sum()) for t, w in zip(torch_out, ws)
               if w is not None and t.requires_grad]
    fg_grads = [None] * len(xs)
    if fg_terms:
        fg_grads = fg.grad(sum(fg_terms[1:], fg_terms[0]), xs, allow_unused=True)
    t_grads = [None] * len(ts)
    if t_terms:
        t_grads = torch.autograd.grad(sum(t_terms[1:], t_terms[0]), ts, allow_unused=True)
    for i, (g, tg, a) in enumerate(zip(fg_grads, t_grads, arrays)):
        mine = np.zeros(a.shape, a.dtype) if g is None else np.asarray(g.array)
        theirs = np.zeros(a.shape, a.dtype) if tg is None else _from_torch(tg)
        _close(mine, theirs, f"gradient w.r.t. input {i}", tol)


@pytest.mark.parametrize("family,entry,torch_fn,tol", PAIRS, ids=[f"{f}-{e.name}" for f, e, _, _ in PAIRS])
def test_entry_against_torch(family, entry, torch_fn, tol):
    if entry.name == "aminmax":
        skip_if_older_than_oracle(torch, "a derivative for aminmax")
    n = MAX_EXAMPLES if entry.max_examples is None else min(MAX_EXAMPLES, entry.max_examples)

    @settings(max_examples=n)
    @given(data=st.data())
    def check(data):
        check_against_torch(entry, torch_fn, data, tol)

    check()


# -- complex inputs ------------------------------------------------------------------------------------------------
COMPLEX = np.dtype("complex128")


def _kind(family: str, name: str) -> str:
    """How the entry meets complex inputs: 'checked' against torch, or the refusal each side should show."""
    module = family_tables()[family]
    if name in real_only(module):
        return "torch takes, fgraph refuses" if name in getattr(module, "TORCH_TAKES_COMPLEX", ()) else "both refuse"
    return "torch refuses" if name in getattr(module, "TORCH_REFUSES_COMPLEX", ()) else "checked"


COMPLEX_PAIRS = [(family, entry, fn, tol) for family, entry, fn, tol in PAIRS if _kind(family, entry.name) == "checked"]
DIFFERENCES = [(family, entry, fn, _kind(family, entry.name)) for family, entry, fn, _ in PAIRS
               if _kind(family, entry.name) != "checked"]


def test_complex_lists_name_table_entries():
    """A TORCH_REFUSES_COMPLEX / TORCH_TAKES_COMPLEX key that names no entry (or one outside REAL_ONLY) never runs."""
    bad = []
    for family, module in family_tables().items():
        names = {e.name for e in module.TABLE}
        bad += [f"{family}: {n}" for n in getattr(module, "TORCH_REFUSES_COMPLEX", ()) if n not in names]
        bad += [f"{family}: {n}" for n in getattr(module, "TORCH_TAKES_COMPLEX", ()) if n not in real_only(module)]
    assert not bad, f"complex lists naming no entry that could use them: {bad}"


@pytest.mark.parametrize("family,entry,torch_fn,tol", COMPLEX_PAIRS,
                         ids=[f"{f}-{e.name}" for f, e, _, _ in COMPLEX_PAIRS])
def test_complex_entry_against_torch(family, entry, torch_fn, tol):
    n = MAX_COMPLEX_EXAMPLES if entry.max_examples is None else min(MAX_COMPLEX_EXAMPLES, entry.max_examples)

    @settings(max_examples=n)
    @given(data=st.data())
    def check(data):
        check_against_torch(entry, torch_fn, data, tol, COMPLEX)

    check()


def _torch_runs_on_complex(entry, torch_fn, data) -> bool:
    case = data.draw(entry.cases, label="case")
    ts = [_to_torch(a, requires_grad=True) for a in draw_inputs(data, entry, case, COMPLEX)]
    try:
        outs = _outputs(torch_fn(*ts, *[_to_torch(c) for c in case.consts], **case.params))
        terms = [_torch_real(o.sum()) for o in outs if o.requires_grad]
        if terms:
            torch.autograd.grad(sum(terms[1:], terms[0]), ts, allow_unused=True)
    except (RuntimeError, NotImplementedError, TypeError, ValueError):
        return False
    return True


@pytest.mark.parametrize("family,entry,torch_fn,kind", DIFFERENCES, ids=[f"{f}-{e.name}" for f, e, _, _ in DIFFERENCES])
def test_complex_differences_from_torch_are_as_listed(family, entry, torch_fn, kind):
    """Each entry that does not compare on complex inputs is one where the tables say how the libraries differ."""
    @settings(max_examples=1)
    @given(data=st.data())
    def check(data):
        runs = _torch_runs_on_complex(entry, torch_fn, data)
        assert runs == (kind == "torch takes, fgraph refuses"), (
            f"{entry.name}: listed as '{kind}', but torch {'runs' if runs else 'refuses'} it on complex inputs")

    check()
