"""The gamma family: Gamma, Chi2, Beta, Dirichlet, StudentT, VonMises, Poisson, InverseGamma, Kumaraswamy,
FisherSnedecor, the gamma sampler's implicit gradient, and their KL divergences.

torch.distributions is the oracle where installed (float64 values and gradients to 1e-9); without it,
jax.scipy.stats / scipy.stats, closed forms, the implicit-function theorem on the gamma CDF, and sample
statistics (moments, KS, pathwise gradients against the closed-form moments' gradients).
"""
import math

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import jax.scipy.stats as jstats
import numpy as np
import pytest
import scipy.stats as sstats

import fgraph as fg
from fgraph.distributions import Normal, kl_divergence
from fgraph.distributions import _kl_gamma  # noqa: F401  (registers the closed forms)
from fgraph.distributions._kl_common import _kl_expfamily_expfamily
from fgraph.distributions._ops_gamma import gammainc, standard_gamma
from fgraph.distributions.beta import Beta
from fgraph.distributions.chi2 import Chi2
from fgraph.distributions.dirichlet import Dirichlet
from fgraph.distributions.exp_family import ExponentialFamily
from fgraph.distributions.exponential import Exponential
from fgraph.distributions.fishersnedecor import FisherSnedecor
from fgraph.distributions.gamma import Gamma
from fgraph.distributions.gumbel import Gumbel
from fgraph.distributions.inverse_gamma import InverseGamma
from fgraph.distributions.kumaraswamy import Kumaraswamy
from fgraph.distributions.poisson import Poisson
from fgraph.distributions.studentT import StudentT
from fgraph.distributions.uniform import Uniform
from fgraph.distributions.von_mises import VonMises

from dist_harness import check_ks, check_moments, check_pathwise_gradients, compare_with_torch, draw, fg_params

# one small pool of shapes: batch (2, 3) from (1, 3) x (2, 1), values of shape (3,)
CONC = np.array([[0.5, 1.5, 3.0]])
RATE = np.array([[0.7], [2.0]])
POS_VALUE = np.array([0.3, 1.2, 2.5])
UNIT_VALUE = np.array([0.2, 0.55, 0.9])
DIR_CONC = np.array([[0.5, 1.5, 3.0], [0.3, 0.6, 0.9]])  # the second row has its mode at a vertex
DIR_VALUE = np.array([0.2, 0.3, 0.5])
DF = np.array([[0.8, 1.5, 5.0]])
LOC = np.array([[0.3], [-1.2]])
ANGLE = np.array([0.1, -2.0, 3.0])
VM_CONC = np.array([[0.5, 2.0, 6.0]])


def _t(a):
    return fg.tensor(np.asarray(a), dtype=fg.float64)


def _close(a, b, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=rtol, atol=atol)


# -- the gamma sampler's implicit gradient -------------------------------------------------------------------------
def test_standard_gamma_gradient_is_the_implicit_function_derivative_of_the_cdf():
    alpha = fg.tensor([0.3, 1.0, 2.5, 9.0], dtype=fg.float64, requires_grad=True)
    x = standard_gamma(alpha, key=jax.random.key(3))
    (g,) = fg.grad(x.sum(), [alpha])
    a, xs, h = np.asarray(alpha.detach()), np.asarray(x.detach()), 1e-6
    d_alpha = (jsp.gammainc(a + h, xs) - jsp.gammainc(a - h, xs)) / (2 * h)
    d_x = (jsp.gammainc(a, xs + h * xs) - jsp.gammainc(a, xs - h * xs)) / (2 * h * xs)
    _close(g, -d_alpha / d_x, rtol=1e-6)
    # the log-space draw differentiates to (dx/dalpha) / x for the same draw
    lx = standard_gamma(alpha, key=jax.random.key(3), log_space=True)
    (gl,) = fg.grad(lx.sum(), [alpha])
    xl = np.exp(np.asarray(lx.detach()))
    _close(gl, -(jsp.gammainc(a + h, xl) - jsp.gammainc(a - h, xl)) / (2 * h)
           / ((jsp.gammainc(a, xl + h * xl) - jsp.gammainc(a, xl - h * xl)) / (2 * h * xl)) / xl, rtol=1e-6)


