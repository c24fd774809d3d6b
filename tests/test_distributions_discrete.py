"""The Bernoulli family: Bernoulli, Binomial, Geometric, Multinomial, NegativeBinomial, OneHotCategorical(+ST),
ContinuousBernoulli, the relaxed (Concrete) distributions, and their KL divergences.

Without torch: scipy.stats and closed forms (pmfs, entropies, KLs by summation or quadrature), sample
frequencies / moments / KS for every distribution, pathwise gradients (closed-form moments for
ContinuousBernoulli, quadrature for the relaxed distributions), straight-through gradients, tracing and
validation. The torch oracle (float64, 1e-9) is in tests/test_distributions_discrete_torch.py.
"""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats as sstats

import fgraph as fg
from fgraph.distributions import kl_divergence
from fgraph.distributions import _kl_discrete  # noqa: F401  (registers the closed forms)
from fgraph.distributions.bernoulli import Bernoulli
from fgraph.distributions.binomial import Binomial
from fgraph.distributions.continuous_bernoulli import ContinuousBernoulli
from fgraph.distributions.geometric import Geometric
from fgraph.distributions.multinomial import Multinomial
from fgraph.distributions.negative_binomial import NegativeBinomial
from fgraph.distributions.normal import Normal
from fgraph.distributions.one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from fgraph.distributions.poisson import Poisson
from fgraph.distributions.relaxed_bernoulli import LogitRelaxedBernoulli, RelaxedBernoulli
from fgraph.distributions.relaxed_categorical import ExpRelaxedCategorical, RelaxedOneHotCategorical

from dist_harness import check_frequencies, check_ks, check_moments, check_pathwise_gradients, draw, fg_params

# one small pool of shapes (every new shape compiles new kernels): scalar-parameter families on batch (3,),
# vector families on (2, 4), samples of 20000
PROBS = np.array([0.2, 0.5, 0.9])
COUNTS = np.array([5.0, 10.0, 7.0])
KVALUE = np.array([0.0, 2.0, 5.0])
LOGITS4 = np.array([[0.2, -1.0, 0.7, 0.0], [1.5, 0.1, -0.3, -2.0]])
CB_PROBS = np.array([0.2, 0.5004, 0.999])  # the second inside the Taylor region (0.499, 0.501]
UNIT_VALUE = np.array([0.1, 0.5, 0.95])
N = 20000


def _t(a, grad=False):
    return fg.tensor(np.asarray(a, dtype=np.float64), dtype=fg.float64, requires_grad=grad)


def _close(a, b, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=rtol, atol=atol)


def _cb_log_norm(p):
    """log C(p) of the continuous Bernoulli, C(p) = 2 atanh(1 - 2p) / (1 - 2p) (2 at p = 1/2)."""
    p = np.asarray(p, dtype=np.float64)
    safe = np.where(np.abs(p - 0.5) < 1e-12, 0.25, p)
    c = 2 * np.arctanh(1 - 2 * safe) / (1 - 2 * safe)
    return np.log(np.where(np.abs(p - 0.5) < 1e-12, 2.0, c))


def _gauss_legendre(n, a, b):
    x, w = np.polynomial.legendre.leggauss(n)
    return 0.5 * (b - a) * x + 0.5 * (b + a), 0.5 * (b - a) * w


