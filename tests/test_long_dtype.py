"""One rule for ``long``/int64 with JAX's x64 mode off (docs/dtypes.md).

Every path that asks for int64 (``dtype=`` on creation functions, ``.long()``, ``.to``, ``.type``,
NumPy/torch data, checkpoints) gives int32 without x64 and int64 with it, with one
``DtypeNarrowingWarning`` per process and ``OverflowError`` for values that do not fit.

conftest.py turns x64 on for the suite; the x64-off cases run inside ``jax.enable_x64(False)``,
which switches it for this thread only.
"""
import io
import warnings

import jax
import numpy as np
import pytest

import fgraph as fg
from fgraph import _dtypes
from fgraph.serialization import CheckpointError

KEY = jax.random.key(0)


@pytest.fixture
def fresh_warning():
    """Forget that this process already showed the narrowing warning."""
    saved = _dtypes._NARROWING_WARNED[0]
    _dtypes._NARROWING_WARNED[0] = False
    yield
    _dtypes._NARROWING_WARNED[0] = saved


def _checkpoint(values) -> bytes:
    buffer = io.BytesIO()
    fg.save({"i": np.asarray(values, np.int64)}, buffer)  # written with x64 on: a true int64 tensor
    return buffer.getvalue()


def _long_paths(saved: bytes) -> dict:
    """Every way a ported script asks for an int64 tensor, as thunks."""
    f = fg.ones(3)
    return {
        "tensor": lambda: fg.tensor([1, 2], dtype=fg.long),
        "as_tensor": lambda: fg.as_tensor([1, 2], dtype=fg.int64),
        "zeros": lambda: fg.zeros(2, dtype=fg.long),
        "ones": lambda: fg.ones(2, dtype="int64"),
        "empty": lambda: fg.empty(2, dtype=fg.long),
        "full": lambda: fg.full((2,), 7, dtype=fg.long),
        "arange": lambda: fg.arange(0, 4, dtype=fg.long),
        "linspace": lambda: fg.linspace(0, 6, 4, dtype=fg.long),
        "eye": lambda: fg.eye(2, dtype=fg.long),
        "randint": lambda: fg.randint(0, 5, (3,), key=KEY, dtype=fg.long),
        "randperm": lambda: fg.randperm(4, key=KEY, dtype=fg.long),
        "zeros_like": lambda: fg.zeros_like(f, dtype=fg.long),
        "ones_like": lambda: fg.ones_like(f, dtype=fg.long),
        "full_like": lambda: fg.full_like(f, 3, dtype=fg.long),
        "empty_like": lambda: fg.empty_like(f, dtype=fg.long),
        "randint_like": lambda: fg.randint_like(f, 5, key=KEY, dtype=fg.long),
        "new_zeros": lambda: f.new_zeros(2, dtype=fg.long),
        "scalar_tensor": lambda: fg.scalar_tensor(3, dtype=fg.long),
        ".long()": lambda: f.long(),
        ".to(fg.int64)": lambda: f.to(fg.int64),
        ".to(dtype=)": lambda: f.to(dtype=fg.long),
        ".type(fg.long)": lambda: f.type(fg.long),
        ".type('torch.LongTensor')": lambda: f.type("torch.LongTensor"),
        "numpy int64": lambda: fg.tensor(np.array([1, 2])),
        "numpy scalar": lambda: fg.tensor(np.int64(3)),
        "from_numpy": lambda: fg.from_numpy(np.array([1, 2], np.int64)),
        "as_tensor(numpy)": lambda: fg.as_tensor(np.array([1, 2])),
        "load": lambda: fg.load(io.BytesIO(saved))["i"],
    }


@pytest.mark.parametrize("x64", [False, True], ids=["x64-off", "x64-on"])
def test_every_path_gives_the_same_long_dtype(x64):
    saved = _checkpoint([1, -2])
    expected = np.dtype("int64") if x64 else np.dtype("int32")
    with jax.enable_x64(x64), warnings.catch_warnings():
        warnings.simplefilter("ignore", fg.DtypeNarrowingWarning)
        got = {name: make().dtype for name, make in _long_paths(saved).items()}
    assert {name: dt for name, dt in got.items() if dt != expected} == {}
    assert fg.long == fg.int64  # the name itself never changes


def test_narrowing_warns_once_per_process_and_names_x64(fresh_warning):
    with jax.enable_x64(False), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fg.arange(0, 3, dtype=fg.long)
        fg.ones(2).long()
        fg.tensor(np.array([1, 2]))
        fg.zeros(2, dtype=fg.int64)
    narrowing = [w for w in caught if issubclass(w.category, fg.DtypeNarrowingWarning)]
    assert len(narrowing) == 1, [str(w.message) for w in narrowing]
    assert issubclass(fg.DtypeNarrowingWarning, UserWarning)
    message = str(narrowing[0].message)
    assert message.startswith("arange:") and 'jax.config.update("jax_enable_x64", True)' in message
    assert narrowing[0].filename == __file__  # points at the user's line, not inside fgraph


