"""``fgraph.nn.utils``: gradient clipping and parameter/vector conversion (being written)."""
