"""Backward through ``fg.cat`` of many parameter tensors, against PyTorch, by parameter count.

Workload: ``n`` leaf parameters of sizes 3, 4 and 5 (cycling), flattened and joined with
``cat`` (as a flat-parameter vector, a gradient norm or a weight penalty does), then
``(flat ** 2).sum()``; the gradient of every parameter with ``fg.grad``. Two figures per
``n``:

* ``first``: the first backward of that graph, in a fresh process (what a user waits for
  at step one: it includes compiling whatever the backward needs);
* ``steady``: later backwards of the same graph (median of several).

The cost used to be superlinear in ``n`` (about 14 s for 1,000 parameters and 48 s for
3,000): cat's derivative rule was traced into one jitted kernel with an output per input,
recompiled for every arity, and its static slices compiled one kernel per offset. The rule
now cuts the gradient op by op with a runtime offset (one kernel per piece size), so the
first backward is linear and fast.

Run: ``python benchmarks/cat_backward.py`` (1,000 and 3,000 parameters) or ``--quick``
(100 and 300).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from typing import Optional

import numpy as np

SIZES = (3, 4, 5)


def _params(n: int) -> list:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(SIZES[i % len(SIZES)]).astype(np.float32) for i in range(n)]


def measure_fgraph(n: int, repeats: int) -> dict:
    import fgraph as fg

    params = [fg.tensor(p, requires_grad=True) for p in _params(n)]
    loss = (fg.cat([p.reshape(-1) for p in params]) ** 2).sum()
    times = []
    for _ in range(repeats + 1):
        t0 = time.perf_counter()
        grads = fg.grad(loss, params)
        grads[-1].array.block_until_ready()
        times.append(time.perf_counter() - t0)
    np.testing.assert_allclose(np.asarray(grads[7].array), 2 * np.asarray(params[7].array), rtol=1e-6)
    return {"first": times[0], "steady": statistics.median(times[1:])}


def measure_torch(n: int, repeats: int) -> Optional[dict]:
    try:
        import torch
    except ImportError:  # PyTorch is an optional peer
        return None
    params = [torch.tensor(p, requires_grad=True) for p in _params(n)]
    times = []
    for _ in range(repeats + 1):
        t0 = time.perf_counter()
        loss = (torch.cat([p.reshape(-1) for p in params]) ** 2).sum()  # torch frees the graph: rebuild
        torch.autograd.grad(loss, params)
        times.append(time.perf_counter() - t0)
    return {"first": times[0], "steady": statistics.median(times[1:])}


def _in_fresh_process(n: int, repeats: int) -> dict:
    """Run one measurement in a new interpreter, so ``first`` includes every compile it needs."""
    code = (f"import sys, json; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); "
            f"import cat_backward as b; print(json.dumps(b.measure_fgraph({n}, {repeats})))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         cwd=os.getcwd()).stdout
    return json.loads(out.strip().splitlines()[-1])


def run(quick: bool) -> int:
    counts, repeats = ((100, 300), 3) if quick else ((1000, 3000), 5)
    print("backward through fg.cat of n parameters" + (" (--quick)" if quick else ""))
    print(f"{'n':>6} {'fgraph first':>13} {'fgraph steady':>14} {'torch':>10}")
    for n in counts:
        fgr = _in_fresh_process(n, repeats)
        tor = measure_torch(n, repeats)
        torch_col = "n/a" if tor is None else f"{tor['steady'] * 1e3:8.1f}ms"
        print(f"{n:>6} {fgr['first']:>12.3f}s {fgr['steady'] * 1e3:>12.1f}ms {torch_col:>10}")
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from timing import cli

    return cli(run, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
