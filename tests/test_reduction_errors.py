"""Bad input to reductions and scans: one test per kind of mistake, each asserting that the
message names the op, the offending value (shape, dtype, dim...) and the fix."""
import numpy as np
import pytest

import fgraph as fg
from fgraph import OpError

X = fg.ones(2, 3)
INTS = fg.tensor([1, 2, 3])


@pytest.mark.parametrize("call,op", [
    (lambda: fg.prod(X, 2), "prod"),
    (lambda: fg.var(X, (0, -3)), "var"),
    (lambda: fg.amax(X, 5), "amax"),
    (lambda: fg.max(X, -3), "max"),
    (lambda: fg.argmin(X, 2), "argmin"),
    (lambda: fg.logsumexp(X, 2), "logsumexp"),
    (lambda: fg.norm(X, 2, 3), "norm"),
    (lambda: fg.all(X, 2), "all"),
    (lambda: fg.cumsum(X, 2), "cumsum"),
    (lambda: fg.cumprod(fg.tensor(1.0), 1), "cumprod"),
])
def test_dim_out_of_range_is_an_index_error(call, op):
    with pytest.raises(IndexError, match=rf"^{op}: dim -?\d+ is out of range .*expected a value in \[-\d+, \d+\]"):
        call()


def test_dim_named_twice():
    with pytest.raises(OpError, match=r"std: dim \(1, -1\) names a dimension twice; list each dimension once"):
        fg.std(X, (1, -1))


@pytest.mark.parametrize("call,op", [
    (lambda: fg.amax(X, 1.0), "amax"),
    (lambda: fg.prod(X, "0"), "prod"),
    (lambda: fg.any(X, [0, None]), "any"),
])
def test_dim_of_the_wrong_type(call, op):
    with pytest.raises(OpError, match=rf"^{op}: dim must be an int or a tuple of ints"):
        call()


@pytest.mark.parametrize("call,op,fix", [
    (lambda: fg.max(X, (0, 1)), "max", r"amax\(x, dim\) reduces over several dimensions"),
    (lambda: X.min(dim=(0,)), "min", r"amin\(x, dim\) reduces over several dimensions"),
    (lambda: fg.argmax(X, (0, 1)), "argmax", r"dim=None takes the flattened input"),
    (lambda: fg.cumsum(X, (0,)), "cumsum", r"scan one dimension, e\.g\. cumsum\(x, dim=0\)"),
])
def test_single_dim_ops_reject_tuples(call, op, fix):
    with pytest.raises(OpError, match=rf"^{op}: dim must be an int, got tuple .*; {fix}"):
        call()


@pytest.mark.parametrize("op", ["mean", "var", "std", "norm", "var_mean", "std_mean"])
def test_floating_only_ops_reject_integer_tensors(op):
    with pytest.raises(OpError, match=rf"^{op}: input has dtype int\d+ \(shape \(3,\)\) but {op} needs a floating "
                                      r"point tensor; convert it first, e\.g\. x\.float\(\)"):
        getattr(fg, op)(INTS)


def test_unbiased_and_correction_together():
    with pytest.raises(OpError, match=r"var: pass either unbiased=True or correction=0, not both"):
        fg.var(X, 1, True, correction=0)


def test_correction_of_the_wrong_type():
    with pytest.raises(OpError, match=r"std: correction must be a Python int or float, got '1'"):
        fg.std(X, correction="1")


def test_max_of_no_elements_without_dim():
    with pytest.raises(OpError, match=r"max: the input of shape \(0, 3\) has no elements.*max\(x, dim\)"):
        fg.max(fg.zeros(0, 3))


@pytest.mark.parametrize("call,op", [
    (lambda: fg.max(fg.zeros(2, 0), 1), "max"),
    (lambda: fg.amin(fg.zeros(0, 3)), "amin"),
    (lambda: fg.argmax(fg.zeros(0, 3), 0), "argmax"),
])
def test_extreme_over_an_empty_dim_is_an_index_error(call, op):
    with pytest.raises(IndexError, match=rf"{op}: expected reduction dim \d to have non-zero size "
                                         r"\(input shape \(\d, \d\)\).*Reduce over non-empty dimensions"):
        call()


def test_argmax_of_no_elements_without_dim():
    with pytest.raises(IndexError, match=r"argmax: the input of shape \(0, 3\) has no elements"):
        fg.argmax(fg.zeros(0, 3))


def test_inf_norm_over_an_empty_dim():
    with pytest.raises(OpError, match=r"norm: cannot take the p=inf norm over an empty dimension of a tensor of "
                                      r"shape \(0, 3\)"):
        fg.norm(fg.zeros(0, 3), float("inf"), 0)


@pytest.mark.parametrize("p,message", [
    ("nuc", r"norm: p='nuc' \(the nuclear norm.*is not supported; use p='fro'"),
    ("bogus", r"norm: unknown p='bogus'; use 'fro', 2, 1"),
    (True, r"norm: p must be a number or 'fro', got bool True"),
])
def test_norm_order_not_supported(p, message):
    with pytest.raises(OpError, match=message):
        fg.norm(X, p)


def test_frobenius_norm_over_three_dims():
    with pytest.raises(OpError, match=r"norm: p='fro' takes at most two dimensions, got dim=\(0, 1, 2\); use a "
                                      r"numeric p"):
        fg.norm(fg.ones(2, 2, 2), "fro", (0, 1, 2))


def test_max_elementwise_form_takes_no_dim():
    with pytest.raises(OpError, match=r"max: the elementwise form max\(input, other\) takes no dim or keepdim"):
        fg.max(X, X, True)


def test_keepdim_without_dim():
    with pytest.raises(OpError, match=r"min: keepdim needs dim; use min\(x, dim, keepdim=True\) or amin"):
        fg.min(X, keepdim=True)


@pytest.mark.parametrize(
    "op", ["sum", "mean", "prod", "amax", "max", "argmax", "norm", "var", "all", "cumsum", "logsumexp"]
)
def test_non_tensor_input(op):
    args = (0,) if op in ("cumsum", "logsumexp") else ()
    with pytest.raises(OpError, match=rf"^{op}: expected a Tensor.*got ndarray; wrap it with fgraph\.tensor"):
        getattr(fg, op)(np.ones(3), *args)


def test_scan_dim_is_required():
    with pytest.raises(TypeError, match="dim"):
        fg.cumprod(X)
