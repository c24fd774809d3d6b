"""fgraph.func against torch.func's contract: exception classes, validation, edge cases (issue 33).

Every scenario is written once, as a function of the library (``fg`` or ``torch``), so the
same code runs on both. Each test asserts fgraph's behaviour on its own (it runs without
torch) and, where torch is installed, compares with torch.func live: an fgraph exception
must be an instance of the class torch raises in the same situation, and stay an instance
of the class fgraph raised before (``TypeError``/``ValueError``), with fgraph's message.
Scenarios restate cases of PyTorch's ``test/functorch/test_eager_transforms.py`` and
``test_vmap.py``.
"""
from __future__ import annotations

import numpy as np
import pytest

import fgraph as fg
from fgraph.autograd.graph import get_gradient_edge
from fgraph.errors import (DimOutOfRangeError, GradError, TracedValueError, TransformTypeError,
                           TransformValueError, VmapSpecError, VmapTracedValueError)


def _x(lib):
    return lib.tensor([1.0, 2.0, 3.0])


def _m(lib):
    return lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])


def _vjp_fn(lib, out_fn):
    return lib.func.vjp(out_fn, _x(lib))[1]


# -- 1. exception classes ----------------------------------------------------------------------------
# (name, scenario(lib), what torch raises, what fgraph raised before: kept catchable, a word of the message)
CASES = [
    ("argnums out of range", lambda lib: lib.func.grad(lambda a: a.sum(), argnums=3)(_x(lib)),
     RuntimeError, ValueError, "argnums"),
    ("argnums negative out of range", lambda lib: lib.func.jacrev(lambda a: a, argnums=-2)(_x(lib)),
     RuntimeError, ValueError, "argnums"),
    ("argnums float", lambda lib: lib.func.grad(lambda a: a.sum(), argnums=1.0)(_x(lib)),
     RuntimeError, TypeError, "argnums"),
    ("argnums list", lambda lib: lib.func.jacfwd(lambda a: a, argnums=[0])(_x(lib)),
     RuntimeError, TypeError, "argnums"),
    ("argnums empty", lambda lib: lib.func.grad(lambda a, b: a.sum(), argnums=())(_x(lib), _x(lib)),
     RuntimeError, TypeError, "argnums"),
    ("argnums duplicates", lambda lib: lib.func.grad(lambda a, b: a.sum(), argnums=(0, 0))(_x(lib), _x(lib)),
     RuntimeError, ValueError, "unique"),
    ("has_aux output not a tuple", lambda lib: lib.func.grad(lambda a: a.sum(), has_aux=True)(_x(lib)),
     RuntimeError, TypeError, "(output, aux)"),
    ("has_aux 3-tuple", lambda lib: lib.func.grad(lambda a: (a.sum(), a, a), has_aux=True)(_x(lib)),
     RuntimeError, TypeError, "(output, aux)"),
    ("has_aux vjp", lambda lib: lib.func.vjp(lambda a: a, _x(lib), has_aux=True),
     RuntimeError, TypeError, "(output, aux)"),
    ("has_aux jvp", lambda lib: lib.func.jvp(lambda a: a, (_x(lib),), (_x(lib),), has_aux=True),
     RuntimeError, TypeError, "(output, aux)"),
    ("has_aux jacrev", lambda lib: lib.func.jacrev(lambda a: a, has_aux=True)(_x(lib)),
     RuntimeError, TypeError, "(output, aux)"),
    ("has_aux jacfwd", lambda lib: lib.func.jacfwd(lambda a: a, has_aux=True)(_x(lib)),
     RuntimeError, TypeError, "(output, aux)"),
    ("grad of a non-Tensor", lambda lib: lib.func.grad(lambda a: 1.0)(_x(lib)), RuntimeError, TypeError, "Tensor"),
    ("grad of a vector", lambda lib: lib.func.grad(lambda a: a)(_x(lib)), RuntimeError, ValueError, "scalar"),
    ("vjp empty output", lambda lib: lib.func.vjp(lambda a: (), _x(lib)), RuntimeError, ValueError, "non-empty"),
    ("vjp None output", lambda lib: lib.func.vjp(lambda a: None, _x(lib)), RuntimeError, ValueError, "non-empty"),
    ("vjp non-Tensor output", lambda lib: lib.func.vjp(lambda a: [a, 1], _x(lib)), RuntimeError, TypeError,
     "only Tensors"),
    ("vjp None inside output", lambda lib: lib.func.vjp(lambda a: (a, None), _x(lib)), RuntimeError, TypeError,
     "only Tensors"),
    ("jvp empty output", lambda lib: lib.func.jvp(lambda a: (), (_x(lib),), (_x(lib),)),
     RuntimeError, ValueError, "non-empty"),
    ("jvp non-Tensor output", lambda lib: lib.func.jvp(lambda a: 2.0, (_x(lib),), (_x(lib),)),
     RuntimeError, TypeError, "only Tensors"),
    ("jacrev empty output", lambda lib: lib.func.jacrev(lambda a: ())(_x(lib)), RuntimeError, ValueError,
     "non-empty"),
    ("jacrev non-Tensor output", lambda lib: lib.func.jacrev(lambda a: 2.0)(_x(lib)), RuntimeError, TypeError,
     "only Tensors"),
    ("jacfwd None output", lambda lib: lib.func.jacfwd(lambda a: None)(_x(lib)), RuntimeError, ValueError,
     "non-empty"),
    ("jacfwd non-Tensor output", lambda lib: lib.func.jacfwd(lambda a: "abc")(_x(lib)), RuntimeError, TypeError,
     "only Tensors"),
    ("jvp primals a list", lambda lib: lib.func.jvp(lambda a: a, [_x(lib)], [_x(lib)]),
     RuntimeError, TypeError, "tuple"),
    ("jvp structure mismatch", lambda lib: lib.func.jvp(lambda a, b: a, (_x(lib), _x(lib)), (_x(lib),)),
     RuntimeError, ValueError, "structure"),
    ("vjp_fn: one cotangent for two outputs", lambda lib: _vjp_fn(lib, lambda a: (a, a))(_x(lib)),
     RuntimeError, ValueError, "structure"),
    ("vjp_fn: a tuple for one output", lambda lib: _vjp_fn(lib, lambda a: a)((_x(lib),)),
     RuntimeError, ValueError, "structure"),
    ("vjp_fn: a list for a tuple", lambda lib: _vjp_fn(lib, lambda a: (a, a))([_x(lib), _x(lib)]),
     RuntimeError, ValueError, "structure"),
    ("vjp_fn: wrong shape", lambda lib: _vjp_fn(lib, lambda a: a)(lib.ones(4)), RuntimeError, ValueError, "shape"),
    ("vjp_fn: a float cotangent", lambda lib: _vjp_fn(lib, lambda a: a)(1.0), TypeError, ValueError, "a Tensor"),
    ("functional_call strict, missing", lambda lib: lib.func.functional_call(
        lib.nn.Linear(2, 2), {"weight": lib.ones(2, 2)}, (lib.ones(1, 2),), strict=True),
     RuntimeError, ValueError, "Missing key(s): 'bias'"),
    ("functional_call strict, unexpected", lambda lib: lib.func.functional_call(
        lib.nn.Linear(2, 2), {"weight": lib.ones(2, 2), "bias": lib.ones(2), "foo": lib.ones(1)},
        (lib.ones(1, 2),), strict=True),
     RuntimeError, ValueError, "Unexpected key(s): 'foo'"),
    ("vmap randomness='bogus'", lambda lib: lib.func.vmap(lambda a: a, randomness="bogus")(_x(lib)),
     RuntimeError, ValueError, "randomness"),
    ("jacfwd randomness='bogus'", lambda lib: lib.func.jacfwd(lambda a: a, randomness="bogus")(_x(lib)),
     RuntimeError, ValueError, "randomness"),
    (".item() inside vmap", lambda lib: lib.func.vmap(lambda a: a * a.sum().item())(_m(lib)),
     RuntimeError, TypeError, "item()"),
    (".item() of a sample inside vmap", lambda lib: lib.func.vmap(lambda a: a.item())(_x(lib)),
     RuntimeError, TypeError, "item()"),
    ("vmap out_dims too large", lambda lib: lib.func.vmap(lambda a: a, out_dims=3)(_m(lib)),
     IndexError, ValueError, "out of range"),
    ("vmap out_dims too negative", lambda lib: lib.func.vmap(lambda a: a, out_dims=-3)(_m(lib)),
     IndexError, ValueError, "out of range"),
    ("vmap out_dims out of range in a tuple", lambda lib: lib.func.vmap(lambda a: (a, a), out_dims=(0, 2))(_m(lib)),
     IndexError, ValueError, "out of range"),
    ("vmap in_dims a set", lambda lib: lib.func.vmap(lambda a: a, in_dims={0})(_x(lib)),
     ValueError, TypeError, "in_dims"),
    ("vmap in_dims a string", lambda lib: lib.func.vmap(lambda a: a, in_dims="0")(_x(lib)),
     ValueError, TypeError, "in_dims"),
    ("vmap in_dims a float", lambda lib: lib.func.vmap(lambda a: a, in_dims=0.0)(_x(lib)),
     ValueError, TypeError, "in_dims"),
    ("vmap returns a float", lambda lib: lib.func.vmap(lambda a: 1.0)(_x(lib)),
     ValueError, TypeError, "only return Tensors"),
    ("grad of an integer input", lambda lib: lib.func.grad(lambda a: a.sum())(lib.tensor([1, 2])),
     RuntimeError, TypeError, "floating point"),
]

