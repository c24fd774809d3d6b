"""Complex gradients follow PyTorch's convention (``dL/dx + i dL/dy``) on every path of the engine.

The op tables check each rule on complex inputs; this file checks what surrounds the rules:
the issue's worked examples, real parameters through complex intermediates (the case that
was silently wrong), every way a backward pass runs (rule kernels, ``create_graph``, fused
programs, fused ``create_graph`` passes, custom Functions, ``interop.from_jax`` and
``interop.to_jax``), ``check_grads`` on complex inputs, and the refusals (real-only ops,
Jacobians of complex functions). References: closed forms, ``jax.grad`` conjugated, and
PyTorch where it is installed.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
import interop
from fgraph.autograd import fusion
from fgraph.func import grad as func_grad
from fgraph.func import hessian, jacfwd, jacrev, vjp

F64 = np.float64


def t64(values, requires_grad=False):
    return fg.tensor(np.asarray(values), requires_grad=requires_grad)


# -- the examples ----------------------------------------------------------------------------------------
def test_real_parameters_through_exp_of_a_complex_number():
    """d/dx sum |exp(x + iy)| = e^x (the modulus is e^x whatever y): fgraph gave 3.2457 for 7.6977."""
    x = t64([2.0, 0.5], requires_grad=True)
    y = t64([0.3, -1.0], requires_grad=True)
    gx, gy = fg.grad(fg.exp(fg.complex(x, y)).abs().sum(), [x, y])
    np.testing.assert_allclose(gx.numpy(), np.exp([2.0, 0.5]), rtol=1e-12)
    np.testing.assert_allclose(gy.numpy(), [0.0, 0.0], atol=1e-12)


def test_z_times_conj_z():
    """(z * conj(z)).real.sum() = |z|^2 = x^2 + y^2: the gradient is 2x + 2iy (2+4j at 1+2j), not its conjugate."""
    z = t64([1 + 2j, -0.5 + 0.25j], requires_grad=True)
    (g,) = fg.grad((z * fg.conj(z)).real.sum(), [z])
    np.testing.assert_allclose(g.numpy(), [2 + 4j, -1 + 0.5j], rtol=1e-12)


def _rotation_model(fgx, w, phase):
    """A real-weight model with a complex rotation: Re(sum(exp(i phase) * (x @ w)))^2 per row, summed."""
    z = fg.complex(fgx @ w, fg.zeros_like(fgx @ w)) * fg.polar(fg.ones_like(phase), phase)
    return (fg.real(z) ** 2 + fg.imag(z * z)).sum()


def _rotation_model_jax(x, w, phase):
    z = (x @ w) * jnp.exp(1j * phase)
    return jnp.sum(jnp.real(z) ** 2 + jnp.imag(z * z))


def test_real_weights_through_a_complex_rotation_match_jax():
    """All 12 weight gradients of the issue's kind of model (they were all wrong) against jax.grad."""
    rng = np.random.default_rng(0)
    x, w, phase = rng.normal(size=(5, 3)), rng.normal(size=(3, 4)), rng.normal(size=(4,))
    wt, pt = t64(w, requires_grad=True), t64(phase, requires_grad=True)
    gw, gp = fg.grad(_rotation_model(t64(x), wt, pt), [wt, pt])
    jw, jp = jax.grad(_rotation_model_jax, argnums=(1, 2))(x, w, phase)
    np.testing.assert_allclose(gw.numpy(), jw, rtol=1e-10)
    np.testing.assert_allclose(gp.numpy(), jp, rtol=1e-10)


def test_gradient_of_complex_input_is_conjugate_of_jax_grad():
    z0 = np.array([0.3 + 0.7j, -1.2 + 0.4j, 0.5 - 0.5j])
    z = t64(z0, requires_grad=True)
    (g,) = fg.grad((fg.sin(z) * fg.log(z) / (z + 2)).abs().sum(), [z])
    ref = jax.grad(lambda v: jnp.sum(jnp.abs(jnp.sin(v) * jnp.log(v) / (v + 2))))(z0)
    np.testing.assert_allclose(g.numpy(), np.conj(ref), rtol=1e-10)


