"""fgraph.distributions.transforms, biject_to/transform_to and TransformedDistribution.

Without torch: round trips, codomain membership, and log|det J| against ``slogdet`` of
``jax.jacfwd`` of the forward map. With torch (float64): values, log-dets and their gradients
to 1e-9, and the registry's choices.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
from fgraph.distributions import Normal, constraints
from fgraph.distributions import transforms as T
from fgraph.distributions.constraint_registry import ConstraintRegistry, biject_to, transform_to
from fgraph.distributions.transformed_distribution import TransformedDistribution
from fgraph.distributions.utils import tril_matrix_to_vec

X3 = np.array([0.3, -1.2, 0.7])
X23 = np.array([[0.3, -1.2, 0.7], [1.5, 0.2, -0.4]])
SQ = np.array([[0.3, -1.2, 0.5], [0.7, 1.5, 0.2], [-0.4, 0.9, -0.8]])


def f64(a, requires_grad=False):
    return fg.tensor(np.asarray(a, dtype=np.float64), dtype=fg.float64, requires_grad=requires_grad)


def bijective_cases():
    """(name, transform, x, how to read the square part of y for the Jacobian)."""
    loc, scale = f64([0.5, -1.0, 2.0]), f64([2.0, -0.5, 3.0])
    return [
        ("exp", T.ExpTransform(), X3, None),
        ("sigmoid", T.SigmoidTransform(), X3, None),
        ("tanh", T.TanhTransform(), X3, None),
        ("softplus", T.SoftplusTransform(), X3, None),
        ("affine", T.AffineTransform(loc, scale), X3, None),
        ("affine_number", T.AffineTransform(1.0, -2.5), X3, None),
        ("affine_event", T.AffineTransform(loc, scale, event_dim=1), X3, None),
        ("power", T.PowerTransform(f64([2.0, 0.5, -1.5])), np.exp(X3), None),
        ("compose", T.ComposeTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0)]), X3, None),
        ("independent", T.IndependentTransform(T.SigmoidTransform(), 1), X3, None),
        ("cdf", T.CumulativeDistributionTransform(Normal(f64([0.1]), f64([2.0]))), X3, None),
        ("stick_breaking", T.StickBreakingTransform(), X3, "drop_last"),
        ("corr_cholesky", T.CorrCholeskyTransform(), X3, "tril"),
        ("cat", T.CatTransform([T.ExpTransform(), T.TanhTransform()], dim=0, lengths=[2, 1]), X3, None),
        ("stack", T.StackTransform([T.ExpTransform(), T.SigmoidTransform(), T.AffineTransform(0.0, 3.0)], dim=0),
         X3, None),
    ]


CASES = bijective_cases()


def square_part(y, how):
    if how == "drop_last":
        return y[..., :-1]
    if how == "tril":
        return tril_matrix_to_vec(y, diag=-1)
    return y.reshape(-1)


def _round_trip(t, how, a):
    """Forward, inverse, both log-dets, and slogdet of jax.jacfwd of the forward map (square part)."""

    def forward(b):
        return square_part(t(fg.tensor(b)), how).array

    fx = fg.tensor(a)
    y = t(fx)
    _, logdet = jnp.linalg.slogdet(jax.jacfwd(forward)(a))
    return y.array, t.inv(y).array, t.log_abs_det_jacobian(fx, y).array, t.inv.log_abs_det_jacobian(y, fx).array, logdet


@pytest.fixture(scope="module")
def round_trips():
    # one compiled program for every case: compiling each (or dispatching each op eagerly) costs far more
    def everything(xs):
        return {name: _round_trip(t, how, a) for (name, t, _, how), a in zip(CASES, xs)}

    return jax.jit(everything)([jnp.asarray(c[2]) for c in CASES])


@pytest.mark.parametrize("name,t,x,how", CASES, ids=[c[0] for c in CASES])
def test_bijective_round_trip_codomain_and_jacobian(round_trips, name, t, x, how):
    assert t.bijective
    y, x_back, ldj, inv_ldj, logdet = round_trips[name]
    np.testing.assert_allclose(np.asarray(x_back), x, rtol=1e-10, atol=1e-12)
    assert bool(t.codomain.check(fg.tensor(y)).all())
    assert tuple(y.shape) == t.forward_shape(x.shape) and t.inverse_shape(y.shape) == x.shape
    # the elementwise transforms return one term per entry: their sum is the log-det
    np.testing.assert_allclose(float(ldj.sum()), float(logdet), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(inv_ldj), -np.asarray(ldj), rtol=1e-12)


def test_log_det_shapes_follow_event_dims():
    x = f64(X23)
    for t in (T.ExpTransform(), T.SigmoidTransform(), T.AffineTransform(0.0, f64([1.0, 2.0, 3.0]))):
        assert t.log_abs_det_jacobian(x, t(x)).shape == (2, 3)  # one term per entry
    t = T.AffineTransform(0.0, f64([1.0, 2.0, 3.0]), event_dim=1)
    np.testing.assert_allclose(np.asarray(t.log_abs_det_jacobian(x, t(x))), np.full(2, np.log(6.0)), rtol=1e-12)
    assert T.StickBreakingTransform().log_abs_det_jacobian(x, T.StickBreakingTransform()(x)).shape == (2,)
    assert T.IndependentTransform(T.ExpTransform(), 1).log_abs_det_jacobian(x, x.exp()).tolist() == \
        pytest.approx(X23.sum(-1).tolist(), rel=1e-12)


def test_tanh_log_det_is_stable_in_the_tails():
    t = T.TanhTransform()
    x = f64([-40.0, 40.0], requires_grad=True)
    ldj = t.log_abs_det_jacobian(x, t(x))
    np.testing.assert_allclose(np.asarray(ldj), np.log(4.0) - 80.0, rtol=1e-12)
    (g,) = fg.grad(ldj.sum(), [x])
    np.testing.assert_allclose(np.asarray(g), [2.0, -2.0], rtol=1e-12)  # d/dx log(1 - tanh^2) = -2 tanh


def test_non_bijective_transforms():
    x = f64(X23)
    cases = [(T.AbsTransform(), x), (T.SoftmaxTransform(), x), (T.LowerCholeskyTransform(), f64(SQ)),
             (T.PositiveDefiniteTransform(), f64(SQ))]
    for t, inp in cases:
        assert not t.bijective
        y = t(inp)
        assert bool(t.codomain.check(y).all()), t
        np.testing.assert_allclose(np.asarray(t(t.inv(y))), np.asarray(y), rtol=1e-10, atol=1e-12)
        with pytest.raises(NotImplementedError, match="log_abs_det_jacobian"):
            t.log_abs_det_jacobian(inp, y)
    lower = T.LowerCholeskyTransform()(f64(SQ))
    np.testing.assert_allclose(np.asarray(T.LowerCholeskyTransform().inv(lower)), np.tril(SQ), rtol=1e-12)


def test_reshape_and_shapes():
    t = T.ReshapeTransform((2, 3), (6,))
    x = f64(np.arange(12.0).reshape(2, 2, 3))
    y = t(x)
    assert y.shape == (2, 6) and t.inv(y).shape == (2, 2, 3)
    assert t.log_abs_det_jacobian(x, y).shape == (2,)
    assert t.forward_shape((5, 2, 3)) == (5, 6) and t.inverse_shape((5, 6)) == (5, 2, 3)
    with pytest.raises(ValueError, match="different numbers of elements"):
        T.ReshapeTransform((2, 3), (5,))
    with pytest.raises(ValueError, match="mismatch"):
        t.forward_shape((3, 3))
    assert T.StickBreakingTransform().forward_shape((4, 3)) == (4, 4)
    assert T.CorrCholeskyTransform().forward_shape((6,)) == (4, 4)
    assert T.CorrCholeskyTransform().inverse_shape((2, 4, 4)) == (2, 6)
    with pytest.raises(ValueError, match="D \\* \\(D - 1\\) / 2"):
        T.CorrCholeskyTransform().forward_shape((5,))
    assert T.AffineTransform(f64([1.0, 2.0]), 1.0).forward_shape((3, 1)) == (3, 2)


def test_transform_api_inverse_cache_equality():
    t = T.ExpTransform()
    assert t.inv.inv is t and t.inv is t.inv
    assert repr(t.inv) == "_InverseTransform(ExpTransform())"
    assert t == T.ExpTransform() and t.inv == T.ExpTransform().inv and t != T.SigmoidTransform()
    assert T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 2.0) != T.AffineTransform(1.0, 3.0)
    assert T.AffineTransform(f64([1.0]), 2.0) == T.AffineTransform(f64([1.0]), 2.0)
    assert T.PowerTransform(f64(2.0)) == T.PowerTransform(f64(2.0)) != T.PowerTransform(f64(3.0))
    assert T.ComposeTransform([t, T.SigmoidTransform()]) == T.ComposeTransform([T.ExpTransform(),
                                                                              T.SigmoidTransform()])
    compose = T.ComposeTransform([t, T.AffineTransform(0.0, -1.0)])
    assert compose.inv.inv is compose and compose.sign == -1 and compose.bijective
    assert T.identity_transform.event_dim == 0 and T.identity_transform.sign == 1
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        T.ExpTransform(cache_size=2)
    cached = T.ExpTransform().with_cache(1)
    x = f64(X3)
    y = cached(x)
    assert cached(x) is y and cached.inv(y) is x  # the cached pair, by identity
    assert T.ExpTransform().inv(y) is not x
    assert T.AffineTransform(0.0, 2.0).with_cache(1)._cache_size == 1
    assert T.ComposeTransform([T.ExpTransform()], cache_size=1).parts[0]._cache_size == 1
    assert T.AffineTransform(0.0, f64([-2.0, 3.0])).sign.tolist() == [-1.0, 1.0]
    assert T.AffineTransform(0.0, -2.0).sign == -1 and T.ExpTransform().inv.sign == 1
    assert T.StickBreakingTransform().domain.event_dim == 1 and T.StickBreakingTransform().codomain.event_dim == 1
    with pytest.raises(ValueError, match="different event dims"):
        T.ComposeTransform([T.ReshapeTransform((2, 2), (4,))]).event_dim


def test_compose_event_dims_sum_log_dets():
    t = T.ComposeTransform([T.ExpTransform(), T.StickBreakingTransform()])
    assert t.domain.event_dim == 1 and t.codomain.event_dim == 1
    x = f64(X23)
    y = t(x)
    manual = T.ExpTransform().log_abs_det_jacobian(x, x.exp()).sum(-1) + \
        T.StickBreakingTransform().log_abs_det_jacobian(x.exp(), y)
    np.testing.assert_allclose(np.asarray(t.log_abs_det_jacobian(x, y)), np.asarray(manual), rtol=1e-12)


def test_transforms_are_traceable():
    t = T.ComposeTransform([T.StickBreakingTransform(), T.StickBreakingTransform().inv, T.TanhTransform()])

    def f(a):
        x = fg.tensor(a)
        y = t(x)
        return t.log_abs_det_jacobian(x, y).array

    np.testing.assert_allclose(np.asarray(jax.jit(f)(jnp.asarray(X23))), np.asarray(f(jnp.asarray(X23))),
                               rtol=1e-10)


# -- biject_to / transform_to ---------------------------------------------------------------------------------------
def registry_cases():
    c = constraints
    return [
        (c.real, X23), (c.positive, X23), (c.nonnegative, X23), (c.greater_than(2.0), X23),
        (c.greater_than_eq(-1.0), X23), (c.less_than(3.0), X23), (c.unit_interval, X23),
        (c.interval(-2.0, 5.0), X23), (c.half_open_interval(0.0, 2.0), X23),
        (c.interval(f64([0.0, 1.0, 2.0]), f64([1.0, 3.0, 7.0])), X23),
        (c.simplex, X23), (c.real_vector, X23), (c.independent(c.positive, 1), X23), (c.corr_cholesky, X23),
        (c.cat([c.positive, c.real], dim=-1, lengths=[2, 1]), X23),
        (c.stack([c.positive, c.interval(0.0, 1.0), c.real], dim=-1), X23),
    ]


REGISTRY_CASES = registry_cases()


TRANSFORM_TO_CASES = REGISTRY_CASES + [(constraints.lower_cholesky, SQ), (constraints.positive_definite, SQ),
                                       (constraints.positive_semidefinite, SQ)]


@pytest.fixture(scope="module")
def registry_results():
    def everything(xs):
        bij = []
        for constraint, _ in REGISTRY_CASES:
            t = biject_to(constraint)
            x = fg.tensor(xs[0])
            y = t(x)
            bij.append((y.array, t.inv(y).array, t.log_abs_det_jacobian(x, y).array))
        to = [transform_to(c)(fg.tensor(xs[0] if x is X23 else xs[1])).array for c, x in TRANSFORM_TO_CASES]
        return bij, to

    return jax.jit(everything)([jnp.asarray(X23), jnp.asarray(SQ)])  # one compiled program for every case


@pytest.mark.parametrize("i", range(len(REGISTRY_CASES)), ids=[repr(c[0]) for c in REGISTRY_CASES])
def test_biject_to_lands_in_constraint_and_inverts(registry_results, i):
    constraint, x = REGISTRY_CASES[i]
    assert biject_to(constraint).bijective
    y, x_back, ldj = registry_results[0][i]
    assert bool(constraint.check(fg.tensor(y)).all()), (constraint, y)
    np.testing.assert_allclose(np.asarray(x_back), x, rtol=1e-9, atol=1e-10)
    assert np.all(np.isfinite(np.asarray(ldj)))


def test_transform_to_lands_in_constraint(registry_results):
    for (constraint, _), y in zip(TRANSFORM_TO_CASES, registry_results[1]):
        assert bool(constraint.check(fg.tensor(y)).all()), (constraint, y)
    c = constraints
    assert isinstance(transform_to(c.simplex), T.SoftmaxTransform)
    assert isinstance(transform_to(c.positive_definite), T.PositiveDefiniteTransform)
    assert isinstance(biject_to(c.simplex), T.StickBreakingTransform)
    assert isinstance(biject_to(c.unit_interval), T.SigmoidTransform)
    assert biject_to(c.real) is T.identity_transform
    with pytest.raises(NotImplementedError, match="Cannot transform _LowerCholesky constraints"):
        biject_to(c.lower_cholesky)


def test_registry_register():
    registry = ConstraintRegistry()

    @registry.register(constraints.positive)
    def _positive(constraint):
        return T.SoftplusTransform()

    assert isinstance(registry(constraints.greater_than(0.0)), T.SoftplusTransform)
    registry.register(constraints.real, _exp_factory)
    assert isinstance(registry(constraints.real), T.ExpTransform)
    with pytest.raises(TypeError, match="Constraint subclass or instance"):
        registry.register(int, _exp_factory)


def _exp_factory(constraint):
    return T.ExpTransform()


# -- TransformedDistribution ---------------------------------------------------------------------------------------
def test_transformed_distribution_shapes_and_log_prob():
    loc = f64(X23, requires_grad=True)
    d = TransformedDistribution(Normal(loc, 1.0), [T.StickBreakingTransform()])
    assert d.batch_shape == (2,) and d.event_shape == (4,)
    assert d.has_rsample and d.support.event_dim == 1 and d.base_dist.event_shape == (3,)
    y = d.rsample(key=jax.random.key(0))
    assert y.shape == (2, 4) and bool(d.support.check(y).all())
    x = T.StickBreakingTransform().inv(y)
    ref = Normal(loc, 1.0).log_prob(x).sum(-1) - T.StickBreakingTransform().log_abs_det_jacobian(x, y)
    np.testing.assert_allclose(np.asarray(d.log_prob(y)), np.asarray(ref), rtol=1e-10)
    (g,) = fg.grad(d.log_prob(y.detach()).sum(), [loc])
    np.testing.assert_allclose(np.asarray(g), np.asarray(x - loc), rtol=1e-10, atol=1e-12)
    assert d.expand((3, 2)).batch_shape == (3, 2) and d.expand((3, 2)).base_dist.batch_shape == (3, 2)
    # a broadcasting transform expands the base
    e = TransformedDistribution(Normal(0.0, 1.0), [T.AffineTransform(f64([1.0, 2.0]), 2.0)])
    assert e.batch_shape == (2,) and e.base_dist.batch_shape == (2,)
    # a decreasing transform flips the cdf
    flip = TransformedDistribution(Normal(f64(0.0), f64(1.0)), [T.AffineTransform(0.0, -1.0)])
    v = f64([0.3, -1.0])
    np.testing.assert_allclose(np.asarray(flip.cdf(v)), np.asarray(Normal(f64(0.0), f64(1.0)).cdf(v)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(flip.icdf(flip.cdf(v))), np.asarray(v), rtol=1e-10)
    with pytest.raises(ValueError, match="Transform or a list"):
        TransformedDistribution(Normal(0.0, 1.0), ["exp"])
    with pytest.raises(ValueError, match="at least 1"):
        TransformedDistribution(Normal(0.0, 1.0), [T.StickBreakingTransform()])


# -- torch as oracle ------------------------------------------------------------------------------------------------
def torch_twin(t, torch):
    TT = torch.distributions.transforms

    def conv(v):
        return torch.tensor(np.asarray(v), dtype=torch.float64) if isinstance(v, fg.Tensor) else v

    name = type(t).__name__
    if name == "_InverseTransform":
        return torch_twin(t.inv, torch).inv
    if name == "ComposeTransform":
        return TT.ComposeTransform([torch_twin(p, torch) for p in t.parts])
    if name == "IndependentTransform":
        return TT.IndependentTransform(torch_twin(t.base_transform, torch), t.reinterpreted_batch_ndims)
    if name == "AffineTransform":
        return TT.AffineTransform(conv(t.loc), conv(t.scale), event_dim=t.event_dim)
    if name == "PowerTransform":
        return TT.PowerTransform(conv(t.exponent))
    if name == "CumulativeDistributionTransform":
        d = t.distribution
        return TT.CumulativeDistributionTransform(torch.distributions.Normal(conv(d.loc), conv(d.scale)))
    if name == "CatTransform":
        return TT.CatTransform([torch_twin(p, torch) for p in t.transforms], t.dim, t.lengths)
    if name == "StackTransform":
        return TT.StackTransform([torch_twin(p, torch) for p in t.transforms], t.dim)
    return getattr(TT, name)()


@pytest.mark.parametrize("name,t,x,how", CASES, ids=[c[0] for c in CASES])
def test_transforms_against_torch(name, t, x, how):
    torch = pytest.importorskip("torch")
    tt = torch_twin(t, torch)
    fx, tx = f64(x, True), torch.tensor(x, dtype=torch.float64, requires_grad=True)
    fy, ty = t(fx), tt(tx)
    np.testing.assert_allclose(np.asarray(fy), ty.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.asarray(t.inv(fy)), tt.inv(ty).detach().numpy(), rtol=1e-10, atol=1e-12)
    fl, tl = t.log_abs_det_jacobian(fx, fy), tt.log_abs_det_jacobian(tx, ty)
    assert tuple(fl.shape) == tuple(tl.shape)
    np.testing.assert_allclose(np.asarray(fl), tl.detach().numpy(), rtol=1e-9, atol=1e-12)
    (fg_g,) = fg.grad((fl.sum() + fy.sum()), [fx])
    (t_g,) = torch.autograd.grad(tl.sum() + ty.sum(), [tx])
    np.testing.assert_allclose(np.asarray(fg_g), t_g.numpy(), rtol=1e-9, atol=1e-12)
    assert t.bijective == tt.bijective
    assert t.forward_shape(fx.shape) == tuple(tt.forward_shape(tx.shape))


def test_non_bijective_against_torch():
    torch = pytest.importorskip("torch")
    TT = torch.distributions.transforms
    for t, tt, x in ((T.AbsTransform(), TT.AbsTransform(), X23), (T.SoftmaxTransform(), TT.SoftmaxTransform(), X23),
                     (T.LowerCholeskyTransform(), TT.LowerCholeskyTransform(), SQ),
                     (T.PositiveDefiniteTransform(), TT.PositiveDefiniteTransform(), SQ)):
        fy, ty = t(f64(x)), tt(torch.tensor(x))
        np.testing.assert_allclose(np.asarray(fy), ty.numpy(), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(t.inv(fy)), tt.inv(ty).numpy(), rtol=1e-10, atol=1e-12)


def test_registry_matches_torch():
    torch = pytest.importorskip("torch")
    tc = torch.distributions.constraints
    tbij, ttra = torch.distributions.biject_to, torch.distributions.transform_to
    pairs = [(constraints.positive, tc.positive), (constraints.greater_than(2.0), tc.greater_than(2.0)),
             (constraints.less_than(3.0), tc.less_than(3.0)), (constraints.unit_interval, tc.unit_interval),
             (constraints.interval(-2.0, 5.0), tc.interval(-2.0, 5.0)), (constraints.simplex, tc.simplex),
             (constraints.corr_cholesky, tc.corr_cholesky), (constraints.real_vector, tc.real_vector)]
    x = torch.tensor(X23)
    for ours, theirs in pairs:
        for reg, treg in ((biject_to, tbij), (transform_to, ttra)):
            t, tt = reg(ours), treg(theirs)
            assert repr(t).replace(" ", "") == repr(tt).replace(" ", "")
            fy, ty = t(f64(X23)), tt(x)
            np.testing.assert_allclose(np.asarray(fy), ty.numpy(), rtol=1e-12)
            if t.bijective:
                np.testing.assert_allclose(np.asarray(t.log_abs_det_jacobian(f64(X23), fy)),
                                           tt.log_abs_det_jacobian(x, ty).numpy(), rtol=1e-10)
