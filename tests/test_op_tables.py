"""Every op family's table against pure JAX: forward, first derivative, Hessian-vector product."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from op_harness import DTYPES, check_entry, family_tables

ENTRIES = [(family, entry) for family, module in family_tables().items() for entry in module.TABLE]


def _max_examples(entry, dtype) -> int:
    n = settings.default.max_examples
    if entry.max_examples is not None:
        n = min(n, entry.max_examples)
    return min(n, 2) if dtype == np.float32 else n


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("family,entry", ENTRIES, ids=[f"{f}-{e.name}" for f, e in ENTRIES])
def test_entry_against_jax(family, entry, dtype):
    @settings(max_examples=_max_examples(entry, dtype))
    @given(data=st.data())
    def check(data):
        check_entry(data, entry, dtype)

    check()
