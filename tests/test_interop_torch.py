"""interop.from_torch / to_torch: round trips, dtypes, no aliasing, errors."""
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
import interop
from interop import from_torch, to_torch

try:
    import torch
except ImportError:  # CI has no torch: only the first test runs
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def test_missing_torch_gives_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    with pytest.raises(ImportError, match="pip install torch"):
        to_torch(fg.ones(2))
    with pytest.raises(ImportError, match="from_torch needs PyTorch"):
        from_torch(np.ones(2))


DTYPES = [] if torch is None else [
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.uint8, torch.bool, torch.complex64, torch.complex128,
]
SHAPES = [(2, 3), (), (0, 2)]


def _sample(dtype, shape):
    g = torch.Generator().manual_seed(0)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_floating_point or dtype.is_complex:
        return (torch.randn(shape, generator=g, dtype=torch.float64) * 100).to(dtype)
    return torch.randint(-100 if dtype != torch.uint8 else 0, 100, shape, generator=g).to(dtype)


def _np_dtype(dtype):
    return np.dtype(str(dtype).removeprefix("torch.").replace("bool", "bool_"))


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_round_trip_keeps_dtype_shape_and_bits(dtype):
    for shape in SHAPES:
        t = _sample(dtype, shape)
        x = from_torch(t)
        assert isinstance(x, fg.Tensor) and x.is_leaf and not x.requires_grad
        assert x.shape == tuple(shape) and x.dtype == (np.dtype(jnp.bfloat16) if dtype == torch.bfloat16
                                                          else _np_dtype(dtype))
        if dtype != torch.bfloat16:
            np.testing.assert_array_equal(x.numpy(), t.numpy())
        back = to_torch(x).cpu()  # to_torch keeps the Tensor's device: the GPU on a GPU backend
        assert back.dtype == dtype and tuple(back.shape) == tuple(shape) and torch.equal(back, t)


@needs_torch
def test_views_are_resolved():
    base = torch.arange(12.0, dtype=torch.float64).reshape(3, 4)
    for t in (base[:, ::2], base.t(), base[1:, 1:3], base[:, :1].expand(3, 5)):
        np.testing.assert_array_equal(from_torch(t).numpy(), t.numpy())
    z = torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex128)
    np.testing.assert_array_equal(from_torch(z.conj()).numpy(), np.conj(z.numpy()))
    neg = z.conj().imag  # a view with torch's negative bit set
    assert neg.is_neg()
    np.testing.assert_array_equal(from_torch(neg).numpy(), [-2.0, 1.0])


@needs_torch
def test_no_aliasing_either_way():
    t = torch.arange(4.0, dtype=torch.float64)
    x = from_torch(t)
    t.add_(100)
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]
    b = torch.ones(3, dtype=torch.bfloat16)
    y = from_torch(b)
    b.zero_()
    assert y.numpy().astype(np.float32).tolist() == [1.0, 1.0, 1.0]
    x = fg.tensor([1.0, 2.0])
    out = to_torch(x)
    out.mul_(10)
    assert x.tolist() == [1.0, 2.0]
    shared = to_torch(x, copy=False)  # documented: zero-copy, shares the JAX buffer
    assert shared.tolist() == [1.0, 2.0]


@needs_torch
def test_requires_grad_and_parameters():
    t = torch.ones(2, requires_grad=True)
    assert from_torch(t).requires_grad
    assert not from_torch(t, requires_grad=False).requires_grad
    assert from_torch(torch.ones(2), requires_grad=True).requires_grad
    p = from_torch(torch.nn.Parameter(torch.zeros(3)))
    assert isinstance(p, fg.nn.Parameter) and p.requires_grad
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    out = to_torch(x)
    assert out.requires_grad and out.is_leaf
    assert not to_torch(x, requires_grad=False).requires_grad
    assert not to_torch(x.detach()).requires_grad


@needs_torch
def test_gradients_match_across_the_bridge():
    t = torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64, requires_grad=True)
    (torch.tanh(t) * t).sum().backward()
    x = from_torch(t)
    grads = (fg.tanh(x) * x).sum().backward()
    np.testing.assert_allclose(grads[x].numpy(), t.grad.numpy(), rtol=1e-12)


@needs_torch
def test_jax_arrays_and_errors():
    assert torch.equal(to_torch(jnp.arange(3)).cpu(), torch.arange(3, dtype=torch.int64))
    with pytest.raises(TypeError, match="expected a torch.Tensor, got a ndarray"):
        from_torch(np.ones(2))
    with pytest.raises(TypeError, match="fgraph Tensor already"):
        from_torch(fg.ones(2))
    with pytest.raises(TypeError, match="already a torch.Tensor"):
        to_torch(torch.ones(2))
    with pytest.raises(TypeError, match="expected an fgraph Tensor"):
        to_torch([1.0])
    with pytest.raises(TypeError, match="dense"):
        from_torch(torch.eye(2).to_sparse())

    def traced(a):
        return to_torch(fg.tensor(a))

    with pytest.raises(TypeError, match="traced"):
        jax.jit(traced)(jnp.ones(2))


def test_interop_reexports():
    assert interop.from_torch is from_torch and interop.to_torch is to_torch
