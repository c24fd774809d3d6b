"""The documentation site's wiring, checked without MkDocs (CI also runs ``mkdocs build --strict``).

Every Markdown page under ``docs/`` is in ``mkdocs.yml``'s ``nav`` (or in its ``not_in_nav``),
every ``nav`` entry exists, and every ``::: name`` block of the API reference imports, with the
members it lists: a new page or a renamed module fails the normal test run too.
"""
from __future__ import annotations

import fnmatch
import importlib
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
# "::: fgraph.nn.init" and the indented YAML options under it.
_DIRECTIVE = re.compile(r"^::: *(?P<name>\S+)[ \t]*\n(?P<options>(?:[ \t]+\S.*\n?)*)", re.MULTILINE)


class _TolerantLoader(yaml.SafeLoader):
    """SafeLoader that reads tags it does not know (``!!python/name:...``, ``!ENV``) as plain values."""


def _untagged(loader: yaml.SafeLoader, tag_suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return loader.construct_scalar(node) or tag_suffix  # !!python/name:x.y keeps its name in the tag


_TolerantLoader.add_multi_constructor("tag:yaml.org,2002:python/", _untagged)
_TolerantLoader.add_multi_constructor("!", _untagged)


def _config() -> dict:
    return yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=_TolerantLoader)


def _nav_pages(entries: Any) -> list[str]:
    """The page paths in a ``nav`` tree (nested lists of ``{title: path or list}``), links left out."""
    if isinstance(entries, str):
        return [] if "://" in entries else [entries]
    if isinstance(entries, list):
        return [page for entry in entries for page in _nav_pages(entry)]
    if isinstance(entries, dict):
        return [page for value in entries.values() for page in _nav_pages(value)]
    return []


def _matches(patterns: str, page: str) -> bool:
    """Whether a docs-relative ``page`` matches one of MkDocs' gitignore-style ``patterns`` lines."""
    for pattern in (line.strip() for line in (patterns or "").splitlines()):
        if not pattern or pattern.startswith("#"):
            continue
        if pattern.startswith("/"):
            anchored = pattern.lstrip("/")
            if fnmatch.fnmatch(page, anchored) or (pattern.endswith("/") and page.startswith(anchored)):
                return True
        elif fnmatch.fnmatch(page, pattern) or fnmatch.fnmatch(Path(page).name, pattern) or (
                pattern.endswith("/") and f"/{pattern}" in f"/{page}"):
            return True
    return False


def _markdown_pages(config: dict) -> list[str]:
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    return [p for p in pages if not _matches(config.get("exclude_docs", ""), p)]


def _resolve(name: str) -> Any:
    """The object a mkdocstrings identifier names: a module, or an attribute of one."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name != name or "." not in name:  # a module it imports is missing, or a top-level name
            raise
    parent, _, attribute = name.rpartition(".")
    return getattr(_resolve(parent), attribute)


def _api_directives() -> list[tuple[str, str, dict]]:
    """``(page, identifier, options)`` for every ``::: identifier`` block under ``docs/``."""
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        for match in _DIRECTIVE.finditer(page.read_text()):
            block = yaml.safe_load(textwrap.dedent(match.group("options"))) or {}
            found.append((page.relative_to(DOCS).as_posix(), match.group("name"), block.get("options") or {}))
    return found


def test_every_page_is_in_the_nav_or_excluded():
    config = _config()
    in_nav = set(_nav_pages(config["nav"]))
    left_out = [p for p in _markdown_pages(config) if p not in in_nav and not _matches(config.get("not_in_nav"), p)]
    assert not left_out, (
        f"docs pages missing from mkdocs.yml: {left_out}; add each to `nav` (or, if it is reached only by "
        f"links, to `not_in_nav`)")


def test_every_nav_entry_exists():
    missing = [p for p in _nav_pages(_config()["nav"]) if not (DOCS / p).is_file()]
    assert not missing, f"mkdocs.yml's nav names pages that do not exist under docs/: {missing}"


def test_the_api_reference_has_directives():
    pages = {page for page, _, _ in _api_directives()}
    assert {"api/fgraph.md", "api/nn.md", "api/optim.md"} <= pages, sorted(pages)


@pytest.mark.parametrize("page, name, options", _api_directives(), ids=lambda v: v if isinstance(v, str) else "")
def test_api_target_imports_with_its_members(page, name, options):
    target = _resolve(name)
    members = options.get("members")
    if isinstance(members, list):
        absent = [m for m in members if not hasattr(target, m)]
        assert not absent, f"docs/{page}: `::: {name}` lists members it does not have: {absent}"


def test_tolerant_loader_reads_python_name_tags():
    text = "markdown_extensions:\n  - pymdownx.emoji:\n      emoji_index: !!python/name:material.extensions.emoji.twemoji\n"
    assert yaml.load(text, Loader=_TolerantLoader) == {
        "markdown_extensions": [{"pymdownx.emoji": {"emoji_index": "name:material.extensions.emoji.twemoji"}}]}
    with pytest.raises(yaml.YAMLError):
        yaml.safe_load(text)


def test_docstring_extension_renders_doctests_as_examples():
    pytest.importorskip("griffe")
    import importlib.util

    spec = importlib.util.spec_from_file_location("griffe_docstrings", DOCS / "_ext" / "griffe_docstrings.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = "Summary with :class:`~fgraph.Tensor`.\n\nExample:\n    >>> 1 + 1\n    2\n\n>>> 3\n3"
    assert module.as_markdown_docstring(text) == (
        "Summary with `fgraph.Tensor`.\n\nExamples:\n    >>> 1 + 1\n    2\n\nExamples:\n    >>> 3\n    3")
