"""A variational autoencoder (Kingma & Welling, 2014) on scikit-learn's 8x8 digits, with fgraph.distributions.

The encoder maps an image ``x`` (64 pixels in [0, 1]) to the approximate posterior
``q(z | x) = Normal(mu(x), sigma(x))`` over a small latent ``z``; the decoder maps ``z`` to
Bernoulli logits for each pixel. Training maximises the evidence lower bound

    ELBO(x) = E_q[log p(x | z)] - KL(q(z | x) || p(z)),    p(z) = Normal(0, 1),

estimated with one reparameterised draw ``z = q.rsample()`` (so the gradient flows through
the sample into the encoder) and the closed-form ``kl_divergence(q, p)``. This is the
pytorch/examples VAE without its hand-written KL term. Each step is one ``fg.compile``d
program: forward, the draw from fgraph's default generator (threaded through the program),
backward and Adam's update.

It prints the test ELBO (nats per image) as it trains, and saves ``vae_digits.png``: test
images, their reconstructions, and new digits decoded from ``z ~ p(z)``.

Run: python examples/vae_digits.py [--out DIR] [--quick] [--epochs N]   (about 20 s on a 2-core CPU)
"""
from __future__ import annotations

import numpy as np

import _common
import fgraph as fg
import fgraph.nn.functional as F
from fgraph import nn
from fgraph.distributions import Normal, kl_divergence

LATENT = 4
HIDDEN = 128
BATCH = 64
EPOCHS = 60
LR = 2e-3
FIGURE = "vae_digits.png"


class VAE(nn.Module):
    """``encode(x) -> q(z | x)``, ``decode(z) -> pixel logits``; ``forward`` returns the negative ELBO per image."""

    def __init__(self, pixels: int = 64, hidden: int = HIDDEN, latent: int = LATENT) -> None:
        super().__init__()
        self.enc = nn.Linear(pixels, hidden)
        self.enc_mu = nn.Linear(hidden, latent)
        self.enc_log_sigma = nn.Linear(hidden, latent)
        self.dec = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(), nn.Linear(hidden, pixels))
        self.latent = latent

    def encode(self, x: fg.Tensor) -> Normal:
        h = F.relu(self.enc(x))
        return Normal(self.enc_mu(h), fg.exp(self.enc_log_sigma(h)))

    def decode(self, z: fg.Tensor) -> fg.Tensor:
        return self.dec(z)

    def forward(self, x: fg.Tensor, key=None) -> fg.Tensor:
        q = self.encode(x)
        z = q.rsample(key=key)
        log_likelihood = -F.binary_cross_entropy_with_logits(self.decode(z), x, reduction="none").sum(-1)
        prior = Normal(fg.zeros_like(z), fg.ones_like(z))
        return -(log_likelihood - kl_divergence(q, prior).sum(-1))


def train(epochs: int, seed: int, x_train: fg.Tensor, x_test: fg.Tensor) -> tuple:
    fg.manual_seed(seed)
    model = VAE()
    opt = fg.optim.Adam(model.parameters(), lr=LR)

    @fg.compile
    def step(x: fg.Tensor) -> fg.Tensor:
        loss = model(x).mean()
        opt.step(loss.backward())
        return loss

    @fg.compile
    def test_elbo(x: fg.Tensor) -> fg.Tensor:
        return -model(x).mean()

    rng = np.random.default_rng(seed)
    history = []
    bar = _common.progress(range(epochs), desc="VAE", mininterval=0.5)
    for epoch in bar:
        for idx in _common.minibatches(x_train.shape[0], BATCH, rng):
            step(x_train[idx])
        elbo = test_elbo(x_test).item()
        history.append(elbo)
        bar.set_postfix(test_elbo=f"{elbo:.2f}")
        if epoch % max(epochs // 6, 1) == 0 or epoch == epochs - 1:
            bar.write(f"epoch {epoch + 1:3d}: test ELBO {elbo:8.2f} nats/image")
    return model, history


def save_figure(model: VAE, x_test: fg.Tensor, path, seed: int) -> None:
    plt = _common.pyplot()
    n = 10
    with fg.no_grad():
        originals = x_test[:n]
        reconstructions = fg.sigmoid(model.decode(model.encode(originals).mean))
        prior = Normal(fg.zeros(LATENT), fg.ones(LATENT))
        samples = fg.sigmoid(model.decode(prior.sample((n,), generator=fg.Generator(seed))))
    rows = [("test images", originals), ("reconstructions", reconstructions), ("samples from p(z)", samples)]
    fig, axes = plt.subplots(len(rows), n, figsize=(n * 0.9, len(rows) * 1.1))
    for r, (title, images) in enumerate(rows):
        pixels = np.asarray(images).reshape(n, 8, 8)
        for c in range(n):
            axes[r, c].imshow(pixels[c], cmap="gray_r", vmin=0, vmax=1)
            axes[r, c].axis("off")
        axes[r, 0].set_title(title, fontsize=9, loc="left")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = _common.make_parser(__doc__, figure=FIGURE)
    parser.add_argument("--epochs", type=int, default=EPOCHS, help=f"training epochs (default {EPOCHS})")
    args = _common.parse_args(parser)
    data = _common.load_digits(seed=args.seed)
    x_train, x_test = data.x_train.reshape(-1, 64), data.x_test.reshape(-1, 64)
    model, history = train(2 if args.quick else args.epochs, args.seed, x_train, x_test)
    print(f"test ELBO: {history[0]:.2f} -> {history[-1]:.2f} nats/image ({len(history)} epochs, latent {LATENT})")
    figure = args.out / FIGURE
    save_figure(model, x_test, figure, args.seed)
    print(f"wrote {figure}")
    if _common.should_publish(args):
        print(f"published {_common.publish(figure, FIGURE)}")


if __name__ == "__main__":
    main()
