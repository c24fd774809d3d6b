"""The device API with PyTorch's names: fg.device, device= on creation functions, Tensor.device/.to/.cuda/.cpu,
Module.to, fg.cuda / fg.cpu / fg.accelerator / fg.backends, fg.load(map_location=) and the deprecated
fg.cuda.amp / fg.cpu.amp spellings (docs/devices.md).

On a machine without a GPU every request for "cuda" raises DeviceUnavailableError naming the portable idiom;
placement on a second device is checked in a subprocess that splits the host CPU into two JAX devices.
"""
from __future__ import annotations

import io
import os
import pickle
import subprocess
import sys
import textwrap
import warnings

import jax
import jax.numpy as jnp
import pytest

import fgraph as fg
from fgraph._kernel_jit import only_device
from fgraph.device import default_device as fgraph_default_device
from fgraph.errors import DeviceUnavailableError

IDIOM = 'device = "cuda" if fg.cuda.is_available() else "cpu"'
needs_no_gpu = pytest.mark.skipif(fg.cuda.is_available(), reason="checks the error raised without a GPU")
CPU = fg.device("cpu")
DEFAULT = fgraph_default_device()  # JAX's default device: the GPU where there is one (PyTorch's default is the CPU)


# -- fg.device -------------------------------------------------------------------------------------------------------
def test_device_spellings():
    assert fg.device("cpu").type == "cpu" and fg.device("cpu").index is None
    assert (fg.device("cuda").type, fg.device("cuda").index) == ("cuda", None)
    assert (fg.device("cuda:1").type, fg.device("cuda:1").index) == ("cuda", 1)
    assert fg.device("cuda", 0) == fg.device("cuda:0") == fg.device(0)
    assert fg.device("gpu") == fg.device("cuda") and fg.device("gpu:1") == fg.device("cuda:1")
    assert fg.device(fg.device("cuda:2")) == fg.device("cuda:2")
    assert fg.device(jax.devices("cpu")[0]) == CPU
    assert repr(fg.device("cpu")) == "device(type='cpu')"
    assert repr(fg.device("cuda:1")) == "device(type='cuda', index=1)"
    assert str(fg.device("cuda", 1)) == "cuda:1" and str(CPU) == "cpu"
    assert CPU.platform == "cpu" and fg.device("cuda").platform == "gpu"
    assert CPU.jax_device is jax.devices("cpu")[0]


def test_device_equality_and_hashing():
    assert fg.device("cpu") == "cpu" and "cpu" == fg.device("cpu") and fg.device("cuda:1") == "cuda:1"
    assert fg.device("cuda:1") != "cuda:0" and fg.device("cpu") != "cuda" and fg.device("cpu") != "nonsense"
    assert fg.device("cuda") != fg.device("cuda:0")  # PyTorch: the current GPU is not GPU 0
    assert fg.device("cpu") != 0 and fg.device("cpu") != None  # noqa: E711
    assert len({fg.device("cpu"), fg.device("cpu"), fg.device("cuda:0"), fg.device("cuda", 0)}) == 2
    assert {"cpu": 1}[fg.device("cpu")] == 1
    assert pickle.loads(pickle.dumps(fg.device("cuda:3"))) == fg.device("cuda:3")
    with pytest.raises(AttributeError, match="immutable"):
        fg.device("cpu").index = 1


def test_device_errors():
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        fg.device("cdu")
    with pytest.raises(RuntimeError, match="Invalid device string"):
        fg.device("cuda:x")
    with pytest.raises(RuntimeError, match="has an index already"):
        fg.device("cuda:1", 1)
    with pytest.raises(RuntimeError, match="negative"):
        fg.device("cuda", -1)
    with pytest.raises(TypeError, match="expected a device string"):
        fg.device(1.5)


