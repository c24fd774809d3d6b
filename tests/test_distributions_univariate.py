"""The univariate continuous distributions and their KL divergences.

Uniform, Exponential, Laplace, Cauchy, LogNormal, HalfNormal, HalfCauchy, Gumbel, Weibull, Pareto
and LogisticNormal. Without torch: densities, CDFs and their gradients against jax.scipy.stats or
closed forms, icdf(cdf(x)) = x, sample moments / KS, pathwise gradients, entropies and KL values
against Monte Carlo estimates. With torch (float64): every value and gradient to 1e-9, shapes,
error messages.
"""
import math

import jax
import jax.numpy as jnp
import jax.scipy.stats as jstats
import numpy as np
import pytest

import fgraph as fg
import fgraph.distributions._kl_univariate  # noqa: F401  (registers the pairs)
from fgraph.distributions import Normal, kl_divergence
from fgraph.distributions.cauchy import Cauchy
from fgraph.distributions.exponential import Exponential
from fgraph.distributions.gumbel import Gumbel
from fgraph.distributions.half_cauchy import HalfCauchy
from fgraph.distributions.half_normal import HalfNormal
from fgraph.distributions.laplace import Laplace
from fgraph.distributions.log_normal import LogNormal
from fgraph.distributions.logistic_normal import LogisticNormal
from fgraph.distributions.pareto import Pareto
from fgraph.distributions.transforms import StickBreakingTransform
from fgraph.distributions.uniform import Uniform
from fgraph.distributions.weibull import Weibull

from dist_harness import check_ks, check_moments, check_pathwise_gradients, compare_with_torch, draw, fg_params

LOC = np.array([-0.4, 0.3, 1.2])
SCALE = np.array([0.5, 1.0, 1.7])
POS = np.array([0.8, 1.5, 3.0])
VALUE = np.array([0.2, 1.1, 2.6])
PROBS = np.array([0.1, 0.5, 0.9])
N = 20000

# name: (class, params, jax log-density or None, jax cdf or None)
CASES = {
    "Uniform": (Uniform, {"low": np.array([-1.0, 0.5, 2.0]), "high": np.array([1.0, 3.0, 2.8])},
                lambda v, low, high: jstats.uniform.logpdf(v, low, high - low),
                lambda v, low, high: jstats.uniform.cdf(v, low, high - low)),
    "Exponential": (Exponential, {"rate": POS},
                    lambda v, rate: jstats.expon.logpdf(v, scale=1 / rate),
                    lambda v, rate: jstats.expon.cdf(v, scale=1 / rate)),
    "Laplace": (Laplace, {"loc": LOC, "scale": SCALE}, jstats.laplace.logpdf, jstats.laplace.cdf),
    "Cauchy": (Cauchy, {"loc": LOC, "scale": SCALE}, jstats.cauchy.logpdf, jstats.cauchy.cdf),
    "LogNormal": (LogNormal, {"loc": LOC, "scale": SCALE * 0.5},
                  lambda v, loc, scale: jstats.norm.logpdf(jnp.log(v), loc, scale) - jnp.log(v),
                  lambda v, loc, scale: jstats.norm.cdf(jnp.log(v), loc, scale)),
    "HalfNormal": (HalfNormal, {"scale": SCALE},
                   lambda v, scale: math.log(2) + jstats.norm.logpdf(v, 0, scale),
                   lambda v, scale: 2 * jstats.norm.cdf(v, 0, scale) - 1),
    "HalfCauchy": (HalfCauchy, {"scale": SCALE},
                   lambda v, scale: math.log(2) + jstats.cauchy.logpdf(v, 0, scale),
                   lambda v, scale: 2 * jstats.cauchy.cdf(v, 0, scale) - 1),
    "Gumbel": (Gumbel, {"loc": LOC, "scale": SCALE},  # jstats.gumbel_r's gradient fails (float0): closed forms
               lambda v, loc, scale: -jnp.log(scale) - (v - loc) / scale - jnp.exp(-(v - loc) / scale),
               lambda v, loc, scale: jnp.exp(-jnp.exp(-(v - loc) / scale))),
    "Weibull": (Weibull, {"scale": SCALE * 2, "concentration": POS},
                lambda v, scale, k: jnp.log(k / scale) + (k - 1) * jnp.log(v / scale) - (v / scale) ** k,
                lambda v, scale, k: -jnp.expm1(-(v / scale) ** k)),
    "Pareto": (Pareto, {"scale": np.array([0.1, 0.5, 0.8]), "alpha": np.array([4.5, 5.0, 6.0])},
               lambda v, scale, alpha: jstats.pareto.logpdf(v, alpha, scale=scale),
               lambda v, scale, alpha: jstats.pareto.cdf(v, alpha, scale=scale)),
}
FINITE_MOMENTS = ["Uniform", "Exponential", "Laplace", "LogNormal", "HalfNormal", "Gumbel", "Weibull", "Pareto"]


