"""Grad-CAM (Selvaraju et al., 2017) on the digits CNN, with a forward hook and a full backward hook.

Which pixels made the network say "3"? Grad-CAM weighs the feature maps of the last
conv block by how much the class score depends on them:

    weights_c = mean over positions of d score / d A_c      (one weight per channel c)
    cam       = ReLU(sum_c weights_c * A_c)                 (4x4 here), upsampled to 8x8

``A`` (the output of ``model.block2``) is captured by a forward hook and ``d score / d A``
by a full backward hook (``register_full_backward_hook``: its ``grad_output``), exactly
as in PyTorch. The hook's gradient is then checked against the same gradient taken
directly, ``fg.grad(score, [A])``.

The model is the one ``train_digits.py`` saved in ``--out`` when it is there, otherwise
it is trained here for a few epochs. The grid of test digits with their heatmaps goes
to ``grad_cam.png`` (and, in the full run or with ``--save-figure``, to
``docs/images/grad_cam.png``).

Run: python examples/grad_cam.py [--out DIR] [--quick] [--save-figure]
"""
import time

import numpy as np

import _common
import fgraph as fg
import fgraph.nn.functional as F

EPOCHS = 6  # when no checkpoint from train_digits.py is found
FIGURE = "grad_cam.png"


class Capture:
    """Forward and full backward hooks that keep a module's last output and the gradient flowing into it."""

    def __init__(self, module) -> None:
        self.activation = None
        self.gradient = None
        self.handles = [module.register_forward_hook(self.forward_hook),
                        module.register_full_backward_hook(self.backward_hook)]

    def forward_hook(self, module, args, output) -> None:
        self.activation = output

    def backward_hook(self, module, grad_input, grad_output) -> None:
        self.gradient = grad_output[0]  # d score / d output of the module

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def get_model(args, data):
    """The CNN from train_digits.py's checkpoint in ``--out``, or one trained here for a few epochs."""
    model = _common.DigitsCNN()
    checkpoint = args.out / _common.DIGITS_CHECKPOINT
    if checkpoint.exists():
        model.load_state_dict(fg.load(checkpoint))
        return model, f"loaded {checkpoint}"
    epochs, max_steps = (1, 1) if args.quick else (EPOCHS, None)
    rng = np.random.default_rng(args.seed)
    opt = fg.optim.Adam(model.parameters(), lr=_common.DIGITS_LR)
    for _ in _common.progress(range(epochs), desc="training (no checkpoint found)"):
        _common.train_epoch(model, opt, data.x_train, data.y_train, rng, max_steps=max_steps)
    return model, f"trained here for {epochs} epoch(s) (run train_digits.py first to use its model)"


def grad_cam(activation: fg.Tensor, gradient: fg.Tensor, size: tuple) -> fg.Tensor:
    """Grad-CAM maps ``(N, 1, *size)`` in [0, 1] from ``A`` and ``d score / d A`` (both ``(N, C, h, w)``)."""
    weights = gradient.mean((2, 3), keepdim=True)
    cam = F.relu((weights * activation).sum(1, keepdim=True))
    cam = F.interpolate(cam, size=size, mode="bilinear", align_corners=False)
    return cam / (cam.amax((2, 3), keepdim=True) + 1e-8)


def plot(images, cams, labels, predictions, path) -> None:
    plt = _common.pyplot()
    n = len(images)
    fig, axes = plt.subplots(3, n, figsize=(1.25 * n, 4.2))
    for i in range(n):
        axes[0, i].imshow(images[i], cmap="gray_r")
        axes[0, i].set_title(f"{labels[i]} -> {predictions[i]}", fontsize=9)
        axes[1, i].imshow(cams[i], cmap="jet", vmin=0, vmax=1)
        axes[2, i].imshow(images[i], cmap="gray")
        axes[2, i].imshow(cams[i], cmap="jet", alpha=0.45, vmin=0, vmax=1)
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    for row, name in enumerate(("digit", "Grad-CAM", "overlay")):
        axes[row, 0].set_ylabel(name)
    fig.suptitle("Grad-CAM on DigitsCNN.block2 (label -> prediction), hooks in fgraph", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = _common.make_parser(__doc__, figure=FIGURE)
    args = _common.parse_args(parser)
    start = time.perf_counter()
    fg.manual_seed(args.seed)
    data = _common.load_digits()
    model, origin = get_model(args, data)
    print(f"model: {origin}")

    # The first test image of each class.
    labels_all = data.y_test.tolist()
    picks = fg.tensor([labels_all.index(digit) for digit in range(10)])
    images, labels = data.x_test[picks], data.y_test[picks]

    model.eval()  # batch norm uses its running statistics, so the images do not interact
    capture = Capture(model.block2)
    logits = model(images)
    predictions = logits.argmax(1)
    # The sum of each image's own top score: its gradient w.r.t. image i's activations is image i's.
    score = logits.gather(1, predictions.unsqueeze(1)).sum()
    score.backward()  # runs the full backward hook (the returned parameter gradients are not needed)
    activation, hooked = capture.activation, capture.gradient
    capture.remove()
    (direct,) = fg.grad(score, [activation])
    difference = (hooked - direct).abs().max().item()

    cams = grad_cam(activation.detach(), hooked.detach(), size=tuple(images.shape[2:]))
    figure = args.out / FIGURE
    plot(images[:, 0].numpy(), cams[:, 0].numpy(), labels.tolist(), predictions.tolist(), figure)
    print(f"activation of block2: {tuple(activation.shape)}, Grad-CAM maps upsampled to {tuple(cams.shape[2:])}")
    print(f"labels      {labels.tolist()}\npredictions {predictions.tolist()}")
    print(f"wrote {figure}")
    if _common.should_publish(args):
        print(f"copied it to {_common.publish(figure, FIGURE)}")
    print(f"total {time.perf_counter() - start:.1f} s")
    print(f"gradient check: full backward hook's grad_output vs fg.grad(score, [activation]): "
          f"max |difference| = {difference:.3g}")
    if difference > 1e-6:
        raise SystemExit("the hook's gradient differs from fg.grad's")


if __name__ == "__main__":
    main()
