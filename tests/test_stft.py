"""stft / istft and the window functions, as torch's: values, gradients, round trips, errors."""
import numpy as np
import pytest

import fgraph as fg
from fgraph.errors import OpError

RNG = np.random.default_rng(5)
SIGNAL = RNG.standard_normal((2, 40))
WINDOW = np.hanning(12)
CASES = [  # (kwargs, window): the paths through stft (padding, trimming, one/two-sided, normalised)
    ({"n_fft": 16, "hop_length": 4, "win_length": 12}, WINDOW),
    ({"n_fft": 16}, None),
    ({"n_fft": 10, "hop_length": 3, "center": False, "normalized": True}, None),
    ({"n_fft": 16, "hop_length": 4, "win_length": 12, "onesided": False, "pad_mode": "constant"}, WINDOW),
]


def _reference_stft(x, n_fft, hop, window, center, normalized, onesided):
    """The textbook definition, in NumPy: frames of the padded signal, windowed, DFT'd."""
    if center:
        x = np.pad(x, [(0, 0), (n_fft // 2, n_fft // 2)], mode="reflect")
    n_frames = 1 + (x.shape[-1] - n_fft) // hop
    frames = np.stack([x[:, m * hop:m * hop + n_fft] * window for m in range(n_frames)], axis=1)
    spec = np.fft.rfft(frames, axis=-1) if onesided else np.fft.fft(frames, axis=-1)
    return np.swapaxes(spec, -1, -2) / (np.sqrt(n_fft) if normalized else 1.0)


def test_stft_equals_the_definition_and_istft_inverts_it():
    window = fg.hann_window(16, dtype=fg.float64)
    x = fg.tensor(SIGNAL, requires_grad=True)
    spec = fg.stft(x, 16, hop_length=4, window=window, return_complex=True)
    ref = _reference_stft(SIGNAL, 16, 4, np.asarray(window), True, False, True)
    np.testing.assert_allclose(spec.numpy(), ref, rtol=1e-10, atol=1e-12)
    assert x.stft(16, hop_length=4, window=window, return_complex=True).shape == spec.shape  # Tensor.stft
    back = fg.istft(spec, 16, hop_length=4, window=window, length=40)
    np.testing.assert_allclose(back.numpy(), SIGNAL, rtol=1e-10, atol=1e-12)
    (g,) = fg.grad(back.sum(), [x])  # the round trip is the identity, so is its gradient
    np.testing.assert_allclose(g.numpy(), np.ones_like(SIGNAL), rtol=1e-10)
    single = fg.stft(fg.tensor(SIGNAL[0]), 16, hop_length=4, window=window, return_complex=True)
    np.testing.assert_allclose(single.numpy(), ref[0], rtol=1e-10, atol=1e-12)
    assert fg.view_as_real(spec).shape == fg.stft(x, 16, 4, window=window, return_complex=False).shape


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
                                  "kaiser_window"])
def test_windows_equal_numpy(name):
    numpy_fn = {"hann_window": np.hanning, "hamming_window": np.hamming, "blackman_window": np.blackman,
                "bartlett_window": np.bartlett, "kaiser_window": lambda n: np.kaiser(n, 12.0)}[name]
    np.testing.assert_allclose(getattr(fg, name)(7, periodic=False, dtype=fg.float64).numpy(), numpy_fn(7),
                               atol=1e-12)
    np.testing.assert_allclose(getattr(fg, name)(7, dtype=fg.float64).numpy(), numpy_fn(8)[:7], atol=1e-12)
    assert getattr(fg, name)(1).tolist() == [1.0] and getattr(fg, name)(0).shape == (0,)


def test_errors_name_the_fix():
    x = fg.tensor(SIGNAL)
    with pytest.raises(OpError, match="return_complex parameter be given"):
        fg.stft(x, 16)
    with pytest.raises(OpError, match="window tensor of size equal to win_length=16"):
        fg.stft(x, 16, window=fg.ones(12), return_complex=True)
    with pytest.raises(OpError, match="expected a 1D or 2D tensor"):
        fg.stft(fg.zeros(2, 2, 40), 16, return_complex=True)
    spec = fg.stft(x, 16, hop_length=4, return_complex=True)
    with pytest.raises(OpError, match="NOLA"):
        fg.istft(fg.stft(x, 8, hop_length=8, window=fg.hann_window(8, periodic=False), return_complex=True,
                         center=False), 8, hop_length=8, window=fg.hann_window(8, periodic=False), center=False)
    with pytest.raises(OpError, match="complex-valued input"):
        fg.istft(fg.real(spec), 16, hop_length=4)


@pytest.mark.parametrize("kwargs,window", CASES, ids=range(len(CASES)))
def test_stft_and_istft_equal_torch_with_gradients(kwargs, window):
    torch = pytest.importorskip("torch")
    x, tx = fg.tensor(SIGNAL, requires_grad=True), torch.tensor(SIGNAL, requires_grad=True)
    w = None if window is None else fg.tensor(window)
    tw = None if window is None else torch.tensor(window)
    spec = fg.stft(x, window=w, return_complex=True, **kwargs)
    t_spec = torch.stft(tx, window=tw, return_complex=True, **kwargs)
    np.testing.assert_allclose(spec.numpy(), t_spec.detach().numpy(), rtol=1e-10, atol=1e-12)
    inverse_kwargs = {k: v for k, v in kwargs.items() if k != "pad_mode"}
    back = fg.istft(spec, window=w, length=40, **inverse_kwargs)
    t_back = torch.istft(t_spec, window=tw, length=40, **inverse_kwargs)
    np.testing.assert_allclose(back.numpy(), t_back.detach().numpy(), rtol=1e-10, atol=1e-12)
    weights = RNG.standard_normal(tuple(t_spec.shape))
    loss = (fg.abs(spec) * fg.tensor(weights)).sum() + (back * back).sum()
    t_loss = (t_spec.abs() * torch.tensor(weights)).sum() + (t_back * t_back).sum()
    (g,) = fg.grad(loss, [x])
    (tg,) = torch.autograd.grad(t_loss, [tx])
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-9, atol=1e-11)


def test_windows_equal_torch():
    torch = pytest.importorskip("torch")
    for name in ("hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"):
        for periodic in (True, False):
            np.testing.assert_allclose(getattr(fg, name)(9, periodic, dtype=fg.float64).numpy(),
                                       getattr(torch, name)(9, periodic, dtype=torch.float64).numpy(), atol=1e-12)
