"""fgraph's benchmarks: ``python -m benchmarks`` runs the whole suite (see ``run.py`` and README.md).

The scripts here also run one by one (``python benchmarks/overhead.py``) and import each
other by module name, so this package puts its own directory on ``sys.path``.
"""
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
