"""``fgraph.utils.data.DataLoader`` against PyTorch's: loader throughput and a training loop it feeds.

The dataset (``loader_data.AugmentedImages``) holds 28×28 images in memory and runs a per-sample Python
transform (random shift and flip, normalisation: tens of µs per sample); batches of 64 feed
``optim_step.py``'s MLP Adam step (784→256→256→10). For each loader it reports, in batches per second:

* **loader alone**: iterating the loader, nothing else;
* **training loop**: the loader feeding the step, one step per batch (the figure that matters);
* **step alone** (one row per framework): the step on a fixed batch, the ceiling of the loop.

Loaders: fgraph with ``num_workers=0``, 2 worker threads (``worker_method="thread"``) and 2 worker
processes (forkserver), and PyTorch with 0 and 2 worker processes (its default start method, fork on
Linux). Workers are persistent, so one pass is timed without their start-up, which is reported apart
(first batch of a fresh loader, fgraph's processes after their forkserver is up). An epoch is
``BATCHES`` batches; timing is ``timing.measure_all``'s (warm-up, interleaved repeats, medians). Before
timing, every loader's batches on the untransformed images must equal fgraph's ``num_workers=0``
batches, in order.

``--quick`` (the suite's smoke run) leaves out the worker processes, whose start-up alone costs seconds, runs
3-batch epochs and times each pass once after one warm-up pass.
Run: ``python benchmarks/dataloader.py [--quick]``.
"""
from __future__ import annotations

import sys
import time
import warnings
from typing import Callable, Optional

import numpy as np

import fgraph as fg
from fgraph.utils.data import DataLoader
from loader_data import AugmentedImages
from optim_step import LR, build, torch_build, train_step
from timing import block, cli, measure_all, thread_settings, to_torch, torch, torch_done

BATCH = 64
BATCHES = 16  # one timed epoch (3 in --quick)
FG0, FG_THREADS, FG_PROCESSES = "fgraph, 0 workers", "fgraph, 2 worker threads", "fgraph, 2 worker processes"
T0, T_PROCESSES = "PyTorch, 0 workers", "PyTorch, 2 worker processes"


def fgraph_loader(dataset: AugmentedImages, workers: str) -> DataLoader:
    if workers == "none":
        return DataLoader(dataset, batch_size=BATCH)
    return DataLoader(dataset, batch_size=BATCH, num_workers=2, persistent_workers=True,
                      worker_method="thread" if workers == "threads" else "multiprocessing")


def torch_loader(dataset: AugmentedImages, workers: int) -> "torch.utils.data.DataLoader":
    with warnings.catch_warnings():  # JAX warns about any fork; torch's workers never touch JAX
        warnings.simplefilter("ignore", RuntimeWarning)
        return torch.utils.data.DataLoader(dataset, batch_size=BATCH, num_workers=workers,
                                           persistent_workers=workers > 0)


def _torch_epoch(loader: "torch.utils.data.DataLoader") -> list:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return list(loader)


def fgraph_trainer(weights: dict) -> Callable:
    model = build()
    model.load_state_dict(weights)
    opt = fg.optim.Adam(model.parameters(), lr=LR)

    def step(x: fg.Tensor, y: fg.Tensor) -> fg.Tensor:
        return train_step(model, opt, x, y)

    return step


def torch_trainer(weights: dict) -> Callable:
    model = torch_build()
    model.load_state_dict({k: to_torch(v) for k, v in weights.items()})
    opt = torch.optim.Adam(model.parameters(), lr=LR)

    def step(x: "torch.Tensor", y: "torch.Tensor") -> "torch.Tensor":
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


# -- what is timed: one epoch of BATCHES batches ---------------------------------------------------------------
def loader_pass(loader: object, framework: str) -> Callable[[], None]:
    def run() -> None:
        batches = _torch_epoch(loader) if framework == "torch" else list(loader)
        if framework == "fgraph":
            block([x.array for x, _ in batches])

    return run


def training_pass(loader: object, framework: str, step: Callable) -> Callable[[], None]:
    def run() -> None:
        loss = None
        if framework == "torch":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                for x, y in loader:
                    loss = step(x, y)
            torch_done()
        else:
            for x, y in loader:
                loss = step(x, y)
            block(loss.array)

    return run


def step_pass(framework: str, step: Callable, batch: tuple, batches: int) -> Callable[[], None]:
    x, y = batch

    def run() -> None:
        for _ in range(batches):
            loss = step(x, y)
        if framework == "fgraph":
            block(loss.array)
        else:
            torch_done()

    return run


# -- the loaders, checked -----------------------------------------------------------------------------------------
def loaders(dataset: AugmentedImages, quick: bool) -> dict:
    """``{name: (framework, loader)}``."""
    out = {FG0: ("fgraph", fgraph_loader(dataset, "none")), FG_THREADS: ("fgraph", fgraph_loader(dataset, "threads"))}
    if not quick:
        out[FG_PROCESSES] = ("fgraph", fgraph_loader(dataset, "processes"))
    if torch is not None:
        out[T0] = ("torch", torch_loader(dataset, 0))
        if not quick:
            out[T_PROCESSES] = ("torch", torch_loader(dataset, 2))
    return out


