"""The Bernoulli family against torch.distributions (float64: values and gradients to 1e-9).

Bernoulli, Binomial, Geometric, Multinomial, NegativeBinomial, OneHotCategorical(+StraightThrough),
ContinuousBernoulli, LogitRelaxedBernoulli/RelaxedBernoulli, ExpRelaxedCategorical/RelaxedOneHotCategorical:
log_prob, entropy, cdf/icdf, moments and mode where torch has them (NotImplementedError where it has not),
enumerate_support, sample shapes and dtypes, expand, KL divergences and error messages.
"""
import jax
import numpy as np
import pytest

import fgraph as fg
from fgraph.distributions import kl_divergence
from fgraph.distributions import _kl_discrete  # noqa: F401  (registers the closed forms)
from fgraph.distributions.bernoulli import Bernoulli
from fgraph.distributions.beta import Beta
from fgraph.distributions.binomial import Binomial
from fgraph.distributions.continuous_bernoulli import ContinuousBernoulli
from fgraph.distributions.exponential import Exponential
from fgraph.distributions.geometric import Geometric
from fgraph.distributions.multinomial import Multinomial
from fgraph.distributions.negative_binomial import NegativeBinomial
from fgraph.distributions.normal import Normal
from fgraph.distributions.one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from fgraph.distributions.poisson import Poisson
from fgraph.distributions.relaxed_bernoulli import LogitRelaxedBernoulli, RelaxedBernoulli
from fgraph.distributions.relaxed_categorical import ExpRelaxedCategorical, RelaxedOneHotCategorical
from fgraph.distributions.uniform import Uniform

from dist_harness import compare_with_torch, fg_params, torch_params

torch = pytest.importorskip("torch")
D = torch.distributions
LRB = torch.distributions.relaxed_bernoulli.LogitRelaxedBernoulli
ERC = torch.distributions.relaxed_categorical.ExpRelaxedCategorical

PROBS = np.array([[0.2, 0.5, 0.9], [0.7, 0.1, 0.35]])
LOGITS = np.array([[-1.0, 0.0, 2.0], [0.8, -2.5, 0.3]])
COUNTS = np.array([[5.0], [10.0]])
KVALUE = np.array([[0.0, 2.0, 5.0], [3.0, 0.0, 10.0]])
LOGITS4 = np.array([[0.2, -1.0, 0.7, 0.0], [1.5, 0.1, -0.3, -2.0]])
ONE_HOT = np.array([[0.0, 0.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
CB_PROBS = np.array([[0.2, 0.5004, 0.999], [0.8, 0.03, 0.4991]])
UNIT_VALUE = np.array([0.1, 0.5, 0.95])
SCALAR_METHODS = ("log_prob", "entropy", "cdf", "icdf", "mean", "mode", "variance", "stddev")


def _kw(cls, **fixed):
    """A factory ``cls(**fixed, **params)`` (for a parameter given by keyword, or a fixed one)."""
    def build(**params):
        return cls(**fixed, **params)
    return build


@pytest.mark.parametrize("kind", ["probs", "logits"])
def test_bernoulli_geometric_against_torch(kind):
    param = PROBS if kind == "probs" else LOGITS
    compare_with_torch(_kw(Bernoulli), _kw(D.Bernoulli), {kind: param}, np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]]),
                       methods=SCALAR_METHODS, second_order=True)
    compare_with_torch(_kw(Geometric), _kw(D.Geometric), {kind: param}, KVALUE, methods=SCALAR_METHODS,
                       second_order=True)


def test_binomial_and_negative_binomial_against_torch():
    for kind, param in (("probs", PROBS), ("logits", LOGITS)):
        compare_with_torch(_kw(Binomial), _kw(D.Binomial), {"total_count": COUNTS, kind: param}, KVALUE,
                           methods=("log_prob", "cdf", "mean", "mode", "variance", "stddev"))
        compare_with_torch(_kw(Binomial, total_count=10), _kw(D.Binomial, total_count=10), {kind: param}, KVALUE,
                           methods=("log_prob", "entropy", "mean", "mode", "variance"))
        compare_with_torch(_kw(NegativeBinomial), _kw(D.NegativeBinomial),
                           {"total_count": np.array([[0.5], [4.0]]), kind: param * 0.9}, KVALUE,
                           methods=("log_prob", "entropy", "mean", "mode", "variance", "stddev"))


