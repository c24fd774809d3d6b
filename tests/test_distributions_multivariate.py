"""fgraph.distributions' multivariate family: MultivariateNormal, LowRankMultivariateNormal, Independent,
MixtureSameFamily, LKJCholesky, and their KL divergences.

Without torch: jax.scipy.stats and closed forms (entropy, KL, the LKJ marginal), sample moments
and covariances, pathwise gradients. With torch (the oracle, float64): values and gradients to
1e-9, second order for MultivariateNormal's log_prob and entropy, KL values and gradients.
"""
import math

import jax
import jax.numpy as jnp
import jax.scipy.stats as jstats
import numpy as np
import pytest
import scipy.special
import scipy.stats

import fgraph as fg
from fgraph.distributions import Categorical, Normal, constraints, kl_divergence
from fgraph.distributions import _kl_multivariate  # noqa: F401  (registers the KL pairs)
from fgraph.distributions.independent import Independent
from fgraph.distributions.lkj_cholesky import LKJCholesky
from fgraph.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from fgraph.distributions.mixture_same_family import MixtureSameFamily
from fgraph.distributions.multivariate_normal import MultivariateNormal, _batch_mahalanobis

from dist_harness import check_frequencies, check_ks, check_moments, check_pathwise_gradients, draw, fg_params

# a small pool of shapes: event size 3, batch (2,) for loc against an unbatched or (2, 1) matrix
RNG = np.random.default_rng(0)
LOC = np.array([[0.3, -1.2, 2.0], [1.0, 0.0, -0.5]])
_A = np.array([[1.0, 0.0, 0.0], [0.5, 1.2, 0.0], [-0.3, 0.4, 0.8]])
COV = _A @ _A.T + 0.5 * np.eye(3)
COV_BATCH = np.stack([COV, np.diag([1.0, 2.0, 0.5]) + 0.3])[:, None]  # (2, 1, 3, 3)
VALUE = np.array([[0.1, -0.4, 2.5], [-1.0, 0.3, 0.0]])
COV_FACTOR = np.array([[1.0, 0.2], [0.5, -0.7], [0.0, 0.4]])
COV_DIAG = np.array([0.5, 1.5, 0.8])


# references run as single jitted programs: op-by-op JAX would compile each primitive separately
mvn_logpdf = jax.jit(jstats.multivariate_normal.logpdf)
mvn_logpdf_grads = jax.jit(jax.grad(lambda x, m, s: jstats.multivariate_normal.logpdf(x, m, 0.5 * (s + s.T)).sum(),
                                    argnums=(1, 2)))


def chol(m):
    return np.linalg.cholesky(m)


def mvn(kind, loc=LOC, cov=COV, **kw):
    matrix = {"covariance_matrix": cov, "precision_matrix": np.linalg.inv(cov), "scale_tril": chol(cov)}[kind]
    p = fg_params({"loc": loc, kind: matrix})
    return MultivariateNormal(**p, **kw), p


def covariance_check(x, cov, sigmas=5.0):
    """Sample covariance of ``x`` (``(n, ..., d)``) within ``sigmas`` standard errors of ``cov`` entrywise."""
    n = x.shape[0]
    c = x - x.mean(0)
    prod = c[..., :, None] * c[..., None, :]
    se = prod.std(0) / math.sqrt(n)
    err = np.abs(prod.mean(0) - cov)
    assert np.all(err <= sigmas * se + 1e-12), f"sample covariance {prod.mean(0)} vs {cov} (se {se})"


