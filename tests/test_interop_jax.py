"""interop.to_jax / interop.from_jax against pure-JAX programs and nested jax.grad."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import fgraph as fg
from interop import from_jax, to_jax

MODES = ["vjp", "trace"]
_vals = st.floats(-1.5, 1.5, allow_nan=False, width=64)


def _close(a, b, tol=1e-10):
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert jax.tree_util.tree_structure(a) == jax.tree_util.tree_structure(b)
    for u, v in zip(la, lb):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=tol, atol=tol)


# -- to_jax ----------------------------------------------------------------------------------------
def mlp_fg(params, x):
    h = fg.tanh(x @ params["w1"] + params["b1"])
    return (fg.sin(h @ params["w2"]) ** 2).sum()


def mlp_jax(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return (jnp.sin(h @ params["w2"]) ** 2).sum()


_mlp_inputs = st.tuples(arrays(np.float64, (3, 4), elements=_vals), arrays(np.float64, (4,), elements=_vals),
                        arrays(np.float64, (4, 2), elements=_vals), arrays(np.float64, (5, 3), elements=_vals))


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=2)
@given(data=_mlp_inputs)
def test_to_jax_mlp_grad_jit_vmap_hessian_equal_pure_jax(mode, data):
    w1, b1, w2, x = (jnp.asarray(a) for a in data)
    params = {"w1": w1, "b1": b1, "w2": w2}
    f = to_jax(mlp_fg, mode=mode)
    _close(f(params, x), mlp_jax(params, x))
    _close(jax.grad(f)(params, x), jax.grad(mlp_jax)(params, x))
    _close(jax.jit(jax.grad(f))(params, x), jax.grad(mlp_jax)(params, x))
    per_sample = jax.vmap(jax.grad(f), in_axes=(None, 0))(params, x[:, None, :])
    _close(per_sample, jax.vmap(jax.grad(mlp_jax), in_axes=(None, 0))(params, x[:, None, :]))
    _close(jax.hessian(f)(params, x), jax.hessian(mlp_jax)(params, x))


@pytest.mark.parametrize("mode", MODES)
def test_to_jax_third_order_nested_grad_and_jit_hessian(mode):
    def f_fg(x):
        return (fg.exp(x * 0.5) * fg.sin(x)).sum()

    def f_jax(x):
        return (jnp.exp(x * 0.5) * jnp.sin(x)).sum()

    def third(f):
        return jax.grad(lambda a: jax.grad(lambda b: jax.grad(f)(b).sum())(a).sum())

    x = jnp.linspace(-1.0, 1.0, 4)
    f = to_jax(f_fg, mode=mode)
    _close(third(f)(x), third(f_jax)(x))
    _close(jax.jit(jax.hessian(f))(x), jax.hessian(f_jax)(x))
    _close(jax.jacfwd(jax.grad(f))(x), jax.hessian(f_jax)(x))
    _close(jax.jacrev(jax.grad(f))(x), jax.hessian(f_jax)(x))


def _doubling_hook_fn(fired):
    def f(x):
        y = x * x
        if y.requires_grad:  # in trace mode nothing requires grad, so no hook can be registered
            y.register_hook(lambda g: (fired.append(g.shape), g * 2.0)[1])
        return y.sum()
    return f


def test_hook_fires_under_jax_grad_in_vjp_mode_and_replaces_the_gradient():
    fired = []
    x = jnp.array([1.0, -2.0, 0.5])
    g = jax.grad(to_jax(_doubling_hook_fn(fired)))(x)
    assert fired == [(3,)]
    _close(g, 4.0 * x)  # the hook doubled 2x


def test_hook_does_not_run_in_trace_mode():
    fired = []
    x = jnp.array([1.0, -2.0, 0.5])
    g = jax.grad(to_jax(_doubling_hook_fn(fired), mode="trace"))(x)
    assert fired == []
    _close(g, 2.0 * x)


class _WrongSin(fg.autograd.Function):
    """sin with a deliberately different backward (10 * grad instead of cos(x) * grad)."""

    @staticmethod
    def forward(ctx, x):
        return fg.sin(x)

    @staticmethod
    def backward(ctx, g):
        return g * 10.0


def test_custom_function_backward_is_used_in_vjp_mode_only():
    x = jnp.array([0.3, 1.2])

    def f(t):
        return _WrongSin.apply(t).sum()

    _close(jax.grad(to_jax(f))(x), jnp.full(2, 10.0))
    _close(jax.jit(jax.grad(to_jax(f)))(x), jnp.full(2, 10.0))
    _close(jax.grad(to_jax(f, mode="trace"))(x), jnp.cos(x))


def test_integer_inputs_and_outputs_get_float0_cotangents():
    def f(x, idx):
        return (x[idx] ** 2).sum(), idx * 2

    exported = to_jax(f)
    x = jnp.array([1.0, 2.0, 3.0])
    idx = jnp.array([0, 0, 2])
    g = jax.grad(lambda a: exported(a, idx)[0])(x)
    _close(g, jnp.array([4.0, 0.0, 6.0]))
    gx, gi = jax.grad(lambda a, i: exported(a, i)[0], argnums=(0, 1), allow_int=True)(x, idx)
    assert gi.dtype == jax.dtypes.float0
    out, twice = exported(x, idx)
    assert twice.dtype == idx.dtype and twice.tolist() == [0, 0, 4]


def test_static_leaves_and_kwargs_pass_through():
    def f(x, n, *, scale):
        assert isinstance(n, int) and isinstance(scale, str)
        return {"y": (x ** n).sum(), "z": (x * 2.0,)}

    out = to_jax(f)(jnp.array([1.0, 2.0]), 3, scale="s")
    assert set(out) == {"y", "z"} and isinstance(out["z"], tuple)
    _close(out["y"], jnp.array(9.0))
    g = jax.grad(lambda a: to_jax(f)(a, 2, scale="s")["y"])(jnp.array([1.0, 2.0]))
    _close(g, jnp.array([2.0, 4.0]))


def test_forward_mode_on_the_export_itself_is_refused_in_vjp_mode_and_works_in_trace_mode():
    def f(x):
        return fg.sin(x) * x

    x, v = jnp.array([0.1, 0.7]), jnp.array([1.0, 2.0])
    with pytest.raises(TypeError, match="forward-mode"):
        jax.jvp(to_jax(f), (x,), (v,))
    _, t = jax.jvp(to_jax(f, mode="trace"), (x,), (v,))
    _close(t, (jnp.cos(x) * x + jnp.sin(x)) * v)
    _close(jax.jacrev(to_jax(f))(x), jnp.diag(jnp.cos(x) * x + jnp.sin(x)))


def test_to_jax_errors_are_clear():
    with pytest.raises(TypeError, match=r"to_jax\(bad\).*returned a str"):
        def bad(x):
            return {"a": "text"}
        to_jax(bad)(jnp.ones(2))
    with pytest.raises(ValueError, match="mode must be one of"):
        to_jax(mlp_fg, mode="forward")
    with pytest.raises(TypeError, match="callable"):
        to_jax(3)


# -- from_jax --------------------------------------------------------------------------------------
def _special(a):
    return jax.scipy.special.gammaln(a) * jnp.sin(a)


@settings(max_examples=4)
@given(values=arrays(np.float64, (3,), elements=st.floats(0.5, 3.0, allow_nan=False, width=64)))
def test_from_jax_derivatives_up_to_third_order_equal_nested_jax_grad(values):
    op = from_jax(_special)
    x = fg.tensor(values, requires_grad=True)
    y = (op(x) * fg.cos(x)).sum()
    (g1,) = fg.grad(y, [x], create_graph=True)
    (g2,) = fg.grad(g1.sum(), [x], create_graph=True)
    (g3,) = fg.grad(g2.sum(), [x])

    def ref(a):
        return (_special(a) * jnp.cos(a)).sum()

    r1 = jax.grad(ref)
    r2 = jax.grad(lambda a: r1(a).sum())
    r3 = jax.grad(lambda a: r2(a).sum())
    a = jnp.asarray(values)
    _close(y.array, ref(a))
    _close(g1.array, r1(a))
    _close(g2.array, r2(a))
    _close(g3.array, r3(a))


def ode_step(state, params, dt, n):
    p, v = state["p"], state["v"]
    for _ in range(n):
        v = v - dt * params["k"] * jnp.sin(p)
        p = p + dt * v
    return (p, v), jnp.sum(p * v)


def test_from_jax_pytrees_static_arguments_and_node_name():
    op = from_jax(ode_step, static_argnums=(3,))
    p = fg.tensor([0.3, 0.5], dtype=fg.float64, requires_grad=True)
    v = fg.tensor([0.0, 0.1], dtype=fg.float64)  # needs no gradient: no edge
    k = fg.tensor(1.3, dtype=fg.float64, requires_grad=True)
    (p2, v2), energy = op({"p": p, "v": v}, {"k": k}, 0.1, 3)
    assert energy.grad_fn.name() == "OdeStepBackward0"
    assert p2.grad_fn is energy.grad_fn and v2.output_nr == 1
    assert sum(e is not None for e in energy.grad_fn.next_edges) == 2
    loss = (p2 * p2).sum() + energy + v2.sum()
    gp, gk = fg.grad(loss, [p, k], create_graph=True)
    (gpk,) = fg.grad(gk, [p])

    def ref(pa, ka):
        (a, b), e = ode_step({"p": pa, "v": v.array}, {"k": ka}, 0.1, 3)
        return (a * a).sum() + e + b.sum()

    _close(gp.array, jax.grad(ref, 0)(p.array, k.array))
    _close(gk.array, jax.grad(ref, 1)(p.array, k.array))
    _close(gpk.array, jax.grad(jax.grad(ref, 1), 0)(p.array, k.array))
    (p5, _), _ = op({"p": p, "v": v}, {"k": k}, 0.1, 5)  # another static value: another trace
    _close(p5.array, ode_step({"p": p.array, "v": v.array}, {"k": k.array}, 0.1, 5)[0][0])


def test_from_jax_node_names():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    assert from_jax(jnp.sin)(x).grad_fn.name() == "SinBackward0"
    assert from_jax(lambda a: a * 2.0)(x).grad_fn.name() == "JaxFunctionBackward0"
    assert from_jax(jnp.sin, name="my_sine")(x).grad_fn.name() == "MySineBackward0"
    (g,) = fg.grad(from_jax(jnp.sin)(x).sum(), [x], create_graph=True)
    assert g.grad_fn.name() == "SinBackwardBackward0"
    assert from_jax(jnp.sin)(fg.tensor([1.0])).grad_fn is None


def test_round_trip_to_jax_of_from_jax_equals_the_jax_function():
    f = to_jax(lambda t: from_jax(_special)(t).sum())

    def ref(a):
        return _special(a).sum()

    a = jnp.array([0.7, 1.9, 2.4])
    _close(f(a), ref(a))
    _close(jax.grad(f)(a), jax.grad(ref)(a))
    _close(jax.hessian(f)(a), jax.hessian(ref)(a))
    _close(jax.jit(jax.grad(jax.grad(lambda s: f(s * a))))(0.9), jax.grad(jax.grad(lambda s: ref(s * a)))(0.9))


def test_from_jax_inside_a_jitted_fgraph_program():
    op = from_jax(jnp.tanh)

    def grad_of(a):
        x = fg.tensor(a, requires_grad=True)
        (g,) = fg.grad((op(x) ** 2).sum(), [x])
        return g.array

    a = jnp.array([0.1, -0.4])
    _close(jax.jit(grad_of)(a), jax.grad(lambda b: (jnp.tanh(b) ** 2).sum())(a))


def test_from_jax_integer_inputs_and_errors():
    take = from_jax(lambda a, i: a[i] * 3.0)
    x = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (g,) = fg.grad(take(x, fg.tensor([2, 2])).sum(), [x])
    _close(g.array, jnp.array([0.0, 0.0, 6.0]))
    with pytest.raises(TypeError, match=r"from_jax\(bad\).*returned a str"):
        def bad(a):
            return "no"
        from_jax(bad)(x)
    with pytest.raises(TypeError, match="static_argnums names argument 2"):
        from_jax(jnp.sin, static_argnums=2)(x)
    with pytest.raises(TypeError, match="callable"):
        from_jax("sin")
