"""Moving arrays in and out: NumPy, JAX, DLPack and torch round trips, Tensors and Modules as pytrees.

Every round trip is checked bit for bit (``tobytes``), with the dtype and shape, for
every dtype fgraph supports, 0-d and empty shapes included. torch parts skip when torch
is not installed.
"""
import warnings

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import fgraph as fg
from fgraph import nn

DTYPES = [np.dtype(d) for d in (np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.int8, np.int16, np.int32,
                                np.int64, np.uint8, np.bool_, np.complex64, np.complex128)]
NUMPY_DLPACK = [d for d in DTYPES if d != np.dtype(ml_dtypes.bfloat16)]  # NumPy has no bfloat16 in DLPack
SHAPES = [(2, 3), (), (0, 2)]


def _sample(dtype, shape):
    rng = np.random.default_rng(sum(shape) + 7)
    values = np.asarray(rng.normal(size=shape) * 50)  # 0-d stays an ndarray (fg.tensor(np scalar) is float32)
    if dtype.kind == "b":
        return np.asarray(values > 0)
    if dtype.kind == "c":
        return np.asarray(values + 1j * rng.normal(size=shape)).astype(dtype)
    if dtype.kind == "u":
        return np.asarray(np.abs(values)).astype(dtype)
    return values.astype(dtype)


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    assert got.tobytes() == want.tobytes()


# -- NumPy and JAX --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_numpy_and_jax_round_trips_keep_values_and_dtypes(dtype):
    for shape in SHAPES:
        a = _sample(dtype, shape)
        t = fg.tensor(a)
        assert t.dtype == dtype and t.shape == shape and not t.requires_grad
        _same(t.numpy(), a)
        _same(np.asarray(t), a)
        j = jnp.asarray(a)
        from_jax = fg.tensor(j)
        assert from_jax.array is j or from_jax.array.dtype == j.dtype
        _same(jnp.asarray(from_jax), a)  # __jax_array__
        assert isinstance(jnp.asarray(from_jax), jax.Array)


@given(hnp.arrays(st.sampled_from([np.float32, np.float64, np.int32]), hnp.array_shapes(min_dims=0, max_dims=2,
                                                                                      max_side=3)))
def test_numpy_round_trip_property(a):
    _same(fg.tensor(a).numpy(), a)
    _same(np.from_dlpack(fg.from_dlpack(a, copy=True)), a)


# -- DLPack ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", NUMPY_DLPACK, ids=str)
def test_dlpack_with_numpy_both_ways(dtype):
    for shape in SHAPES:
        a = _sample(dtype, shape)
        t = fg.from_dlpack(a)
        assert isinstance(t, fg.Tensor) and t.is_leaf and not t.requires_grad
        _same(t.numpy(), a)
        _same(np.from_dlpack(t), a)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_dlpack_with_jax_both_ways(dtype):
    for shape in SHAPES:
        a = _sample(dtype, shape)
        t = fg.from_dlpack(jnp.asarray(a))
        _same(t.numpy(), a)
        back = jax.dlpack.from_dlpack(t)
        assert isinstance(back, jax.Array)
        _same(back, a)
        assert t.__dlpack_device__() == t.array.__dlpack_device__()


def test_dlpack_from_jax_is_zero_copy_and_copy_true_copies():
    a = jnp.arange(1024.0)
    shared = fg.from_dlpack(a)
    assert shared.array.unsafe_buffer_pointer() == a.unsafe_buffer_pointer()
    copied = fg.from_dlpack(a, copy=True)
    assert copied.array.unsafe_buffer_pointer() != a.unsafe_buffer_pointer()
    _same(copied.numpy(), np.arange(1024.0))


def test_dlpack_copy_true_is_safe_against_producer_mutation():
    a = np.arange(4096, dtype=np.float32)  # large enough to be aligned: JAX would alias it
    shared, copied = fg.from_dlpack(a), fg.from_dlpack(a, copy=True)
    a[0] = 100.0
    assert copied.numpy()[0] == 0.0
    assert shared.numpy()[0] in (0.0, 100.0)  # aliasing is the platform's choice: documented in docs/arrays.md