# -- 2. validation fgraph was missing -----------------------------------------------------------------
_AUX_TRANSFORMS = {
    "grad": lambda lib, aux: lib.func.grad(lambda a: (a.sum(), aux), has_aux=True)(_x(lib)),
    "grad_and_value": lambda lib, aux: lib.func.grad_and_value(lambda a: (a.sum(), aux), has_aux=True)(_x(lib)),
    "vjp": lambda lib, aux: lib.func.vjp(lambda a: (a, aux), _x(lib), has_aux=True),
    "jvp": lambda lib, aux: lib.func.jvp(lambda a: (a, aux), (_x(lib),), (_x(lib),), has_aux=True),
    "jacrev": lambda lib, aux: lib.func.jacrev(lambda a: (a, aux), has_aux=True)(_x(lib)),
    "jacfwd": lambda lib, aux: lib.func.jacfwd(lambda a: (a, aux), has_aux=True)(_x(lib)),
}
for _name, _run in _AUX_TRANSFORMS.items():
    for _aux in (1, 1.0, "abc", None, [2]):
        CASES.append((f"{_name} with aux={_aux!r}", lambda lib, run=_run, aux=_aux: run(lib, aux),
                      RuntimeError, TypeError, "aux"))
CASES += [
    ("vmap in_dims a list", lambda lib: lib.func.vmap(lambda a: a, in_dims=[0])(_x(lib)),
     ValueError, TypeError, "list"),
    ("vmap in_dims a list, two args", lambda lib: lib.func.vmap(lambda a, b: a * b, in_dims=[0, 0])(_x(lib), _x(lib)),
     ValueError, TypeError, "list"),
]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize("name,scenario,torch_class,old_class,words", CASES, ids=IDS)
def test_fgraph_raises_torchs_class_and_its_own(name, scenario, torch_class, old_class, words):
    with pytest.raises(torch_class) as info:
        scenario(fg)
    assert isinstance(info.value, old_class), f"{name}: no longer a {old_class.__name__}"
    assert words in str(info.value), (name, str(info.value))


