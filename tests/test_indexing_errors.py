"""Bad arguments to the indexing and gather/scatter ops: clear errors naming the op, the shapes and dtypes.

One test per kind of mistake, parametrized over the ops it applies to.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
from fgraph import OpError

X = fg.arange(12.0).reshape(3, 4)
I = fg.tensor([[0, 1, 2, 0]])  # int64 under x64, int32 otherwise


def _long(values):
    return fg.tensor(values, dtype=fg.int64)


WRONG_DIMS = {
    "gather": (lambda: fg.gather(X, 1, _long([0, 1])), "gather: index must have as many dimensions as input"),
    "scatter": (lambda: fg.scatter(X, 0, I, fg.ones(4)), "scatter: src must have as many dimensions as input"),
    "index_select": (lambda: fg.index_select(X, 0, _long([[0]])), "index_select: index is supposed to be a vector"),
    "index_add": (lambda: fg.index_add(X, 0, _long([[0]]), fg.ones(1, 4)),
                  "index_add: index is supposed to be a vector"),
    "take_along_dim": (lambda: fg.take_along_dim(X, _long([0]), dim=1),
                       "take_along_dim: input and indices should have the same number of dimensions"),
    "index_put_too_many": (lambda: fg.index_put(X, (_long([0]),) * 3, fg.tensor(1.0)),
                           "index_put: too many indices"),
}


@pytest.mark.parametrize("case", WRONG_DIMS, ids=str)
def test_index_with_the_wrong_number_of_dimensions(case):
    fn, message = WRONG_DIMS[case]
    with pytest.raises((OpError, IndexError), match=message):
        fn()


DIM_OUT_OF_RANGE = {
    "gather": lambda: fg.gather(X, 2, I),
    "scatter_add": lambda: fg.scatter_add(X, -3, I, fg.ones(1, 4)),
    "scatter_reduce": lambda: X.scatter_reduce(5, I, fg.ones(1, 4), "sum"),
    "index_select": lambda: X.index_select(2, _long([0])),
    "index_add": lambda: X.index_add(-3, _long([0]), fg.ones(1, 4)),
    "take_along_dim": lambda: fg.take_along_dim(X, I, dim=2),
}


@pytest.mark.parametrize("case", DIM_OUT_OF_RANGE, ids=str)
def test_dim_out_of_range(case):
    with pytest.raises(IndexError, match=rf"{case}: dim -?\d is out of range for a tensor with 2 dimensions"):
        DIM_OUT_OF_RANGE[case]()


MISMATCHED_SHAPES = {
    "gather_index_larger_than_input": (
        lambda: fg.gather(X, 1, fg.zeros(4, 1, dtype=fg.int64)),
        r"gather: index of shape \(4, 1\) must be no larger than input \(3, 4\) apart from dimension 1"),
    "scatter_src_smaller_than_index": (
        lambda: fg.scatter(X, 1, fg.zeros(1, 2, dtype=fg.int64), fg.ones(1, 1)),
        r"scatter: index of shape \(1, 2\) must be no larger than input \(3, 4\) apart from dimension 1, "
        r"and no larger than src \(1, 1\)"),
    "index_add_source": (
        lambda: fg.index_add(X, 1, _long([0, 1]), fg.ones(3, 3)),
        r"index_add: source of shape \(3, 3\) does not fit input of shape \(3, 4\) with 2 indices along dim 1; "
        r"expected source of shape \(3, 2\)"),
    "index_put_values": (
        lambda: fg.index_put(X, (_long([0, 1]),), fg.ones(3)),
        r"index_put: invalid arguments \(shape \(3, 4\) float32, shape \(3,\) float32, .*values must broadcast"),
    "masked_fill_mask": (
        lambda: fg.masked_fill(X, X[:, :3] > 0, 1.0),
        r"masked_fill: mask of shape \(3, 3\) does not broadcast with input of shape \(3, 4\)"),
    "masked_select_mask": (
        lambda: fg.masked_select(X, X[:2] > 0),
        r"masked_select: mask of shape \(2, 4\) does not broadcast with input of shape \(3, 4\)"),
    "take_along_dim_broadcast": (
        lambda: fg.take_along_dim(X, fg.zeros(2, 1, dtype=fg.int64), dim=1),
        r"take_along_dim: input of shape \(3, 4\) and indices of shape \(2, 1\) must broadcast"),
    "masked_fill_value_not_0d": (
        lambda: fg.masked_fill(X, X > 1, fg.ones(1)),
        r"masked_fill: value must be a number or a 0-dimensional tensor, got a tensor of shape \(1,\)"),
}


@pytest.mark.parametrize("case", MISMATCHED_SHAPES, ids=str)
def test_mismatched_shapes(case):
    fn, message = MISMATCHED_SHAPES[case]
    with pytest.raises(OpError, match=message):
        fn()


OUT_OF_RANGE = {
    "gather": (lambda: fg.gather(X, 1, _long([[4]])),
               r"gather: index 4 is out of bounds for dimension 1 with size 4"),
    "gather_negative": (lambda: fg.gather(X, 1, _long([[-1]])),
                        r"gather: index -1 is out of bounds for dimension 1 with size 4 "
                        r"\(valid index values: \[0, 3\]\)"),
    "scatter": (lambda: fg.scatter(X, 0, _long([[3]]), 0.0),
                r"scatter: index 3 is out of bounds for dimension 0 with size 3"),
    "scatter_add": (lambda: fg.scatter_add(X, 0, _long([[5]]), fg.ones(1, 1)),
                    r"scatter_add: index 5 is out of bounds"),
    "scatter_reduce": (lambda: fg.scatter_reduce(X, 1, _long([[-2]]), fg.ones(1, 1), "amax"),
                       r"scatter_reduce: index -2 is out of bounds"),
    "index_select": (lambda: fg.index_select(X, 0, _long([0, 3])),
                     r"index_select: index 3 is out of bounds for dimension 0"),
    "index_add": (lambda: fg.index_add(X, 1, _long([-1]), fg.ones(3, 1)), r"index_add: index -1 is out of bounds"),
    "index_put": (lambda: fg.index_put(X, (_long([0]), _long([-5])), fg.tensor(1.0)),
                  r"index_put: index -5 is out of bounds for dimension 1 with size 4"),
    "take": (lambda: fg.take(X, _long([12])),
             r"take: index 12 is out of bounds for dimension 0 with size 12 \(valid index values: \[-12, 11\]\)"),
    "take_along_dim": (lambda: fg.take_along_dim(X, _long([[4]]), dim=1),
                       r"take_along_dim: index 4 is out of bounds"),
    "take_along_dim_flat": (lambda: fg.take_along_dim(X, _long([-1])), r"take_along_dim: index -1 is out of bounds"),
    "getitem": (lambda: X[_long([0, 3])], r"index: index 3 is out of bounds for dimension 0 with size 3"),
}


@pytest.mark.parametrize("case", OUT_OF_RANGE, ids=str)
def test_out_of_range_indices(case):
    fn, message = OUT_OF_RANGE[case]
    with pytest.raises(IndexError, match=message):
        fn()


FLOAT_INDEX = {
    "gather": lambda f: fg.gather(X, 1, f),
    "scatter": lambda f: fg.scatter(X, 1, f, 1.0),
    "scatter_add": lambda f: fg.scatter_add(X, 1, f, fg.ones(1, 1)),
    "scatter_reduce": lambda f: fg.scatter_reduce(X, 1, f, fg.ones(1, 1), "mean"),
    "index_select": lambda f: fg.index_select(X, 1, f.reshape(-1)),
    "index_add": lambda f: fg.index_add(X, 1, f.reshape(-1), fg.ones(3, 1)),
    "take": lambda f: fg.take(X, f),
    "take_along_dim": lambda f: fg.take_along_dim(X, f, dim=1),
    "index_put": lambda f: fg.index_put(X, (f.reshape(-1),), fg.tensor(1.0)),
    "getitem": lambda f: X[f.reshape(-1)],
}


@pytest.mark.parametrize("case", FLOAT_INDEX, ids=str)
def test_float_index_dtype(case):
    with pytest.raises(OpError, match=rf"{case if case != 'getitem' else 'index'}: .*float32.*\.long\(\)"):
        FLOAT_INDEX[case](fg.tensor([[1.0]]))


def test_bool_index_where_only_integers_are_taken():
    with pytest.raises(OpError, match=r"gather: expected index of dtype int32 or int64, got index of shape \(1, 1\) "
                                      r"and dtype bool"):
        fg.gather(X, 1, fg.tensor([[True]]))


def test_index_that_is_not_a_tensor():
    with pytest.raises(TypeError, match=r"gather: index must be an integer Tensor \(int32 or int64\), got list"):
        fg.gather(X, 1, [[0]])
    with pytest.raises(TypeError, match=r"index_put: indices must be a tuple of Tensors, got Tensor"):
        fg.index_put(X, _long([0]), fg.tensor(1.0))


SRC_DTYPE = {
    "scatter": lambda: fg.scatter(X, 1, _long([[0]]), fg.ones(1, 1, dtype=fg.float64)),
    "scatter_add": lambda: fg.scatter_add(X, 1, _long([[0]]), fg.ones(1, 1, dtype=fg.float64)),
    "index_add": lambda: fg.index_add(X, 1, _long([0]), fg.ones(3, 1, dtype=fg.float64)),
    "index_put": lambda: fg.index_put(X, (_long([0]),), fg.tensor(1.0, dtype=fg.float64)),
}


@pytest.mark.parametrize("case", SRC_DTYPE, ids=str)
def test_source_dtype_differs_from_input(case):
    with pytest.raises(OpError, match=rf"{case}: \w+ dtype float64 does not match input dtype float32"):
        SRC_DTYPE[case]()


def test_non_bool_masks():
    for fn in (fg.masked_fill, fg.masked_select):
        args = (1.0,) if fn is fg.masked_fill else ()
        with pytest.raises(OpError, match=rf"{fn.__name__}: only bool masks are supported, got a mask of shape "
                                          r"\(3, 4\) and dtype int\d\d"):
            fn(X, fg.ones(3, 4, dtype=fg.int32) if fn is fg.masked_fill else fg.zeros(3, 4, dtype=fg.int32), *args)


def test_unknown_scatter_reduction():
    with pytest.raises(OpError, match=r"scatter_reduce: reduce must be one of \('sum', 'prod', 'mean', 'amax', "
                                      r"'amin'\), got 'max'"):
        fg.scatter_reduce(X, 0, I, fg.ones(1, 4), "max")
    with pytest.raises(OpError, match=r"scatter: reduce must be 'add' or 'multiply', got 'mean'"):
        fg.scatter(X, 0, I, fg.ones(1, 4), reduce="mean")


def test_scatter_needs_exactly_one_source():
    with pytest.raises(TypeError, match="scatter: pass exactly one of src"):
        fg.scatter(X, 0, I)


# -- data-dependent shapes under tracing -------------------------------------------------------------------------
MASK = np.array([[True, False, True, False]] * 3)


def test_boolean_mask_indexing_under_jit():
    with pytest.raises(OpError, match=r"index: boolean-mask indexing has a data-dependent shape and cannot be traced"
                                      r".*fg.where"):
        jax.jit(lambda x, m: fg.Tensor(x)[fg.Tensor(m)].array)(X.array, MASK)


def test_boolean_mask_index_put_under_jit():
    with pytest.raises(OpError, match=r"index_put: boolean-mask indexing has a data-dependent shape"):
        jax.jit(lambda x, m: fg.index_put(fg.Tensor(x), (fg.Tensor(m),), fg.tensor(0.0)).array)(X.array, MASK)


def test_masked_select_under_jit():
    with pytest.raises(OpError, match=r"masked_select: the output's size depends on the values of the mask "
                                      r"\(shape \(3, 4\)\), so it cannot be traced .*fg.where"):
        jax.jit(lambda x, m: fg.masked_select(fg.Tensor(x), fg.Tensor(m)).array)(X.array, MASK)


def test_bounds_are_not_checked_under_jit():
    """Under tracing the values are unknown: no host round trip, no error (JAX clamps the gather)."""
    out = jax.jit(lambda x, i: fg.gather(fg.Tensor(x), 1, fg.Tensor(i)).array)(X.array, jnp.array([[1], [2], [3]]))
    assert out.tolist() == [[1.0], [6.0], [11.0]]
