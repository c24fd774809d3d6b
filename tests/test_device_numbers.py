"""Python numbers reach kernels as device arrays made once (fgraph._numbers): no copy from the host per call."""
import jax
import numpy as np

import fgraph as fg
from fgraph import _numbers


def test_an_op_with_a_python_number_copies_nothing_to_the_device_once_warm():
    # jit copies a number argument from the host on every call: a synchronous transfer each on a GPU.
    m = fg.nn.Sequential(fg.nn.Linear(8, 8), fg.nn.GELU(), fg.nn.LayerNorm(8), fg.nn.Linear(8, 1))
    x = fg.randn(4, 8)

    def step():
        return fg.grad(((m(x) * 0.5 + 1.0) ** 2).mean(), list(m.parameters()))

    expected = step()
    with jax.transfer_guard_host_to_device("disallow"):
        got = step()
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_constants_keep_their_value_sign_and_dtype():
    x = fg.tensor([1.0, -2.0], dtype=fg.float32)
    assert np.signbit((x * -0.0).numpy()).tolist() == [True, False]  # -0.0 is not 0.0's cached array
    assert np.isnan((x + float("nan")).numpy()).all()
    assert (x * 3).dtype == fg.float32 and (x * 3.5).dtype == fg.float32  # weakly typed, as numbers are
    assert (fg.tensor([1, 2]) * 2).dtype == fg.tensor([1, 2]).dtype
    assert (fg.tensor([True, False]) & True).tolist() == [True, False]
    with jax.enable_x64(False):
        assert _numbers.constant(0.5).dtype == np.float32
    with jax.enable_x64(True):
        assert _numbers.constant(0.5).dtype == np.float64
    assert _numbers.constant(0.25) is _numbers.constant(0.25)
    assert _numbers.constant(1) is not _numbers.constant(1.0) is not _numbers.constant(True)


def test_the_constant_cache_is_bounded():
    for i in range(_numbers.MAX_CONSTANTS + 10):
        _numbers.constant(1.0 + i)
    assert len(_numbers._CONSTANTS) <= _numbers.MAX_CONSTANTS
