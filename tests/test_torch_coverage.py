"""The PyTorch coverage report (``fgraph/coverage.py`` -> ``docs/torch-coverage.md``).

Without PyTorch: every name the committed report lists as present really exists in fgraph,
and the classification rules hold. With PyTorch: the committed report is what the generator
writes now (rerun ``python -m fgraph.coverage`` after adding ops), and ``--check`` notices a
stale one.
"""
from __future__ import annotations

import pytest

import fgraph as fg
from fgraph import coverage


def _target(namespace: str):
    return coverage._fgraph_namespace(coverage.COMMON[namespace][0])


def test_every_present_name_exists():
    present = coverage.present_names(coverage.DOC.read_text())
    assert set(present) == set(coverage.COMMON)
    assert sum(map(len, present.values())) > 400  # the parser found the lists
    for namespace, names in present.items():
        target = _target(namespace)
        missing = [n for n in names if target is None or not hasattr(target, n)]
        assert not missing, f"{namespace}: listed as present but not in fgraph: {missing}"


def test_classification_rules():
    assert coverage.classify("torch", "select") == ("present", "")
    assert coverage.classify("torch.Tensor", "mH") == ("present", "")
    status, reason = coverage.classify("torch.Tensor", "mul_")
    assert status == "deliberately absent" and "immutable" in reason
    assert coverage.classify("torch.Tensor", "requires_grad_")[0] == "present"  # present wins over the `_` rule
    assert coverage.classify("torch.Tensor", "stride")[0] == "deliberately absent"
    for namespace, (_, names) in coverage.COMMON.items():
        assert len(names) == len(set(names)), f"{namespace}: duplicate names in COMMON"
    for namespace, name in coverage.DELIBERATELY_ABSENT:
        assert name in coverage.COMMON[namespace][1], (namespace, name)


def test_report_is_up_to_date():
    pytest.importorskip("torch")
    assert coverage.DOC.read_text() == coverage.render(), "docs/torch-coverage.md is stale: python -m fgraph.coverage"


def test_check_flag_notices_a_stale_report(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    stale = tmp_path / "coverage.md"
    stale.write_text("# old\n")
    monkeypatch.setattr(coverage, "render", lambda: "# new\n")
    assert coverage.main(["--output", str(stale), "--check"]) == 1
    assert coverage.main(["--output", str(stale)]) == 0 and stale.read_text() == "# new\n"
    assert coverage.main(["--output", str(stale), "--check"]) == 0
