"""fgraph.fft's API as torch.fft's: names, defaults, dtypes, node names, errors (the derivatives of every
transform are checked in tests/op_tables/fft.py against JAX, and against torch where it is installed)."""
import numpy as np
import pytest

import fgraph as fg
from fgraph.errors import OpError

RNG = np.random.default_rng(3)
X = RNG.standard_normal((3, 4))
Z = X + 1j * RNG.standard_normal((3, 4))


@pytest.mark.parametrize("name,args,kwargs,reference", [
    ("fft", (Z,), {}, lambda: np.fft.fft(Z)),
    ("ifft", (Z,), {"n": 6, "dim": 0}, lambda: np.fft.ifft(Z, 6, axis=0)),
    ("fft2", (X,), {"norm": "ortho"}, lambda: np.fft.fft2(X, norm="ortho")),
    ("ifft2", (Z,), {"s": (2, 5)}, lambda: np.fft.ifft2(Z, s=(2, 5))),
    ("fftn", (Z,), {"dim": 1}, lambda: np.fft.fftn(Z, axes=(1,))),
    ("ifftn", (X,), {"s": (5,)}, lambda: np.fft.ifftn(X, s=(5,), axes=(-1,))),
    ("rfft", (X,), {"n": 5}, lambda: np.fft.rfft(X, 5)),
    ("rfft2", (X,), {"norm": "forward"}, lambda: np.fft.rfft2(X, norm="forward")),
    ("irfft", (Z,), {}, lambda: np.fft.irfft(Z)),
    ("irfft2", (Z,), {"s": (3, 5)}, lambda: np.fft.irfft2(Z, s=(3, 5))),
    ("irfftn", (X,), {}, lambda: np.fft.irfftn(X)),
    ("hfft", (Z,), {"n": 7}, lambda: np.fft.hfft(Z, 7)),
    ("ihfft", (X,), {"dim": 0}, lambda: np.fft.ihfft(X, axis=0)),
    # the Hermitian 2-D/N-D transforms: an inverse (forward) real FFT of the conjugate, scaled the other way
    ("hfft2", (Z,), {}, lambda: np.fft.irfft2(Z.conj(), norm="forward")),
    ("hfftn", (Z,), {"s": (2, 5), "norm": "ortho"}, lambda: np.fft.irfftn(Z.conj(), s=(2, 5), norm="ortho")),
    ("ihfft2", (X,), {"s": (2, 6)}, lambda: np.fft.rfft2(X, s=(2, 6), norm="forward").conj()),
    ("ihfftn", (X,), {"dim": 0, "norm": "forward"}, lambda: np.fft.rfftn(X, axes=(0,), norm="backward").conj()),
])
def test_values_equal_numpy_with_torch_defaults(name, args, kwargs, reference):
    out = getattr(fg.fft, name)(*(fg.tensor(a, dtype=a.dtype) for a in args), **kwargs)
    np.testing.assert_allclose(out.numpy(), reference(), rtol=1e-10, atol=1e-12)


def test_dtypes_and_node_names_follow_torch():
    x = fg.tensor(X.astype(np.float32), requires_grad=True)
    assert fg.fft.fft(x).dtype == np.complex64 and fg.fft.fft(x).grad_fn.name() == "FftR2CBackward0"
    assert fg.fft.rfft(x).grad_fn.name() == "FftR2CBackward0"
    z = fg.fft.fft(x)
    assert fg.fft.ifft(z).grad_fn.name() == "FftC2CBackward0"
    assert fg.fft.irfft(z).dtype == np.float32 and fg.fft.irfft(z).grad_fn.name() == "FftC2RBackward0"
    assert fg.fft.fft(fg.tensor([1, 2, 3])).dtype == np.complex64  # integers: the default float dtype first
    assert fg.fft.fft(fg.tensor(X)).dtype == np.complex128  # float64 stays double, as in torch