# -- every backward path ---------------------------------------------------------------------------------------
def _loss(z):
    return (fg.exp(z) * fg.conj(z) + z * z / (z + 3)).abs().sum() + (fg.tanh(z) @ z).real


def _loss_jax(z):
    return jnp.sum(jnp.abs(jnp.exp(z) * jnp.conj(z) + z * z / (z + 3))) + jnp.real(jnp.tanh(z) @ z)


Z0 = np.array([0.3 + 0.7j, -0.6 + 0.2j, 0.5 - 0.4j])
V0 = np.array([0.1 - 0.3j, 0.7 + 0.2j, -0.4 + 0.5j])


def _reference():
    g = np.conj(jax.grad(_loss_jax)(Z0))
    hvp = np.conj(jax.jvp(jax.grad(_loss_jax), (Z0,), (V0,))[1])
    return g, hvp


def _fgraph_derivatives():
    z = t64(Z0, requires_grad=True)
    (g1,) = fg.grad(_loss(z), [z])
    (g,) = fg.grad(_loss(z), [z], create_graph=True)
    (hvp,) = fg.grad(fg.real((g * fg.conj(t64(V0))).sum()), [z])
    _fgraph_derivatives.last_node = g.grad_fn.name()
    return g1.numpy(), g.detach().numpy(), hvp.numpy()


@pytest.mark.parametrize("fused", [False, True], ids=["node-by-node", "fused"])
def test_first_and_second_derivatives_on_every_engine_path(fused):
    """Rule kernels and create_graph node by node; then fused programs and a fused create_graph pass (the
    structure repeats, so fusion compiles it: its rule is jax.vjp, conjugated at that boundary too)."""
    g_ref, hvp_ref = _reference()
    fusion.set_enabled(fused)
    try:
        for _ in range(4 if fused else 1):  # fused passes start once the structure was seen and compiled
            fusion.wait_for_compiles(60.0)
            g_plain, g, hvp = _fgraph_derivatives()
            np.testing.assert_allclose(g_plain, g_ref, rtol=1e-10)
            np.testing.assert_allclose(g, g_ref, rtol=1e-10)
            np.testing.assert_allclose(hvp, hvp_ref, rtol=1e-9)
        if fused:
            assert _fgraph_derivatives.last_node == "FusedBackward", "the create_graph pass never ran fused"
    finally:
        fusion.set_enabled(True)


class Square(fg.autograd.Function):
    """z -> z^2 with a hand-written backward in PyTorch's convention: grad * conj(2z)."""

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return z * z

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved_tensors
        return g * fg.conj(2 * z)


class _Slipped(Square):
    """z -> z^2 with the unconjugated derivative: JAX's convention where PyTorch's is expected."""

    @staticmethod
    def backward(ctx, g):
        return g * 2 * ctx.saved_tensors[0]


def _slipped(z):
    return _Slipped.apply(z)


def test_custom_function_backward_sees_pytorchs_convention():
    z = t64(Z0, requires_grad=True)
    (mine,) = fg.grad(Square.apply(z).abs().sum(), [z])
    (builtin,) = fg.grad((z * z).abs().sum(), [z])
    np.testing.assert_allclose(mine.numpy(), builtin.numpy(), rtol=1e-12)


def test_from_jax_op_follows_the_convention():
    """A JAX function used as an fgraph op: its backward is jax.vjp, conjugated into PyTorch's convention."""
    op = interop.from_jax(jnp.sin)
    z = t64(Z0, requires_grad=True)
    (g,) = fg.grad(op(z).abs().sum(), [z])
    (expected,) = fg.grad(fg.sin(z).abs().sum(), [z])
    np.testing.assert_allclose(g.numpy(), expected.numpy(), rtol=1e-12)
    (g2,) = fg.grad(op(z).abs().sum(), [z], create_graph=True)
    (h,) = fg.grad(fg.real((g2 * fg.conj(t64(V0))).sum()), [z])
    np.testing.assert_allclose(h.numpy(), np.conj(jax.jvp(jax.grad(lambda v: jnp.sum(jnp.abs(jnp.sin(v)))),
                                                          (Z0,), (V0,))[1]), rtol=1e-10)


