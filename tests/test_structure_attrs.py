"""Structure ops, Tensor attributes and torch's node names (fgraph/ops/structure.py, indexing, matmul).

Values and derivatives of the differentiable ops are in ``tests/op_tables/structure.py``;
here: node names (hard-coded, and against PyTorch where it is installed), the Tensor
attributes and methods, the creation helpers, the random ``multinomial``/``poisson`` (by
their statistics), and the errors for bad input.
"""
from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
from fgraph.errors import OpError


def _name(t) -> str:
    return t.grad_fn.name()


# -- node names ---------------------------------------------------------------------------------------------------
INDEXES = {  # index -> PyTorch's outermost node for x[index] on a (3, 4) tensor that requires grad
    "0": "SelectBackward0", "-1": "SelectBackward0", "slice(1, None)": "SliceBackward0",
    "slice(None)": "SliceBackward0", "slice(0, 3)": "SliceBackward0", "None": "UnsqueezeBackward0",
    "...": "AliasBackward0", "(0, slice(1, None))": "SliceBackward0", "(slice(1, None), 0)": "SelectBackward0",
    "(slice(None), 1)": "SelectBackward0", "(slice(0, 3), slice(None))": "AliasBackward0",
    "(slice(None, None, 2),)": "SliceBackward0", "(0, None)": "UnsqueezeBackward0", "(None, 0)": "SelectBackward0",
    "(Ellipsis, 1)": "SelectBackward0", "(1, Ellipsis)": "SelectBackward0", "(Ellipsis, None)": "UnsqueezeBackward0",
    "(ns.tensor([0, 2]), 1)": "IndexBackward0", "(slice(1, None), ns.tensor([0, 1]))": "IndexBackward0",
}
MATMULS = {  # (shape a, shape b, a requires grad) -> PyTorch's outermost node for a @ b
    ((4,), (4,), True): "DotBackward0", ((3, 4), (4,), True): "MvBackward0",
    ((4,), (4, 5), True): "SqueezeBackward4", ((3, 4), (4, 5), True): "MmBackward0",
    ((2, 3, 4), (2, 4, 5), True): "UnsafeViewBackward0", ((2, 3, 4), (4, 5), True): "UnsafeViewBackward0",
    ((2, 3, 4), (4,), True): "UnsafeViewBackward0", ((4,), (2, 4, 5), True): "UnsafeViewBackward0",
    ((3, 4), (2, 4, 5), True): "CloneBackward0", ((3, 4), (2, 4, 5), False): "UnsafeViewBackward0",
    ((1, 3, 4), (2, 4, 5), True): "CloneBackward0", ((1, 3, 4), (1, 4, 5), True): "UnsafeViewBackward0",
    ((2, 1, 3, 4), (5, 4, 2), True): "UnsafeViewBackward0", ((1, 3, 4), (2, 2, 4, 5), True): "UnsafeViewBackward0",
}


def _index(ns, text):
    return eval(text, {"ns": ns})  # noqa: S307 - fixed test strings


@pytest.mark.parametrize("text", sorted(INDEXES))
def test_indexing_node_names(text):
    x = fg.ones(3, 4, requires_grad=True)
    y = x[_index(fg, text)]
    assert _name(y) == INDEXES[text]
    (g,) = fg.grad(y.sum(), [x])  # every variant keeps the indexing rule
    expected = np.zeros((3, 4))
    np.add.at(expected, _index(np, text.replace("ns.tensor", "ns.array")), 1.0)
    np.testing.assert_array_equal(np.asarray(g.array), expected)


@pytest.mark.parametrize("shapes", sorted(MATMULS, key=repr), ids=repr)
def test_matmul_node_names(shapes):
    sa, sb, grad_a = shapes
    a, b = fg.ones(*sa, requires_grad=grad_a), fg.ones(*sb, requires_grad=True)
    assert _name(a @ b) == MATMULS[shapes]


def test_node_names_match_torch():
    torch = pytest.importorskip("torch")
    x, tx = fg.ones(3, 4, requires_grad=True), torch.ones(3, 4, requires_grad=True)
    for text in INDEXES:
        assert _name(x[_index(fg, text)]) == type(tx[_index(torch, text)].grad_fn).__name__, text
    for (sa, sb, grad_a), name in MATMULS.items():
        out = torch.ones(*sa, requires_grad=grad_a) @ torch.ones(*sb, requires_grad=True)
        assert type(out.grad_fn).__name__ == name, (sa, sb, grad_a)
    idx, tidx = fg.tensor([2, 0]), torch.tensor([2, 0])
    v, tv = fg.tensor(1.5, requires_grad=True), torch.tensor(1.5, requires_grad=True)
    pairs = [
        (x.clone(), tx.clone()), (x.select(1, 2), tx.select(1, 2)),
        (x.index_fill(1, idx, 2.0), tx.index_fill(1, tidx, 2.0)), (x.index_fill(1, idx, v), tx.index_fill(1, tidx, tv)),
        (x.index_copy(1, idx, fg.ones(3, 2)), tx.index_copy(1, tidx, torch.ones(3, 2))),
        (x.masked_scatter(x > 0, fg.ones(12)), tx.masked_scatter(tx > 0, torch.ones(12))),
        (x.split_with_sizes([1, 3], 1)[0], tx.split_with_sizes([1, 3], 1)[0]),
        (x.T, tx.T), (x.H, tx.H), (x.mH, tx.mH), (x.view_as(fg.ones(12)), tx.view_as(torch.ones(12))),
    ]
    for mine, theirs in pairs:
        assert _name(mine) == type(theirs.grad_fn).__name__


