"""Forward-mode AD: dual tensors (torch.autograd.forward_ad's API), checked against jax.jvp and PyTorch.

Values: tangents against ``jax.jvp`` of the same program in pure JAX; the three second-order
compositions (reverse-over-forward, forward-over-reverse with and without ``create_graph``,
forward-over-forward with nested levels) against JAX's. API semantics (what ``unpack_dual``
returns, ``no_grad``, integer outputs, ``detach``, custom Functions, the errors) against
``torch.autograd.forward_ad`` where PyTorch is installed. Every op is checked in the op
tables (``tests/op_harness.py``: each entry's tangent against ``jax.jvp`` of its reference).
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
import fgraph.autograd.forward_ad as fwAD
import fgraph.nn.functional as F
import interop
from fgraph import nn
from fgraph.func import grad, hessian, jacfwd, jacrev, jvp, linearize, vmap

X0 = np.array([0.3, -0.7, 1.1])
V0 = np.array([1.0, 0.5, -2.0])


def t64(values, requires_grad=False):
    return fg.tensor(np.asarray(values, np.float64), requires_grad=requires_grad)


def program(x):
    return (fg.exp(x) * fg.tanh(x) + fg.sin(x) ** 3 / (x * x + 1)).sum()


def program_jax(x):
    return jnp.sum(jnp.exp(x) * jnp.tanh(x) + jnp.sin(x) ** 3 / (x * x + 1))


# -- values against JAX ---------------------------------------------------------------------------------
def test_tangent_of_a_program_is_jax_jvp():
    with fwAD.dual_level():
        out = program(fwAD.make_dual(t64(X0), t64(V0)))
        primal, tangent = fwAD.unpack_dual(out)
    ref_out, ref_tangent = jax.jvp(program_jax, (X0,), (V0,))
    np.testing.assert_allclose(primal.item(), ref_out, rtol=1e-12)
    np.testing.assert_allclose(tangent.item(), ref_tangent, rtol=1e-12)


def test_reverse_over_forward():
    """fg.grad of a tangent: the tangent computation is recorded (nodes named <Op>JvpBackward0)."""
    x = t64(X0, requires_grad=True)
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(program(fwAD.make_dual(x, t64(V0)))).tangent
    assert "JvpBackward0" in tangent.grad_fn.name()
    (g,) = fg.grad(tangent, [x])
    ref = jax.grad(lambda x: jax.jvp(program_jax, (x,), (V0,))[1])(X0)
    np.testing.assert_allclose(g.numpy(), ref, rtol=1e-10)


@pytest.mark.parametrize("create_graph", [False, True])
def test_forward_over_reverse(create_graph):
    """The gradient at dual inputs is dual, with or without create_graph (as in PyTorch): its tangent is H v."""
    x = t64(X0, requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t64(V0))
        (g,) = fg.grad(program(d), [d], create_graph=create_graph)
        hvp = fwAD.unpack_dual(g).tangent
    ref = jax.jvp(jax.grad(program_jax), (X0,), (V0,))[1]
    np.testing.assert_allclose(hvp.numpy(), ref, rtol=1e-10)
    assert hvp.requires_grad == create_graph


def test_forward_over_forward_with_nested_levels():
    """Levels nest (PyTorch allows one): an inner tangent is dual at the outer level, as nested jax.jvp."""
    w0 = np.array([0.2, 0.9, -0.4])
    with fwAD.dual_level():
        outer = fwAD.make_dual(t64(X0), t64(w0))
        with fwAD.dual_level():
            inner = fwAD.make_dual(outer, t64(V0))
            t_inner = fwAD.unpack_dual(program(inner)).tangent
        second = fwAD.unpack_dual(t_inner, level=0).tangent
    ref = jax.jvp(lambda x: jax.jvp(program_jax, (x,), (V0,))[1], (X0,), (w0,))[1]
    np.testing.assert_allclose(second.item(), ref, rtol=1e-10)


def test_a_module_and_its_parameters():
    """Dual inputs through fgraph.nn, and dual parameters through functional_call."""
    fg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    w = {k: v.detach() for k, v in model.named_parameters()}

    def ref(x, w):
        h = jnp.tanh(x @ w["0.weight"].T + w["0.bias"])
        return h @ w["2.weight"].T + w["2.bias"]

    arrays = {k: np.asarray(v.array) for k, v in w.items()}
    with fwAD.dual_level():
        out = model(fwAD.make_dual(t64(X0), t64(V0)))
        np.testing.assert_allclose(fwAD.unpack_dual(out).tangent.numpy(), jax.jvp(lambda x: ref(x, arrays), (X0,),
                                                                                  (V0,))[1], rtol=1e-10)
    tangents = {k: fg.ones_like(v) for k, v in w.items()}
    _, t = jvp(lambda p: fg.func.functional_call(model, p, (t64(X0),)), (w,), (tangents,))
    ref_t = jax.jvp(lambda p: ref(X0, p), (arrays,), ({k: np.ones_like(v) for k, v in arrays.items()},))[1]
    np.testing.assert_allclose(t.numpy(), ref_t, rtol=1e-10)


def test_complex_tangents_are_jax_jvp():
    z0 = np.array([0.3 + 0.7j, -0.6 + 0.2j])
    dz = np.array([1.0 - 0.5j, 0.25 + 1j])
    with fwAD.dual_level():
        out = fg.exp(fwAD.make_dual(fg.tensor(z0), fg.tensor(dz))) * fg.conj(fg.tensor(z0))
        tangent = fwAD.unpack_dual(out.abs()).tangent
    ref = jax.jvp(lambda z: jnp.abs(jnp.exp(z) * jnp.conj(z0)), (z0,), (dz,))[1]
    np.testing.assert_allclose(tangent.numpy(), ref, rtol=1e-12)


# -- transforms ----------------------------------------------------------------------------------------------
def test_func_transforms_against_jax():
    def f(x):
        return fg.sin(x) * x.sum() + fg.exp(x[:2]).sum()

    def fj(x):
        return jnp.sin(x) * x.sum() + jnp.exp(x[:2]).sum()

    out, tangent = jvp(f, (t64(X0),), (t64(V0),))
    np.testing.assert_allclose(tangent.numpy(), jax.jvp(fj, (X0,), (V0,))[1], rtol=1e-12)
    np.testing.assert_allclose(jacfwd(f)(t64(X0)).numpy(), jax.jacfwd(fj)(X0), rtol=1e-12)
    np.testing.assert_allclose(hessian(program)(t64(X0)).numpy(), jax.hessian(program_jax)(X0), rtol=1e-10)
    np.testing.assert_allclose(jvp(grad(program), (t64(X0),), (t64(V0),))[1].numpy(),
                               jax.hessian(program_jax)(X0) @ V0, rtol=1e-10)
    value, jvp_fn = linearize(f, t64(X0))
    np.testing.assert_allclose(jvp_fn(t64(V0)).numpy(), jax.jvp(fj, (X0,), (V0,))[1], rtol=1e-12)
    np.testing.assert_allclose(value.numpy(), fj(X0), rtol=1e-12)


def test_jacfwd_keeps_structures_and_aux():
    params = {"w": t64([1.0, 2.0]), "b": t64(0.5)}
    jac, aux = jacfwd(lambda p: ({"y": p["w"] * p["b"], "s": (p["w"] ** 2).sum()}, p["b"] * 2), has_aux=True)(params)
    assert list(jac) == ["y", "s"] and list(jac["y"]) == ["w", "b"]
    np.testing.assert_allclose(jac["y"]["w"].numpy(), np.diag([0.5, 0.5]))
    np.testing.assert_allclose(jac["s"]["w"].numpy(), [2.0, 4.0])
    assert aux.item() == 1.0
    rev = jacrev(lambda p: {"y": p["w"] * p["b"], "s": (p["w"] ** 2).sum()})(params)
    np.testing.assert_allclose(rev["y"]["b"].numpy(), jac["y"]["b"].numpy())


def test_autograd_functional_forward_mode():
    AF = fg.autograd.functional
    out, t = AF.jvp(lambda x: fg.sin(x) * x, t64(X0), t64(V0))
    np.testing.assert_allclose(t.numpy(), jax.jvp(lambda x: jnp.sin(x) * x, (X0,), (V0,))[1], rtol=1e-12)
    value, h = AF.hvp(program, t64(X0), t64(V0))
    np.testing.assert_allclose(h.numpy(), jax.hessian(program_jax)(X0) @ V0, rtol=1e-10)
    np.testing.assert_allclose(value.item(), program_jax(X0), rtol=1e-12)
    J = AF.jacobian(lambda x: fg.sin(x) * x, t64(X0), strategy="forward-mode", vectorize=True)
    np.testing.assert_allclose(J.numpy(), jax.jacfwd(lambda x: jnp.sin(x) * x)(X0), rtol=1e-12)


def test_from_jax_ops_carry_tangents():
    op = interop.from_jax(jnp.sin)
    x = t64(X0, requires_grad=True)
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(op(fwAD.make_dual(x, t64(V0))) * 2).tangent
    np.testing.assert_allclose(tangent.numpy(), 2 * np.cos(X0) * V0, rtol=1e-12)
    (g,) = fg.grad(tangent.sum(), [x])  # reverse-over-forward through jax.jvp of the JAX function
    np.testing.assert_allclose(g.numpy(), -2 * np.sin(X0) * V0, rtol=1e-12)


def test_forward_mode_inside_compile_and_vmap():
    step = fg.compile(lambda x, v: jvp(program, (x,), (v,))[1])
    for _ in range(2):
        np.testing.assert_allclose(step(t64(X0), t64(V0)).item(), jax.jvp(program_jax, (X0,), (V0,))[1], rtol=1e-12)
    batched = vmap(lambda v: jvp(program, (t64(X0),), (v,))[1])(t64(np.eye(3)))
    np.testing.assert_allclose(batched.numpy(), jax.grad(program_jax)(X0), rtol=1e-12)


def test_to_jax_export_of_a_forward_mode_program():
    """A program that computes a jvp inside exports to JAX, and jax.jvp of the export agrees."""
    inner = interop.to_jax(lambda x: jvp(program, (x,), (fg.ones_like(x),))[1], mode="trace")
    ref = lambda x: jax.jvp(program_jax, (x,), (jnp.ones_like(x),))[1]  # noqa: E731
    np.testing.assert_allclose(inner(X0), ref(X0), rtol=1e-12)
    np.testing.assert_allclose(jax.jvp(inner, (X0,), (V0,))[1], jax.jvp(ref, (X0,), (V0,))[1], rtol=1e-10)


# -- semantics (PyTorch's) ----------------------------------------------------------------------------------
class Cube(fg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return t * 3 * x * x


class Doubled(fg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_semantics():
    x = t64([1.0, 2.0], requires_grad=True)
    t = t64([1.0, 0.5])
    with fwAD.dual_level() as level:
        assert level == 0
        d = fwAD.make_dual(x, t)
        assert d is not x and d.requires_grad
        unpacked = fwAD.unpack_dual(d)
        assert unpacked._fields == ("primal", "tangent") and unpacked.tangent is t
        assert fwAD.unpack_dual(x).tangent is None
        with fg.no_grad():
            np.testing.assert_allclose(fwAD.unpack_dual(d * 3).tangent.numpy(), [3.0, 1.5])
        assert fwAD.unpack_dual(d.argmax()).tangent is None and fwAD.unpack_dual(d > 1).tangent is None
        assert fwAD.unpack_dual(d.detach()).tangent is None
        np.testing.assert_allclose(fwAD.unpack_dual(Cube.apply(d)).tangent.numpy(), [3.0, 6.0])
        with pytest.raises(NotImplementedError, match="must implement the jvp function"):
            Doubled.apply(d)
        (g,) = fg.grad((d * 2).sum(), [x])  # the dual is on the primal's graph
        np.testing.assert_allclose(g.numpy(), [2.0, 2.0])
        y = d * d
    assert fwAD.unpack_dual(y).tangent is None  # outside the level
    assert fwAD.enter_dual_level() == 0
    fwAD.exit_dual_level()


def test_errors_name_the_fix():
    x = t64([1.0, 2.0])
    with pytest.raises(RuntimeError, match="no dual level is open"):
        fwAD.make_dual(x, x)
    with fwAD.dual_level():
        with pytest.raises(ValueError, match="shape"):
            fwAD.make_dual(x, t64([1.0, 2.0, 3.0]))
        with pytest.raises(ValueError, match="dtype"):
            fwAD.make_dual(x, fg.tensor([1.0, 2.0], dtype=fg.float32))
        with pytest.raises(ValueError, match="floating point or complex"):
            fwAD.make_dual(fg.tensor([1, 2]), fg.tensor([1, 2]))
        with pytest.raises(RuntimeError, match="already has a tangent"):
            fwAD.make_dual(fwAD.make_dual(x, x), x)
    with pytest.raises(RuntimeError, match="no dual level is open"):
        fwAD.exit_dual_level()


def test_a_bad_dual_op_is_explained_at_the_op():
    """A dual input takes the lean one- and two-input paths; their errors are the plain op's own."""
    with fwAD.dual_level():
        d = fwAD.make_dual(t64([[1.0, 2.0]], requires_grad=True), t64([[1.0, 0.0]]))
        with pytest.raises(fg.errors.OpError, match=r"add.*\(1, 2\).*\(3,\)"):
            d + t64([1.0, 2.0, 3.0])
        with pytest.raises(fg.errors.OpError, match=r"matmul.*\(1, 2\).*\(3, 1\)"):
            d @ t64([[1.0], [2.0], [3.0]])
            assert fwAD.unpack_dual(fg.exp(d)).tangent.tolist()[0] == pytest.approx([np.e, 0.0])


