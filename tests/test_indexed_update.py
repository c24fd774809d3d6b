"""``x.at[index].set(v)`` / ``.add`` / ``.mul`` / ``.min`` / ``.max`` / ``.get``: values, gradients w.r.t.
``x`` and ``v`` (first and second order) and node names, for every index kind ``x[index] = v`` takes.

Two oracles on the same cases: PyTorch's clone-then-setitem (``y = x.clone(); y[index] = v``,
``y[index] += v``, ``y[index] *= v``; ``min``/``max`` as ``y[index] = torch.minimum(y[index], v)``),
and, without torch, ``jax.grad`` of the pure-JAX ``x.at[index].<mode>(v)``. Plus positional
encodings, top-k masking, ``fg.compile``, ``jax.jit``, ``fg.func.vmap`` and the errors.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
from fgraph.compile import CompileError
from fgraph.errors import OpError

MODES = ("set", "add", "mul", "min", "max")


class Case(NamedTuple):
    """``index(tensor)`` builds the index with a library's tensor constructor (fg.tensor, torch.tensor,
    jnp.asarray); ``value_shape`` is v's shape (``None``: a Python float)."""

    x_shape: tuple
    index: Callable[[Callable], Any]
    value_shape: Optional[tuple]
    modes: tuple
    to_numpy_layout: Optional[Callable] = None  # v as NumPy/JAX place the index-array dimensions
    torch_accumulates: bool = False  # PyTorch's spelling of .add is index_put_(accumulate=True)


_MASK3 = np.array([True, False, True])
_MASK4 = np.array([False, True, True, False])
_MASK34 = np.arange(12).reshape(3, 4) % 3 == 1
_MASK345 = np.arange(60).reshape(3, 4, 5) % 7 < 3

# Each kind runs .set and the modes listed; every mode meets masks, index tensors and basic indices.
CASES = {
    "int": Case((3, 4, 5), lambda t: 1, (4, 5), ("set", "add")),
    "negative_int": Case((3, 4, 5), lambda t: (-1, 2), (5,), ("set", "min")),
    "slice_step": Case((3, 4, 5), lambda t: (slice(None), slice(0, None, 2)), (2, 1), ("set", "add", "max")),
    "slice_bounds": Case((3, 4, 5), lambda t: (slice(1, 3), slice(-3, None, 2)), None, ("set", "mul")),
    "ellipsis": Case((3, 4, 5), lambda t: (Ellipsis, 1), (3, 4), ("set",)),
    "none": Case((3, 4, 5), lambda t: (None, 1, slice(1, 3)), (1, 2, 5), ("set", "mul")),
    "whole": Case((3, 4, 5), lambda t: slice(None), (5,), ("set", "add")),
    "mask_whole": Case((3, 4, 5), lambda t: t(_MASK345), None, ("set", "add")),
    "mask_partial": Case((3, 4, 5), lambda t: t(_MASK34), (5,), ("set", "mul", "min", "max")),
    "mask_after_slice": Case((3, 4, 5), lambda t: (slice(None), t(_MASK4)), (3, 1, 5), ("set", "add")),
    "mask_per_element": Case((3, 4, 5), lambda t: t(_MASK3), (2, 4, 5), ("set", "mul")),
    "int_tensor": Case((3, 4, 5), lambda t: t(np.array([2, 0])), (4, 5), ("set", "add", "mul")),
    "list": Case((3, 4, 5), lambda t: (slice(None), [2, -1]), (5,), ("set", "min")),
    "arrays_separated": Case((3, 4, 5), lambda t: (t(np.array([0, 1])), slice(None), t(np.array([1, 2]))), (2, 4),
                             ("set", "mul")),
    "int_then_array": Case((3, 4, 5), lambda t: (1, slice(None), t(np.array([0, 2]))), (4, 2),
                           ("set", "add", "mul", "max"), to_numpy_layout=jnp.transpose),
    "arrays_broadcast": Case((3, 4, 5), lambda t: (slice(None), t(np.array([[0], [3]])), t(np.array([1, 2, 4]))),
                             (3,), ("set", "add", "min", "max")),
    "repeated": Case((3, 4, 5), lambda t: t(np.array([0, 2, 0])), (3, 4, 5), ("add",), torch_accumulates=True),
}