def test_standard_gamma_float32_and_second_derivative_error():
    alpha = fg.tensor([0.5, 4.0], requires_grad=True)
    x = standard_gamma(alpha, key=jax.random.key(0))
    assert x.dtype == fg.float32
    (g,) = fg.grad(x.sum(), [alpha], create_graph=True)
    ref = jax.grad(lambda a: jax.random.gamma(jax.random.key(0), a, (2,), jnp.float32).sum())(
        jnp.array([0.5, 4.0], jnp.float32))
    _close(g.detach(), ref, rtol=1e-5)
    with pytest.raises(NotImplementedError, match="standard_gamma_grad .* not implemented"):
        fg.grad(g.sum(), [alpha])
    with pytest.raises(TypeError, match="floating point Tensor"):
        standard_gamma(fg.tensor([1, 2]), key=jax.random.key(0))


def test_gammainc_gradients():
    a = fg.tensor([0.5, 2.0, 7.0], dtype=fg.float64, requires_grad=True)
    x = fg.tensor([0.3, 1.5, 9.0], dtype=fg.float64, requires_grad=True)
    ga, gx = fg.grad(gammainc(a, x).sum(), [a, x])
    ref = jax.grad(lambda a, x: jsp.gammainc(a, x).sum(), argnums=(0, 1))(np.asarray(a.detach()),
                                                                           np.asarray(x.detach()))
    _close(ga, ref[0], rtol=1e-9)
    _close(gx, ref[1], rtol=1e-12)


# -- without torch: densities, cdfs and entropies against jax.scipy / scipy ----------------------------------------
def test_gamma_and_chi2_match_jax_scipy():
    p = fg_params({"concentration": CONC, "rate": RATE})
    d, v = Gamma(p["concentration"], p["rate"]), _t(POS_VALUE)
    assert d.batch_shape == (2, 3) and d.event_shape == () and d.has_rsample
    _close(d.log_prob(v), jstats.gamma.logpdf(POS_VALUE, CONC, scale=1 / RATE))
    _close(d.cdf(v), jstats.gamma.cdf(POS_VALUE, CONC, scale=1 / RATE))
    _close(d.entropy(), np.broadcast_to(sstats.gamma.entropy(CONC, scale=1 / RATE), (2, 3)))
    _close(d.entropy(), ExponentialFamily.entropy(d))
    grads = fg.grad(d.log_prob(v).sum(), [p["concentration"], p["rate"]])
    ref = jax.grad(lambda c, r: jstats.gamma.logpdf(POS_VALUE, c, scale=1 / r).sum(), argnums=(0, 1))(CONC, RATE)
    _close(grads[0], ref[0])
    _close(grads[1], ref[1])
    df = _t([1.0, 3.0, 7.5])
    c = Chi2(df)
    _close(c.log_prob(v), jstats.chi2.logpdf(POS_VALUE, np.array([1.0, 3.0, 7.5])))
    _close(c.df, [1.0, 3.0, 7.5])
    assert isinstance(c.expand((4, 3)), Chi2) and c.expand((4, 3)).batch_shape == (4, 3)


def test_beta_dirichlet_match_jax_scipy():
    p = fg_params({"c1": CONC, "c0": RATE})
    d, v = Beta(p["c1"], p["c0"]), _t(UNIT_VALUE)
    _close(d.log_prob(v), jstats.beta.logpdf(UNIT_VALUE, CONC, RATE))
    _close(d.entropy(), sstats.beta.entropy(np.broadcast_to(CONC, (2, 3)), np.broadcast_to(RATE, (2, 3))))
    _close(d.mean, sstats.beta.mean(CONC, RATE) + 0 * RATE)
    _close(d.variance, sstats.beta.var(CONC, RATE) + 0 * RATE)
    (g,) = fg.grad(d.log_prob(v).sum(), [p["c1"]])
    _close(g, jax.grad(lambda a: jstats.beta.logpdf(UNIT_VALUE, a, RATE).sum())(CONC))
    assert Beta(2.0, 3.0).batch_shape == () and Beta(2.0, 3.0).concentration1.item() == 2.0
    dd = Dirichlet(_t(DIR_CONC))
    assert dd.batch_shape == (2,) and dd.event_shape == (3,)
    _close(dd.log_prob(_t(DIR_VALUE)), [jstats.dirichlet.logpdf(DIR_VALUE, a) for a in DIR_CONC])
    _close(dd.entropy(), [sstats.dirichlet.entropy(a) for a in DIR_CONC])
    _close(dd.variance, [sstats.dirichlet.var(a) for a in DIR_CONC])
    _close(dd.mode, [[0.0, 0.5 / 2.5, 2.0 / 2.5], [1.0, 0.0, 0.0]])


