"""``fgraph.utils.checkpoint.checkpoint``: the same function as :func:`fgraph.autograd.checkpoint`.

Example:
    >>> import fgraph as fg
    >>> from fgraph.utils.checkpoint import checkpoint
    >>> x = fg.tensor([1.0, 2.0], requires_grad=True)
    >>> fg.grad(checkpoint(fg.sin, x).sum(), [x])[0].shape
    (2,)
"""
from fgraph.autograd.checkpoint import checkpoint

__all__ = ["checkpoint"]