def test_dlpack_export_of_a_tensor_that_requires_grad_warns_and_detach_silences_it():
    x = fg.tensor([1.0, 2.0], requires_grad=True).to("cpu")  # NumPy imports host memory only
    with pytest.warns(UserWarning, match=r"graph is not carried.*detach\(\)"):
        out = np.from_dlpack(x)
    np.testing.assert_array_equal(out, [1.0, 2.0])
    y = x * 2  # a computed tensor warns too
    with pytest.warns(UserWarning, match="requires grad"):
        jax.dlpack.from_dlpack(y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(np.from_dlpack(x.detach()), [1.0, 2.0])
        np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])  # numpy() returns values silently, as today


def test_dlpack_errors_name_the_function_and_the_fix():
    with pytest.raises(TypeError, match=r"from_dlpack: expected an object with __dlpack__.*got list.*fg.tensor"):
        fg.from_dlpack([1.0, 2.0])
    with pytest.raises(TypeError, match=r"from_dlpack: cannot import a ndarray .*bfloat16.*fg.tensor"):
        fg.from_dlpack(np.ones(2, ml_dtypes.bfloat16))

    def export(t):
        return t.__dlpack__()

    with pytest.raises(TypeError, match="__dlpack__: this tensor is traced"):
        jax.jit(export)(fg.ones(2))  # inside jit ``t`` wraps a tracer


def test_read_only_numpy_arrays_are_copied_in():
    a = np.arange(3.0)
    a.flags.writeable = False
    _same(fg.from_dlpack(a).numpy(), a)


# -- torch ----------------------------------------------------------------------------------------
def _torch_dtype(torch, dtype):
    return getattr(torch, "bool" if dtype.kind == "b" else str(dtype))


def _torch_to_numpy(torch, t):
    t = t.cpu()  # on a GPU backend the exchanged tensor lives on the GPU, as the Tensor did
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_torch_round_trips_through_dlpack_and_interop(dtype):
    torch = pytest.importorskip("torch")
    from interop import from_torch, to_torch

    for shape in SHAPES:
        a = _sample(dtype, shape)
        t = torch.from_dlpack(fg.tensor(a))
        assert t.dtype == _torch_dtype(torch, dtype) and tuple(t.shape) == shape
        _same(_torch_to_numpy(torch, t), a)
        _same(fg.from_dlpack(t).numpy(), a)
        x = from_torch(t)
        _same(x.numpy(), a)
        _same(_torch_to_numpy(torch, to_torch(x)), a)
        _same(_torch_to_numpy(torch, to_torch(x, copy=False)), a)


def test_torch_aliasing_rules():
    torch = pytest.importorskip("torch")
    from interop import from_torch, to_torch

    t = torch.zeros(1024)
    kept, copied = from_torch(t), fg.from_dlpack(t, copy=True)
    t.add_(1.0)  # a later in-place op on the torch side never reaches a copied fgraph tensor
    assert float(kept.sum()) == 0.0 and float(copied.sum()) == 0.0
    x = fg.arange(4.0)
    owned = to_torch(x)
    owned.add_(1.0)
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert to_torch(x, copy=False).data_ptr() == x.array.unsafe_buffer_pointer()  # zero-copy on request
    with pytest.raises(TypeError, match="from_dlpack: cannot import a Tensor"):
        fg.from_dlpack(torch.ones(2, requires_grad=True))  # torch refuses to export its graph: detach first
    y = fg.tensor([1.0], requires_grad=True)
    with pytest.warns(UserWarning, match="detach"):
        torch.from_dlpack(y)


# -- __jax_array__ --------------------------------------------------------------------------------
def test_jnp_functions_accept_tensors_and_return_arrays():
    x = fg.tensor([0.25, 0.5, 1.0], requires_grad=True)
    out = jnp.sin(x)
    assert isinstance(out, jax.Array) and not isinstance(out, fg.Tensor)
    np.testing.assert_allclose(out, np.sin([0.25, 0.5, 1.0]), rtol=1e-6)
    np.testing.assert_allclose(jnp.dot(x, x), 1.3125, rtol=1e-6)
    assert jnp.asarray(x).dtype == np.float32 and jnp.add(x, 1).shape == (3,)


def test_jax_jit_passes_a_tensor_without_graph_into_the_function():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    seen = []

    def f(t):
        seen.append((type(t), t.requires_grad, isinstance(t.array, jax.core.Tracer)))
        return fg.exp(t), jnp.cos(t)

    tensor_out, array_out = jax.jit(f)(x)
    assert seen == [(fg.Tensor, False, True)]
    assert type(tensor_out) is fg.Tensor and not tensor_out.requires_grad
    np.testing.assert_allclose(tensor_out.numpy(), np.exp([1.0, 2.0]), rtol=1e-6)
    assert isinstance(array_out, jax.Array)
    np.testing.assert_allclose(array_out, np.cos([1.0, 2.0]), rtol=1e-6)


