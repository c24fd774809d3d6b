"""One module per op family, each with ``TABLE`` (and optionally ``TORCH``); see op_harness.py."""
