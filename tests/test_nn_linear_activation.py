"""Linear and activation layers against PyTorch and pure-JAX references (see nn_harness)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
from fgraph import nn
from nn_harness import LayerCase, case_modes, check_against_reference, check_against_torch


def _x(*shape):
    return lambda rng: (rng.standard_normal(shape),)


def _linear_ref(state, x, training):
    y = x @ state["weight"].T
    return y + state["bias"] if "bias" in state else y


def _bilinear_ref(state, x1, x2, training):
    return jnp.einsum("...i,kij,...j->...k", x1, state["weight"], x2) + state["bias"]


def _act(name, fg_make, torch_make, ref, shape=(3, 5)):
    return LayerCase(name, fg_make, _x(*shape), torch_make, lambda state, x, training: ref(x))


CASES = [
    LayerCase("Linear", lambda: nn.Linear(4, 3), _x(2, 4), lambda t: t.nn.Linear(4, 3), _linear_ref),
    LayerCase("Linear-nobias-3d", lambda: nn.Linear(4, 2, bias=False), _x(2, 3, 4),
              lambda t: t.nn.Linear(4, 2, bias=False), _linear_ref),
    LayerCase("Bilinear", lambda: nn.Bilinear(2, 3, 4), lambda rng: (rng.standard_normal((5, 2)),
              rng.standard_normal((5, 3))), lambda t: t.nn.Bilinear(2, 3, 4), _bilinear_ref),
    LayerCase("Identity", lambda: nn.Identity(3), _x(2, 2), lambda t: t.nn.Identity(3),
              lambda state, x, training: x),
    _act("ReLU", nn.ReLU, lambda t: t.nn.ReLU(), jax.nn.relu),
    LayerCase("ReLU6", nn.ReLU6, lambda rng: (4 * rng.standard_normal((3, 5)),), lambda t: t.nn.ReLU6(),
              lambda state, x, training: jnp.clip(x, 0, 6)),
    _act("GELU", nn.GELU, lambda t: t.nn.GELU(), lambda x: jax.nn.gelu(x, approximate=False)),
    _act("GELU-tanh", lambda: nn.GELU("tanh"), lambda t: t.nn.GELU("tanh"), lambda x: jax.nn.gelu(x, approximate=True)),
    _act("SiLU", nn.SiLU, lambda t: t.nn.SiLU(), jax.nn.silu),
    _act("Mish", nn.Mish, lambda t: t.nn.Mish(), lambda x: x * jnp.tanh(jax.nn.softplus(x))),
    _act("Tanh", nn.Tanh, lambda t: t.nn.Tanh(), jnp.tanh),
    _act("Sigmoid", nn.Sigmoid, lambda t: t.nn.Sigmoid(), jax.nn.sigmoid),
    _act("Softmax", lambda: nn.Softmax(dim=1), lambda t: t.nn.Softmax(dim=1), lambda x: jax.nn.softmax(x, 1)),
    _act("LogSoftmax", lambda: nn.LogSoftmax(dim=-1), lambda t: t.nn.LogSoftmax(dim=-1),
         lambda x: jax.nn.log_softmax(x, -1)),
    _act("LeakyReLU", lambda: nn.LeakyReLU(0.2), lambda t: t.nn.LeakyReLU(0.2),
         lambda x: jnp.where(x > 0, x, 0.2 * x)),
    _act("ELU", lambda: nn.ELU(0.7), lambda t: t.nn.ELU(0.7), lambda x: jnp.where(x > 0, x, 0.7 * jnp.expm1(x))),
    _act("SELU", nn.SELU, lambda t: t.nn.SELU(), jax.nn.selu),
    _act("Softplus", lambda: nn.Softplus(beta=2.0, threshold=3.0), lambda t: t.nn.Softplus(beta=2.0, threshold=3.0),
         lambda x: jnp.where(2 * x > 3, x, jnp.log1p(jnp.exp(2 * x)) / 2)),
    _act("Hardtanh", lambda: nn.Hardtanh(-0.5, 0.8), lambda t: t.nn.Hardtanh(-0.5, 0.8),
         lambda x: jnp.clip(x, -0.5, 0.8)),
    _act("Hardswish", nn.Hardswish, lambda t: t.nn.Hardswish(), lambda x: x * jnp.clip(x + 3, 0, 6) / 6),
    LayerCase("PReLU-channels", lambda: nn.PReLU(3), _x(2, 3, 4), lambda t: t.nn.PReLU(3),
              lambda state, x, training: jnp.where(x > 0, x, state["weight"][:, None] * x)),
    LayerCase("PReLU-shared", nn.PReLU, _x(2, 3), lambda t: t.nn.PReLU(),
              lambda state, x, training: jnp.where(x > 0, x, state["weight"] * x)),
]


@pytest.mark.parametrize("case,mode", case_modes(CASES))
def test_against_reference(case, mode, node_by_node):
    check_against_reference(case, mode)


@pytest.mark.parametrize("case,mode", case_modes(CASES, torch_only=True))
def test_against_torch(case, mode, node_by_node):
    torch = pytest.importorskip("torch")
    check_against_torch(case, mode, torch)


def test_linear_default_init_follows_torch_bounds():
    fg.manual_seed(0)
    lin = nn.Linear(400, 300)
    bound = 1 / np.sqrt(400)
    w, b = lin.weight.numpy(), lin.bias.numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / np.sqrt(3)) < 0.02 * bound  # U(-a, a) has std a / sqrt(3)
    assert np.abs(b).max() <= bound


def test_reprs_match_torch():
    torch = pytest.importorskip("torch")
    pairs = [(nn.Linear(3, 4), torch.nn.Linear(3, 4)), (nn.Linear(3, 4, bias=False), torch.nn.Linear(3, 4, bias=False)),
             (nn.LeakyReLU(0.1), torch.nn.LeakyReLU(0.1)), (nn.Softmax(1), torch.nn.Softmax(1)),
             (nn.GELU("tanh"), torch.nn.GELU("tanh")), (nn.Hardtanh(), torch.nn.Hardtanh()),
             (nn.PReLU(3), torch.nn.PReLU(3)), (nn.Bilinear(2, 3, 4), torch.nn.Bilinear(2, 3, 4)),
             (nn.Softplus(), torch.nn.Softplus()), (nn.ELU(), torch.nn.ELU())]
    for ours, theirs in pairs:
        assert repr(ours) == repr(theirs)


def test_gelu_derivative_agrees_with_jax_and_torch_in_float64_tails_included():
    """Exact gelu's derivative ``Phi(x) + x * pdf(x)`` takes ``Phi`` through erf, as PyTorch's gelu backward does
    (cheaper than erfc, which ``jax.nn.gelu`` and ``jsp.ndtr`` use). In the negative tail ``1 + erf`` rounds
    ``Phi`` below 1e-16 to 0, where the derivative is ``x * pdf`` to that absolute precision: compared with
    ``jax.grad(jax.nn.gelu)`` and torch's float64 gelu backward to rtol 1e-12, atol 1e-15; second derivatives
    (through the rule's own derivative) too."""
    xs = np.concatenate([np.linspace(-12.0, 12.0, 97), [-30.0, 0.0, 30.0]])
    x = fg.tensor(xs, dtype=fg.float64, requires_grad=True)
    (g,) = fg.grad(fg.nn.functional.gelu(x).sum(), [x], create_graph=True)
    (h,) = fg.grad(g.sum(), [x])

    def gelu(a):
        return jax.nn.gelu(a, approximate=False)

    ref_g = jax.vmap(jax.grad(gelu))(jnp.asarray(xs))
    ref_h = jax.vmap(jax.grad(jax.grad(gelu)))(jnp.asarray(xs))
    np.testing.assert_allclose(g.numpy(), ref_g, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(h.numpy(), ref_h, rtol=1e-10, atol=1e-15)
    torch = pytest.importorskip("torch")
    tx = torch.tensor(xs, dtype=torch.float64, requires_grad=True)
    (tg,) = torch.autograd.grad(torch.nn.functional.gelu(tx).sum(), [tx])
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-12, atol=1e-15)
