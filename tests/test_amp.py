"""fgraph.amp against torch.amp: autocast's per-op dtypes on CPU, a model's values and float32 gradients,
regions (nesting, enabled=False, decorator, inside fg.compile), and GradScaler's scale sequence and skipped
steps with injected inf gradients."""
import numpy as np
import pytest

import fgraph as fg
import fgraph.nn.functional as F

RNG = np.random.default_rng(5)
X = RNG.standard_normal((4, 3)).astype(np.float32)
W = RNG.standard_normal((5, 3)).astype(np.float32)
IMG = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)
KERNEL = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
TARGET = np.array([0, 2, 1, 4])


def _ops(lib, fn):
    """``(name, f(x, w, img, kernel, target))`` for one library (``fn``: its functional module)."""
    def lin(x, w):
        return fn.linear(x, w)

    return [
        ("linear", lambda x, w, i, k, t: lin(x, w)),
        ("matmul", lambda x, w, i, k, t: x @ w.T),
        ("bmm", lambda x, w, i, k, t: lib.bmm(x[None], w.T[None])),
        ("matmul float64", lambda x, w, i, k, t: x.double() @ w.double().T),
        ("conv2d", lambda x, w, i, k, t: fn.conv2d(i, k)),
        ("relu of linear", lambda x, w, i, k, t: lib.relu(lin(x, w))),
        ("gelu of linear", lambda x, w, i, k, t: fn.gelu(lin(x, w))),
        ("softmax of linear", lambda x, w, i, k, t: lib.softmax(lin(x, w), -1)),
        ("log_softmax of linear", lambda x, w, i, k, t: lib.log_softmax(lin(x, w), -1)),
        ("layer_norm of linear", lambda x, w, i, k, t: fn.layer_norm(lin(x, w), (5,))),
        ("exp of linear", lambda x, w, i, k, t: lin(x, w).exp()),
        ("sum of linear", lambda x, w, i, k, t: lin(x, w).sum()),
        ("mean of linear", lambda x, w, i, k, t: lin(x, w).mean()),
        ("cumsum of linear", lambda x, w, i, k, t: lin(x, w).cumsum(0)),
        ("prod of linear", lambda x, w, i, k, t: lin(x, w).prod()),
        ("add float32 to linear", lambda x, w, i, k, t: lin(x, w) + x[:, :1]),
        ("mse_loss", lambda x, w, i, k, t: fn.mse_loss(lin(x, w), lin(x, w))),
        ("l1_loss", lambda x, w, i, k, t: fn.l1_loss(lin(x, w), lin(x, w))),
        ("cross_entropy", lambda x, w, i, k, t: fn.cross_entropy(lin(x, w), t)),
        ("nll_loss", lambda x, w, i, k, t: fn.nll_loss(lib.log_softmax(lin(x, w), -1), t)),
        ("bce_with_logits", lambda x, w, i, k, t: fn.binary_cross_entropy_with_logits(lin(x, w), lin(x, w).sigmoid())),
        ("kl_div", lambda x, w, i, k, t: fn.kl_div(lin(x, w), lin(x, w), reduction="batchmean", log_target=True)),
        ("scaled_dot_product_attention", lambda x, w, i, k, t: fn.scaled_dot_product_attention(
            x[None], x[None], x[None])),
    ]


def _torch_dtype_name(t) -> str:
    return str(t.dtype).replace("torch.", "")


def test_cpu_autocast_dtypes_of_each_op_equal_torchs():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    fg_args = [fg.tensor(a) for a in (X, W, IMG, KERNEL)] + [fg.tensor(TARGET)]
    torch_args = [torch.tensor(a) for a in (X, W, IMG, KERNEL)] + [torch.tensor(TARGET)]
    for (name, fg_op), (_, torch_op) in zip(_ops(fg, F), _ops(torch, tf)):
        with fg.autocast("cpu", dtype=fg.bfloat16):
            mine = fg_op(*fg_args)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            theirs = torch_op(*torch_args)
        assert np.dtype(mine.dtype).name == _torch_dtype_name(theirs), name
        np.testing.assert_allclose(np.asarray(mine.float().numpy()), theirs.float().detach().numpy(),
                                   rtol=5e-2, atol=5e-2, err_msg=name)