def build(name, requires_grad=False):
    cls, params, _, _ = CASES[name]
    return cls(**fg_params(params, requires_grad=requires_grad))


def f64(a):
    return fg.tensor(np.asarray(a, dtype=np.float64), dtype=fg.float64)


# -- without torch --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(CASES))
def test_density_cdf_and_gradients_match_jax(name):
    cls, params, logpdf, cdf = CASES[name]
    fp = fg_params(params)
    d = cls(**fp)
    v = f64(VALUE)
    args = [jnp.asarray(a) for a in params.values()]

    def reference(*a):  # compiled once: eager JAX would compile every primitive on its own
        grads = jax.grad(lambda *b: logpdf(VALUE, *b).sum(), argnums=tuple(range(len(a))))(*a)
        return logpdf(VALUE, *a), cdf(VALUE, *a), grads

    ref_log_prob, ref_cdf, ref_grads = jax.jit(reference)(*args)
    np.testing.assert_allclose(np.asarray(d.log_prob(v)), ref_log_prob, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(d.cdf(v)), ref_cdf, rtol=1e-10, atol=1e-12)
    grads = fg.grad(d.log_prob(v).sum(), list(fp.values()))
    for g, r in zip(grads, ref_grads):
        np.testing.assert_allclose(np.asarray(g), r, rtol=1e-9, atol=1e-12)
    # icdf inverts cdf
    np.testing.assert_allclose(np.asarray(d.cdf(d.icdf(f64(PROBS)))), PROBS, rtol=1e-9)


@pytest.mark.parametrize("name", FINITE_MOMENTS)
def test_sampling_moments_entropy_and_pathwise_gradients(name):
    cls, params, _, _ = CASES[name]
    d = build(name)
    x = draw(d, N, seed=1)
    assert x.shape == (N, 3) and bool(d.support.check(f64(x)).all())
    check_moments(d, n=N, seed=1)
    # the entropy is -E[log p(X)]: a Monte Carlo estimate within 6 standard errors
    log_p = np.asarray(d.log_prob(f64(x)))
    err = np.abs(-log_p.mean(0) - np.asarray(d.entropy()))
    assert np.all(err <= 6 * log_p.std(0) / math.sqrt(N) + 1e-9), err
    check_pathwise_gradients(cls, params, n=N)


@pytest.mark.parametrize("name", ["Cauchy", "HalfCauchy"])
def test_heavy_tailed_samples_and_reparameterisation(name):
    cls, params, _, cdf = CASES[name]
    d = build(name)
    fp = fg_params(params)
    x = cls(**fp).rsample((N,), key=jax.random.key(3))
    args = [a[0] for a in params.values()]
    check_ks(np.asarray(x)[:, 0], lambda s: np.asarray(cdf(s, *args)))
    grads = fg.grad(x.sum(), list(fp.values()))
    loc = fp["loc"] if "loc" in fp else 0.0
    # x = loc + scale * eps (folded for HalfCauchy): dx/dscale = (x - loc) / scale
    np.testing.assert_allclose(np.asarray(grads[-1]), np.asarray(((x - loc) / fp["scale"]).sum(0)), rtol=1e-10)
    assert np.isnan(np.asarray(build("Cauchy").mean)).all() and np.isinf(np.asarray(build("HalfCauchy").mean)).all()