def test_studentt_poisson_vonmises_match_scipy():
    p = fg_params({"df": DF, "loc": LOC, "scale": RATE})
    d, v = StudentT(p["df"], p["loc"], p["scale"]), _t(POS_VALUE)
    _close(d.log_prob(v), jstats.t.logpdf(POS_VALUE, DF, LOC, RATE))
    _close(d.entropy(), sstats.t.entropy(np.broadcast_to(DF, (2, 3)), scale=np.broadcast_to(RATE, (2, 3))))
    mean, var = np.asarray(d.mean), np.asarray(d.variance)
    assert np.isnan(mean[:, 0]).all() and np.isinf(var[:, 1]).all() and np.isnan(var[:, 0]).all()
    _close(var[:, 2], RATE[:, 0] ** 2 * 5.0 / 3.0)
    rate = _t([0.0, 0.5, 4.0])
    counts = _t([0.0, 2.0, 5.0])
    _close(Poisson(rate).log_prob(counts), jstats.poisson.logpmf(np.array([0.0, 2.0, 5.0]),
                                                                 np.array([0.0, 0.5, 4.0])))
    vm = VonMises(_t(LOC), _t(VM_CONC))
    _close(vm.log_prob(_t(ANGLE)), sstats.vonmises.logpdf(ANGLE, VM_CONC, loc=LOC), rtol=2e-7)
    circ = [1 - sstats.vonmises.expect(np.cos, (k,)) for k in VM_CONC[0]]
    _close(vm.variance, np.broadcast_to(circ, (2, 3)), rtol=2e-6)


def test_inverse_gamma_kumaraswamy_fisher_snedecor_match_scipy():
    ig = InverseGamma(_t(CONC + 2), _t(RATE))
    v = _t(POS_VALUE)
    _close(ig.log_prob(v), sstats.invgamma.logpdf(POS_VALUE, CONC + 2, scale=RATE))
    _close(ig.cdf(v), sstats.invgamma.cdf(POS_VALUE, CONC + 2, scale=RATE))
    _close(ig.entropy(), np.broadcast_to(sstats.invgamma.entropy(CONC + 2, scale=RATE), (2, 3)))
    _close(ig.variance, np.where(CONC + 2 > 2, sstats.invgamma.var(CONC + 2, scale=RATE), np.inf))
    a, b = np.array([2.0, 0.5, 3.0]), np.array([3.0, 2.0, 0.8])
    k, u = Kumaraswamy(_t(a), _t(b)), _t(UNIT_VALUE)
    pdf = a * b * UNIT_VALUE ** (a - 1) * (1 - UNIT_VALUE ** a) ** (b - 1)
    _close(k.log_prob(u), np.log(pdf))
    _close(k.cdf(u), 1 - (1 - UNIT_VALUE ** a) ** b)
    _close(k.icdf(k.cdf(u)), UNIT_VALUE)
    mode = np.asarray(k.mode)
    _close(mode[0], ((2.0 - 1) / (2.0 * 3.0 - 1)) ** 0.5)
    assert np.isnan(mode[1:]).all()
    f = FisherSnedecor(_t([3.0, 6.0, 1.5]), _t([2.0, 10.0, 5.0]))
    _close(f.log_prob(v), sstats.f.logpdf(POS_VALUE, [3.0, 6.0, 1.5], [2.0, 10.0, 5.0]))
    mean, var = np.asarray(f.mean), np.asarray(f.variance)
    assert np.isnan(mean[0]) and np.isnan(var[:2]).sum() == 1 and np.isnan(var[0])
    _close(mean[1:], [10.0 / 8.0, 5.0 / 3.0])
    _close(var[2], sstats.f.var(1.5, 5.0))


