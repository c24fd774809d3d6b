"""The distribution examples against PyTorch: one VAE step (loss and every parameter's gradient) on copied
weights and shared noise, and the REINFORCE objective's gradient, in float64."""
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import fgraph as fg
import fgraph.nn.functional as F
from fgraph.distributions import Categorical

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
vae_digits = pytest.importorskip("vae_digits")  # needs the examples extra's packages only through _common


def _torch_twin(model, torch):
    """The same VAE in torch, with fgraph's weights copied in (float64)."""
    tnn = torch.nn

    class TorchVAE(tnn.Module):
        def __init__(self):
            super().__init__()
            self.enc = tnn.Linear(64, vae_digits.HIDDEN)
            self.enc_mu = tnn.Linear(vae_digits.HIDDEN, vae_digits.LATENT)
            self.enc_log_sigma = tnn.Linear(vae_digits.HIDDEN, vae_digits.LATENT)
            self.dec = tnn.Sequential(tnn.Linear(vae_digits.LATENT, vae_digits.HIDDEN), tnn.ReLU(),
                                      tnn.Linear(vae_digits.HIDDEN, 64))

        def forward(self, x, eps):
            h = torch.relu(self.enc(x))
            q = torch.distributions.Normal(self.enc_mu(h), torch.exp(self.enc_log_sigma(h)))
            z = q.loc + q.scale * eps  # q.rsample() with fgraph's noise
            log_lik = -torch.nn.functional.binary_cross_entropy_with_logits(self.dec(z), x, reduction="none").sum(-1)
            prior = torch.distributions.Normal(torch.zeros_like(z), torch.ones_like(z))
            return -(log_lik - torch.distributions.kl_divergence(q, prior).sum(-1))

    twin = TorchVAE().double()
    twin.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in model.state_dict().items()})
    return twin


def test_vae_step_equals_torch():
    torch = pytest.importorskip("torch")
    fg.manual_seed(0)
    model = vae_digits.VAE().to(fg.float64)
    x = fg.tensor(np.random.default_rng(0).uniform(size=(8, 64)), dtype=fg.float64)
    key = jax.random.key(7)
    loss = model(x, key=key).mean()
    grads = loss.backward()
    eps = np.asarray(fg.randn((8, vae_digits.LATENT), dtype=fg.float64, key=key))  # the draw rsample made
    twin = _torch_twin(model, torch)
    t_loss = twin(torch.tensor(np.asarray(x)), torch.tensor(eps)).mean()
    t_loss.backward()
    np.testing.assert_allclose(loss.item(), t_loss.item(), rtol=1e-12)
    t_params = dict(twin.named_parameters())
    for name, p in model.named_parameters():
        np.testing.assert_allclose(np.asarray(grads[p]), t_params[name].grad.numpy(), rtol=1e-9, atol=1e-12,
                                   err_msg=name)


def test_score_function_gradient_equals_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    logits, actions, advantage = rng.normal(size=(6, 4)), rng.integers(0, 4, size=6), rng.normal(size=6)
    lg = fg.tensor(logits, dtype=fg.float64, requires_grad=True)
    pi = Categorical(logits=lg)
    objective = (pi.log_prob(fg.tensor(actions)) * fg.tensor(advantage)).sum() + 0.01 * pi.entropy().sum()
    (g,) = fg.grad(objective, [lg])
    tl = torch.tensor(logits, requires_grad=True)
    tpi = torch.distributions.Categorical(logits=tl)
    t_obj = (tpi.log_prob(torch.tensor(actions)) * torch.tensor(advantage)).sum() + 0.01 * tpi.entropy().sum()
    t_obj.backward()
    np.testing.assert_allclose(np.asarray(g), tl.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_vae_loss_is_the_negative_elbo_without_torch():
    """The loss equals the negative ELBO written out by hand (Gaussian KL in closed form)."""
    fg.manual_seed(0)
    model = vae_digits.VAE().to(fg.float64)
    x = fg.tensor(np.random.default_rng(0).uniform(size=(4, 64)), dtype=fg.float64)
    key = jax.random.key(3)
    loss = model(x, key=key)
    q = model.encode(x)
    z = q.loc + q.scale * fg.randn((4, vae_digits.LATENT), dtype=fg.float64, key=key)
    log_lik = -F.binary_cross_entropy_with_logits(model.decode(z), x, reduction="none").sum(-1)
    kl = 0.5 * (q.scale ** 2 + q.loc ** 2 - 1 - 2 * fg.log(q.scale)).sum(-1)
    np.testing.assert_allclose(np.asarray(loss), np.asarray(-(log_lik - kl)), rtol=1e-12)
