"""Every script in ``examples/`` runs: each in a subprocess, ``--quick --out <tmp>`` when it takes them.

The scripts are discovered (every ``examples/*.py`` but the shared ``_common.py``), so a new
example is run too. A script whose source mentions ``--quick`` is run as
``python examples/NAME.py --quick --out <tmp>`` and must write at least one file there;
the others (``quickstart.py``, ``custom_function.py``) are run plainly. Every run must exit
with 0; the known examples must also print their results lines and write their files
(``EXPECTED``). Quick runs train for a few steps only, so nothing here checks accuracy; what
is checked is what holds after any number of steps: the reloaded checkpoint scores exactly
as the trained model, and the Grad-CAM hook's gradient equals ``fg.grad``'s.

The examples need the ``examples`` extra (scikit-learn, tqdm, matplotlib: ``pip install -e
'.[examples]'``). Without it the scripts that need it are skipped locally, but fail in CI
(where the environment variable ``CI`` is set), which installs ``.[test,examples,distributed]``.
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES_DIR = ROOT / "examples"
SCRIPTS = sorted(path.name for path in EXAMPLES_DIR.glob("*.py") if not path.name.startswith("_"))
EXTRAS = ("sklearn", "tqdm", "matplotlib")  # what ``examples/_common.py`` needs
TIMEOUT_S = 300  # a quick run takes 5-20 s; this only stops a hung process

# script -> (regular expressions its stdout must match, files it must write in --out)
EXPECTED = {
    "quickstart.py": ([r"all agree\."], []),
    "custom_function.py": ([r"all checks passed"], []),
    "graph_picture.py": ([r"dz/dx = 42", r"wrote \d+ files"],
                         ["graph_seeds.dot", "graph_mlp.dot", "graph_second_derivative.dot"]),
    "train_digits.py": ([r"test accuracy: [\d.]+% .* after reloading the checkpoint into a fresh model: [\d.]+%",
                         r"Adam state of 10 parameters"],
                        ["digits_cnn.safetensors", "digits_adam.safetensors", "digits_training.png"]),
    "grad_cam.py": ([r"gradient check: .* max \|difference\| = \S+", r"predictions \["], ["grad_cam.png"]),
    "jax_interop.py": ([r"trained in a jax.jit loop", r"node Rk4StepBackward0", r"check_grads: .*: passed",
                        r"vmap vs a loop of fg.grad: max \|difference\|"], ["jax_interop.json"]),
    "data_parallel.py": ([r"replicated on 4 devices", r"trajectories agree on a mesh of 4 devices"],
                         ["data_parallel_losses.json"]),
    "sharded_gpt.py": ([r"h\.0\.attn\.q\.weight \(64, 64\): P\('tp', 'fsdp'\); Adam's exp_avg: P\('tp', 'fsdp'\)",
                        r"sharded training matches one device"], ["sharded_gpt_losses.json"]),
    "maml_sine.py": ([r"^\s+MAML\s+[\d.]+ ->\s+[\d.]+ ->\s+[\d.]+", r"^\s+first-order MAML\s+[\d.]+ ->\s+[\d.]+ ->"],
                     ["maml_sine.png"]),
    "vae_digits.py": ([r"epoch\s+1: test ELBO\s+-?[\d.]+ nats/image", r"test ELBO: -?[\d.]+ -> -?[\d.]+ nats/image"],
                      ["vae_digits.png"]),
    "reinforce_gridworld.py": ([r"iteration\s+1: mean return\s+-?[\d.]+, episode length",
                                r"mean return: -?[\d.]+ -> -?[\d.]+; episode length"],
                               ["reinforce_gridworld.png"]),
    "nanogpt_shakespeare.py": ([r"step 0: train loss [\d.]+, val loss [\d.]+", r"resumed from iteration \d+",
                                r"val loss: [\d.]+ -> [\d.]+", r"^prompt:\n", r"^sample:\n"],
                               ["ckpt.safetensors", "nanogpt_sample.txt"]),
}


def takes_quick(script: str) -> bool:
    return "--quick" in (EXAMPLES_DIR / script).read_text()


def require_extras(script: str) -> None:
    """Skip (or, in CI, fail) when a script that imports ``_common`` lacks the ``examples`` extra."""
    if "_common" not in (EXAMPLES_DIR / script).read_text():
        return
    missing = [name for name in EXTRAS if importlib.util.find_spec(name) is None]
    if missing:
        message = f"{script} needs {', '.join(missing)}: pip install -e '.[examples]'"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def docs_images() -> dict:
    return {path.name: path.stat().st_mtime_ns for path in (ROOT / "docs" / "images").glob("*")}


def run_example(script: str, out: Path) -> str:
    """Run ``examples/<script>`` (quick, into ``out``, when it takes ``--quick``); return its stdout."""
    command = [sys.executable, str(EXAMPLES_DIR / script)]
    if takes_quick(script):
        command += ["--quick", "--out", str(out)]
    env = dict(os.environ, MPLBACKEND="Agg")
    before = docs_images()
    try:
        result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as error:
        pytest.fail(f"{script} did not finish in {TIMEOUT_S} s; stderr tail:\n{(error.stderr or '')[-3000:]}")
    assert result.returncode == 0, (
        f"{' '.join(command)} exited with {result.returncode}\n"
        f"--- stdout (tail) ---\n{result.stdout[-3000:]}\n--- stderr (tail) ---\n{result.stderr[-3000:]}")
    assert result.stdout.strip(), f"{script} printed nothing"
    assert docs_images() == before, f"a quick run of {script} changed docs/images/ (only full runs may)"
    return result.stdout


@pytest.mark.parametrize("script", SCRIPTS)
def test_example_runs(script, tmp_path):
    require_extras(script)
    out = tmp_path / "out"  # not created: the script must create it
    stdout = run_example(script, out)
    patterns, files = EXPECTED.get(script, ([], []))
    for pattern in patterns:
        assert re.search(pattern, stdout, re.MULTILINE), f"{script}'s output lacks /{pattern}/:\n{stdout[-3000:]}"
    if takes_quick(script):
        written = sorted(path.name for path in out.iterdir()) if out.is_dir() else []
        assert written, f"{script} --quick --out {out} wrote no file"
        missing = [name for name in files if name not in written]
        assert not missing, f"{script} did not write {missing} (it wrote {written})"
        for name in files:
            assert (out / name).stat().st_size > 0, f"{script} wrote an empty {name}"

    if script == "train_digits.py":  # the reloaded checkpoint scores exactly as the trained model
        line = re.search(r"test accuracy: ([\d.]+)% \(loss ([\d.]+)\).*: ([\d.]+)% \(loss ([\d.]+)\)", stdout)
        assert line and line.group(1, 2) == line.group(3, 4), line and line.group(0)
    if script == "grad_cam.py":  # the full backward hook's gradient is fg.grad's
        difference = float(re.search(r"max \|difference\| = (\S+)", stdout).group(1))
        assert difference <= 1e-6


def test_sharded_gpt_as_two_processes_matches_one_device(tmp_path):
    # FSDP x tensor parallel over a global mesh of two processes (2 devices each): the multi-host path of
    # fully_shard, parallelize_module and shard_batch, end to end as a user runs it.
    command = [sys.executable, str(EXAMPLES_DIR / "sharded_gpt.py"), "--quick", "--processes", "2",
               "--out", str(tmp_path)]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "2 processes, 4 devices" in result.stdout and "sharded training matches one device" in result.stdout
    assert result.stdout.count("Adam's exp_avg: P('tp', 'fsdp')") == 2, result.stdout  # both processes report


def test_examples_are_discovered():
    assert {"train_digits.py", "grad_cam.py", "maml_sine.py", "quickstart.py"} <= set(SCRIPTS)
    assert "_common.py" not in SCRIPTS
    assert not takes_quick("quickstart.py") and takes_quick("train_digits.py")


def test_grad_cam_loads_the_checkpoint_train_digits_writes(tmp_path):
    """``grad_cam.py`` uses ``train_digits.py``'s checkpoint in ``--out`` instead of training a model."""
    require_extras("grad_cam.py")
    import fgraph as fg

    spec = importlib.util.spec_from_file_location("examples_common", EXAMPLES_DIR / "_common.py")
    common = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(common)
    state = fg.random.get_rng_state()  # leave the default generator as the other tests find it
    try:
        fg.manual_seed(0)
        fg.save(common.DigitsCNN().state_dict(), tmp_path / common.DIGITS_CHECKPOINT)
    finally:
        fg.random.set_rng_state(state)
    stdout = run_example("grad_cam.py", tmp_path)
    assert f"model: loaded {tmp_path / common.DIGITS_CHECKPOINT}" in stdout
    assert (tmp_path / "grad_cam.png").stat().st_size > 0