# -- sampling statistics and pathwise gradients ---------------------------------------------------------------------
# every sampler below draws N x 2 (a batch of two): one compiled sampler per kind, shared by the checks
N = 4000


def _pair(a, b):
    return fg.tensor([a, b], dtype=fg.float64)


def test_sampling_statistics():
    g = Gamma(_pair(0.3, 2.0), _pair(1.5, 0.5))
    check_moments(g, n=N)
    check_ks(draw(g, N, seed=1)[:, 1], lambda x: sstats.gamma.cdf(x, 2.0, scale=2.0))
    g32 = Gamma(fg.tensor([0.3, 2.0]), fg.tensor([1.5, 0.5]))
    x32 = g32.sample((N,), key=jax.random.key(4))
    assert x32.dtype == fg.float32 and bool((x32 > 0).all())
    check_moments(g32, n=N)
    check_moments(Chi2(_pair(1.0, 5.0)), n=N)
    b = Beta(_pair(0.5, 2.0), _pair(2.0, 3.0))
    check_moments(b, n=N)
    check_ks(draw(b, N, seed=2)[:, 0], lambda x: sstats.beta.cdf(x, 0.5, 2.0))
    check_moments(Dirichlet(fg.tensor([[0.2, 4.0], [1.0, 1.0]], dtype=fg.float64)), n=N)
    t = StudentT(_pair(9.0, 3.0), _pair(1.0, 0.0), _pair(2.0, 1.0))
    check_moments(StudentT(_pair(9.0, 12.0), _pair(1.0, 0.0), _pair(2.0, 1.0)), n=N)  # df > 8: a finite m4 se
    check_ks(draw(t, N, seed=3)[:, 1], lambda x: sstats.t.cdf(x, 3.0))
    check_moments(Poisson(_pair(0.5, 6.0)), n=N)
    check_moments(InverseGamma(_pair(9.0, 12.0), _pair(2.0, 1.0)), n=N)
    check_moments(Kumaraswamy(_pair(2.0, 0.5), _pair(3.0, 0.8)), n=N)
    check_moments(FisherSnedecor(_pair(4.0, 6.0), _pair(14.0, 20.0)), n=N)
    vm = VonMises(_pair(1.0, -2.5), _pair(0.5, 8.0))
    x = draw(vm, N, seed=5)
    assert x.min() >= -math.pi and x.max() < math.pi
    centred = (x - np.array([1.0, -2.5]) + math.pi) % (2 * math.pi) - math.pi  # scipy's support is loc +- pi
    check_ks(centred[:, 0], lambda t: sstats.vonmises.cdf(t, 0.5))
    check_ks(centred[:, 1], lambda t: sstats.vonmises.cdf(t, 8.0))
    small = VonMises(fg.tensor([0.0, 0.0]), fg.tensor([1e-6, 1e-3]))  # float32, tiny kappa: no hang, near uniform
    check_ks(np.asarray(small.sample((N,), key=jax.random.key(6)))[:, 0], lambda t: (t + math.pi) / (2 * math.pi))


def test_pathwise_gradients():
    # the harness differentiates all N draws 40 times, and the implicit gradient
    # (jax.lax.random_gamma_grad, a vectorised series) is costly on CPU: N = 4000
    check_pathwise_gradients(Gamma, {"concentration": np.array([0.4, 3.0]), "rate": np.array([1.5, 0.5])}, n=N)
    check_pathwise_gradients(Chi2, {"df": np.array([1.0, 6.0])}, n=N)
    check_pathwise_gradients(Beta, {"concentration1": np.array([0.5, 2.0]), "concentration0": np.array([0.7, 3.0])},
                             n=N)
    check_pathwise_gradients(Dirichlet, {"concentration": np.array([[0.3, 4.0], [1.0, 2.0]])}, n=N)
    check_pathwise_gradients(StudentT, {"df": np.array([6.0, 9.0]), "loc": np.array([0.5, 0.0]),
                                        "scale": np.array([2.0, 1.0])}, n=N)