# -- pmfs, densities, entropies against jax.scipy.stats and closed forms --------------------------------------------
def test_bernoulli_geometric_binomial_against_scipy():
    """Values against scipy.stats; gradients against the derivatives of the pmfs in closed form."""
    probs = _t(PROBS, grad=True)
    b = Bernoulli(probs)
    v = np.array([0.0, 1.0, 1.0])
    _close(b.log_prob(_t(v)), sstats.bernoulli.logpmf(v, PROBS))
    _close(b.entropy(), sstats.bernoulli.entropy(PROBS))
    _close(b.mean, PROBS)
    mode = np.asarray(b.mode)
    assert mode[0] == 0.0 and np.isnan(mode[1]) and mode[2] == 1.0  # no unique mode at p = 1/2
    (g,) = fg.grad(b.log_prob(_t(v)).sum(), [probs])
    _close(g, v / PROBS - (1 - v) / (1 - PROBS))

    g_dist = Geometric(probs)
    _close(g_dist.log_prob(_t(KVALUE)), sstats.geom.logpmf(KVALUE + 1, PROBS))  # scipy counts trials, not failures
    _close(g_dist.entropy(), sstats.geom.entropy(PROBS), rtol=1e-9)
    _close(g_dist.mean, (1 - PROBS) / PROBS)
    _close(g_dist.variance, (1 - PROBS) / PROBS ** 2)
    (g,) = fg.grad(g_dist.log_prob(_t(KVALUE)).sum(), [probs])
    _close(g, 1 / PROBS - KVALUE / (1 - PROBS))
    assert Geometric(_t([0.3, 1.0, 1.0])).log_prob(_t([1.0, 0.0, 0.0])).tolist()[1:] == [0.0, 0.0]  # p = 1, k = 0

    n = _t(COUNTS, grad=True)
    bi = Binomial(n, probs)
    _close(bi.log_prob(_t(KVALUE)), sstats.binom.logpmf(KVALUE, COUNTS, PROBS), rtol=1e-9)
    _close(bi.mean, COUNTS * PROBS)
    _close(bi.variance, COUNTS * PROBS * (1 - PROBS))
    _close(bi.mode, np.minimum(np.floor((COUNTS + 1) * PROBS), COUNTS))
    (gp,) = fg.grad(bi.log_prob(_t(KVALUE)).sum(), [probs])
    _close(gp, KVALUE / PROBS - (COUNTS - KVALUE) / (1 - PROBS), rtol=1e-9)
    # from logits: the same distribution, and finite far in the tails
    logits = np.log(PROBS) - np.log1p(-PROBS)
    _close(Binomial(n, logits=_t(logits)).log_prob(_t(KVALUE)), sstats.binom.logpmf(KVALUE, COUNTS, PROBS),
           rtol=1e-9)
    tails = Binomial(n, logits=_t([200.0, -200.0, 0.0])).log_prob(_t([5.0, 0.0, 0.0]))
    assert np.isfinite(np.asarray(tails)).all()


def test_binomial_and_multinomial_entropy_and_support():
    d = Binomial(7, _t(PROBS))
    _close(d.entropy(), sstats.binom.entropy(7, PROBS), rtol=1e-9)
    assert d.enumerate_support().shape == (8, 3) and d.enumerate_support(False).shape == (8, 1)
    assert d.enumerate_support(False).reshape(-1).tolist() == list(range(8))
    _close(Binomial(_t([7.0, 7.0, 7.0]), _t(PROBS)).entropy(), d.entropy())  # a homogeneous Tensor count
    with pytest.raises(NotImplementedError, match="Inhomogeneous total count"):
        Binomial(_t(COUNTS), _t(PROBS)).entropy()

    probs = np.exp(LOGITS4) / np.exp(LOGITS4).sum(-1, keepdims=True)
    m = Multinomial(3, logits=_t(LOGITS4))
    x = np.array([[1, 2, 0, 0], [0, 0, 0, 3]])
    _close(m.log_prob(_t(x)), sstats.multinomial.logpmf(x, 3, probs), rtol=1e-9)
    _close(m.entropy(), sstats.multinomial.entropy(3, probs), rtol=1e-9)
    _close(m.mean, 3 * probs)
    _close(m.variance, 3 * probs * (1 - probs))
    z = Multinomial(2, probs=_t([[0.0, 0.5, 0.5, 0.0]]))  # categories of probability 0, never drawn, add nothing
    _close(z.log_prob(_t([[0.0, 1.0, 1.0, 0.0]])), [math.log(0.5)])


