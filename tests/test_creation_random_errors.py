"""Bad arguments to creation and random ops: one test per kind of mistake, asserting on the message."""
import jax
import numpy as np
import pytest

import fgraph as fg

KEY = jax.random.PRNGKey(0)


def test_negative_size():
    for make in (lambda: fg.rand(2, -1, key=KEY), lambda: fg.zeros(-3), lambda: fg.empty((2, -1)),
                 lambda: fg.randint(0, 3, (-2,), key=KEY), lambda: fg.eye(-1)):
        with pytest.raises(fg.OpError, match=r"negative dimension -\d+ .*sizes must be >= 0"):
            make()


def test_non_integer_size():
    with pytest.raises(TypeError, match=r"rand: size must be integers.*float 2.5"):
        fg.rand(2.5, key=KEY)
    with pytest.raises(TypeError, match="ones: size must be integers"):
        fg.ones((2, "3"))
    with pytest.raises(TypeError, match="randperm: size must be integers"):
        fg.randperm(3.0, key=KEY)


def test_non_floating_dtype_for_float_sampler():
    with pytest.raises(TypeError, match=r"rand: dtype int64 is not a floating point dtype.*dtype=fgraph.float32"):
        fg.rand(2, dtype=fg.int64, key=KEY)
    with pytest.raises(TypeError, match="rand_like: dtype int64 is not a floating point dtype"):
        fg.rand_like(fg.arange(3), key=KEY)
    with pytest.raises(TypeError, match="normal: dtype bool is not a floating point dtype"):
        fg.normal(0.0, 1.0, (2,), dtype=fg.bool, key=KEY)


def test_unknown_dtype():
    with pytest.raises(TypeError, match=r"linspace: 'flaot32' is not a dtype; pass e.g. fgraph.float32"):
        fg.linspace(0, 1, 3, dtype="flaot32")


def test_bad_key():
    with pytest.raises(TypeError, match=r"randn: key must be a JAX PRNG key .*got int 0.*manual_seed"):
        fg.randn(2, key=0)
    with pytest.raises(TypeError, match=r"rand: key must be a JAX PRNG key .*shape \(3, 2\) uint32.*not a batch"):
        fg.rand(2, key=jax.random.split(KEY, 3))
    with pytest.raises(TypeError, match=r"randint: key must be a JAX PRNG key .*shape \(2,\) float32"):
        fg.randint(0, 2, (2,), key=np.zeros(2, np.float32))


def test_key_and_generator_together():
    with pytest.raises(ValueError, match="rand: pass either key= or generator=, not both"):
        fg.rand(2, key=KEY, generator=fg.Generator(0))


def test_generator_of_the_wrong_type():
    with pytest.raises(TypeError, match="randn: generator must be a fgraph.Generator, got int"):
        fg.randn(2, generator=3)


def test_implicit_key_while_traced():
    for draw in (lambda: fg.randn(2), lambda: fg.bernoulli(fg.full((2,), 0.5)),
                 lambda: fg.normal(fg.zeros(2), 1.0), lambda: fg.randint(0, 3, (2,), generator=fg.Generator(1))):
        with pytest.raises(fg.OpError, match=r"inside a JAX trace .*without key=.*Pass key= explicitly"):
            jax.jit(lambda x, draw=draw: draw().array + x)(1.0)


def test_bad_seed():
    with pytest.raises(TypeError, match="manual_seed: seed must be an int, got float"):
        fg.manual_seed(1.5)
    with pytest.raises(ValueError, match="manual_seed: seed .* out of range"):
        fg.Generator(2**70)


def test_randint_empty_or_unrepresentable_range():
    with pytest.raises(fg.OpError, match=r"randint: low must be less than high, got low=5 >= high=2"):
        fg.randint(5, 2, (3,), key=KEY)
    with pytest.raises(fg.OpError, match=r"randint: the range \[0, 300\) does not fit dtype uint8.*\[0, 256\)"):
        fg.randint(0, 300, (3,), dtype=fg.uint8, key=KEY)
    with pytest.raises(fg.OpError, match=r"low must be less than high, got low=0 >= high=0"):
        fg.randint_like(fg.zeros(2), 0, key=KEY)


def test_randint_missing_size_or_non_integer_bounds():
    with pytest.raises(TypeError, match=r"randint: size is required, e.g. randint\(10, \(2, 3\)\)"):
        fg.randint(10, key=KEY)
    with pytest.raises(TypeError, match="randint: high must be an int, got float 2.5"):
        fg.randint(0, 2.5, (2,), key=KEY)


def test_normal_number_arguments_without_size():
    with pytest.raises(TypeError, match=r"normal: with a number mean and std, size is required"):
        fg.normal(0.0, 1.0, key=KEY)


def test_normal_negative_std():
    with pytest.raises(fg.OpError, match=r"normal: std must be >= 0, got -1.0"):
        fg.normal(0.0, -1.0, (2,), key=KEY)
    with pytest.raises(fg.OpError, match=r"normal: std must be >= 0, got -2"):
        fg.normal(fg.zeros(2), -2, key=KEY)


def test_normal_size_or_dtype_with_tensor_arguments():
    with pytest.raises(TypeError, match="size=, dtype= and requires_grad= apply only to number mean and std"):
        fg.normal(fg.zeros(2), 1.0, (2,), key=KEY)


def test_normal_shapes_that_do_not_broadcast():
    with pytest.raises(fg.OpError, match=r"normal: the shapes of mean \(2, 3\) and std \(4,\) do not broadcast"):
        fg.normal(fg.zeros(2, 3), fg.ones(4), key=KEY)


def test_normal_integer_tensor():
    with pytest.raises(TypeError, match=r"normal: mean must be a floating point tensor, got dtype int64.*\.float\(\)"):
        fg.normal(fg.arange(3), 1.0, key=KEY)


def test_bernoulli_non_float_input_or_non_tensor():
    with pytest.raises(TypeError, match=r"bernoulli: input must be a floating point tensor .*int64.*\.float\(\)"):
        fg.bernoulli(fg.tensor([0, 1]), key=KEY)
    with pytest.raises(TypeError, match="bernoulli: input must be a Tensor, got list"):
        fg.bernoulli([0.5], key=KEY)


def test_bernoulli_probability_out_of_range():
    with pytest.raises(fg.OpError, match=r"bernoulli: p must be in \[0, 1\], got 1.5"):
        fg.bernoulli(fg.zeros(2), 1.5, key=KEY)


def test_linspace_bad_steps():
    with pytest.raises(fg.OpError, match="linspace: number of steps must be non-negative, got -1"):
        fg.linspace(0, 1, -1)
    with pytest.raises(TypeError, match="logspace: steps must be an int, got float 2.0"):
        fg.logspace(0, 1, 2.0)


def test_linspace_endpoint_not_a_scalar():
    with pytest.raises(fg.OpError, match=r"linspace: start must be a number or a 0-dimensional tensor, .*\(2,\)"):
        fg.linspace(fg.zeros(2), 1, 3)
    with pytest.raises(TypeError, match="logspace: end must be a real number or a 0-dimensional tensor, got str"):
        fg.logspace(0, "1", 3)


def test_like_functions_need_a_tensor():
    with pytest.raises(TypeError, match="randn_like: input must be a Tensor, got ndarray"):
        fg.randn_like(np.zeros(2), key=KEY)
    with pytest.raises(TypeError, match="empty_like: expected a Tensor, got list"):
        fg.empty_like([1.0])