def test_device_matches_torch():
    torch = pytest.importorskip("torch")
    for spec in ("cpu", "cuda", "cuda:1", ("cuda", 0), "cpu:0"):
        args = spec if isinstance(spec, tuple) else (spec,)
        mine, theirs = fg.device(*args), torch.device(*args)
        assert (repr(mine), str(mine), mine.type, mine.index) == (repr(theirs), str(theirs), theirs.type,
                                                                  theirs.index)
        assert fg.device(theirs) == mine and mine == theirs
    on_cpu = fg.zeros(2, device="cpu")
    assert repr(on_cpu.device) == repr(torch.zeros(2).device)
    assert on_cpu.is_cuda is torch.zeros(2).is_cuda is False
    assert on_cpu.get_device() == torch.zeros(2).get_device() == -1
    if fg.cuda.is_available() and torch.cuda.is_available():
        mine, theirs = fg.zeros(2, device="cuda:0"), torch.zeros(2, device="cuda:0")
        assert (repr(mine.device), mine.is_cuda, mine.get_device()) == (repr(theirs.device), True, 0)


# -- Tensor.device, .to, .cpu, .cuda ---------------------------------------------------------------------------------
def test_tensor_device_is_an_fg_device():
    x = fg.ones(2)
    assert isinstance(x.device, fg.device) and x.device == DEFAULT and x.device == str(DEFAULT)
    assert x.device.type == ("cpu" if DEFAULT.platform == "cpu" else "cuda")
    assert x.is_cuda is (DEFAULT.type == "cuda") and x.get_device() == (-1 if DEFAULT == CPU else DEFAULT.index)
    assert x.device.jax_device in x.array.devices()
    on_cpu = fg.ones(2, device="cpu")
    assert on_cpu.device == CPU and on_cpu.device == "cpu" and not on_cpu.is_cuda and on_cpu.get_device() == -1
    seen = []

    @jax.jit
    def f(a):
        t = fg.tensor(a)
        seen.append(t.device)  # while traced: JAX's default device
        return (t + fg.arange(2, device=t.device, dtype=fg.float32)).array

    assert f(jnp.ones(2)).tolist() == [1.0, 2.0] and seen == [DEFAULT]


@pytest.mark.parametrize("dev", ["cpu", CPU, jax.devices("cpu")[0]], ids=["str", "fg.device", "jax"])
def test_to_forms(dev):
    x = fg.tensor([1.0, 2.0], requires_grad=True, device="cpu")
    assert x.to(dev) is x and x.to(device=dev) is x and x.cpu() is x
    assert x.to(dev, non_blocking=True) is x and x.to(dev, copy=True).tolist() == [1.0, 2.0]
    for y in (x.to(dev, fg.float16), x.to(fg.float16), x.to(dtype=fg.float16, device=dev),
              x.to(device=dev, dtype=fg.float16, non_blocking=True), x.to(fg.ones(1, dtype=fg.float16)),
              x.to(dev, fg.float16, True)):
        assert y.dtype == fg.float16 and y.device == CPU and y.grad_fn is not None
    (g,) = fg.grad((x.to(dev, fg.float16) * 3).float().sum(), [x])
    assert g.tolist() == [3.0, 3.0]
    with pytest.raises(TypeError, match="unexpected arguments"):
        x.to(dev, bogus=1)


@needs_no_gpu
def test_cuda_without_a_gpu_names_the_idiom():
    x = fg.ones(2, requires_grad=True)
    model = fg.nn.Linear(2, 2)
    attempts = [
        lambda: x.to("cuda"), lambda: x.to(fg.device("cuda")), lambda: x.to("gpu:0"), lambda: x.cuda(),
        lambda: x.cuda(0), lambda: x.to("cuda", fg.float16), lambda: fg.zeros(2, device="cuda"),
        lambda: fg.tensor([1.0], device="cuda"), lambda: fg.randn(2, device="cuda"),
        lambda: fg.arange(3, device=fg.device("cuda", 0)), lambda: model.to("cuda"), lambda: model.cuda(),
        lambda: fg.cuda.current_device(), lambda: fg.cuda.synchronize(), lambda: fg.cuda.get_device_name(),
        lambda: fg.cuda.set_device(0), lambda: fg.ones(2, device="cuda:1"), lambda: fg.device("cuda").jax_device,
    ]
    for attempt in attempts:
        with pytest.raises(DeviceUnavailableError) as info:
            attempt()
        assert isinstance(info.value, RuntimeError) and IDIOM in str(info.value) and "cuda" in str(info.value)
    assert model.weight.device == CPU  # a failed move changes nothing


