"""Bad input to the elementwise math families raises OpError naming the op, the operands and the fix.

One test per kind of mistake (fgraph/ops/elementwise_math.py, trigonometric.py, special.py,
rounding.py).
"""
import numpy as np
import pytest

import fgraph as fg
from fgraph import OpError


def test_div_rejects_an_unknown_rounding_mode():
    with pytest.raises(OpError, match=r"div: rounding_mode must be None, 'trunc' or 'floor', got 'round'"):
        fg.div(fg.tensor([1.0]), 2.0, rounding_mode="round")


@pytest.mark.parametrize("fn, op", [
    (lambda b: fg.floor_divide(b, b), "floor_divide"),
    (lambda b: fg.div(b, b, rounding_mode="trunc"), "div(rounding_mode='trunc')"),
    (lambda b: fg.remainder(b, True), "remainder"),
    (lambda b: fg.fmod(b, b), "fmod"),
    (lambda b: fg.floor(b), "floor"),
    (lambda b: fg.round(b), "round"),
    (lambda b: fg.frac(b), "frac"),
])
def test_arithmetic_on_bool_tensors_is_an_error(fn, op):
    b = fg.tensor([True, False])
    with pytest.raises(OpError) as info:
        fn(b)
    msg = str(info.value)
    assert msg.startswith(f"{op}: not defined for bool operands")
    assert "shape (2,) bool" in msg and "x.int()" in msg


@pytest.mark.parametrize("fn, op", [
    (fg.bitwise_and, "bitwise_and"), (fg.bitwise_or, "bitwise_or"), (fg.bitwise_xor, "bitwise_xor"),
])
def test_bitwise_ops_reject_floating_tensors(fn, op):
    with pytest.raises(OpError) as info:
        fn(fg.tensor([1, 2]), fg.tensor([1.0, 2.0]))
    msg = str(info.value)
    assert f"{op}: needs integer or bool operands, got shape (2,) float32" in msg
    assert f"fgraph.logical_{op[len('bitwise_'):]}" in msg and ".int()" in msg


def test_bitwise_ops_reject_float_python_scalars():
    with pytest.raises(OpError, match=r"bitwise_and: needs integer or bool operands, got Python float 1.5"):
        fg.bitwise_and(fg.tensor([1, 2]), 1.5)


def test_bitwise_not_and_xor_operator_reject_floats():
    with pytest.raises(OpError, match=r"bitwise_not: .*float32.*fgraph.logical_not"):
        fg.bitwise_not(fg.tensor([1.0]))
    with pytest.raises(OpError, match=r"bitwise_xor: .*float32"):
        fg.tensor([1.0]) ^ fg.tensor([2.0])


def test_polygamma_rejects_a_negative_order():
    with pytest.raises(OpError, match=r"polygamma: n must be a non-negative integer .*got -1"):
        fg.polygamma(-1, fg.tensor([1.0]))


def test_polygamma_rejects_a_non_integer_order():
    with pytest.raises(OpError, match=r"polygamma: 'n' must be a Python int, got Python float 1.5"):
        fg.polygamma(1.5, fg.tensor([1.0]))


def test_polygamma_with_swapped_arguments_explains_the_order():
    with pytest.raises(OpError, match=r"polygamma: the order comes first: polygamma\(n, input\)"):
        fg.polygamma(fg.tensor([1.0]), 1)


def test_logit_rejects_an_eps_above_one_half():
    with pytest.raises(OpError, match=r"logit: eps=0.7 clamps to the empty interval .*\[0, 0.5\]"):
        fg.logit(fg.tensor([0.5]), eps=0.7)


def test_logit_rejects_a_tensor_eps():
    with pytest.raises(OpError, match=r"logit: 'eps' must be a Python number, got shape \(\) float32"):
        fg.logit(fg.tensor([0.5]), eps=fg.tensor(0.1))


def test_lerp_rejects_mixed_dtypes():
    a = fg.tensor([0.0], dtype="float32")
    with pytest.raises(OpError) as info:
        fg.lerp(a, fg.tensor([1.0], dtype="float64"), 0.5)
    msg = str(info.value)
    assert "lerp: 'end' has dtype float64 but input has dtype float32" in msg and "end.to(input.dtype)" in msg
    with pytest.raises(OpError, match=r"lerp: 'weight' has dtype float64 but input has dtype float32"):
        fg.lerp(a, a, fg.tensor([0.5], dtype="float64"))


def test_lerp_rejects_integer_tensors_and_non_tensors():
    expected = r"lerp: argument 'input' must be a floating-point or complex tensor, got shape \(1,\) int"
    with pytest.raises(OpError, match=expected):
        fg.lerp(fg.tensor([1]), fg.tensor([2]), 0.5)
    with pytest.raises(OpError, match=r"lerp: argument 'end' must be a Tensor, got list"):
        fg.lerp(fg.tensor([1.0]), [2.0], 0.5)


@pytest.mark.parametrize("fn, op", [
    (fg.remainder, "remainder"), (fg.fmod, "fmod"), (fg.atan2, "atan2"), (fg.hypot, "hypot"),
    (fg.floor_divide, "div_rounded"), (fg.logical_xor, "logical_xor"),
])
def test_shapes_that_do_not_broadcast(fn, op):
    with pytest.raises(OpError) as info:
        fn(fg.ones(2, 3), fg.ones(4))
    msg = str(info.value)
    assert msg.startswith(f"{op}: invalid arguments (shape (2, 3) float32, shape (4,) float32)")
    assert "must broadcast" in msg


def test_lerp_weight_that_does_not_broadcast():
    with pytest.raises(OpError, match=r"lerp: invalid arguments .*shape \(4,\) float32.*must broadcast"):
        fg.lerp(fg.ones(2, 3), fg.ones(2, 3), fg.ones(4))


def test_round_decimals_must_be_an_int():
    with pytest.raises(OpError, match=r"round: 'decimals' must be a Python int, got Python float 1.5"):
        fg.round(fg.tensor([1.0]), decimals=1.5)


def test_round_decimals_needs_a_floating_tensor():
    with pytest.raises(OpError, match=r"round: decimals=2 needs a floating-point tensor, got shape \(1,\) int"):
        fg.round(fg.tensor([1]), decimals=2)


def test_non_tensor_input_is_an_op_error():
    with pytest.raises(OpError, match=r"^exp2: invalid arguments \('abc'\)"):
        fg.exp2("abc")


def test_errors_are_value_and_type_errors():
    """OpError subclasses both, so code written against PyTorch's exceptions keeps working."""
    with pytest.raises(TypeError):
        fg.bitwise_and(fg.tensor([1.0]), 1)
    with pytest.raises(ValueError):
        fg.div(fg.tensor([1.0]), 2.0, rounding_mode=np.str_("nearest"))
