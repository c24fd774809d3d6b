"""Bad input to the linear-algebra ops: one test per kind of mistake, asserting on the message.

Each message must name the op, the shapes/dtypes involved and the fix; none may be a
raw JAX traceback.
"""
import math

import jax
import numpy as np
import pytest

import fgraph as fg
from fgraph import GradError, OpError


def t(*shape, dtype="float64", requires_grad=False):
    return fg.tensor(np.ones(shape), dtype=dtype, requires_grad=requires_grad)


def eye(n, requires_grad=False):
    return fg.tensor(np.eye(n), dtype="float64", requires_grad=requires_grad)


# -- products -----------------------------------------------------------------------------------------
def test_mm_needs_matrices():
    with pytest.raises(OpError, match=r"mm: mat2 must be a matrix \(2-D\), got shape \(3,\)"):
        fg.mm(t(2, 3), t(3))


def test_mm_inner_dims_must_match():
    with pytest.raises(OpError, match=r"mm: shapes \(2, 3\) and \(4, 5\) cannot be multiplied \(3 != 4\)"):
        fg.mm(t(2, 3), t(4, 5))


def test_mm_dtypes_must_match():
    with pytest.raises(OpError, match=r"mm: expected input and mat2 to have the same dtype.*float64.*float32"):
        fg.mm(t(2, 3), t(3, 2, dtype="float32"))


def test_bmm_batch_sizes_must_match():
    with pytest.raises(OpError, match=r"bmm: batch sizes differ.*\(2, 2, 3\).*\(3, 3, 4\).*use matmul"):
        fg.bmm(t(2, 2, 3), t(3, 3, 4))


def test_mv_length_mismatch():
    with pytest.raises(OpError, match=r"mv: shapes \(2, 3\) and \(4,\) cannot be multiplied"):
        fg.mv(t(2, 3), t(4))


def test_dot_needs_equal_length_vectors():
    with pytest.raises(OpError, match=r"dot: inconsistent tensor sizes: input has 3 elements and other 4"):
        fg.dot(t(3), t(4))
    with pytest.raises(OpError, match=r"vdot: input must be a vector \(1-D\), got shape \(2, 3\)"):
        fg.vdot(t(2, 3), t(3))


def test_outer_needs_vectors():
    with pytest.raises(OpError, match=r"outer: vec2 must be a vector \(1-D\), got shape \(2, 2\)"):
        fg.outer(t(2), t(2, 2))


def test_products_need_tensors():
    with pytest.raises(TypeError, match=r"kron: other must be a Tensor, got list"):
        fg.kron(t(2), [1.0, 2.0])


def test_tensordot_contracted_sizes_must_match():
    with pytest.raises(OpError, match=r"tensordot: contracted dimensions need to match.*size 3 in dim 1.*size 4"):
        fg.tensordot(t(2, 3), t(4, 5), dims=([1], [0]))


def test_tensordot_bad_dims():
    with pytest.raises(IndexError, match=r"tensordot: dim 5 is out of range for b with shape \(4, 5\)"):
        fg.tensordot(t(2, 4), t(4, 5), dims=([1], [5]))
    with pytest.raises(OpError, match=r"tensordot: both dimension lists must have the same length"):
        fg.tensordot(t(2, 4), t(4, 5), dims=([1], [0, 1]))
    with pytest.raises(OpError, match=r"tensordot: dims=3 must be in \[0, 2\]"):
        fg.tensordot(t(2, 4), t(4, 5), dims=3)


def test_multi_dot_shapes():
    with pytest.raises(OpError, match=r"linalg.multi_dot: expected at least 2 tensors, got 1"):
        fg.linalg.multi_dot([t(2, 2)])
    with pytest.raises(OpError, match=r"linalg.multi_dot: tensor 1 must be 2-D, got \(2,\)"):
        fg.linalg.multi_dot([t(2, 2), t(2), t(2, 2)])


