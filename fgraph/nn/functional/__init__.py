"""``fgraph.nn.functional``: PyTorch's layer functions on fgraph Tensors.

Each sub-module groups one family; this package re-exports their ``__all__``.
"""
# One line per family module (each defines __all__).
