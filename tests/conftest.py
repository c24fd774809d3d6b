"""Test configuration: float64 available, and a fixed hypothesis profile in CI.

The suite runs on every core (pytest-xdist, ``-n auto`` in pyproject.toml); each worker
is a JAX process, so none may grab most of an accelerator's memory up front.
"""
import os
import shutil
import tempfile
from importlib.metadata import version


def _jaxlib_version() -> tuple[int, ...]:
    return tuple(int(part) for part in version("jaxlib").split(".")[:2] if part.isdigit())


os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
# JAX's persistent compilation cache (fgraph turns it on at import, in ~/.cache) points at a directory of this
# run's own: made by the first process (pytest itself, or its only process), inherited through the environment
# by the xdist workers and the subprocesses tests start, removed when that process ends. A kernel compiled by
# one worker is then a ~1-2 ms load for the other, and for the same worker after it drops its compiled
# programs (below: every ~250 programs, the suite recompiled its shared kernels each time). A run neither
# writes into the user's home nor depends on what an earlier run left. FGRAPH_COMPILATION_CACHE=0 turns it off.
# tests/test_compilation_cache.py points its subprocesses at directories of their own.
_RUN_CACHE_OWNER = "FGRAPH_TEST_RUN_CACHE" not in os.environ
if _RUN_CACHE_OWNER:
    os.environ["FGRAPH_TEST_RUN_CACHE"] = tempfile.mkdtemp(prefix="fgraph-test-jax-cache-")
os.environ["FGRAPH_CACHE_DIR"] = os.environ["FGRAPH_TEST_RUN_CACHE"]
# The suite compiles thousands of small kernels and times none of them, so compile time is most of its run
# time (CI's budget): XLA's CPU backend at optimisation level 0 compiles them ~10% faster, and its classic
# elemental emitters instead of the newer fusion emitters ~35% faster again (the op tables' reduction family:
# 72 s -> 46 s on one core); results stay within every tolerance. XLA aborts the process on a flag it does not
# know (every pytest-xdist worker dies with "node down", no traceback), and the second flag is not in every
# jaxlib: jaxlib 0.11.2 (CUDA 13, the lent GPU machine) lost every worker to it, so it is passed only to the
# jaxlib line it was verified on.
_XLA_FLAGS = ["--xla_backend_optimization_level=0"]
if _jaxlib_version() == (0, 10):
    _XLA_FLAGS.append("--xla_cpu_use_fusion_emitters=false")
os.environ["XLA_FLAGS"] = " ".join([os.environ.get("XLA_FLAGS", ""), *_XLA_FLAGS]).strip()

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

# Fusion compiles a structure once its node-by-node passes have paid for the compile (the rent rule,
# tests/test_compile_rent.py); the suite compiles every structure at its second sighting instead, so each
# test that repeats a structure runs its fused programs too.
from fgraph.autograd import fusion as _fusion  # noqa: E402

_fusion.set_compile_rent(0)
from fgraph.lazy import _deferred  # noqa: E402

if _deferred.is_enabled():  # the suite under deferred dispatch (the default): its traces keep the rent rule
    _deferred.set_rent(2.0)
# The references are compared in full float32: on a GPU, JAX's default float32 matrix product is TF32,
# whose rounding (~1e-3) depends on the order of the products and is above the float32 tolerances.
jax.config.update("jax_default_matmul_precision", "float32")

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


_SUITE_DEFERRED = _deferred.is_enabled()  # the suite's dispatch mode: deferred (fgraph's default) or FGRAPH_DEFERRED=0


@pytest.fixture(autouse=True)
def _eager_dispatch(request):
    """Tests marked ``eager_dispatch`` check op-by-op dispatch's own machinery (a kernel's jit cache, compile logs,
    ``fg.lazy`` counters): under deferred dispatch (the default) they run with it off, as their assertions are
    about that mode; every other test runs in whichever mode the suite runs in. A test that switches the mode
    itself (``fg.lazy.set_deferred``) leaves the next test in the suite's mode."""
    marked = request.node.get_closest_marker("eager_dispatch") is not None
    if marked and _SUITE_DEFERRED:
        _deferred.disable()
    try:
        yield
    finally:
        if _deferred.is_enabled() != _SUITE_DEFERRED:
            if _SUITE_DEFERRED:
                _deferred.enable()
            else:
                _deferred.disable()


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


# -- compiled programs held by JAX ----------------------------------------------------------------------------
# JAX keeps every program it compiled, and one worker of this suite compiles tens of thousands. Two costs grow
# with the number it holds, so a worker drops them (recompiled on demand) together with fusion's cache:
# - Compile time. Each new compile slows with the programs already held (in MLIR's uniquing of the lowering
#   contexts and in JAX's caches): 65-70 ms for a small program with few held, 100-120 ms with ~1,500 held
#   (a loop of jax.jit over new shapes, with and without jax.clear_caches() between). The op tables'
#   reduction, linalg and sorting families (CI's cases, one process): 299 s dropping only at half the map
#   limit, 276 s with a drop every ~250 programs, 291 s every ~125 (more recompiles of shared kernels).
# - Memory maps. Every XLA:CPU executable maps ~3-6 regions; past vm.max_map_count (65,530 here) the next
#   compile's mmap fails and XLA dies with a segmentation fault. Half the limit is the ceiling, not 3/4:
#   jax.jit's C++ dispatch cache holds 8,192 entries (pjit.make_jit_cpp_cache) and would overflow first, and
#   the tests that check "one compile serves every step" (``_cache_size() == 1``) would read 0.
# So a drop comes when the maps grow _MAPS_WINDOW past what the worker held after its last drop (a drop frees
# ~2.7 ms of teardown per program, whenever it comes), or at half the limit, whichever is first.
_MAPS_CHECK_EVERY = 20  # tests between two counts of /proc/self/maps (a count of ~5k lines takes ~1 ms)
_MAPS_WINDOW = 1536  # ~250 programs
_tests_since_check = [0]


def _map_limits() -> tuple:
    try:
        with open("/proc/sys/vm/max_map_count") as f:
            return int(f.read()) // 2, "/proc/self/maps"
    except (OSError, ValueError):  # not Linux: nothing to watch
        return None, None


_MAPS_CEILING, _MAPS_FILE = _map_limits()


def _count_maps() -> int:
    with open(_MAPS_FILE, "rb") as f:
        return sum(1 for _ in f)


_maps_floor = [None if _MAPS_FILE is None else _count_maps()]  # after the worker's imports, or its last drop


def pytest_unconfigure(config) -> None:
    if _RUN_CACHE_OWNER:
        shutil.rmtree(os.environ["FGRAPH_TEST_RUN_CACHE"], ignore_errors=True)


def pytest_runtest_teardown(item, nextitem) -> None:
    _fusion.set_compile_rent(0)  # whatever a test (or a doctest) set, the next one starts with the suite's rule
    if _MAPS_CEILING is None:
        return
    _tests_since_check[0] += 1
    if _tests_since_check[0] < _MAPS_CHECK_EVERY:
        return
    _tests_since_check[0] = 0
    maps = _count_maps()
    if maps > min(_MAPS_CEILING, _maps_floor[0] + _MAPS_WINDOW):
        from fgraph.autograd import fusion

        fusion.wait_for_compiles(60.0)  # never clear under a compile running on fusion's worker
        fusion.clear_cache()
        jax.clear_caches()
        _maps_floor[0] = _count_maps()
