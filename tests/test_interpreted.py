"""Fresh structures' backward passes run by the shared interpreter program: node-by-node gradients, one dispatch.

Every scenario runs a pass node by node (``interpreted.set_enabled(False)``) and through the interpreter, on
the same graph, and compares: the same rule kernels and the same order of sums give the same gradients.
"""
import numpy as np
import pytest

import fgraph as fg
from fgraph.autograd import fusion, interpreted

pytestmark = pytest.mark.eager_dispatch


@pytest.fixture(autouse=True)
def fresh_interpreter():
    """Empty caches, compiles in the foreground (a program is ready when the pass that asks for it returns), and no
    structure's own fused program (its rent never paid): every pass here is node by node or interpreted."""
    fusion.wait_for_compiles()
    fusion.clear_cache()
    fusion.set_background(False)
    rent = fusion.stats()["compile_rent"]
    fusion.set_compile_rent(1e9)
    try:
        yield
    finally:
        fusion.set_compile_rent(rent)
        fusion.set_background(True)
        interpreted.set_enabled(True)
        fusion.clear_cache()


def _runs() -> int:
    return interpreted.stats()["runs"]


def _both(build, wrt_names=None, backward=False):
    """``build(leaves) -> loss`` differentiated node by node, then interpreted (after a warm-up that compiles the
    program); returns both results and how many passes the interpreter ran."""
    rng = np.random.default_rng(0)
    data = {"x": rng.standard_normal(5), "c": rng.standard_normal(5), "m": rng.standard_normal((3, 5)),
            "b": rng.standard_normal(3)}

    def once():
        leaves = {k: fg.tensor(v, requires_grad=True) for k, v in data.items()}
        loss = build(**leaves)
        wrt = [leaves[k] for k in (wrt_names or sorted(leaves))]
        if backward:
            grads = loss.backward()
            return [grads[t].numpy() if t in grads else None for t in wrt]
        return [None if g is None else g.numpy() for g in fg.grad(loss, wrt, allow_unused=True)]

    interpreted.set_enabled(False)
    expected = once()
    interpreted.set_enabled(True)
    for _ in range(interpreted.COMPILE_AFTER):
        once()  # the second node-by-node pass compiles the program of its kinds
    before = _runs()
    got = once()
    return expected, got, _runs() - before


def _assert_same(expected, got):
    for e, g in zip(expected, got):
        if e is None:
            assert g is None
        else:
            np.testing.assert_allclose(g, e, rtol=1e-13, atol=1e-15)


def test_a_chain_with_fan_in_runs_as_one_interpreted_pass_with_node_by_node_gradients():
    def build(x, c, m, b):
        h = fg.sin(x) * c + x
        h = fg.tanh(h) * h
        return (m @ h + b).sum() + (h * c).sum()

    expected, got, runs = _both(build)
    assert runs == 1
    _assert_same(expected, got)


def test_numbers_saved_by_the_rules_are_baked_in_and_a_new_value_writes_a_new_tape():
    def build(scale):
        def loss(x, c, m, b):
            return (fg.exp(x * scale) * c).sum() + (x ** 3).sum()
        return loss

    expected, got, runs = _both(build(0.5))
    assert runs == 1
    _assert_same(expected, got)
    expected, got, runs = _both(build(-2.0))  # same structure, another saved number
    assert runs == 1
    _assert_same(expected, got)


def test_backward_accumulates_into_leaves_used_many_times():
    def build(x, c, m, b):
        return (x * x * c + fg.sin(x) * x).sum() + (m * x).sum() + b.sum()

    expected, got, runs = _both(build, backward=True)
    assert runs == 1
    _assert_same(expected, got)


def test_a_subset_of_inputs_prunes_the_rest_and_an_unused_input_gets_none():
    def build(x, c, m, b):
        return (fg.tanh(x) * c).sum() + (m.exp() * 2.0).sum()

    expected, got, runs = _both(build, wrt_names=["c", "b"])
    assert runs == 1
    assert got[1] is None
    _assert_same(expected, got)


