"""PyTorch habits that either work as in PyTorch or raise an error naming the fgraph way.

fg.save of a whole Module, fg.load(map_location=), .backward() on a compiled step's result,
torch.autograd.Variable, grad(only_inputs=), and torch.Tensor's dtype rule against torch.tensor's.
"""
import io
import warnings

import numpy as np
import pytest

import fgraph as fg
from fgraph.errors import GradError


# -- fg.save(model) --------------------------------------------------------------------------------------------------
def test_saving_a_whole_module_names_state_dict(tmp_path):
    model = fg.nn.Sequential(fg.nn.Linear(2, 3), fg.nn.ReLU())
    opt = fg.optim.SGD(model.parameters(), lr=0.1)
    for obj, name in ((model, "model"), ({"model": model, "epoch": 3}, "model"), (opt, "opt")):
        with pytest.raises(TypeError) as info:
            fg.save(obj, tmp_path / "m.safetensors")
        message = str(info.value)
        assert f"fg.save({name}.state_dict(), path)" in message
        assert f"{name}.load_state_dict(fg.load(path))" in message
    assert not (tmp_path / "m.safetensors").exists()


@pytest.mark.parametrize("where", ["cpu", fg.device("cpu"), {"cuda:0": "cpu"}])
def test_load_with_map_location_restores_a_module(tmp_path, where):
    model, fresh = fg.nn.Linear(3, 2), fg.nn.Linear(3, 2)
    path = tmp_path / "m.safetensors"
    fg.save(model.state_dict(), path)
    state = fg.load(path, map_location=where)
    assert all(value.device == fg.device("cpu") for value in state.values())
    home = fresh.weight.device
    fresh.load_state_dict(state)  # as torch: the values are copied into the parameters where they live
    assert fresh.weight.tolist() == model.weight.tolist() and fresh.weight.device == home


# -- a compiled step's result in .backward() ----------------------------------------------------------------------------
def test_backward_on_a_compiled_result_names_the_fix():
    model = fg.nn.Linear(3, 1)

    @fg.compile
    def train_loss(x):
        return model(x).pow(2).mean()

    x = fg.ones(2, 3)
    loss = train_loss(x)
    for call in (loss.backward, lambda: fg.grad(loss, list(model.parameters()))):
        with pytest.raises(GradError, match=r"compiled function .*train_loss.* \(fg\.compile\).*docs/compile\.md"):
            call()
    with pytest.raises(GradError, match="fg.compile"):
        fg.grad(model(x).sum(), [loss])  # a compiled result as an input
    plain = model(x).detach().sum()
    with pytest.raises(GradError) as info:
        plain.backward()  # an ordinary detached tensor keeps the ordinary message
    assert "fg.compile" not in str(info.value) and "requires_grad=True" in str(info.value)


def test_a_compiled_step_that_differentiates_inside_works():
    model = fg.nn.Linear(3, 1)
    opt = fg.optim.SGD(model.parameters(), lr=0.1)

    @fg.compile
    def step(x):
        loss = model(x).pow(2).mean()
        opt.step(loss.backward())
        return loss

    before = model(fg.ones(2, 3)).pow(2).mean().item()
    assert step(fg.ones(2, 3)).item() == pytest.approx(before, rel=1e-6)
    assert model(fg.ones(2, 3)).pow(2).mean().item() < before


# -- torch.autograd.Variable -------------------------------------------------------------------------------------------
def test_variable_returns_a_new_leaf_tensor():
    from fgraph.autograd import Variable

    base = fg.tensor([1.0, 2.0], requires_grad=True)
    computed = base * 3
    v = Variable(computed, requires_grad=True)
    assert type(v) is fg.Tensor and v.is_leaf and v.requires_grad and v.tolist() == [3.0, 6.0]
    (g,) = fg.grad((v * v).sum(), [v])
    assert g.tolist() == [6.0, 12.0]
    plain = Variable(computed)
    assert not plain.requires_grad and plain.grad_fn is None
    assert isinstance(base, Variable) and isinstance(plain, fg.autograd.Variable)
    assert Variable().shape == (0,)
    with pytest.raises(TypeError, match="fg.tensor"):
        Variable([1.0, 2.0])
    with pytest.raises(TypeError, match="floating point"):
        Variable(fg.tensor([1, 2]), requires_grad=True)
    with pytest.warns(UserWarning, match="volatile"):
        Variable(base, volatile=True)


