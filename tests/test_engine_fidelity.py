"""PyTorch fidelity of the engine and its toolbox (issue 16, and hook checks / grad-mode decorators of 15).

Each test states fgraph's documented behaviour as literal expectations, so it fails
without torch when fgraph is wrong; where torch is installed the same program runs
on torch and must give the same hook order, counts, values and errors.
"""
from __future__ import annotations

import numpy as np
import pytest

import fgraph as fg
from fgraph.autograd.graph import (
    disable_saved_tensors_hooks,
    get_gradient_edge,
    register_multi_grad_hook,
    saved_tensors_hooks,
)
from fgraph.autograd.gradcheck import GradcheckError
from fgraph.errors import GradError

try:
    import torch
except ImportError:  # the library never needs torch; the comparisons are skipped
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is the optional oracle")


def _np(t):
    return np.asarray(t.array if isinstance(t, fg.Tensor) else t.detach().numpy())


# -- 1. hooks on an AccumulateGrad node ------------------------------------------------------------
def _acc_hook_order(lib, mode):
    log = []
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    acc = (a * 1.0).grad_fn.next_functions[0][0]
    acc.register_prehook(lambda g: log.append(("pre", _np(g[0]).tolist())))
    acc.register_hook(lambda gi, go: log.append(("post", len(gi), _np(go[0]).tolist())))
    a.register_hook(lambda g: log.append(("tensor", _np(g).tolist())))
    if lib is fg:
        a.register_post_accumulate_grad_hook(lambda leaf, g: log.append(("post_accumulate", _np(g).tolist())))
    else:
        a.register_post_accumulate_grad_hook(lambda t: log.append(("post_accumulate", _np(t.grad).tolist())))
    loss = (a * 2.0).sum()
    if mode == "backward":
        loss.backward()
    elif mode == "backward_inputs":
        loss.backward(inputs=[a])
    else:
        lib.autograd.grad(loss, [a])
    return log


@pytest.mark.parametrize("mode", ["backward", "backward_inputs", "grad"])
def test_accumulate_grad_node_hooks_run_in_torch_order(mode):
    got = _acc_hook_order(fg, mode)
    if mode == "grad":  # grad() captures at the leaf's edge and never runs AccumulateGrad
        expected = [("tensor", [2.0, 2.0])]
    else:
        expected = [("tensor", [2.0, 2.0]), ("pre", [2.0, 2.0]), ("post_accumulate", [2.0, 2.0]),
                    ("post", 0, [2.0, 2.0])]
    assert got == expected
    if torch is not None:
        assert _acc_hook_order(torch, mode) == expected


# -- 2. a single root that cannot reach the inputs is pruned ---------------------------------------
def _pruned_root(lib):
    ran = []

    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            ran.append(True)
            return g

    x = lib.tensor(1.0, requires_grad=True)
    other = lib.tensor(2.0, requires_grad=True)
    res = lib.autograd.grad(F.apply(x * 2.0), [other], allow_unused=True)
    return res, ran


def test_single_root_that_reaches_no_input_does_not_run():
    res, ran = _pruned_root(fg)
    assert res == (None,) and ran == []
    if torch is not None:
        t_res, t_ran = _pruned_root(torch)
        assert t_res == (None,) and t_ran == []


# -- 3, 4, 5. saved-tensor hooks ---------------------------------------------------------------------
def test_pack_hook_running_ops_does_not_recurse_and_runs_without_grad():
    seen = []

    def pack(t):
        seen.append(fg.is_grad_enabled())
        return 2 * t

    x = fg.tensor([1.0, 3.0], requires_grad=True)
    with saved_tensors_hooks(pack, lambda t: t / 2):
        y = (x * x * x).sum()
    assert seen == [False] * 4  # x*x saves (x, x); (x*x)*x saves (x*x, x)
    np.testing.assert_allclose(_np(fg.grad(y, [x])[0]), [3.0, 27.0])
    (g,) = fg.grad(y, [x], create_graph=True)
    np.testing.assert_allclose(_np(fg.grad(g.sum(), [x])[0]), [6.0, 18.0])
    if torch is not None:
        t_seen = []

        def t_pack(t):
            t_seen.append(torch.is_grad_enabled())
            return 2 * t

        tx = torch.tensor([1.0, 3.0], requires_grad=True)
        with torch.autograd.graph.saved_tensors_hooks(t_pack, lambda t: t / 2):
            (tx * tx * tx).sum()
        assert t_seen == seen


