"""Importing fgraph leaves JAX's backend unstarted, so JAX settings made after the import still apply.

JAX reads some settings only when its backend starts (the number of CPU devices, CPU async
dispatch, the platform). fgraph makes no array at import: the default generator's key is made
on its first draw. Checked in a fresh interpreter (this one started JAX long ago).
"""
import json
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import json
    import fgraph as fg
    import jax

    jax.config.update("jax_num_cpu_devices", 2)  # raises once a backend has started
    first = fg.randn(3).tolist()
    fg.manual_seed(0)  # the default seed: the same stream again
    print(json.dumps({"devices": len(jax.devices("cpu")), "first": first, "again": fg.randn(3).tolist()}))
    """
)


def test_importing_fgraph_starts_no_jax_backend():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["devices"] == 2
    assert out["first"] == out["again"]
