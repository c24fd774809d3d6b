"""``torch.special``'s names: ``fgraph.special.<name>``.

New functions live in :mod:`fgraph.ops.special_more`; the others are fgraph's existing
ops under their ``torch.special`` names (``gammaln`` is ``lgamma``, ``psi`` is ``digamma``,
``expit`` is ``sigmoid``...). This module also defines the top-level ``fgraph.softmax`` and
``fgraph.log_softmax`` (``torch.softmax(input, dim, dtype=None)``), which reuse
``fgraph.nn.functional``'s.

Example:
    >>> import fgraph as fg
    >>> fg.special.gammaln(fg.tensor([3.0])).tolist() == fg.lgamma(fg.tensor([3.0])).tolist()
    True
    >>> fg.special.softmax(fg.tensor([0.0, 0.0]), 0).tolist()
    [0.5, 0.5]
"""
from __future__ import annotations

from typing import Any, Optional

from fgraph.nn.functional import activation as _activation
from fgraph.ops.elementwise_math import exp2, expm1, log1p, logit
from fgraph.ops.numerics import xlogy
from fgraph.ops.reduction import logsumexp
from fgraph.ops.rounding import round
from fgraph.ops.special import digamma, erf, erfc, erfinv, polygamma
from fgraph.ops.special import digamma as psi
from fgraph.ops.special import lgamma as gammaln
from fgraph.ops.special_bessel import bessel_j0, bessel_j1, erfcx
from fgraph.ops.special_more import (
    entr, expit, i0, i0e, i1, i1e, log_ndtr, multigammaln, ndtr, ndtri, sinc, xlog1py, zeta,
)
from fgraph.tensor import Tensor


def softmax(input: Tensor, dim: int, dtype: Optional[Any] = None) -> Tensor:
    """``exp(input) / exp(input).sum(dim, keepdim=True)``, computed stably; ``dtype`` casts first.

    Example:
        >>> import fgraph as fg
        >>> fg.softmax(fg.tensor([0.0, 0.0]), 0).tolist()
        [0.5, 0.5]
    """
    return _activation.softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int, dtype: Optional[Any] = None) -> Tensor:
    """``log(softmax(input, dim))``, computed stably; ``dtype`` casts first.

    Example:
        >>> import fgraph as fg
        >>> fg.log_softmax(fg.tensor([0.0, 0.0]), 0).exp().tolist()
        [0.5, 0.5]
    """
    return _activation.log_softmax(input, dim, dtype=dtype)


__all__ = [
    "bessel_j0", "bessel_j1", "erfcx",
    "digamma", "entr", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammaln", "i0", "i0e", "i1", "i1e",
    "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri", "polygamma", "psi",
    "round", "sinc", "softmax", "xlog1py", "xlogy", "zeta",
]