def test_one_hot_and_negative_binomial_closed_forms():
    logits = _t(LOGITS4, grad=True)
    d = OneHotCategorical(logits=logits)
    log_p = np.asarray(jax.nn.log_softmax(LOGITS4, -1))
    x = np.array([[0.0, 0.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    _close(d.log_prob(_t(x)), log_p[[0, 1], [2, 0]])
    _close(d.entropy(), -(np.exp(log_p) * log_p).sum(-1))
    _close(d.mode, np.eye(4)[[2, 0]])
    _close(d.variance, np.exp(log_p) * (1 - np.exp(log_p)))
    assert d.enumerate_support().shape == (4, 2, 4) and d.enumerate_support(False).shape == (4, 1, 4)
    _close(d.enumerate_support(False)[:, 0], np.eye(4))

    r = np.array([0.5, 2.0, 7.5])
    nb = NegativeBinomial(_t(r), probs=_t(PROBS))
    # torch's NegativeBinomial counts successes (probability p) before r failures: scipy's nbinom at 1 - p
    _close(nb.log_prob(_t(KVALUE)), sstats.nbinom.logpmf(KVALUE, r, 1 - PROBS), rtol=1e-9)
    _close(nb.mean, r * PROBS / (1 - PROBS))
    _close(nb.variance, r * PROBS / (1 - PROBS) ** 2)
    assert NegativeBinomial(_t([0.0, 1.0, 1.0]), _t(PROBS)).log_prob(_t(np.zeros(3))).tolist()[0] == 0.0


def test_continuous_bernoulli_against_quadrature():
    probs = _t(CB_PROBS, grad=True)
    d = ContinuousBernoulli(probs)
    v = _t(UNIT_VALUE)
    _close(d.log_prob(v), _cb_log_norm(CB_PROBS) + UNIT_VALUE * np.log(CB_PROBS)
           + (1 - UNIT_VALUE) * np.log1p(-CB_PROBS), rtol=1e-8)  # the Taylor branch is accurate to ~1e-9
    x, w = _gauss_legendre(200, 0.0, 1.0)
    x, w = x.reshape(-1, 1), w.reshape(-1, 1)
    dens = np.exp(np.asarray(d.log_prob(_t(x))))
    _close((w * dens).sum(0), np.ones(3), rtol=1e-7)
    mean = (w * x * dens).sum(0)
    _close(d.mean, mean, rtol=1e-7)
    _close(d.variance, (w * (x - mean) ** 2 * dens).sum(0), rtol=1e-6)
    _close(d.entropy(), -(w * dens * np.log(dens)).sum(0), rtol=1e-6, atol=1e-9)
    # the cdf by quadrature of the density on [0, 1/2] (torch's cdf and icdf are the uniform's inside the
    # Taylor region: compared there with the identity)
    x2, w2 = _gauss_legendre(200, 0.0, 0.5)
    dens2 = np.exp(np.asarray(d.log_prob(_t(x2.reshape(-1, 1)))))
    cdf = np.asarray(d.cdf(_t([0.5, 0.5, 0.5])))
    _close(cdf[[0, 2]], (w2.reshape(-1, 1) * dens2).sum(0)[[0, 2]], rtol=1e-7)
    assert cdf[1] == 0.5
    _close(d.icdf(d.cdf(v)), UNIT_VALUE, rtol=1e-9)
    outside = ContinuousBernoulli(probs, validate_args=False).cdf(_t([-0.5, 0.0, 1.5]))
    assert outside.tolist() == [0.0, 0.0, 1.0]
    (g,) = fg.grad(d.log_prob(v).sum() + d.entropy().sum() + d.mean.sum(), [probs])
    assert np.isfinite(np.asarray(g)).all()  # no NaN leaks from the branch that is not taken


# -- KL divergences ---------------------------------------------------------------------------------------------------
def test_kl_closed_forms():
    p, q = np.array([0.2, 0.7, 0.0]), np.array([0.5, 0.4, 0.3])
    kl = kl_divergence(Bernoulli(_t(p)), Bernoulli(_t(q)))
    ref = np.where(p > 0, p * np.log(np.where(p > 0, p, 1) / q), 0) + (1 - p) * np.log((1 - p) / (1 - q))
    _close(kl, ref)
    assert np.asarray(kl_divergence(Bernoulli(_t(q)), Bernoulli(_t([1.0, 0.0, 0.5]))))[:2].tolist() == [math.inf] * 2

    ks = np.arange(2000.0).reshape(-1, 1)  # the geometric series, summed far into its tail
    lp, lq = sstats.geom.logpmf(ks + 1, q), sstats.geom.logpmf(ks + 1, PROBS)
    _close(kl_divergence(Geometric(_t(q)), Geometric(_t(PROBS))), (np.exp(lp) * (lp - lq)).sum(0), rtol=1e-9)

    ks = np.arange(6.0).reshape(-1, 1)
    lp, lq = sstats.binom.logpmf(ks, 5, q), sstats.binom.logpmf(ks, 5, PROBS)
    _close(kl_divergence(Binomial(5, _t(q)), Binomial(5, _t(PROBS))), (np.exp(lp) * (lp - lq)).sum(0), rtol=1e-9)
    assert kl_divergence(Binomial(_t([6.0, 5.0, 5.0]), _t(q)), Binomial(5, _t(q))).tolist()[0] == math.inf
    with pytest.raises(NotImplementedError, match="q.total_count > p.total_count"):
        kl_divergence(Binomial(_t([4.0, 5.0, 5.0]), _t(q)), Binomial(5, _t(q)))

    lp4 = np.asarray(jax.nn.log_softmax(LOGITS4, -1))
    kl = kl_divergence(OneHotCategorical(logits=_t(LOGITS4)), OneHotCategorical(logits=_t(LOGITS4[::-1])))
    _close(kl, (np.exp(lp4) * (lp4 - lp4[::-1])).sum(-1))

    rate = np.array([0.5, 2.0, 1.0])
    kl = kl_divergence(Bernoulli(_t(q)), Poisson(_t(rate)))
    lpb, lpp = np.stack([np.log1p(-q), np.log(q)]), np.stack([-rate, np.log(rate) - rate])
    _close(kl, (np.exp(lpb) * (lpb - lpp)).sum(0))
    assert kl_divergence(Poisson(_t(rate)), Bernoulli(_t(q))).tolist() == [math.inf] * 3
    assert kl_divergence(Poisson(_t(rate)), Binomial(3, _t(q))).tolist() == [math.inf] * 3


def test_kl_continuous_bernoulli_by_quadrature():
    x, w = _gauss_legendre(200, 0.0, 1.0)
    x, w = x.reshape(-1, 1), w.reshape(-1, 1)
    p, q = ContinuousBernoulli(_t(CB_PROBS)), ContinuousBernoulli(_t([0.6, 0.3, 0.4991]))
    lp, lq = np.asarray(p.log_prob(_t(x))), np.asarray(q.log_prob(_t(x)))
    _close(kl_divergence(p, q), (w * np.exp(lp) * (lp - lq)).sum(0), rtol=1e-8)
    loc, scale = np.array([0.3, -1.0, 2.0]), np.array([0.5, 2.0, 1.0])
    ln = sstats.norm.logpdf(x, loc, scale)
    _close(kl_divergence(p, Normal(_t(loc), _t(scale))), (w * np.exp(lp) * (lp - ln)).sum(0), rtol=1e-8)
    assert kl_divergence(Normal(_t(loc), _t(scale)), p).tolist() == [math.inf] * 3


# -- sampling statistics (every sample is (20000, 3) or (20000, 4)) ---------------------------------------------------
def test_sample_frequencies_of_the_counting_distributions():
    x = draw(Bernoulli(_t(PROBS)), N, seed=1)
    for j in range(3):
        check_frequencies(x[:, j], np.array([1 - PROBS[j], PROBS[j]]))
    d = Binomial(_t(COUNTS), _t(PROBS))
    x = draw(d, N, seed=2)
    for j in range(3):
        check_frequencies(x[:, j], sstats.binom.pmf(np.arange(COUNTS[j] + 1), COUNTS[j], PROBS[j]))
    check_moments(d, seed=3)
    x = draw(Geometric(_t(PROBS)), N, seed=4)
    for j in range(3):
        check_frequencies(x[:, j], sstats.geom.pmf(np.arange(1, 40), PROBS[j]))
    check_moments(NegativeBinomial(_t([0.5, 3.0, 10.0]), _t([0.3, 0.5, 0.1])), seed=5)
    probs = np.array([0.1, 0.2, 0.3, 0.4])
    m = Multinomial(6, probs=_t(probs))
    x = draw(m, N, seed=6)
    assert x.shape == (N, 4) and (x.sum(-1) == 6).all()
    check_moments(m, seed=6)
    x = draw(OneHotCategorical(probs=_t(probs)), N, seed=7)
    assert x.shape == (N, 4) and (x.sum(-1) == 1).all()
    check_frequencies(x.argmax(-1), probs)


def _relaxed_bernoulli_cdf(y, temperature, logit_p):
    """P(sigmoid((logit p + Logistic) / T) <= y) = sigmoid(T logit(y) - logit p)."""
    return 1 / (1 + np.exp(-(temperature * (np.log(y) - np.log1p(-y)) - logit_p)))


def test_continuous_and_relaxed_samples():
    d = ContinuousBernoulli(_t([0.2, 0.5, 0.9]))
    check_moments(d, seed=8)
    x = draw(d, N, seed=9)
    cdf = np.asarray(d.cdf(_t(np.sort(x, 0))))
    for j in range(3):
        check_ks(np.sort(x[:, j]), lambda v, j=j: cdf[:, j])  # check_ks sorts: the cdf of the sorted column
    temperature, logits = np.array([0.5, 2.0, 1.0]), np.array([1.0, -0.5, 0.0])
    y = draw(RelaxedBernoulli(_t(temperature), logits=_t(logits)), N, seed=10)
    assert ((y > 0) & (y < 1)).all()
    z = draw(LogitRelaxedBernoulli(_t(temperature), logits=_t(logits)), N, seed=10)
    np.testing.assert_allclose(1 / (1 + np.exp(-z)), y, rtol=1e-12)  # the same key: sigmoid of the same draw
    for j in range(3):
        check_ks(y[:, j], lambda v, j=j: _relaxed_bernoulli_cdf(v, temperature[j], logits[j]))
    # the Concrete distribution's argmax is a categorical draw with the same probabilities, at any temperature
    probs = np.array([0.1, 0.2, 0.3, 0.4])
    x = draw(RelaxedOneHotCategorical(_t(0.7), probs=_t(probs)), N, seed=12)
    np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-12)
    check_frequencies(x.argmax(-1), probs)
    lx = draw(ExpRelaxedCategorical(_t(0.7), probs=_t(probs)), N, seed=12)
    np.testing.assert_allclose(np.exp(lx), x, rtol=1e-10)


# -- pathwise gradients -----------------------------------------------------------------------------------------------
def test_continuous_bernoulli_pathwise_gradients():
    # away from the Taylor region, where torch's icdf (so rsample) is the identity and carries no gradient
    check_pathwise_gradients(ContinuousBernoulli, {"probs": np.array([0.2, 0.65, 0.9])})


def _mc_gradient(x, inputs, n=N):
    """Mean and standard error (over 20 batches) of the pathwise gradient of ``E[x.sum(-1)]`` from ``n`` draws."""
    values = x.sum(-1).reshape(20, n // 20).mean(1)
    per_batch = np.stack([np.concatenate([np.ravel(g) for g in fg.grad(values[b], inputs)]) for b in range(20)])
    return per_batch.mean(0), per_batch.std(0) / math.sqrt(20)


def _sigmoid(z):
    return 0.5 * (1 + np.tanh(0.5 * z))


def _relaxed_bernoulli_mean(a, temperature):
    """E[sigmoid(L)] with L = (a + Logistic) / T, by the trapezoid rule on L (error ~1e-12)."""
    grid = np.linspace(-60.0, 60.0, 24001)
    z = temperature * grid - a
    density = temperature * _sigmoid(z) * _sigmoid(-z)
    values = _sigmoid(grid) * density
    return (values.sum() - 0.5 * (values[0] + values[-1])) * (grid[1] - grid[0])


def _central_difference(f, x, h=1e-5):
    x = np.asarray(x, dtype=np.float64)
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)])


