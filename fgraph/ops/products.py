"""Fused products: addmm, addmv, addbmm, baddbmm, addr, addcmul, addcdiv; inner, trace, cross, matrix_power.

``addmm`` and its relatives compute ``beta * input + alpha * (product)`` in one kernel
and record PyTorch's node names (``AddmmBackward0``, ...). Each product is an einsum
(``"ij,jk->ik"`` for addmm, ``"bij,bjk->ik"`` for addbmm, ...), so one forward and one
derivative rule serve all five: the gradient of a factor is the einsum of the output
gradient with the other factor, written in fgraph ops, so every order of derivative
works. As in PyTorch, ``beta=0`` ignores ``input`` entirely (NaN and inf in it do not
propagate); ``beta`` and ``alpha`` are keyword-only numbers.

``addcmul``/``addcdiv`` (``AddcmulBackward0``/``AddcdivBackward0``), ``trace``
(``TraceBackward0``) and ``linalg.cross`` (``LinalgCrossBackward0``) are small
primitives; ``inner``, ``chain_matmul`` and ``matrix_power`` are composites.

Example:
    >>> import fgraph as fg
    >>> x = fg.zeros(2, 2, requires_grad=True)
    >>> y = fg.addmm(x, fg.ones(2, 3), fg.ones(3, 2), beta=0.5, alpha=2.0)
    >>> y.tolist(), y.grad_fn.name()
    ([[6.0, 6.0], [6.0, 6.0]], 'AddmmBackward0')
    >>> fg.trace(fg.tensor([[1.0, 2.0], [3.0, 4.0]])).item()
    5.0
"""
from __future__ import annotations

import warnings
from typing import Any, Optional

import jax.numpy as jnp
import numpy as np

from fgraph.errors import OpError
from fgraph.ops import _natural_sharding as natural_sharding
from fgraph.ops._declare import apply_op, declare
from fgraph.ops._linalg_util import check_matrix, check_tensor
from fgraph.ops.einsum import EINSUM
from fgraph.ops.linalg import matmul, tensordot
from fgraph.ops.linalg_solve import inv
from fgraph.tensor import Tensor, _wrap

Number = Any  # int or float


# -- beta * input + alpha * einsum(a, b) ---------------------------------------------------------------------
def _addprod_forward(inp, a, b, *, subscripts, beta, alpha):
    prod = natural_sharding.einsum(subscripts, a, b)
    if alpha != 1:
        prod = alpha * prod
    if beta == 0:  # PyTorch: input is ignored, so NaN/inf in it do not propagate
        return prod
    return (inp if beta == 1 else beta * inp) + prod


def _einsum(spec: str, x: Tensor, y: Tensor) -> Tensor:
    return apply_op(EINSUM, (x, y), EINSUM.Params(spec))


def _addprod_rule(ctx, g):
    _, a, b = ctx.inputs
    p = ctx.params
    lhs, out = p.subscripts.split("->")
    sa, sb = lhs.split(",")
    g_in = (g if p.beta == 1 else g * p.beta) if ctx.needs[0] else None
    g_a = _einsum(f"{out},{sb}->{sa}", g, b) if ctx.needs[1] else None
    g_b = _einsum(f"{sa},{out}->{sb}", a, g) if ctx.needs[2] else None
    if p.alpha != 1:
        g_a = None if g_a is None else g_a * p.alpha
        g_b = None if g_b is None else g_b * p.alpha
    return g_in, g_a, g_b


_ADDPROD_OPTIONS = dict(params=("subscripts", "beta", "alpha"), save_inputs=(1, 2))
ADDMM = declare("addmm", _addprod_forward, _addprod_rule, **_ADDPROD_OPTIONS)
ADDMV = declare("addmv", _addprod_forward, _addprod_rule, **_ADDPROD_OPTIONS)
ADDBMM = declare("addbmm", _addprod_forward, _addprod_rule, **_ADDPROD_OPTIONS)
BADDBMM = declare("baddbmm", _addprod_forward, _addprod_rule, **_ADDPROD_OPTIONS)
ADDR = declare("addr", _addprod_forward, _addprod_rule, **_ADDPROD_OPTIONS)


def _scalar(value: Any, op: str, name: str) -> Number:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{op}: {name} must be a Python number, got {type(value).__name__}.")
    return value.item() if isinstance(value, (np.integer, np.floating)) else value


