"""Every op family's table against pure JAX: forward, first derivative, Hessian-vector product.

In float64 (tight tolerance) each listed case of each entry is its own test, so no case
depends on hypothesis drawing it; hypothesis varies the input values. float32 re-checks
the same rules at a loose tolerance -- dtype propagation and rounding, which do not
depend on the shapes -- on each entry's first case (listed first on purpose: a
typical, non-degenerate one), since every new shape and dtype compiles new kernels and
the suite must stay inside CI's time budget.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from op_harness import DTYPES, check_entry, family_tables, listed_cases

pytestmark = pytest.mark.usefixtures("node_by_node")

RUNS = [
    pytest.param(entry, case, dtype, len(listed_cases(entry)), id=f"{family}-{entry.name}-{index}-{dtype.name}")
    for family, module in family_tables().items()
    for entry in module.TABLE
    for index, case in enumerate(listed_cases(entry))
    for dtype in DTYPES
    if dtype == np.float64 or index == 0
]


def _max_examples(entry, n_cases: int, dtype) -> int:
    n = settings.default.max_examples
    if entry.max_examples is not None:
        n = min(n, entry.max_examples)
    if dtype == np.float32:
        return min(n, 2)
    return max(2, n // n_cases)


@pytest.mark.parametrize("entry,case,dtype,n_cases", RUNS)
def test_entry_against_jax(entry, case, dtype, n_cases):
    @settings(max_examples=_max_examples(entry, n_cases, dtype))
    @given(data=st.data())
    def check(data):
        check_entry(data, entry, dtype, case)

    check()


def test_starter_table_covers_every_starter_op():
    """The starter table names every starter op (so a new op cannot silently go untested)."""
    from op_tables.starter import TABLE

    covered = {e.name for e in TABLE}
    starter = {
        "add", "sub", "mul", "div", "neg", "exp", "log", "sin", "cos", "tanh", "sigmoid", "relu", "sqrt",
        "abs", "maximum", "minimum", "where", "clamp", "sum", "mean", "matmul", "reshape", "transpose",
        "permute", "expand", "squeeze", "unsqueeze", "cat", "stack",
    }
    assert starter <= covered, f"untested ops: {sorted(starter - covered)}"
    assert {"pow_int_exponent", "pow_float_exponent", "pow_tensor", "getitem_basic", "getitem_int_array"} <= covered
