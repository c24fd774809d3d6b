"""Data-parallel training of the digits CNN with fgraph.compile on a mesh of devices.

The training step is ordinary fgraph code (forward, ``loss.backward()``, ``opt.step``),
compiled into one XLA program by ``fg.compile``. For data parallelism nothing in the step
changes: the model and the optimizer are replicated on a mesh of devices
(``fg.distributed.replicate``) and each batch is split along its first axis
(``fg.distributed.shard_batch``); the compiled program runs where its data is, and XLA
inserts the all-reduce of the gradients (and of BatchNorm's batch statistics). The script
trains the same model twice, on one device and on the mesh, and checks that the two loss
trajectories agree (float32: to about 1e-5).

On a CPU the devices are simulated: the script sets
``XLA_FLAGS=--xla_force_host_platform_device_count=N`` before JAX starts. On a machine
with N accelerators it uses them; with fewer, it runs on N simulated CPU devices. Multi-host: start one process per host with
``jax.distributed.initialize()`` (coordinator address, process count and id from the
launcher's environment) before building the mesh; ``jax.devices()`` then lists every
host's devices and the same script runs unchanged (see the README).

Run: python examples/data_parallel.py [--devices 4] [--quick]
"""
import json
import os
import sys


def _device_count(argv: list) -> int:
    for i, arg in enumerate(argv):
        if arg == "--devices" and i + 1 < len(argv):
            return int(argv[i + 1])
        if arg.startswith("--devices="):
            return int(arg.split("=", 1)[1])
    return 4


# Must happen before JAX starts: simulated CPU devices.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           f" --xla_force_host_platform_device_count={_device_count(sys.argv)}").strip()

import jax  # noqa: E402
import numpy as np  # noqa: E402

import _common  # noqa: E402
import fgraph as fg  # noqa: E402
import fgraph.nn.functional as F  # noqa: E402


@fg.compile
def train_step(model: fg.nn.Module, opt: fg.optim.Optimizer, x: fg.Tensor, y: fg.Tensor) -> fg.Tensor:
    """One Adam step on a batch; the same code runs on one device or data-parallel on a mesh."""
    loss = F.cross_entropy(model(x), y)
    opt.step(loss.backward())
    return loss


def train(data: _common.Digits, steps: int, seed: int, mesh=None) -> list:
    fg.manual_seed(seed)
    model = _common.DigitsCNN()
    opt = fg.optim.Adam(model.parameters(), lr=_common.DIGITS_LR)
    if mesh is not None:
        fg.distributed.replicate(model, mesh)
    rng = np.random.default_rng(seed)
    losses = []
    while len(losses) < steps:
        for index in _common.minibatches(len(data.x_train), _common.DIGITS_BATCH_SIZE, rng):
            x, y = data.x_train[index], data.y_train[index]
            if mesh is not None:
                x, y = fg.distributed.shard_batch(x, mesh), fg.distributed.shard_batch(y, mesh)
            losses.append(train_step(model, opt, x, y))
            if len(losses) == steps:
                break
    placed_on = len(model.head[3].weight.array.devices())
    return [loss.item() for loss in losses], placed_on


def mesh_devices(count: int) -> list:
    """``count`` devices of JAX's default backend, or ``count`` simulated CPU devices where it has fewer."""
    devices = jax.devices()[:count]
    if len(devices) < count:
        devices = jax.devices("cpu")[:count]  # simulated: the XLA flag above
        if len(devices) < count:
            raise SystemExit(f"data_parallel: asked for {count} devices, JAX sees {len(jax.devices())}.")
        print(f"JAX's {jax.default_backend()} backend has {len(jax.devices())} device(s): "
              f"the mesh uses {count} simulated CPU devices")
    return devices


def main() -> None:
    parser = _common.make_parser(__doc__)
    parser.add_argument("--devices", type=int, default=4, help="devices in the mesh (simulated on a CPU; default 4)")
    parser.add_argument("--steps", type=int, default=120, help="training steps (default 120)")
    args = _common.parse_args(parser)
    steps = 6 if args.quick else args.steps
    devices = mesh_devices(args.devices)
    data = _common.load_digits(seed=args.seed)

    with jax.default_device(devices[0]):  # both runs on the mesh's kind of device
        single, _ = train(data, steps, args.seed)
        mesh = fg.distributed.mesh(devices)
        parallel, placed_on = train(data, steps, args.seed, mesh)
    print(f"after training, the parameters are replicated on {placed_on} devices")

    gap = float(np.max(np.abs(np.array(single) - np.array(parallel))))
    for i in range(0, steps, max(1, steps // 6)):
        print(f"step {i + 1:4d}  one device {single[i]:.6f}   {len(devices)} devices {parallel[i]:.6f}")
    print(f"final loss: one device {single[-1]:.6f}, {len(devices)} devices {parallel[-1]:.6f}")
    print(f"largest difference between the loss trajectories: {gap:.2e} over {steps} steps")
    (args.out / "data_parallel_losses.json").write_text(json.dumps({"one_device": single, "mesh": parallel}))
    if gap > 1e-3:
        raise SystemExit("data_parallel: the data-parallel trajectory differs from the single-device one")
    print(f"trajectories agree on a mesh of {len(devices)} devices")


if __name__ == "__main__":
    main()