@pytest.mark.parametrize("name,scenario,torch_class,old_class,words", CASES, ids=IDS)
def test_exception_class_matches_torch(name, scenario, torch_class, old_class, words):
    torch = pytest.importorskip("torch")
    import torch.func  # noqa: F401  (lib.func)

    with pytest.raises(Exception) as torch_info:
        scenario(torch)
    with pytest.raises(Exception) as fg_info:
        scenario(fg)
    assert isinstance(torch_info.value, torch_class), (name, type(torch_info.value), torch_info.value)
    assert isinstance(fg_info.value, type(torch_info.value)), (name, type(fg_info.value), type(torch_info.value))


def test_error_classes_keep_old_except_clauses():
    assert issubclass(TransformTypeError, TypeError) and issubclass(TransformTypeError, RuntimeError)
    assert issubclass(TransformValueError, ValueError) and issubclass(TransformValueError, RuntimeError)
    assert issubclass(DimOutOfRangeError, ValueError) and issubclass(DimOutOfRangeError, IndexError)
    assert issubclass(VmapSpecError, ValueError) and issubclass(VmapSpecError, TypeError)
    assert issubclass(VmapTracedValueError, TracedValueError) and issubclass(VmapTracedValueError, RuntimeError)
    with pytest.raises(VmapTracedValueError):
        fg.func.vmap(lambda a: a * a.sum().item())(_m(fg))


