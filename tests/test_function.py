"""Custom autograd Functions: ctx API, validation, double backward, once_differentiable, lifetimes."""
import gc
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
from fgraph.autograd import Function, once_differentiable
from fgraph.autograd.function import FunctionCtx


def leaf(values, dtype="float64"):
    return fg.tensor(values, dtype=dtype, requires_grad=True)


X0 = np.array([0.3, -1.2, 2.0])
Y0 = np.array([1.5, 0.4, -0.7])


# -- Functions used across tests ------------------------------------------------------------------
class MulSin(Function):
    """f(x, y) = x * y + sin(x), backward in fgraph ops."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y + fg.sin(x)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        gx = g * (y + fg.cos(x)) if ctx.needs_input_grad[0] else None
        gy = g * x if ctx.needs_input_grad[1] else None
        return gx, gy


class Exp(Function):
    """Saves its own output: double backward flows through the node again."""

    @staticmethod
    def forward(x):
        return fg.exp(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class OnceSquare(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        assert not fg.is_grad_enabled()
        return g * 2.0 * x


def _np(t):
    return np.asarray(t.array)


# -- forward/backward basics ----------------------------------------------------------------------
def test_matches_jax_grad_and_records_named_node():
    x, y = leaf(X0), leaf(Y0)
    out = MulSin.apply(x, y)
    assert out.grad_fn.name() == "MulSinBackward"
    assert type(out.grad_fn).__name__ == "MulSinBackward"
    assert [fn for fn, _ in out.grad_fn.next_functions] == [x.grad_fn or x._edge.node, y._edge.node]
    loss = (out * out).sum()
    gx, gy = fg.grad(loss, [x, y])

    def ref(a, b):
        return jnp.sum((a * b + jnp.sin(a)) ** 2)

    jx, jy = jax.grad(ref, argnums=(0, 1))(X0, Y0)
    np.testing.assert_allclose(_np(gx), jx, rtol=1e-12)
    np.testing.assert_allclose(_np(gy), jy, rtol=1e-12)


def test_needs_input_grad_and_unneeded_gradient_dropped():
    seen = {}

    class Probe(Function):
        @staticmethod
        def forward(ctx, x, y, k):
            return x * y * k

        @staticmethod
        def backward(ctx, g):
            seen["needs"] = ctx.needs_input_grad
            return g, g, None  # a gradient for y, which needs none: dropped

    x, y = leaf(X0), fg.tensor(Y0)
    (gx,) = fg.grad(Probe.apply(x, y, 2.0).sum(), [x])
    assert seen["needs"] == (True, False, False)
    np.testing.assert_array_equal(_np(gx), np.ones(3))


def test_setup_context_form_kwargs_and_defaults():
    class Scale(Function):
        @staticmethod
        def forward(x, factor=2.0, *, shift=0.0):
            return x * factor + shift

        @staticmethod
        def setup_context(ctx, inputs, output):
            assert len(inputs) == 2  # defaults are bound, as in PyTorch
            ctx.factor = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.factor, None

    x = leaf(X0)
    (g,) = fg.grad(Scale.apply(x).sum(), [x])
    np.testing.assert_array_equal(_np(g), [2.0, 2.0, 2.0])
    out = Scale.apply(x, factor=3.0, shift=1.0)
    np.testing.assert_allclose(_np(out), X0 * 3.0 + 1.0)
    np.testing.assert_array_equal(_np(fg.grad(out.sum(), [x])[0]), [3.0, 3.0, 3.0])


def test_tensor_keyword_argument_gets_a_gradient_slot():
    class Mul(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b, g * a

    a, b = leaf(X0), leaf(Y0)
    ga, gb = fg.grad(Mul.apply(a, b=b).sum(), [a, b])
    np.testing.assert_array_equal(_np(ga), Y0)
    np.testing.assert_array_equal(_np(gb), X0)


def test_double_backward_through_fg_ops_matches_jax_hessian():
    x, y = leaf(X0), leaf(Y0)
    loss = (MulSin.apply(x, y) ** 2).sum()
    gx, gy = fg.grad(loss, [x, y], create_graph=True)
    assert gx.requires_grad
    rows = [fg.grad(gx[i], [x, y], allow_unused=True) for i in range(3)]

    def ref(a, b):
        return jnp.sum((a * b + jnp.sin(a)) ** 2)

    hxx, hxy = jax.hessian(ref, argnums=(0, 1))(X0, Y0)[0]
    np.testing.assert_allclose(np.stack([_np(r[0]) for r in rows]), hxx, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.stack([_np(r[1]) for r in rows]), hxy, rtol=1e-10, atol=1e-12)


def test_saved_output_is_rewrapped_on_the_node_for_double_backward():
    x = leaf(X0)
    y = Exp.apply(x)
    assert y.grad_fn.name() == "ExpBackward"
    (saved,) = y.grad_fn.saved_tensors
    assert saved.grad_fn is y.grad_fn and saved is not y
    (g,) = fg.grad(y.sum(), [x], create_graph=True)
    (gg,) = fg.grad(g.sum(), [x])
    (ggg,) = fg.grad(fg.grad(g.sum(), [x], create_graph=True)[0].sum(), [x])
    np.testing.assert_allclose(_np(g), np.exp(X0), rtol=1e-12)
    np.testing.assert_allclose(_np(gg), np.exp(X0), rtol=1e-12)
    np.testing.assert_allclose(_np(ggg), np.exp(X0), rtol=1e-12)


# -- once_differentiable, reentrant backward -------------------------------------------------------
def test_once_differentiable_first_order_and_error_on_second():
    x = leaf(X0)
    (g,) = fg.grad(OnceSquare.apply(x).sum(), [x])
    np.testing.assert_allclose(_np(g), 2 * X0)
    assert not g.requires_grad
    (g,) = fg.grad(OnceSquare.apply(x).sum(), [x], create_graph=True)
    np.testing.assert_allclose(_np(g), 2 * X0)
    assert g.requires_grad
    with pytest.raises(fg.GradError, match="trying to differentiate twice a function that was marked with "
                                          "@once_differentiable") as info:
        fg.grad(g.sum(), [x])
    assert "OnceSquareBackward" in str(info.value)


def test_reentrant_backward_calls_grad():
    class Recompute(Function):
        """Backward recomputes tanh(x) * x with grad on and differentiates it with fg.grad."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return fg.tanh(x) * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with fg.enable_grad():
                xd = x.detach().requires_grad_()
                (gx,) = fg.grad(fg.tanh(xd) * xd, [xd], g)
            return gx

    x = leaf(X0)
    (g,) = fg.grad((Recompute.apply(x) * 3.0).sum(), [x])
    expected = jax.grad(lambda a: jnp.sum(3.0 * jnp.tanh(a) * a))(X0)
    np.testing.assert_allclose(_np(g), expected, rtol=1e-12)
    assert fg.is_grad_enabled()


