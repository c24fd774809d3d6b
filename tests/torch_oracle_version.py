"""The PyTorch oracle's release: fgraph mirrors torch 2.13 (``pip install torch==2.13.0``).

An older torch (a GPU machine's image, say) lacks a few things fgraph mirrors; the tests
that compare against exactly those skip there, naming what is missing, and run everywhere else.
"""
import pytest

ORACLE = (2, 13)


def skip_if_older_than_oracle(torch, lacks: str) -> None:
    """Skip the calling test when ``torch`` predates the oracle's release; ``lacks``: what it lacks."""
    release = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])
    if release < ORACLE:
        pytest.skip(f"PyTorch {torch.__version__} predates the oracle ({'.'.join(map(str, ORACLE))}): "
                    f"it lacks {lacks}")
