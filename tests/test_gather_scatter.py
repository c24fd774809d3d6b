"""Semantics of the gather/scatter and indexing ops that the table cannot pin: tie splitting,
zeros in products, node names, Tensor methods, tracing, 0-d tensors and integer dtypes.
(Values and derivatives against JAX: tests/op_tables/gather_scatter.py.)
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
from jax_oracle import TOLERANCES, check_against_jax
from op_tables.gather_scatter import scatter_reduce_fg, scatter_reduce_ref


def _long(values):
    return fg.tensor(values, dtype=fg.int64)


def test_amax_ties_split_the_gradient_evenly():
    x = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    src = fg.tensor([1.0, 5.0, 1.0, -2.0], requires_grad=True)
    index = _long([0, 1, 0, 0])
    w = fg.tensor([1.0, 2.0, 3.0])
    # include_self: x[0] ties with src[0] and src[2] -> a third each (PyTorch's numbers).
    gx, gsrc = fg.grad((x.scatter_reduce(0, index, src, "amax") * w).sum(), [x, src])
    assert np.allclose(gx.tolist(), [1 / 3, 0.0, 3.0]) and np.allclose(gsrc.tolist(), [1 / 3, 2.0, 1 / 3, 0.0])
    # without self, only the two tied src elements share it (PyTorch also counts the excluded x[0]: 1/3).
    gx, gsrc = fg.grad((x.scatter_reduce(0, index, src, "amax", include_self=False) * w).sum(), [x, src])
    assert gx.tolist() == [0.0, 0.0, 3.0] and gsrc.tolist() == [0.5, 2.0, 0.5, 0.0]
    gx, gsrc = fg.grad((x.scatter_reduce(0, index, src, "amin") * w).sum(), [x, src])
    assert gx.tolist() == [0.0, 2.0, 3.0] and gsrc.tolist() == [0.0, 0.0, 0.0, 1.0]


@pytest.mark.parametrize("include_self", [True, False])
def test_prod_with_zeros_first_and_second_derivatives(include_self):
    """Positions with one, two and three zero factors: derivatives against JAX's exact ``prod``."""
    index = np.array([0, 1, 1, 2, 3, 3, 3, 4, 4])
    x = np.array([0.0, 2.0, 3.0, 0.0, 1.5, 0.0])
    src = np.array([3.0, 0.0, 4.0, 5.0, 0.0, 0.0, 2.0, 0.0, 0.0])
    for xv, sv in [(x, src), (np.zeros_like(x), src)]:
        check_against_jax(
            lambda a, b: scatter_reduce_fg(a, b, fg.tensor(index), dim=0, reduce="prod", include_self=include_self),
            lambda a, b, i: scatter_reduce_ref(a, b, i, dim=0, reduce="prod", include_self=include_self),
            [xv, sv], TOLERANCES[np.dtype("float64")], extra=(index,),
        )


def test_scatter_gradients():
    x = fg.ones(2, 3, requires_grad=True)
    src = fg.tensor([[5.0, 6.0]], requires_grad=True)
    index = _long([[2, 0]])
    y = fg.scatter(x, 1, index, src)
    assert y.tolist() == [[6.0, 1.0, 5.0], [1.0, 1.0, 1.0]]
    w = fg.arange(6.0).reshape(2, 3)
    gx, gsrc = fg.grad((y * w).sum(), [x, src])
    assert gx.tolist() == [[0.0, 1.0, 0.0], [3.0, 4.0, 5.0]]  # scattered positions get no gradient
    assert gsrc.tolist() == [[2.0, 0.0]]
    (gx,) = fg.grad((fg.scatter(x, 1, index, value=7.0) * w).sum(), [x])
    assert gx.tolist() == [[0.0, 1.0, 0.0], [3.0, 4.0, 5.0]]


def test_node_names_match_pytorch():
    x = fg.ones(3, 4, requires_grad=True)
    src = fg.ones(3, 4, requires_grad=True)
    index = _long([[0, 1, 2, 0]])
    outputs = [
        ("GatherBackward0", fg.gather(x, 0, index)),
        ("ScatterBackward0", fg.scatter(x, 0, index, src[:1])),
        ("ScatterBackward1", fg.scatter(x, 0, index, 2.0)),
        ("ScatterAddBackward0", fg.scatter_add(x, 0, index, src[:1])),
        ("ScatterReduceBackward0", fg.scatter_reduce(x, 0, index, src[:1], "mean")),
        ("IndexSelectBackward0", fg.index_select(x, 1, _long([0, 0]))),
        ("IndexAddBackward0", fg.index_add(x, 1, _long([3]), src[:, :1])),
        ("IndexPutBackward0", fg.index_put(x, (_long([1]),), src[0])),
        ("MaskedFillBackward0", fg.masked_fill(x, src > 0, 0.0)),
        ("MaskedSelectBackward0", fg.masked_select(x, src > 0)),
        ("TakeBackward0", fg.take(x, _long([5]))),
        ("GatherBackward0", fg.take_along_dim(x, _long([[1]]), dim=1)),  # a composite in PyTorch too
    ]
    assert [out.grad_fn.name() for _, out in outputs] == [name for name, _ in outputs]


