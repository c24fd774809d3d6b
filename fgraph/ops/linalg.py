"""Matrix products.

Example:
    >>> import fgraph as fg
    >>> a = fg.ones(2, 3); b = fg.ones(3, 4)
    >>> fg.matmul(a, b).shape
    (2, 4)
"""
from __future__ import annotations

import jax.numpy as jnp

from fgraph.ops._declare import apply_op, declare
from fgraph.tensor import Tensor


def _matmul_hint(args: tuple, params: object) -> str:
    a, b = (tuple(x.shape) for x in args)
    if not a or not b:
        return "matmul needs tensors with at least one dimension; use mul for scalars."
    k_a = a[-1]
    k_b = b[0] if len(b) == 1 else b[-2]
    if k_a != k_b:
        return (
            f"The last dim of the first operand ({k_a}) must equal the "
            f"{'only' if len(b) == 1 else 'second-to-last'} dim of the second ({k_b}); transpose one operand?"
        )
    return "Batch dimensions (all but the last two) must broadcast."


def _matmul_rule(ctx, g):
    a, b = ctx.inputs
    ga = gb = None
    if a.ndim == 1 and b.ndim == 1:  # dot product: g is a scalar
        ga, gb = g * b, g * a
    elif a.ndim == 1:  # (k) @ (..., k, m) -> (..., m)
        ga = matmul(b, g.unsqueeze(-1)).squeeze(-1) if ctx.needs[0] else None
        gb = a.unsqueeze(-1) * g.unsqueeze(-2) if ctx.needs[1] else None
    elif b.ndim == 1:  # (..., n, k) @ (k) -> (..., n)
        ga = g.unsqueeze(-1) * b if ctx.needs[0] else None
        gb = matmul(a.mT, g.unsqueeze(-1)).squeeze(-1) if ctx.needs[1] else None
    else:
        ga = matmul(g, b.mT) if ctx.needs[0] else None
        gb = matmul(a.mT, g) if ctx.needs[1] else None
    return ga, gb


MATMUL = declare("matmul", jnp.matmul, _matmul_rule, save_inputs=True, hint=_matmul_hint,
                 node_name="MmBackward0")


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with NumPy/PyTorch semantics: 1-D operands, batches, broadcasting.

    Example:
        >>> import fgraph as fg
        >>> fg.matmul(fg.ones(5, 2, 3), fg.ones(3)).shape
        (5, 2)
    """
    return apply_op(MATMUL, (input, other))


#: Exported as ``fgraph.<name>``.
__all__ = ["matmul"]
#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {"matmul": matmul}