# -- Tensor attributes -------------------------------------------------------------------------------------------
def test_T_reverses_dims_and_warns_like_torch_off_2d():
    x = fg.arange(24.0).reshape(2, 3, 4)
    with pytest.warns(UserWarning, match="x.T"):
        y = x.T
    np.testing.assert_array_equal(np.asarray(y.array), np.asarray(x.array).T)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fg.ones(2, 3).T.shape == (3, 2)
    with pytest.warns(UserWarning):
        v = fg.arange(3.0)
        assert v.T is v


def test_H_and_mH():
    x = fg.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(x.H.array), np.asarray(x.array).T)
    b = fg.arange(12.0).reshape(2, 2, 3)
    assert b.mH.shape == (2, 3, 2)
    with pytest.raises(OpError, match="only supported on matrices.*mH"):
        b.H
    with pytest.raises(OpError, match="mH is only supported on matrices"):
        fg.ones(3).mH


def test_simple_methods_match_torch():
    torch = pytest.importorskip("torch")
    for dtype, tdtype in ((fg.float32, torch.float32), (fg.float16, torch.float16), (fg.int32, torch.int32),
                          (fg.bool, torch.bool), (fg.float64, torch.float64)):
        x, t = fg.zeros(2, 3, dtype=dtype), torch.zeros(2, 3, dtype=tdtype)
        assert x.element_size() == t.element_size(), dtype
        assert x.is_floating_point() == t.is_floating_point() == fg.is_floating_point(x), dtype
        assert x.is_complex() == t.is_complex() == fg.is_complex(x), dtype
        assert x.nelement() == t.nelement() == 6


def test_identity_like_methods():
    x = fg.ones(2, 3, requires_grad=True)
    assert x.contiguous() is x and x.is_contiguous()
    assert x.cpu().device.platform == "cpu"
    assert x.type_as(fg.zeros(1)) is x
    y = fg.arange(3).type_as(x)
    assert y.dtype == np.float32 and not y.requires_grad
    assert x.view_as(fg.zeros(3, 2)).shape == (3, 2)
    c = x.clone()
    assert c is not x and c.grad_fn is not None
    (g,) = fg.grad((c * c).sum(), [x])
    np.testing.assert_array_equal(np.asarray(g.array), 2 * np.ones((2, 3)))


# -- creation ------------------------------------------------------------------------------------------------------
def test_from_numpy_keeps_the_dtype_and_copies():
    a = np.arange(4, dtype=np.int16)
    t = fg.from_numpy(a)
    a[0] = 7
    assert t.dtype == np.int16 and t.tolist() == [0, 1, 2, 3]
    assert fg.from_numpy(np.ones(2, np.float64)).dtype == np.float64  # not the default float32
    with pytest.raises(TypeError, match="from_numpy: expected a numpy.ndarray, got list"):
        fg.from_numpy([1, 2])


def test_scalar_tensor():
    torch = pytest.importorskip("torch")
    for value in (3, 2.5, True):
        mine, theirs = fg.scalar_tensor(value), torch.scalar_tensor(value)
        assert mine.shape == () and str(mine.dtype) == str(theirs.dtype).replace("torch.", "")
        assert mine.item() == theirs.item()
    t = fg.scalar_tensor(2, dtype=fg.float64, requires_grad=True)
    assert t.dtype == np.float64 and t.requires_grad and t.is_leaf
    with pytest.raises(TypeError, match="scalar_tensor: expected a number"):
        fg.scalar_tensor([1.0])


# -- multinomial / poisson ---------------------------------------------------------------------------------------------
def test_multinomial_frequencies_follow_the_weights():
    w = np.array([1.0, 3.0, 0.0, 4.0])
    draws = np.asarray(fg.multinomial(fg.tensor(w), 4000, replacement=True, key=jax.random.key(0)).array)
    assert draws.shape == (4000,) and draws.dtype == np.int64
    freq = np.bincount(draws, minlength=4) / 4000
    np.testing.assert_allclose(freq, w / w.sum(), atol=0.03)  # ~5 standard deviations
    # without replacement the first draw follows the weights too; rows are independent distributions
    rows = fg.tensor(np.tile(w, (2000, 1)))
    first = np.asarray(fg.multinomial(rows, 2, key=jax.random.key(1)).array)
    assert first.shape == (2000, 2) and (first[:, 0] != first[:, 1]).all()
    np.testing.assert_allclose(np.bincount(first[:, 0], minlength=4) / 2000, w / w.sum(), atol=0.04)
    assert not (first == 2).any()  # weight zero: drawn only after every positive category


