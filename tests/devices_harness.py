"""Run a program of scenarios on simulated CPU devices, in a subprocess (the device count is fixed when JAX starts).

The program prints one line ``RESULT {json}`` per scenario, each with a ``name`` and ``ok`` (and ``error``,
``tb`` when it failed); :func:`run_scenarios` collects them by name and :func:`scenario_result` asserts one passed.
Many scenarios share one subprocess, so the JAX start-up and the compiles are paid once per test module.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


def run_scenarios(program: str, devices: int, timeout: int = 600) -> dict:
    """``{scenario name: its reported dict}`` (and ``"_stderr"``: the tail of the subprocess's stderr)."""
    flags = os.environ.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={devices}"
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=flags.strip())
    result = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=timeout)
    lines = [line[len("RESULT "):] for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    found = {entry["name"]: entry for entry in map(json.loads, lines)}
    if not found:
        pytest.fail(f"the subprocess reported nothing (exit {result.returncode}):\n{result.stderr[-4000:]}")
    found["_stderr"] = result.stderr[-4000:]
    found["_stdout"] = result.stdout
    found["_returncode"] = result.returncode
    return found


def scenario_result(report: dict, name: str) -> dict:
    """The entry of scenario ``name``, which must have reported and passed."""
    entry = report.get(name)
    assert entry is not None, f"scenario {name} did not report:\n{report['_stderr']}"
    assert entry["ok"], f"{name}: {entry['error']}\n{entry.get('tb', '')}"
    return entry
