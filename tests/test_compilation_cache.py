"""JAX's persistent compilation cache, which ``import fgraph`` turns on (fgraph/_compilation_cache.py).

Each import-time case runs in a fresh interpreter: the cache is configured when fgraph is imported,
and the suite itself runs with it off (tests/conftest.py sets FGRAPH_COMPILATION_CACHE=0).
"""
import json
import os
import subprocess
import sys

import jax
import pytest

import fgraph as fg
from fgraph.backends import compilation_cache

# A few ops and a backward pass (node by node, then fused at its second sighting: fusion compiles on its
# worker thread, waited for so that its program is written too); prints the cache's directory and JAX's hit/write counts.
_WORKLOAD = """
import json, jax
counts = {"hits": 0, "writes": 0}
def count(event, **kwargs):
    if event == "/jax/compilation_cache/cache_hits":
        counts["hits"] += 1
    elif event == "/jax/compilation_cache/cache_misses":  # recorded when an entry is written
        counts["writes"] += 1
jax.monitoring.register_event_listener(count)
import fgraph as fg
from fgraph.autograd import fusion
fusion.set_compile_rent(0)  # fused at the second pass in both processes, however long the first pass took
x = fg.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], requires_grad=True)
w = fg.tensor([[0.1, 0.2], [0.3, -0.4], [0.5, 0.6]], requires_grad=True)
for _ in range(3):
    fg.backward(fg.tanh(x @ w).exp().sum())
fusion.wait_for_compiles(60.0)
print(json.dumps({"dir": fg.backends.compilation_cache.cache_dir(), **counts}))
"""


def _run(code: str, **env: str) -> dict:
    """Run ``code`` in a fresh interpreter with the cache switched on unless ``env`` says otherwise."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("JAX_COMPILATION_CACHE_DIR", "FGRAPH_CACHE_DIR")}
    full_env.update({"FGRAPH_COMPILATION_CACHE": "1", **env})
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _entries(path) -> list:
    return sorted(p.name for p in path.iterdir() if p.name.endswith("-cache")) if path.exists() else []


def test_a_second_process_loads_what_the_first_compiled(tmp_path):
    cache = tmp_path / "cache"
    # Every program written, however fast this machine compiles (fgraph keeps a threshold set in JAX), so
    # that no program compiles just under the threshold in one process and just over it in the other.
    env = {"FGRAPH_CACHE_DIR": str(cache), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}
    first = _run(_WORKLOAD, **env)
    assert first["dir"] == str(cache)
    written = _entries(cache)
    assert first["writes"] > 0 and len(written) == first["writes"]
    second = _run(_WORKLOAD, **env)
    assert second["hits"] >= len(written) and second["writes"] == 0
    assert _entries(cache) == written


def test_opting_out_writes_nothing(tmp_path):
    cache = tmp_path / "cache"
    out = _run(_WORKLOAD, FGRAPH_CACHE_DIR=str(cache), FGRAPH_COMPILATION_CACHE="0")
    assert out == {"dir": None, "hits": 0, "writes": 0}
    assert _entries(cache) == []


def test_a_cache_directory_set_in_jax_is_kept(tmp_path):
    mine, fgraphs = tmp_path / "mine", tmp_path / "fgraph"
    code = (f"import json, jax; jax.config.update('jax_compilation_cache_dir', {str(mine)!r}); import fgraph as fg; "
            "print(json.dumps([fg.backends.compilation_cache.cache_dir(), "
            "jax.config.jax_persistent_cache_min_compile_time_secs]))")
    assert _run(code, FGRAPH_CACHE_DIR=str(fgraphs)) == [str(mine), 1.0]  # JAX's own threshold too
    assert not fgraphs.exists()


def test_an_unwritable_directory_leaves_the_cache_off(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")  # a directory cannot be made under a file (even by root)
    code = "import json, fgraph as fg; print(json.dumps(fg.backends.compilation_cache.cache_dir()))"
    assert _run(code, FGRAPH_CACHE_DIR=str(blocker / "cache")) is None


@pytest.fixture
def restore_cache_settings():
    before = compilation_cache.cache_dir()
    min_time = jax.config.jax_persistent_cache_min_compile_time_secs
    try:
        yield
    finally:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", min_time)
        if before is None:
            compilation_cache.disable()
        else:
            compilation_cache.enable(before)


def test_enable_and_disable_at_run_time(tmp_path, restore_cache_settings):
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)  # however fast this machine compiles
    assert compilation_cache.enable(tmp_path) == str(tmp_path)
    assert compilation_cache.is_enabled() and compilation_cache.cache_dir() == str(tmp_path)
    x = fg.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])  # a shape no other test here compiles for
    fg.sinh(x).cosh().numpy()
    written = _entries(tmp_path)
    assert written
    compilation_cache.disable()
    assert compilation_cache.cache_dir() is None and not compilation_cache.is_enabled()
    fg.atanh(x / 8).numpy()
    assert _entries(tmp_path) == written
    with pytest.raises(OSError):
        compilation_cache.enable(tmp_path / written[0] / "below_a_file")