def test_sampling_is_traceable_and_shapes():
    d = Gamma(_pair(1.0, 2.0), 1.0)
    jitted = jax.jit(lambda k: d.rsample((N,), key=k).array)
    np.testing.assert_array_equal(np.asarray(jitted(jax.random.key(0))),
                                  np.asarray(d.rsample((N,), key=jax.random.key(0))))
    vm = VonMises(_pair(0.0, 1.0), _pair(1.0, 2.0))
    batched = jax.vmap(lambda k: vm.sample((N,), key=k).array)(jax.random.split(jax.random.key(1), 2))
    assert batched.shape == (2, N, 2)
    fg.manual_seed(0)
    a = Dirichlet(fg.ones(2, 2, dtype=fg.float64)).sample((N,))
    fg.manual_seed(0)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(Dirichlet(fg.ones(2, 2, dtype=fg.float64)).sample((N,))))
    assert a.shape == (N, 2, 2)
    assert Beta(_pair(1.0, 1.0), 1.0).sample((N,), key=jax.random.key(0)).shape == (N, 2)
    assert Poisson(_pair(1.0, 1.0)).sample((N,), key=jax.random.key(0)).shape == (N, 2)
    for dist in (Gamma(fg.ones(3), 1.0), Beta(fg.ones(3), 1.0), StudentT(fg.ones(3)), VonMises(fg.zeros(3), 1.0),
                 Poisson(fg.ones(3)), Dirichlet(fg.ones(3, 2)), InverseGamma(fg.ones(3), 1.0),
                 Kumaraswamy(fg.ones(3), 1.0), FisherSnedecor(fg.ones(3), 1.0), Chi2(fg.ones(3))):
        e = dist.expand((4, 3))
        assert type(e) is type(dist) and e.batch_shape == (4, 3) and e.event_shape == dist.event_shape
        assert e._validate_args == dist._validate_args
    assert Gamma(fg.ones(3), 1.0).expand((4, 3)).concentration.shape == (4, 3)
    assert not VonMises(0.0, 1.0).has_rsample and not Poisson(1.0).has_rsample
    with pytest.raises(NotImplementedError, match="has no reparameterised sampler"):
        Poisson(fg.ones(2)).rsample()


def test_validation_errors():
    with pytest.raises(ValueError, match=r"parameter concentration .* GreaterThan\(lower_bound=0.0\)"):
        Gamma(fg.tensor([-1.0]), 1.0)
    with pytest.raises(ValueError, match=r"parameter df .* GreaterThan"):
        Chi2(fg.tensor([0.0]))
    with pytest.raises(ValueError, match=r"parameter concentration0 .* GreaterThan"):
        Beta(fg.tensor([1.0]), fg.tensor([-2.0]))
    with pytest.raises(ValueError, match=r"parameter concentration .* IndependentConstraint"):
        Dirichlet(fg.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match="at least one-dimensional"):
        Dirichlet(fg.tensor(1.0))
    with pytest.raises(ValueError, match=r"parameter rate .* GreaterThanEq"):
        Poisson(fg.tensor([-1.0]))
    with pytest.raises(ValueError, match=r"parameter scale .* GreaterThan"):
        StudentT(fg.tensor([2.0]), 0.0, -1.0)
    with pytest.raises(ValueError, match=r"parameter concentration .* GreaterThan"):
        VonMises(0.0, fg.tensor([-1.0]))
    with pytest.raises(ValueError, match=r"support \(GreaterThanEq"):
        Gamma(fg.ones(2), 1.0).log_prob(fg.tensor([-1.0, 1.0]))
    with pytest.raises(ValueError, match=r"support \(Interval"):
        Beta(fg.ones(2), 1.0).log_prob(fg.tensor([1.5, 0.5]))
    with pytest.raises(ValueError, match=r"support \(Simplex"):
        Dirichlet(fg.ones(2)).log_prob(fg.tensor([0.2, 0.2]))
    with pytest.raises(ValueError, match=r"support \(IntegerGreaterThan"):
        Poisson(fg.ones(2)).log_prob(fg.tensor([0.5, 1.0]))
    Gamma(fg.ones(2), 1.0, validate_args=False).log_prob(fg.tensor([-1.0, 1.0]))  # no check when off