def _values(case: Case, seed: int = 1) -> tuple:
    rng = np.random.default_rng(seed)
    # Distinct values on separate grids: min/max see no ties between x and v.
    x = rng.permutation(math.prod(case.x_shape)).reshape(case.x_shape) * 0.25 + 0.5
    v = None if case.value_shape is None else rng.permutation(max(math.prod(case.value_shape), 1)).reshape(
        case.value_shape) * 0.25 + 0.625
    return x, v


def _weights(shape: tuple, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


# -- fgraph: value, gradients, second-order gradients ----------------------------------------------------------
def _fgraph_step(case: Case, mode: str) -> Callable:
    """The checked program: out, grads of sum(out * w) w.r.t. (x, v), and grads of sum(grads * w') (order 2)."""
    index = case.index(fg.tensor)

    def step(x, v=2.5):
        out = getattr(x.at[index], mode)(v)
        inputs = [x, v] if isinstance(v, fg.Tensor) else [x]
        loss = (out * fg.tensor(_weights(out.shape, 2))).sum()
        grads = fg.grad(loss, inputs, create_graph=True)
        second = sum((g * fg.tensor(_weights(g.shape, 3 + i))).sum() for i, g in enumerate(grads))
        grads2 = fg.grad(second, inputs, materialize_grads=True, allow_unused=True) if second.requires_grad \
            else [fg.zeros_like(t) for t in inputs]
        return out, list(grads), list(grads2)

    return step


def _fgraph_inputs(case: Case) -> list:
    x_np, v_np = _values(case)
    return [fg.tensor(a, requires_grad=True) for a in (x_np, v_np) if a is not None]


def _as_numpy(result: tuple) -> dict:
    out, grads, grads2 = result
    return dict(out=np.asarray(out.array), grads=[np.asarray(g.array) for g in grads],
                grads2=[np.asarray(g.array) for g in grads2])


@functools.lru_cache(maxsize=None)
def _fgraph_compiled(name: str) -> dict:
    """``{mode: results}``: every mode of a case in one XLA program (fg.compile), shared by both oracles."""
    case = CASES[name]
    steps = {mode: _fgraph_step(case, mode) for mode in case.modes}

    def all_modes(*inputs):
        return {mode: step(*inputs) for mode, step in steps.items()}

    results = fg.compile(all_modes)(*_fgraph_inputs(case))
    return {mode: _as_numpy(result) for mode, result in results.items()}


def _compare(got: dict, want: dict) -> None:
    assert set(got) == set(want)
    for mode in got:
        np.testing.assert_allclose(got[mode]["out"], np.asarray(want[mode]["out"]), rtol=1e-12, atol=1e-12,
                                   err_msg=mode)
        for key in ("grads", "grads2"):
            assert len(got[mode][key]) == len(want[mode][key])
            for g, w in zip(got[mode][key], want[mode][key]):
                np.testing.assert_allclose(g, np.asarray(w), rtol=1e-12, atol=1e-12, err_msg=f"{mode} {key}")


# -- the torch-free oracle: jax.grad of x.at[index].<mode>(v) ---------------------------------------------------
def _jax_program(case: Case, mode: str) -> Callable:
    index = case.index(jnp.asarray)
    layout = case.to_numpy_layout or (lambda v: v)

    def f(x, v):
        value = 2.5 if v is None else layout(v)
        kwargs = {"unique_indices": True} if mode == "mul" else {}  # JAX differentiates products only then
        return getattr(x.at[index], mode)(value, **kwargs)

    def loss(x, v):
        out = f(x, v)
        return jnp.sum(out * _weights(out.shape, 2))

    def run(x, v):
        argnums = (0,) if v is None else (0, 1)

        def second(x, v):
            gs = jax.grad(loss, argnums=argnums)(x, v)
            return sum(jnp.sum(g * _weights(g.shape, 3 + i)) for i, g in enumerate(gs))

        return dict(out=f(x, v), grads=list(jax.grad(loss, argnums=argnums)(x, v)),
                    grads2=list(jax.grad(second, argnums=argnums)(x, v)))

    return run


def _jax_run(case: Case) -> dict:
    x_np, v_np = _values(case)
    programs = {mode: _jax_program(case, mode) for mode in case.modes}

    def all_modes(x, v):
        return {mode: program(x, v) for mode, program in programs.items()}

    return jax.jit(all_modes)(jnp.asarray(x_np), None if v_np is None else jnp.asarray(v_np))


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_against_jax(name):
    _compare(_fgraph_compiled(name), _jax_run(CASES[name]))


# -- the PyTorch oracle: y = x.clone(); y[index] = v (or op= v) -----------------------------------------------
def _torch_update(case: Case, mode: str, x: Any, v: Any) -> Any:
    torch = pytest.importorskip("torch")
    index = case.index(torch.tensor)
    y = x.clone()
    if mode == "set":
        y[index] = v
    elif case.torch_accumulates:
        y = y.index_put((index,), v, accumulate=True)
    elif mode == "add":
        y[index] += v
    elif mode == "mul":
        y[index] *= v
    else:
        current = y[index].clone()
        extremum = torch.minimum if mode == "min" else torch.maximum
        y[index] = extremum(current, torch.as_tensor(v, dtype=current.dtype))
    return y


def _torch_run(case: Case, mode: str) -> dict:
    torch = pytest.importorskip("torch")
    x_np, v_np = _values(case)
    x = torch.tensor(x_np, requires_grad=True)
    v = 2.5 if v_np is None else torch.tensor(v_np, requires_grad=True)
    y = _torch_update(case, mode, x, v)
    inputs = [x] if v_np is None else [x, v]
    loss = (y * torch.tensor(_weights(y.shape, 2))).sum()
    grads = torch.autograd.grad(loss, inputs, create_graph=True)
    second = sum((g * torch.tensor(_weights(g.shape, 3 + i))).sum() for i, g in enumerate(grads))
    grads2 = torch.autograd.grad(second, inputs, allow_unused=True, materialize_grads=True) \
        if second.requires_grad else [torch.zeros_like(t) for t in inputs]
    return dict(out=y.detach().numpy(), grads=[g.detach().numpy() for g in grads],
                grads2=[g.detach().numpy() for g in grads2])


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_against_torch(name):
    pytest.importorskip("torch")
    case = CASES[name]
    _compare(_fgraph_compiled(name), {mode: _torch_run(case, mode) for mode in case.modes})


@pytest.mark.parametrize("name,mode", [("mask_per_element", "mul"), ("slice_step", "max")])
def test_eager_matches_compiled(name, mode):
    """Eagerly: create_graph=True (rules op by op) and create_graph=False (one traced rule kernel)."""
    case = CASES[name]
    want = _fgraph_compiled(name)[mode]
    inputs = _fgraph_inputs(case)
    _compare({mode: _as_numpy(_fgraph_step(case, mode)(*inputs))}, {mode: want})
    out = getattr(inputs[0].at[case.index(fg.tensor)], mode)(inputs[1] if len(inputs) > 1 else 2.5)
    grads = fg.grad((out * fg.tensor(_weights(out.shape, 2))).sum(), inputs)
    for g, w in zip(grads, want["grads"]):
        np.testing.assert_allclose(np.asarray(g.array), w, rtol=1e-12, atol=1e-12)


# Every kind with .set; .add and .mul where PyTorch's name differs from .set's (CopyBackwards for x[:] += v).
NAMED = [pytest.param(name, "set", id=f"{name}-set") for name, case in CASES.items() if "set" in case.modes] + [
    pytest.param(name, mode, id=f"{name}-{mode}")
    for name, mode in [("whole", "add"), ("int", "add"), ("int_tensor", "mul"), ("none", "mul")]]


@pytest.mark.parametrize("name,mode", NAMED)
def test_node_names_match_torch(name, mode):
    torch = pytest.importorskip("torch")
    case = CASES[name]
    x_np, v_np = _values(case)
    v = 2.5 if v_np is None else fg.tensor(v_np)
    got = getattr(fg.tensor(x_np, requires_grad=True).at[case.index(fg.tensor)], mode)(v).grad_fn.name()
    y = _torch_update(case, mode, torch.tensor(x_np, requires_grad=True), 2.5 if v_np is None else torch.tensor(v_np))
    assert got == y.grad_fn.name().replace("torch::autograd::", "")


@pytest.mark.parametrize("name", ["slice_step", "none", "mask_per_element", "int_then_array", "arrays_broadcast"])
def test_get_reads_the_region_set_writes(name):
    case = CASES[name]
    x = fg.tensor(_values(case)[0])
    region = x.at[case.index(fg.tensor)].get()
    marked = x.at[case.index(fg.tensor)].set(fg.full(region.shape, -1.0, dtype=fg.float64))
    assert float(region.min()) > 0 and int((marked == -1.0).sum()) == region.numel()


# -- the programs this exists for -------------------------------------------------------------------------------
def _positional_encoding(scale, max_len: int = 6, d_model: int = 4):
    position = fg.arange(max_len, dtype=fg.float64).unsqueeze(1)
    div_term = fg.exp(fg.arange(0, d_model, 2, dtype=fg.float64) * (-math.log(10000.0) / d_model)) * scale
    pe = fg.zeros(max_len, d_model, dtype=fg.float64)
    pe = pe.at[:, 0::2].set(fg.sin(position * div_term))
    return pe.at[:, 1::2].set(fg.cos(position * div_term))


def _positional_encoding_jax(scale, max_len: int = 6, d_model: int = 4):
    position = jnp.arange(max_len, dtype=jnp.float64)[:, None]
    div_term = jnp.exp(jnp.arange(0, d_model, 2) * (-math.log(10000.0) / d_model)) * scale
    pe = jnp.zeros((max_len, d_model)).at[:, 0::2].set(jnp.sin(position * div_term))
    return pe.at[:, 1::2].set(jnp.cos(position * div_term))


def test_positional_encoding_under_compile():
    weights = _weights((6, 4), 5)

    @fg.compile
    def step(scale):
        pe = _positional_encoding(scale)
        return pe, fg.grad((pe * fg.tensor(weights)).sum(), [scale])[0]

    @jax.jit
    def step_jax(scale):
        loss = lambda s: jnp.sum(_positional_encoding_jax(s) * weights)  # noqa: E731
        return _positional_encoding_jax(scale), jax.grad(loss)(scale)

    got, want = step(fg.tensor(1.5, dtype=fg.float64, requires_grad=True)), step_jax(1.5)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.array, w, rtol=1e-12)