def test_abs_tangent_at_zero_is_pytorchs_zero():
    """d|x| = sgn(x) dx, 0 at 0 (PyTorch's sgn); JAX's own abs takes the positive branch there. Forward mode,
    fgraph.func.jvp, fg.compile and the second derivative all agree; complex z keeps Re(conj(sgn z) dz)."""
    x = np.array([0.0, -1.5, 2.0, -0.0])
    t = np.array([1.0, 1.0, -3.0, 2.0], np.float32)
    expected = np.sign(x) * t
    with fwAD.dual_level():
        d = fwAD.make_dual(fg.tensor(x, dtype="float32"), fg.tensor(t))
        np.testing.assert_array_equal(fwAD.unpack_dual(fg.abs(d)).tangent.numpy(), expected)
    _, tangent = jvp(fg.abs, (fg.tensor(x, dtype="float32"),), (fg.tensor(t),))
    np.testing.assert_array_equal(tangent.numpy(), expected)
    leaf = fg.tensor(x, dtype="float32", requires_grad=True)
    (g,) = fg.grad(fg.abs(leaf).sum(), [leaf], create_graph=True)
    np.testing.assert_array_equal(g.numpy(), np.sign(x))
    (h,) = fg.grad(g.sum(), [leaf], allow_unused=True)  # sgn is piecewise constant: |x|'' is 0
    assert h is None or not np.any(h.numpy())
    z = np.array([0j, 3 + 4j], np.complex64)
    dz = np.array([1 + 1j, 1 + 0j], np.complex64)
    with fwAD.dual_level():
        d = fwAD.make_dual(fg.tensor(z), fg.tensor(dz))
        got = fwAD.unpack_dual(fg.abs(d)).tangent.numpy()
    np.testing.assert_allclose(got, [0.0, 0.6], rtol=1e-6)
    torch = pytest.importorskip("torch")
    import torch.autograd.forward_ad as tfw

    with tfw.dual_level():
        td = tfw.make_dual(torch.tensor(x, dtype=torch.float32), torch.tensor(t))
        np.testing.assert_array_equal(tfw.unpack_dual(torch.abs(td)).tangent.numpy(), expected)


