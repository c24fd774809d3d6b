"""Products: matmul, mm, bmm, mv, dot, vdot, outer, tensordot, kron, einsum.

``matmul`` and its strict relatives (``mm``: 2-D only, ``bmm``: equal 3-D batches,
``mv``, ``dot``) are one kernel each with the same derivative rule, recorded under
PyTorch's node names. ``tensordot`` is an :func:`einsum`, ``outer`` and ``kron`` are
products of reshaped operands, so all of them differentiate to any order. The
decompositions live in :mod:`fgraph.ops.decompositions`; ``fgraph.linalg`` is the
public ``torch.linalg``-style namespace.

Example:
    >>> import fgraph as fg
    >>> a = fg.ones(2, 3); b = fg.ones(3, 4)
    >>> fg.matmul(a, b).shape, fg.mm(a, b).shape
    ((2, 4), (2, 4))
    >>> fg.einsum("ij,jk->ik", a, b).tolist()[0]
    [3.0, 3.0, 3.0, 3.0]
"""
from __future__ import annotations

from typing import Any, Sequence, Union

import numpy as np

from fgraph.errors import OpError
from fgraph.ops import _natural_sharding as natural_sharding
from fgraph.ops._declare import OpDef, apply_op, declare
from fgraph.ops._variants import node_variant
from fgraph.ops._linalg_util import check_same_dtype, check_tensor
from fgraph.ops.einsum import einsum
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


MATMUL = declare("matmul", natural_sharding.matmul, _matmul_rule, save_inputs=True, hint=_matmul_hint,
                 node_name="MmBackward0")
# The strict forms share matmul's kernel and rule; they differ in checks and node names.
BMM = declare("bmm", natural_sharding.matmul, _matmul_rule, save_inputs=True, hint=_matmul_hint)
MV = declare("mv", natural_sharding.matmul, _matmul_rule, save_inputs=True, hint=_matmul_hint)
DOT = declare("dot", natural_sharding.matmul, _matmul_rule, save_inputs=True, hint=_matmul_hint)
VDOT = declare("vdot", natural_sharding.matmul, _matmul_rule, save_inputs=True, hint=_matmul_hint)
# matmul records the name of the outermost node torch.matmul records for these ranks (see _matmul_op).
_MATMUL_DOT = node_variant(MATMUL, "DotBackward0")
_MATMUL_MV = node_variant(MATMUL, "MvBackward0")
_MATMUL_VEC_MAT = node_variant(MATMUL, "SqueezeBackward4")
_MATMUL_BATCHED = node_variant(MATMUL, "UnsafeViewBackward0")
_MATMUL_BATCHED_T = node_variant(MATMUL, "CloneBackward0")


