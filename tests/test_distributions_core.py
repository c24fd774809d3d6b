"""fgraph.distributions' base: Distribution, constraints, kl registry, Normal and Categorical.

torch.distributions is the oracle where installed (float64, values and gradients to 1e-9, second
order for Normal and Categorical); without it, closed forms and jax.scipy.stats, and sample statistics.
"""
import warnings

import jax
import jax.numpy as jnp
import jax.scipy.stats as jstats
import numpy as np
import pytest

import fgraph as fg
from fgraph.distributions import Categorical, Distribution, Normal, constraints, kl_divergence, register_kl

from dist_harness import (check_frequencies, check_ks, check_moments, check_pathwise_gradients,
                          compare_with_torch, fg_params)

LOC = np.array([[0.3, -1.2, 2.0]])
SCALE = np.array([[0.5], [1.7]])
VALUE = np.array([0.1, -0.4, 2.5])
LOGITS = np.array([[0.2, -1.0, 0.7, 0.0], [1.5, 0.1, -0.3, -2.0]])


# -- without torch: closed forms and jax.scipy.stats ----------------------------------------------------------------
def test_normal_matches_jax_scipy_and_closed_forms():
    p = fg_params({"loc": LOC, "scale": SCALE})
    d = Normal(p["loc"], p["scale"])
    v = fg.tensor(VALUE, dtype=fg.float64)
    assert d.batch_shape == (2, 3) and d.event_shape == ()
    np.testing.assert_allclose(np.asarray(d.log_prob(v)), jstats.norm.logpdf(VALUE, LOC, SCALE), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(d.cdf(v)), jstats.norm.cdf(VALUE, LOC, SCALE), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(d.icdf(fg.tensor([0.1, 0.5, 0.9], dtype=fg.float64))),
                               jstats.norm.ppf(np.array([0.1, 0.5, 0.9]), LOC, SCALE), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(d.entropy()), np.broadcast_to(0.5 * np.log(2 * np.pi * np.e * SCALE ** 2),
                                                                        (2, 3)), rtol=1e-12)
    (g_loc, g_scale) = fg.grad(d.log_prob(v).sum(), [p["loc"], p["scale"]])
    ref = jax.grad(lambda m, s: jstats.norm.logpdf(VALUE, m, s).sum(), argnums=(0, 1))(LOC, SCALE)
    np.testing.assert_allclose(np.asarray(g_loc), ref[0], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(g_scale), ref[1], rtol=1e-12)


def test_categorical_matches_closed_forms():
    logits = fg.tensor(LOGITS, dtype=fg.float64, requires_grad=True)
    d = Categorical(logits=logits)
    log_p = jax.nn.log_softmax(LOGITS, -1)
    v = fg.tensor([3, 0])
    np.testing.assert_allclose(np.asarray(d.log_prob(v)), log_p[[0, 1], [3, 0]], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(d.entropy()), -(np.exp(log_p) * log_p).sum(-1), rtol=1e-12)
    (g,) = fg.grad(d.entropy().sum(), [logits])
    ref = jax.grad(lambda lg: -(jax.nn.softmax(lg) * jax.nn.log_softmax(lg)).sum())(LOGITS)
    np.testing.assert_allclose(np.asarray(g), ref, rtol=1e-10, atol=1e-12)
    from_probs = Categorical(probs=fg.tensor(np.exp(log_p) * 3.0, dtype=fg.float64))  # normalised by Categorical
    np.testing.assert_allclose(np.asarray(from_probs.logits), log_p, rtol=1e-10)
    assert d.enumerate_support().shape == (4, 2)
    assert d.enumerate_support(expand=False).shape == (4, 1)
    assert d.mode.tolist() == [2, 0]


def test_kl_normal_normal_and_categorical_closed_forms():
    p, q = Normal(0.3, 0.5), Normal(-1.0, 2.0)
    ref = np.log(2.0 / 0.5) + (0.5 ** 2 + 1.3 ** 2) / (2 * 4.0) - 0.5
    np.testing.assert_allclose(kl_divergence(p, q).item(), ref, rtol=1e-6)
    probs = np.array([0.2, 0.3, 0.5])
    other = np.array([0.6, 0.3, 0.1])
    kl = kl_divergence(Categorical(probs=fg.tensor(probs)), Categorical(probs=fg.tensor(other))).item()
    np.testing.assert_allclose(kl, (probs * np.log(probs / other)).sum(), rtol=1e-5)


def test_sampling_statistics_and_pathwise_gradients():
    d = Normal(fg.tensor([0.5, -2.0], dtype=fg.float64), fg.tensor([1.0, 3.0], dtype=fg.float64))
    check_moments(d)
    check_ks(np.asarray(d.sample((4000,), key=jax.random.key(1)))[:, 0],
             lambda x: jstats.norm.cdf(x, 0.5, 1.0))
    check_pathwise_gradients(Normal, {"loc": np.array([0.5, -2.0]), "scale": np.array([1.0, 3.0])})
    probs = np.array([0.1, 0.2, 0.3, 0.4])
    samples = Categorical(probs=fg.tensor(probs)).sample((20000,), key=jax.random.key(2))
    check_frequencies(np.asarray(samples), probs)


