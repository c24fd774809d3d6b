"""Transforms: invertible maps with a log-Jacobian, as ``torch.distributions.transforms``.

A :class:`Transform` ``t`` maps ``x`` in ``t.domain`` to ``y = t(x)`` in ``t.codomain``;
``t.inv`` is its inverse (one object, kept), ``t.log_abs_det_jacobian(x, y)`` is
``log |det dy/dx|`` summed over its event dims. They build :class:`TransformedDistribution`
and :func:`biject_to`/:func:`transform_to`. Everything is fgraph ops: differentiable to any
order and traceable.

The classes live in four modules: ``_transform_base`` (``Transform``, ``ComposeTransform``,
``IndependentTransform``, ``ReshapeTransform``), ``_transforms_elementwise`` (including
``CumulativeDistributionTransform``), ``_transforms_joined`` (``CatTransform``,
``StackTransform``) and ``_transforms_matrix`` (simplex and Cholesky transforms).

Example:
    >>> import fgraph as fg
    >>> from fgraph.distributions.transforms import ExpTransform, SigmoidTransform
    >>> t = ExpTransform()
    >>> x = fg.tensor([0.0, 1.0])
    >>> [round(v, 4) for v in t(x).tolist()], t.inv.inv is t
    ([1.0, 2.7183], True)
    >>> SigmoidTransform().inv(fg.tensor([0.5])).tolist()
    [0.0]
"""
from fgraph.distributions._transform_base import (ComposeTransform, IndependentTransform, ReshapeTransform, Transform,
                                                  identity_transform)
from fgraph.distributions._transforms_elementwise import (AbsTransform, AffineTransform,
                                                          CumulativeDistributionTransform, ExpTransform,
                                                          PowerTransform, SigmoidTransform, SoftplusTransform,
                                                          TanhTransform)
from fgraph.distributions._transforms_joined import CatTransform, StackTransform
from fgraph.distributions._transforms_matrix import (CorrCholeskyTransform, LowerCholeskyTransform,
                                                     PositiveDefiniteTransform, SoftmaxTransform,
                                                     StickBreakingTransform)

__all__ = [
    "AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform", "CorrCholeskyTransform",
    "CumulativeDistributionTransform", "ExpTransform", "IndependentTransform", "LowerCholeskyTransform",
    "PositiveDefiniteTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftplusTransform",
    "TanhTransform", "SoftmaxTransform", "StackTransform", "StickBreakingTransform", "Transform",
    "identity_transform",
]