def _top_k_probs(logits, k: int = 2):
    kth = fg.topk(logits, k)[0][..., -1:]
    return fg.softmax(logits.at[logits < kth].set(-float("inf")), dim=-1)


def _top_k_probs_jax(logits, k: int = 2):
    kth = jax.lax.top_k(logits, k)[0][..., -1:]
    return jax.nn.softmax(jnp.where(logits < kth, -jnp.inf, logits), axis=-1)


def test_top_k_masking_under_compile():
    logits_np = _values(Case((3, 5), None, None, ()))[0] - 2.0
    weights = _weights((3, 5), 6)

    @fg.compile
    def step(logits):
        probs = _top_k_probs(logits)
        return probs, fg.grad((probs * fg.tensor(weights)).sum(), [logits])[0]

    @jax.jit
    def step_jax(logits):
        return _top_k_probs_jax(logits), jax.grad(lambda l: jnp.sum(_top_k_probs_jax(l) * weights))(logits)

    probs, grad = step(fg.tensor(logits_np, requires_grad=True))
    want_probs, want_grad = step_jax(jnp.asarray(logits_np))
    np.testing.assert_allclose(probs.array, want_probs, rtol=1e-12)
    np.testing.assert_allclose(grad.array, want_grad, rtol=1e-12, atol=1e-15)
    assert int((probs.array == 0).sum()) == 3 * 3