def test_multinomial_and_one_hot_against_torch():
    for kind, param in (("logits", LOGITS4), ("probs", np.exp(LOGITS4))):
        counts = np.array([[1.0, 2.0, 0.0, 3.0], [6.0, 0.0, 0.0, 0.0]])
        compare_with_torch(_kw(Multinomial, total_count=6), _kw(D.Multinomial, total_count=6), {kind: param}, counts,
                           methods=("log_prob", "mean", "mode", "variance"))
        # torch's entropy takes lgamma(n + 1) of an integer tensor, in float32 (off by 7.7e-8 for n = 6)
        compare_with_torch(_kw(Multinomial, total_count=6), _kw(D.Multinomial, total_count=6), {kind: param}, counts,
                           methods=("entropy",), rtol=1e-7)
        for cls, tcls in ((OneHotCategorical, D.OneHotCategorical),
                          (OneHotCategoricalStraightThrough, D.OneHotCategoricalStraightThrough)):
            compare_with_torch(_kw(cls), _kw(tcls), {kind: param}, ONE_HOT,
                               methods=("log_prob", "entropy", "mean", "mode", "variance"), second_order=True)


def test_continuous_bernoulli_against_torch():
    compare_with_torch(_kw(ContinuousBernoulli), _kw(D.ContinuousBernoulli), {"probs": CB_PROBS}, UNIT_VALUE,
                       methods=("log_prob", "entropy", "cdf", "mean", "mode", "variance", "stddev"),
                       value_grad=True, second_order=True)
    compare_with_torch(_kw(ContinuousBernoulli), _kw(D.ContinuousBernoulli), {"probs": CB_PROBS},
                       np.array([0.05, 0.5, 0.99]), methods=("icdf",), value_grad=True)
    compare_with_torch(_kw(ContinuousBernoulli), _kw(D.ContinuousBernoulli), {"logits": LOGITS}, UNIT_VALUE,
                       methods=("log_prob", "entropy", "cdf", "mean", "variance"))


def test_relaxed_against_torch():
    temperature = np.array(0.7)
    for kind, param in (("probs", PROBS), ("logits", LOGITS)):
        for cls, tcls in ((LogitRelaxedBernoulli, LRB), (RelaxedBernoulli, D.RelaxedBernoulli)):
            value = LOGITS if cls is LogitRelaxedBernoulli else PROBS[::-1].copy()
            compare_with_torch(_kw(cls), _kw(tcls), {"temperature": temperature, kind: param}, value,
                               methods=("log_prob", "cdf", "mean", "entropy"), value_grad=True)
    point = np.array([0.1, 0.2, 0.3, 0.4])
    for kind, param in (("logits", LOGITS4), ("probs", np.exp(LOGITS4))):
        compare_with_torch(_kw(ExpRelaxedCategorical), _kw(ERC),
                           {"temperature": temperature, kind: param}, np.log(point), methods=("log_prob", "mean"),
                           value_grad=True)
        compare_with_torch(_kw(RelaxedOneHotCategorical), _kw(D.RelaxedOneHotCategorical),
                           {"temperature": temperature, kind: param}, point, methods=("log_prob", "mean"),
                           value_grad=True)


def _both(fg_cls, t_cls, **params):
    fp, tp = fg_params(params, requires_grad=False), torch_params(params, requires_grad=False)
    return fg_cls(**fp), t_cls(**tp)