# -- without torch: closed forms and jax.scipy.stats ----------------------------------------------------------------
@pytest.mark.parametrize("kind", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_mvn_matches_jax_scipy_and_entropy_formula(kind):
    d, p = mvn(kind)
    v = fg.tensor(VALUE, dtype=fg.float64)
    assert d.batch_shape == (2,) and d.event_shape == (3,)
    np.testing.assert_allclose(np.asarray(d.log_prob(v)), mvn_logpdf(VALUE, LOC, COV), rtol=1e-12)
    entropy = 0.5 * 3 * (1 + math.log(2 * math.pi)) + 0.5 * np.linalg.slogdet(COV)[1]
    np.testing.assert_allclose(np.asarray(d.entropy()), [entropy, entropy], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(d.covariance_matrix), np.broadcast_to(COV, (2, 3, 3)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(d.precision_matrix), np.broadcast_to(np.linalg.inv(COV), (2, 3, 3)),
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(d.scale_tril), np.broadcast_to(chol(COV), (2, 3, 3)), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(np.asarray(d.variance), np.broadcast_to(np.diag(COV), (2, 3)), rtol=1e-12)
    assert d.mean is d.loc and d.mode is d.loc
    g_loc, g_mat = fg.grad(d.log_prob(v).sum(), [p["loc"], p[kind]])
    ref_loc, ref_cov = mvn_logpdf_grads(VALUE, LOC, COV)
    np.testing.assert_allclose(np.asarray(g_loc), ref_loc, rtol=1e-10)
    if kind == "covariance_matrix":  # d/dSigma, symmetrised as torch's cholesky backward
        np.testing.assert_allclose(np.asarray(g_mat), ref_cov, rtol=1e-9, atol=1e-12)


def test_mvn_batched_matrix_broadcasting():
    d, _ = mvn("scale_tril", cov=COV_BATCH)
    assert d.batch_shape == (2, 2) and d.scale_tril.shape == (2, 2, 3, 3)
    x = RNG.normal(size=(4, 2, 2, 3))
    ref = np.stack([[mvn_logpdf(x[:, i, j], LOC[j], COV_BATCH[i, 0]) for j in range(2)]
                    for i in range(2)]).transpose(2, 0, 1)
    np.testing.assert_allclose(np.asarray(d.log_prob(fg.tensor(x))), ref, rtol=1e-12)
    # the Mahalanobis helper: x broadcasting against L's batch, either way round
    L = chol(COV_BATCH)
    for xs in (x, x[0, 0, 0]):
        diff = np.broadcast_to(xs, np.broadcast_shapes(xs.shape, (2, 1, 3)))
        ref = np.einsum("...i,...i->...", diff, np.linalg.solve(np.broadcast_to(COV_BATCH, diff.shape[:-1] + (3, 3)),
                                                                diff[..., None])[..., 0])
        np.testing.assert_allclose(np.asarray(_batch_mahalanobis(fg.tensor(L), fg.tensor(xs))), ref, rtol=1e-12)
    e = d.expand((5, 2, 2))
    assert e.batch_shape == (5, 2, 2) and e.loc.shape == (5, 2, 2, 3) and e.scale_tril.shape == (5, 2, 2, 3, 3)
    assert d.sample((4,), key=jax.random.key(0)).shape == (4, 2, 2, 3)


def test_lowrank_matches_dense_gaussian():
    p = fg_params({"loc": LOC, "cov_factor": COV_FACTOR, "cov_diag": COV_DIAG})
    d = LowRankMultivariateNormal(**p)
    cov = COV_FACTOR @ COV_FACTOR.T + np.diag(COV_DIAG)
    v = fg.tensor(VALUE, dtype=fg.float64)
    assert d.batch_shape == (2,) and d.event_shape == (3,) and d.cov_factor.shape == (2, 3, 2)
    np.testing.assert_allclose(np.asarray(d.log_prob(v)), mvn_logpdf(VALUE, LOC, cov), rtol=1e-12)
    entropy = 0.5 * 3 * (1 + math.log(2 * math.pi)) + 0.5 * np.linalg.slogdet(cov)[1]
    np.testing.assert_allclose(np.asarray(d.entropy()), [entropy, entropy], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(d.covariance_matrix)[0], cov, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(d.precision_matrix)[0], np.linalg.inv(cov), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(d.scale_tril)[0], chol(cov), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(d.variance)[1], np.diag(cov), rtol=1e-12)
    grads = fg.grad(d.log_prob(v).sum(), list(p.values()))

    def ref_fn(loc, w, diag):
        return jstats.multivariate_normal.logpdf(VALUE, loc, w @ w.T + jnp.diag(diag)).sum()

    refs = jax.jit(jax.grad(ref_fn, argnums=(0, 1, 2)))(LOC, COV_FACTOR, COV_DIAG)
    for g, r in zip(grads, refs):
        np.testing.assert_allclose(np.asarray(g), r, rtol=1e-9, atol=1e-12)
    e = d.expand((4, 2))
    assert e.batch_shape == (4, 2) and e.cov_factor.shape == (4, 2, 3, 2) and e._capacitance_tril is d._capacitance_tril


def test_independent_shapes_support_and_passthrough():
    loc, scale = fg.tensor(LOC, dtype=fg.float64), fg.tensor(np.abs(LOC) + 0.5, dtype=fg.float64)
    base = Normal(loc, scale)
    d = Independent(base, 1)
    v = fg.tensor(VALUE, dtype=fg.float64)
    assert d.batch_shape == (2,) and d.event_shape == (3,) and d.has_rsample and not d.has_enumerate_support
    np.testing.assert_allclose(np.asarray(d.log_prob(v)), np.asarray(base.log_prob(v)).sum(-1), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(d.entropy()), np.asarray(base.entropy()).sum(-1), rtol=1e-12)
    assert d.mean is base.mean and d.variance.shape == (2, 3) and d.mode.shape == (2, 3)
    assert isinstance(d.support, constraints.independent) and d.support.event_dim == 1
    assert d.support.check(fg.tensor([[0.0, float("nan"), 1.0], [0.0, 1.0, 2.0]])).tolist() == [False, True]
    both = Independent(base, 2)
    assert both.batch_shape == () and both.event_shape == (2, 3) and both.log_prob(v).shape == ()
    e = d.expand((4, 2))
    assert e.batch_shape == (4, 2) and e.base_dist.batch_shape == (4, 2, 3) and e.base_dist.loc.shape == (4, 2, 3)
    assert d.sample((5,), key=jax.random.key(0)).shape == (5, 2, 3)
    key = jax.random.key(1)
    assert d.rsample(key=key).tolist() == base.rsample(key=key).tolist()
    cat = Independent(Categorical(logits=loc), 0)
    assert cat.has_enumerate_support and cat.enumerate_support().shape == (3, 2)
    with pytest.raises(NotImplementedError, match="cartesian product"):
        Independent(Categorical(logits=loc), 1).enumerate_support()
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims <= len"):
        Independent(base, 3)
    with pytest.raises(NotImplementedError):
        d.cdf(v)
    assert repr(d).startswith("Independent(Normal(") and repr(d).endswith(", 1)")


def test_mixture_closed_forms_and_sampling():
    probs = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])
    # components 10 standard deviations apart: the one chosen is readable from the draw
    means, scales = np.array([-20.0, 0.0, 20.0]), np.array([0.5, 1.0, 2.0])
    p = fg_params({"probs": probs, "loc": means, "scale": scales})
    d = MixtureSameFamily(Categorical(probs=p["probs"]), Normal(p["loc"], p["scale"]).expand((2, 3)))
    assert d.batch_shape == (2,) and d.event_shape == () and not d.has_rsample
    x = np.array([[-19.0], [0.5], [10.0]])

    def mixture_log_prob(m):
        return jax.scipy.special.logsumexp(jstats.norm.logpdf(x[..., None], m, scales) + np.log(probs), axis=-1)

    ref, vjp = jax.jit(lambda m: jax.vjp(mixture_log_prob, m))(means)
    np.testing.assert_allclose(np.asarray(d.log_prob(fg.tensor(x))), ref, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(d.cdf(fg.tensor(x))),
                               (scipy.stats.norm.cdf(x[..., None], means, scales) * probs).sum(-1), rtol=1e-12)
    mean = probs @ means
    np.testing.assert_allclose(np.asarray(d.mean), mean, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(d.variance), probs @ (scales ** 2) + (probs * (means - mean[:, None]) ** 2)
                               .sum(-1), rtol=1e-12)
    (g,) = fg.grad(d.log_prob(fg.tensor(x)).sum(), [p["loc"]])
    np.testing.assert_allclose(np.asarray(g), vjp(jnp.ones(ref.shape))[0], rtol=1e-10)
    check_moments(d)
    s = draw(d, 20000, seed=3)
    for row in range(2):
        check_frequencies(np.digitize(s[:, row], [-10.0, 10.0]), probs[row])
    # a mixture batch (1,) broadcast over the components' (2,): one independent choice per batch element
    shared = MixtureSameFamily(Categorical(probs=p["probs"][:1]), Normal(p["loc"], p["scale"]).expand((2, 3)))
    s = draw(shared, 20000, seed=4)
    assert s.shape == (20000, 2)
    check_frequencies(np.digitize(s, [-10.0, 10.0]), probs[0])
    same = np.digitize(s[:, 0], [-10.0, 10.0]) == np.digitize(s[:, 1], [-10.0, 10.0])
    assert abs(same.mean() - (probs[0] ** 2).sum()) < 5 * 0.5 / math.sqrt(20000)


def test_mixture_of_multivariate_components():
    probs = np.array([0.3, 0.7])
    loc, scale = np.array([[-2.0, 0.0, 1.0], [3.0, 1.0, -1.0]]), np.array([[1.0, 0.5, 2.0], [0.5, 1.0, 1.0]])
    p = fg_params({"probs": probs, "loc": loc, "scale": scale, "cov": COV})
    d = MixtureSameFamily(Categorical(probs=p["probs"]), Independent(Normal(p["loc"], p["scale"]), 1))
    assert d.batch_shape == () and d.event_shape == (3,) and d.support.event_dim == 1
    comp = scipy.stats.norm.logpdf(VALUE[:, None], loc, scale).sum(-1)  # (2 values, 2 components)
    ref = scipy.special.logsumexp(comp + np.log(probs), axis=-1)
    np.testing.assert_allclose(np.asarray(d.log_prob(fg.tensor(VALUE))), ref, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(d.mean), probs @ loc, rtol=1e-12)
    assert d.sample((5,), key=jax.random.key(5)).shape == (5, 3)
    check_moments(d)
    m = MixtureSameFamily(Categorical(probs=p["probs"]), MultivariateNormal(p["loc"], p["cov"]))
    x = draw(m, 20000, seed=6)
    mean = probs @ loc
    total = COV + (probs[:, None, None] * np.einsum("ki,kj->kij", loc - mean, loc - mean)).sum(0)
    covariance_check(x, total)


def test_mvn_and_lowrank_sample_moments_covariance_and_pathwise_gradients():
    d, _ = mvn("covariance_matrix")
    check_moments(d)
    covariance_check(draw(d, 20000, seed=1), np.broadcast_to(COV, (2, 3, 3)))
    lr = LowRankMultivariateNormal(*fg_params({"loc": LOC, "f": COV_FACTOR, "d": COV_DIAG}).values())
    check_moments(lr)
    covariance_check(draw(lr, 20000, seed=2), np.broadcast_to(COV_FACTOR @ COV_FACTOR.T + np.diag(COV_DIAG),
                                                              (2, 3, 3)))
    # the harness replicates every parameter along a new leading dim: give them one batch shape
    check_pathwise_gradients(MultivariateNormal, {"loc": LOC, "covariance_matrix": np.stack([COV, COV_BATCH[1, 0]])})
    check_pathwise_gradients(LowRankMultivariateNormal, {"loc": LOC, "cov_factor": np.stack([COV_FACTOR] * 2),
                                                         "cov_diag": np.stack([COV_DIAG, COV_DIAG[::-1]])})
    check_pathwise_gradients(lambda loc, scale: Independent(Normal(loc, scale), 1),
                             {"loc": LOC, "scale": np.abs(LOC) + 0.5})


def test_kl_closed_forms_and_consistency():
    cov_lr = COV_FACTOR @ COV_FACTOR.T + np.diag(COV_DIAG)
    p, _ = mvn("scale_tril")
    q, _ = mvn("covariance_matrix", loc=LOC[::-1], cov=COV_BATCH)
    lr = LowRankMultivariateNormal(*fg_params({"a": LOC[::-1], "b": COV_FACTOR, "c": COV_DIAG}).values())
    lr_dense, _ = mvn("covariance_matrix", loc=LOC[::-1], cov=cov_lr)

    def kl_ref(m0, s0, m1, s1):
        s1_inv = np.linalg.inv(s1)
        diff = m1 - m0
        return 0.5 * (np.trace(s1_inv @ s0, axis1=-2, axis2=-1) + np.einsum("...i,...ij,...j->...", diff, s1_inv, diff)
                      - 3 + np.linalg.slogdet(s1)[1] - np.linalg.slogdet(s0)[1])

    kl = kl_divergence(p, q)
    assert kl.shape == (2, 2)
    np.testing.assert_allclose(np.asarray(kl), kl_ref(LOC, COV, LOC[::-1], COV_BATCH), rtol=1e-10)
    # the low-rank closed forms equal the dense ones on the same covariance
    for a, b in ((p, lr), (lr, p), (lr, lr)):
        dense = [lr_dense if x is lr else x for x in (a, b)]
        np.testing.assert_allclose(np.asarray(kl_divergence(a, b)), np.asarray(kl_divergence(*dense)), rtol=1e-10,
                                   atol=1e-12)
    np.testing.assert_allclose(np.asarray(kl_divergence(lr, lr)), 0.0, atol=1e-12)
    # Independent(Normal): the sum of the coordinates' KLs, equal to the diagonal Gaussians' KL
    scale_p, scale_q = np.abs(LOC) + 0.5, np.full(3, 2.0)
    ip = Independent(Normal(fg.tensor(LOC), fg.tensor(scale_p)), 1)
    iq = Independent(Normal(fg.tensor(np.zeros(3)), fg.tensor(scale_q)), 1)
    np.testing.assert_allclose(np.asarray(kl_divergence(ip, iq)),
                               kl_ref(LOC, np.einsum("...i,ij->...ij", scale_p ** 2, np.eye(3)), 0.0,
                                      np.diag(scale_q ** 2)), rtol=1e-10)
    with pytest.raises(NotImplementedError, match="reinterpreted_batch_ndims"):
        kl_divergence(ip, Independent(Normal(fg.zeros(2, 3), 1.0), 2))
    with pytest.raises(ValueError, match="different event shapes"):
        kl_divergence(p, MultivariateNormal(fg.zeros(2), scale_tril=fg.eye(2)))


def test_lkj_samples_are_correlation_cholesky_factors_with_the_right_marginal():
    eta = fg.tensor([0.5, 1.0, 3.0], dtype=fg.float64)
    d = LKJCholesky(4, eta)
    assert d.batch_shape == (3,) and d.event_shape == (4, 4) and not d.has_rsample
    L = d.sample((4000,), key=jax.random.key(0))
    assert L.shape == (4000, 3, 4, 4)
    L = np.asarray(L)
    assert np.all(np.triu(L, 1) == 0) and np.all(np.diagonal(L, axis1=-2, axis2=-1) > 0)
    corr = L @ L.swapaxes(-1, -2)
    np.testing.assert_allclose(np.diagonal(corr, axis1=-2, axis2=-1), 1.0, rtol=1e-12)  # unit rows
    # every off-diagonal correlation r of LKJ(eta) in dimension 4 has (r + 1) / 2 ~ Beta(eta + 1, eta + 1)
    for b, e in enumerate([0.5, 1.0, 3.0]):
        for i, j in ((1, 0), (2, 1), (3, 0)):
            check_ks((corr[:, b, i, j] + 1) / 2, scipy.stats.beta(e + 1, e + 1).cdf)
    # dimension 2: log_prob is the density of r = L[1, 0], (r + 1) / 2 ~ Beta(eta, eta)
    r = np.array([-0.7, 0.1, 0.9])
    two = np.zeros((3, 2, 2))
    two[:, 0, 0], two[:, 1, 0], two[:, 1, 1] = 1.0, r, np.sqrt(1 - r ** 2)
    eta2 = fg.tensor(2.5, dtype=fg.float64, requires_grad=True)
    lp = LKJCholesky(2, eta2).log_prob(fg.tensor(two))
    np.testing.assert_allclose(np.asarray(lp), scipy.stats.beta.logpdf((r + 1) / 2, 2.5, 2.5) - math.log(2),
                               rtol=1e-12)
    # d/d eta of sum_r log Beta((r + 1) / 2; eta, eta): sum log(u (1 - u)) - 3 (2 digamma(eta) - 2 digamma(2 eta))
    (g,) = fg.grad(lp.sum(), [eta2])
    u = (r + 1) / 2
    ref = np.log(u * (1 - u)).sum() - 3 * (2 * scipy.special.digamma(2.5) - 2 * scipy.special.digamma(5.0))
    np.testing.assert_allclose(g.item(), ref, rtol=1e-10)


def test_traceable_under_jit():
    @jax.jit
    def log_lik(loc, key):
        d = MultivariateNormal(fg.tensor(loc), scale_tril=fg.tensor(chol(COV)))
        lr = LowRankMultivariateNormal(fg.tensor(loc), fg.tensor(COV_FACTOR), fg.tensor(COV_DIAG))
        x = d.rsample((4,), key=key)
        return x.array, d.log_prob(x).array, lr.log_prob(x).array

    x, lp, lr_lp = (np.asarray(a) for a in log_lik(jnp.asarray(LOC), jax.random.key(2)))
    assert x.shape == (4, 2, 3)
    np.testing.assert_allclose(lp, scipy.stats.multivariate_normal.logpdf(x - LOC, cov=COV), rtol=1e-10)
    cov_lr = COV_FACTOR @ COV_FACTOR.T + np.diag(COV_DIAG)
    np.testing.assert_allclose(lr_lp, scipy.stats.multivariate_normal.logpdf(x - LOC, cov=cov_lr), rtol=1e-10)


# -- validation and errors ------------------------------------------------------------------------------------------
def test_validation_errors():
    def t(a):
        return fg.tensor(np.asarray(a, dtype=np.float64))

    loc, eye = t(np.zeros(3)), t(np.eye(3))
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix or precision_matrix or scale_tril may be"):
        MultivariateNormal(loc)
    with pytest.raises(ValueError, match="Exactly one of"):
        MultivariateNormal(loc, eye, scale_tril=eye)
    with pytest.raises(ValueError, match=r"Expected parameter covariance_matrix .* PositiveDefinite"):
        MultivariateNormal(loc, t(-np.eye(3)))
    with pytest.raises(ValueError, match=r"Expected parameter scale_tril .* LowerCholesky"):
        MultivariateNormal(loc, scale_tril=t(np.ones((3, 3))))
    with pytest.raises(ValueError, match="at least one-dimensional"):
        MultivariateNormal(t(0.0), eye)
    with pytest.raises(ValueError, match="3 x 3"):
        MultivariateNormal(loc, t(np.eye(2)))
    with pytest.raises(ValueError, match=r"Expected parameter cov_diag .* IndependentConstraint\(GreaterThan"):
        LowRankMultivariateNormal(loc, t(COV_FACTOR), t([1.0, -1.0, 1.0]))
    with pytest.raises(ValueError, match="cov_factor must be a batch of matrices with shape 3 x m"):
        LowRankMultivariateNormal(loc, t(COV_FACTOR[:2]), t(COV_DIAG))
    with pytest.raises(ValueError, match="Incompatible batch shapes"):
        LowRankMultivariateNormal(t(LOC), t(np.ones((4, 3, 2))), t(COV_DIAG))
    d = MultivariateNormal(loc, eye)
    with pytest.raises(ValueError, match=r"Expected value argument .* support \(IndependentConstraint\(Real"):
        d.log_prob(t([0.0, float("nan"), 0.0]))
    with pytest.raises(ValueError, match="event_shape"):
        d.log_prob(t([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"Expected parameter concentration .* GreaterThan"):
        LKJCholesky(3, -1.0)
    with pytest.raises(ValueError, match="dim to be an integer greater than or equal to 2"):
        LKJCholesky(1)
    with pytest.raises(ValueError, match=r"support \(CorrCholesky"):
        LKJCholesky(2, t(2.5)).log_prob(t([[1.0, 0.0], [0.5, 0.5]]))
    comp = Normal(t(LOC), 1.0)
    with pytest.raises(ValueError, match=r"`mixture_distribution component` \(2\) does not equal"):
        MixtureSameFamily(Categorical(logits=t([0.0, 1.0])), comp)
    with pytest.raises(ValueError, match="is not compatible with"):
        MixtureSameFamily(Categorical(logits=t(np.zeros((4, 3)))), Normal(t(np.zeros((2, 3))), 1.0).expand((2, 2, 3)))
    with pytest.raises(ValueError, match="instance of fgraph.distributions.Categorical"):
        MixtureSameFamily(comp, comp)
    MultivariateNormal(loc, t(-np.eye(3)), validate_args=False)  # off per instance


# -- torch as oracle ------------------------------------------------------------------------------------------------
MVN_METHODS = ("log_prob", "entropy", "mean", "mode", "variance", "stddev", "scale_tril", "covariance_matrix",
               "precision_matrix")


@pytest.mark.parametrize("kind", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_mvn_against_torch_to_second_order(kind):
    torch = pytest.importorskip("torch")
    from dist_harness import compare_with_torch

    matrix = {"covariance_matrix": COV_BATCH, "precision_matrix": np.linalg.inv(COV_BATCH),
              "scale_tril": chol(COV_BATCH)}[kind]
    params = {"loc": LOC, kind: matrix}
    compare_with_torch(MultivariateNormal, torch.distributions.MultivariateNormal, params, VALUE,
                       methods=("log_prob", "entropy"), second_order=True, value_grad=True)
    compare_with_torch(MultivariateNormal, torch.distributions.MultivariateNormal, params, VALUE, methods=MVN_METHODS)


def test_lowrank_independent_mixture_lkj_against_torch():
    torch = pytest.importorskip("torch")
    from dist_harness import compare_with_torch

    D = torch.distributions
    params = {"loc": LOC, "cov_factor": COV_FACTOR, "cov_diag": COV_DIAG}
    compare_with_torch(LowRankMultivariateNormal, D.LowRankMultivariateNormal, params, VALUE, methods=MVN_METHODS,
                       value_grad=True)
    normal_params = {"loc": LOC, "scale": np.abs(LOC) + 0.5}
    compare_with_torch(lambda **k: Independent(Normal(**k), 1), lambda **k: D.Independent(D.Normal(**k), 1),
                       normal_params, VALUE, methods=("log_prob", "entropy", "mean", "mode", "variance"),
                       value_grad=True)
    compare_with_torch(lambda **k: Independent(MultivariateNormal(**k), 1),
                       lambda **k: D.Independent(D.MultivariateNormal(**k), 1),
                       {"loc": LOC, "scale_tril": chol(COV)}, VALUE, methods=("log_prob", "entropy", "variance"))
    mix_params = {"logits": np.array([[0.2, -1.0, 0.5], [1.0, 0.0, -0.3]]), "loc": np.array([-4.0, 0.0, 5.0]),
                  "scale": np.array([0.5, 1.0, 2.0])}

    def mixture(module, cat, normal):
        def build(logits, loc, scale):
            return module(cat(logits=logits), normal(loc, scale).expand((2, 3)))
        return build

    compare_with_torch(mixture(MixtureSameFamily, Categorical, Normal),
                       mixture(D.MixtureSameFamily, D.Categorical, D.Normal), mix_params, np.array([[-3.0], [6.0]]),
                       methods=("log_prob", "cdf", "mean", "variance", "mode"), value_grad=True)
    mvn_mix = {"logits": np.array([0.3, -0.2]), "loc": LOC, "scale_tril": chol(COV)}
    compare_with_torch(lambda logits, **k: MixtureSameFamily(Categorical(logits=logits), MultivariateNormal(**k)),
                       lambda logits, **k: D.MixtureSameFamily(D.Categorical(logits=logits),
                                                               D.MultivariateNormal(**k)),
                       mvn_mix, VALUE, methods=("log_prob", "mean", "variance"))
    eta = np.array([0.5, 1.0, 3.0])
    value = np.asarray(LKJCholesky(4, fg.tensor(eta)).sample((2,), key=jax.random.key(0)))
    compare_with_torch(lambda concentration: LKJCholesky(4, concentration),
                       lambda concentration: D.LKJCholesky(4, concentration), {"concentration": eta}, value,
                       methods=("log_prob",), value_grad=True)


def test_shapes_and_expand_equal_torch():
    torch = pytest.importorskip("torch")
    D = torch.distributions
    t = {k: torch.tensor(v) for k, v in {"loc": LOC, "cov": COV_BATCH, "f": COV_FACTOR, "d": COV_DIAG}.items()}
    f = {k: fg.tensor(v.numpy()) for k, v in t.items()}
    pairs = [
        (MultivariateNormal(f["loc"], f["cov"]), D.MultivariateNormal(t["loc"], t["cov"])),
        (LowRankMultivariateNormal(f["loc"], f["f"], f["d"]), D.LowRankMultivariateNormal(t["loc"], t["f"], t["d"])),
        (Independent(Normal(f["loc"], 1.0), 1), D.Independent(D.Normal(t["loc"], 1.0), 1)),
        (MixtureSameFamily(Categorical(logits=f["loc"]), Normal(f["loc"], 1.0)),
         D.MixtureSameFamily(D.Categorical(logits=t["loc"]), D.Normal(t["loc"], 1.0))),
        (LKJCholesky(3, f["d"]), D.LKJCholesky(3, t["d"])),
    ]
    for ours, theirs in pairs:
        name = type(ours).__name__
        assert ours.batch_shape == tuple(theirs.batch_shape), name
        assert ours.event_shape == tuple(theirs.event_shape), name
        assert ours.has_rsample == theirs.has_rsample, name
        assert ours.sample((4,)).shape == tuple(theirs.sample((4,)).shape), name
        shape = (5,) + ours.batch_shape
        assert ours.expand(shape).batch_shape == tuple(theirs.expand(shape).batch_shape), name
        assert ours.expand(shape).sample((2,)).shape == tuple(theirs.expand(shape).sample((2,)).shape), name


def test_kl_against_torch():
    torch = pytest.importorskip("torch")
    D = torch.distributions
    arrays = {"l0": LOC, "c0": COV_BATCH, "l1": LOC[::-1].copy(), "s1": chol(COV), "l2": LOC, "f2": COV_FACTOR,
              "d2": COV_DIAG, "l3": LOC[0], "f3": COV_FACTOR[:, :1], "d3": COV_DIAG[::-1].copy(),
              "sc": np.abs(LOC) + 0.5}

    def build(mod, t):
        mvn_cls = MultivariateNormal if mod is None else D.MultivariateNormal
        lr_cls = LowRankMultivariateNormal if mod is None else D.LowRankMultivariateNormal
        ind, nrm = (Independent, Normal) if mod is None else (D.Independent, D.Normal)
        return [mvn_cls(t["l0"], t["c0"]), mvn_cls(t["l1"], scale_tril=t["s1"]), lr_cls(t["l2"], t["f2"], t["d2"]),
                lr_cls(t["l3"], t["f3"], t["d3"]), ind(nrm(t["l0"], t["sc"]), 1), ind(nrm(t["l1"], t["sc"]), 1)]

    fp = fg_params(arrays)
    tp = {k: torch.tensor(v, requires_grad=True) for k, v in arrays.items()}
    fd, tds = build(None, fp), build(D, tp)
    pairs = [(i, j) for i in range(4) for j in range(4)] + [(4, 5), (5, 4)]
    for i, j in pairs:
        kl, tkl = kl_divergence(fd[i], fd[j]), D.kl_divergence(tds[i], tds[j])
        assert kl.shape == tuple(tkl.shape), (i, j)
        np.testing.assert_allclose(np.asarray(kl), tkl.detach().numpy(), rtol=1e-9, atol=1e-12, err_msg=f"{i},{j}")
        w = np.linspace(0.5, 1.5, max(kl.numel(), 1)).reshape(kl.shape)
        grads = fg.grad((kl * fg.tensor(w)).sum(), list(fp.values()), allow_unused=True, materialize_grads=True)
        tgrads = torch.autograd.grad((tkl * torch.tensor(w)).sum(), list(tp.values()), allow_unused=True,
                                     materialize_grads=True, retain_graph=True)
        for name, a, b in zip(arrays, grads, tgrads):
            np.testing.assert_allclose(np.asarray(a), b.numpy(), rtol=1e-9, atol=1e-10, err_msg=f"{i},{j}: {name}")