def test_closed_forms_without_torch():
    u = Uniform(**fg_params(CASES["Uniform"][1], requires_grad=False), validate_args=False)
    np.testing.assert_allclose(np.asarray(u.entropy()), np.log([2.0, 2.5, 0.8]), rtol=1e-12)
    assert np.isnan(np.asarray(u.mode)).all()
    np.testing.assert_allclose(np.asarray(u.log_prob(f64([1.5, 1.0, 2.2]))), [-np.inf, np.log(0.4), np.log(1.25)])
    e = build("Exponential")
    np.testing.assert_allclose(np.asarray(e.entropy()), 1 - np.log(POS), rtol=1e-12)
    from fgraph.distributions.exp_family import ExponentialFamily
    np.testing.assert_allclose(np.asarray(ExponentialFamily.entropy(e)), 1 - np.log(POS), rtol=1e-12)
    ln = build("LogNormal")
    s = SCALE * 0.5
    np.testing.assert_allclose(np.asarray(ln.mean), np.exp(LOC + s ** 2 / 2), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(ln.mode), np.exp(LOC - s ** 2), rtol=1e-12)
    g = build("Gumbel")
    np.testing.assert_allclose(np.asarray(g.mean), LOC + SCALE * np.euler_gamma, rtol=1e-12)
    hn = HalfNormal(f64(SCALE), validate_args=False)
    assert np.asarray(hn.log_prob(f64([-0.1, 0.0, 1.0])))[0] == -np.inf
    p = build("Pareto")
    assert p.support.lower_bound is p.scale
    w = Weibull(f64(2.0), f64(1.0))  # concentration 1: Exponential(1 / 2)
    np.testing.assert_allclose(np.asarray(w.log_prob(f64([0.5, 3.0]))), np.log(0.5) - np.array([0.25, 1.5]),
                               rtol=1e-12)


def test_logistic_normal():
    loc, scale = f64([[0.2, -0.5, 1.0], [0.0, 0.3, -0.2]]), f64([0.5, 1.0, 1.5])
    d = LogisticNormal(loc, scale)
    assert d.batch_shape == (2,) and d.event_shape == (4,) and d.has_rsample and d.loc is loc
    x = d.sample((N,), key=jax.random.key(4))
    assert x.shape == (N, 2, 4) and bool(d.support.check(x).all())
    z = np.asarray(StickBreakingTransform().inv(x))  # back to the normal
    np.testing.assert_allclose(z.mean(0), np.asarray(loc), atol=6 * 1.5 / math.sqrt(N))
    np.testing.assert_allclose(z.std(0), np.broadcast_to(np.asarray(scale), (2, 3)), rtol=0.05)
    t = StickBreakingTransform()
    zz = t.inv(x[0])
    ref = Normal(loc, scale).log_prob(zz).sum(-1) - t.log_abs_det_jacobian(zz, x[0])
    np.testing.assert_allclose(np.asarray(d.log_prob(x[0])), np.asarray(ref), rtol=1e-10)
    assert LogisticNormal(f64([0.0, 1.0]), 1.0).batch_shape == ()


def test_shapes_expand_and_traceability():
    # (N, 3) and (3,) are the shapes the other tests use: every new shape compiles new kernels
    for name in CASES:
        d = build(name)
        assert d.batch_shape == (3,) and d.event_shape == ()
        e = d.expand((N, 3))
        assert type(e) is type(d) and e.batch_shape == (N, 3)
    e = build("Weibull").expand((N, 3))
    assert e.sample(key=jax.random.key(0)).shape == (N, 3) and e.log_prob(f64(VALUE)).shape == (N, 3)
    scalar = Gumbel(0.0, 1.0)
    assert scalar.batch_shape == () and scalar.sample((2,), key=jax.random.key(0)).shape == (2,)

    def f(scale, key):
        d = Weibull(fg.tensor(scale), fg.tensor(POS))
        return d.log_prob(d.rsample((N,), key=key)).sum().array

    key = jax.random.key(5)
    np.testing.assert_allclose(jax.jit(f)(jnp.asarray(SCALE), key), f(jnp.asarray(SCALE), key), rtol=1e-10)


def test_validation_errors():
    bad = [(lambda: Uniform(f64([1.0]), f64([0.0])), "low"), (lambda: Exponential(f64([-1.0])), "rate"),
           (lambda: Laplace(0.0, f64([-1.0])), "scale"), (lambda: Cauchy(0.0, f64([0.0])), "scale"),
           (lambda: LogNormal(0.0, f64([-1.0])), "scale"), (lambda: HalfNormal(f64([-1.0])), "scale"),
           (lambda: HalfCauchy(f64([-1.0])), "scale"), (lambda: Gumbel(0.0, f64([-1.0])), "scale"),
           (lambda: Weibull(f64([1.0]), f64([-1.0])), "concentration"),
           (lambda: Pareto(1.0, f64([-2.0])), "rate")]  # Pareto's base Exponential(alpha) checks first, as torch's
    for build_bad, param in bad:
        with pytest.raises(ValueError, match=f"Expected parameter {param} "):
            build_bad()
    Exponential(f64([-1.0]), validate_args=False)
    for name, value in (("Uniform", [5.0, 1.0, 2.2]), ("Exponential", [-1.0, 1.0, 1.0]),
                        ("LogNormal", [-1.0, 1.0, 1.0]), ("HalfNormal", [1.0, -1.0, 1.0]),
                        ("Weibull", [1.0, 1.0, -1.0]), ("Pareto", [0.05, 1.0, 1.0])):
        with pytest.raises(ValueError, match="Expected value argument .* within the support"):
            build(name).log_prob(f64(value))


