"""``python -m benchmarks``: the whole suite, one table (``run.py``)."""
import sys

from run import main

sys.exit(main())
