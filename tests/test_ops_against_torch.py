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
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

import fgraph as fg  # noqa: E402
from jax_oracle import fixed_random  # noqa: E402
from op_harness import draw_inputs, family_tables  # noqa: E402
from torch_oracle_version import skip_if_older_than_oracle  # noqa: E402
pytestmark = pytest.mark.usefixtures("node_by_node")

DTYPE = np.dtype("float64")
RTOL, ATOL = 1e-8, 1e-10  # two libraries' float64 kernels: a few ulps apart at most
MAX_EXAMPLES = 5


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


def _from_torch(t) -> np.ndarray:
    t = t.detach()
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
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=tol[0], atol=tol[1],
                                   equal_nan=True, err_msg=what)


def _flush_subnormals(a: np.ndarray) -> np.ndarray:
    """XLA on CPU flushes subnormal floats to zero and PyTorch does not: give both the same zeros."""
    return np.where(np.abs(a) < np.finfo(a.dtype).tiny, np.zeros_like(a), a)


def check_against_torch(entry, torch_fn, data, tol: tuple = (RTOL, ATOL)) -> None:
    case = data.draw(entry.cases, label="case")
    arrays = [_flush_subnormals(a) for a in draw_inputs(data, entry, case, DTYPE)]
    params = case.params

    xs = [fg.tensor(a, dtype=a.dtype, requires_grad=True) for a in arrays]
    fg_out = _outputs(entry.fg_fn(*xs, *[fg.tensor(c, dtype=c.dtype) for c in case.consts], **params))
    ts = [_to_torch(a, requires_grad=True) for a in arrays]
    torch_out = _outputs(torch_fn(*ts, *[_to_torch(c) for c in case.consts], **params))
    assert len(fg_out) == len(torch_out), f"{len(fg_out)} outputs, torch returns {len(torch_out)}"

    # -- forward -------------------------------------------------------------------------------------
    ws = []
    for i, (o, t) in enumerate(zip(fg_out, torch_out)):
        _close(np.asarray(o.data), _from_torch(t), f"forward (output {i})", tol)
        ws.append(fixed_random(o.shape, o.dtype, f"w{i}") if o.dtype.kind == "f" or o.dtype.name == "bfloat16"
                  else None)

    # -- gradients of sum_i (out_i * w_i).sum() --------------------------------------------------------
    fg_terms = [(o * fg.tensor(w, dtype=w.dtype)).sum() for o, w in zip(fg_out, ws) if w is not None and o.requires_grad]
    t_terms = [(t * _to_torch(w)).sum() for t, w in zip(torch_out, ws) if w is not None and t.requires_grad]
    fg_grads = [None] * len(xs)
    if fg_terms:
        fg_grads = fg.grad(sum(fg_terms[1:], fg_terms[0]), xs, allow_unused=True)
    t_grads = [None] * len(ts)
    if t_terms:
        t_grads = torch.autograd.grad(sum(t_terms[1:], t_terms[0]), ts, allow_unused=True)
    for i, (g, tg, a) in enumerate(zip(fg_grads, t_grads, arrays)):
        mine = np.zeros(a.shape, a.dtype) if g is None else np.asarray(g.data)
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