# -- outputs: non-differentiable, materialization, inputs as outputs --------------------------------
class SortWithIndex(Function):
    @staticmethod
    def forward(ctx, x):
        order = jnp.argsort(x.array)
        idx = fg.tensor(order)
        ctx.mark_non_differentiable(idx)
        ctx.order = order
        return fg.tensor(x.array[order]), idx

    @staticmethod
    def backward(ctx, g_sorted, g_idx):
        ctx.seen = (g_sorted, g_idx)
        return fg.tensor(jnp.zeros_like(g_sorted.array).at[ctx.order].set(g_sorted.array))


def test_mark_non_differentiable_and_materialized_zeros():
    x = leaf(X0)
    values, idx = SortWithIndex.apply(x)
    assert values.grad_fn.name() == "SortWithIndexBackward"
    assert not idx.requires_grad and idx.grad_fn is None
    weights = fg.tensor([1.0, 10.0, 100.0], dtype="float64")
    (g,) = fg.grad((values * weights).sum(), [x])
    order = np.argsort(X0)
    expected = np.zeros(3)
    expected[order] = [1.0, 10.0, 100.0]
    np.testing.assert_array_equal(_np(g), expected)
    ctx = values.grad_fn.ctx
    assert ctx.seen[1] is not None and np.all(_np(ctx.seen[1]) == 0)  # materialized zeros