def test_clamp_tangent_at_its_bounds_is_the_inputs_as_in_reverse_mode():
    """PyTorch's clamp_jvp passes the input's tangent where lo <= x <= hi, bounds included, as the reverse rule
    passes the gradient; JAX's clip and maximum/minimum halve it at a tie. Found by the random-program oracle:
    ``clamp(x, -0.5, 0.5)`` at x = 0.5 had tangent t/2."""
    x = np.array([-1.0, -0.5, 0.0, 0.5, 1.0, np.nan])
    t = np.linspace(0.1, 0.6, 6)
    lo = np.array([-0.5, -0.5, 0.0, 0.6, 0.7, 0.0])
    hi = np.array([0.5, 0.5, 0.0, 0.5, 1.0, 1.0])
    t_lo, t_hi = np.full(6, 10.0), np.full(6, 100.0)
    with fwAD.dual_level():
        d = fwAD.make_dual(t64(x), t64(t))
        scalar = fwAD.unpack_dual(fg.clamp(d, -0.5, 0.5)).tangent.numpy()
        both = fwAD.unpack_dual(fg.clamp(d, fwAD.make_dual(t64(lo), t64(t_lo)),
                                         fwAD.make_dual(t64(hi), t64(t_hi)))).tangent.numpy()
    np.testing.assert_array_equal(scalar, [0.0, t[1], t[2], t[3], 0.0, 0.0])
    np.testing.assert_array_equal(both, [10.0, t[1], t[2], 100.0, t[4], t[5]])  # hi < lo at index 3: hi's tangent
    leaf = t64(x[:5], requires_grad=True)
    (g,) = fg.grad(fg.clamp(leaf, -0.5, 0.5).sum(), [leaf])
    np.testing.assert_array_equal(g.numpy() * t[:5], scalar[:5])  # forward agrees with reverse, ties included
    _, tangent = jvp(lambda v: fg.clamp(v, -0.5, 0.5), (t64(x),), (t64(t),))
    np.testing.assert_array_equal(tangent.numpy(), scalar)
    torch = pytest.importorskip("torch")
    import torch.autograd.forward_ad as tfw

    with tfw.dual_level():
        td = tfw.make_dual(torch.tensor(x), torch.tensor(t))
        np.testing.assert_array_equal(tfw.unpack_dual(torch.clamp(td, -0.5, 0.5)).tangent.numpy(), scalar)
        tboth = torch.clamp(td, tfw.make_dual(torch.tensor(lo), torch.tensor(t_lo)),
                            tfw.make_dual(torch.tensor(hi), torch.tensor(t_hi)))
        np.testing.assert_array_equal(tfw.unpack_dual(tboth).tangent.numpy(), both)