def test_shapes_dtypes_support_and_expand_against_torch():
    pairs = [_both(Bernoulli, D.Bernoulli, probs=PROBS), _both(Geometric, D.Geometric, probs=PROBS),
             _both(Binomial, D.Binomial, total_count=COUNTS, probs=PROBS),
             _both(NegativeBinomial, D.NegativeBinomial, total_count=COUNTS, probs=PROBS * 0.9),
             _both(ContinuousBernoulli, D.ContinuousBernoulli, probs=PROBS),
             _both(LogitRelaxedBernoulli, LRB, temperature=np.array(0.5), probs=PROBS),
             _both(RelaxedBernoulli, D.RelaxedBernoulli, temperature=np.array(0.5), probs=PROBS),
             _both(OneHotCategorical, D.OneHotCategorical, logits=LOGITS4),
             _both(OneHotCategoricalStraightThrough, D.OneHotCategoricalStraightThrough, logits=LOGITS4),
             (Multinomial(6, logits=fg.tensor(LOGITS4)), D.Multinomial(6, logits=torch.tensor(LOGITS4))),
             _both(ExpRelaxedCategorical, ERC, temperature=np.array(0.5), logits=LOGITS4),
             _both(RelaxedOneHotCategorical, D.RelaxedOneHotCategorical, temperature=np.array(0.5), logits=LOGITS4)]
    for fd, td in pairs:
        name = type(fd).__name__
        assert (fd.batch_shape, fd.event_shape) == (tuple(td.batch_shape), tuple(td.event_shape)), name
        assert (fd.has_rsample, fd.has_enumerate_support) == (td.has_rsample, td.has_enumerate_support), name
        assert repr(fd.support).split("(")[0] == repr(td.support).split("(")[0], name
        assert fd.support.is_discrete == td.support.is_discrete and fd.support.event_dim == td.support.event_dim
        batch = (4,) + tuple(td.batch_shape)
        e, te = fd.expand(batch), td.expand(batch)  # one sample shape per distribution: each compiles its sampler
        assert type(e) is type(fd) and e.batch_shape == tuple(te.batch_shape), name
        x, tx = e.sample((3,), key=jax.random.key(1)), te.sample((3,))
        assert tuple(x.shape) == tuple(tx.shape) and str(x.dtype) == str(tx.dtype).split(".")[-1], name
        if td.has_rsample:
            assert e.rsample((3,), key=jax.random.key(2)).shape == tuple(te.rsample((3,)).shape), name
        if td.has_enumerate_support and not isinstance(fd, Binomial):  # inhomogeneous counts: below, homogeneous
            for expand in (True, False):
                np.testing.assert_array_equal(np.asarray(fd.enumerate_support(expand)),
                                              td.enumerate_support(expand).numpy(), err_msg=name)
    fd, td = _both(Binomial, D.Binomial, total_count=np.array([[4.0], [4.0]]), probs=PROBS)
    for expand in (True, False):
        np.testing.assert_array_equal(np.asarray(fd.enumerate_support(expand)), td.enumerate_support(expand).numpy())


def test_straight_through_gradient_against_torch():
    fl = fg.tensor(LOGITS4, requires_grad=True)
    tl = torch.tensor(LOGITS4, requires_grad=True)
    w = np.arange(24.0).reshape(3, 2, 4)
    x = OneHotCategoricalStraightThrough(logits=fl).rsample((3,), key=jax.random.key(0))
    tx = D.OneHotCategoricalStraightThrough(logits=tl).rsample((3,))
    (g,) = fg.grad((x * fg.tensor(w)).sum(), [fl])
    (tg,) = torch.autograd.grad((tx * torch.tensor(w)).sum(), [tl])
    np.testing.assert_allclose(np.asarray(g), tg.numpy(), rtol=1e-12, atol=1e-14)  # independent of the draw


