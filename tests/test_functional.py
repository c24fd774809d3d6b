"""fgraph.autograd.functional against JAX: jacobian, hessian, vjp, jvp, hvp, vhp.

Every product is compared with the matching JAX transform of a pure-``jax.numpy``
twin of the same program (``jax.jacrev``, ``jax.hessian``, ``jax.vjp``, ``jax.jvp``,
``jax.jvp(jax.grad(...))``) on hypothesis-drawn float64 values. Shapes come from a
tiny fixed pool so kernels compiled for one example serve the next.
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
from fgraph.autograd import functional as F

FEW = settings(max_examples=6)
N = st.sampled_from([2, 3])  # vector length pool


def t64(a, requires_grad=False):
    return fg.tensor(np.asarray(a, dtype=np.float64), dtype=fg.float64, requires_grad=requires_grad)


def vec(n):
    return hnp.arrays(np.float64, (n,), elements=st.floats(-1.5, 1.5))


def close(actual, expected, atol=1e-10):
    np.testing.assert_allclose(np.asarray(actual.array), np.asarray(expected), rtol=1e-9, atol=atol)


def close_tree(actual, expected):
    """Compare nested tuples of Tensors with nested tuples of arrays, structure included."""
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected), (type(actual), expected)
        for a, e in zip(actual, expected):
            close_tree(a, e)
    else:
        assert isinstance(actual, fg.Tensor), type(actual)
        assert actual.shape == tuple(np.shape(expected))
        close(actual, expected)


# -- programs: an fgraph version and a jax.numpy twin ----------------------------------------------
def fg_elem(x):
    return fg.sin(x) * fg.exp(x) + x * x


def jx_elem(x):
    return jnp.sin(x) * jnp.exp(x) + x * x


def fg_layer(x, w):
    return fg.tanh(w @ x)


def jx_layer(x, w):
    return jnp.tanh(w @ x)


def fg_scalar(x):
    return (x ** 3).sum() + (fg.sin(x) * x).sum()


def jx_scalar(x):
    return (x ** 3).sum() + (jnp.sin(x) * x).sum()


def fg_scalar2(x, y):
    return (fg.sigmoid(x) * y.sum()).sum() + (y * y * y).mean()


def jx_scalar2(x, y):
    return (jax.nn.sigmoid(x) * y.sum()).sum() + (y * y * y).mean()


def fg_two_out(x):
    return fg.cos(x) * 2.0, (x * x).sum()


def jx_two_out(x):
    return jnp.cos(x) * 2.0, (x * x).sum()


# JAX references, jitted: compiled once per shape, then cheap for every later example.
JACREV = {
    "elem": jax.jit(jax.jacrev(jx_elem)),
    "layer": jax.jit(jax.jacrev(jx_layer, argnums=(0, 1))),
    "two_out": jax.jit(jax.jacrev(jx_two_out)),
    "two_out_tuple": jax.jit(jax.jacrev(jx_two_out, argnums=(0,))),
}
HESSIAN = {"scalar": jax.jit(jax.hessian(jx_scalar)), "scalar2": jax.jit(jax.hessian(jx_scalar2, argnums=(0, 1)))}


@jax.jit
def hvp_refs(x, y, v, w):
    return (jx_scalar(x), jax.jvp(jax.grad(jx_scalar), (x,), (v,))[1], jax.vjp(jax.grad(jx_scalar), x)[1](v)[0],
            jax.jvp(jax.grad(jx_scalar2, argnums=(0, 1)), (x, y), (v, w))[1])


@jax.jit
def vjp_jvp_refs(x, v, w, u, c):
    return (jx_elem(x), jax.vjp(jx_elem, x)[1](v)[0], jax.vjp(jx_layer, x, w)[1](u),
            jax.vjp(jx_two_out, x)[1]((v, c))[0], jax.jvp(jx_elem, (x,), (v,))[1],
            jax.jvp(jx_layer, (x, w), (v, w))[1], jax.jvp(jx_two_out, (x,), (v,))[1])


# -- jacobian --------------------------------------------------------------------------------------
@FEW
@given(data=st.data(), n=N)
def test_jacobian_matches_jacrev(data, n):
    x = data.draw(vec(n))
    w = data.draw(hnp.arrays(np.float64, (2, n), elements=st.floats(-1.5, 1.5)))
    for vectorize in (False, True):
        close_tree(F.jacobian(fg_elem, t64(x), vectorize=vectorize), JACREV["elem"](x))
        close_tree(F.jacobian(fg_layer, (t64(x), t64(w)), vectorize=vectorize), JACREV["layer"](x, w))
        close_tree(F.jacobian(fg_two_out, t64(x), vectorize=vectorize), JACREV["two_out"](x))
        close_tree(F.jacobian(fg_two_out, (t64(x),), vectorize=vectorize), JACREV["two_out_tuple"](x))


def test_jacobian_vectorize_equals_loop_and_shapes():
    x = t64([[0.3, -0.7, 1.1], [0.2, 0.5, -1.3]])
    y = t64([0.4, 0.9])
    fn = lambda a, b: (fg.exp(a) * b.unsqueeze(1), (a * a).sum(), b * 3.0)  # noqa: E731
    loop = F.jacobian(fn, (x, y))
    vec_ = F.jacobian(fn, (x, y), vectorize=True)
    shapes = [[(2, 3, 2, 3), (2, 3, 2)], [(2, 3), (2,)], [(2, 2, 3), (2, 2)]]
    for i in range(3):
        for j in range(2):
            assert loop[i][j].shape == vec_[i][j].shape == shapes[i][j]
            np.testing.assert_allclose(np.asarray(loop[i][j].array), np.asarray(vec_[i][j].array), rtol=1e-12)


def test_return_structure_follows_tuples():
    x, y = t64([1.0, 2.0]), t64([3.0])
    single = F.jacobian(lambda a: a * 2.0, x)
    assert isinstance(single, fg.Tensor) and single.shape == (2, 2)
    per_input = F.jacobian(lambda a, b: a * b, (x, y))
    assert isinstance(per_input, tuple) and [j.shape for j in per_input] == [(2, 2), (2, 1)]
    per_output = F.jacobian(lambda a: (a, a.sum()), x)
    assert isinstance(per_output, tuple) and isinstance(per_output[0], fg.Tensor)
    nested = F.jacobian(lambda a, b: (a * b, b), (x, y))
    assert isinstance(nested[1], tuple) and nested[1][1].shape == (1, 1)
    h = F.hessian(lambda a, b: (a * a).sum() * b.sum(), (x, y))
    assert isinstance(h, tuple) and isinstance(h[0], tuple) and h[0][1].shape == (2, 1)
    out, g = F.vjp(lambda a: a.sum(), x)
    assert isinstance(out, fg.Tensor) and isinstance(g, fg.Tensor)
    out, g = F.vjp(lambda a, b: (a * b).sum(), (x, y))
    assert isinstance(g, tuple) and len(g) == 2
    out, t = F.jvp(lambda a: (a, a * 2.0), x, t64([1.0, 0.0]))
    assert isinstance(out, tuple) and isinstance(t, tuple) and t[1].tolist() == [2.0, 0.0]
    with pytest.raises(TypeError, match="tuple of Tensors"):
        F.jacobian(lambda a, b: a * b, [x, y])


# -- hessian and Hessian products ------------------------------------------------------------------
@FEW
@given(data=st.data(), n=N)
def test_hessian_matches_jax(data, n):
    x, y = data.draw(vec(n)), data.draw(vec(n))
    for vectorize in (False, True):
        close_tree(F.hessian(fg_scalar, t64(x), vectorize=vectorize), HESSIAN["scalar"](x))
        close_tree(F.hessian(fg_scalar2, (t64(x), t64(y)), vectorize=vectorize), HESSIAN["scalar2"](x, y))


@FEW
@given(data=st.data(), n=N)
def test_hvp_vhp_match_jax(data, n):
    x, y, v, w = (data.draw(vec(n)) for _ in range(4))
    ref_out, ref_hvp, ref_vhp, ref = hvp_refs(x, y, v, w)
    out, p = F.hvp(fg_scalar, t64(x), t64(v))
    close(out, ref_out)
    close(p, ref_hvp)
    _, p = F.vhp(fg_scalar, t64(x), t64(v))
    close(p, ref_vhp)
    close_tree(F.hvp(fg_scalar2, (t64(x), t64(y)), (t64(v), t64(w)))[1], ref)
    close_tree(F.vhp(fg_scalar2, (t64(x), t64(y)), (t64(v), t64(w)))[1], ref)  # H is symmetric


# -- vjp / jvp -------------------------------------------------------------------------------------
@FEW
@given(data=st.data(), n=N)
def test_vjp_jvp_match_jax(data, n):
    x, v = data.draw(vec(n)), data.draw(vec(n))
    w = data.draw(hnp.arrays(np.float64, (2, n), elements=st.floats(-1.5, 1.5)))
    u, c = data.draw(vec(2)), data.draw(st.floats(-1.0, 1.0))
    ref_out, ref_vjp, ref_layer_vjp, ref_two_vjp, ref_jvp, ref_layer_jvp, ref_two_jvp = vjp_jvp_refs(
        x, v, w, u, jnp.float64(c))
    out, g = F.vjp(fg_elem, t64(x), t64(v))
    close(out, ref_out)
    close(g, ref_vjp)
    _, g = F.vjp(fg_layer, (t64(x), t64(w)), t64(u))
    close_tree(g, ref_layer_vjp)
    _, g = F.vjp(fg_two_out, t64(x), (t64(v), t64(c)))
    close(g, ref_two_vjp)
    out, t = F.jvp(fg_elem, t64(x), t64(v))
    close(out, ref_out)
    close(t, ref_jvp)
    _, t = F.jvp(fg_layer, (t64(x), t64(w)), (t64(v), t64(w)))
    close(t, ref_layer_jvp)
    _, t = F.jvp(fg_two_out, t64(x), t64(v))
    close_tree(t, ref_two_jvp)


def test_v_may_be_omitted_only_for_single_elements():
    x = t64([0.5])
    _, g = F.vjp(lambda a: fg.exp(a).sum(), t64([1.0, 2.0]))
    close(g, np.exp([1.0, 2.0]))
    _, t = F.jvp(lambda a: a * a, x)
    close(t, [1.0])
    with pytest.raises(RuntimeError, match="v can only be None"):
        F.vjp(lambda a: a * 2.0, t64([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="v can only be None"):
        F.hvp(lambda a: a.sum(), t64([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="invalid size"):
        F.jvp(lambda a: a, t64([1.0, 2.0]), t64([1.0]))
    with pytest.raises(RuntimeError, match="single Tensor"):
        F.hvp(lambda a: (a.sum(), a.sum()), x, x)
    with pytest.raises(RuntimeError, match="single element"):
        F.hessian(lambda a: a * a, t64([1.0, 2.0]))


# -- strict mode -----------------------------------------------------------------------------------
def test_strict_errors_and_zeros_otherwise():
    x, y = t64([1.0, 2.0]), t64([3.0, 4.0])
    partial = lambda a, b: a * 2.0  # noqa: E731 - independent of b
    jx, jy = F.jacobian(partial, (x, y))
    assert jy.tolist() == [[0.0, 0.0], [0.0, 0.0]] and jx.tolist() == [[2.0, 0.0], [0.0, 2.0]]
    with pytest.raises(fg.GradError, match="Output 0 of the user-provided function is independent of input 1"):
        F.jacobian(partial, (x, y), strict=True)
    with pytest.raises(RuntimeError, match="strict=True` and `vectorize=True"):
        F.jacobian(partial, (x, y), strict=True, vectorize=True)
    _, (gx, gy) = F.vjp(partial, (x, y), x)
    assert gy.tolist() == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="independent of input 1"):
        F.vjp(partial, (x, y), x, strict=True)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not require gradients"):
        F.jacobian(lambda a: fg.tensor([1.0, 2.0]), x, strict=True)
    assert F.jacobian(lambda a: fg.tensor([1.0, 2.0]), x).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    linear = lambda a: (a * 3.0).sum()  # noqa: E731 - zero Hessian
    assert F.hessian(linear, x).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with respect to input 0"):
        F.hessian(linear, x, strict=True)
    assert F.hvp(linear, x, y)[1].tolist() == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="strict mode"):
        F.hvp(linear, x, y, strict=True)
    with pytest.raises(RuntimeError, match="strict mode"):
        F.jvp(partial, (x, y), (x, y), strict=True)


def test_forward_mode_strategy_is_jacfwd_and_needs_vectorize():
    a, b = t64([1.0, 2.0]), t64([3.0])
    jac = F.jacobian(lambda u, v: (u * v, fg.sin(u)), (a, b), strategy="forward-mode", vectorize=True)
    rev = F.jacobian(lambda u, v: (u * v, fg.sin(u)), (a, b))
    for row, row_rev in zip(jac, rev):
        for block, block_rev in zip(row, row_rev):
            np.testing.assert_allclose(block.numpy(), block_rev.numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="requires vectorize=True"):
        F.jacobian(lambda u: u, t64([1.0]), strategy="forward-mode")
    with pytest.raises(ValueError, match="strategy"):
        F.jacobian(lambda a: a, t64([1.0]), strategy="sideways")


# -- inputs are re-marked; create_graph keeps the result differentiable -------------------------------
def test_inputs_are_detached_without_create_graph():
    x = t64([0.5, 1.0], requires_grad=True)
    seen = []
    jac = F.jacobian(lambda a: seen.append(a) or a * a, x)
    assert seen[0] is not x and seen[0].is_leaf and seen[0].requires_grad
    assert not jac.requires_grad
    out, g = F.vjp(lambda a: (a * a).sum(), x)
    assert not out.requires_grad and not g.requires_grad


def test_create_graph_results_differentiate_again():
    xs = np.array([0.3, -0.8, 1.2])
    x = t64(xs, requires_grad=True)
    jac = F.jacobian(fg_elem, x, create_graph=True)
    assert jac.requires_grad
    (g,) = fg.grad(jac.sum(), [x])
    close(g, jax.jit(jax.grad(lambda a: jax.jacrev(jx_elem)(a).sum()))(xs))
    ref_hess = jax.jit(jax.grad(lambda a: (jax.hessian(jx_scalar)(a) ** 2).sum()))(xs)
    for vectorize in (False, True):
        hess = F.hessian(fg_scalar, x, create_graph=True, vectorize=vectorize)
        (g,) = fg.grad((hess * hess).sum(), [x])
        close(g, ref_hess)
    vs = np.array([1.0, 0.5, -0.25])
    v = t64(vs, requires_grad=True)
    _, p = F.hvp(fg_scalar, x, v, create_graph=True)
    gx, gv = fg.grad(p.sum(), [x, v])
    ref = lambda a, b: jax.jvp(jax.grad(jx_scalar), (a,), (b,))[1].sum()  # noqa: E731
    ref_gx, ref_gv = jax.jit(jax.grad(ref, argnums=(0, 1)))(xs, vs)
    close(gx, ref_gx)
    close(gv, ref_gv)
    _, t = F.jvp(fg_elem, x, v, create_graph=True)
    (gx,) = fg.grad(t.sum(), [x])
    close(gx, jax.jit(jax.grad(lambda a: jax.jvp(jx_elem, (a,), (vs,))[1].sum()))(xs))
    _, g = F.vjp(fg_elem, x, v, create_graph=True)
    (gx,) = fg.grad(g.sum(), [x])
    close(gx, jax.jit(jax.grad(lambda a: jax.vjp(jx_elem, a)[1](vs)[0].sum()))(xs))
    # a constant Hessian and a v that needs no grad: the product does not depend on the inputs
    with pytest.raises(RuntimeError, match="hessian of the user-provided function is independent of input 0"):
        F.vhp(lambda a: (a * a).sum(), x, t64(vs), create_graph=True, strict=True)
    _, p = F.vhp(lambda a: (a * a).sum(), x, v, create_graph=True, strict=True)  # depends on v: allowed
    assert p.requires_grad


def test_hessian_matches_torch():
    torch = pytest.importorskip("torch")
    xs, ys = np.array([0.3, -0.8, 1.2]), np.array([0.7, 0.1, -0.4])

    def torch_fn(a, b):
        return (torch.sigmoid(a) * b.sum()).sum() + (b * b * b).mean()

    expected = torch.autograd.functional.hessian(torch_fn, (torch.tensor(xs), torch.tensor(ys)))
    actual = F.hessian(fg_scalar2, (t64(xs), t64(ys)))
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(np.asarray(actual[i][j].array), expected[i][j].numpy(), rtol=1e-10,
                                       atol=1e-12)
