"""Bad dtype arguments: one test per kind of mistake, asserting on the message.

(float64 without JAX's x64 mode is tested in a subprocess in test_dtypes.py.)
"""
import pytest

import fgraph as fg


def test_default_dtype_must_be_float32_or_float64():
    for bad in (fg.int32, fg.float16, fg.bfloat16, fg.bool):
        with pytest.raises(TypeError, match=r"set_default_dtype: the default dtype must be float32 or float64, got"):
            fg.set_default_dtype(bad)
    assert fg.get_default_dtype() == fg.float32  # unchanged


def test_not_a_dtype():
    with pytest.raises(TypeError, match=r"set_default_dtype: .floaty. is not a dtype"):
        fg.set_default_dtype("floaty")
    with pytest.raises(TypeError, match=r"promote_types: 'nope' is not a dtype; pass e.g. fgraph.float32"):
        fg.promote_types("nope", fg.float32)
    with pytest.raises(TypeError, match=r"zeros: 'f32x' is not a dtype"):
        fg.zeros(2, dtype="f32x")


def test_tensor_where_a_dtype_is_expected():
    with pytest.raises(TypeError, match=r"promote_types: expected a dtype, got a Tensor; pass its .dtype"):
        fg.promote_types(fg.ones(1), fg.float32)


def test_result_type_without_operands_or_with_junk():
    with pytest.raises(TypeError, match="result_type: expected at least one operand"):
        fg.result_type()
    with pytest.raises(TypeError, match=r"result_type: \[1, 2\] is not a dtype"):
        fg.result_type(fg.ones(1), [1, 2])


def test_finfo_iinfo_of_the_wrong_kind():
    with pytest.raises(TypeError, match="finfo: int32 is not a floating point dtype; use fgraph.iinfo"):
        fg.finfo(fg.int32)
    with pytest.raises(TypeError, match="iinfo: float32 is not an integer dtype; use fgraph.finfo"):
        fg.iinfo(fg.float32)


def test_requires_grad_on_an_integer_tensor():
    with pytest.raises(TypeError, match=r"requires_grad=True needs a floating point or complex tensor, got dtype "
                                        r"int64.*\.float\(\)"):
        fg.tensor([1, 2], requires_grad=True)
