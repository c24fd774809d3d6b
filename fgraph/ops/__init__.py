"""Primitive ops, one file per family, and the registry of every declared op.

Example:
    >>> import fgraph as fg
    >>> "mul" in fg.ops.registry
    True
    >>> fg.ops.registry["mul"].node_cls.__name__
    'MulBackward0'
"""
from fgraph.ops._declare import OpDef, RuleContext, apply_op, declare, registry
from fgraph.ops import elementwise, indexing, linalg, reduction, shape
from fgraph.ops import movement, padding, splitting, triangular  # shape and movement families
from fgraph.ops import elementwise_math, rounding, special, trigonometric  # elementwise math families
from fgraph.ops import creation, random_ops  # creation and random families
from fgraph.ops import gather_scatter  # indexing family: gather/scatter
from fgraph.ops import reduction_minmax, reduction_norm, scan  # reduction families
from fgraph.ops import linalg_toplevel  # linear algebra: torch.det, torch.svd, ...
from fgraph.ops import selection, sorting, unique  # sorting and selection: sort, topk, quantile, unique...
from fgraph.ops import complex_parts, linalg_eig, linalg_lu, linalg_more  # eig, lu, matrix_exp, real/imag...
from fgraph.ops import structure  # clone, select, index_fill, hsplit...; Tensor.T, H, mH
from fgraph.ops import distances, grids, products  # addmm, cross, cdist, cov, meshgrid, diff, ...
from fgraph.ops import numerics, numerics_reduce, special_more  # numerics and torch.special
from fgraph.ops import complex_more, linalg_legacy, special_bessel, torch_extras  # torch's remaining top-level names
from fgraph.ops import spectral  # stft, istft
from fgraph.ops import indexed_update  # x.at[index].set(v) / .add / .mul / .min / .max

#: The op family modules. Each declares its primitives on import and lists its
#: public functions in ``__all__`` (exported as ``fgraph.<name>``) and its Tensor
#: methods in ``TENSOR_METHODS``.
FAMILIES = (elementwise, reduction, linalg, shape, indexing)
FAMILIES += (movement, splitting, triangular, padding)
FAMILIES += (reduction_minmax, reduction_norm, scan)
FAMILIES += (elementwise_math, trigonometric, special, rounding)
FAMILIES += (creation, random_ops)
FAMILIES += (linalg_toplevel,)
FAMILIES += (gather_scatter,)
FAMILIES += (sorting, selection, unique)
FAMILIES += (complex_parts, linalg_eig, linalg_lu, linalg_more)
FAMILIES += (structure,)
FAMILIES += (products, distances, grids)
FAMILIES += (numerics, numerics_reduce, special_more)
FAMILIES += (complex_more, linalg_legacy, special_bessel, torch_extras)
FAMILIES += (spectral,)
FAMILIES += (indexed_update,)

__all__ = ["OpDef", "RuleContext", "apply_op", "declare", "registry", "describe", "FAMILIES"]


def describe() -> list[tuple[str, str, str]]:
    """``(op name, node name, rule name)`` for every registered op, sorted by name.

    Example:
        >>> import fgraph as fg
        >>> ("exp", "ExpBackward0", "_exp_rule") in fg.ops.describe()
        True
    """
    return sorted(
        (name, op.node_cls.__name__, getattr(op.rule, "__name__", "not differentiable"))
        for name, op in registry.items()
    )