def test_set_materialize_grads_false_sees_none():
    seen = []

    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2.0, x * 3.0, "meta"

        @staticmethod
        def backward(ctx, g1, g2, g3):
            seen.append((g1, g2, g3))
            total = None
            if g1 is not None:
                total = g1 * 2.0
            if g2 is not None:
                total = g2 * 3.0 if total is None else total + g2 * 3.0
            return total

    x = leaf(X0)
    a, b, meta = Two.apply(x)
    assert meta == "meta"
    (g,) = fg.grad(a.sum(), [x])
    np.testing.assert_array_equal(_np(g), [2.0, 2.0, 2.0])
    assert seen[-1][1] is None and seen[-1][2] is None

    class TwoMaterialized(Two):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0, x * 3.0, "meta"

    a, b, _ = TwoMaterialized.apply(x)
    fg.grad(b.sum(), [x])
    assert np.all(_np(seen[-1][0]) == 0) and seen[-1][2] is None  # non-tensor outputs stay None


def test_non_tensor_inputs_take_none_slots():
    class Power(Function):
        @staticmethod
        def forward(ctx, x, n, label):
            ctx.save_for_backward(x)
            ctx.n = n
            return x ** n

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * ctx.n * x ** (ctx.n - 1), None, None

    x = leaf(X0)
    out = Power.apply(x, 3, "cube")
    assert out.grad_fn.next_functions[1:] == ((None, 0), (None, 0))
    (g,) = fg.grad(out.sum(), [x])
    np.testing.assert_allclose(_np(g), 3 * X0 ** 2, rtol=1e-12)

    class BadPower(Power):
        @staticmethod
        def backward(ctx, g):
            return g, g, None

    with pytest.raises(fg.GradError, match=r"BadPowerBackward returned a gradient different than None at position 2"):
        fg.grad(BadPower.apply(x, 3, "cube").sum(), [x])


