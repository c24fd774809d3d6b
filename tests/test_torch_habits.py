"""PyTorch habits get a pointer to the fgraph way, not a bare error (docs/coming-from-pytorch.md)."""
import re

import numpy as np
import pytest

import fgraph as fg
import fgraph.nn.functional as F
from fgraph import nn


@pytest.fixture
def x():
    return fg.tensor([1.0, 2.0, 3.0], requires_grad=True)


def test_in_place_method_names_the_out_of_place_op(x):
    with pytest.raises(AttributeError, match=re.escape("x = x.add(...)")) as info:
        x.add_(1)
    assert "immutable" in str(info.value) and "x = x + other" in str(info.value)
    with pytest.raises(AttributeError, match=re.escape("x = x.mul(...) (or x = x * other)")):
        x.mul_(2)
    with pytest.raises(AttributeError, match=re.escape("x = x.clamp(...)")):
        x.clamp_(0, 1)
    with pytest.raises(AttributeError, match=re.escape("x = x.exp(...)")):
        nn.Parameter(fg.ones(2)).exp_()  # subclasses too
    assert not hasattr(x, "add_") and not hasattr(x, "zero_") and not hasattr(x, "grad")
    assert x.add(1).tolist() == [2.0, 3.0, 4.0] and (x + 1).tolist() == [2.0, 3.0, 4.0]


def test_zero_and_fill_name_the_creation_functions(x):
    with pytest.raises(AttributeError, match=re.escape("fg.zeros_like(x)")):
        x.zero_()
    with pytest.raises(AttributeError, match=re.escape("fg.full_like(x, value)")):
        x.fill_(3.0)
    with pytest.raises(AttributeError, match=re.escape("fg.nn.init.normal_")):
        x.normal_()


def test_unknown_attributes_keep_the_plain_message(x):
    with pytest.raises(AttributeError, match=r"^'Tensor' object has no attribute 'nonsense'$"):
        x.nonsense
    with pytest.raises(AttributeError, match="no in-place methods"):
        x.nonsense_()


def test_item_assignment_names_index_put_and_where(x):
    with pytest.raises(TypeError, match="immutable") as info:
        x[0] = 5.0
    message = str(info.value)
    assert "x.index_put((fg.tensor([i]),), v)" in message and "fg.index_put" in message
    assert "fg.where(mask, v, x)" in message and "accumulate=True" in message
    with pytest.raises(TypeError, match="index_put"):
        x[1:] += 1.0
    # The suggested replacements work.
    assert x.index_put((fg.tensor([0]),), fg.tensor(5.0)).tolist() == [5.0, 2.0, 3.0]
    assert fg.where(x > 2, fg.tensor(0.0), x).tolist() == [1.0, 2.0, 0.0]


def test_grad_attribute_names_returned_gradients(x):
    loss = (x * x).sum()
    with pytest.raises(AttributeError, match=re.escape("grads = loss.backward(); grads[x]")) as info:
        x.grad
    assert "fg.grad(loss, [x])" in str(info.value)
    with pytest.raises(AttributeError, match=re.escape("fg.grad(loss, [x])")):
        x.retain_grad()
    grads = loss.backward()
    assert grads[x].tolist() == [2.0, 4.0, 6.0]


def test_assigning_data_requires_grad_and_grad_names_the_immutable_way(x):
    with pytest.raises(AttributeError, match=re.escape("fg.nn.Parameter(new)")) as info:
        x.data = fg.zeros(3)
    assert "immutable" in str(info.value) and "rebind" in str(info.value)
    with pytest.raises(AttributeError, match=re.escape("x = x.requires_grad_()")):
        x.requires_grad = False
    with pytest.raises(AttributeError, match=re.escape("grads = loss.backward()")):
        x.grad = None
    with pytest.raises(AttributeError, match="detach"):
        x.grad_fn = None
    with pytest.raises(AttributeError, match="immutable: cannot assign 'whatever'"):
        x.whatever = 1
    p = nn.Parameter(fg.ones(2))
    with pytest.raises(AttributeError, match=re.escape("fg.nn.Parameter(new)")):
        p.data = fg.zeros(2)


def test_requires_grad_returns_a_new_leaf(x):
    y = fg.tensor([1.0]).requires_grad_()
    assert y.requires_grad and y.is_leaf
    z = x.requires_grad_(False)
    assert x.requires_grad and not z.requires_grad


def test_module_zero_grad_says_gradients_are_returned():
    model = nn.Linear(2, 2)
    with pytest.raises(RuntimeError, match="returned") as info:
        model.zero_grad()
    assert "opt.step(grads)" in str(info.value)


def test_init_returns_the_new_tensor_and_rebinds_the_parameter():
    layer = nn.Linear(3, 2)
    old = layer.weight
    new = nn.init.zeros_(layer.weight)
    assert layer.weight is new and new is not old and new.tolist() == [[0.0] * 3] * 2
    assert old.tolist() != new.tolist()


def test_module_to_rebinds_parameters_and_returns_the_module():
    layer = nn.Linear(2, 2)
    old = layer.weight
    assert layer.to("cpu") is layer
    out = layer.to(fg.float64)
    assert out is layer and layer.weight.dtype == np.float64 and old.dtype == np.float32


def test_torch_tensors_given_to_ops_name_from_torch():
    torch = pytest.importorskip("torch")
    t = torch.ones(3, dtype=torch.float64)
    x = fg.ones(3, dtype=fg.float64)
    w = fg.ones(2, 3, dtype=fg.float64)
    calls = {
        "exp": lambda: fg.exp(t),
        "add": lambda: fg.add(x, t),
        "mul": lambda: x * t,
        "rmul": lambda: t * x,
        "matmul": lambda: w @ t,
        "where": lambda: fg.where(x > 0, x, t),
        "linear": lambda: F.linear(t, w),
        "relu": lambda: F.relu(t),
        "mse_loss": lambda: F.mse_loss(x, t),
    }
    for name, call in calls.items():
        with pytest.raises(TypeError, match=re.escape("interop.from_torch(t)")) as info:
            call()
        assert "is a torch.Tensor" in str(info.value), name
    assert fg.tensor(t).dtype == np.float64  # fg.tensor converts, keeping the dtype
    assert fg.tensor(t.float()).dtype == np.float32


def test_torch_save_files_name_the_conversion(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "model.pt"
    torch.save(torch.nn.Linear(2, 2).state_dict(), path)
    with pytest.raises(ValueError, match="torch.save") as info:
        fg.load(path)
    assert "save_file(torch.load(" in str(info.value)
