"""fg.save / fg.load: safetensors round trips, structure metadata, torch/HF compatibility, refusing pickles."""
import io
import json
import math
import os
import pickle
import struct
import zipfile
from collections import OrderedDict
from pathlib import Path

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
import safetensors.numpy as stnp
from safetensors import safe_open

import fgraph as fg
from fgraph.serialization import CheckpointError

DTYPES = [
    "float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
    "uint64", "bool", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2",
]
SHAPES = [(2, 3), (), (0,), (3, 0, 2)]


def _np_dtype(name):
    return np.dtype(getattr(ml_dtypes, name)) if hasattr(ml_dtypes, name) else np.dtype(name)


def _random_bits(dtype, shape, rng):
    """Arbitrary values of ``dtype`` from random bytes (NaN payloads and all, bool as 0/1)."""
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    raw = rng.integers(0, 256, int(np.prod(shape)) * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


def _bytes(t):
    return np.asarray(t.array if isinstance(t, fg.Tensor) else t).tobytes()


@pytest.fixture
def path(tmp_path):
    return tmp_path / "ckpt.safetensors"


# -- round trips ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", DTYPES)
def test_every_dtype_round_trips_bit_for_bit(path, name):
    rng = np.random.default_rng(0)
    dtype = _np_dtype(name)
    state = {f"t{i}": fg.tensor(_random_bits(dtype, shape, rng)) for i, shape in enumerate(SHAPES)}
    fg.save(state, path)
    back = fg.load(path)
    assert list(back) == list(state)
    for key, t in state.items():
        assert isinstance(back[key], fg.Tensor) and back[key].is_leaf and not back[key].requires_grad
        assert back[key].dtype == dtype and back[key].shape == t.shape, key
        assert _bytes(back[key]) == _bytes(t), key


def test_files_open_in_safetensors_with_the_state_dict_names(path):
    model = fg.nn.Sequential(fg.nn.Linear(3, 4), fg.nn.ReLU(), fg.nn.Linear(4, 2))
    fg.save(model.state_dict(), path)
    plain = stnp.load_file(path)
    assert sorted(plain) == sorted(model.state_dict()) == ["0.bias", "0.weight", "2.bias", "2.weight"]
    for key, t in model.state_dict().items():
        np.testing.assert_array_equal(plain[key], np.asarray(t.array))
    with safe_open(path, framework="np") as f:
        meta = f.metadata()
    assert meta["format"] == "pt"  # what Hugging Face's loaders ask for
    assert json.loads(meta["fgraph"])["version"] == 1
    # complex128 (no safetensors dtype) is stored as float64 pairs, as torch.view_as_real would.
    z = np.array([1 + 2j, -3.5 + 0.25j])
    fg.save({"z": fg.tensor(z)}, path)
    np.testing.assert_array_equal(stnp.load_file(path)["z"], np.stack([z.real, z.imag], -1))


def test_nested_optimizer_state_keeps_structure_key_types_and_values(path):
    m, v = fg.randn(3, dtype=fg.float64), fg.zeros(0, 2)
    state = {
        "state": {0: {"step": 3, "exp_avg": m, "exp_avg_sq": fg.ones(3)}, 1: {"step": 3, "exp_avg": v}},
        "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "amsgrad": False, "params": [0, 1],
                          "name": None, "tag": "decay", "maximize": True, "inf": math.inf}],
        "odd keys": {1.5: "float key", True: "bool key", None: "none key", "1": "str key"},
        "ordered": OrderedDict([("b", 2), ("a", 1)]),
        "arrays": [np.arange(3, dtype=np.int16), jnp.array([1.5, 2.5]), np.float32(0.5)],
        "shared": [m, m],
        "nan": math.nan,
        "empty": {"d": {}, "l": [], "t": ()},
    }
    fg.save(state, path)
    back = fg.load(path)
    assert list(back) == list(state)
    assert list(back["state"]) == [0, 1] and all(type(k) is int for k in back["state"])
    assert back["state"][0]["step"] == 3 and type(back["state"][0]["step"]) is int
    assert back["param_groups"] == state["param_groups"]
    assert type(back["param_groups"][0]["betas"]) is tuple
    assert list(back["odd keys"]) == [1.5, True, None, "1"]
    assert [type(k) for k in back["odd keys"]] == [float, bool, type(None), str]
    assert type(back["ordered"]) is OrderedDict and list(back["ordered"]) == ["b", "a"]
    assert type(back["state"]) is dict
    assert back["empty"] == {"d": {}, "l": [], "t": ()} and type(back["empty"]["t"]) is tuple
    assert math.isnan(back["nan"])
    np.testing.assert_array_equal(np.asarray(back["state"][0]["exp_avg"].array), np.asarray(m.array))
    assert back["state"][0]["exp_avg"].dtype == np.float64
    assert back["state"][1]["exp_avg"].shape == (0, 2)
    arrays = back["arrays"]
    assert all(isinstance(a, fg.Tensor) for a in arrays)
    assert [a.dtype for a in arrays] == [np.int16, np.float64, np.float32] and arrays[2].shape == ()
    assert back["shared"][0] is back["shared"][1]  # one tensor saved once, shared again after load
    with safe_open(path, framework="np") as f:  # tensors flat under dotted keys
        assert "state.0.exp_avg" in f.keys() and "param_groups" not in "".join(f.keys())