def test_jax_jit_through_to_jax_with_a_traced_index():
    from interop import to_jax

    def f(x, index, v):
        return (x.at[index, 1:].mul(v) ** 2).sum()

    def f_jax(x, index, v):
        return jnp.sum(x.at[index, 1:].mul(v, unique_indices=True) ** 2)

    x, v = _values(Case((3, 4), None, (2, 3), ()))
    index = jnp.asarray([2, 0])
    got = jax.jit(jax.grad(to_jax(f), argnums=(0, 2)))(jnp.asarray(x), index, jnp.asarray(v))
    want = jax.grad(f_jax, argnums=(0, 2))(jnp.asarray(x), index, jnp.asarray(v))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_vmap_per_sample_updates_and_gradients():
    from fgraph.func import grad, vmap

    xs, vs = _values(Case((3, 4), None, (3,), ()))

    def loss(x, v):
        masked = x.at[x < x.mean()].set(0.0)
        return (masked.at[1:3].mul(v) ** 2).sum()

    def loss_jax(x, v):
        masked = jnp.where(x < x.mean(), 0.0, x)
        return jnp.sum(masked.at[1:3].mul(v) ** 2)

    got = vmap(grad(loss, argnums=(0, 1)))(fg.tensor(xs), fg.tensor(vs))
    want = jax.vmap(jax.grad(loss_jax, argnums=(0, 1)))(jnp.asarray(xs), jnp.asarray(vs))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.array, w, rtol=1e-12)