# -- KL divergences without torch -----------------------------------------------------------------------------------
def test_kl_closed_forms_equal_bregman_divergences():
    pairs = [
        (Gamma(_t([0.5, 3.0]), _t([2.0, 0.7])), Gamma(_t([1.5, 2.0]), _t([1.0, 3.0]))),
        (Beta(_t([0.5, 3.0]), _t([2.0, 0.7])), Beta(_t([1.5, 2.0]), _t([1.0, 3.0]))),
        (Dirichlet(_t(DIR_CONC)), Dirichlet(_t(DIR_CONC[::-1]))),
        (Poisson(_t([0.5, 3.0])), Poisson(_t([2.0, 0.7]))),
    ]
    for p, q in pairs:
        _close(kl_divergence(p, q), _kl_expfamily_expfamily(p, q), rtol=1e-9)
    ig_p, ig_q = InverseGamma(_t([2.0]), _t([1.0])), InverseGamma(_t([3.0]), _t([0.5]))
    _close(kl_divergence(ig_p, ig_q), kl_divergence(ig_p.base_dist, ig_q.base_dist))
    assert np.isinf(np.asarray(kl_divergence(Gamma(_t([1.0]), 1.0), Beta(_t([1.0]), 1.0)))).all()
    assert np.isinf(np.asarray(kl_divergence(Normal(_t([1.0]), 1.0), Gamma(_t([1.0]), 1.0)))).all()
    # a cross pair against Monte Carlo: KL(Gamma || Normal) = E_p[log p - log q]
    p, q = Gamma(_t([3.0]), _t([2.0])), Normal(_t([1.0]), _t([0.8]))
    x = p.sample((20000,), key=jax.random.key(7))
    terms = np.asarray(p.log_prob(x) - q.log_prob(x))
    assert abs(terms.mean() - kl_divergence(p, q).item()) < 5 * terms.std() / math.sqrt(20000)


# -- torch as oracle ------------------------------------------------------------------------------------------------
def _cases(torch):
    td = torch.distributions
    no_cdf = ("log_prob", "entropy", "mean", "mode", "variance", "stddev", "icdf")
    return [
        (Gamma, td.Gamma, {"concentration": CONC, "rate": RATE}, POS_VALUE, no_cdf),
        (Chi2, td.Chi2, {"df": CONC * 3}, POS_VALUE, no_cdf),
        (Beta, td.Beta, {"concentration1": CONC, "concentration0": RATE}, UNIT_VALUE, None),
        (Dirichlet, td.Dirichlet, {"concentration": DIR_CONC}, DIR_VALUE, None),
        (StudentT, td.StudentT, {"df": DF, "loc": LOC, "scale": RATE}, POS_VALUE, None),
        (VonMises, td.VonMises, {"loc": LOC, "concentration": VM_CONC}, ANGLE, None),
        (Poisson, td.Poisson, {"rate": np.array([[0.5, 2.0, 4.5]])}, np.array([0.0, 2.0, 5.0]), None),
        (InverseGamma, td.InverseGamma, {"concentration": CONC + 1.6, "rate": RATE}, POS_VALUE, no_cdf),
        (Kumaraswamy, td.Kumaraswamy, {"concentration1": CONC + 0.5, "concentration0": RATE + 0.4}, UNIT_VALUE,
         ("log_prob", "entropy", "cdf", "mean", "variance", "stddev")),
        (FisherSnedecor, td.FisherSnedecor, {"df1": CONC * 4, "df2": np.array([[1.5], [9.0]])}, POS_VALUE, None),
    ]


