"""``import fgraph`` freezes the objects that exist then (fgraph/_gc.py), unless FGRAPH_GC_FREEZE=0 opts out.

Each check runs in a fresh interpreter: the freeze happens once, at import.
"""
import json
import os
import subprocess
import sys

_REPORT = r"""
import gc, json, time, weakref
import fgraph as fg

frozen = gc.get_freeze_count()
start = time.perf_counter()
gc.collect()
full_collection_s = time.perf_counter() - start

class Cycle:  # garbage made after the import is still collected
    pass

a, b = Cycle(), Cycle()
a.other, b.other = b, a
alive = weakref.ref(a)
del a, b
gc.collect()
x = fg.tensor([1.0, 2.0], requires_grad=True)
(gx,) = fg.grad((x * x).sum(), [x])
print(json.dumps({"frozen": frozen, "tracked": len(gc.get_objects()), "full_collection_s": full_collection_s,
                  "cycle_collected": alive() is None, "grad": gx.tolist()}))
"""


def _report(**env: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", _REPORT], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_import_freezes_what_exists_and_later_garbage_is_still_collected():
    on = _report()
    assert on["frozen"] > 50_000  # JAX's, NumPy's and fgraph's import-time objects
    assert on["tracked"] < on["frozen"] // 10  # a full collection walks the rest, not them
    assert on["cycle_collected"] and on["grad"] == [2.0, 4.0]


def test_opting_out_leaves_the_collector_alone():
    off = _report(FGRAPH_GC_FREEZE="0")
    assert off["frozen"] == 0
    assert off["tracked"] > 50_000
    assert off["cycle_collected"] and off["grad"] == [2.0, 4.0]
