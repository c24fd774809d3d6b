"""Hooks everywhere, saved-tensor hooks and anomaly mode."""
import inspect

import numpy as np
import pytest

import fgraph as fg
from fgraph.autograd.graph import register_multi_grad_hook, save_on_cpu, saved_tensors_hooks


def leaf(v):
    return fg.tensor(v, dtype="float64", requires_grad=True)


def _program(lib, x, w):
    """The same program for fgraph and torch: returns (h, out)."""
    h = x * w
    out = (lib.sin(h) * h).sum()
    return h, out


def _record_fgraph(events):
    x, w = leaf([0.5, -1.0]), leaf([2.0, 3.0])
    h, out = _program(fg, x, w)
    h.register_hook(lambda g: events.append(("tensor h", np.round(g.numpy(), 6).tolist())))
    h.grad_fn.register_prehook(lambda go: events.append(("pre h", np.round(go[0].numpy(), 6).tolist())))
    h.grad_fn.register_hook(lambda gi, go: events.append(("post h", [np.round(g.numpy(), 6).tolist() for g in gi])))
    x.register_hook(lambda g: events.append(("tensor x", np.round(g.numpy(), 6).tolist())))
    x.register_post_accumulate_grad_hook(lambda t, g: events.append(("acc x", np.round(g.numpy(), 6).tolist())))
    fg.backward(out)


def test_hook_order_and_values_match_pytorch():
    torch = pytest.importorskip("torch")
    fg_events, torch_events = [], []
    _record_fgraph(fg_events)

    x = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([2.0, 3.0], dtype=torch.float64, requires_grad=True)
    h, out = _program(torch, x, w)
    h.register_hook(lambda g: torch_events.append(("tensor h", np.round(g.numpy(), 6).tolist())))
    h.grad_fn.register_prehook(lambda go: torch_events.append(("pre h", np.round(go[0].numpy(), 6).tolist())))
    h.grad_fn.register_hook(
        lambda gi, go: torch_events.append(("post h", [np.round(g.numpy(), 6).tolist() for g in gi]))
    )
    x.register_hook(lambda g: torch_events.append(("tensor x", np.round(g.numpy(), 6).tolist())))
    x.register_post_accumulate_grad_hook(
        lambda t: torch_events.append(("acc x", np.round(t.grad.numpy(), 6).tolist()))
    )
    out.backward()
    assert fg_events == torch_events


def test_hook_order_without_torch():
    events = []
    _record_fgraph(events)
    assert [e[0] for e in events] == ["tensor h", "pre h", "post h", "tensor x", "acc x"]


def test_unneeded_node_hooks_never_fire_but_captured_tensor_hooks_do():
    x, y = leaf(1.0), leaf(2.0)
    fired = []
    side = fg.exp(y)
    side.grad_fn.register_prehook(lambda go: fired.append("side pre"))
    y.register_hook(lambda g: fired.append("y tensor"))
    x.register_hook(lambda g: fired.append("x tensor"))
    z = x * 3.0 + side
    (gx,) = fg.grad(z, [x])
    assert gx.item() == 3.0
    assert fired == ["x tensor"]


def test_tensor_hook_replaces_captured_gradient():
    x = leaf(1.0)
    x.register_hook(lambda g: g * 2.0)
    assert fg.grad(x * 5.0, [x])[0].item() == 10.0
    assert fg.backward(x * 5.0)[x].item() == 10.0


def test_post_accumulate_hook_sees_summed_gradient():
    x = leaf(1.0)
    seen = []
    x.register_post_accumulate_grad_hook(lambda t, g: seen.append((t is x, g.item())))
    fg.backward(x * 2.0 + x * 3.0)
    assert seen[-1] == (True, 5.0)


def test_multi_grad_hook_all_and_any():
    a, b, c = leaf(1.0), leaf(2.0), leaf(3.0)
    got_all, got_any = [], []
    handle = register_multi_grad_hook((a, b, c), lambda gs: got_all.append([None if g is None else g.item() for g in gs]))
    register_multi_grad_hook((a, b), lambda g: got_any.append(g.item()), mode="any")
    fg.backward(a * 2.0 + b * 4.0)
    assert got_all == [[2.0, 4.0, None]]
    assert len(got_any) == 1 and got_any[0] in (2.0, 4.0)
    fg.backward(c * 7.0)
    assert got_all[-1] == [None, None, 7.0]
    handle.remove()
    fg.backward(a * 1.0)
    assert len(got_all) == 2


def test_saved_tensor_hooks_change_storage_and_keep_results():
    x = leaf([1.0, 2.0, 3.0])
    packed_dtypes, unpacked = [], []

    def pack(t):
        packed_dtypes.append(str(t.dtype))
        return t.to("float32")

    def unpack(t):
        unpacked.append(str(t.dtype))
        return t.to("float64")

    with saved_tensors_hooks(pack, unpack):
        y = (fg.sin(x) * fg.exp(x)).sum()
    assert packed_dtypes == ["float64"] * 4  # sin's input, exp's result, mul's two inputs
    (g,) = fg.grad(y, [x])
    assert unpacked and set(unpacked) == {"float32"}
    v = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(g.numpy(), np.exp(v) * (np.cos(v) + np.sin(v)), rtol=1e-6)


def test_saved_tensor_hooks_support_double_backward_and_save_on_cpu():
    x = leaf(0.7)
    with save_on_cpu():
        y = fg.sin(x) * x
    (g,) = fg.grad(y, [x], create_graph=True)
    (gg,) = fg.grad(g, [x])
    v = 0.7
    np.testing.assert_allclose(g.item(), np.cos(v) * v + np.sin(v), rtol=1e-12)
    np.testing.assert_allclose(gg.item(), -np.sin(v) * v + 2 * np.cos(v), rtol=1e-12)


@pytest.mark.parametrize("deferred", [False, True], ids=["eager", "deferred-dispatch"])
def test_anomaly_mode_reports_nan_with_forward_line(deferred):
    x = leaf([0.0, 1.0])
    fg.lazy.set_deferred(deferred)  # deferred dispatch: the pass runs eagerly, so the report is the same
    try:
        with fg.autograd.detect_anomaly():
            line = inspect.currentframe().f_lineno + 1
            y = fg.sqrt(x) * 0.0
            with pytest.raises(fg.autograd.AnomalyError) as info:
                fg.grad(y.sum(), [x])
    finally:
        fg.lazy.set_deferred(False)
    message = str(info.value)
    assert "SqrtBackward0" in message and "nan" in message
    assert f"line {line}" in message and "test_hooks.py" in message


def test_anomaly_mode_reports_errors_in_backward():
    x = leaf(1.0)
    with fg.autograd.detect_anomaly():
        y = x * 2.0

        def bad_hook(gi, go):
            raise ValueError("boom")

        y.grad_fn.register_hook(bad_hook)
        with pytest.raises(ValueError, match="boom"):
            fg.grad(y, [x])
    assert not fg.autograd.is_anomaly_enabled()


def test_no_anomaly_no_nan_check():
    x = leaf([0.0])
    y = fg.sqrt(x) * 0.0
    (g,) = fg.grad(y.sum(), [x])
    assert np.isnan(g.numpy()).all()