@pytest.mark.parametrize("aux_kind", ["tensor", "dict", "nested", "empty tuple"])
def test_tensor_aux_still_accepted(aux_kind):
    x = _x(fg)
    make = {"tensor": lambda a: a * 2, "dict": lambda a: {"d": a * 2}, "nested": lambda a: ([a * 2], {"k": (a,)}),
            "empty tuple": lambda a: ()}[aux_kind]
    g, aux = fg.func.grad(lambda a: ((a ** 2).sum(), make(a)), has_aux=True)(x)
    np.testing.assert_allclose(np.asarray(g.array), [2.0, 4.0, 6.0])
    leaves = [t for t in __import__("jax").tree_util.tree_leaves(aux, is_leaf=lambda t: isinstance(t, fg.Tensor))]
    assert all(isinstance(t, fg.Tensor) and not t.requires_grad for t in leaves)
    _, _, aux2 = fg.func.jvp(lambda a: (a, make(a)), (x,), (x,), has_aux=True)
    assert type(aux2) is type(aux)


# -- 3. behaviours fixed ----------------------------------------------------------------------------------
def _np(t):
    return np.asarray(t.array) if isinstance(t, fg.Tensor) else t.detach().numpy()


def test_nested_vmap_returning_the_outer_sample():
    x, y = _m(fg), fg.tensor([1.0, 2.0, 3.0, 4.0])
    out = fg.func.vmap(lambda a: fg.func.vmap(lambda b: a)(y))(x)
    assert out.shape == (2, 4, 3)
    np.testing.assert_array_equal(_np(out), np.broadcast_to(_np(x)[:, None], (2, 4, 3)))
    out2 = fg.func.vmap(lambda a: fg.func.vmap(lambda b: a * 2 + b.sum())(y))(x)
    np.testing.assert_allclose(_np(out2), 2 * np.broadcast_to(_np(x)[:, None], (2, 4, 3)) + _np(y)[None, :, None])


def test_nested_vmap_returning_the_outer_sample_matches_torch():
    torch = pytest.importorskip("torch")
    import torch.func  # noqa: F401

    def run(lib):
        y = lib.tensor([1.0, 2.0, 3.0, 4.0])
        inner = lambda a: (lib.func.vmap(lambda b: a)(y), lib.func.vmap(lambda b: a * b.sum())(y))  # noqa: E731
        return lib.func.vmap(inner)(_m(lib))

    for ours, theirs in zip(run(fg), run(torch)):
        assert tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_allclose(_np(ours), _np(theirs))


@pytest.mark.parametrize("chunk_size", [None, 1])
def test_vmap_one_tuple_out_dims_for_one_output(chunk_size):
    x = _m(fg)
    out = fg.func.vmap(lambda a: a * 2, out_dims=(1,), chunk_size=chunk_size)(x)
    assert isinstance(out, fg.Tensor) and out.shape == (3, 2)
    np.testing.assert_allclose(_np(out), 2 * _np(x).T)
    (out1,) = fg.func.vmap(lambda a: (a,), out_dims=(1,), chunk_size=chunk_size)(x)  # a 1-tuple output: as before
    assert out1.shape == (3, 2)
    with pytest.raises(ValueError, match="out_dims"):  # a 1-tuple does not broadcast over two outputs (torch neither)
        fg.func.vmap(lambda a: (a, a), out_dims=(1,), chunk_size=chunk_size)(x)


def test_vmap_one_tuple_out_dims_with_a_graph():
    w = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = fg.func.vmap(lambda a, v: a * v, in_dims=(0, None), out_dims=(1,))(_m(fg), w)  # a VmapBackward node
    assert out.shape == (3, 2)
    (g,) = fg.grad(out.sum(), [w])
    np.testing.assert_allclose(_np(g), _np(_m(fg)).sum(0))