def test_variable_matches_torch():
    torch = pytest.importorskip("torch")
    from torch.autograd import Variable as TorchVariable

    tb = torch.tensor([1.0, 2.0], requires_grad=True)
    fb = fg.tensor([1.0, 2.0], requires_grad=True)
    for t_arg, f_arg in ((tb * 3, fb * 3), (tb, fb)):
        for requires_grad in (False, True):
            tv, fv = TorchVariable(t_arg, requires_grad=requires_grad), fg.autograd.Variable(f_arg, requires_grad)
            assert (fv.requires_grad, fv.is_leaf, fv.grad_fn is None, fv is f_arg) == (
                tv.requires_grad, tv.is_leaf, tv.grad_fn is None, tv is t_arg)
            assert fv.tolist() == tv.tolist()


# -- grad(only_inputs=) -------------------------------------------------------------------------------------------------
def test_grad_accepts_only_inputs_as_torch_does():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (g,) = fg.grad((x * x).sum(), [x], only_inputs=True)
    assert g.tolist() == [2.0, 4.0]
    with pytest.warns(FutureWarning, match="only_inputs argument is deprecated"):
        (g2,) = fg.autograd.grad((x * x).sum(), x, only_inputs=False)
    assert g2.tolist() == g.tolist()
    (g3,) = fg.grad((x * x).sum(), [x], None, None, False, True)  # torch's positional order
    assert g3.tolist() == g.tolist()


def test_only_inputs_warnings_match_torch():
    torch = pytest.importorskip("torch")
    for only_inputs in (True, False):
        tx, fx = torch.tensor([1.0, 2.0], requires_grad=True), fg.tensor([1.0, 2.0], requires_grad=True)
        with warnings.catch_warnings(record=True) as t_caught:
            warnings.simplefilter("always")
            (tg,) = torch.autograd.grad((tx * tx).sum(), tx, only_inputs=only_inputs)
        with warnings.catch_warnings(record=True) as f_caught:
            warnings.simplefilter("always")
            (fgr,) = fg.grad((fx * fx).sum(), [fx], only_inputs=only_inputs)
        assert [w.category for w in f_caught] == [w.category for w in t_caught]
        assert fgr.tolist() == tg.tolist()


# -- fg.Tensor(data) vs fg.tensor(data) ------------------------------------------------------------------------------
def _data_cases() -> dict:
    return {
        "numpy int64": np.array([1, 2]), "numpy int32": np.array([1, 2], np.int32),
        "numpy bool": np.array([True, False]), "numpy float64": np.array([1.5, 2.0]),
        "numpy float16": np.array([1.5], np.float16), "numpy uint8": np.array([255], np.uint8),
        "list of ints": [1, 2], "list of floats": [1.5, 2.0], "list of bools": [True, False],
        "nested list": [[1, 2], [3, 4]], "tuple": (2, 3), "0-d float array": np.array(3.5),
    }


def test_Tensor_gives_the_default_float_dtype_and_tensor_infers():
    for name, data in _data_cases().items():
        assert fg.Tensor(data).dtype == fg.get_default_dtype(), name
        assert fg.Tensor(data).tolist() == np.asarray(data, np.float32).tolist(), name
    assert fg.tensor(np.array([1.5, 2.0])).dtype == np.float64  # x64 on (conftest): tensor keeps float64
    assert fg.tensor(np.array([1, 2])).dtype == np.int64
    assert fg.Tensor(fg.tensor([1, 2])).dtype == np.int64  # a Tensor keeps its dtype, as torch.Tensor(t) does
    assert fg.Tensor(2, 3).shape == (2, 3) and fg.Tensor(4).shape == (4,) and fg.Tensor().shape == (0,)
    with pytest.raises(TypeError, match=r"fg\.tensor\(3\.5\)"):
        fg.Tensor(3.5)
    with pytest.raises(TypeError, match="requires_grad= by keyword"):
        fg.Tensor(np.ones(2), True)
    assert fg.Tensor([1.0, 2.0], requires_grad=True).requires_grad


def test_Tensor_and_tensor_dtypes_match_torch():
    torch = pytest.importorskip("torch")
    for name, data in _data_cases().items():
        assert str(fg.Tensor(data).dtype) == str(torch.Tensor(data).dtype).removeprefix("torch."), name
        assert str(fg.tensor(data).dtype) == str(torch.tensor(data).dtype).removeprefix("torch."), name
        assert fg.Tensor(data).shape == tuple(torch.Tensor(data).shape), name
    for sizes in ((2, 3), (4,), ()):
        assert fg.Tensor(*sizes).shape == tuple(torch.Tensor(*sizes).shape)
    for t in (torch.tensor([1, 2]), torch.tensor([1.0], dtype=torch.float64)):
        assert str(fg.Tensor(t).dtype) == str(torch.Tensor(t).dtype).removeprefix("torch.")
    with pytest.raises(TypeError):
        torch.Tensor(3.5)
    with pytest.raises(TypeError):
        fg.Tensor(3.5)