def test_output_that_is_an_input_is_a_new_record_on_the_node():
    class Tripled(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x, y * 2.0  # returns its input unchanged

        @staticmethod
        def backward(ctx, gx, gy):
            return gx * 3.0, gy * 2.0

    x, y = leaf(X0), leaf(Y0)
    h = x * 1.0
    out, other = Tripled.apply(h, y)
    assert out is not h and out.grad_fn.name() == "TripledBackward" and out.output_nr == 0
    assert h.grad_fn.name() == "MulBackward0"  # the input record is untouched
    gx, gy = fg.grad((out + other).sum(), [x, y])
    np.testing.assert_array_equal(_np(gx), [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(_np(gy), [2.0, 2.0, 2.0])
    with fg.no_grad():
        plain, _ = Tripled.apply(x, y)
    assert plain is not x and not plain.requires_grad


# -- validation errors ------------------------------------------------------------------------------
def test_wrong_number_of_gradients_names_the_function():
    class TooMany(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return g, g

    x = leaf(X0)
    with pytest.raises(fg.GradError, match=r"TooManyBackward returned an incorrect number of gradients "
                                          r"\(expected 1, got 2\)"):
        fg.grad(TooMany.apply(x).sum(), [x])

    class TrailingNones(TooMany):
        @staticmethod
        def backward(ctx, g):
            return g * 2.0, None, None

    np.testing.assert_array_equal(_np(fg.grad(TrailingNones.apply(x).sum(), [x])[0]), [2.0] * 3)


def test_wrong_gradient_shape_names_function_index_and_shapes():
    class BadShape(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g, fg.ones(4, dtype="float64")

    x, y = leaf(X0), leaf(Y0)
    with pytest.raises(fg.GradError, match=r"BadShapeBackward returned an invalid gradient at index 1 - "
                                          r"got \[4\] but expected shape compatible with \[3\]"):
        fg.grad(BadShape.apply(x, y).sum(), [x, y])

    class Broadcasting(Function):
        @staticmethod
        def forward(ctx, x, b):
            return x + b

        @staticmethod
        def backward(ctx, g):
            return g, g  # g has x's shape (2, 3); b is (3,): summed to it

    m, b = leaf(np.ones((2, 3))), leaf(Y0, dtype="float32")
    gm, gb = fg.grad(Broadcasting.apply(m, b).sum(), [m, b])
    assert gb.shape == (3,) and gb.dtype == np.float32
    np.testing.assert_array_equal(_np(gb), [2.0, 2.0, 2.0])


def test_backward_returning_a_non_tensor_and_forward_returning_a_jax_array():
    class ReturnsArray(Function):
        @staticmethod
        def forward(ctx, x):
            return x.array * 2

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match="ReturnsArray.forward returned a jax.Array"):
        ReturnsArray.apply(leaf(X0))

    class ReturnsNumber(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return 2.0

    x = leaf(X0)
    with pytest.raises(TypeError, match="ReturnsNumberBackward: backward must return a Tensor, None, or a tuple"):
        fg.grad(ReturnsNumber.apply(x).sum(), [x])

    class ReturnsNumberInTuple(ReturnsNumber):
        @staticmethod
        def backward(ctx, g):
            return (2.0,)

    with pytest.raises(TypeError, match="ReturnsNumberInTupleBackward returned a float as the gradient at index 0"):
        fg.grad(ReturnsNumberInTuple.apply(x).sum(), [x])


# -- recording rules, lifetimes -----------------------------------------------------------------------
def test_no_graph_without_requires_grad_or_under_no_grad():
    x = fg.tensor(X0)
    assert MulSin.apply(x, x).grad_fn is None
    xl = leaf(X0)
    with fg.no_grad():
        out = MulSin.apply(xl, xl)
    assert out.grad_fn is None and not out.requires_grad
    ctx_holder = {}

    class Spy(Function):
        @staticmethod
        def forward(ctx, x):
            ctx_holder["ctx"] = ctx
            ctx.save_for_backward(x)
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return g

    with fg.no_grad():
        Spy.apply(xl)
    assert ctx_holder["ctx"].needs_input_grad == (False,)
    assert isinstance(ctx_holder["ctx"], FunctionCtx)


def test_no_reference_cycles_and_saved_tensors_die_with_graph():
    x = leaf(X0)
    y = Exp.apply(MulSin.apply(x, x))
    node = y.grad_fn
    probe_node = weakref.ref(node)
    probe_inner = weakref.ref(node.next_functions[0][0])
    ctx = node.ctx
    assert ctx.saved_tensors[0].grad_fn is node
    fg.grad(y.sum(), [x], create_graph=True)
    del y, node
    gc.disable()
    try:
        assert probe_node() is None, "the Function node outlived its outputs (reference cycle?)"
        assert probe_inner() is None
    finally:
        gc.enable()
    with pytest.raises(RuntimeError, match="no longer exists"):
        ctx.saved_tensors


def test_repeated_backward_and_batched_grads():
    x, y = leaf(X0), leaf(Y0)
    out = MulSin.apply(x, y)
    expected = Y0 + np.cos(X0)
    for _ in range(3):  # the engine compiles repeated OpNode graphs; Function nodes stay eager
        (g,) = fg.grad((out * 1.0).sum(), [x])
        np.testing.assert_allclose(_np(g), expected, rtol=1e-12)
    seeds = fg.tensor(np.eye(3), dtype="float64")
    (jac,) = fg.grad(out, [x], seeds, is_grads_batched=True)
    np.testing.assert_allclose(_np(jac), np.diag(expected), rtol=1e-12)


# -- PyTorch as an oracle ------------------------------------------------------------------------------
def test_same_program_as_torch_autograd_function():
    torch = pytest.importorskip("torch")

    class TorchMulSin(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y + torch.sin(x)

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * (y + torch.cos(x)), g * x

    class TorchExp(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return torch.exp(x)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output)

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    tx = torch.tensor(X0, requires_grad=True)
    ty = torch.tensor(Y0, requires_grad=True)
    tout = TorchExp.apply(TorchMulSin.apply(tx, ty) * 0.5)
    tgx, tgy = torch.autograd.grad(tout.sum(), [tx, ty], create_graph=True)
    thx, thy = torch.autograd.grad((tgx * tgy).sum(), [tx, ty])

    x, y = leaf(X0), leaf(Y0)
    out = Exp.apply(MulSin.apply(x, y) * 0.5)
    assert (out.grad_fn.name(), tout.grad_fn.name()) == ("ExpBackward", "TorchExpBackward")  # same naming rule
    gx, gy = fg.grad(out.sum(), [x, y], create_graph=True)
    hx, hy = fg.grad((gx * gy).sum(), [x, y])
    for ours, theirs in ((gx, tgx), (gy, tgy), (hx, thx), (hy, thy)):
        np.testing.assert_allclose(_np(ours), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
