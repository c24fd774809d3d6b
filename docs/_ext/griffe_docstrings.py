"""Griffe extension for the docs site: fgraph's docstrings as the Markdown mkdocstrings expects.

fgraph's docstrings are Google style with doctests under ``Example:``, and a few put a doctest
straight in the body. Griffe reads only the plural ``Examples:`` heading as an examples section
(its ``>>>`` lines become highlighted Python); under the singular, or in the body, doctest lines
would render as Markdown text (and ``[1.0, 2.0]`` outputs as broken links). Sphinx roles
(``:class:`Node```) would render with the role showing, so they become code spans. This rewrites
the docstring text griffe keeps for rendering; the sources are untouched.
"""
from __future__ import annotations

import re
from typing import Any

import griffe

# "Example:" or "Example (a note):" alone on a line; the note becomes the section's title.
_EXAMPLE_HEADING = re.compile(r"^([ \t]*)Example(?: \((.+)\))?:[ \t]*$", re.MULTILINE)
# ":class:`Node`", ":func:`~fgraph.grad`", ":py:meth:`x.f`" -> "`Node`", "`fgraph.grad`", "`x.f`".
_SPHINX_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj|const):`~?([^`]+)`")


def _as_examples_heading(match: re.Match) -> str:
    indent, note = match.group(1), match.group(2)
    return f"{indent}Examples: {note}" if note else f"{indent}Examples:"


def _body_doctests_as_sections(text: str) -> str:
    """Put each unindented doctest paragraph (``>>>`` after a blank line) under its own ``Examples:``."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if lines[i].startswith(">>>") and (i == 0 or not lines[i - 1].strip()):
            out.append("Examples:")
            while i < len(lines) and lines[i].strip():
                out.append("    " + lines[i])
                i += 1
            continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)


def as_markdown_docstring(text: str) -> str:
    """The docstring ``text`` with its doctests under ``Examples:`` headings and its roles as code."""
    text = _SPHINX_ROLE.sub(r"`\1`", text)
    return _body_doctests_as_sections(_EXAMPLE_HEADING.sub(_as_examples_heading, text))


class DocstringMarkdown(griffe.Extension):
    """Rewrite each object's docstring with :func:`as_markdown_docstring` when griffe loads it."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = as_markdown_docstring(obj.docstring.value)