def test_multinomial_without_replacement_is_a_permutation_and_reproducible():
    out = fg.multinomial(fg.ones(2, 5), 5, generator=fg.Generator(3))
    assert not out.requires_grad
    for row in out.tolist():
        assert sorted(row) == [0, 1, 2, 3, 4]
    again = fg.multinomial(fg.ones(2, 5), 5, generator=fg.Generator(3))
    assert again.tolist() == out.tolist()
    traced = jax.jit(lambda k: fg.multinomial(fg.ones(5), 3, key=k).array)(jax.random.key(4))
    assert traced.tolist() == fg.multinomial(fg.ones(5), 3, key=jax.random.key(4)).tolist()
    assert fg.ones(3).multinomial(2, key=jax.random.key(0)).shape == (2,)


def test_multinomial_errors():
    with pytest.raises(OpError, match="without replacement"):
        fg.multinomial(fg.ones(3), 4)
    with pytest.raises(OpError, match="1-D or 2-D"):
        fg.multinomial(fg.ones(2, 2, 2), 1)
    with pytest.raises(OpError, match="num_samples must be positive"):
        fg.multinomial(fg.ones(3), 0)
    with pytest.raises(TypeError, match="floating point"):
        fg.multinomial(fg.arange(3), 1)


def test_poisson():
    rates = fg.tensor([0.0, 1.0, 4.0], dtype=fg.float64, requires_grad=True)
    draws = fg.poisson(fg.tensor(np.tile(rates.numpy(), (3000, 1))), key=jax.random.key(0))
    assert draws.dtype == np.float64 and not draws.requires_grad
    np.testing.assert_allclose(np.asarray(draws.array).mean(0), [0.0, 1.0, 4.0], atol=0.15)
    assert not fg.poisson(rates, key=jax.random.key(1)).requires_grad
    with pytest.raises(TypeError, match="poisson: input must be a floating point"):
        fg.poisson(fg.arange(3))


# -- semantics and errors of the structure ops ---------------------------------------------------------------------
def test_masked_scatter_is_traceable():
    mask = jnp.array([[True, False, True], [False, True, False]])

    def run(x, m, src):
        return fg.masked_scatter(fg.tensor(x), fg.tensor(m), fg.tensor(src)).array

    x, src = jnp.zeros((2, 3)), jnp.arange(1.0, 5.0)
    np.testing.assert_array_equal(jax.jit(run)(x, mask, src), run(x, mask, src))
    assert run(x, mask, src).tolist() == [[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]


def test_hsplit_vsplit_dsplit_match_torch():
    torch = pytest.importorskip("torch")
    x, t = fg.arange(48.0).reshape(2, 4, 6), torch.arange(48.0).reshape(2, 4, 6)
    for fn, arg in (("hsplit", 2), ("hsplit", [1, 3]), ("vsplit", [1]), ("dsplit", 3), ("dsplit", [2, 2, 5])):
        mine, theirs = getattr(fg, fn)(x, arg), getattr(torch, fn)(t, arg)
        assert [p.tolist() for p in mine] == [q.tolist() for q in theirs], (fn, arg)
        assert [p.tolist() for p in getattr(x, fn)(arg)] == [q.tolist() for q in theirs], (fn, arg)


@pytest.mark.parametrize("call,error,match", [
    (lambda: fg.hsplit(fg.ones(2, 6), 4), OpError, "not divisible by the split_size 4"),
    (lambda: fg.vsplit(fg.ones(4), 2), OpError, "vsplit requires a tensor with at least 2 dimensions"),
    (lambda: fg.dsplit(fg.ones(2, 4), 2), OpError, "dsplit requires a tensor with at least 3 dimensions"),
    (lambda: fg.select(fg.tensor(1.0), 0, 0), IndexError, "0-d"),
    (lambda: fg.select(fg.ones(2, 3), 1, 3), IndexError, "out of bounds for dimension 1 with size 3"),
    (lambda: fg.select(fg.ones(2, 3), 1, fg.tensor([0, 1])), TypeError, "index_select"),
    (lambda: fg.index_fill(fg.ones(2, 3), 1, fg.tensor([3]), 0.0), IndexError, "index_fill"),
    (lambda: fg.index_fill(fg.ones(2, 3), 1, fg.tensor([0]), fg.ones(2)), OpError, "0-dimensional"),
    (lambda: fg.index_copy(fg.ones(2, 3), 1, fg.tensor([0]), fg.ones(2, 2)), OpError, r"expected source of shape \(2, 1\)"),
    (lambda: fg.index_copy(fg.ones(2, 3), 1, fg.tensor([0]), fg.ones(2, 1, dtype=fg.float64)), OpError, "dtype"),
    (lambda: fg.masked_scatter(fg.ones(2, 3), fg.ones(2, 3) > 0, fg.ones(5)), OpError, "has only 5 elements"),
    (lambda: fg.masked_scatter(fg.ones(2, 3), fg.ones(2, 3), fg.ones(6)), Exception, "masked_scatter"),
    (lambda: fg.split_with_sizes(fg.ones(4), 2), TypeError, "list of ints"),
])
def test_errors_name_the_op_and_the_fix(call, error, match):
    with pytest.raises(error, match=match):
        call()
