"""Traps a ported PyTorch script falls into, each of which gave wrong results without an error.

* Dicts of gradients came back in sorted key order (JAX's pytrees sort them), so zipping
  ``grads.values()`` with ``model.parameters()`` swapped gradients silently.
* Gradient accumulation: torch sums every ``backward()`` into ``.grad``; fgraph returns fresh
  gradients, so a forgotten ``+`` trained on the last micro-batch only.
* ``vjp_fn`` under ``fg.no_grad()`` returned results that required grad.
* ``f"{loss:.4f}"`` raised; ``fg.tensor(t)`` of a torch tensor that requires grad dropped its graph quietly.
"""
import gc
import warnings

import jax
import numpy as np
import pytest

import fgraph as fg
import fgraph.nn.functional as F
from fgraph import nn
from fgraph.autograd import UnusedGradientsWarning
from fgraph.func import functional_call, grad, jacrev, jvp, vjp, vmap

#: Keys whose insertion order is not their sorted order (sorted: 0.bias, 0.weight, 2.bias, 2.weight).
ORDER = ["0.weight", "0.bias", "2.weight", "2.bias"]


def _model():
    fg.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))


def _loss(params, model, x, y):
    return F.mse_loss(functional_call(model, params, (x,)), y)


# -- dict order -----------------------------------------------------------------------------------------------
def test_grad_of_functional_call_keeps_the_parameter_order():
    model = _model()
    params = dict(model.named_parameters())
    assert list(params) == ORDER
    grads = grad(_loss)(params, model, fg.randn(5, 3, key=jax.random.key(1)), fg.randn(5, 2, key=jax.random.key(2)))
    assert list(grads) == ORDER
    for (name, g), p in zip(grads.items(), model.parameters()):  # the zip a ported script does
        assert g.shape == p.shape, name


def test_per_sample_gradients_under_vmap_keep_the_order():
    model = _model()
    params = dict(model.named_parameters())
    xs, ys = fg.randn(6, 1, 3, key=jax.random.key(3)), fg.randn(6, 1, 2, key=jax.random.key(4))
    per_sample = vmap(grad(_loss), in_dims=(None, None, 0, 0))(params, model, xs, ys)
    assert list(per_sample) == ORDER
    assert per_sample["0.weight"].shape == (6, 4, 3)


def test_vjp_jvp_jacrev_and_detach_keep_dict_orders():
    primals = {"w": fg.tensor([1.0, 2.0]), "b": fg.tensor(0.5)}

    def f(p):
        return {"y": p["w"] * p["b"], "s": (p["w"] ** 2).sum()}

    out, fn = vjp(f, primals)
    assert list(out) == ["y", "s"]
    (cts,) = fn({"y": fg.ones(2), "s": fg.tensor(1.0)})
    assert list(cts) == ["w", "b"]
    out, tangent = jvp(f, (primals,), ({"w": fg.ones(2), "b": fg.tensor(1.0)},))
    assert list(out) == list(tangent) == ["y", "s"]
    jac = jacrev(f)(primals)
    assert list(jac) == ["y", "s"] and list(jac["y"]) == ["w", "b"]
    np.testing.assert_allclose(jac["s"]["w"].numpy(), [2.0, 4.0])


def test_compile_keeps_the_order_of_its_inputs_and_outputs():
    seen = []

    @fg.compile
    def step(p):
        seen.append(list(p))
        return {"z": p["z"] * 2, "a": p["a"] + 1}

    for _ in range(2):
        out = step({"z": fg.tensor(1.0), "a": fg.tensor(2.0)})
        assert list(out) == ["z", "a"]
    assert seen[0] == ["z", "a"]  # the traced function sees the caller's order


# -- accumulation -------------------------------------------------------------------------------------------------
def test_gradients_add_as_pytorch_accumulates():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = fg.tensor(3.0, requires_grad=True)
    g1 = fg.backward((x * x).sum())
    g2 = fg.backward((x * y).sum())
    g3 = fg.backward(y * y)
    total = g1 + g2
    assert set(map(id, total)) == {id(x), id(y)}  # the union of the keys
    np.testing.assert_allclose(total[x].numpy(), [2 + 3, 4 + 3])
    np.testing.assert_allclose(total[y].numpy(), 3.0)
    summed = sum([g1, g2, g3])
    np.testing.assert_allclose(summed[y].numpy(), 3.0 + 6.0)
    with pytest.raises(TypeError):
        g1 + {x: x}