def test_gradients_of_intermediate_values_are_captured():
    seen = {}

    def build(x, c, m, b):
        h = fg.sin(x) * c
        seen["h"] = h
        return (fg.tanh(h) * h).sum()

    interpreted.set_enabled(True)
    for _ in range(3):
        leaves = [fg.tensor(np.linspace(-1, 1, 5), requires_grad=True), fg.tensor(np.ones(5), requires_grad=True)]
        loss = build(*leaves, None, None)
        before = _runs()
        gh, gx = fg.grad(loss, [seen["h"], leaves[0]])
    assert _runs() - before == 1
    h = np.sin(np.linspace(-1, 1, 5))
    t = np.tanh(h)
    np.testing.assert_allclose(gh.numpy(), (1 - t * t) * h + t, rtol=1e-12)
    np.testing.assert_allclose(gx.numpy(), gh.numpy() * np.cos(np.linspace(-1, 1, 5)), rtol=1e-12)


def test_a_multi_output_node_with_one_output_unused_gets_a_none_gradient_in():
    def build(x, c, m, b):
        first, second = fg.split(x * c, [2, 3])
        return fg.sin(first).sum() + m.sum()

    expected, got, runs = _both(build)
    assert runs == 1
    _assert_same(expected, got)


def test_a_new_arrangement_of_known_kinds_is_interpreted_from_its_first_pass():
    x = fg.tensor(np.linspace(-1, 1, 7), requires_grad=True)
    for _ in range(2):
        fg.grad(fg.tanh(fg.sin(x)).sum(), [x])
    before = _runs()
    (g,) = fg.grad(fg.sin(fg.tanh(fg.sin(x))).sum(), [x])  # never seen, same kinds
    assert _runs() - before == 1
    v = np.linspace(-1, 1, 7)
    inner = np.tanh(np.sin(v))
    np.testing.assert_allclose(g.numpy(), np.cos(inner) * (1 - inner ** 2) * np.cos(v), rtol=1e-12)


def test_hooks_large_arrays_and_a_disabled_interpreter_run_node_by_node():
    x = fg.tensor(np.ones(5), requires_grad=True)
    big = fg.tensor(np.ones(interpreted.interp.MAX_ELEMENTS + 1), requires_grad=True)
    calls = []

    def runs_of(make):
        before = _runs()
        for _ in range(3):
            fg.grad(make(), [x])
        return _runs() - before

    def hooked():
        h = fg.sin(x)
        h.register_hook(lambda g: calls.append(1))
        return h.sum()

    assert runs_of(hooked) == 0 and len(calls) == 3
    assert runs_of(lambda: (fg.sin(big).sum() + x).sum()) == 0
    interpreted.set_enabled(False)
    assert runs_of(lambda: fg.sin(x).sum()) == 0
    interpreted.set_enabled(True)
    assert runs_of(lambda: fg.sin(x).sum()) >= 1


def test_float32_and_float64_registers_live_side_by_side():
    def build(x, c, m, b):
        y = fg.sin(x.float()) * c.float()
        return y.double().sum() + (fg.tanh(x) * c).sum()

    expected, got, runs = _both(build)
    assert runs == 1
    _assert_same(expected, got)


def test_the_interpreter_reads_a_weakly_typed_register_back_as_weak():
    """A Python number's value is weakly typed: ``bfloat16 * weak float32`` stays bfloat16. Registers are stored
    strongly typed; the program must read them back as they were, or the product would promote to float32."""
    import jax.numpy as jnp
    from fgraph.autograd import _interpreter as interp

    x, s = jnp.arange(4, dtype=jnp.bfloat16), jnp.asarray(1.5)
    assert s.weak_type
    vec = ((4,), x.dtype, False)
    number = ((), s.dtype, True)  # float32, or float64 under x64
    seen = []

    def scaled(x, factor):
        seen.append((x * factor).dtype)  # at trace time: the dtype the kind computes in
        return (x * factor,)

    scale = interp.Kind(("scale", vec, number), scaled, (vec, number), (vec,))
    tape = interp.Tape([(scale, [("in", vec, 0), ("in", number, 0)], [("tmp", vec, 0)])],
                       inputs=[vec, number], outputs=[("tmp", vec, 0)])
    program = interp.Program(tape.need())
    program.compile([x, s], tape)
    (out,) = program.run(tape, [x, s])
    assert out.dtype == jnp.bfloat16 and seen and set(seen) == {jnp.dtype(jnp.bfloat16)}
    np.testing.assert_array_equal(np.asarray(out, np.float32), np.asarray(x * s, np.float32))


