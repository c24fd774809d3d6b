"""fgraph.func against JAX and against Python loops of fg.grad.

Jacobians, Hessians, vjp and jvp are compared with ``jax.jacrev`` / ``jax.jacfwd`` /
``jax.hessian`` / ``jax.vjp`` / ``jax.jvp`` of pure-``jax.numpy`` twins of the same
programs (float64); ``vmap`` with a Python loop over the batch; per-sample gradients
with a loop of ``fg.grad``; ``functional_call`` with the module's own call.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fgraph as fg
import fgraph.nn.functional as F
from fgraph import nn
from fgraph.func import functional_call, grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp, vmap

FEW = settings(max_examples=5)


def t64(a, requires_grad=False):
    return fg.tensor(np.asarray(a, dtype=np.float64), dtype=fg.float64, requires_grad=requires_grad)


def close(actual, expected, atol=1e-10):
    assert isinstance(actual, fg.Tensor), type(actual)
    np.testing.assert_allclose(np.asarray(actual.array), np.asarray(expected), rtol=1e-9, atol=atol)


def close_tree(actual, expected):
    """Same structure (Tensors where JAX has arrays) and values."""
    a_leaves, a_def = jax.tree_util.tree_flatten(actual, is_leaf=lambda x: isinstance(x, fg.Tensor))
    e_leaves, e_def = jax.tree_util.tree_flatten(expected)
    assert a_def == e_def, (a_def, e_def)
    for a, e in zip(a_leaves, e_leaves):
        close(a, e)


def mats(shape):
    return hnp.arrays(np.float64, shape, elements=st.floats(-1.5, 1.5))


# -- the programs, twice: fgraph and pure JAX ---------------------------------------------------------
def f_fg(x, y):
    return fg.tanh(x * y) + fg.sin(x) * y.sum()


def f_jax(x, y):
    return jnp.tanh(x * y) + jnp.sin(x) * y.sum()


def scalar_fg(p, x):
    return (fg.tanh(p["w"] @ x + p["b"]) ** 2).sum() + (p["w"] ** 3).sum()


def scalar_jax(p, x):
    return (jnp.tanh(p["w"] @ x + p["b"]) ** 2).sum() + (p["w"] ** 3).sum()


# -- jacrev / jacfwd / hessian --------------------------------------------------------------------------
@FEW
@given(mats((3,)), mats((3,)))
def test_jacobians_match_jax_for_every_argnums(x, y):
    tx, ty = t64(x), t64(y)
    for argnums in (0, 1, (0, 1), (1, 0), -1):
        want = jax.jacrev(f_jax, argnums=argnums)(x, y)
        close_tree(jacrev(f_fg, argnums=argnums)(tx, ty), want)
        close_tree(jacfwd(f_fg, argnums=argnums)(tx, ty), jax.jacfwd(f_jax, argnums=argnums)(x, y))


@settings(max_examples=2)
@given(mats((2, 3)), mats((2,)), mats((3,)))
def test_jacobian_and_hessian_of_pytree_arguments_match_jax(w, b, x):
    p, tp = {"w": w, "b": b}, {"w": t64(w), "b": t64(b)}
    close_tree(jacrev(scalar_fg)(tp, t64(x)), jax.jacrev(scalar_jax)(p, x))
    close_tree(hessian(scalar_fg)(tp, t64(x)), jax.hessian(scalar_jax)(p, x))
    close_tree(hessian(scalar_fg, argnums=(0, 1))(tp, t64(x)), jax.hessian(scalar_jax, argnums=(0, 1))(p, x))


def test_jacrev_with_pytree_output_and_aux_and_nesting():
    x = np.array([0.3, -0.7])

    def f(t):
        return {"a": t ** 2, "b": (fg.sin(t).sum(), t * 3)}, t.sum()

    def fj(t):
        return {"a": t ** 2, "b": (jnp.sin(t).sum(), t * 3)}

    jac, aux = jacrev(f, has_aux=True)(t64(x))
    close_tree(jac, jax.jacrev(fj)(x))
    close(aux, x.sum())
    close(jacrev(jacrev(lambda t: fg.sin(t) * t))(t64(x)), jax.jacrev(jax.jacrev(lambda t: jnp.sin(t) * t))(x))


# -- grad / grad_and_value ------------------------------------------------------------------------------
@FEW
@given(mats((2, 3)), mats((2,)), mats((3,)))
def test_grad_of_pytree_params_matches_jax_grad(w, b, x):
    p, tp = {"w": w, "b": b}, {"w": t64(w), "b": t64(b)}
    close_tree(grad(scalar_fg)(tp, t64(x)), jax.grad(scalar_jax)(p, x))
    close_tree(grad(scalar_fg, argnums=(0, 1))(tp, t64(x)), jax.grad(scalar_jax, argnums=(0, 1))(p, x))
    g, v = grad_and_value(scalar_fg)(tp, t64(x))
    close_tree(g, jax.grad(scalar_jax)(p, x))
    close(v, scalar_jax(p, x))
    assert not g["w"].requires_grad and not v.requires_grad


def test_grad_has_aux_nested_orders_and_unused_inputs():
    x = t64(0.7)
    g, aux = grad(lambda t: (t ** 4, {"double": t * 2}), has_aux=True)(x)
    close(g, 4 * 0.7 ** 3)
    close(aux["double"], 1.4)
    (g2, (value, aux2)) = grad_and_value(lambda t: (t ** 4, t), has_aux=True)(x)
    close(value, 0.7 ** 4)
    third = grad(grad(grad(lambda t: fg.sin(t) * t ** 2)))(x)
    close(third, jax.grad(jax.grad(jax.grad(lambda t: jnp.sin(t) * t ** 2)))(0.7))
    gx, gy = grad(lambda a, b: a * 3.0, argnums=(0, 1))(x, t64([1.0, 2.0]))
    close(gy, [0.0, 0.0])
    close(grad(lambda t: fg.tensor(1.0, dtype=fg.float64))(x), 0.0)


def test_grad_of_a_gradient_stays_on_the_callers_graph():
    x = t64([0.5, -1.0], requires_grad=True)
    g = grad(lambda t: (t ** 3).sum())(x)
    assert g.requires_grad
    (gg,) = fg.grad(g.sum(), [x])
    close(gg, 6 * np.array([0.5, -1.0]))
    with fg.no_grad():
        assert not grad(lambda t: (t ** 3).sum())(x).requires_grad


def test_grad_errors_speak_torch():
    with pytest.raises(ValueError, match="scalar Tensor.*vjp or jacrev"):
        grad(lambda t: t * 2)(t64([1.0, 2.0]))
    with pytest.raises(TypeError, match="return a Tensor"):
        grad(lambda t: 3.0)(t64(1.0))
    with pytest.raises(TypeError, match="should be a tuple: \\(output, aux\\)"):
        grad(lambda t: t * 2, has_aux=True)(t64(1.0))
    with pytest.raises(ValueError, match="only 1 positional"):
        grad(lambda t: t.sum(), argnums=1)(t64(1.0))
    with pytest.raises(TypeError, match="dtype int"):
        grad(lambda t: t.sum())(fg.tensor([1, 2]))


# -- vjp / jvp ------------------------------------------------------------------------------------------
@FEW
@given(mats((3,)), mats((3,)), mats((3,)), mats((3,)))
def test_vjp_and_jvp_match_jax(x, y, u, v):
    out, fn = vjp(f_fg, t64(x), t64(y))
    jout, jfn = jax.vjp(f_jax, x, y)
    close(out, jout)
    close_tree(fn(t64(u)), jfn(u))
    close_tree(fn(t64(v)), jfn(v))  # callable again
    o, t = jvp(f_fg, (t64(x), t64(y)), (t64(u), t64(v)))
    jo, jt = jax.jvp(f_jax, (x, y), (u, v))
    close(o, jo)
    close(t, jt)


def test_vjp_and_jvp_of_pytrees_and_errors():
    p = {"w": t64([[1.0, 2.0]]), "b": t64([0.5])}
    out, fn = vjp(lambda q: {"y": q["w"].sum(1) + q["b"]}, p)
    (g,) = fn({"y": t64([2.0])})
    close(g["w"], [[2.0, 2.0]])
    close(g["b"], [2.0])
    with pytest.raises(ValueError, match="structure"):
        fn(t64([2.0]))
    with pytest.raises(ValueError, match="shape"):
        fn({"y": t64([2.0, 1.0])})
    with pytest.raises(TypeError, match="tuples"):
        jvp(fg.sin, t64(1.0), t64(1.0))
    with pytest.raises(ValueError, match="shape"):
        jvp(fg.sin, (t64([1.0, 2.0]),), (t64([1.0]),))


# -- vmap ----------------------------------------------------------------------------------------------
def test_vmap_in_dims_out_dims_match_a_loop():
    rng = np.random.default_rng(0)
    a, b, c = rng.standard_normal((4, 3)), rng.standard_normal((3, 4)), rng.standard_normal(3)
    ta, tb, tc = t64(a), t64(b), t64(c)
    close(vmap(fg.mul)(ta, ta), a * a)
    close(vmap(fg.mul, in_dims=(0, 1))(ta, tb), np.stack([a[i] * b[:, i] for i in range(4)]))
    close(vmap(fg.mul, in_dims=(0, None))(ta, tc), np.stack([a[i] * c for i in range(4)]))
    close(vmap(fg.mul, in_dims=(0, 1), out_dims=1)(ta, tb), np.stack([a[i] * b[:, i] for i in range(4)], 1))
    close(vmap(fg.mul, in_dims=-1, out_dims=-1)(tb, tb), b * b)
    outer = vmap(vmap(fg.mul, in_dims=(None, 0)), in_dims=(0, None))(ta[:, 0], tc)
    close(outer, np.outer(a[:, 0], c))

    def two(d, s):
        return {"sum": d["x"].sum() + s, "pair": (d["x"] * 2, d["y"])}

    out = vmap(two, in_dims=({"x": 0, "y": None}, None), out_dims={"sum": 0, "pair": (1, None)})(
        {"x": ta, "y": tc}, 1.5)
    close(out["sum"], a.sum(1) + 1.5)
    close(out["pair"][0], (a * 2).T)
    close(out["pair"][1], c)
    close(vmap(fg.sum, in_dims=0)(ta, dim=0), a.sum(1))  # kwargs are passed, not mapped


def test_vmap_chunk_size_matches_unchunked():
    x = t64(np.linspace(-1, 1, 14).reshape(7, 2))
    want = vmap(lambda t: (fg.exp(t), t.sum()))(x)
    for chunk in (1, 3, 7, 100):
        got = vmap(lambda t: (fg.exp(t), t.sum()), chunk_size=chunk)(x)
        close(got[0], want[0].array)
        close(got[1], want[1].array)
    close(vmap(fg.mul, in_dims=(1, 0), out_dims=1, chunk_size=2)(x.transpose(0, 1), x), (x.array * x.array).T)


def test_vmap_randomness_modes():
    x = fg.zeros(5, 3)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(lambda t: t + fg.rand(3))(x)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(lambda t: F.dropout(t + 1.0, 0.5))(x)
    same = vmap(lambda t: t + fg.rand(3), randomness="same")(x).numpy()
    assert np.all(same == same[0]) and len(np.unique(same)) == 3
    diff = vmap(lambda t: t + fg.rand(3), randomness="different")(x).numpy()
    assert len(np.unique(diff)) == 15
    chunked = vmap(lambda t: t + fg.rand(3), randomness="different", chunk_size=2)(x).numpy()
    assert len(np.unique(chunked)) == 15
    key = jax.random.key(0)
    keyed = vmap(lambda t: t + fg.rand(3, key=key))(x).numpy()  # key= is pure: allowed in "error" mode
    np.testing.assert_array_equal(keyed, np.broadcast_to(fg.rand(3, key=key).numpy(), (5, 3)))
    _ = fg.manual_seed(1)
    a = vmap(lambda t: t + fg.rand(3), randomness="different")(x).numpy()
    _ = fg.manual_seed(1)
    np.testing.assert_array_equal(vmap(lambda t: t + fg.rand(3), randomness="different")(x).numpy(), a)
    assert not isinstance(fg.get_rng_state(), jax.core.Tracer)


def test_vmap_errors_speak_torch():
    x, y = fg.ones(3, 2), fg.ones(4, 2)
    with pytest.raises(ValueError, match="in_dims is not compatible.*2 entries but 1"):
        vmap(fg.sin, in_dims=(0, 0))(x)
    with pytest.raises(ValueError, match="same size in the mapped dimension, got sizes \\[3, 4\\]"):
        vmap(fg.mul)(x, y)
    with pytest.raises(ValueError, match="non-Tensor"):
        vmap(fg.mul, in_dims=(0, 0))(x, 2.0)
    with pytest.raises(ValueError, match="in_dim=2.*dimensionality 2"):
        vmap(fg.sin, in_dims=2)(x)
    with pytest.raises(ValueError, match="at least one input"):
        vmap(fg.sin, in_dims=None)(x)
    with pytest.raises(ValueError, match="out_dims"):
        vmap(fg.sin, out_dims=None)(x)
    with pytest.raises(TypeError, match="only return Tensors"):
        vmap(lambda t: 3)(x)
    with pytest.raises(ValueError, match="randomness"):
        vmap(fg.sin, randomness="never")
    with pytest.raises(ValueError, match="chunk_size"):
        vmap(fg.sin, chunk_size=0)


def test_gradients_flow_through_vmap_to_any_order():
    rng = np.random.default_rng(1)
    xs, w = rng.standard_normal((4, 3)), rng.standard_normal(3)
    tx, tw = t64(xs, requires_grad=True), t64(w, requires_grad=True)

    def f(x, w):
        return fg.tanh(x * w).sum() ** 2

    def fj(w, xs):
        return (jax.vmap(lambda x: jnp.sum(jnp.tanh(x * w)) ** 2)(xs) ** 2).sum()

    out = vmap(f, in_dims=(0, None))(tx, tw)
    assert out.grad_fn.name() == "VmapBackward"
    gx, gw = fg.grad((out ** 2).sum(), [tx, tw], create_graph=True)
    close(gw, jax.grad(fj)(w, xs))
    close(gx, jax.grad(fj, argnums=1)(w, xs))
    (ggw,) = fg.grad(gw.sum(), [tw])
    close(ggw, jax.grad(lambda w: jax.grad(fj)(w, xs).sum())(w))
    close(grad(lambda w: vmap(f, in_dims=(0, None))(t64(xs), w).sum())(t64(w)),
          jax.grad(lambda w: jax.vmap(lambda x: jnp.sum(jnp.tanh(x * w)) ** 2)(xs).sum())(w))


# -- functional_call -------------------------------------------------------------------------------------
def test_functional_call_leaves_the_module_unchanged_and_gives_gradients():
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    before = dict(model.named_parameters())
    x = t64(np.ones((2, 3)))
    params = {k: fg.zeros_like(v).requires_grad_() for k, v in model.named_parameters()}
    out = functional_call(model, params, (x,))
    close(out, np.zeros((2, 2)))
    grads = fg.grad(out.sum(), list(params.values()), allow_unused=True)
    close(grads[-1], [2.0, 2.0])
    assert all(dict(model.named_parameters())[k] is v for k, v in before.items())
    close(functional_call(model, {"2.bias": t64([1.0, 2.0])}, x), model(x).array + np.array([1.0, 2.0]) -
          model[2].bias.array)
    split = ({"0.weight": params["0.weight"]}, {"2.bias": t64([5.0, 5.0])})
    hidden = np.tanh(np.broadcast_to(model[0].bias.numpy(), (2, 4)))
    close(functional_call(model, split, (x,)), hidden @ model[2].weight.numpy().T + 5.0)


def test_functional_call_buffers_tied_weights_and_strict():
    bn = nn.BatchNorm1d(2).double().eval()
    x = t64([[1.0, 2.0], [3.0, 5.0]])
    out = functional_call(bn, {"running_mean": t64([1.0, 1.0]), "running_var": t64([4.0, 4.0])}, (x,))
    close(out, (x.array - 1.0) / np.sqrt(4.0 + bn.eps))
    assert bn.running_mean.tolist() == [0.0, 0.0]

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2, bias=False)
            self.b = nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    m = Tied().double()
    eye2 = t64(2 * np.eye(2))
    close(functional_call(m, {"a.weight": eye2}, x), 4 * x.array)
    close(functional_call(m, {"b.weight": eye2}, x), 4 * x.array)
    close(functional_call(m, {"a.weight": eye2}, x, tie_weights=False), 2 * x.array @ m.a.weight.array.T)
    with pytest.raises(ValueError, match="tied"):
        functional_call(m, {"a.weight": eye2, "b.weight": t64(np.eye(2))}, x)
    with pytest.raises(ValueError, match="Missing key\\(s\\): 'bias'"):
        functional_call(nn.Linear(2, 2), {"weight": fg.ones(2, 2)}, fg.ones(1, 2), strict=True)
    with pytest.raises(ValueError, match="Unexpected key\\(s\\): 'weights'"):
        functional_call(nn.Linear(2, 2), {"weights": fg.ones(2, 2)}, fg.ones(1, 2))
    with pytest.raises(ValueError, match="multiple values"):
        functional_call(nn.Linear(2, 2), ({"weight": fg.ones(2, 2)}, {"weight": fg.ones(2, 2)}), fg.ones(1, 2))
    assert functional_call(m, {"a.weight": eye2}, x, tie_weights=True, strict=True).shape == (2, 2)


# -- per-sample gradients ---------------------------------------------------------------------------------
def per_sample_vs_loop(model, x, y):
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss_fn(params, xi, yi):
        return F.cross_entropy(functional_call(model, params, (xi[None],)), yi[None])

    got = vmap(grad(loss_fn), in_dims=(None, 0, 0))(params, x, y)
    names = list(params)
    leaves = [p for _, p in model.named_parameters()]
    for i in range(x.shape[0]):
        want = fg.grad(F.cross_entropy(model(x[i:i + 1]), y[i:i + 1]), leaves)
        for name, w in zip(names, want):
            np.testing.assert_allclose(got[name].numpy()[i], w.numpy(), rtol=1e-9, atol=1e-12)
    return got


def test_per_sample_gradients_of_an_mlp_equal_a_loop_of_fg_grad():
    _ = fg.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3)).double()
    x, y = fg.randn(6, 5, dtype=fg.float64), fg.tensor([0, 1, 2, 2, 1, 0])
    got = per_sample_vs_loop(model, x, y)
    assert got["0.weight"].shape == (6, 8, 5)
    with_grad = vmap(grad(lambda p, xi, yi: F.cross_entropy(functional_call(model, p, (xi[None],)), yi[None])),
                     in_dims=(None, 0, 0))(dict(model.named_parameters()), x, y)
    close(with_grad["2.bias"], got["2.bias"].array)


def test_per_sample_gradients_of_a_cnn_equal_a_loop_of_fg_grad():
    _ = fg.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(2 * 3 * 3, 3)).double()
    x, y = fg.randn(4, 1, 5, 5, dtype=fg.float64), fg.tensor([0, 2, 1, 2])
    got = per_sample_vs_loop(model, x, y)
    assert got["0.weight"].shape == (4, 2, 1, 3, 3)


def test_vmap_composes_with_jacrev_hessian_jvp_and_hooks():
    xs = np.random.default_rng(2).standard_normal((4, 3))

    def f(t):
        return fg.sin(t) * t.sum()

    def fj(t):
        return jnp.sin(t) * t.sum()

    close(vmap(jacrev(f))(t64(xs)), jax.vmap(jax.jacrev(fj))(xs))
    close(vmap(hessian(lambda t: f(t).sum()))(t64(xs)), jax.vmap(jax.hessian(lambda t: fj(t).sum()))(xs))
    _, tangents = vmap(lambda p, v: jvp(f, (p,), (v,)))(t64(xs), t64(xs))
    close(tangents, jax.vmap(lambda p: jax.jvp(fj, (p,), (p,))[1])(xs))

    def hooked(t):
        t2 = t * 2
        t2.register_hook(lambda g: g * 10)  # the replacement gradient is what grad returns
        return (t2 ** 2).sum()

    close(vmap(grad(hooked))(t64(xs)), 80 * xs)


# -- the recorded path (fgraph/func/_recorded.py) -----------------------------------------------------------
@pytest.mark.eager_dispatch
def test_vmap_runs_one_cached_program_per_structure_and_its_python_every_call():
    _ = fg.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3)).double()
    params = {k: v.detach() for k, v in model.named_parameters()}
    runs = []

    def loss_fn(params, xi, yi):
        runs.append(1)  # Python side effects happen on every call, as in eager code
        return F.cross_entropy(functional_call(model, params, (xi[None],)), yi[None])

    per_sample = vmap(grad(loss_fn), in_dims=(None, 0, 0))
    fg.lazy.cache_clear()
    fg.lazy.reset_stats()
    for seed in range(3):
        x = fg.tensor(np.random.default_rng(seed).standard_normal((6, 5)))
        y = fg.tensor(np.random.default_rng(seed).integers(0, 3, 6))
        got = per_sample(params, x, y)
        for i in range(6):
            want = fg.grad(F.cross_entropy(model(x[i:i + 1]), y[i:i + 1]), list(model.parameters()))
            close(got["0.weight"][i], want[0].array)
            close(got["2.bias"][i], want[3].array)
    stats = fg.lazy.stats()
    assert len(runs) == 3
    assert (stats["traces"], stats["hits"]) == (1, 2), stats  # one program compiled, then replayed


def test_vmap_of_a_function_that_needs_per_sample_values_falls_back_to_jax_vmap():
    calls = []

    def inner_vmap(x):  # a vmap inside reads the outer per-sample placeholders: recording gives up
        calls.append(1)
        return vmap(fg.mul)(x, x).sum(0)

    mapped = vmap(inner_vmap)
    xs = np.random.default_rng(3).standard_normal((4, 2, 3))
    for _ in range(2):
        close(mapped(t64(xs)), (xs * xs).sum(1))
    assert len(calls) == 3  # the first call ran again on the general path; later calls take it directly


def test_vmap_recorded_outputs_that_are_inputs_or_constants_follow_out_dims():
    xs = np.arange(6.0).reshape(2, 3)
    const = fg.tensor([1.0, 2.0])
    same, c = vmap(lambda x: (x, const), out_dims=(1, 0))(t64(xs))
    close(same, xs.T)
    close(c, np.tile([1.0, 2.0], (2, 1)))
    with pytest.raises(ValueError, match="out_dims"):
        vmap(lambda x: x * 2, out_dims=None)(t64(xs))
