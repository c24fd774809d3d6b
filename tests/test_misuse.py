"""Every row of the misuse table (``tests/misuse_table.py``): the exception type, and a message
naming the op or argument and the fix; or, for mistakes fgraph now handles, the right result.
Also: ``docs/common-mistakes.md`` is the table's rendering."""
from __future__ import annotations

import pathlib
import re

import pytest

from misuse_table import TABLE, Mistake, render_markdown

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "common-mistakes.md"


@pytest.mark.parametrize("m", [pytest.param(m, id=m.name, marks=m.marks) for m in TABLE])
def test_mistake(m: Mistake) -> None:
    if m.raises is None:
        result = m.call()
        assert m.check(result), f"{m.name}: wrong result {result!r}"
        return
    assert m.match, f"{m.name}: a row that raises must say what the message names"
    with pytest.raises(m.raises) as info:
        m.call()
    message = str(info.value)
    for pattern in m.match:
        assert re.search(pattern, message), f"{m.name}: {pattern!r} not in message: {message}"


def test_table_rows_are_unique_and_documented() -> None:
    names = [m.name for m in TABLE]
    assert len(names) == len(set(names))
    assert all(m.fix and m.mistake for m in TABLE)


def test_doc_is_generated_from_the_table() -> None:
    assert DOC.read_text() == render_markdown(), (
        "docs/common-mistakes.md is out of date: run PYTHONPATH=. python tests/misuse_table.py > docs/common-mistakes.md")