def test_the_second_pass_of_a_new_hessian_vector_product_is_interpreted_and_equals_jax():
    """The first pass records each rule as one fused node (``TanhBackwardBackward0``); the second pass, over those
    nodes and the forward's, is a plain pass of a structure never seen: interpreted, as JAX's jvp of grad."""
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(1)
    ws = [rng.standard_normal((6, 6)) / 3 for _ in range(3)]
    x0, v = rng.standard_normal(6), rng.standard_normal(6)
    acts = {"tanh": (fg.tanh, jnp.tanh), "sin": (fg.sin, jnp.sin)}

    def hvp(layers):
        x = fg.tensor(x0, requires_grad=True)
        h = x
        for w, a in zip(ws, layers):
            h = acts[a][0](h @ fg.tensor(w))
        (g,) = fg.grad(h.sum(), [x], create_graph=True)
        before = _runs()
        (hv,) = fg.grad((g * fg.tensor(v)).sum(), [x])
        return hv.numpy(), _runs() - before

    def reference(layers):
        def f(x):
            h = x
            for w, a in zip(ws, layers):
                h = acts[a][1](h @ w)
            return h.sum()
        return jax.jvp(jax.grad(f), (jnp.asarray(x0),), (jnp.asarray(v),))[1]

    for _ in range(3):  # the rules' kinds compile, then the program of the second pass's kinds
        hvp(["tanh", "sin", "tanh"])
    got, runs = hvp(["sin", "tanh", "tanh"])  # a new network of the same kinds
    assert runs == 1
    np.testing.assert_allclose(got, reference(["sin", "tanh", "tanh"]), rtol=1e-12, atol=1e-12)


def test_a_compiled_program_takes_committed_and_uncommitted_arrays_without_compiling_again():
    """Saved arrays come committed to their device or not, by how they were made; a program called through jit's
    cache compiled again for each new pattern (a 400 ms stall in the first call of a new network's HVP)."""
    import jax
    import jax.numpy as jnp
    from fgraph.autograd import _interpreter as interp
    from fgraph.lazy import _xla_compiles

    vec = ((3,), jnp.zeros(3).dtype, False)

    def product(x, y):
        return (x * y,)

    mul = interp.Kind(("mul", vec), product, (vec, vec), (vec,))
    tape = interp.Tape([(mul, [("in", vec, 0), ("in", vec, 1)], [("tmp", vec, 0)])], inputs=[vec, vec],
                       outputs=[("tmp", vec, 0)])
    program = interp.Program(tape.need())
    loose = [jnp.arange(3.0), jnp.arange(3.0) + 1]
    program.compile(loose, tape)
    device = jax.devices()[0]
    committed = [jax.device_put(a, device) for a in loose]
    assert committed[0].committed and not loose[0].committed
    before = _xla_compiles.count()
    for arrays in ([committed[0], loose[1]], committed, loose):
        (out,) = program.run(tape, arrays)
        np.testing.assert_array_equal(np.asarray(out), [0.0, 2.0, 6.0])
    assert _xla_compiles.count() == before


_TWO_DEVICES = r"""
import jax, numpy as np, fgraph as fg
from fgraph.autograd import interpreted, fusion
fusion.set_background(False)
fusion.set_compile_rent(1e9)
d0, d1 = jax.devices()
v = np.linspace(-1, 1, 5)

def grad_on(device, committed):
    with jax.default_device(device):
        x = fg.tensor(jax.device_put(v, device) if committed else v, requires_grad=True)
        (g,) = fg.grad(fg.tanh(fg.sin(x)).sum(), [x])
    return g

for _ in range(3):
    grad_on(d0, False)
before = interpreted.stats()["runs"]
got = [grad_on(d1, committed) for committed in (False, True, False, True)]
expected = (1 - np.tanh(np.sin(v)) ** 2) * np.cos(v)
assert all(g.array.devices() == {d1} for g in got), [g.array.devices() for g in got]
assert all(np.allclose(g.numpy(), expected, rtol=1e-6) for g in got)
print("RUNS", interpreted.stats()["runs"] - before, interpreted.stats()["compiles"])
"""


def test_a_program_runs_on_its_own_device_and_a_pass_on_another_gets_its_own():
    """Gradients stay on their arrays' device: a program compiled for device 0 does not serve a pass on device 1
    (it would put the gradients on device 0), which gets a program of its own."""
    import os
    import subprocess
    import sys

    flags = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=flags.strip())
    done = subprocess.run([sys.executable, "-c", _TWO_DEVICES], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    runs, compiles = map(int, done.stdout.split("RUNS")[1].split())
    assert runs >= 2 and compiles == 2  # device 1's passes interpreted too, by a program of their own