def start_up(dataset: AugmentedImages, quick: bool) -> dict:
    """Seconds to the first batch of a fresh loader with 2 workers (fgraph's processes: forkserver already up)."""
    kinds = [("fgraph threads", "threads")] + ([] if quick else [("fgraph processes", "processes")])
    out = {}
    for name, workers in kinds:
        next(iter(fgraph_loader(dataset, workers)))  # starts the forkserver once
        t0 = time.perf_counter()
        next(iter(fgraph_loader(dataset, workers)))
        out[name] = time.perf_counter() - t0
    if torch is not None and not quick:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            next(iter(torch.utils.data.DataLoader(dataset, batch_size=BATCH, num_workers=2)))
        out["PyTorch processes"] = time.perf_counter() - t0
    return out


def check_same_batches(quick: bool) -> None:
    """Every loader yields fgraph's 0-worker batches, in order (on untransformed images: no randomness)."""
    dataset = AugmentedImages(BATCH * 3 + 5, transform=False)
    reference = [(x.numpy(), y.numpy()) for x, y in fgraph_loader(dataset, "none")]
    for name, (framework, loader) in loaders(dataset, quick).items():
        batches = _torch_epoch(loader) if framework == "torch" else list(loader)
        got = [(np.asarray(x), np.asarray(y)) for x, y in batches]
        same = len(got) == len(reference) and all(
            np.array_equal(a, c) and np.array_equal(b, d) for (a, b), (c, d) in zip(got, reference))
        if not same:
            raise SystemExit(f"dataloader: {name} yields other batches than {FG0}; refusing to time it.")


def _once(passes: dict) -> dict:
    """The smoke run's timing: each pass once to warm up, once timed."""
    seconds = {}
    for name, run in passes.items():
        run()
        t0 = time.perf_counter()
        run()
        seconds[name] = time.perf_counter() - t0
    return seconds


# -- the suite's entry point ----------------------------------------------------------------------------------------
def measure(quick: bool) -> dict:
    """``{"loader": {name: batches/s}, "training": {name: steps/s}, "step": {framework: steps/s},
    "start_up": {name: s}}``."""
    from timing import model_batch

    check_same_batches(quick)
    weights, x, y = model_batch(build, BATCH, 784, 10)
    batches = 3 if quick else BATCHES
    dataset = AugmentedImages(BATCH * batches)
    named = loaders(dataset, quick)
    trainers = {"fgraph": fgraph_trainer(weights)}
    fixed = {"fgraph": (fg.tensor(x), fg.tensor(y.tolist()))}
    if torch is not None:
        trainers["torch"] = torch_trainer(weights)
        fixed["torch"] = (to_torch(x), to_torch(y))
    passes = {("loader", name): loader_pass(loader, framework) for name, (framework, loader) in named.items()}
    passes.update({("training", name): training_pass(loader, framework, trainers[framework])
                   for name, (framework, loader) in named.items()})
    passes.update({("step", framework): step_pass(framework, trainers[framework], fixed[framework], batches)
                   for framework in trainers})
    seconds = _once(passes) if quick else measure_all(passes, {p: 5 for p in passes}, 0.5, warmup=2)
    out: dict = {"loader": {}, "training": {}, "step": {}, "batches": batches}
    for (what, name), t in seconds.items():
        out[what][name] = batches / t
    out["start_up"] = start_up(dataset, quick)
    return out


def summary_line(result: dict) -> str:
    """One line for the suite's report."""
    loop = ", ".join(f"{name} {result['loader'][name]:.0f} / {result['training'][name]:.0f}"
                     for name in result["loader"])
    step = ", ".join(f"{'fgraph' if f == 'fgraph' else 'PyTorch'} {r:.0f}" for f, r in result["step"].items())
    starts = ", ".join(f"{name} {t * 1e3:.0f} ms" for name, t in result["start_up"].items())
    return (f"DataLoader, {BATCH}-sample batches with a per-sample Python transform, batches/s (loader alone / feeding "
            f"the MLP Adam step): {loop}; the step alone: {step}; first batch of a fresh 2-worker loader: {starts} "
            "(see `benchmarks/dataloader.py`).")


def run(quick: bool) -> int:
    print("fgraph DataLoader benchmark" + (" (--quick)" if quick else ""))
    for line in thread_settings():
        print("  " + line)
    print()
    result = measure(quick)
    print(f"{result['batches']} batches of {BATCH} per epoch, batches/s (higher is better)")
    print(f"  {'loader':<32} {'loader alone':>14} {'training loop':>14} {'loop / min(loader, step)':>26}")
    for name in result["loader"]:
        framework = "torch" if name.startswith("PyTorch") else "fgraph"
        ceiling = min(result["loader"][name], result["step"][framework])
        print(f"  {name:<32} {result['loader'][name]:14.0f} {result['training'][name]:14.0f} "
              f"{result['training'][name] / ceiling:26.2f}")
    for framework, rate in result["step"].items():
        print(f"  {framework + ' step alone':<32} {'':>14} {rate:14.0f}")
    print()
    for name, t in result["start_up"].items():
        print(f"first batch of a fresh 2-worker loader, {name}: {t * 1e3:.0f} ms")
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    return cli(run, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