def test_sampling_is_reproducible_and_traceable():
    d = Normal(fg.zeros(3), 1.0)
    fg.manual_seed(5)
    a = d.sample((2,))
    fg.manual_seed(5)
    assert d.sample((2,)).tolist() == a.tolist()
    key = jax.random.key(3)
    assert d.rsample(key=key).tolist() == d.rsample(key=key).tolist()

    def log_lik(loc, key):
        dist = Normal(fg.tensor(loc), 1.0)
        return dist.log_prob(dist.rsample((4,), key=key)).sum().array

    eager = log_lik(jnp.zeros(2), key)
    np.testing.assert_allclose(jax.jit(log_lik)(jnp.zeros(2), key), eager, rtol=1e-6)
    batched = jax.vmap(log_lik, in_axes=(0, None))(jnp.zeros((5, 2)), key)
    np.testing.assert_allclose(np.asarray(batched), np.full(5, eager), rtol=1e-6)


def test_distributions_inside_fg_func_vmap():
    locs = fg.tensor(np.linspace(-1, 1, 10).reshape(5, 2))

    def log_lik(loc):
        return Normal(loc, 1.0).log_prob(fg.zeros(2)).sum()

    per_row = fg.func.vmap(log_lik)(locs)
    np.testing.assert_allclose(np.asarray(per_row), [log_lik(locs[i]).item() for i in range(5)], rtol=1e-6)
    grads = fg.func.vmap(fg.func.grad(log_lik))(locs)
    np.testing.assert_allclose(np.asarray(grads), -np.asarray(locs), rtol=1e-6)
    draws = fg.func.vmap(lambda loc: Normal(loc, 1.0).rsample(), randomness="different")(locs)
    assert draws.shape == (5, 2) and len({tuple(r) for r in np.asarray(draws).round(6).tolist()}) == 5
    actions = fg.func.vmap(lambda lg: Categorical(logits=lg).sample(), randomness="different")(locs)
    assert actions.shape == (5,)


def test_compiled_step_with_distributions():
    model = fg.nn.Linear(2, 2)
    opt = fg.optim.SGD(model.parameters(), lr=0.1)

    @fg.compile
    def step(x):
        out = model(x)
        q = Normal(out, 1.0)
        z = q.rsample()  # the default generator, threaded through the compiled program
        loss = -q.log_prob(z).mean() + kl_divergence(q, Normal(0.0, 1.0)).mean()
        opt.step(loss.backward())
        return loss, z

    fg.manual_seed(0)
    x = fg.ones(4, 2)
    (_, z1), (_, z2) = step(x), step(x)
    assert z1.shape == (4, 2) and not np.allclose(np.asarray(z1), np.asarray(z2))


# -- validation and errors ------------------------------------------------------------------------------------------
def test_validation_errors_name_parameter_and_constraint():
    with pytest.raises(ValueError, match=r"Expected parameter scale .* GreaterThan\(lower_bound=0.0\)"):
        Normal(fg.zeros(2), fg.tensor([1.0, -1.0]))
    Normal(0.0, -1.0, validate_args=False)  # off per instance
    with pytest.raises(ValueError, match=r"Expected value argument .* support \(IntegerInterval"):
        Categorical(logits=fg.zeros(3)).log_prob(fg.tensor(3))
    with pytest.raises(ValueError, match="either `probs` or `logits`"):
        Categorical()
    with pytest.raises(TypeError, match="sample_shape must be a tuple of non-negative ints"):
        Normal(0.0, 1.0).rsample((2.5,))
    with pytest.raises(ValueError, match="event_shape|broadcastable"):
        Normal(fg.zeros(3), 1.0).log_prob(fg.zeros(2))
    Distribution.set_default_validate_args(False)
    try:
        Normal(0.0, -1.0)
    finally:
        Distribution.set_default_validate_args(True)


def test_kl_registry_dispatch_and_errors():
    class MyNormal(Normal):
        pass

    assert kl_divergence(MyNormal(0.0, 1.0), Normal(1.0, 1.0)).item() == pytest.approx(0.5)
    with pytest.raises(NotImplementedError, match="p type Normal and q type Categorical"):
        kl_divergence(Normal(0.0, 1.0), Categorical(logits=fg.zeros(2)))

    class A(Normal):
        pass

    class B(Normal):
        pass

    @register_kl(A, Normal)
    def _a_normal(p, q):
        return fg.tensor(1.0)

    @register_kl(Normal, B)
    def _normal_b(p, q):
        return fg.tensor(2.0)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kl_divergence(A(0.0, 1.0), B(0.0, 1.0))
    assert any("Ambiguous kl_divergence(A, B)" in str(w.message) for w in caught)
    with pytest.raises(TypeError, match="Distribution subclass"):
        register_kl(int, Normal)


