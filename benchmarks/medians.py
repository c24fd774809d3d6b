"""Medians over several suite runs: ``python -m benchmarks --runs 3`` reports each figure's median.

Each run is a fresh process (``--rows-json``): a repeat in the same process would find the "fresh"
structures and the first calls already compiled. A figure missing from some runs (a peer that failed
once) is the median of the runs that have it; what is not a number (labels, notes) comes from the first.

Example:
    >>> median_tree([{"a": {"x": 1.0}, "n": "note"}, {"a": {"x": 3.0}, "n": "other"}, {"a": {"x": 2.0}}])
    {'a': {'x': 2.0}, 'n': 'note'}
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Any, Optional


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def median_tree(trees: list) -> Any:
    """The trees' common structure with each number replaced by its median over the trees that have it."""
    present = [t for t in trees if t is not None]
    if not present:
        return None
    first = present[0]
    if isinstance(first, dict):
        keys = list(first) + [k for t in present[1:] if isinstance(t, dict) for k in t if k not in first]
        return {k: median_tree([t.get(k) for t in present if isinstance(t, dict)]) for k in keys}
    if _number(first):
        return statistics.median(v for v in present if _number(v))
    return first


def run_in_processes(argv: list, runs: int, keep: Optional[str] = None) -> tuple[dict, dict]:
    """``(rows, fresh_raw)``: the medians of ``runs`` suite runs, each ``python -m benchmarks argv`` in its own
    process (its table goes to this process's stderr). With ``keep``, each run's figures stay in that folder
    (``run1.json``, ...) from the moment the run ends."""
    here = os.path.dirname(os.path.abspath(__file__))
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = keep or scratch
        os.makedirs(folder, exist_ok=True)
        for i in range(runs):
            path = os.path.join(folder, f"run{i + 1}.json")
            print(f"suite run {i + 1} of {runs}", file=sys.stderr, flush=True)
            subprocess.run([sys.executable, os.path.join(here, "run.py"), *argv, "--rows-json", path],
                           check=True, stdout=sys.stderr)
            with open(path) as f:
                results.append(json.load(f))
    return median_tree([r["rows"] for r in results]), median_tree([r["fresh_raw"] for r in results])


def write_rows(path: str, rows: dict, fresh_raw: dict, where: dict, command: str) -> None:
    """One run's figures, for :func:`run_in_processes` and :func:`combine` (NumPy numbers as floats), with
    where it ran (``run.machine()``) and its command."""
    with open(path, "w") as f:
        json.dump({"rows": rows, "fresh_raw": fresh_raw, "where": where, "command": command}, f, default=float)


def combine(paths: list) -> tuple[dict, dict, dict, str]:
    """``(rows, fresh_raw, where, command)`` of runs kept by ``--keep-runs``: the medians, and the machine and
    command of the first run (the runs must come from one backend)."""
    results = []
    for path in paths:
        with open(path) as f:
            results.append(json.load(f))
    backends = {r["where"]["backend"] for r in results}
    if len(backends) != 1:
        raise SystemExit(f"--combine: the runs come from different backends ({sorted(backends)}); combine one at a time")
    return (median_tree([r["rows"] for r in results]), median_tree([r["fresh_raw"] for r in results]),
            results[0]["where"], results[0]["command"])