def test_relaxed_pathwise_gradients_against_quadrature():
    a, temperature = np.array([0.8, -0.4, 0.0]), np.array([0.5, 1.7, 1.0])
    logits, temp = _t(a, grad=True), _t(temperature, grad=True)
    mc, se = _mc_gradient(RelaxedBernoulli(temp, logits=logits).rsample((N,), key=jax.random.key(13)), [logits, temp])
    grads = [_central_difference(lambda th: _relaxed_bernoulli_mean(*th), [a[j], temperature[j]]) for j in range(3)]
    exact = np.array([g[0] for g in grads] + [g[1] for g in grads])
    assert np.all(np.abs(mc - exact) <= 6 * se + 1e-6), (mc, exact, se)
    # RelaxedOneHotCategorical: with two categories X_0 = sigmoid((l_0 - l_1 + G_0 - G_1) / T), and the
    # difference of two Gumbels is Logistic: a relaxed Bernoulli of log-odds l_0 - l_1
    lg = LOGITS4[0, :2]
    l2, temp = _t(lg, grad=True), _t(0.6, grad=True)
    x = RelaxedOneHotCategorical(temp, logits=l2).rsample((N,), key=jax.random.key(14))
    mc, se = _mc_gradient(x[:, :1], [l2, temp])
    g = _central_difference(lambda th: _relaxed_bernoulli_mean(th[0] - th[1], th[2]), [lg[0], lg[1], 0.6])
    assert np.all(np.abs(mc - g) <= 6 * se + 1e-6), (mc, g, se)