def test_single_tensor_requires_grad_and_parameters_round_trip(path):
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    fg.save(x, path)
    y = fg.load(path)
    assert isinstance(y, fg.Tensor) and y.requires_grad and y.is_leaf and y.tolist() == [1.0, 2.0]
    p = fg.nn.Parameter(fg.ones(2), requires_grad=False)
    fg.save({"p": p, "q": fg.nn.Parameter(fg.zeros(1))}, path)
    back = fg.load(path)
    assert isinstance(back["p"], fg.nn.Parameter) and not back["p"].requires_grad
    assert isinstance(back["q"], fg.nn.Parameter) and back["q"].requires_grad


def test_jax_prng_keys_round_trip(path):
    key = jax.random.key(7)
    fg.save({"key": key, "raw": jax.random.PRNGKey(1)}, path)
    back = fg.load(path)
    assert jax.dtypes.issubdtype(back["key"].dtype, jax.dtypes.prng_key)
    assert jax.random.normal(back["key"]) == jax.random.normal(key)
    assert back["raw"].dtype == np.uint32


def test_file_objects_and_atomic_write(path):
    buffer = io.BytesIO()
    fg.save({"a": fg.arange(4)}, buffer)
    buffer.seek(0)
    assert fg.load(buffer)["a"].tolist() == [0, 1, 2, 3]
    fg.save({"a": fg.ones(2)}, path)
    fg.save({"a": fg.zeros(2)}, str(path))  # overwriting goes through a temporary file, then a rename
    assert os.listdir(path.parent) == [path.name]
    assert fg.load(path, device="cpu")["a"].tolist() == [0.0, 0.0]


def test_state_dict_loads_into_a_fresh_module(path):
    fg.manual_seed(0)
    model = fg.nn.Sequential(fg.nn.Linear(3, 5), fg.nn.Tanh(), fg.nn.Linear(5, 2)).double()
    fg.save(model.state_dict(), path)
    fresh = fg.nn.Sequential(fg.nn.Linear(3, 5), fg.nn.Tanh(), fg.nn.Linear(5, 2)).double()
    x = fg.randn(4, 3, dtype=fg.float64)
    assert not np.allclose(fresh(x).numpy(), model(x).numpy())
    result = fresh.load_state_dict(fg.load(path))
    assert not result.missing_keys and not result.unexpected_keys
    np.testing.assert_array_equal(fresh(x).numpy(), model(x).numpy())
    layer = fg.nn.Linear(2, 3)
    fg.save(layer.state_dict(), path)
    twin = fg.nn.Linear(2, 3)
    twin.load_state_dict(fg.load(path))
    assert twin.weight.tolist() == layer.weight.tolist() and twin.bias.tolist() == layer.bias.tolist()


def test_a_foreign_safetensors_file_loads_as_a_flat_dict(path):
    arrays = {"b.weight": np.ones((2, 2), np.float32), "a.bias": np.arange(3, dtype=np.int64)}
    stnp.save_file(arrays, path)
    back = fg.load(path)
    assert sorted(back) == sorted(arrays)
    for key, a in arrays.items():
        assert back[key].dtype == a.dtype and back[key].tolist() == a.tolist()