# -- creation functions ----------------------------------------------------------------------------------------------
CREATORS = {
    "tensor": lambda d: fg.tensor([1.0, 2.0], device=d), "as_tensor": lambda d: fg.as_tensor([1, 2], device=d),
    "as_tensor(Tensor)": lambda d: fg.as_tensor(fg.ones(2), device=d), "zeros": lambda d: fg.zeros(2, 3, device=d),
    "ones": lambda d: fg.ones((2,), device=d), "empty": lambda d: fg.empty(2, device=d),
    "full": lambda d: fg.full((2,), 7.0, device=d), "arange": lambda d: fg.arange(0, 4, dtype=fg.long, device=d),
    "linspace": lambda d: fg.linspace(0, 1, 5, device=d), "logspace": lambda d: fg.logspace(0, 1, 3, device=d),
    "eye": lambda d: fg.eye(3, device=d), "zeros_like": lambda d: fg.zeros_like(fg.ones(2), device=d),
    "ones_like": lambda d: fg.ones_like(fg.ones(2), device=d),
    "full_like": lambda d: fg.full_like(fg.ones(2), 3, device=d),
    "empty_like": lambda d: fg.empty_like(fg.ones(2), device=d), "rand": lambda d: fg.rand(2, device=d),
    "randn": lambda d: fg.randn(2, 2, device=d), "randint": lambda d: fg.randint(0, 5, (3,), device=d),
    "randperm": lambda d: fg.randperm(4, device=d), "rand_like": lambda d: fg.rand_like(fg.ones(2), device=d),
    "randn_like": lambda d: fg.randn_like(fg.ones(2), device=d),
    "randint_like": lambda d: fg.randint_like(fg.ones(2), 5, device=d),
    "normal": lambda d: fg.normal(0.0, 1.0, (2,), device=d),
    "scalar_tensor": lambda d: fg.scalar_tensor(2, device=d),
    "tril_indices": lambda d: fg.tril_indices(3, 3, device=d),
    "triu_indices": lambda d: fg.triu_indices(3, 3, device=d),
    "hann_window": lambda d: fg.hann_window(4, device=d), "fftfreq": lambda d: fg.fft.fftfreq(4, device=d),
    "rfftfreq": lambda d: fg.fft.rfftfreq(4, device=d),
    "new_tensor": lambda d: fg.ones(1).new_tensor([1, 2], device=d),
    "new_zeros": lambda d: fg.ones(1).new_zeros(2, device=d), "new_ones": lambda d: fg.ones(1).new_ones(2, device=d),
    "new_empty": lambda d: fg.ones(1).new_empty(2, device=d),
    "new_full": lambda d: fg.ones(1).new_full((2,), 3.0, device=d),
}


@pytest.mark.parametrize("dev", [None, "cpu", CPU, jax.devices("cpu")[0]], ids=["None", "str", "fg.device", "jax"])
def test_creation_functions_take_device(dev, monkeypatch):
    expected = DEFAULT if dev is None else CPU
    placing = jax.device_put
    placed = []

    def counted_device_put(x, device=None, *args, **kwargs):
        if device is not None:
            placed.append(device)
        return placing(x, device, *args, **kwargs)

    monkeypatch.setattr(jax, "device_put", counted_device_put)
    for name, make in CREATORS.items():
        placed.clear()
        t = make(dev)
        assert t.device == expected, name
        if dev is not None and expected == DEFAULT and name != "as_tensor(Tensor)":
            assert not placed, f"{name}: the default device needs no device_put"
            if only_device() is None:  # with one device every op's result is committed to it (fgraph/_kernel_jit.py)
                assert not t.array.committed, f"{name}: the default device needs no device_put"
    x = fg.zeros(2, device=dev, requires_grad=True)
    assert x.is_leaf and x.requires_grad and fg.randn(2, device=dev, requires_grad=True).requires_grad