KL_CASES = [
    ((Bernoulli, D.Bernoulli, {"probs": PROBS}), (Bernoulli, D.Bernoulli, {"logits": LOGITS})),
    ((Bernoulli, D.Bernoulli, {"probs": np.array([0.0, 1.0, 0.4])}),
     (Bernoulli, D.Bernoulli, {"probs": np.array([0.3, 0.6, 1.0])})),
    ((Geometric, D.Geometric, {"probs": PROBS}), (Geometric, D.Geometric, {"logits": LOGITS})),
    ((Binomial, D.Binomial, {"total_count": np.array([5.0, 5.0, 7.0]), "probs": PROBS}),
     (Binomial, D.Binomial, {"total_count": np.array([5.0, 5.0, 6.0]), "logits": LOGITS})),
    ((OneHotCategorical, D.OneHotCategorical, {"logits": LOGITS4}),
     (OneHotCategorical, D.OneHotCategorical, {"probs": np.exp(LOGITS4[::-1]).copy()})),
    ((ContinuousBernoulli, D.ContinuousBernoulli, {"probs": CB_PROBS}),
     (ContinuousBernoulli, D.ContinuousBernoulli, {"logits": LOGITS})),
    ((ContinuousBernoulli, D.ContinuousBernoulli, {"probs": CB_PROBS}),
     (Normal, D.Normal, {"loc": np.array([0.3, -1.0, 2.0]), "scale": np.array([0.5, 2.0, 1.0])})),
    ((ContinuousBernoulli, D.ContinuousBernoulli, {"probs": CB_PROBS}),
     (Exponential, D.Exponential, {"rate": np.array([0.5, 2.0, 1.0])})),
    ((ContinuousBernoulli, D.ContinuousBernoulli, {"probs": CB_PROBS}),
     (Uniform, D.Uniform, {"low": np.array([-0.5, 0.0, -1.0]), "high": np.array([1.5, 2.0, 1.0])})),
    ((Uniform, D.Uniform, {"low": np.array([0.1, 0.0, 0.3]), "high": np.array([0.6, 0.5, 1.0])}),
     (ContinuousBernoulli, D.ContinuousBernoulli, {"probs": CB_PROBS})),
    ((Beta, D.Beta, {"concentration1": np.array([0.5, 2.0, 3.0]), "concentration0": np.array([1.5, 0.7, 2.0])}),
     (ContinuousBernoulli, D.ContinuousBernoulli, {"probs": CB_PROBS})),
    ((Bernoulli, D.Bernoulli, {"probs": PROBS}), (Poisson, D.Poisson, {"rate": np.array([0.5, 2.0, 1.0])})),
    ((Poisson, D.Poisson, {"rate": np.array([0.5, 2.0, 1.0])}), (Bernoulli, D.Bernoulli, {"probs": PROBS})),
    ((Poisson, D.Poisson, {"rate": np.array([0.5, 2.0, 1.0])}),
     (Binomial, D.Binomial, {"total_count": np.array([5.0, 5.0, 6.0]), "probs": PROBS})),
    ((Normal, D.Normal, {"loc": np.array([0.3, -1.0, 2.0]), "scale": np.array([0.5, 2.0, 1.0])}),
     (ContinuousBernoulli, D.ContinuousBernoulli, {"probs": CB_PROBS})),
    ((Exponential, D.Exponential, {"rate": np.array([0.5, 2.0, 1.0])}),
     (ContinuousBernoulli, D.ContinuousBernoulli, {"probs": CB_PROBS})),
]


@pytest.mark.parametrize("case", range(len(KL_CASES)))
def test_kl_against_torch(case):
    (fp_cls, tp_cls, p_params), (fq_cls, tq_cls, q_params) = KL_CASES[case]
    fp, fq = fg_params(p_params), fg_params(q_params)
    tp, tq = torch_params(p_params), torch_params(q_params)
    kl = kl_divergence(fp_cls(**fp), fq_cls(**fq))
    tkl = D.kl_divergence(tp_cls(**tp), tq_cls(**tq))
    np.testing.assert_allclose(np.asarray(kl), tkl.detach().numpy(), rtol=1e-9, atol=1e-12)
    finite = np.isfinite(tkl.detach().numpy())
    if not finite.any() or not tkl.requires_grad:
        assert not np.isfinite(np.asarray(kl)).any() or tkl.requires_grad
        return
    inputs, tinputs = [*fp.values(), *fq.values()], [*tp.values(), *tq.values()]
    grads = fg.grad(kl[fg.tensor(finite)].sum(), inputs, allow_unused=True, materialize_grads=True)
    tgrads = torch.autograd.grad(tkl[torch.tensor(finite)].sum(), tinputs, allow_unused=True, materialize_grads=True)
    for i, (a, b) in enumerate(zip(grads, tgrads)):
        np.testing.assert_allclose(np.asarray(a), b.numpy(), rtol=1e-8, atol=1e-10, err_msg=f"gradient of input {i}")


def test_messages_equal_torch():
    builds = [lambda m, t: m.Bernoulli(t([0.5, 1.5])), lambda m, t: m.Binomial(t([2.5, 1.0]), t([0.5, 0.5])),
              lambda m, t: m.Geometric(t([0.0, 0.5])), lambda m, t: m.OneHotCategorical(t([0.5, -0.5])),
              lambda m, t: m.NegativeBinomial(t([-1.0, 1.0]), t([0.5, 0.5]))]
    for build in builds:
        with pytest.raises(ValueError) as theirs:
            build(D, torch.tensor)
        with pytest.raises(ValueError) as ours:
            build(_Fg, fg.tensor)
        assert str(ours.value).split(":\n")[0] == str(theirs.value).split(":\n")[0].replace("torch.Size([2])", "(2,)")


class _Fg:
    """fgraph's classes under torch.distributions' names (one module-like namespace for the message test)."""

    Bernoulli, Binomial, Geometric, OneHotCategorical = Bernoulli, Binomial, Geometric, OneHotCategorical
    NegativeBinomial = NegativeBinomial