def _addprod(op_def, op: str, names: tuple, tensors: tuple, ndims: tuple, spec: str, out_shape: tuple,
             beta: Any, alpha: Any) -> Tensor:
    for t, name in zip(tensors, names):
        check_tensor(t, op, name)
    for t, name, nd in zip(tensors[1:], names[1:], ndims):
        if t.ndim != nd:
            raise OpError(f"{op}: {name} must be {nd}-D, got shape {t.shape}.")
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) != 1:
        described = ", ".join(f"{n} {t.dtype}" for t, n in zip(tensors, names))
        raise OpError(f"{op}: expected all tensors to have the same dtype, got {described}; convert with .to(dtype).")
    inp = tensors[0]
    try:
        ok = tuple(np.broadcast_shapes(inp.shape, out_shape)) == out_shape
    except ValueError:
        ok = False
    if not ok:
        raise OpError(f"{op}: input of shape {inp.shape} does not broadcast to the product's shape {out_shape}.")
    params = op_def.Params(spec, _scalar(beta, op, "beta"), _scalar(alpha, op, "alpha"))
    return apply_op(op_def, tensors, params)


def _mismatch(op: str, a: Tensor, b: Tensor, what: str) -> OpError:
    return OpError(f"{op}: shapes {a.shape} and {b.shape} cannot be multiplied ({what}).")


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` for matrices ``(n, k) @ (k, m)``; ``input`` broadcasts to ``(n, m)``.

    Example:
        >>> import fgraph as fg
        >>> fg.addmm(fg.ones(2), fg.ones(2, 3), fg.ones(3, 2), alpha=2).tolist()
        [[7.0, 7.0], [7.0, 7.0]]
    """
    names = ("input", "mat1", "mat2")
    check_tensor(mat1, "addmm", "mat1")
    check_tensor(mat2, "addmm", "mat2")
    if mat1.ndim == 2 and mat2.ndim == 2 and mat1.shape[1] != mat2.shape[0]:
        raise _mismatch("addmm", mat1, mat2, "the columns of mat1 must equal the rows of mat2")
    out = (mat1.shape[0], mat2.shape[-1]) if mat1.ndim == 2 else ()
    return _addprod(ADDMM, "addmm", names, (input, mat1, mat2), (2, 2), "ij,jk->ik", out, beta, alpha)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)`` for ``(n, m) @ (m,)``; ``input`` broadcasts to ``(n,)``.

    Example:
        >>> import fgraph as fg
        >>> fg.addmv(fg.tensor([1.0, 2.0]), fg.ones(2, 3), fg.ones(3), beta=0.5).tolist()
        [3.5, 4.0]
    """
    check_tensor(mat, "addmv", "mat")
    check_tensor(vec, "addmv", "vec")
    if mat.ndim == 2 and vec.ndim == 1 and mat.shape[1] != vec.shape[0]:
        raise _mismatch("addmv", mat, vec, "the columns of mat must equal the length of vec")
    out = (mat.shape[0],) if mat.ndim == 2 else ()
    return _addprod(ADDMV, "addmv", ("input", "mat", "vec"), (input, mat, vec), (2, 1), "ij,j->i", out, beta, alpha)


def _check_batches(op: str, b1: Tensor, b2: Tensor) -> tuple:
    check_tensor(b1, op, "batch1")
    check_tensor(b2, op, "batch2")
    if b1.ndim == 3 and b2.ndim == 3:
        if b1.shape[0] != b2.shape[0]:
            raise OpError(f"{op}: batch1 {b1.shape} and batch2 {b2.shape} must hold the same number of matrices.")
        if b1.shape[2] != b2.shape[1]:
            raise _mismatch(op, b1, b2, "the columns of batch1[i] must equal the rows of batch2[i]")
        return b1.shape[0], b1.shape[1], b2.shape[2]
    return 0, 0, 0


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
    """``beta * input + alpha * sum_i batch1[i] @ batch2[i]``; ``input`` broadcasts to ``(n, m)``.

    Example:
        >>> import fgraph as fg
        >>> fg.addbmm(fg.zeros(2, 2), fg.ones(4, 2, 3), fg.ones(4, 3, 2)).tolist()
        [[12.0, 12.0], [12.0, 12.0]]
    """
    _, n, m = _check_batches("addbmm", batch1, batch2)
    return _addprod(ADDBMM, "addbmm", ("input", "batch1", "batch2"), (input, batch1, batch2), (3, 3),
                    "bij,bjk->ik", (n, m), beta, alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
    """``beta * input + alpha * (batch1 @ batch2)`` per batch; ``input`` broadcasts to ``(b, n, m)``.

    Example:
        >>> import fgraph as fg
        >>> fg.baddbmm(fg.ones(1, 2), fg.ones(4, 2, 3), fg.ones(4, 3, 2), beta=0).shape
        (4, 2, 2)
    """
    b, n, m = _check_batches("baddbmm", batch1, batch2)
    return _addprod(BADDBMM, "baddbmm", ("input", "batch1", "batch2"), (input, batch1, batch2), (3, 3),
                    "bij,bjk->bik", (b, n, m), beta, alpha)


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``; ``input`` broadcasts to ``(n, m)``.

    Example:
        >>> import fgraph as fg
        >>> fg.addr(fg.zeros(2, 2), fg.tensor([1.0, 2.0]), fg.tensor([1.0, 3.0])).tolist()
        [[1.0, 3.0], [2.0, 6.0]]
    """
    check_tensor(vec1, "addr", "vec1")
    check_tensor(vec2, "addr", "vec2")
    out = (vec1.shape[0], vec2.shape[0]) if vec1.ndim == 1 and vec2.ndim == 1 else ()
    return _addprod(ADDR, "addr", ("input", "vec1", "vec2"), (input, vec1, vec2), (1, 1), "i,j->ij", out, beta,
                    alpha)


# -- input + value * t1 * t2 and input + value * t1 / t2 -------------------------------------------------------
def _addcmul_forward(x, a, b, *, value):
    return x + value * a * b


def _addcmul_rule(ctx, g):
    _, a, b = ctx.inputs
    v = ctx.params.value
    return g, (g * (b * v) if ctx.needs[1] else None), (g * (a * v) if ctx.needs[2] else None)


def _addcdiv_forward(x, a, b, *, value):
    return x + value * (a / b)


def _addcdiv_rule(ctx, g):
    _, a, b = ctx.inputs
    v = ctx.params.value
    g_a = g * v / b if ctx.needs[1] else None
    g_b = -g * v * a / (b * b) if ctx.needs[2] else None
    return g, g_a, g_b


ADDCMUL = declare("addcmul", _addcmul_forward, _addcmul_rule, params=("value",), save_inputs=(1, 2))
ADDCDIV = declare("addcdiv", _addcdiv_forward, _addcdiv_rule, params=("value",), save_inputs=(1, 2))


def _pointwise3(op_def, op: str, input: Tensor, tensor1: Tensor, tensor2: Tensor, value: Any) -> Tensor:
    for t, name in ((input, "input"), (tensor1, "tensor1"), (tensor2, "tensor2")):
        check_tensor(t, op, name)
    try:
        np.broadcast_shapes(input.shape, tensor1.shape, tensor2.shape)
    except ValueError:
        raise OpError(
            f"{op}: shapes {input.shape}, {tensor1.shape} and {tensor2.shape} do not broadcast together."
        ) from None
    if op == "addcdiv" and all(jnp.issubdtype(t.dtype, jnp.integer) for t in (tensor1, tensor2)):
        raise OpError("addcdiv: integer division of tensor1 by tensor2 is not supported (as PyTorch); "
                      "convert them to floating point with .float().")
    return apply_op(op_def, (input, tensor1, tensor2), op_def.Params(_scalar(value, op, "value")))


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Number = 1) -> Tensor:
    """``input + value * tensor1 * tensor2`` (broadcasting).

    Example:
        >>> import fgraph as fg
        >>> fg.addcmul(fg.ones(2), fg.tensor([2.0, 3.0]), fg.tensor([4.0, 5.0]), value=0.5).tolist()
        [5.0, 8.5]
    """
    return _pointwise3(ADDCMUL, "addcmul", input, tensor1, tensor2, value)


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Number = 1) -> Tensor:
    """``input + value * tensor1 / tensor2`` (broadcasting; floating-point tensors).

    Example:
        >>> import fgraph as fg
        >>> fg.addcdiv(fg.ones(2), fg.tensor([2.0, 3.0]), fg.tensor([4.0, 6.0]), value=2).tolist()
        [2.0, 2.0]
    """
    return _pointwise3(ADDCDIV, "addcdiv", input, tensor1, tensor2, value)


# -- inner, trace, chains and powers --------------------------------------------------------------------------
def inner(input: Tensor, other: Tensor) -> Tensor:
    """Sum of products over the last dimension; shape ``input.shape[:-1] + other.shape[:-1]`` (a
    0-d operand multiplies).

    Example:
        >>> import fgraph as fg
        >>> fg.inner(fg.ones(2, 3), fg.tensor([1.0, 2.0, 3.0])).tolist()
        [6.0, 6.0]
    """
    check_tensor(input, "inner", "input")
    check_tensor(other, "inner", "other")
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise OpError(
            f"inner: the last dimensions must match, got shapes {input.shape} and {other.shape} "
            f"({input.shape[-1]} != {other.shape[-1]})."
        )
    return tensordot(input, other, ([input.ndim - 1], [other.ndim - 1]))


def _trace_rule(ctx, g):
    m, n = ctx.shapes[0]
    return (g * _wrap(jnp.eye(m, n, dtype=g.dtype)),)


TRACE = declare("trace", jnp.trace, _trace_rule)


def trace(input: Tensor) -> Tensor:
    """Sum of the main diagonal of a 2-D tensor (``min(rows, columns)`` entries).

    Example:
        >>> import fgraph as fg
        >>> fg.trace(fg.ones(2, 3)).item()
        2.0
    """
    check_tensor(input, "trace", "input")
    if input.ndim != 2:
        raise OpError(f"trace: expected a matrix (2-D), got shape {input.shape}; for batches use "
                      "fg.diagonal(x, dim1=-2, dim2=-1).sum(-1).")
    return apply_op(TRACE, (input,))


def chain_matmul(*matrices: Tensor) -> Tensor:
    """The product of 2-D matrices, left to right (deprecated in PyTorch, which warns: use
    ``fgraph.linalg.multi_dot``).

    Example:
        >>> import fgraph as fg
        >>> import warnings; warnings.simplefilter("ignore")
        >>> fg.chain_matmul(fg.ones(2, 3), fg.ones(3, 4), fg.ones(4, 1)).tolist()
        [[12.0], [12.0]]
    """
    warnings.warn(
        "chain_matmul is deprecated (as torch.chain_matmul); use fgraph.linalg.multi_dot, which takes a list.",
        UserWarning, stacklevel=2,
    )
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise OpError("chain_matmul: expected at least one matrix.")
    for i, m in enumerate(matrices):
        check_tensor(m, "chain_matmul", f"matrix {i}")
        if m.ndim != 2:
            raise OpError(f"chain_matmul: matrix {i} must be 2-D, got shape {m.shape}.")
    out = matrices[0]
    for i, m in enumerate(matrices[1:], 1):
        if out.shape[1] != m.shape[0]:
            raise OpError(f"chain_matmul: matrix {i} has shape {m.shape} but the product so far has {out.shape}; "
                          "the columns of each must equal the rows of the next.")
        out = matmul(out, m)
    return out


def matrix_power(input: Tensor, n: int) -> Tensor:
    """``input`` (a square matrix or a batch of them) to the integer power ``n``, by repeated squaring;
    ``n = 0`` gives the identity, negative ``n`` powers the inverse.

    Example:
        >>> import fgraph as fg
        >>> A = fg.tensor([[1.0, 1.0], [0.0, 1.0]])
        >>> fg.matrix_power(A, 3).tolist(), fg.linalg.matrix_power(A, -1).tolist()
        ([[1.0, 3.0], [0.0, 1.0]], [[1.0, -1.0], [0.0, 1.0]])
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"matrix_power: n must be an int, got {type(n).__name__}.")
    check_matrix(input, "matrix_power", "input", square=True, floating=n < 0, complex_ok=True)
    n = int(n)
    if n == 0:
        eye = jnp.broadcast_to(jnp.eye(input.shape[-1], dtype=input.dtype), input.shape)
        return _wrap(eye)
    base = inv(input) if n < 0 else input
    n = abs(n)
    out: Optional[Tensor] = None
    while True:  # binary powering: O(log n) products
        if n & 1:
            out = base if out is None else matmul(out, base)
        n >>= 1
        if not n:
            return out
        base = matmul(base, base)


# -- cross products ------------------------------------------------------------------------------------------
def _cross_forward(a, b, *, dim):
    a, b = jnp.broadcast_arrays(a, b)
    return jnp.cross(a, b, axis=dim)


def _cross_rule(ctx, g):
    a, b = ctx.inputs
    g_a = apply_op(CROSS, (b, g), ctx.params) if ctx.needs[0] else None
    g_b = apply_op(CROSS, (g, a), ctx.params) if ctx.needs[1] else None
    return g_a, g_b


CROSS = declare("linalg_cross", _cross_forward, _cross_rule, params=("dim",), save_inputs=True)


def _cross(op: str, input: Tensor, other: Tensor, dim: int) -> Tensor:
    try:
        shape = tuple(np.broadcast_shapes(input.shape, other.shape))
    except ValueError:
        raise OpError(f"{op}: shapes {input.shape} and {other.shape} do not broadcast.") from None
    if not isinstance(dim, (int, np.integer)) or not -len(shape) <= dim < len(shape):
        raise IndexError(f"{op}: dim {dim} is out of range for shape {shape} "
                         f"(expected a value in [{-len(shape)}, {len(shape) - 1}]).")
    d = int(dim) % len(shape)
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise OpError(f"{op}: dimension {dim} must have length 3 in both inputs, got shapes {input.shape} and "
                      f"{other.shape}.")
    if input.dtype != other.dtype:
        raise OpError(f"{op}: input ({input.dtype}) and other ({other.dtype}) must have the same dtype.")
    return apply_op(CROSS, (input, other), CROSS.Params(d))


def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """Cross product of 3-vectors along ``dim`` (``fgraph.linalg.cross``); the other dims broadcast, both
    inputs must have the same number of dimensions.

    Example:
        >>> import fgraph as fg
        >>> fg.linalg.cross(fg.tensor([1.0, 0.0, 0.0]), fg.tensor([0.0, 1.0, 0.0])).tolist()
        [0.0, 0.0, 1.0]
    """
    check_tensor(input, "linalg.cross", "input")
    check_tensor(other, "linalg.cross", "other")
    if input.ndim != other.ndim:
        raise OpError(f"linalg.cross: inputs must have the same number of dimensions, got shapes {input.shape} "
                      f"and {other.shape}.")
    return _cross("linalg.cross", input, other, dim)


def cross(input: Tensor, other: Tensor, dim: Optional[int] = None) -> Tensor:
    """Cross product along ``dim``. Without ``dim`` (deprecated, as in PyTorch, which warns) it is the first
    dimension of size 3 of ``input``, not the last: pass ``dim`` or use ``fgraph.linalg.cross``.

    Example:
        >>> import fgraph as fg
        >>> a = fg.tensor([[1.0, 0.0, 0.0]]); b = fg.tensor([[0.0, 1.0, 0.0]])
        >>> fg.cross(a, b, dim=1).tolist()
        [[0.0, 0.0, 1.0]]
    """
    check_tensor(input, "cross", "input")
    check_tensor(other, "cross", "other")
    if dim is None:
        warnings.warn(
            "Using cross without specifying the dim arg is deprecated (as in PyTorch): the default is the first "
            "dimension of size 3, not the last. Pass dim explicitly or use fgraph.linalg.cross.",
            UserWarning, stacklevel=2,
        )
        dim = next((i for i, s in enumerate(input.shape) if s == 3), None)
        if dim is None:
            raise OpError(f"cross: no dimension of size 3 in input (shape {input.shape}); pass dim.")
    return _cross("cross", input, other, dim)


#: Exported as ``fgraph.<name>``.
__all__ = ["addmm", "addmv", "addbmm", "baddbmm", "addr", "addcmul", "addcdiv", "inner", "trace", "chain_matmul",
           "matrix_power", "cross"]
#: Installed as ``Tensor.<name>`` methods.
TENSOR_METHODS = {"addmm": addmm, "addmv": addmv, "addbmm": addbmm, "baddbmm": baddbmm, "addr": addr,
                  "addcmul": addcmul, "addcdiv": addcdiv, "inner": inner, "trace": trace,
                  "matrix_power": matrix_power, "cross": cross}