def test_policy_without_torch():
    """The rule itself: matmul-like ops in the low dtype, losses in float32, float64 untouched, others as given."""
    x, w = fg.tensor(X), fg.tensor(W)
    with fg.autocast("cpu", dtype=fg.float16):
        y = F.linear(x, w)
        assert y.dtype == np.float16
        assert F.mse_loss(y, y).dtype == np.float32
        assert (x.double() @ w.double().T).dtype == np.float64
        assert y.relu().dtype == np.float16
        with fg.autocast("cpu", enabled=False):
            assert F.linear(x, w).dtype == np.float32
        assert fg.amp.is_autocast_enabled("cpu") and not fg.amp.is_autocast_enabled("cuda")
        assert fg.amp.get_autocast_dtype("cpu") == np.float16
    assert not fg.amp.is_autocast_enabled()
    assert F.linear(x, w).dtype == np.float32

    @fg.autocast("cpu")
    def forward(a, b):
        return a @ b.T

    assert forward(x, w).dtype == fg.bfloat16


def test_mlp_under_autocast_matches_torch_and_gradients_stay_float32():
    torch = pytest.importorskip("torch")
    fg.manual_seed(0)
    model = fg.nn.Sequential(fg.nn.Linear(3, 8), fg.nn.ReLU(), fg.nn.Linear(8, 5))
    ref = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 5))
    with torch.no_grad():
        for (_, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
            q.copy_(torch.tensor(p.numpy()))
    with fg.autocast("cpu", dtype=fg.bfloat16):
        loss = F.cross_entropy(model(fg.tensor(X)), fg.tensor(TARGET))
    grads = loss.backward()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ref_loss = torch.nn.functional.cross_entropy(ref(torch.tensor(X)), torch.tensor(TARGET))
    ref_loss.backward()
    assert loss.dtype == np.float32
    np.testing.assert_allclose(loss.item(), ref_loss.item(), rtol=2e-2)
    for (name, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
        assert grads[p].dtype == np.float32, name
        np.testing.assert_allclose(grads[p].numpy(), q.grad.numpy(), rtol=5e-2, atol=2e-2, err_msg=name)


def test_autocast_inside_compile_equals_eager():
    fg.manual_seed(1)
    model = fg.nn.Linear(3, 5)
    x = fg.tensor(X)

    def loss_of(m, inputs):
        with fg.autocast("cpu"):
            return F.mse_loss(m(inputs), fg.zeros(4, 5))

    eager = loss_of(model, x)
    compiled = fg.compile(loss_of)(model, x)
    assert compiled.dtype == eager.dtype == np.float32
    np.testing.assert_allclose(compiled.item(), eager.item(), rtol=1e-3)  # bfloat16 products, fused or not


@pytest.mark.parametrize("call,error", [
    (lambda: fg.autocast("tpu"), ValueError),
    (lambda: fg.autocast("cpu", dtype=fg.float32), ValueError),
])
def test_bad_autocast_arguments(call, error):
    with pytest.raises(error, match="autocast"):
        call()


# -- GradScaler ------------------------------------------------------------------------------------------
def _scaler_run(lib, make_scaler, steps=10, inf_at=(2, 3, 7)):
    """SGD on a Linear with a GradScaler; the loss is multiplied by inf at ``inf_at`` (every gradient inf)."""
    scales, weights = [], []
    if lib == "torch":
        import torch

        layer = torch.nn.Linear(3, 2).double()
        with torch.no_grad():
            layer.weight.copy_(torch.tensor(W[:2].astype(np.float64)))
            layer.bias.zero_()
        opt = torch.optim.SGD(layer.parameters(), lr=0.1, momentum=0.9)
        scaler = make_scaler()
        for i in range(steps):
            opt.zero_grad()
            loss = layer(torch.tensor(X.astype(np.float64))).pow(2).mean() * (float("inf") if i in inf_at else 1.0)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            scales.append(scaler.get_scale())
            weights.append(layer.weight.detach().numpy().copy())
        return scales, weights, scaler.state_dict()
    layer = fg.nn.Linear(3, 2).double()
    layer.load_state_dict({"weight": fg.tensor(W[:2].astype(np.float64)), "bias": fg.zeros(2, dtype=fg.float64)})
    opt = fg.optim.SGD(layer.parameters(), lr=0.1, momentum=0.9)
    scaler = make_scaler()
    for i in range(steps):
        loss = layer(fg.tensor(X.astype(np.float64))).pow(2).mean() * (float("inf") if i in inf_at else 1.0)
        grads = scaler.scale(loss).backward()
        scaler.step(opt, grads)
        scaler.update()
        scales.append(scaler.get_scale())
        weights.append(layer.weight.numpy().copy())
    return scales, weights, scaler.state_dict()


def test_grad_scaler_scales_and_skips_as_torch():
    torch = pytest.importorskip("torch")
    options = dict(init_scale=256.0, growth_factor=2.0, backoff_factor=0.25, growth_interval=2)
    mine = _scaler_run("fg", lambda: fg.amp.GradScaler("cpu", **options))
    theirs = _scaler_run("torch", lambda: torch.amp.GradScaler("cpu", **options))
    assert mine[0] == theirs[0]
    for a, b in zip(mine[1], theirs[1]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    assert mine[2] == theirs[2]


def test_grad_scaler_without_torch():
    scales, weights, state = _scaler_run("fg", lambda: fg.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2),
                                         steps=5, inf_at=(1,))
    assert scales == [8.0, 4.0, 4.0, 8.0, 8.0]
    np.testing.assert_array_equal(weights[1], weights[0])  # the inf step changed nothing
    assert not np.array_equal(weights[2], weights[1])
    restored = fg.amp.GradScaler("cpu")
    restored.load_state_dict(state)
    assert restored.state_dict() == state
    off = fg.amp.GradScaler("cpu", enabled=False)
    loss = fg.tensor(2.0, requires_grad=True) * 3
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}


def test_grad_scaler_misuse():
    layer = fg.nn.Linear(3, 2)
    opt = fg.optim.SGD(layer.parameters(), lr=0.1)
    scaler = fg.amp.GradScaler("cpu")
    grads = scaler.scale(layer(fg.tensor(X)).sum()).backward()
    unscaled = scaler.unscale_(opt, grads)
    assert unscaled[layer.weight].dtype == np.float32
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt, grads)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.step(opt, grads)
    with pytest.raises(TypeError, match="Tensor"):
        scaler.scale(3.0)