def test_constraints_check():
    assert constraints.positive.check(fg.tensor([1.0, 0.0])).tolist() == [True, False]
    assert constraints.unit_interval.check(fg.tensor([0.0, 1.0, 1.5])).tolist() == [True, True, False]
    assert constraints.simplex.check(fg.tensor([[0.5, 0.5], [0.5, 0.6]])).tolist() == [True, False]
    assert constraints.lower_cholesky.check(fg.tensor([[1.0, 0.0], [2.0, 1.0]])).item()
    assert not constraints.lower_cholesky.check(fg.tensor([[1.0, 1.0], [2.0, 1.0]])).item()
    assert constraints.positive_definite.check(fg.tensor([[2.0, 1.0], [1.0, 2.0]])).item()
    assert not constraints.positive_definite.check(fg.tensor([[1.0, 2.0], [2.0, 1.0]])).item()
    assert constraints.integer_interval(0, 3).check(fg.tensor([0.0, 3.0, 1.5])).tolist() == [True, True, False]
    assert constraints.independent(constraints.real, 1).check(fg.zeros(2, 3)).shape == (2,)
    assert constraints.is_dependent(constraints.dependent) and not constraints.is_dependent(constraints.real)
    assert repr(constraints.interval(0.0, 2.0)) == "Interval(lower_bound=0.0, upper_bound=2.0)"


# -- torch as oracle ------------------------------------------------------------------------------------------------
def test_normal_against_torch_to_second_order():
    torch = pytest.importorskip("torch")
    compare_with_torch(Normal, torch.distributions.Normal, {"loc": LOC, "scale": SCALE}, VALUE,
                       methods=("log_prob", "entropy", "cdf", "mean", "mode", "variance", "stddev"),
                       second_order=True, value_grad=True)
    compare_with_torch(Normal, torch.distributions.Normal, {"loc": LOC, "scale": SCALE}, np.array([0.1, 0.5, 0.9]),
                       methods=("icdf",), second_order=True)
    p = fg_params({"loc": LOC, "scale": SCALE})
    q = fg_params({"loc": np.array([0.0]), "scale": np.array([2.0])})
    tp = {k: torch.tensor(v, requires_grad=True) for k, v in {"loc": LOC, "scale": SCALE}.items()}
    tq = {k: torch.tensor(v, requires_grad=True) for k, v in {"loc": np.array([0.0]), "scale": np.array([2.0])}.items()}
    kl = kl_divergence(Normal(**p), Normal(**q))
    tkl = torch.distributions.kl_divergence(torch.distributions.Normal(**tp), torch.distributions.Normal(**tq))
    np.testing.assert_allclose(np.asarray(kl), tkl.detach().numpy(), rtol=1e-12)
    grads = fg.grad(kl.sum(), [*p.values(), *q.values()])
    tgrads = torch.autograd.grad(tkl.sum(), [*tp.values(), *tq.values()])
    for a, b in zip(grads, tgrads):
        np.testing.assert_allclose(np.asarray(a), b.numpy(), rtol=1e-12)


def test_categorical_against_torch_to_second_order():
    torch = pytest.importorskip("torch")
    for kind, param in (("logits", LOGITS), ("probs", np.exp(LOGITS))):
        compare_with_torch(lambda **k: Categorical(**k), lambda **k: torch.distributions.Categorical(**k),
                           {kind: param}, np.array([[3, 0], [1, 1]]),
                           methods=("log_prob", "entropy", "mean", "mode", "variance"), second_order=True)
    d, td = Categorical(logits=fg.tensor(LOGITS)), torch.distributions.Categorical(logits=torch.tensor(LOGITS))
    assert d.sample((5, 2)).shape == tuple(td.sample((5, 2)).shape)
    assert d.enumerate_support().shape == tuple(td.enumerate_support().shape)
    assert d.expand((3, 2)).batch_shape == tuple(td.expand((3, 2)).batch_shape)


def test_messages_equal_torch():
    torch = pytest.importorskip("torch")
    for build in (lambda m: m.Normal(m_tensor(m, [0.0]), m_tensor(m, [-1.0])),
                  lambda m: m.Categorical(probs=m_tensor(m, [0.5, -0.5]))):
        with pytest.raises(ValueError) as theirs:
            build(torch.distributions)
        with pytest.raises(ValueError) as ours:
            build(fg.distributions)
        theirs_text = str(theirs.value).split(":\n")[0].replace("torch.Size([2])", "(2,)")  # shapes are tuples here
        assert str(ours.value).split(":\n")[0] == theirs_text


def m_tensor(module, values):
    import torch

    return torch.tensor(values) if module is torch.distributions else fg.tensor(values)