def test_semantics_match_torch():
    torch = pytest.importorskip("torch")
    tfw = torch.autograd.forward_ad
    xt = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    x = t64([1.0, 2.0], requires_grad=True)
    with tfw.dual_level(), fwAD.dual_level():
        dt, d = tfw.make_dual(xt, torch.tensor([1.0, 0.5], dtype=torch.float64)), fwAD.make_dual(x, t64([1.0, 0.5]))
        yt, y = (dt * dt).sin(), fg.sin(d * d)
        with torch.no_grad():
            nt = tfw.unpack_dual(dt * 3).tangent
        with fg.no_grad():
            n = fwAD.unpack_dual(d * 3).tangent
        np.testing.assert_allclose(n.numpy(), nt.numpy())
        np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.numpy(), tfw.unpack_dual(yt).tangent.detach().numpy())
        assert (fwAD.unpack_dual(d.argmax()).tangent is None) == (tfw.unpack_dual(dt.argmax()).tangent is None)
        assert (fwAD.unpack_dual(d.detach()).tangent is None) == (tfw.unpack_dual(dt.detach()).tangent is None)
        (gt,) = torch.autograd.grad((dt ** 3).sum(), dt)
        (g,) = fg.grad((d ** 3).sum(), [d])
        np.testing.assert_allclose(fwAD.unpack_dual(g).tangent.numpy(), tfw.unpack_dual(gt).tangent.numpy())
        (rt,) = torch.autograd.grad(tfw.unpack_dual(yt).tangent.sum(), xt)
        (r,) = fg.grad(fwAD.unpack_dual(y).tangent.sum(), [x])
        np.testing.assert_allclose(r.numpy(), rt.detach().numpy())


def test_pinn_example_second_derivative_by_forward_mode_equals_reverse_mode(monkeypatch):
    """examples/pinn_poisson.py takes u'' by forward-over-forward: the values and the loss's weight
    gradients equal the two-create_graph-gradients way (kept in the example as the reference)."""
    import pathlib

    monkeypatch.syspath_prepend(str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
    pinn = pytest.importorskip("pinn_poisson")
    fg.manual_seed(0)
    model = pinn.make_model()
    x = fg.linspace(0.0, 1.0, 9, dtype=fg.float64)[1:-1].reshape(7, 1)
    forward, reverse = pinn.second_derivative(model, x), pinn.second_derivative_reverse(model, x)
    np.testing.assert_allclose(forward.numpy(), reverse.numpy(), rtol=1e-12, atol=1e-12)
    params = [p for p in model.parameters()]
    g_fwd = fg.grad((forward**2).mean(), params, allow_unused=True)
    g_rev = fg.grad((reverse**2).mean(), params, allow_unused=True)
    for a, b, p in zip(g_fwd, g_rev, params):  # the last bias: None by reverse mode, zeros by forward mode
        a, b = (np.zeros(p.shape) if g is None else g.numpy() for g in (a, b))
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