# -- einsum -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("equation,operands,message", [
    ("i1,1j", [(2, 3), (3, 2)], r"invalid subscript '1' in operand 0's subscripts 'i1'; subscripts must be letters"),
    ("ij,jk", [(2, 3)], r"fewer operands were provided \(1\) than specified in the equation 'ij,jk'"),
    ("ij", [(2, 3), (3,)], r"more operands were provided \(2\) than specified"),
    ("ijk", [(2, 3)], r"number of subscripts in the equation \(3\) does not match the number of dimensions \(2\) "
                      r"for operand 0 \(shape \(2, 3\)\) and no ellipsis was given"),
    ("ij,jk->ikk", [(2, 3), (3, 4)], r"output subscript k appears more than once in the output"),
    ("ij,jk->il", [(2, 3), (3, 4)], r"output subscript l does not appear in the equation for any input operand"),
    ("ij,jk->ik", [(2, 3), (4, 5)], r"subscript j has size 4 for operand 1 \(shape \(4, 5\)\), which does not "
                                    r"broadcast with the previously seen size 3"),
    ("ii->i", [(2, 3)], r"subscript i is repeated for operand 0 but the sizes don't match, 2 != 3"),
    ("...i...->i", [(2, 3)], r"has more than one ellipsis"),
    ("...i,...i->i", [(2, 3), (4, 3)], r"an ellipsis dimension has size 4 for operand 1"),
    ("ij->i->j", [(2, 3)], r"has more than one '->'"),
], ids=lambda v: v if isinstance(v, str) and "(" not in v else "")
def test_einsum_bad_equation(equation, operands, message):
    with pytest.raises(OpError, match=r"^einsum: .*" + message):
        fg.einsum(equation, *[t(*s) for s in operands])


def test_einsum_bad_operands():
    with pytest.raises(TypeError, match=r"einsum: operand 1 is a ndarray, expected a Tensor"):
        fg.einsum("i,i->", t(2), np.ones(2))
    with pytest.raises(OpError, match=r"einsum: must provide at least one operand"):
        fg.einsum("i->i")
    with pytest.raises(OpError, match=r"einsum: sublist entries must be ints in \[0, 52\) or Ellipsis, got 'a'"):
        fg.einsum(t(2, 2), ["a", 1])


# -- inverses, solves, determinants --------------------------------------------------------------------------
def test_inv_needs_square_matrices():
    with pytest.raises(OpError, match=r"linalg.inv: A must be a batch of square matrices, but it has shape \(3, 4\) "
                                      r"\(3 rows, 4 columns\)"):
        fg.linalg.inv(t(3, 4))


def test_decompositions_need_matrices():
    with pytest.raises(OpError, match=r"linalg.det: A must have at least 2 dimensions .*got shape \(3,\)"):
        fg.linalg.det(t(3))


def test_decompositions_need_float_dtypes():
    with pytest.raises(OpError, match=r"linalg.inv: expected a float32 or float64 tensor as A, got int32 "
                                      r"\(shape \(2, 2\)\); convert with .float\(\) or .double\(\)"):
        fg.linalg.inv(fg.tensor([[1, 0], [0, 1]], dtype="int32"))
    with pytest.raises(OpError, match=r"linalg.svd: expected a float32 or float64 tensor as A, got float16"):
        fg.linalg.svd(t(2, 2, dtype="float16"))


def test_solve_incompatible_shapes():
    with pytest.raises(OpError, match=r"linalg.solve: incompatible shapes of A \(3, 3\) and B \(4, 2\) for the "
                                      r"equation AX = B \(3x3 and 4x2\); B's rows must number 3"):
        fg.linalg.solve(eye(3), t(4, 2))
    with pytest.raises(OpError, match=r"linalg.solve: incompatible shapes .* XA = B .*a 1-D B is a column vector"):
        fg.linalg.solve(eye(3), t(3), left=False)


def test_solve_batches_must_broadcast():
    with pytest.raises(OpError, match=r"linalg.solve: the batch dimensions of A \(2,\) and B \(3,\) do not broadcast"):
        fg.linalg.solve(t(2, 3, 3), t(3, 3, 2))


def test_solve_dtypes_must_match():
    with pytest.raises(OpError, match=r"linalg.solve: expected A and B to have the same dtype"):
        fg.linalg.solve(eye(2), t(2, dtype="float32"))


def test_solve_triangular_shapes():
    with pytest.raises(OpError, match=r"linalg.solve_triangular: B must have at least 2 dimensions"):
        fg.linalg.solve_triangular(eye(3), t(3), upper=True)
    with pytest.raises(OpError, match=r"linalg.solve_triangular: incompatible shapes of A \(3, 3\) and B \(2, 3\) "
                                      r"for the equation AX = B; B's rows must number 3"):
        fg.linalg.solve_triangular(eye(3), t(2, 3), upper=False)