# -- PyTorch ---------------------------------------------------------------------------------------
def test_torch_safetensors_file_loads_into_the_fgraph_twin(path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file, save_file

    torch.manual_seed(0)
    twin = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)).double()
    save_file(twin.state_dict(), path)
    model = fg.nn.Sequential(fg.nn.Linear(3, 4), fg.nn.ReLU(), fg.nn.Linear(4, 2)).double()
    model.load_state_dict(fg.load(path))
    x = np.random.default_rng(0).standard_normal((5, 3))
    np.testing.assert_allclose(model(fg.tensor(x)).numpy(), twin(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-12, atol=1e-12)
    # ... and back: fgraph's file opens in torch's loader and loads into the torch model.
    fg.manual_seed(1)
    model = fg.nn.Sequential(fg.nn.Linear(3, 4), fg.nn.ReLU(), fg.nn.Linear(4, 2)).double()
    fg.save(model.state_dict(), path)
    twin.load_state_dict(load_file(path))
    np.testing.assert_allclose(model(fg.tensor(x)).numpy(), twin(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-12, atol=1e-12)
    t = torch.tensor([1.5, -2.0], dtype=torch.bfloat16)
    save_file({"t": t}, path)
    assert fg.load(path)["t"].dtype == ml_dtypes.bfloat16
    assert fg.load(path)["t"].numpy().astype(np.float32).tolist() == [1.5, -2.0]


def test_torch_save_files_are_refused_with_the_conversion(tmp_path):
    torch = pytest.importorskip("torch")
    sd = torch.nn.Linear(2, 2).state_dict()
    zipped = tmp_path / "model.pt"
    torch.save(sd, zipped)
    with pytest.raises(CheckpointError, match="torch.save") as info:
        fg.load(zipped)
    message = str(info.value)
    assert "weights_only=True" in message and "save_file" in message and "never unpickles" in message
    legacy = tmp_path / "legacy.pt"
    torch.save(sd, legacy, _use_new_zipfile_serialization=False)
    with pytest.raises(CheckpointError, match="legacy format") as info:
        fg.load(legacy)
    assert "save_file" in str(info.value)


# -- refusing what is not a safetensors checkpoint -----------------------------------------------------
class _Payload:
    """Unpickling this creates a marker file: what a malicious checkpoint would do (os.system...)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_a_malicious_pickle_is_refused_and_never_executed(tmp_path, protocol):
    # The payload works: unpickling it does create the marker.
    proof = tmp_path / "proof"
    pickle.loads(pickle.dumps(_Payload(proof), protocol=protocol))
    assert proof.exists()
    marker = tmp_path / "pwned"
    raw = tmp_path / "evil.pt"
    raw.write_bytes(pickle.dumps({"weight": _Payload(marker)}, protocol=protocol))
    with pytest.raises(CheckpointError, match="pickle") as info:
        fg.load(raw)
    assert "save_file" in str(info.value) and "never unpickles" in str(info.value)
    # The same payload inside a torch.save-style zip archive.
    archive = tmp_path / "evil_zip.pt"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps(_Payload(marker), protocol=protocol))
        z.writestr("archive/version", "3\n")
    with pytest.raises(CheckpointError, match="torch.save"):
        fg.load(archive)
    with pytest.raises(CheckpointError):
        fg.load(io.BytesIO(archive.read_bytes()))
    assert not marker.exists()


def test_a_header_whose_length_reads_like_a_pickle_opcode_loads(tmp_path):
    """A safetensors file opens with its header's length: 1408 bytes is ``80 05 ...``, which a pickle of
    protocol 5 also starts with. The file is recognised by its framing first."""
    path = tmp_path / "state.safetensors"
    for n in range(1, 1500):
        fg.save({"k" * n: fg.arange(3.0)}, path)
        if path.read_bytes()[:2] == b"\x80\x05":
            break
    else:
        pytest.fail("no key length gave a 1408-byte header")
    assert struct.unpack("<Q", path.read_bytes()[:8])[0] == 1408
    assert fg.load(path)["k" * n].tolist() == [0.0, 1.0, 2.0]


def _good_file(path):
    fg.save({"w": fg.arange(6.0).reshape(2, 3), "b": fg.ones(2)}, path)
    return path.read_bytes()


@pytest.mark.parametrize("cut, match", [(0, "empty"), (5, "only 5 bytes"), (20, "truncated"), (-4, "truncated")])
def test_truncated_files_say_so(tmp_path, cut, match):
    path = tmp_path / "cut.safetensors"
    data = _good_file(path)
    path.write_bytes(data[:cut])
    with pytest.raises(CheckpointError, match=match):
        fg.load(path)


def _with_header(header: dict, data: bytes = b"\0" * 8) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data


@pytest.mark.parametrize("content, match", [
    (b"\x00" * 64, "not a safetensors file"),
    (b"hello, this is a text file and not a checkpoint at all", "not a safetensors file"),
    (struct.pack("<Q", 6) + b"{nope}", "not valid JSON"),
    (struct.pack("<Q", 2) + b"[]", "not a safetensors file"),
    (_with_header({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}), "do not match"),
    (_with_header({"w": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}), "truncated"),
    (_with_header({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}), "malformed"),
    (_with_header({"w": {"dtype": "Q99", "shape": [2], "data_offsets": [0, 8]}}), "dtype 'Q99'"),
    (_with_header({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                   "__metadata__": {"fgraph": "{broken"}}), "structure metadata .* is corrupt"),
    (_with_header({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                   "__metadata__": {"fgraph": json.dumps({"version": 1, "tree": {"tensor": "zz"}})}}), "corrupt"),
    (_with_header({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                   "__metadata__": {"fgraph": json.dumps({"version": 99, "tree": None})}}), "newer fgraph"),
    (b"\x93NUMPY\x01\x00" + b"\0" * 30, "NumPy .npy"),
    (b"\x1f\x8b\x08" + b"\0" * 30, "gzip"),
])
def test_corrupt_and_foreign_files_give_clear_errors(tmp_path, content, match):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match=match):
        fg.load(path)


def test_npz_and_plain_zip_archives_are_named(tmp_path):
    npz = tmp_path / "arrays.npz"
    np.savez(npz, a=np.ones(2))
    with pytest.raises(CheckpointError, match=r"NumPy \.npz"):
        fg.load(npz)
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("readme.txt", "hi")
    with pytest.raises(CheckpointError, match="a zip archive"):
        fg.load(other)


def test_save_rejects_what_it_cannot_store(path):
    with pytest.raises(TypeError, match=r"type 'object' at obj\['a'\]\[0\]"):
        fg.save({"a": [object()]}, path)
    with pytest.raises(TypeError, match="state_dict"):
        fg.save(fg.nn.Linear(2, 2), path)
    x = fg.tensor([1.0], requires_grad=True)
    grads = (x * 2).sum().backward()
    with pytest.raises(TypeError, match="named_parameters"):
        fg.save(dict(grads.items()), path)
    with pytest.raises(TypeError, match="key .* is a tuple"):
        fg.save({(1, 2): 3}, path)

    def traced(a):
        fg.save({"a": fg.tensor(a)}, path)
        return a

    with pytest.raises(TypeError, match="traced"):
        jax.jit(traced)(jnp.ones(2))
    assert not path.exists()


def test_64_bit_dtypes_with_x64_off(path):
    fg.save({"f": np.array([0.1, 1e300]), "i": np.array([1, -2], np.int64), "z": np.array([1 + 1j])}, path)
    with jax.enable_x64(False):
        with pytest.warns(UserWarning, match="x64 mode is off"):
            back = fg.load(path)
        assert back["f"].dtype == np.float32 and back["f"].numpy()[0] == np.float32(0.1)
        assert back["i"].dtype == np.int32 and back["i"].tolist() == [1, -2]
        assert back["z"].dtype == np.complex64
    fg.save({"big": np.array([2**40], np.int64)}, path)
    with jax.enable_x64(False):
        with pytest.raises(CheckpointError, match="jax_enable_x64"):
            fg.load(path)
    assert fg.load(path)["big"].tolist() == [2**40]