# -- KL divergences -------------------------------------------------------------------------------------------------
KL_DISTS = {
    "N": (Normal, {"loc": LOC, "scale": SCALE}),
    "N2": (Normal, {"loc": np.array([0.1, -0.2, 0.5]), "scale": np.array([1.2, 0.6, 2.0])}),
    "U": (Uniform, {"low": np.array([0.2, 0.5, 1.0]), "high": np.array([0.9, 2.0, 3.0])}),
    "U2": (Uniform, {"low": np.array([0.0, 0.2, 0.5]), "high": np.array([1.0, 2.5, 3.5])}),
    "E": (Exponential, {"rate": POS}),
    "E2": (Exponential, {"rate": np.array([1.2, 0.4, 2.0])}),
    "L": (Laplace, {"loc": LOC, "scale": SCALE}),
    "L2": (Laplace, {"loc": np.array([0.1, -0.2, 0.5]), "scale": np.array([1.2, 0.6, 2.0])}),
    "C": (Cauchy, {"loc": LOC, "scale": SCALE}),
    "C2": (Cauchy, {"loc": np.array([0.1, -0.2, 0.5]), "scale": np.array([1.2, 0.6, 2.0])}),
    "G": (Gumbel, {"loc": LOC, "scale": SCALE}),
    "G2": (Gumbel, {"loc": np.array([0.1, -0.2, 0.5]), "scale": np.array([1.2, 0.6, 2.0])}),
    "HN": (HalfNormal, {"scale": SCALE}),
    "HN2": (HalfNormal, {"scale": np.array([1.2, 0.6, 2.0])}),
    "LN": (LogNormal, {"loc": LOC, "scale": SCALE * 0.5}),
    "LN2": (LogNormal, {"loc": np.array([0.1, -0.2, 0.5]), "scale": np.array([0.6, 0.3, 1.0])}),
    "P": (Pareto, {"scale": np.array([0.1, 0.5, 0.8]), "alpha": np.array([4.5, 5.0, 6.0])}),
    "P2": (Pareto, {"scale": np.array([0.05, 0.5, 0.6]), "alpha": np.array([3.0, 2.5, 4.0])}),
}
KL_FINITE = [("E", "E2"), ("G", "G2"), ("HN", "HN2"), ("L", "L2"), ("P", "P2"), ("LN", "LN2"), ("U", "U2"),
             ("C", "C2"), ("E", "G"), ("E", "N"), ("G", "N"), ("L", "N"), ("N", "G"), ("N", "L"), ("P", "E"),
             ("P", "N"), ("U", "E"), ("U", "G"), ("U", "N"), ("U", "P")]
KL_INFINITE = [("E", "P"), ("E", "U"), ("G", "E"), ("G", "P"), ("G", "U"), ("L", "E"), ("L", "P"), ("L", "U"),
               ("N", "E"), ("N", "P"), ("N", "U"), ("P", "U")]


def kl_build(key, requires_grad=False):
    cls, params = KL_DISTS[key]
    fp = fg_params(params, requires_grad=requires_grad)
    return cls(**fp), fp


@pytest.mark.parametrize("pair", KL_FINITE, ids=["-".join(p) for p in KL_FINITE])
def test_kl_matches_monte_carlo(pair):
    p, _ = kl_build(pair[0])
    q, _ = kl_build(pair[1])
    kl = np.asarray(kl_divergence(p, q))
    x = p.sample((N,), key=jax.random.key(7))
    diff = np.asarray(p.log_prob(x) - q.log_prob(x))
    err = np.abs(diff.mean(0) - kl)
    assert np.all(err <= 6 * diff.std(0) / math.sqrt(N) + 1e-9), (pair, diff.mean(0), kl)