SAVE_PROGRAMS = {  # name -> (program, number of tensors PyTorch saves)
    "mul_by_constant_tensor": (lambda lib, x: x * lib.tensor(3.0), 1),
    "mul_by_python_scalar": (lambda lib, x: x * 3, 0),
    "square_by_mul": (lambda lib, x: x * x, 2),
    "div_by_constant": (lambda lib, x: x / lib.tensor(3.0), 1),
    "constant_div_by_x": (lambda lib, x: lib.tensor(3.0) / x, 2),
    "exp": (lambda lib, x: lib.exp(x), 1),
    "pow_tensor_exponent": (lambda lib, x: x ** lib.tensor(2.0), 3),
}


@pytest.mark.parametrize("name", sorted(SAVE_PROGRAMS))
def test_ops_save_only_what_their_rule_needs(name):
    program, expected = SAVE_PROGRAMS[name]
    packed = []
    x = fg.tensor(1.5, requires_grad=True)
    with saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        y = program(fg, x)
    assert len(packed) == expected
    # The gradient is still right with fewer saved tensors (finite differences in float64).
    (g,) = fg.grad(y, [x])
    eps = 1e-6
    fd = (_np(program(fg, fg.tensor(1.5 + eps, dtype="float64"))) -
          _np(program(fg, fg.tensor(1.5 - eps, dtype="float64")))) / (2 * eps)
    np.testing.assert_allclose(_np(g), fd, rtol=1e-4)
    if torch is not None:
        t_packed = []
        tx = torch.tensor(1.5, requires_grad=True)
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t_packed.append(t) or t, lambda t: t):
            program(torch, tx)
        assert len(t_packed) == expected


def test_unpack_hook_runs_once_per_saved_tensor_per_backward():
    unpacked = []
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: unpacked.append(t.shape) or t):
        y = (fg.exp(x) * x).sum()  # exp saves its result, mul saves both factors: 3 tensors
    for _ in range(3):  # the third pass is the one the fused engine may compile
        unpacked.clear()
        fg.grad(y, [x])
        assert len(unpacked) == 3
    if torch is not None:
        t_unpacked = []
        tx = torch.tensor([1.0, 2.0], requires_grad=True)
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t_unpacked.append(t.shape) or t):
            ty = (torch.exp(tx) * tx).sum()
        torch.autograd.grad(ty, [tx])
        assert len(t_unpacked) == 3


