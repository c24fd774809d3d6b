"""Creation and random ops: shapes, dtypes and values; reproducibility; statistics; gradients.

Values of the creation ops are checked against NumPy (and PyTorch's documented
results where the algorithms differ); random ops for reproducibility (same key ->
same values, eagerly and under ``jax.jit``; ``manual_seed``; generators), loose
statistics on large draws, and gradients of the reparameterised ``normal`` against
``jax.grad``/``jax.hessian`` of the same pure-JAX program with the same key.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
from fgraph.ops import creation

KEY = jax.random.PRNGKey(0)


def _np(t):
    return np.asarray(t.array)


@pytest.fixture
def default_dtype_float64():
    fg.set_default_dtype(fg.float64)
    try:
        yield
    finally:
        fg.set_default_dtype(fg.float32)


# -- creation ----------------------------------------------------------------------------------------------
def test_empty_is_zeros_with_size_as_varargs_tuple_or_list():
    for x in (fg.empty(2, 3), fg.empty((2, 3)), fg.empty([2, 3])):
        assert x.shape == (2, 3) and x.dtype == fg.float32 and not x.requires_grad
        np.testing.assert_array_equal(_np(x), np.zeros((2, 3), np.float32))
    assert fg.empty(0, 4).shape == (0, 4)
    assert fg.empty(()).shape == ()
    assert fg.empty(3, dtype=fg.int8).dtype == fg.int8
    y = fg.empty(2, requires_grad=True)
    assert y.requires_grad and y.is_leaf
    like = fg.empty_like(fg.ones(2, 1, dtype=fg.float16))
    assert like.shape == (2, 1) and like.dtype == fg.float16


@pytest.mark.parametrize("start,end,steps", [(0, 1, 5), (-2.5, 7.0, 8), (3, -1, 4), (1, 1, 3), (0, 1, 1), (0, 1, 0)])
def test_linspace_matches_numpy(start, end, steps):
    x = fg.linspace(start, end, steps, dtype=fg.float64)
    assert x.shape == (steps,) and x.dtype == fg.float64
    np.testing.assert_allclose(_np(x), np.linspace(start, end, steps), rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(_np(fg.linspace(start, end, steps)), np.linspace(start, end, steps, dtype=np.float32),
                               rtol=1e-6, atol=1e-6)


def test_linspace_integer_dtype_truncates_like_torch():
    # torch.linspace(0, 10, 4, dtype=torch.int64) and torch.linspace(-10, 0, 4, dtype=torch.int64)
    assert fg.linspace(0, 10, 4, dtype=fg.int64).tolist() == [0, 3, 6, 10]
    assert fg.linspace(-10, 0, 4, dtype=fg.int64).tolist() == [-10, -6, -3, 0]
    assert fg.linspace(0, 10, 4, dtype=fg.int32).dtype == fg.int32


def test_linspace_endpoints_are_kernel_inputs_tensors_and_tracers():
    before = len(creation.LINSPACE._kernels)
    a = fg.linspace(0.0, 1.0, 7)
    b = fg.linspace(fg.tensor(2.0), fg.tensor(3.0), 7)  # 0-d tensors, same kernel
    assert len(creation.LINSPACE._kernels) <= before + 1
    np.testing.assert_allclose(_np(b), _np(a) + 2.0, rtol=1e-6)
    traced = jax.jit(lambda s: fg.linspace(fg.tensor(s), 1.0, 5).array)(0.5)
    np.testing.assert_allclose(np.asarray(traced), np.linspace(0.5, 1.0, 5), rtol=1e-6)
    t = fg.tensor(1.0, requires_grad=True)
    assert not fg.linspace(t, 2.0, 3).requires_grad  # as in PyTorch: not differentiable
    assert fg.linspace(0, 1, 3, requires_grad=True).requires_grad


@pytest.mark.parametrize("start,end,steps,base", [(0, 2, 3, 10.0), (0, 3, 4, 2.0), (-1, 1, 5, 10.0), (1, 0, 2, 0.5)])
def test_logspace_matches_numpy(start, end, steps, base):
    x = fg.logspace(start, end, steps, base, dtype=fg.float64)
    np.testing.assert_allclose(_np(x), np.logspace(start, end, steps, base=base), rtol=1e-14)
    assert fg.logspace(start, end, steps, base=base).dtype == fg.float32


@pytest.mark.parametrize("n,m", [(3, None), (2, 4), (4, 2), (0, 3), (1, 1)])
def test_eye_matches_numpy(n, m):
    x = fg.eye(n, m)
    assert x.dtype == fg.float32
    np.testing.assert_array_equal(_np(x), np.eye(n, m, dtype=np.float32))
    assert fg.eye(n, m, dtype=fg.bool).dtype == fg.bool


def test_existing_creation_functions_shapes_dtypes_values():
    assert fg.zeros(2, 3).dtype == fg.float32 and fg.ones((2,)).tolist() == [1.0, 1.0]
    assert fg.full((2,), 7).dtype == fg.int64 and fg.full((2,), 7.0).dtype == fg.float32
    assert fg.full(3, True).dtype == fg.bool
    assert fg.arange(4).tolist() == [0, 1, 2, 3] and fg.arange(0, 1, 0.25).dtype == fg.float32
    np.testing.assert_allclose(_np(fg.arange(1.0, 2.0, 0.25)), np.arange(1.0, 2.0, 0.25))
    x = fg.ones(2, 3, dtype=fg.float16)
    assert fg.zeros_like(x).dtype == fg.float16 and fg.full_like(x, 2, dtype=fg.int32).tolist() == [[2] * 3] * 2


def test_new_methods_take_self_dtype():
    x = fg.ones(2, dtype=fg.float16)
    assert x.new_zeros(2, 3).dtype == fg.float16 and x.new_zeros((2, 3)).shape == (2, 3)
    assert x.new_ones(3).tolist() == [1.0] * 3 and x.new_empty(4).shape == (4,)
    assert x.new_full((2,), 5).tolist() == [5.0, 5.0] and x.new_full((2,), 5).dtype == fg.float16
    assert x.new_tensor([1, 2]).dtype == fg.float16
    assert x.new_zeros(2, dtype=fg.int32).dtype == fg.int32
    assert x.new_ones(2, requires_grad=True).requires_grad


def test_default_dtype_applies_to_float_creation(default_dtype_float64):
    assert fg.get_default_dtype() == fg.float64
    for t in (fg.tensor([1.5]), fg.zeros(2), fg.empty(2), fg.linspace(0, 1, 3), fg.eye(2), fg.rand(2, key=KEY),
              fg.randn(2, key=KEY), fg.normal(0.0, 1.0, (2,), key=KEY), fg.full((2,), 0.5), fg.arange(0.5, 2)):
        assert t.dtype == fg.float64
    assert fg.tensor([1, 2]).dtype == fg.int64  # integers are not affected
    assert fg.randint(3, (2,), key=KEY).dtype == fg.int64


# -- random: shapes and dtypes --------------------------------------------------------------------------
def test_random_shapes_and_dtypes():
    assert fg.rand(2, 3, key=KEY).shape == (2, 3) and fg.rand((2, 3), key=KEY).dtype == fg.float32
    assert fg.randn([4], key=KEY, dtype=fg.float64).dtype == fg.float64
    assert fg.rand(0, 3, key=KEY).shape == (0, 3) and fg.randn((), key=KEY).shape == ()
    assert fg.randn(3, key=KEY, dtype=fg.bfloat16).dtype == fg.bfloat16
    assert fg.randint(5, (3,), key=KEY).dtype == fg.int64
    assert fg.randint(0, 5, (3,), key=KEY, dtype=fg.uint8).dtype == fg.uint8
    assert fg.randint(0, 5, size=(3,), key=KEY, dtype=fg.float32).dtype == fg.float32
    assert fg.randint(5, size=(2, 2), key=KEY).shape == (2, 2)
    assert fg.randint(high=5, size=(2,), key=KEY).shape == (2,)
    assert fg.randperm(6, key=KEY).dtype == fg.int64 and fg.randperm(0, key=KEY).shape == (0,)
    x = fg.ones(2, 3, dtype=fg.float16)
    assert fg.rand_like(x, key=KEY).dtype == fg.float16 and fg.randn_like(x, key=KEY).shape == (2, 3)
    assert fg.randn_like(x, key=KEY, dtype=fg.float32).dtype == fg.float32
    assert fg.randint_like(x, 4, key=KEY).dtype == fg.float16
    assert fg.randint_like(fg.arange(3), 2, 9, key=KEY).dtype == fg.int64
    r = fg.rand(3, key=KEY, requires_grad=True)
    assert r.requires_grad and r.is_leaf
    assert fg.normal(fg.zeros(2, 1), fg.ones(3), key=KEY).shape == (2, 3)
    assert fg.normal(0.0, fg.ones(3, dtype=fg.float16), key=KEY).dtype == fg.float16
    assert fg.normal(1.0, 2.0, (2, 2), key=KEY, dtype=fg.float64).dtype == fg.float64
    assert fg.bernoulli(fg.full((2, 2), 0.5, dtype=fg.float64), key=KEY).dtype == fg.float64
    assert fg.bernoulli(fg.zeros(3), 0.5, key=KEY).shape == (3,)


# -- random: reproducibility ------------------------------------------------------------------------------
DRAWS = [
    lambda **kw: fg.rand(3, **kw),
    lambda **kw: fg.randn(3, **kw),
    lambda **kw: fg.randint(0, 100, (3,), **kw),
    lambda **kw: fg.randperm(5, **kw),
    lambda **kw: fg.normal(fg.zeros(3), 2.0, **kw),
    lambda **kw: fg.bernoulli(fg.full((8,), 0.5), **kw),
]


@pytest.mark.parametrize("draw", DRAWS, ids=["rand", "randn", "randint", "randperm", "normal", "bernoulli"])
def test_same_key_same_values_eager_and_jitted(draw):
    a, b = draw(key=KEY), draw(key=KEY)
    np.testing.assert_array_equal(_np(a), _np(b))
    typed = jax.random.key(0)
    np.testing.assert_array_equal(_np(draw(key=typed)), _np(draw(key=typed)))
    jitted = jax.jit(lambda k: draw(key=k).array)(KEY)
    np.testing.assert_array_equal(np.asarray(jitted), _np(a))
    other = draw(key=jax.random.PRNGKey(1))
    if draw is not DRAWS[5]:  # 8 fair coins may repeat; every other draw differs with certainty
        assert not np.array_equal(_np(other), _np(a))


def test_vmap_over_a_batch_of_keys():
    keys = jax.random.split(KEY, 3)
    batched = jax.vmap(lambda k: fg.randn(2, key=k).array)(keys)
    for i in range(3):
        np.testing.assert_array_equal(np.asarray(batched[i]), _np(fg.randn(2, key=keys[i])))


def test_manual_seed_replays_the_default_stream():
    fg.manual_seed(123)
    first = [_np(fg.rand(4)), _np(fg.randint(0, 1000, (4,))), _np(fg.randn(2))]
    fg.manual_seed(123)
    again = [_np(fg.rand(4)), _np(fg.randint(0, 1000, (4,))), _np(fg.randn(2))]
    for x, y in zip(first, again):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(first[0], _np(fg.rand(4)))  # the stream moved on
    assert fg.random.initial_seed() == 123


def test_rng_state_round_trip_and_generators_are_independent():
    fg.manual_seed(5)
    state = fg.get_rng_state()
    a = _np(fg.randn(3))
    fg.set_rng_state(state)
    np.testing.assert_array_equal(_np(fg.randn(3)), a)

    g1, g2 = fg.Generator(9), fg.Generator(9)
    fg.manual_seed(5)
    x1 = _np(fg.randn(3, generator=g1))
    np.testing.assert_array_equal(_np(fg.randn(3)), a)  # the default stream is untouched by g1
    np.testing.assert_array_equal(_np(fg.randn(3, generator=g2)), x1)
    assert not np.array_equal(_np(fg.randn(3, generator=g1)), x1)
    np.testing.assert_array_equal(_np(fg.randn(3, generator=g1.manual_seed(9))), x1)


def test_traced_generator_state_is_allowed_and_does_not_leak():
    """A transform may thread the generator state through a program as a traced key."""
    gen = fg.Generator(0)

    def step(state):
        gen.set_state(state)
        x = fg.randn(3, generator=gen)
        return x.array, gen.get_state()

    state0 = gen.get_state()
    x, state1 = jax.jit(step)(state0)
    gen.set_state(state0)
    np.testing.assert_array_equal(np.asarray(x), _np(fg.randn(3, generator=gen)))
    np.testing.assert_array_equal(np.asarray(state1), np.asarray(gen.get_state()))


def test_default_generator_does_not_leak_tracers_when_refused():
    fg.manual_seed(0)
    with pytest.raises(fg.OpError, match="without key="):
        jax.jit(lambda x: fg.rand(2).array + x)(1.0)
    assert not isinstance(fg.get_rng_state(), jax.core.Tracer)
    fg.rand(2)  # the default stream still works eagerly


# -- random: statistics (loose bounds) ------------------------------------------------------------------
N = 20000


def test_uniform_and_normal_statistics():
    u = _np(fg.rand(N, key=KEY, dtype=fg.float64))
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.02 and abs(u.var() - 1 / 12) < 0.01
    z = _np(fg.randn(N, key=KEY, dtype=fg.float64))
    assert abs(z.mean()) < 0.05 and abs(z.std() - 1.0) < 0.05
    y = _np(fg.normal(3.0, 0.5, (N,), key=KEY, dtype=fg.float64))
    assert abs(y.mean() - 3.0) < 0.03 and abs(y.std() - 0.5) < 0.03
    t = _np(fg.normal(fg.full((N,), -1.0), fg.full((N,), 2.0), key=KEY))
    assert abs(t.mean() + 1.0) < 0.1 and abs(t.std() - 2.0) < 0.1


def test_integer_and_bernoulli_statistics():
    r = _np(fg.randint(-3, 4, (N,), key=KEY))
    assert set(np.unique(r)) == set(range(-3, 4))
    assert np.abs(np.bincount(r + 3) / N - 1 / 7).max() < 0.02
    full_range = _np(fg.randint(0, 256, (N,), key=KEY, dtype=fg.uint8))
    assert full_range.min() == 0 and full_range.max() == 255
    p = np.array([0.0, 0.2, 0.9, 1.0])
    b = _np(fg.bernoulli(fg.tensor(np.tile(p, (N // 4, 1))), key=KEY))
    assert set(np.unique(b)) <= {0.0, 1.0}
    np.testing.assert_allclose(b.mean(axis=0), p, atol=0.03)
    assert b[:, 0].sum() == 0 and b[:, 3].min() == 1
    assert abs(_np(fg.bernoulli(fg.zeros(N), 0.3, key=KEY)).mean() - 0.3) < 0.02
    perm = _np(fg.randperm(50, key=KEY))
    assert sorted(perm.tolist()) == list(range(50)) and perm.tolist() != list(range(50))


# -- gradients ---------------------------------------------------------------------------------------------
def _normal_ref(mean, std, shape):
    return mean + std * jax.random.normal(KEY, shape, jnp.result_type(mean, std))


def test_normal_gradients_match_jax_reparameterisation():
    m0 = np.array([[0.5], [-1.0]])
    s0 = np.array([0.3, 1.2, 2.0])
    mean = fg.tensor(m0, dtype=fg.float64, requires_grad=True)
    std = fg.tensor(s0, dtype=fg.float64, requires_grad=True)

    def ref_loss(m, s):
        y = _normal_ref(m, s, (2, 3))
        return jnp.sum(jnp.sin(y) * y)

    y = fg.normal(mean, std, key=KEY)
    np.testing.assert_allclose(_np(y), np.asarray(_normal_ref(m0, s0, (2, 3))), rtol=1e-15)
    loss = (fg.sin(y) * y).sum()
    gm, gs = fg.grad(loss, [mean, std], create_graph=True)
    rgm, rgs = jax.grad(ref_loss, argnums=(0, 1))(m0, s0)
    np.testing.assert_allclose(_np(gm), np.asarray(rgm), rtol=1e-12)
    np.testing.assert_allclose(_np(gs), np.asarray(rgs), rtol=1e-12)
    # second derivative: d/dstd of sum(gs), against jax.hessian of the same program
    (hss,) = fg.grad(gs.sum(), [std])
    ref_h = jax.hessian(ref_loss, argnums=1)(m0, s0)
    np.testing.assert_allclose(_np(hss), np.asarray(ref_h).sum(axis=0), rtol=1e-12)


def test_normal_gradient_with_float_std_and_float_mean():
    mean = fg.tensor([0.5, 1.0], dtype=fg.float32, requires_grad=True)
    (g,) = fg.grad((fg.normal(mean, 3.0, key=KEY) ** 2).sum(), [mean])
    ref = jax.grad(lambda m: jnp.sum((m + 3.0 * jax.random.normal(KEY, (2,), jnp.float32)) ** 2))(
        np.array([0.5, 1.0], np.float32))
    assert g.dtype == fg.float32
    np.testing.assert_allclose(_np(g), np.asarray(ref), rtol=1e-5)
    std = fg.tensor([0.5, 1.0], dtype=fg.float64, requires_grad=True)
    (gs,) = fg.grad(fg.normal(2.0, std, key=KEY).sum(), [std])
    np.testing.assert_allclose(_np(gs), np.asarray(jax.random.normal(KEY, (2,), jnp.float64)), rtol=1e-15)


def test_bernoulli_randint_and_creation_are_not_differentiable():
    p = fg.full((3,), 0.5, requires_grad=True)
    b = fg.bernoulli(p, key=KEY)
    assert not b.requires_grad and b.grad_fn is None
    assert not fg.bernoulli(p, 0.2, key=KEY).requires_grad
    r = fg.randint(0, 3, (2,), key=KEY)
    assert not r.requires_grad and r.grad_fn is None
    with pytest.raises(TypeError, match="floating point"):
        fg.randint(0, 3, (2,), key=KEY, requires_grad=True)
    with pytest.raises(TypeError, match="floating point"):
        fg.randperm(3, key=KEY, requires_grad=True)
    # a gradient through a bernoulli mask flows only through the multiplication
    x = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    mask = fg.bernoulli(fg.full((3,), 0.5), key=KEY)
    (g,) = fg.grad((x * mask).sum(), [x])
    np.testing.assert_array_equal(_np(g), _np(mask))
    # a float randint can be a leaf that requires grad
    assert fg.randint(0, 3, (2,), key=KEY, dtype=fg.float32, requires_grad=True).requires_grad