def _matmul_op(a: Any, b: Any) -> OpDef:
    """PyTorch's outermost node for ``a @ b``: ``dot``, ``mv``, ``mm``, a squeezed ``mm`` for
    vector @ matrix, and for batches the ``_unsafe_view`` that reshapes the folded ``mm``/``bmm``
    result, or the ``contiguous()`` copy of a transposed product when a matrix that requires grad
    multiplies a batch (PyTorch treats a 3-D operand with batch size 1 against a 3-D batch as a matrix)."""
    na = a.ndim if isinstance(a, Tensor) else np.ndim(a)  # (jnp.ndim of a list is deprecated)
    nb = b.ndim if isinstance(b, Tensor) else np.ndim(b)
    if na == 2 and nb == 2 or na == 0 or nb == 0:
        return MATMUL
    if na == 1:
        return _MATMUL_DOT if nb == 1 else _MATMUL_VEC_MAT if nb == 2 else _MATMUL_BATCHED
    if nb == 1 and na == 2:
        return _MATMUL_MV
    if isinstance(a, Tensor) and a._edge is not None and (
            na == 2 or na == nb == 3 and a.shape[0] == 1 and b.shape[0] != 1):
        return _MATMUL_BATCHED_T
    return _MATMUL_BATCHED


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with NumPy/PyTorch semantics: 1-D operands, batches, broadcasting.

    Example:
        >>> import fgraph as fg
        >>> fg.matmul(fg.ones(5, 2, 3), fg.ones(3)).shape
        (5, 2)
    """
    return apply_op(_matmul_op(input, other), (input, other))


def _check_dims(op: str, x: Tensor, ndim: int, name: str, what: str) -> None:
    check_tensor(x, op, name)
    if x.ndim != ndim:
        raise OpError(f"{op}: {name} must be {what} ({ndim}-D), got shape {x.shape}.")


def _check_inner(op: str, a: Tensor, b: Tensor, ka: int, kb: int, fix: str) -> None:
    if ka != kb:
        raise OpError(
            f"{op}: shapes {a.shape} and {b.shape} cannot be multiplied ({ka} != {kb}); {fix}"
        )


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """Product of two matrices, ``(n, k) @ (k, m)``; no broadcasting (use :func:`matmul` for that).

    Example:
        >>> import fgraph as fg
        >>> fg.mm(fg.ones(2, 3), fg.ones(3, 4)).shape
        (2, 4)
    """
    _check_dims("mm", input, 2, "input", "a matrix")
    _check_dims("mm", mat2, 2, "mat2", "a matrix")
    _check_inner("mm", input, mat2, input.shape[1], mat2.shape[0], "the columns of input must equal the rows of mat2.")
    check_same_dtype(input, mat2, "mm", ("input", "mat2"))
    return apply_op(MATMUL, (input, mat2))


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched product ``(b, n, k) @ (b, k, m)``; the batch sizes must be equal.

    Example:
        >>> import fgraph as fg
        >>> fg.bmm(fg.ones(5, 2, 3), fg.ones(5, 3, 4)).shape
        (5, 2, 4)
    """
    _check_dims("bmm", input, 3, "input", "a batch of matrices")
    _check_dims("bmm", mat2, 3, "mat2", "a batch of matrices")
    if input.shape[0] != mat2.shape[0]:
        raise OpError(
            f"bmm: batch sizes differ: input has shape {input.shape} and mat2 {mat2.shape}; "
            "bmm does not broadcast (use matmul)."
        )
    _check_inner("bmm", input, mat2, input.shape[2], mat2.shape[1], "input[i] columns must equal mat2[i] rows.")
    check_same_dtype(input, mat2, "bmm", ("input", "mat2"))
    return apply_op(BMM, (input, mat2))


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Matrix-vector product ``(n, m) @ (m,)``.

    Example:
        >>> import fgraph as fg
        >>> fg.mv(fg.ones(2, 3), fg.ones(3)).tolist()
        [3.0, 3.0]
    """
    _check_dims("mv", input, 2, "input", "a matrix")
    _check_dims("mv", vec, 1, "vec", "a vector")
    _check_inner("mv", input, vec, input.shape[1], vec.shape[0], "the columns of input must equal the length of vec.")
    check_same_dtype(input, vec, "mv", ("input", "vec"))
    return apply_op(MV, (input, vec))


def _check_vectors(op: str, input: Tensor, other: Tensor) -> None:
    _check_dims(op, input, 1, "input", "a vector")
    _check_dims(op, other, 1, "other", "a vector")
    if input.shape != other.shape:
        raise OpError(
            f"{op}: inconsistent tensor sizes: input has {input.shape[0]} elements and other "
            f"{other.shape[0]}; both vectors must have the same length."
        )
    check_same_dtype(input, other, op)


def dot(input: Tensor, other: Tensor) -> Tensor:
    """Inner product of two 1-D tensors of equal length and dtype.

    Example:
        >>> import fgraph as fg
        >>> fg.dot(fg.tensor([1.0, 2.0]), fg.tensor([3.0, 4.0])).item()
        11.0
    """
    _check_vectors("dot", input, other)
    return apply_op(DOT, (input, other))


def vdot(input: Tensor, other: Tensor) -> Tensor:
    """``sum(conj(input) * other)`` for 1-D tensors; equal to :func:`dot` for real tensors.

    Example:
        >>> import fgraph as fg
        >>> fg.vdot(fg.tensor([1.0, 2.0]), fg.tensor([3.0, 4.0])).item()
        11.0
        >>> z = fg.complex(fg.tensor([0.0]), fg.tensor([1.0]))  # i
        >>> fg.vdot(z, z).tolist()  # conj(i) * i
        (1+0j)
    """
    from fgraph.ops.complex_parts import conj

    _check_vectors("vdot", input, other)
    return apply_op(VDOT, (conj(input), other))


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """Outer product of two vectors: ``out[i, j] = input[i] * vec2[j]``.

    Example:
        >>> import fgraph as fg
        >>> fg.outer(fg.tensor([1.0, 2.0]), fg.tensor([1.0, 10.0, 100.0])).shape
        (2, 3)
    """
    _check_dims("outer", input, 1, "input", "a vector")
    _check_dims("outer", vec2, 1, "vec2", "a vector")
    return input.unsqueeze(-1) * vec2


ger = outer

Dims = Union[int, Sequence[Sequence[int]], Sequence[int]]
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _tensordot_dims(a: Tensor, b: Tensor, dims: Dims) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if isinstance(dims, int):
        if dims < 0 or dims > min(a.ndim, b.ndim):
            raise OpError(
                f"tensordot: dims={dims} must be in [0, {min(a.ndim, b.ndim)}] for shapes {a.shape} and {b.shape}."
            )
        return tuple(range(a.ndim - dims, a.ndim)), tuple(range(dims))
    try:
        da, db = dims
        da = (da,) if isinstance(da, int) else tuple(da)
        db = (db,) if isinstance(db, int) else tuple(db)
    except (TypeError, ValueError):
        raise OpError(
            f"tensordot: dims must be an int or a pair of dimension lists ([dims of a], [dims of b]), got {dims!r}."
        ) from None
    if len(da) != len(db):
        raise OpError(f"tensordot: both dimension lists must have the same length, got {list(da)} and {list(db)}.")
    out = []
    for x, ds, name in ((a, da, "a"), (b, db, "b")):
        norm = []
        for d in ds:
            if not isinstance(d, int) or not -x.ndim <= d < x.ndim:
                raise IndexError(
                    f"tensordot: dim {d} is out of range for {name} with shape {x.shape} "
                    f"(expected a value in [{-x.ndim}, {x.ndim - 1}])."
                )
            norm.append(d % x.ndim)
        if len(set(norm)) != len(norm):
            raise OpError(f"tensordot: dimension list {list(ds)} for {name} names a dimension twice.")
        out.append(tuple(norm))
    return out[0], out[1]


def tensordot(a: Tensor, b: Tensor, dims: Dims = 2) -> Tensor:
    """Contract ``a`` and ``b`` over ``dims``: the last ``dims`` dims of ``a`` with the first of ``b``,
    or the listed pairs ``([dims of a], [dims of b])``. The output keeps ``a``'s free dims, then ``b``'s.

    Example:
        >>> import fgraph as fg
        >>> fg.tensordot(fg.ones(2, 3, 4), fg.ones(3, 4, 5), dims=2).shape
        (2, 5)
        >>> fg.tensordot(fg.ones(2, 3), fg.ones(3, 2), dims=([0], [1])).shape
        (3, 3)
    """
    check_tensor(a, "tensordot", "a")
    check_tensor(b, "tensordot", "b")
    if a.ndim + b.ndim > len(_LETTERS):
        raise OpError(f"tensordot: at most {len(_LETTERS)} dimensions in all are supported, got {a.ndim + b.ndim}.")
    da, db = _tensordot_dims(a, b, dims)
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j]:
            raise OpError(
                f"tensordot: contracted dimensions need to match, but a has size {a.shape[i]} in dim {i} "
                f"and b has size {b.shape[j]} in dim {j} (shapes {a.shape} and {b.shape})."
            )
    sa = list(_LETTERS[: a.ndim])
    sb = list(_LETTERS[a.ndim : a.ndim + b.ndim])
    for i, j in zip(da, db):
        sb[j] = sa[i]
    out = [c for i, c in enumerate(sa) if i not in da] + [c for j, c in enumerate(sb) if j not in db]
    return einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out)}", a, b)


def kron(input: Tensor, other: Tensor) -> Tensor:
    """Kronecker product; the operand with fewer dimensions gets leading size-1 dims.

    Example:
        >>> import fgraph as fg
        >>> fg.kron(fg.tensor([[1.0, 2.0]]), fg.tensor([[1.0], [10.0]])).tolist()
        [[1.0, 2.0], [10.0, 20.0]]
    """
    check_tensor(input, "kron", "input")
    check_tensor(other, "kron", "other")
    nd = max(input.ndim, other.ndim)
    sa = (1,) * (nd - input.ndim) + input.shape
    sb = (1,) * (nd - other.ndim) + other.shape
    a = input.reshape(tuple(s for d in sa for s in (d, 1)))  # a[i0, 1, i1, 1, ...]
    b = other.reshape(tuple(s for d in sb for s in (1, d)))  # b[1, j0, 1, j1, ...]
    return (a * b).reshape(tuple(x * y for x, y in zip(sa, sb)))


#: Exported as ``fgraph.<name>``.
__all__ = ["matmul", "mm", "bmm", "mv", "dot", "vdot", "outer", "ger", "tensordot", "kron", "einsum"]
#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {"matmul": matmul, "mm": mm, "bmm": bmm, "mv": mv, "dot": dot, "vdot": vdot, "outer": outer,
                  "ger": outer, "kron": kron}

