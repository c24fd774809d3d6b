"""Where a warning raised inside fgraph should point: the user's line, not fgraph's internals."""
from __future__ import annotations

import os
import sys

__all__ = ["user_stacklevel"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_INTERNAL_DIRS = (_PACKAGE_DIR + os.sep, os.path.join(os.path.dirname(_PACKAGE_DIR), "interop") + os.sep)


def user_stacklevel() -> int:
    """``warnings.warn``'s ``stacklevel`` for the first frame outside fgraph and interop, when called by the
    function that calls ``warnings.warn``."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_INTERNAL_DIRS):
        frame, level = frame.f_back, level + 1
    return level