# -- dtypes ------------------------------------------------------------------------------------------------------
def test_values_are_cast_to_x_dtype_and_gradients_to_v_dtype():
    x = fg.zeros(2, 3, dtype=fg.float32, requires_grad=True)
    v = fg.tensor([1.0, 2.0, 3.0], dtype=fg.float64, requires_grad=True)
    out = x.at[0].add(v)
    assert out.dtype == fg.float32
    gx, gv = fg.grad(out.sum(), [x, v])
    assert gx.dtype == fg.float32 and gv.dtype == fg.float64 and gv.tolist() == [1.0, 1.0, 1.0]
    ints = fg.zeros(2, 2, dtype=fg.int64)
    assert ints.at[0].set(2.7).tolist() == [[2, 2], [0, 0]]
    assert ints.at[ints == 0].set(-2.7).tolist() == [[-2, -2], [-2, -2]]
    assert fg.zeros(2).at[0].set(fg.tensor(True)).tolist() == [1.0, 0.0]
    assert fg.zeros(2, dtype=fg.complex128).at[1].set(2.0).tolist() == [0j, 2 + 0j]
    assert fg.zeros(2).at[np.array([1])].set(np.float64(4.0)).tolist() == [0.0, 4.0]


def test_torch_casts_the_same_way():
    torch = pytest.importorskip("torch")
    y = torch.zeros(2, 2, dtype=torch.int64)
    y[0] = 2.7
    y[1] = torch.tensor([-2.7, 1.2])
    got = fg.zeros(2, 2, dtype=fg.int64).at[0].set(2.7).at[1].set(fg.tensor([-2.7, 1.2]))
    assert got.tolist() == y.tolist()


# -- errors ------------------------------------------------------------------------------------------------------
def test_item_assignment_names_at_first():
    x = fg.ones(3)
    with pytest.raises(TypeError, match="immutable") as info:
        x[0] = 5.0
    message = str(info.value)
    assert message.index("x = x.at[idx].set(v)") < message.index("index_put") and ".add(v)" in message


def test_shape_mismatch_names_the_op_both_shapes_and_the_fix():
    x = fg.zeros(3, 4)
    with pytest.raises(OpError, match=r"x\.at\[index\]\.set: a value of shape \(3,\) .* region x\[index\] of "
                                      r"shape \(2, 4\) \(x has shape \(3, 4\)\); give the value that shape"):
        x.at[fg.tensor([0, 1])].set(fg.ones(3))
    with pytest.raises(OpError, match=r"add: a value of shape \(3, 1\) .* shape \(4, N\), N the number of elements"):
        fg.zeros(4, 3).at[:, fg.tensor([True, False, True])].add(fg.ones(3, 1))


