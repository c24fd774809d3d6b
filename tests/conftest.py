"""Test configuration: float64 available, and a fixed hypothesis profile in CI.

The suite runs on every core (pytest-xdist, ``-n auto`` in pyproject.toml); each worker
is a JAX process, so none may grab most of an accelerator's memory up front.
"""
import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
# The suite compiles thousands of small kernels and times none of them: XLA's CPU backend at
# optimisation level 0 compiles them ~10% faster (CI time); results stay within every tolerance.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "ci",
    max_examples=10,
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev",
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture
def node_by_node():
    """Run backward node by node: the per-op tables check rules, and compiling a fused
    program for every case would dominate their run time (fusion has its own tests)."""
    from fgraph.autograd import fusion

    fusion.set_enabled(False)
    try:
        yield
    finally:
        fusion.set_enabled(True)