def test_to_jax_export_differentiates_as_jax_does():
    """interop.to_jax runs fgraph's engine in JAX's backward: jax.grad of the export equals jax.grad of JAX's own."""
    exported = interop.to_jax(_loss)
    np.testing.assert_allclose(exported(Z0), _loss_jax(Z0), rtol=1e-12)
    np.testing.assert_allclose(jax.grad(exported)(Z0), jax.grad(_loss_jax)(Z0), rtol=1e-10)
    np.testing.assert_allclose(jax.jvp(jax.grad(exported), (Z0,), (V0,))[1],
                               jax.jvp(jax.grad(_loss_jax), (Z0,), (V0,))[1], rtol=1e-9)


def test_abs_of_complex_zero_has_pytorchs_zero_derivatives_to_second_order():
    """|z| at z = 0: gradient sgn(0) = 0 and Hessian-vector product 0 (PyTorch), not NaN. sgn's composite
    took hypot(0, 0), whose own gradient is 0/0; a where() after it multiplied that NaN by 0."""
    x = t64([[0.0, 1.5, -2.0], [0.0, 0.5, 0.0]], requires_grad=True)
    v = t64([[1.0, -2.0, 0.5], [3.0, 1.0, -1.0]])
    (g,) = fg.grad(fg.abs(fg.complex(x, x)).sum(), [x], create_graph=True)
    (h,) = fg.grad((g * v).sum(), [x])
    assert np.all(np.isfinite(h.numpy()))
    ref = np.sqrt(2.0) * np.sign(x.numpy())  # |x + ix| = sqrt(2)|x|: linear off 0, its Hessian is 0
    np.testing.assert_allclose(g.numpy(), ref, rtol=1e-12)
    np.testing.assert_allclose(h.numpy(), np.zeros((2, 3)), atol=1e-12)
    assert np.all(h.numpy()[x.numpy() == 0] == 0)
    z = t64(np.array([0j, 3 + 4j]), requires_grad=True)
    (gz,) = fg.grad(fg.real(fg.sgn(z) * t64(np.array([1 + 2j, 1 - 1j]))).sum(), [z])
    assert np.all(np.isfinite(gz.numpy())) and gz.numpy()[0] == 0
    torch = pytest.importorskip("torch")
    tx = torch.tensor(x.numpy(), requires_grad=True)
    (tg,) = torch.autograd.grad(torch.abs(torch.complex(tx, tx)).sum(), tx, create_graph=True)
    (th,) = torch.autograd.grad((tg * torch.tensor(v.numpy())).sum(), tx)
    np.testing.assert_allclose(g.numpy(), tg.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(h.numpy(), th.numpy(), atol=1e-12)


def test_check_grads_takes_complex_inputs_and_catches_a_conjugation_slip():
    report = interop.check_grads(_loss, t64(Z0))
    assert report.passed and [e.order for e in report.entries] == [1, 2]
    with pytest.raises(interop.GradientMismatch):
        interop.check_grads(lambda z: _slipped(z).abs().sum(), t64(Z0), order=1)


def test_gradcheck_checks_complex_functions_through_their_real_parts():
    """Finite differences of the real view (real and imaginary parts as real numbers), as torch's gradcheck
    takes complex inputs and outputs: the convention slip fails, the right rules pass, to second order."""
    z = t64(Z0[:2], requires_grad=True)
    x = t64([1.0, 0.5], requires_grad=True)
    assert fg.autograd.gradcheck(lambda v: fg.sin(v) * fg.conj(v) / (v + 3), (z,))
    assert fg.autograd.gradgradcheck(lambda v: fg.exp(v) * v.abs(), (z,))
    assert fg.autograd.gradgradcheck(lambda v: fg.exp(fg.complex(v, v * v)), (x,))
    with pytest.raises(fg.autograd.GradcheckError, match="Jacobian mismatch"):
        fg.autograd.gradcheck(_slipped, (z,))


# -- refusals ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn,fix", [
    (fg.relu, "real part"), (fg.sign, "fg.sgn"), (lambda z: fg.maximum(z, z), "real part"),
    (lambda z: fg.sort(z).values, "real part"), (lambda z: z < 1, "real part"), (fg.erf, "real part"),
    (lambda z: fg.nn.functional.softmax(z, -1), "real part"),
    (lambda z: fg.nn.functional.layer_norm(z, (3,)), "real part"),
    (lambda z: fg.nn.functional.mse_loss(z, z), "real part"),
])
def test_real_only_ops_refuse_complex_with_an_error_naming_the_way_out(fn, fix):
    with pytest.raises(fg.OpError, match="complex tensors are not supported") as info:
        fn(t64(Z0, requires_grad=True))
    assert fix in str(info.value)