def test_against_torch_values_and_gradients():
    torch = pytest.importorskip("torch")
    for ours, theirs, params, value, methods in _cases(torch):
        kwargs = {} if methods is None else {"methods": methods}
        compare_with_torch(ours, theirs, params, value, value_grad=True, **kwargs)
    compare_with_torch(Gamma, torch.distributions.Gamma, {"concentration": CONC, "rate": RATE}, POS_VALUE,
                       methods=("log_prob", "entropy"), second_order=True)
    compare_with_torch(Beta, torch.distributions.Beta, {"concentration1": CONC, "concentration0": RATE}, UNIT_VALUE,
                       methods=("log_prob", "entropy"), second_order=True)
    compare_with_torch(Kumaraswamy, torch.distributions.Kumaraswamy,
                       {"concentration1": CONC + 0.5, "concentration0": RATE + 0.4}, UNIT_VALUE, methods=("icdf",))


def test_cdf_against_torch():
    """torch's gammainc has no derivative in the concentration: compare cdf values, and gradients in rate/value."""
    torch = pytest.importorskip("torch")
    for ours, theirs, conc in ((Gamma, torch.distributions.Gamma, CONC),
                               (InverseGamma, torch.distributions.InverseGamma, CONC + 1.6)):
        rate, value = _t(RATE).requires_grad_(), _t(POS_VALUE).requires_grad_()
        t_rate = torch.tensor(RATE, requires_grad=True)
        t_value = torch.tensor(POS_VALUE, requires_grad=True)
        f_cdf = ours(_t(conc), rate).cdf(value)
        t_cdf = theirs(torch.tensor(conc), t_rate).cdf(t_value)
        _close(f_cdf, t_cdf.detach().numpy(), rtol=1e-9)
        for fg_g, t_g in zip(fg.grad(f_cdf.sum(), [rate, value]), torch.autograd.grad(t_cdf.sum(), [t_rate, t_value])):
            _close(fg_g, t_g.numpy(), rtol=1e-9)
    chi = Chi2(_t([1.0, 4.0])).cdf(_t([0.5, 3.0]))
    _close(chi, torch.distributions.Chi2(torch.tensor([1.0, 4.0], dtype=torch.float64)).cdf(
        torch.tensor([0.5, 3.0], dtype=torch.float64)).numpy(), rtol=1e-9)


def test_error_messages_equal_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = None, None
    try:
        Gamma(-1.0, 1.0)
    except ValueError as e:
        ours = str(e)
    try:
        torch.distributions.Gamma(-1.0, 1.0)
    except ValueError as e:
        theirs = str(e)
    assert ours == theirs


def _kl_pairs():
    p_gamma = {"concentration": np.array([0.5, 3.0]), "rate": np.array([2.0, 0.7])}
    q_gamma = {"concentration": np.array([1.5, 2.0]), "rate": np.array([1.0, 3.0])}
    p_beta = {"concentration1": np.array([0.5, 3.0]), "concentration0": np.array([2.0, 0.7])}
    q_beta = {"concentration1": np.array([1.5, 2.0]), "concentration0": np.array([1.0, 3.0])}
    normal = {"loc": np.array([0.3, -1.0]), "scale": np.array([0.8, 2.0])}
    expo = {"rate": np.array([0.5, 2.0])}
    unit = {"low": np.array([0.0, -0.5]), "high": np.array([1.0, 2.0])}
    inside = {"low": np.array([0.1, 0.3]), "high": np.array([0.6, 0.9])}
    positive = {"low": np.array([0.1, -0.3]), "high": np.array([0.6, 2.0])}
    gumbel = {"loc": np.array([0.3, -1.0]), "scale": np.array([0.8, 2.0])}
    return [
        ("Gamma", p_gamma, "Gamma", q_gamma), ("Beta", p_beta, "Beta", q_beta),
        ("Dirichlet", {"concentration": DIR_CONC}, "Dirichlet", {"concentration": DIR_CONC[::-1].copy()}),
        ("Poisson", expo, "Poisson", {"rate": np.array([1.5, 0.3])}),
        ("InverseGamma", p_gamma, "InverseGamma", q_gamma),
        ("Beta", p_beta, "Normal", normal), ("Gamma", p_gamma, "Normal", normal),
        ("Normal", normal, "Beta", q_beta), ("Normal", normal, "Gamma", q_gamma),
        ("Beta", p_beta, "Gamma", q_gamma), ("Gamma", p_gamma, "Beta", q_beta),
        ("Beta", p_beta, "Exponential", expo), ("Exponential", expo, "Beta", q_beta),
        ("Exponential", expo, "Gamma", q_gamma), ("Gamma", p_gamma, "Exponential", expo),
        ("Beta", p_beta, "Uniform", unit), ("Gamma", p_gamma, "Uniform", unit),
        ("Uniform", inside, "Beta", q_beta), ("Uniform", unit, "Beta", q_beta),
        ("Uniform", positive, "Gamma", q_gamma),
        ("Gamma", p_gamma, "Gumbel", gumbel), ("Gumbel", gumbel, "Beta", q_beta), ("Gumbel", gumbel, "Gamma", q_gamma),
    ]