def test_straight_through_gradient():
    logits = _t(LOGITS4, grad=True)
    d = OneHotCategoricalStraightThrough(logits=logits)
    assert d.has_rsample and not OneHotCategorical.has_rsample
    x = d.rsample(key=jax.random.key(15))
    assert x.shape == (2, 4) and (np.asarray(x).sum(-1) == 1).all()
    np.testing.assert_array_equal(np.asarray(x), np.asarray(d.sample(key=jax.random.key(15))))
    w = np.arange(8.0).reshape(2, 4)
    (g,) = fg.grad((x * _t(w)).sum(), [logits])
    p = np.exp(LOGITS4) / np.exp(LOGITS4).sum(-1, keepdims=True)
    _close(g, p * (w - (p * w).sum(-1, keepdims=True)))  # the gradient of (probs * w).sum(): softmax's Jacobian


# -- tracing, reproducibility, validation ------------------------------------------------------------------------------
def test_sampling_is_traceable_and_reproducible():
    def draws(p, key):
        k1, k2 = jax.random.split(key)
        probs = fg.tensor(p)
        binomial = Binomial(7, probs)
        out = binomial.sample((N,), key=k1) + Geometric(probs).sample((N,), key=k2)
        return (out.mean(0) + binomial.entropy()).array

    p, key = jnp.asarray(PROBS), jax.random.key(16)
    np.testing.assert_allclose(jax.jit(draws)(p, key), draws(p, key), rtol=1e-12)
    d = Binomial(_t(COUNTS), _t(PROBS))
    fg.manual_seed(3)
    a = d.sample((N,))
    fg.manual_seed(3)
    assert d.sample((N,)).tolist() == a.tolist()

    def support(c):
        return Binomial(fg.tensor(c), fg.tensor(PROBS)).enumerate_support().array

    with pytest.raises(NotImplementedError, match="pass total_count as a Python int"):
        jax.jit(support)(jnp.asarray(COUNTS))


