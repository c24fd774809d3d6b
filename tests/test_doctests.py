"""Every docstring example in fgraph and interop runs and prints what it shows (one test per module)."""
import doctest
import importlib
import pkgutil

import pytest

import fgraph
import interop


def _modules() -> list[str]:
    names = []
    for package in (fgraph, interop):
        names.append(package.__name__)
        names.extend(info.name for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."))
    return names


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, report=True)
    assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed (see the output above)"