def test_vmap_one_tuple_out_dims_matches_torch():
    torch = pytest.importorskip("torch")
    import torch.func  # noqa: F401

    for lib_out in [(lib.func.vmap(lambda a: a * 2, out_dims=(1,))(_m(lib)), lib) for lib in (fg, torch)]:
        assert tuple(lib_out[0].shape) == (3, 2)
    for lib in (fg, torch):
        with pytest.raises(ValueError):
            lib.func.vmap(lambda a: (a, a), out_dims=(1,))(_m(lib))


@pytest.mark.parametrize("returned", [None, (), [], {}])
def test_vjp_of_an_empty_output_raises_at_vjp(returned):
    calls = []
    with pytest.raises(RuntimeError, match="non-empty output"):
        calls.append(fg.func.vjp(lambda a: returned, _x(fg)))
    assert not calls


# -- 4. GradientEdge among the outputs of fg.grad ----------------------------------------------------------
def _edge_program(lib, get_edge):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    z = y.exp().sum()
    return x, y, z, get_edge(y)


def test_grad_accepts_gradient_edge_outputs():
    x, y, z, edge = _edge_program(fg, get_gradient_edge)
    (g,) = fg.grad([edge], [x], grad_outputs=[fg.tensor([1.0, 10.0])])
    np.testing.assert_allclose(_np(g), [3.0, 30.0])
    (g1,) = fg.grad(edge, x, grad_outputs=fg.tensor([1.0, 10.0]))  # a single edge, not a sequence of them
    np.testing.assert_allclose(_np(g1), [3.0, 30.0])
    (g2,) = fg.grad([edge, z], [x], grad_outputs=[fg.tensor([1.0, 10.0]), None])  # seeds meet in MulBackward0
    np.testing.assert_allclose(_np(g2), 3 * (np.array([1.0, 10.0]) + np.exp([3.0, 6.0])), rtol=1e-6)
    (g3,) = fg.grad([edge], [get_gradient_edge(x)], grad_outputs=[fg.tensor([1.0, 1.0])])  # edges on both sides
    np.testing.assert_allclose(_np(g3), [3.0, 3.0])
    (gc,) = fg.grad([edge], [x], grad_outputs=[fg.tensor([1.0, 10.0], requires_grad=True)], create_graph=True)
    assert gc.requires_grad


def test_grad_edge_outputs_need_grad_outputs_unless_a_scalar_leaf():
    x, y, z, edge = _edge_program(fg, get_gradient_edge)
    with pytest.raises(GradError, match="grad_outputs"):
        fg.grad([edge], [x])
    with pytest.raises(RuntimeError):
        fg.grad([edge], [x], grad_outputs=[fg.ones(2, 2)[0]], is_grads_batched=True)
    s = fg.tensor(2.0, requires_grad=True)
    (gs,) = fg.grad([get_gradient_edge(s)], [s])
    assert gs.item() == 1.0
    with pytest.raises(GradError, match="shape"):
        fg.grad([get_gradient_edge(x)], [x], grad_outputs=[fg.ones(3)])
    with pytest.raises(TypeError, match="GradientEdge"):
        fg.grad([z, "y"], [x])


def test_grad_edge_outputs_match_torch():
    torch = pytest.importorskip("torch")
    seeds = [1.0, 10.0]
    x, y, z, edge = _edge_program(fg, get_gradient_edge)
    tx, ty, tz, tedge = _edge_program(torch, torch.autograd.graph.get_gradient_edge)
    ours = fg.grad([edge, z], [x], grad_outputs=[fg.tensor(seeds), None])
    theirs = torch.autograd.grad([tedge, tz], [tx], grad_outputs=[torch.tensor(seeds), None])
    np.testing.assert_allclose(_np(ours[0]), _np(theirs[0]), rtol=1e-6)
    with pytest.raises(RuntimeError):  # no implicit seed for a non-scalar edge in torch either
        torch.autograd.grad([torch.autograd.graph.get_gradient_edge(tx * 3)], [tx])
    with pytest.raises(RuntimeError):
        fg.grad([get_gradient_edge(x * 3)], [x])