# -- Tensors and Modules as pytrees ---------------------------------------------------------------
def test_tensor_is_a_pytree_node_whose_leaf_is_its_array():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    tree = {"a": y, "b": (x, 5)}
    flat, treedef = jax.tree_util.tree_flatten_with_path(tree)
    assert [jax.tree_util.keystr(p) for p, _ in flat] == ["['a'].array", "['b'][0].array", "['b'][1]"]
    assert flat[0][1] is y.array and flat[1][1] is x.array
    rebuilt = jax.tree_util.tree_unflatten(treedef, [leaf for _, leaf in flat])
    for t in (rebuilt["a"], rebuilt["b"][0]):
        assert type(t) is fg.Tensor and t.is_leaf and not t.requires_grad and t.grad_fn is None
    np.testing.assert_array_equal(rebuilt["a"].numpy(), [3.0, 6.0])
    doubled = jax.tree.map(lambda a: a * 2, tree)
    np.testing.assert_array_equal(doubled["b"][0].numpy(), [2.0, 4.0])
    assert jax.tree_util.tree_structure(x) == jax.tree_util.tree_structure(fg.zeros(7))  # graph not in it
    assert len(jax.tree_util.tree_leaves([x, y])) == 2


def test_parameter_unflattens_to_a_parameter_with_its_requires_grad():
    frozen = nn.Parameter(fg.ones(2), requires_grad=False)
    for p, want in ((nn.Parameter(fg.ones(2)), True), (frozen, False)):
        q = jax.tree.map(lambda a: a + 1, p)
        assert type(q) is nn.Parameter and q.requires_grad is want and q is not p
        np.testing.assert_array_equal(q.numpy(), [2.0, 2.0])
    assert jax.tree_util.tree_structure(frozen) != jax.tree_util.tree_structure(nn.Parameter(fg.ones(2)))


def test_module_flattens_to_named_arrays_with_tied_parameters_once():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(3, 2)
            self.dec = nn.Linear(2, 3, bias=False)
            self.dec.weight = nn.Parameter(fg.ones(3, 2))
            self.head = nn.Linear(3, 2)
            self.head.weight = self.enc.weight  # tied
            self.head.bias = self.head.bias.requires_grad_(False)
            self.register_buffer("count", fg.zeros((), dtype=fg.int64))

    model = Tied()
    flat, treedef = jax.tree_util.tree_flatten_with_path(model)
    names = [jax.tree_util.keystr(p) for p, _ in flat]
    assert names == [".enc.weight", ".enc.bias", ".dec.weight", ".head.bias", ".count"]
    assert all(isinstance(leaf, jax.Array) for _, leaf in flat)
    assert flat[0][1] is model.enc.weight.array
    rebuilt = jax.tree_util.tree_unflatten(treedef, [leaf + 1 for _, leaf in flat])
    assert rebuilt.head.weight is rebuilt.enc.weight and isinstance(rebuilt.enc.weight, nn.Parameter)
    assert rebuilt.enc.weight.requires_grad and not rebuilt.head.bias.requires_grad
    assert rebuilt.count.dtype == np.int64 and int(rebuilt.count) == 1 and not isinstance(rebuilt.count, nn.Parameter)
    np.testing.assert_array_equal(rebuilt.dec.weight.numpy(), np.full((3, 2), 2.0))
    assert model.dec.weight.tolist() == [[1.0, 1.0]] * 3  # the original is untouched
    # Tensors are accepted as leaves too: one without a graph becomes a new Parameter ...
    plain = jax.tree_util.tree_unflatten(treedef, [fg.tensor(leaf) for _, leaf in flat])
    assert isinstance(plain.dec.weight, nn.Parameter) and plain.dec.weight.requires_grad
    # ... and one that requires grad stays as it is, so gradients reach it.
    w = fg.full((3, 2), 0.5, requires_grad=True)
    subst = jax.tree_util.tree_unflatten(treedef, [w if n == ".dec.weight" else leaf for n, (_, leaf) in
                                                   zip(names, flat)])
    (g,) = fg.grad(subst.dec(fg.ones(1, 2)).sum(), [w])
    np.testing.assert_array_equal(g.numpy(), np.ones((3, 2)))
