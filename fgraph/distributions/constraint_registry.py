"""``biject_to`` and ``transform_to``: from unconstrained reals to a constraint's region.

``biject_to(c)`` is a bijective :class:`~fgraph.distributions.transforms.Transform` onto
``c`` (fit for changes of variables, e.g. HMC); ``transform_to(c)`` only needs to land in
``c`` (fit for optimisation: ``SoftmaxTransform`` for the simplex,
``LowerCholeskyTransform``/``PositiveDefiniteTransform`` for matrices). Both are
:class:`ConstraintRegistry` objects keyed by the constraint's class; ``register`` adds
more. The registrations are torch's.

Example:
    >>> import fgraph as fg
    >>> from fgraph.distributions import constraints
    >>> from fgraph.distributions.constraint_registry import biject_to, transform_to
    >>> t = biject_to(constraints.interval(1.0, 3.0))
    >>> t(fg.tensor([0.0])).tolist()
    [2.0]
    >>> transform_to(constraints.simplex)
    SoftmaxTransform()
"""
from __future__ import annotations

from numbers import Number
from typing import Any, Callable, Optional

from fgraph.distributions import constraints
from fgraph.distributions import transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """A table from :class:`~fgraph.distributions.constraints.Constraint` classes to transform factories."""

    def __init__(self) -> None:
        self._registry: dict = {}

    def register(self, constraint: Any, factory: Optional[Callable] = None) -> Callable:
        """Register ``factory(constraint) -> Transform`` for a constraint class (or a singleton's class).

        Usable as a decorator: ``@registry.register(MyConstraint)``.
        """
        if factory is None:
            return _Registering(self, constraint)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint, constraints.Constraint):
            raise TypeError("Expected constraint to be either a Constraint subclass or instance, "
                            f"but got {constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint: constraints.Constraint) -> transforms.Transform:
        """The transform registered for ``constraint``'s class, built for this constraint.

        Raises:
            NotImplementedError: nothing is registered for the class.
        """
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


class _Registering:
    """The decorator ``register(constraint)`` returns."""

    def __init__(self, registry: ConstraintRegistry, constraint: Any) -> None:
        self.registry, self.constraint = registry, constraint

    def __call__(self, factory: Callable) -> Callable:
        return self.registry.register(self.constraint, factory)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


@biject_to.register(constraints.real)
@transform_to.register(constraints.real)
def _transform_to_real(constraint: constraints.Constraint) -> transforms.Transform:
    return transforms.identity_transform


@biject_to.register(constraints.independent)
def _biject_to_independent(constraint: Any) -> transforms.Transform:
    return transforms.IndependentTransform(biject_to(constraint.base_constraint), constraint.reinterpreted_batch_ndims)


@transform_to.register(constraints.independent)
def _transform_to_independent(constraint: Any) -> transforms.Transform:
    return transforms.IndependentTransform(transform_to(constraint.base_constraint),
                                           constraint.reinterpreted_batch_ndims)


# positive is a greater_than(0) and nonnegative a greater_than_eq(0): the greater_than factory
# registered below replaces this one for their classes, exactly as in torch.
@biject_to.register(constraints.positive)
@biject_to.register(constraints.nonnegative)
@transform_to.register(constraints.positive)
@transform_to.register(constraints.nonnegative)
def _transform_to_positive(constraint: Any) -> transforms.Transform:
    return transforms.ExpTransform()


@biject_to.register(constraints.greater_than)
@biject_to.register(constraints.greater_than_eq)
@transform_to.register(constraints.greater_than)
@transform_to.register(constraints.greater_than_eq)
def _transform_to_greater_than(constraint: Any) -> transforms.Transform:
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.lower_bound, 1)])


@biject_to.register(constraints.less_than)
@transform_to.register(constraints.less_than)
def _transform_to_less_than(constraint: Any) -> transforms.Transform:
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.upper_bound, -1)])


def _is_number_equal(value: Any, target: float) -> bool:
    return isinstance(value, Number) and not isinstance(value, bool) and value == target


@biject_to.register(constraints.interval)
@biject_to.register(constraints.half_open_interval)
@transform_to.register(constraints.interval)
@transform_to.register(constraints.half_open_interval)
def _transform_to_interval(constraint: Any) -> transforms.Transform:
    if _is_number_equal(constraint.lower_bound, 0) and _is_number_equal(constraint.upper_bound, 1):
        return transforms.SigmoidTransform()
    loc = constraint.lower_bound
    scale = constraint.upper_bound - constraint.lower_bound
    return transforms.ComposeTransform([transforms.SigmoidTransform(), transforms.AffineTransform(loc, scale)])


@biject_to.register(constraints.simplex)
def _biject_to_simplex(constraint: Any) -> transforms.Transform:
    return transforms.StickBreakingTransform()


@transform_to.register(constraints.simplex)
def _transform_to_simplex(constraint: Any) -> transforms.Transform:
    return transforms.SoftmaxTransform()


@transform_to.register(constraints.lower_cholesky)
def _transform_to_lower_cholesky(constraint: Any) -> transforms.Transform:
    return transforms.LowerCholeskyTransform()


@transform_to.register(constraints.positive_definite)
@transform_to.register(constraints.positive_semidefinite)
def _transform_to_positive_definite(constraint: Any) -> transforms.Transform:
    return transforms.PositiveDefiniteTransform()


@biject_to.register(constraints.corr_cholesky)
@transform_to.register(constraints.corr_cholesky)
def _transform_to_corr_cholesky(constraint: Any) -> transforms.Transform:
    return transforms.CorrCholeskyTransform()


@biject_to.register(constraints.cat)
def _biject_to_cat(constraint: Any) -> transforms.Transform:
    return transforms.CatTransform([biject_to(c) for c in constraint.cseq], constraint.dim, constraint.lengths)


@transform_to.register(constraints.cat)
def _transform_to_cat(constraint: Any) -> transforms.Transform:
    return transforms.CatTransform([transform_to(c) for c in constraint.cseq], constraint.dim, constraint.lengths)


@biject_to.register(constraints.stack)
def _biject_to_stack(constraint: Any) -> transforms.Transform:
    return transforms.StackTransform([biject_to(c) for c in constraint.cseq], constraint.dim)


@transform_to.register(constraints.stack)
def _transform_to_stack(constraint: Any) -> transforms.Transform:
    return transforms.StackTransform([transform_to(c) for c in constraint.cseq], constraint.dim)