def test_validation_errors():
    with pytest.raises(ValueError, match=r"Expected parameter probs .* Bernoulli.* Interval\(lower_bound=0.0"):
        Bernoulli(_t([0.5, 1.5, 0.5]))
    with pytest.raises(ValueError, match="Bernoulli: either `probs` or `logits`"):
        Bernoulli()
    with pytest.raises(ValueError, match="Geometric: either `probs` or `logits`"):
        Geometric(probs=_t(PROBS), logits=_t(PROBS))
    with pytest.raises(ValueError, match=r"Expected parameter probs .* to be positive"):
        Geometric(_t([0.0, 0.5, 0.5]))
    with pytest.raises(ValueError, match=r"Expected parameter total_count .* IntegerGreaterThan"):
        Binomial(_t([2.5, 1.0, 1.0]), _t(PROBS))
    with pytest.raises(ValueError, match=r"Expected parameter probs .* ContinuousBernoulli .* Interval"):
        ContinuousBernoulli(_t([1.2, 0.5, 0.5]))
    with pytest.raises(ValueError, match=r"Expected parameter total_count .* GreaterThanEq"):
        NegativeBinomial(_t([-1.0, 1.0, 1.0]), _t(PROBS))
    with pytest.raises(NotImplementedError, match="total_count must be a Python int"):
        Multinomial(_t(3.0), _t([0.5, 0.5]))
    with pytest.raises(ValueError, match=r"Expected value argument .* support \(Boolean"):
        Bernoulli(_t(PROBS)).log_prob(_t(PROBS))
    with pytest.raises(ValueError, match=r"Expected value argument .* support \(IntegerInterval"):
        Binomial(_t(COUNTS), _t(PROBS)).log_prob(_t([6.0, 0.0, 0.0]))
    with pytest.raises(ValueError, match=r"Expected value argument .* support \(Multinomial"):
        Multinomial(3, logits=_t(LOGITS4)).log_prob(_t(np.full((2, 4), 1.0)))
    with pytest.raises(ValueError, match=r"Expected value argument .* support \(OneHot"):
        OneHotCategorical(logits=_t(LOGITS4)).log_prob(_t(np.full((2, 4), 1.0)))
    with pytest.raises(ValueError, match=r"Expected value argument .* support \(Interval"):
        RelaxedBernoulli(_t(0.5), _t(PROBS)).log_prob(_t([1.5, 0.5, 0.5]))
    with pytest.raises(ValueError, match=r"Expected parameter probs .* Simplex"):
        RelaxedOneHotCategorical(_t(0.5), probs=_t([0.5, -0.5]))
    Bernoulli(_t([1.5, 0.5, 0.5]), validate_args=False)  # off per instance
    ContinuousBernoulli(_t([1.2, 0.5, 0.5]), validate_args=False)