def test_no_warning_with_x64_on_or_for_default_integers(fresh_warning):
    with warnings.catch_warnings():
        warnings.simplefilter("error", fg.DtypeNarrowingWarning)
        assert fg.arange(0, 3, dtype=fg.long).dtype == np.int64
        with jax.enable_x64(False):  # Python ints and dtype-less creation are JAX's default integer: no warning
            assert fg.tensor([1, 2]).dtype == fg.arange(3).dtype == np.int32
            assert fg.tensor(np.array([1, 2], np.int32)).dtype == np.int32


@pytest.mark.parametrize("make", [
    lambda: fg.tensor(2**40, dtype=fg.long),
    lambda: fg.tensor(2**40),
    lambda: fg.tensor([1, -2**40]),
    lambda: fg.tensor(np.array([0, 2**40])),
    lambda: fg.as_tensor(np.array([-2**35]), dtype=fg.long),
    lambda: fg.full((2,), 2**40, dtype=fg.long),
    lambda: fg.full((2,), 2**40),
    lambda: fg.arange(0, 2**40, 2**39, dtype=fg.long),
], ids=["tensor-long", "tensor-int", "list", "numpy", "as_tensor", "full-long", "full", "arange"])
def test_values_beyond_int32_raise_instead_of_wrapping(make):
    with jax.enable_x64(False), warnings.catch_warnings():
        warnings.simplefilter("ignore", fg.DtypeNarrowingWarning)
        with pytest.raises(OverflowError, match=r"does not fit int32.*jax_enable_x64"):
            make()


def test_value_ranges_with_x64_on_and_off():
    assert fg.tensor(2**40, dtype=fg.long).item() == 2**40  # x64 on: a true int64
    assert fg.arange(2**40, 2**40 + 2, dtype=fg.long).tolist() == [2**40, 2**40 + 1]
    with pytest.raises(OverflowError, match="does not fit uint8"):
        fg.tensor([300], dtype=fg.uint8)  # Python ints must fit any integer dtype, as in PyTorch
    with jax.enable_x64(False), warnings.catch_warnings():
        warnings.simplefilter("ignore", fg.DtypeNarrowingWarning)
        assert fg.tensor([2**31 - 1, -2**31], dtype=fg.long).tolist() == [2**31 - 1, -2**31]  # the edges fit
        with pytest.raises(fg.OpError, match="jax_enable_x64"):
            fg.randint(0, 2**40, (2,), key=KEY, dtype=fg.long)
        with pytest.raises(CheckpointError, match="jax_enable_x64"):
            fg.load(io.BytesIO(_checkpoint([2**40])))


def test_float64_requests_raise_and_float64_data_narrows(fresh_warning):
    with jax.enable_x64(False):
        for ask in (lambda: fg.zeros(2, dtype=fg.float64), lambda: fg.ones(2).double(),
                    lambda: fg.ones(2).to(fg.complex128)):
            with pytest.raises(TypeError, match="jax_enable_x64"):
                ask()
        with pytest.warns(fg.DtypeNarrowingWarning, match="float64 is stored as float32"):
            x = fg.tensor(np.array([0.1, 0.2]))
        assert x.dtype == np.float32 and x.tolist() == np.array([0.1, 0.2], np.float32).tolist()
        assert fg.tensor(np.array([1 + 2j])).dtype == np.complex64


def test_arange_long_then_indexing_and_embedding(fresh_warning):
    t = 5
    with jax.enable_x64(False), warnings.catch_warnings():
        warnings.simplefilter("ignore", fg.DtypeNarrowingWarning)
        pos = fg.arange(0, t, dtype=fg.long)
        emb = fg.nn.Embedding(8, 3)
        shifted = (pos * 3 + 1) % 8  # index arithmetic stays integer
        y = emb(pos) + emb(shifted)
        picked = fg.randn(8, 2, key=KEY)[shifted]
        (gw,) = fg.grad(y.sum(), [emb.weight])
    weight, idx = emb.weight.numpy(), np.arange(t)
    assert pos.dtype == shifted.dtype == np.int32
    np.testing.assert_allclose(y.numpy(), weight[idx] + weight[(idx * 3 + 1) % 8], rtol=1e-6)
    assert picked.shape == (t, 2)
    counts = np.bincount(np.concatenate([idx, (idx * 3 + 1) % 8]), minlength=8)
    np.testing.assert_allclose(gw.numpy(), np.repeat(counts[:, None], 3, axis=1).astype(np.float32))


def test_torch_long_tensors_follow_the_rule(fresh_warning):
    torch = pytest.importorskip("torch")
    interop = pytest.importorskip("interop")
    big = torch.tensor([2**40])
    with jax.enable_x64(False):
        with pytest.warns(fg.DtypeNarrowingWarning):
            small = fg.tensor(torch.tensor([1, -2]))
        assert small.dtype == np.int32 and small.tolist() == [1, -2]
        assert interop.from_torch(torch.tensor([3])).dtype == np.int32
        assert fg.tensor(torch.tensor([0.5], dtype=torch.float64)).dtype == np.float32
        for convert in (fg.tensor, interop.from_torch):
            with pytest.raises(OverflowError, match="does not fit int32"):
                convert(big)
    assert fg.tensor(big).tolist() == [2**40] and fg.tensor(big).dtype == np.int64