@pytest.mark.parametrize("call,error,match", [
    (lambda x: x.at[0].set(1 + 2j), OpError, r"set: cannot write the complex \(1\+2j\) into x of dtype float64"),
    (lambda x: x.at[0].set(fg.ones(4, dtype=fg.complex128)), OpError, "v.real"),
    (lambda x: fg.zeros(2, dtype=fg.int64).at[0].add(0.5), OpError, r"add: x of dtype int64 .* cannot be cast back"),
    (lambda x: x.at[0].set([1.0, 2.0]), TypeError, r"wrap a list with fg\.tensor"),
    (lambda x: x.at[0.5].set(1.0), IndexError, "only integers, slices"),
    (lambda x: x.at[3].set(1.0), IndexError, "index 3 is out of bounds for dimension 0 with size 3"),
    (lambda x: x.at[fg.tensor([True, False])].set(1.0), IndexError, r"shape of the mask \[2\] .* \[3\]"),
    (lambda x: x.at[fg.tensor([0, 1]), fg.tensor([0, 1, 2])].set(1.0), IndexError, "could not be broadcast"),
    (lambda x: x.at[0].min(fg.ones(4, dtype=fg.complex128)), OpError, "complex"),
    (lambda x: x.at[fg.tensor([0, 0])].mul(fg.ones(2, 4, requires_grad=True)), OpError, "more than once"),
])
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(fg.zeros(3, 4, dtype=fg.float64))


def test_min_on_complex_x_is_refused():
    with pytest.raises(OpError, match="indexed_min"):
        fg.zeros(2, dtype=fg.complex128).at[0].min(1.0)


def test_repeated_products_without_grad_multiply_as_in_jax():
    got = fg.full((3,), 2.0).at[fg.tensor([0, 0, 2])].mul(fg.tensor([3.0, 5.0, 7.0]))
    want = jnp.full((3,), 2.0).at[jnp.asarray([0, 0, 2])].mul(jnp.asarray([3.0, 5.0, 7.0]))
    np.testing.assert_allclose(got.array, want)


def test_a_mask_with_one_value_per_selected_element_does_not_trace():
    @fg.compile
    def step(x):
        return x.at[x > 0].set(fg.ones(2))

    with pytest.raises(CompileError, match=r"x\.at\[index\]\.set: a value of shape \(2,\) has one entry per "
                                            r"element the mask \(shape \(3,\)\) selects, so it cannot be traced"):
        step(fg.tensor([1.0, -1.0, 2.0]))


@pytest.mark.parametrize("make_index", [
    lambda i: (1, slice(None), i),
    lambda i: (slice(None), 1, i),
    lambda i: (i, slice(None), -1),
    lambda i: (1, i, None, 2),
], ids=["int-slice-array", "slice-int-array", "array-slice-int", "int-array-none-int"])
def test_getitem_applies_ints_first_as_torch(make_index):
    """``x[1, :, idx]`` is ``x[1][:, idx]`` in PyTorch (shape (4, 2)), not NumPy's (2, 4); gradients follow."""
    x = fg.arange(60.0, dtype=fg.float64).reshape(3, 4, 5).requires_grad_()
    index = make_index(fg.tensor([0, 2]))
    ints = tuple(s if isinstance(s, int) else slice(None) for s in index if s is not None)
    rest = tuple(s for s in index if not isinstance(s, int))
    expected = np.asarray(x.array)[ints][tuple(np.asarray(s.array) if isinstance(s, fg.Tensor) else s for s in rest)]
    y = x[index]
    np.testing.assert_array_equal(np.asarray(y.array), expected)
    (g,) = fg.grad((y * fg.arange(float(y.numel()), dtype=fg.float64).reshape(y.shape)).sum(), [x])
    torch = pytest.importorskip("torch")
    xt = torch.arange(60.0, dtype=torch.float64).reshape(3, 4, 5).requires_grad_()
    yt = xt[make_index(torch.tensor([0, 2]))]
    assert tuple(yt.shape) == y.shape
    (yt * torch.arange(float(yt.numel()), dtype=torch.float64).reshape(yt.shape)).sum().backward()
    np.testing.assert_array_equal(np.asarray(g.array), xt.grad.numpy())