def test_tensor_methods_match_functions():
    x = fg.arange(12.0).reshape(3, 4)
    i2 = _long([[0, 2, 1, 0]])
    i1 = _long([2, 0])
    mask = x > 5
    pairs = [
        (x.gather(0, i2), fg.gather(x, 0, i2)),
        (x.scatter(0, i2, x[:1]), fg.scatter(x, 0, i2, x[:1])),
        (x.scatter_add(0, i2, x[:1]), fg.scatter_add(x, 0, i2, x[:1])),
        (x.scatter_reduce(0, i2, x[:1], "prod"), fg.scatter_reduce(x, 0, i2, x[:1], "prod")),
        (x.index_select(1, i1), fg.index_select(x, 1, i1)),
        (x.index_add(1, i1, x[:, :2], alpha=3), fg.index_add(x, 1, i1, x[:, :2], alpha=3)),
        (x.index_put((i1,), x[0]), fg.index_put(x, (i1,), x[0])),
        (x.masked_fill(mask, -1.0), fg.masked_fill(x, mask, -1.0)),
        (x.masked_select(mask), fg.masked_select(x, mask)),
        (x.take(i2), fg.take(x, i2)),
        (x.take_along_dim(i2, 0), fg.take_along_dim(x, i2, 0)),
    ]
    for method, function in pairs:
        assert method.tolist() == function.tolist()


def test_forward_and_backward_trace_under_jit():
    """Rules and kernels are traceable: a whole step compiles into one XLA program."""

    def step(x, src, index):
        x, src = fg.Tensor(x, requires_grad=True), fg.Tensor(src, requires_grad=True)
        y = fg.scatter_reduce(x, 0, fg.Tensor(index), src, "amax").gather(0, fg.Tensor(index)).sum()
        gx, gsrc = fg.grad(y, [x, src])
        return gx.array, gsrc.array

    x, src, index = jnp.array([1.0, 4.0]), jnp.array([2.0, 3.0, 5.0]), jnp.array([0, 0, 1])
    gx, gsrc = jax.jit(step)(x, src, index)
    assert gx.tolist() == [0.0, 0.0] and gsrc.tolist() == [0.0, 2.0, 1.0]


def test_zero_dimensional_tensors_act_as_one_dimensional():
    x = fg.tensor(3.0, requires_grad=True)
    assert fg.gather(x, 0, _long(0)).shape == ()
    assert fg.gather(fg.tensor([3.0, 4.0]), 0, _long(1)).item() == 4.0
    assert fg.scatter(x, 0, _long(0), fg.tensor(5.0)).item() == 5.0
    assert fg.index_select(fg.tensor([[1.0, 2.0]]), 1, _long(1)).tolist() == [[2.0]]
    assert fg.take(x, _long([0, 0])).tolist() == [3.0, 3.0]
    assert fg.masked_select(x, fg.tensor(True)).tolist() == [3.0]
    (g,) = fg.grad(fg.gather(x, 0, _long(0)) * 2, [x])
    assert g.item() == 2.0


def test_integer_tensors():
    x = _long([[1, 5], [2, 7]])
    assert x.scatter_reduce(0, _long([[0, 0]]), _long([[4, 4]]), "mean").tolist() == [[2, 4], [2, 7]]
    assert x.masked_fill(x > 4, 0).tolist() == [[1, 0], [2, 0]]
    assert x.scatter_reduce(1, _long([[1], [0]]), _long([[9], [0]]), "amax", include_self=False).tolist() == \
        [[1, 9], [0, 7]]


def test_masked_fill_tensor_value_gets_the_summed_gradient():
    x = fg.ones(2, 3, requires_grad=True)
    value = fg.tensor(2.0, dtype=fg.float64, requires_grad=True)
    y = fg.masked_fill(x, fg.tensor([True, False, True]), value)
    assert y.dtype == x.dtype  # the value is cast to the input's dtype
    gx, gv = fg.grad((y * fg.arange(6.0).reshape(2, 3)).sum(), [x, value])
    assert gx.tolist() == [[0.0, 1.0, 0.0], [0.0, 4.0, 0.0]]
    assert gv.dtype == np.float64 and gv.item() == 0.0 + 2.0 + 3.0 + 5.0


def test_against_pytorch_pins_argument_conventions():
    torch = pytest.importorskip("torch")
    x = np.arange(12.0).reshape(3, 4)
    t = torch.tensor(x)
    f = fg.tensor(x)
    idx = np.array([[2, 0, 1, 1], [0, 0, 2, 1]])
    assert np.array_equal(fg.gather(f, 0, _long(idx)).numpy(), torch.gather(t, 0, torch.tensor(idx)).numpy())
    assert np.array_equal(fg.take_along_dim(f, _long([[-1], [0], [1]]), 1).numpy(),
                          torch.take_along_dim(t, torch.tensor([[-1], [0], [1]]), 1).numpy())
    assert np.array_equal(fg.scatter(f, 0, _long([[2], [0]]), reduce="multiply", value=2.0).numpy(),
                          t.scatter(0, torch.tensor([[2], [0]]), 2.0, reduce="multiply").numpy())
    assert np.array_equal(fg.index_put(f, (_long([0, 2]), _long([-1, 1])), fg.tensor(-1.0, dtype=fg.float64),
                                       accumulate=True).numpy(),
                          t.index_put((torch.tensor([0, 2]), torch.tensor([-1, 1])), torch.tensor(-1.0,
                                      dtype=torch.float64), accumulate=True).numpy())