def test_jacobians_of_complex_functions_raise_torchs_errors():
    z, x = t64(Z0), t64([1.0, 2.0])
    with pytest.raises(RuntimeError, match="jacrev: Expected all inputs to be real"):
        jacrev(fg.conj)(z)
    with pytest.raises(RuntimeError, match="jacrev: Expected all outputs to be real"):
        jacrev(lambda v: fg.conj(v * 0.5j))(x)
    with pytest.raises(RuntimeError, match="jacfwd: Expected all inputs to be real"):
        jacfwd(fg.sin)(z)
    with pytest.raises(RuntimeError, match="jacfwd: Expected all outputs to be real"):
        jacfwd(lambda v: v * 1j)(x)
    with pytest.raises(RuntimeError, match="jacfwd: Expected all inputs to be real"):
        hessian(lambda v: v.abs().sum())(z)
    with pytest.raises(fg.GradError, match="jacobian: output 0 is complex"):
        fg.autograd.functional.jacobian(lambda v: v * 1j, x)
    with pytest.raises(fg.GradError, match="hessian: input 0 is complex"):
        fg.autograd.functional.hessian(lambda v: v.abs().sum(), z)


def test_grad_and_vjp_of_complex_inputs_are_pytorchs():
    """torch.func.grad and vjp take complex inputs (only Jacobians refuse them)."""
    g = func_grad(lambda v: v.abs().sum())(t64(Z0))
    np.testing.assert_allclose(g.numpy(), Z0 / np.abs(Z0), rtol=1e-12)
    _, fn = vjp(fg.sin, t64(Z0))
    (ct,) = fn(fg.ones_like(t64(Z0)))
    np.testing.assert_allclose(ct.numpy(), np.conj(np.cos(Z0)), rtol=1e-12)
    jac = fg.autograd.functional.jacobian(lambda v: v.abs(), t64(Z0))  # real outputs: rows are gradients
    np.testing.assert_allclose(jac.numpy(), np.diag(Z0 / np.abs(Z0)), rtol=1e-12)


# -- PyTorch as the oracle -------------------------------------------------------------------------------------
def test_against_torch_on_a_complex_program():
    torch = pytest.importorskip("torch")
    zt = torch.tensor(Z0, requires_grad=True)
    lt = (torch.exp(zt) * torch.conj(zt) + zt * zt / (zt + 3)).abs().sum() + (torch.tanh(zt) @ zt).real
    (gt,) = torch.autograd.grad(lt, [zt], create_graph=True)
    (ht,) = torch.autograd.grad((gt * torch.conj(torch.tensor(V0))).real.sum(), [zt])
    g_plain, g, hvp = _fgraph_derivatives()
    np.testing.assert_allclose(g, gt.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(hvp, ht.numpy(), rtol=1e-9)
    tx = torch.func.grad(lambda v: v.abs().sum())(torch.tensor(Z0))
    np.testing.assert_allclose(func_grad(lambda v: v.abs().sum())(t64(Z0)).numpy(), tx.numpy(), rtol=1e-12)
