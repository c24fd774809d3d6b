"""``Chi2(df)``: the chi-squared distribution, ``Gamma(df / 2, 1 / 2)``.

Example:
    >>> import fgraph as fg
    >>> from fgraph.distributions.chi2 import Chi2
    >>> d = Chi2(fg.tensor([1.0, 4.0]))
    >>> d.df.tolist(), d.mean.tolist(), d.variance.tolist()
    ([1.0, 4.0], [1.0, 4.0], [2.0, 8.0])
"""
from __future__ import annotations

from typing import Any, Optional

from fgraph.distributions import constraints
from fgraph.distributions.gamma import Gamma
from fgraph.tensor import Tensor

__all__ = ["Chi2"]


class Chi2(Gamma):
    """The chi-squared distribution with ``df`` degrees of freedom (``Gamma(0.5 * df, 0.5)``)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df: Any, validate_args: Optional[bool] = None) -> None:
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Optional["Chi2"] = None) -> "Chi2":
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)

    @property
    def df(self) -> Tensor:
        return self.concentration * 2