# -- nn.Module ---------------------------------------------------------------------------------------------------------
def test_module_to_device():
    model = fg.nn.Sequential(fg.nn.Linear(2, 3), fg.nn.BatchNorm1d(3))
    assert model.to("cpu") is model and model.cpu() is model
    model.to(CPU, fg.float16, non_blocking=True)
    assert all(p.device == CPU and p.dtype == fg.float16 for p in model.parameters())
    assert model[1].num_batches_tracked.dtype != fg.float16  # integer buffers keep their dtype
    model.to(device=CPU, dtype=fg.float32)
    model.to(fg.ones(1, dtype=fg.float16))
    assert model[0].weight.dtype == fg.float16
    device = "cuda" if fg.cuda.is_available() else "cpu"
    model = fg.nn.Linear(2, 1).to(device)
    x = fg.randn(4, 2, device=device)
    grads = model(x).sum().backward()
    assert grads[model.weight].device == fg.device(device) or grads[model.weight].device.type == device


# -- fg.cuda, fg.cpu, fg.accelerator, fg.backends -----------------------------------------------------------------
@pytest.mark.skipif(fg.cuda.is_available(), reason="checks the no-GPU answers; a GPU is present")
def test_cuda_module_without_a_gpu():
    assert fg.cuda.is_available() is False and fg.cuda.device_count() == 0 and not fg.cuda.is_bf16_supported()
    fg.cuda.empty_cache()
    fg.cuda.manual_seed(5)
    a = fg.randn(3)
    fg.manual_seed(5)
    assert fg.randn(3).tolist() == a.tolist()
    fg.cuda.manual_seed_all(7)
    assert fg.cuda.initial_seed() == fg.initial_seed() == 7
    assert fg.cpu.is_available() and fg.cpu.device_count() == 1 and fg.cpu.current_device() == "cpu"
    fg.cpu.synchronize()
    assert fg.accelerator.is_available() is False and fg.accelerator.current_accelerator() is None
    assert fg.accelerator.device_count() == 0


@pytest.mark.skipif(fg.cuda.is_available(), reason="checks the no-GPU answers; a GPU is present")
def test_cuda_module_matches_torch_without_a_gpu():
    torch = pytest.importorskip("torch")
    assert fg.cuda.is_available() == torch.cuda.is_available()
    assert fg.cuda.device_count() == torch.cuda.device_count()
    assert fg.accelerator.is_available() == torch.accelerator.is_available()
    assert fg.accelerator.current_accelerator() == torch.accelerator.current_accelerator()
    assert fg.backends.mps.is_available() == torch.backends.mps.is_available()


def test_backends_flags_are_accepted():
    saved = (fg.backends.cudnn.benchmark, fg.backends.cudnn.deterministic, fg.backends.cuda.matmul.allow_tf32)
    try:
        fg.backends.cudnn.benchmark = True
        fg.backends.cudnn.deterministic = True
        fg.backends.cudnn.enabled = True
        fg.backends.cudnn.allow_tf32 = True
        fg.backends.cuda.matmul.allow_tf32 = True
        assert fg.backends.cudnn.benchmark and fg.backends.cuda.matmul.allow_tf32
    finally:
        fg.backends.cudnn.benchmark, fg.backends.cudnn.deterministic, fg.backends.cuda.matmul.allow_tf32 = saved
    assert fg.backends.mps.is_available() is False and fg.backends.mps.is_built() is False
    assert fg.backends.cudnn.is_available() == fg.cuda.is_available()


def test_default_device():
    assert fg.get_default_device() == CPU or fg.cuda.is_available()
    fg.set_default_device("cpu")
    try:
        assert fg.get_default_device() == CPU and fg.zeros(2).device == CPU
    finally:
        fg.set_default_device(None)


# -- the deprecated fg.cuda.amp / fg.cpu.amp ---------------------------------------------------------------------------
def _future_warning(make):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = make()
    messages = [str(w.message) for w in caught if issubclass(w.category, FutureWarning)]
    assert len(messages) == 1, [str(w.message) for w in caught]
    assert caught[0].filename == __file__  # points at the caller, as PyTorch's does
    return out, messages[0]