# -- 6. reentrant backward 2,000 deep ------------------------------------------------------------------
def _deep_reentrant(lib, depth):
    class DeepReentrant(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            with lib.enable_grad():
                ctx.x = x.detach().requires_grad_() - 1
            return ctx.x.detach()

        @staticmethod
        def backward(ctx, g):
            if ctx.x.item() < 0:
                return g
            with lib.enable_grad():
                DeepReentrant.apply(ctx.x).sum().backward()
            return g

    v = lib.tensor(float(depth), requires_grad=True)
    out = DeepReentrant.apply(v).sum()
    if lib is fg:
        return fg.backward(out)[v].item()
    out.backward()
    return v.grad.item()


def test_reentrant_backward_2000_deep():
    # PyTorch's test_autograd runs this 2,000 deep; each nested pass past
    # MAX_REENTRANT_DEPTH_PER_THREAD moves to a fresh thread, as PyTorch's engine does.
    assert _deep_reentrant(fg, 2000) == 1.0
    if torch is not None:
        assert _deep_reentrant(torch, 2000) == 1.0


# -- 7. multi-grad hook after a failed pass ------------------------------------------------------------
def test_multi_grad_hook_fires_after_a_failed_pass():
    a = fg.tensor(1.0, requires_grad=True)
    b = fg.tensor(2.0, requires_grad=True)
    fired = []
    register_multi_grad_hook((a, b), lambda gs: fired.append([None if g is None else g.item() for g in gs]))

    def boom(g):
        raise ValueError("boom")

    c = b * 1.0
    handle = c.register_hook(boom)
    with pytest.raises(ValueError, match="boom"):
        fg.backward(a * 3.0 + c * 4.0)
    handle.remove()
    assert fired == []
    for _ in range(20):  # ids of freed per-pass objects get reused; state must not be keyed by them
        fg.backward(a * 3.0 + b * 4.0)
    assert fired == [[3.0, 4.0]] * 20


def test_multi_grad_hook_any_and_all_match_torch():
    def run(lib):
        la = lib.tensor(1.0, requires_grad=True)
        lb = lib.tensor(2.0, requires_grad=True)
        a, b = la * 1.0, lb * 1.0  # torch's mode="all" does not take leaves under autograd.grad
        seen = []
        h1 = lib.autograd.graph.register_multi_grad_hook(
            (a, b), lambda gs: seen.append(("all", [None if g is None else g.item() for g in gs])))
        h2 = lib.autograd.graph.register_multi_grad_hook(
            (a, b), lambda g: seen.append(("any", g.item())), mode="any")
        lib.autograd.grad(a * 3.0 + b * 4.0, [la, lb], retain_graph=True)
        lib.autograd.grad(a * 5.0, [la])
        h1.remove()
        h2.remove()
        return seen

    got = run(fg)
    assert sorted(got[:2]) == [("all", [3.0, 4.0]), ("any", 4.0)]
    assert sorted(got[2:]) == [("all", [5.0, None]), ("any", 5.0)]
    if torch is not None:
        assert sorted(run(torch)[:2]) == sorted(got[:2]) and sorted(run(torch)[2:]) == sorted(got[2:])


# -- 8. grad-mode decorators ----------------------------------------------------------------------------
def _decorated(lib):
    results = {}

    @lib.no_grad
    def bare_no_grad():
        return lib.is_grad_enabled()

    @lib.enable_grad
    def bare_enable_grad():
        return lib.is_grad_enabled()

    @lib.inference_mode
    def bare_inference():
        return lib.is_inference_mode_enabled()

    @lib.no_grad()
    def gen():
        request = yield lib.is_grad_enabled()
        results["inside_after_send"] = lib.is_grad_enabled()
        yield request
        return "done"

    results["bare_no_grad"] = bare_no_grad()
    with lib.no_grad():
        results["bare_enable_grad"] = bare_enable_grad()
    results["bare_inference"] = bare_inference()
    it = gen()
    results["first_step"] = next(it)
    results["between_steps"] = lib.is_grad_enabled()
    results["sent"] = it.send(7)
    with pytest.raises(StopIteration) as stop:
        next(it)
    results["return"] = stop.value.value
    results["after"] = lib.is_grad_enabled()
    return results


def test_grad_mode_decorators_bare_and_on_generators():
    expected = {"bare_no_grad": False, "bare_enable_grad": True, "bare_inference": True, "first_step": False,
                "between_steps": True, "inside_after_send": False, "sent": 7, "return": "done", "after": True}
    assert _decorated(fg) == expected
    if torch is not None:
        assert _decorated(torch) == expected


# -- 9, 10. materialize_grads and GradientEdge inputs ---------------------------------------------------
def test_materialized_zeros_require_grad_under_create_graph():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    unused = fg.tensor([1.0, 2.0], requires_grad=True)
    g = fg.grad((x * x).sum(), [x, unused], create_graph=True, materialize_grads=True)
    assert [t.requires_grad for t in g] == [True, True]
    assert _np(g[1]).tolist() == [0.0, 0.0]
    (gg,) = fg.grad(g[1].sum(), [unused], allow_unused=True)  # differentiable again (to zero)
    assert gg is None
    g = fg.grad((x * x).sum(), [x, unused], materialize_grads=True)
    assert [t.requires_grad for t in g] == [False, False]
    if torch is not None:
        tx = torch.tensor([1.0, 2.0], requires_grad=True)
        tu = torch.tensor([1.0, 2.0], requires_grad=True)
        tg = torch.autograd.grad((tx * tx).sum(), [tx, tu], create_graph=True, materialize_grads=True)
        assert [t.requires_grad for t in tg] == [True, True]


def test_gradient_edges_as_inputs():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    z = (y * y).sum()
    (gy,) = fg.grad(z, get_gradient_edge(y))
    gy2, gx = fg.grad(z, [get_gradient_edge(y), get_gradient_edge(x)])
    assert _np(gy).tolist() == [4.0, 8.0] and _np(gy2).tolist() == [4.0, 8.0] and _np(gx).tolist() == [8.0, 16.0]
    grads = fg.backward((x * 3.0).sum(), inputs=[get_gradient_edge(x)])
    assert _np(grads[x]).tolist() == [3.0, 3.0]
    with pytest.raises(GradError, match="materialize_grads cannot be used when the given input is a GradientEdge"):
        fg.grad(z, [get_gradient_edge(y)], materialize_grads=True)
    if torch is not None:
        tx = torch.tensor([1.0, 2.0], requires_grad=True)
        ty = tx * 2.0
        (tgy,) = torch.autograd.grad((ty * ty).sum(), torch.autograd.graph.get_gradient_edge(ty))
        assert tgy.tolist() == [4.0, 8.0]


# -- 11. pow with a tensor exponent at 0 ** 0 -------------------------------------------------------------
def test_pow_tensor_exponent_gradient_at_zero_zero():
    a = fg.tensor([0.0, 0.0, 1.0, 2.0], requires_grad=True)
    b = fg.tensor([0.0, 1.0, 0.0, 3.0], requires_grad=True)
    ga, gb = fg.grad((a ** b).sum(), [a, b])
    expected_a = [0.0, 1.0, 0.0, 12.0]
    expected_b = [0.0, 0.0, 0.0, 8.0 * np.log(2.0)]
    np.testing.assert_allclose(_np(ga), expected_a, rtol=1e-6)
    np.testing.assert_allclose(_np(gb), expected_b, rtol=1e-6)
    (ga2,) = fg.grad((a ** b).sum(), [a], create_graph=True)
    (gaa,) = fg.grad(ga2.sum(), [a])
    assert np.isfinite(_np(gaa)).all()  # the masked branch stays finite, so no nan at second order
    np.testing.assert_allclose(_np(gaa)[3], 12.0, rtol=1e-6)
    if torch is not None:
        ta = torch.tensor([0.0, 0.0, 1.0, 2.0], requires_grad=True)
        tb = torch.tensor([0.0, 1.0, 0.0, 3.0], requires_grad=True)
        tga, tgb = torch.autograd.grad((ta ** tb).sum(), [ta, tb])
        np.testing.assert_allclose(_np(ga), tga.numpy(), rtol=1e-6)
        np.testing.assert_allclose(_np(gb), tgb.numpy(), rtol=1e-6)


# -- 12 and issue 15 (a): hook results are shape- and dtype-checked ---------------------------------------
def _hook_cases(lib):
    """(name, thunk) pairs; each thunk runs a backward whose hook returns a bad gradient."""
    def leaf_long():
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        x.register_hook(lambda g: g.long())
        return lib.autograd.grad((x * 2.0).sum(), [x])

    def leaf_shape():
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        x.register_hook(lambda g: g[:1])
        return lib.autograd.grad((x * 2.0).sum(), [x])

    def nonleaf_double():
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2.0
        y.register_hook(lambda g: g.double())
        return lib.autograd.grad(y.sum(), [x])

    def post_hook_7():
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = lib.exp(x)
        y.grad_fn.register_hook(lambda gi, go: (lib.ones(7),))
        return lib.autograd.grad(y.sum(), [x])

    def post_hook_0d():
        x = lib.ones(3, 2, requires_grad=True)
        y = lib.exp(x)
        y.grad_fn.register_hook(lambda gi, go: (lib.tensor(1.0),))
        return lib.autograd.grad(y.sum(), [x])

    def post_hook_long():
        x = lib.ones(3, 2, requires_grad=True)
        y = lib.exp(x)
        y.grad_fn.register_hook(lambda gi, go: (gi[0].long(),))
        return lib.autograd.grad(y.sum(), [x])

    def pre_hook_0d():
        x = lib.ones(3, 2, requires_grad=True)
        y = lib.exp(x)
        y.grad_fn.register_prehook(lambda go: (lib.tensor(1.0),))
        return lib.autograd.grad(y.sum(), [x])

    def post_hook_count():
        x = lib.ones(3, requires_grad=True)
        y = x * lib.ones(3, requires_grad=True)
        y.grad_fn.register_hook(lambda gi, go: (gi[0],))
        return lib.autograd.grad(y.sum(), [x])

    return {"leaf_long": (leaf_long, "changed the type of value"),
            "leaf_shape": (leaf_shape, "changed the size of value"),
            "nonleaf_double": (nonleaf_double, "changed the type of value"),
            "post_hook_7": (post_hook_7, "changed the size of value"),
            "post_hook_0d": (post_hook_0d, "changed the size of value"),
            "post_hook_long": (post_hook_long, "changed the type of value"),
            "pre_hook_0d": (pre_hook_0d, "changed the size of value"),
            "post_hook_count": (post_hook_count, "incorrect number of values")}


@pytest.mark.parametrize("case", sorted(_hook_cases(fg)))
def test_hook_replacements_are_checked(case):
    thunk, message = _hook_cases(fg)[case]
    with pytest.raises(RuntimeError, match=message) as info:
        thunk()
    assert "'<lambda>'" in str(info.value)  # the error names the hook
    if torch is not None:
        t_thunk, _ = _hook_cases(torch)[case]
        with pytest.raises(RuntimeError, match=message):
            t_thunk()


def test_module_full_backward_hook_replacement_is_checked():
    lin = fg.nn.Linear(2, 2)

    def wrong_dtype(module, grad_input, grad_output):
        return (grad_input[0].to(fg.float64),)

    lin.register_full_backward_hook(wrong_dtype)
    x = fg.ones(3, 2, requires_grad=True)
    with pytest.raises(GradError, match="'wrong_dtype'.*changed the type of value"):
        fg.grad(lin(x).sum(), [x])


# -- 13. gradcheck: perturbed outputs keep their shape ------------------------------------------------------
def test_gradcheck_refuses_outputs_that_change_shape_when_perturbed():
    x = fg.tensor([1.0, 2.0], dtype="float64", requires_grad=True)

    def branching(a):
        return a * 2.0 if a.array[0] == 1.0 else (a * 2.0).sum()

    for fast in (False, True):
        with pytest.raises(GradcheckError, match="same shape when input 0 is perturbed"):
            fg.autograd.gradcheck(branching, (x,), fast_mode=fast)
    assert fg.autograd.gradcheck(lambda a: a * 2.0, (x,))


# -- 14. a tensor hook on an unreached sibling output sees None ----------------------------------------------
def _sibling_hooks(lib):
    calls = []
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    a, b = (x * lib.ones(2)).unbind()
    a.register_hook(lambda g: calls.append(("a", None if g is None else g.item())))
    b.register_hook(lambda g: calls.append(("b", None if g is None else g.item())))
    lib.autograd.grad(b, [x])
    return calls


def test_tensor_hook_on_unreached_sibling_output_sees_none():
    expected = [("a", None), ("b", 1.0)]
    assert _sibling_hooks(fg) == expected
    if torch is not None:
        assert _sibling_hooks(torch) == expected


# -- 15. misuse that is reported -------------------------------------------------------------------------------
def test_post_accumulate_hook_returning_a_value_is_an_error():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    x.register_post_accumulate_grad_hook(lambda leaf, g: g * 2)
    with pytest.raises(GradError, match="should return None"):
        fg.backward((x * 2.0).sum())
    if torch is not None:
        tx = torch.tensor([1.0, 2.0], requires_grad=True)
        tx.register_post_accumulate_grad_hook(lambda t: t * 2)
        with pytest.raises(RuntimeError, match="should return None"):
            (tx * 2.0).sum().backward()


def _both_backward_and_vjp(lib):
    class G(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return g

        @staticmethod
        def vjp(ctx, g):
            return g

    x = lib.ones(1, requires_grad=True)
    G.apply(x).sum().backward()


def test_function_with_both_backward_and_vjp_is_an_error():
    with pytest.raises(RuntimeError, match="both 'backward' and 'vjp'"):
        _both_backward_and_vjp(fg)
    if torch is not None:
        with pytest.raises(RuntimeError, match="both 'backward' and 'vjp'"):
            _both_backward_and_vjp(torch)


@pytest.mark.parametrize("lib_name", ["fgraph", pytest.param(
    "torch", marks=pytest.mark.skipif(torch is None, reason="torch is the optional oracle"))])
def test_disable_saved_tensors_hooks_refuses_hooks(lib_name):
    graph = fg.autograd.graph if lib_name == "fgraph" else torch.autograd.graph
    with graph.disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="no hooks here"):
            with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        with pytest.raises(RuntimeError, match="no hooks here"):
            with graph.disable_saved_tensors_hooks("no hooks here"):
                pass
    with graph.saved_tensors_hooks(lambda t: t, lambda t: t):  # usable again once the block ends
        pass


# -- 16. checkpoint recompute keeps inputs that need no grad -------------------------------------------------
def _checkpoint_identity(lib, checkpoint):
    c = lib.tensor([1.0, 2.0, 3.0])
    seen = []

    def block(a, const):
        seen.append(const)
        return a * const

    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = checkpoint(block, x, c, use_reentrant=False).sum()
    if lib is fg:
        grad = fg.backward(out)[x]
    else:
        out.backward()
        grad = x.grad
    return [s is c for s in seen], _np(grad).tolist()


def test_checkpoint_recompute_keeps_identity_of_inputs_without_grad():
    expected = ([True, True], [1.0, 2.0, 3.0])
    assert _checkpoint_identity(fg, fg.autograd.checkpoint) == expected
    if torch is not None:
        from torch.utils.checkpoint import checkpoint as torch_checkpoint

        assert _checkpoint_identity(torch, torch_checkpoint) == expected