_FG_CLASSES = {c.__name__: c for c in (Gamma, Beta, Dirichlet, Poisson, InverseGamma, Normal, Exponential, Uniform,
                                        Gumbel)}


def test_kl_against_torch():
    torch = pytest.importorskip("torch")
    for p_name, p_params, q_name, q_params in _kl_pairs():
        fp, fq = fg_params(p_params), fg_params(q_params)
        tp = {k: torch.tensor(v, requires_grad=True) for k, v in p_params.items()}
        tq = {k: torch.tensor(v, requires_grad=True) for k, v in q_params.items()}
        f_kl = kl_divergence(_FG_CLASSES[p_name](**fp), _FG_CLASSES[q_name](**fq))
        t_kl = torch.distributions.kl_divergence(getattr(torch.distributions, p_name)(**tp),
                                                 getattr(torch.distributions, q_name)(**tq))
        msg = f"KL({p_name} || {q_name})"
        np.testing.assert_allclose(np.asarray(f_kl), t_kl.detach().numpy(), rtol=1e-9, atol=1e-12, err_msg=msg)
        if not np.isfinite(t_kl.detach().numpy()).all():
            continue
        f_in, t_in = [*fp.values(), *fq.values()], [*tp.values(), *tq.values()]
        f_g = fg.grad(f_kl.sum(), f_in, allow_unused=True, materialize_grads=True)
        t_g = torch.autograd.grad(t_kl.sum(), t_in, allow_unused=True, materialize_grads=True)
        for i, (a, b) in enumerate(zip(f_g, t_g)):
            np.testing.assert_allclose(np.asarray(a), b.numpy(), rtol=1e-7, atol=1e-10, err_msg=f"{msg} grad {i}")


def test_dirichlet_gradient_matches_torch_rsample_in_expectation():
    """Per sample the transports differ; the expected gradient of E[f(x)] must agree (f = x_0 * x_1 here)."""
    torch = pytest.importorskip("torch")
    conc = np.array([0.6, 1.2, 2.5])
    a = fg.tensor(conc, dtype=fg.float64, requires_grad=True)
    x = Dirichlet(a).rsample((20000,), key=jax.random.key(8))
    (ours,) = fg.grad((x[:, 0] * x[:, 1]).mean(), [a])
    torch.manual_seed(0)
    ta = torch.tensor(conc, requires_grad=True)
    tx = torch.distributions.Dirichlet(ta).rsample((20000,))
    (theirs,) = torch.autograd.grad((tx[:, 0] * tx[:, 1]).mean(), [ta])
    # exact: E[x0 x1] = a0 a1 / (s (s + 1)), differentiated
    exact = jax.grad(lambda c: c[0] * c[1] / (c.sum() * (c.sum() + 1)))(conc)
    np.testing.assert_allclose(np.asarray(ours), exact, atol=4e-3)
    np.testing.assert_allclose(theirs.numpy(), exact, atol=4e-3)