def test_pinv_tolerances_must_be_floats():
    with pytest.raises(OpError, match=r"linalg.pinv: atol must be a Python float or None, got Tensor"):
        fg.linalg.pinv(t(2, 3), atol=fg.tensor(0.1))
    with pytest.raises(OpError, match=r"linalg.pinv: A must be a batch of square matrices"):
        fg.linalg.pinv(t(2, 3), hermitian=True)


# -- decompositions ------------------------------------------------------------------------------------------------
def test_qr_bad_mode():
    with pytest.raises(OpError, match=r"linalg.qr: mode must be 'reduced', 'complete' or 'r', got 'full'"):
        fg.linalg.qr(t(3, 2), mode="full")


def test_qr_mode_r_is_not_differentiable():
    A = fg.tensor(np.arange(6.0).reshape(3, 2) + np.eye(3, 2), requires_grad=True)
    Q, R = fg.linalg.qr(A, mode="r")
    assert Q.shape == (0,) and R.shape == (2, 2)
    with pytest.raises(GradError, match=r"depends on Q, which is not computed when mode='r'.*mode='reduced'"):
        fg.grad(R.sum(), [A])


def test_qr_complete_tall_is_not_differentiable():
    A = fg.tensor(np.arange(6.0).reshape(3, 2) + np.eye(3, 2), requires_grad=True)
    Q, R = fg.linalg.qr(A, mode="complete")
    with pytest.raises(GradError, match=r"not differentiable when mode='complete' and nrows > ncols"):
        fg.grad((Q.sum() + R.sum()), [A])


def test_eigh_bad_uplo():
    with pytest.raises(OpError, match=r"linalg.eigh: UPLO must be 'L' or 'U', got 'X'"):
        fg.linalg.eigh(eye(2), UPLO="X")


# -- norms ---------------------------------------------------------------------------------------------------------------
def test_vector_norm_bad_ord():
    with pytest.raises(OpError, match=r"linalg.vector_norm: ord must be a number \(int, float, inf or -inf\), got 'fro'"):
        fg.linalg.vector_norm(t(3), "fro")


def test_vector_norm_needs_floats():
    with pytest.raises(OpError, match=r"linalg.vector_norm: expected a float32 or float64 tensor as input, got int32"):
        fg.linalg.vector_norm(fg.tensor([1, 2], dtype="int32"))


def test_vector_norm_inf_over_empty_dim():
    with pytest.raises(OpError, match=r"linalg.vector_norm: the inf-norm over an empty dimension is undefined"):
        fg.linalg.vector_norm(t(2, 0), math.inf, dim=1)


def test_vector_norm_bad_dim():
    with pytest.raises(IndexError, match=r"linalg.vector_norm: dim 2 is out of range for a tensor with 2 dimensions"):
        fg.linalg.vector_norm(t(2, 3), dim=2)


def test_matrix_norm_bad_ord():
    with pytest.raises(OpError, match=r"linalg.matrix_norm: ord must be 'fro', 'nuc', inf, -inf, 1, -1, 2 or -2, got 3"):
        fg.linalg.matrix_norm(t(2, 3), 3)


def test_matrix_norm_dims():
    with pytest.raises(OpError, match=r"linalg.matrix_norm: the input must have at least 2 dimensions"):
        fg.linalg.matrix_norm(t(3))
    with pytest.raises(OpError, match=r"linalg.matrix_norm: dims must be different, got \(1, -1\)"):
        fg.linalg.matrix_norm(t(2, 3), dim=(1, -1))


def test_norm_ord_without_dim_needs_1d_or_2d():
    with pytest.raises(OpError, match=r"linalg.norm: with ord=2 and dim=None the input must be 1-D or 2-D, got shape "
                                      r"\(2, 2, 2\); pass dim"):
        fg.linalg.norm(t(2, 2, 2), 2)


# -- everything stays traceable: no host round trips -----------------------------------------------------------------
def test_linalg_traces_under_jit():
    def loss(a):
        x = fg.tensor(a, requires_grad=True)
        A = x @ x.mT + fg.tensor(3 * np.eye(3))
        L = fg.linalg.cholesky(A)
        out = fg.linalg.solve(A, fg.linalg.svdvals(L)).sum() + fg.linalg.slogdet(A).logabsdet
        out = out + fg.einsum("ii->", fg.linalg.inv(A)) + fg.linalg.matrix_norm(A, "nuc")
        (g,) = fg.grad(out, [x])
        return g.array

    a = np.random.default_rng(0).uniform(-1, 1, (3, 3))
    np.testing.assert_allclose(jax.jit(loss)(a), loss(a), rtol=1e-10)