def test_grad_scaler_steps_with_the_gradients_clipped_after_unscale():
    """torch's recipe: unscale_, clip, step: the step uses the clipped gradients (torch steps on .grad)."""
    w = fg.nn.Parameter(fg.tensor([1.0]))
    opt = fg.optim.SGD([w], lr=1.0)
    scaler = fg.amp.GradScaler("cpu", init_scale=4.0)
    grads = scaler.scale((w * 10.0).sum()).backward()
    unscaled = scaler.unscale_(opt, grads)
    assert unscaled[w].tolist() == [10.0]
    clipped = {p: g.clamp(max=0.5) for p, g in unscaled.items()}
    scaler.step(opt, clipped)
    assert opt.param_groups[0]["params"][0].tolist() == [0.5]


def test_custom_fwd_casts_inputs_and_custom_bwd_runs_under_forwards_state():
    seen = {}

    class Scale(fg.autograd.Function):
        @staticmethod
        @fg.amp.custom_fwd(device_type="cpu", cast_inputs=fg.float32)
        def forward(ctx, x, w):
            seen["forward"] = (x.dtype, fg.amp.is_autocast_enabled())
            ctx.save_for_backward(w)
            return x @ w

        @staticmethod
        @fg.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            (w,) = ctx.saved_tensors
            seen["backward"] = fg.amp.is_autocast_enabled()
            return g @ w.T, None

    x = fg.tensor(X, requires_grad=True)
    with fg.autocast("cpu"):
        out = Scale.apply(x.to(fg.bfloat16), fg.tensor(W.T))
    (g,) = fg.grad(out.sum(), [x])
    assert out.dtype == np.float32 and seen == {"forward": (np.float32, False), "backward": False}
    assert g.dtype == np.float32