def test_deprecated_amp_spellings_warn_and_delegate():
    ctx, msg = _future_warning(lambda: fg.cuda.amp.autocast())
    assert isinstance(ctx, fg.amp.autocast) and ctx.device_type == "cuda" and ctx.fast_dtype == fg.float16
    assert msg == ("`fgraph.cuda.amp.autocast(args...)` is deprecated. "
                   "Please use `fgraph.amp.autocast('cuda', args...)` instead.")
    ctx, msg = _future_warning(lambda: fg.cpu.amp.autocast(dtype=fg.bfloat16))
    assert ctx.device_type == "cpu" and "fgraph.amp.autocast('cpu', args...)" in msg
    with ctx:
        assert (fg.ones(2, 2) @ fg.ones(2, 2)).dtype == fg.bfloat16
    assert (fg.ones(2, 2) @ fg.ones(2, 2)).dtype == fg.float32
    scaler, msg = _future_warning(lambda: fg.cuda.amp.GradScaler(init_scale=8.0))
    assert isinstance(scaler, fg.amp.GradScaler) and scaler.get_scale() == 8.0
    assert msg == ("`fgraph.cuda.amp.GradScaler(args...)` is deprecated. "
                   "Please use `fgraph.amp.GradScaler('cuda', args...)` instead.")
    scaler, msg = _future_warning(lambda: fg.cpu.amp.GradScaler(enabled=False))
    assert isinstance(scaler, fg.amp.GradScaler) and not scaler.is_enabled()

    with pytest.warns(FutureWarning, match="deprecated"):  # once, where it is made, as PyTorch's
        @fg.cuda.amp.autocast(enabled=False)
        def f():
            return fg.amp.is_autocast_enabled()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert f() is False


def test_deprecated_amp_messages_match_torch():
    torch = pytest.importorskip("torch")
    makers = {
        ("cuda", "autocast"): (lambda ns: ns.cuda.amp.autocast(enabled=False)),
        ("cuda", "GradScaler"): (lambda ns: ns.cuda.amp.GradScaler(enabled=False)),
        ("cpu", "autocast"): (lambda ns: ns.cpu.amp.autocast()),
        ("cpu", "GradScaler"): (lambda ns: ns.cpu.amp.GradScaler()),
    }
    for (kind, name), make in makers.items():
        with warnings.catch_warnings(record=True) as theirs:
            warnings.simplefilter("always")
            make(torch)
        with warnings.catch_warnings(record=True) as mine:
            warnings.simplefilter("always")
            make(fg)
        expected = [str(w.message) for w in theirs if issubclass(w.category, FutureWarning)]
        got = [str(w.message).replace("fgraph", "torch") for w in mine if issubclass(w.category, FutureWarning)]
        assert got == expected, (kind, name)


# -- fg.load(map_location=) -------------------------------------------------------------------------------------------
def _saved():
    buffer = io.BytesIO()
    fg.save({"w": fg.ones(2, requires_grad=True), "step": fg.tensor(3)}, buffer)
    return buffer.getvalue()


@pytest.mark.parametrize("where", ["cpu", CPU, jax.devices("cpu")[0], {"cuda:0": "cpu"}, {"cpu": "cpu"},
                                   lambda storage, loc: storage, lambda storage, loc: storage.cpu()],
                         ids=["str", "fg.device", "jax", "dict", "dict-cpu", "callable", "callable-cpu"])
def test_load_map_location(where):
    data = _saved()
    for loaded in (fg.load(io.BytesIO(data), map_location=where), fg.load(io.BytesIO(data), where)):
        assert loaded["w"].device == CPU and loaded["w"].requires_grad and loaded["step"].tolist() == 3