def test_micro_batch_accumulation_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    w0, xs = rng.normal(size=(3,)), rng.normal(size=(4, 5, 3))
    w = fg.tensor(w0, requires_grad=True)
    grads = sum(fg.tanh(fg.tensor(x) @ w).pow(2).mean().backward() for x in xs)
    wt = torch.tensor(w0, requires_grad=True)
    for x in xs:  # torch's idiom: .grad sums over the backward calls
        torch.tanh(torch.tensor(x) @ wt).pow(2).mean().backward()
    np.testing.assert_allclose(grads[w].numpy(), wt.grad.numpy(), rtol=1e-12)


def _unused_warnings(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
        gc.collect()
    return [w for w in caught if issubclass(w.category, UnusedGradientsWarning)]


def test_gradients_dropped_unread_warn():
    x = fg.tensor([1.0, 2.0], requires_grad=True)

    def bare_statement():  # torch's `loss.backward()`
        (x * x).sum().backward()

    def overwritten_micro_batches():
        for i in range(3):
            grads = (x * i).sum().backward()
        return grads[x]

    caught = _unused_warnings(bare_statement)
    assert len(caught) == 1 and "g1 + g2" in str(caught[0].message)
    assert caught[0].filename == __file__  # it points at the line that dropped them
    assert len(_unused_warnings(overwritten_micro_batches)) == 2


def test_gradients_read_summed_or_wanted_for_hooks_do_not_warn():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    seen = []

    def read():
        grads = (x * x).sum().backward()
        return grads[x]

    def summed():
        return sum((x * i).sum().backward() for i in range(3))[x]

    def hooked():  # backward run for its hooks alone (Grad-CAM style)
        h = x.register_hook(seen.append)
        (x * x).sum().backward()
        h.remove()

    def not_from_backward():
        fg.grad((x * x).sum(), [x])

    for fn in (read, summed, hooked, not_from_backward):
        assert _unused_warnings(fn) == [], fn.__name__
    assert len(seen) == 1


def test_zero_grad_names_the_accumulation_idiom():
    opt = fg.optim.SGD(_model().parameters(), lr=0.1)
    with pytest.raises(RuntimeError, match=r"g1 \+ g2"):
        opt.zero_grad()


# -- smaller traps ------------------------------------------------------------------------------------------------
def test_vjp_fn_under_no_grad_returns_graph_free_results():
    x = fg.tensor([0.5, 1.0], requires_grad=True)  # on a graph: results are connected with grad mode on
    _, fn = vjp(fg.sin, x)
    assert fn(fg.ones(2))[0].requires_grad
    with fg.no_grad():
        (g,) = fn(fg.ones(2))
    assert not g.requires_grad
    np.testing.assert_allclose(g.numpy(), np.cos([0.5, 1.0]), rtol=1e-6)


def test_vjp_fn_under_no_grad_against_torch():
    torch = pytest.importorskip("torch")
    xt = torch.tensor([0.5, 1.0], requires_grad=True)
    _, fn = torch.func.vjp(torch.sin, xt)
    with torch.no_grad():
        (gt,) = fn(torch.ones(2))
    _, fgn = vjp(fg.sin, fg.tensor([0.5, 1.0], requires_grad=True))
    with fg.no_grad():
        (g,) = fgn(fg.ones(2))
    assert g.requires_grad == gt.requires_grad


def test_format_of_a_tensor_as_pytorch():
    loss = fg.tensor(1.234567)
    assert f"{loss:.4f}" == "1.2346" and f"{loss:>8.2f}" == "    1.23"
    assert f"{fg.tensor(3):d}" == "3"
    assert f"{fg.ones(2)}" == str(fg.ones(2))
    with pytest.raises(TypeError, match="unsupported format string .* passed to Tensor.__format__"):
        f"{fg.ones(2):.2f}"


def test_format_against_torch():
    torch = pytest.importorskip("torch")
    assert f"{fg.tensor(2.5, dtype=fg.float64):.3e}" == f"{torch.tensor(2.5, dtype=torch.float64):.3e}"
    with pytest.raises(TypeError):
        f"{torch.ones(2):.2f}"


def test_tensor_of_a_torch_tensor_that_requires_grad_warns():
    torch = pytest.importorskip("torch")
    import interop

    t = torch.tensor([1.0, 2.0], requires_grad=True) * 2
    with pytest.warns(UserWarning, match="interop.from_torch"):
        x = fg.tensor(t)
    assert x.tolist() == [2.0, 4.0] and not x.requires_grad
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fg.tensor(t.detach())
        assert interop.from_torch(t).requires_grad