def test_kl_infinite_and_unsupported_pairs():
    for a, b in KL_INFINITE:
        assert np.isinf(np.asarray(kl_divergence(kl_build(a)[0], kl_build(b)[0]))).all(), (a, b)
    wider = Uniform(f64([-1.0, 0.5]), f64([1.0, 2.0]))
    assert np.asarray(kl_divergence(wider, Uniform(f64([0.0, 0.0]), f64([1.0, 3.0])))).tolist()[0] == np.inf
    assert np.isinf(np.asarray(kl_divergence(Pareto(f64([0.1]), f64([3.0])), Pareto(f64([0.5]), f64([3.0])))))[0]
    with pytest.raises(NotImplementedError):
        kl_divergence(kl_build("LN")[0], Weibull(f64(SCALE), f64(POS)))


# -- torch as oracle ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(CASES))
def test_against_torch(name):
    torch = pytest.importorskip("torch")
    cls, params, _, _ = CASES[name]
    tcls = getattr(torch.distributions, name)
    value = VALUE if name != "Pareto" else np.array([1.0, 1.5, 2.2])
    compare_with_torch(cls, tcls, params, value, methods=("log_prob", "entropy", "cdf", "mean", "mode", "variance",
                                                          "stddev"), second_order=True, value_grad=True)
    compare_with_torch(cls, tcls, params, PROBS, methods=("icdf",), second_order=True, value_grad=True)
    d, td = build(name), tcls(**{k: torch.tensor(v) for k, v in params.items()})
    assert d.sample((5, 2)).shape == tuple(td.sample((5, 2)).shape)
    assert d.expand((4, 3)).batch_shape == tuple(td.expand((4, 3)).batch_shape)
    assert repr(d.support).split("(")[0] == repr(td.support).split("(")[0]


def test_logistic_normal_against_torch():
    torch = pytest.importorskip("torch")
    params = {"loc": np.array([[0.2, -0.5, 1.0], [0.0, 0.3, -0.2]]), "scale": np.array([0.5, 1.0, 1.5])}
    value = np.array([[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.4, 0.1]])
    compare_with_torch(LogisticNormal, torch.distributions.LogisticNormal, params, value, methods=("log_prob",),
                       value_grad=True)


@pytest.mark.parametrize("pair", KL_FINITE + KL_INFINITE, ids=["-".join(p) for p in KL_FINITE + KL_INFINITE])
def test_kl_against_torch(pair):
    torch = pytest.importorskip("torch")
    p, fp = kl_build(pair[0], requires_grad=True)
    q, fq = kl_build(pair[1], requires_grad=True)

    def torch_build(key):
        cls, params = KL_DISTS[key]
        tp = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
        return getattr(torch.distributions, cls.__name__)(**tp), tp

    (tp, tpp), (tq, tqp) = torch_build(pair[0]), torch_build(pair[1])
    kl, tkl = kl_divergence(p, q), torch.distributions.kl_divergence(tp, tq)
    np.testing.assert_allclose(np.asarray(kl), tkl.detach().numpy(), rtol=1e-10)
    if not np.isfinite(tkl.detach().numpy()).all():
        return
    inputs, tinputs = [*fp.values(), *fq.values()], [*tpp.values(), *tqp.values()]
    grads = fg.grad(kl.sum(), inputs, allow_unused=True, materialize_grads=True)
    tgrads = torch.autograd.grad(tkl.sum(), tinputs, allow_unused=True, materialize_grads=True)
    for a, b in zip(grads, tgrads):
        np.testing.assert_allclose(np.asarray(a), b.numpy(), rtol=1e-9, atol=1e-12)


def test_messages_equal_torch():
    torch = pytest.importorskip("torch")
    builds = [(Exponential, ([-1.0],)), (Uniform, ([1.0], [0.0])), (Gumbel, ([0.0], [-1.0])),
              (Pareto, ([1.0], [-1.0])), (Weibull, ([1.0], [-1.0]))]
    for cls, args in builds:
        with pytest.raises(ValueError) as theirs:
            getattr(torch.distributions, cls.__name__)(*[torch.tensor(a) for a in args])
        with pytest.raises(ValueError) as ours:
            cls(*[fg.tensor(a) for a in args])
        assert str(ours.value).split(":\n")[0] == str(theirs.value).split(":\n")[0].replace("torch.Size([1])", "(1,)")