def test_load_map_location_errors():
    data = _saved()
    with pytest.raises(TypeError, match="not both"):
        fg.load(io.BytesIO(data), map_location="cpu", device="cpu")
    assert fg.load(io.BytesIO(data), weights_only=True, mmap=False)["step"].tolist() == 3
    if not fg.cuda.is_available():
        with pytest.raises(DeviceUnavailableError, match="fg.cuda.is_available"):
            fg.load(io.BytesIO(data), map_location="cuda")
        with pytest.raises(DeviceUnavailableError):
            fg.load(io.BytesIO(data), map_location=lambda storage, loc: storage.cuda())
    with pytest.raises(TypeError, match="map_location returned"):
        fg.load(io.BytesIO(data), map_location=lambda storage, loc: "x")


# -- a second device: the host split in two ----------------------------------------------------------------------------
_TWO_DEVICES = textwrap.dedent("""
    import io, jax, numpy as np
    import fgraph as fg
    assert len(jax.devices("cpu")) == 2
    one = fg.device("cpu:1")
    assert one.jax_device is jax.devices("cpu")[1] and repr(one) == "device(type='cpu', index=1)"
    makers = [lambda: fg.zeros(2, device=one), lambda: fg.tensor([1.0], device="cpu:1"),
              lambda: fg.randn(2, device=one), lambda: fg.arange(3, device=one), lambda: fg.eye(2, device=one),
              lambda: fg.linspace(0, 1, 3, device=one), lambda: fg.randperm(3, device=one),
              lambda: fg.full((2,), 1.0, device=one)]
    for make in makers:
        t = make()
        assert t.device == one and t.array.devices() == {jax.devices("cpu")[1]}, make
    x = fg.ones(2, requires_grad=True)
    y = x.to(one)
    assert y.device == one and x.device == "cpu" and y.grad_fn is None and y.requires_grad
    (g,) = fg.grad((y * 2).sum(), [x])
    assert g.tolist() == [2.0, 2.0]
    z = fg.randn(2, device=one)
    for like in (fg.zeros_like(z), fg.ones_like(z), fg.rand_like(z), fg.randn_like(z), fg.randint_like(z, 3),
                 fg.empty_like(z), z.new_zeros(3), z.new_full((2,), 1.0), z.new_tensor([1.0])):
        assert like.device == one, like  # PyTorch: *_like and new_* follow their input's device
    assert fg.zeros_like(z, device="cpu").device == "cpu" and z.to("cpu").device == "cpu"
    assert fg.ones(2).to(z).device == one
    m = fg.nn.Linear(2, 2).to(one)
    assert all(p.device == one for p in m.parameters())
    out = m(fg.ones(1, 2, device=one))
    assert out.device == one
    buffer = io.BytesIO(); fg.save({"w": fg.ones(2)}, buffer)
    assert fg.load(io.BytesIO(buffer.getvalue()), map_location="cpu:1")["w"].device == one
    assert fg.load(io.BytesIO(buffer.getvalue()), map_location={"cpu": "cpu:1"})["w"].device == one
    try:
        fg.zeros(1, device="cpu:2")
    except fg.errors.DeviceUnavailableError as e:
        assert "2 cpu device(s)" in str(e), e
    else:
        raise AssertionError("cpu:2 should not exist")
    if fg.lazy.is_active():  # an op on cpu:1 runs eagerly, until cpu:1 is JAX's default device: then it records
        fg.lazy.reset_stats()
        (z * 2).sum().item()
        assert fg.lazy.stats()["records"] == 0 and fg.lazy.stats()["bypassed"] == 2, fg.lazy.stats()
        with jax.default_device(jax.devices("cpu")[1]):
            assert ((z * 2).sum().item(), fg.lazy.stats()["records"]) == ((z.sum() * 2).item(), 2)
    print("ok")
""")


@pytest.mark.parametrize("deferred", ["0", "1"], ids=["eager", "deferred-dispatch"])
def test_placement_on_a_second_device(deferred):
    # Under deferred dispatch ops on the second device run eagerly there (a replay would put them on the default one).
    env = dict(os.environ, JAX_PLATFORMS="cpu", FGRAPH_DEFERRED=deferred,
               XLA_FLAGS=(os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2").strip())
    done = subprocess.run([sys.executable, "-c", _TWO_DEVICES], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