def test_frequencies_and_shifts():
    np.testing.assert_allclose(fg.fft.fftfreq(5, d=0.5).numpy(), np.fft.fftfreq(5, 0.5))
    np.testing.assert_allclose(fg.fft.rfftfreq(6).numpy(), np.fft.rfftfreq(6))
    assert fg.fft.fftfreq(4, dtype=fg.float64).dtype == np.float64
    np.testing.assert_allclose(fg.fft.fftshift(fg.tensor(X)).numpy(), np.fft.fftshift(X.astype(np.float32)))
    np.testing.assert_allclose(fg.fft.ifftshift(fg.tensor(X), dim=(0,)).numpy(),
                               np.fft.ifftshift(X.astype(np.float32), axes=(0,)))


def test_second_derivative_of_a_spectral_loss_equals_finite_differences():
    """A power-spectrum loss of a real signal: its Hessian-vector product, through the rules' rules."""
    x0 = RNG.standard_normal(6)
    v = RNG.standard_normal(6)

    def loss(x):
        spectrum = fg.fft.rfft(x * x, norm="ortho")
        return (fg.real(spectrum) ** 2 * fg.tensor(np.arange(1.0, 5.0))).sum()

    x = fg.tensor(x0, requires_grad=True)
    (g,) = fg.grad(loss(x), [x], create_graph=True)
    (hv,) = fg.grad((g * fg.tensor(v)).sum(), [x])

    def grad_at(point):
        p = fg.tensor(point, requires_grad=True)
        return fg.grad(loss(p), [p])[0].numpy()

    eps = 1e-6
    fd = (grad_at(x0 + eps * v) - grad_at(x0 - eps * v)) / (2 * eps)
    np.testing.assert_allclose(hv.numpy(), fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("call,error,match", [
    (lambda: fg.fft.rfft(fg.tensor(Z)), OpError, "expects a real input tensor"),
    (lambda: fg.fft.fft(fg.tensor(X), norm="bogus"), ValueError, "Invalid normalization mode"),
    (lambda: fg.fft.fft(fg.tensor(X), n=0), RuntimeError, "Invalid number of data points"),
    (lambda: fg.fft.fftn(fg.tensor(X), dim=(0, 0)), RuntimeError, "dims must be unique"),
    (lambda: fg.fft.fft(fg.tensor(X), dim=2), IndexError, "Dimension out of range"),
    (lambda: fg.fft.fftn(fg.tensor(X), s=(2, 2), dim=(0,)), ValueError, "same length"),
    (lambda: fg.fft.irfft(fg.tensor([1.0 + 0j])), RuntimeError, "Invalid number of data points"),
    (lambda: fg.fft.fft(fg.tensor(X).half()), OpError, "convert with .float"),
    (lambda: fg.fft.fft(X), TypeError, "must be a Tensor"),
])
def test_bad_input_names_the_op_and_the_fix(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("name,kwargs", [("hfft2", {}), ("hfftn", {"s": (2, 5), "norm": "ortho"}),
                                         ("ihfft2", {"s": (2, 6)}), ("ihfftn", {"dim": 0, "norm": "forward"}),
                                         ("hfftn", {"dim": (0,)})])
def test_hermitian_nd_transforms_equal_torch_with_gradients(name, kwargs):
    torch = pytest.importorskip("torch")
    source = Z if name.startswith("h") else X
    x = fg.tensor(source, requires_grad=True)
    tx = torch.tensor(source, requires_grad=True)
    out, t_out = getattr(fg.fft, name)(x, **kwargs), getattr(torch.fft, name)(tx, **kwargs)
    np.testing.assert_allclose(out.numpy(), t_out.detach().resolve_conj().numpy(), rtol=1e-10, atol=1e-12)
    weights = RNG.standard_normal(tuple(t_out.shape))
    loss = (fg.real(out) * fg.tensor(weights)).sum() if out.is_complex() else (out * fg.tensor(weights)).sum()
    t_loss = (t_out.real * torch.tensor(weights)).sum()
    (g,) = fg.grad(loss, [x])
    (tg,) = torch.autograd.grad(t_loss, [tx])
    np.testing.assert_allclose(g.numpy(), tg.resolve_conj().numpy(), rtol=1e-10, atol=1e-12)
