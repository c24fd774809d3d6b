"""Train a small CNN on scikit-learn's 8x8 digits with Adam and a cosine learning-rate schedule.

The PyTorch training loop, with fgraph's one change: ``loss.backward()`` *returns* the
gradients and ``opt.step(grads)`` takes them (there is no ``zero_grad``). The model
(``_common.DigitsCNN``: Conv2d, BatchNorm2d, ReLU, MaxPool2d, Dropout, Linear) trains
on a fixed stratified split (1437 train / 360 test images) in shuffled mini-batches,
``model.train()`` for training and ``model.eval()`` for testing. Then:

* the weights are saved with ``fg.save(model.state_dict(), ...)`` (safetensors: nothing
  executes on load) and the optimizer's state with ``fg.save(opt.state_dict(), ...)``;
* both are loaded into a fresh model and a fresh optimizer, and the fresh model is
  evaluated again: the accuracy is the same;
* the loss/accuracy curves go to ``digits_training.png`` (and, in the full run or with
  ``--save-figure``, to ``docs/images/digits_training.png``).

Run: python examples/train_digits.py [--out DIR] [--quick] [--save-figure]
     (about 20 s on a 2-core CPU; test accuracy about 99%)
"""
import time

import numpy as np

import _common
import fgraph as fg
from fgraph.optim.lr_scheduler import CosineAnnealingLR

EPOCHS = 20
OPTIMIZER_CHECKPOINT = "digits_adam.safetensors"
FIGURE = "digits_training.png"


def plot(history: dict, path) -> None:
    plt = _common.pyplot()
    epochs = np.arange(1, len(history["train_loss"]) + 1)
    fig, (ax_loss, ax_acc, ax_lr) = plt.subplots(1, 3, figsize=(13, 3.6))
    ax_loss.plot(epochs, history["train_loss"], "o-", label="train (running, dropout on)")
    ax_loss.plot(epochs, history["test_loss"], "s-", label="test")
    ax_loss.set(xlabel="epoch", ylabel="cross-entropy", yscale="log", title="loss")
    ax_acc.plot(epochs, 100 * np.array(history["train_acc"]), "o-", label="train (running)")
    ax_acc.plot(epochs, 100 * np.array(history["test_acc"]), "s-", label="test")
    ax_acc.set(xlabel="epoch", ylabel="accuracy (%)", title="accuracy", ylim=(min(80, ax_acc.get_ylim()[0]), 100.5))
    ax_lr.plot(epochs, history["lr"], "o-", color="tab:green")
    ax_lr.set(xlabel="epoch", ylabel="learning rate", title="CosineAnnealingLR")
    for ax in (ax_loss, ax_acc):
        ax.legend()
    for ax in (ax_loss, ax_acc, ax_lr):
        ax.grid(alpha=0.3)
    fig.suptitle("fgraph: DigitsCNN on scikit-learn's 8x8 digits (Adam)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = _common.make_parser(__doc__, figure=FIGURE)
    parser.add_argument("--epochs", type=int, default=EPOCHS, help=f"training epochs (default {EPOCHS})")
    args = _common.parse_args(parser)
    epochs = 1 if args.quick else args.epochs
    max_steps = 3 if args.quick else None
    start = time.perf_counter()

    fg.manual_seed(args.seed)  # initialisation and dropout draw from the default generator
    rng = np.random.default_rng(args.seed)  # mini-batch order
    data = _common.load_digits()
    model = _common.DigitsCNN()
    opt = fg.optim.Adam(model.parameters(), lr=_common.DIGITS_LR)
    scheduler = CosineAnnealingLR(opt, T_max=epochs)
    print(f"{len(data.x_train)} training and {len(data.x_test)} test images; "
          f"{sum(p.numel() for p in model.parameters())} parameters; {epochs} epochs of batch {_common.DIGITS_BATCH_SIZE}")

    history = {key: [] for key in ("train_loss", "train_acc", "test_loss", "test_acc", "lr")}
    bar = _common.progress(range(epochs), desc="epochs")
    for _ in bar:
        history["lr"].append(scheduler.get_last_lr()[0])
        train_loss, train_acc = _common.train_epoch(model, opt, data.x_train, data.y_train, rng, max_steps=max_steps)
        test_loss, test_acc = _common.evaluate(model, data.x_test, data.y_test)
        scheduler.step()
        for key, value in zip(("train_loss", "train_acc", "test_loss", "test_acc"),
                              (train_loss, train_acc, test_loss, test_acc)):
            history[key].append(value)
        bar.set_postfix(loss=f"{train_loss:.3f}", test_acc=f"{100 * test_acc:.1f}%")
    train_time = time.perf_counter() - start

    # Checkpoints: safetensors files, loaded back into a fresh model and optimizer.
    model_path, opt_path = args.out / _common.DIGITS_CHECKPOINT, args.out / OPTIMIZER_CHECKPOINT
    fg.save(model.state_dict(), model_path)
    fg.save(opt.state_dict(), opt_path)
    fresh = _common.DigitsCNN()
    fresh.load_state_dict(fg.load(model_path))
    fresh_opt = fg.optim.Adam(fresh.parameters(), lr=_common.DIGITS_LR)
    fresh_opt.load_state_dict(fg.load(opt_path))
    reloaded_loss, reloaded_acc = _common.evaluate(fresh, data.x_test, data.y_test)
    test_loss, test_acc = history["test_loss"][-1], history["test_acc"][-1]
    if reloaded_acc != test_acc:
        raise SystemExit(f"the reloaded model scores {reloaded_acc:.4f}, the trained one {test_acc:.4f}")
    print(f"saved {model_path.name} and {opt_path.name} (Adam state of {len(fresh_opt.state)} parameters, "
          f"step {int(next(iter(fresh_opt.state.values()))['step'].item())}, reloaded into a fresh optimizer)")

    figure = args.out / FIGURE
    plot(history, figure)
    written = [model_path.name, opt_path.name, figure.name]
    if _common.should_publish(args):
        written.append(str(_common.publish(figure, FIGURE)))
    print(f"wrote {', '.join(written)} to {args.out}")
    print(f"training: {epochs} epochs in {train_time:.1f} s; total {time.perf_counter() - start:.1f} s")
    print(f"test accuracy: {100 * test_acc:.2f}% (loss {test_loss:.4f}); after reloading the checkpoint into a "
          f"fresh model: {100 * reloaded_acc:.2f}% (loss {reloaded_loss:.4f})")
    if not args.quick and test_acc < 0.97:
        raise SystemExit(f"test accuracy {100 * test_acc:.2f}% is below the expected 97%")


if __name__ == "__main__":
    main()
