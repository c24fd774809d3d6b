"""Background compilation of fused backward programs: same gradients, no stalls, clean fallback."""
import threading
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
from fgraph.autograd import fusion

# Fusion's own compile machinery (its stats, its cache, when a pass runs fused): checked with op-by-op dispatch;
# under deferred dispatch (the default) a recurring step's passes are recorded into its program instead.
pytestmark = pytest.mark.eager_dispatch


@pytest.fixture
def fresh_fusion():
    """An empty cache and a background worker that is idle before and after the test."""
    fusion.wait_for_compiles()
    fusion.clear_cache()
    fusion.set_enabled(True)
    try:
        yield
    finally:
        fusion.wait_for_compiles()
        fusion.set_background(True)
        fusion.set_cache_size(128)
        fusion.clear_cache()


def _program(scale):
    """A small graph with shared subexpressions, fan-in and several leaves; its structure is fixed."""
    x = fg.tensor([0.3, -0.7, 1.1], dtype="float64", requires_grad=True)
    w = fg.tensor([0.5, -1.0, 2.0], dtype="float64", requires_grad=True)
    h = fg.tanh(w * x) * scale
    out = (h * h + fg.exp(h) + fg.sin(x).sum()).mean()
    return out, (x, w)


def _reference(scale):
    def f(x, w):
        h = jnp.tanh(w * x) * scale
        return (h * h + jnp.exp(h) + jnp.sin(x).sum()).mean()

    x = jnp.array([0.3, -0.7, 1.1])
    w = jnp.array([0.5, -1.0, 2.0])
    return jax.grad(f, argnums=(0, 1))(x, w)


def _grads(scale):
    out, leaves = _program(scale)
    return [g.numpy() for g in fg.grad(out, leaves)]


def _check(grads, scale):
    for g, r in zip(grads, _reference(scale)):
        np.testing.assert_allclose(g, np.asarray(r), rtol=1e-12, atol=1e-14)


def test_background_and_foreground_compiles_give_the_same_gradients(fresh_fusion):
    results = {}
    for background in (True, False):
        fusion.clear_cache()
        fusion.set_background(background)
        before = fusion.stats()
        runs = []
        for _ in range(4):
            runs.append(_grads(2.0))
            fusion.wait_for_compiles()
        after = fusion.stats()
        assert after["compiles"] == before["compiles"] + 1
        assert after["hits"] > before["hits"], "the repeated structure should run fused"
        assert after["compile_seconds"] > before["compile_seconds"]
        for grads in runs:
            _check(grads, 2.0)
        results[background] = runs[-1]
    for a, b in zip(results[True], results[False]):
        np.testing.assert_allclose(a, b, rtol=1e-13)


def test_passes_run_node_by_node_while_the_program_compiles(fresh_fusion, monkeypatch):
    """The pass that triggers the compile does not wait for it: the worker is held until the end."""
    release = threading.Event()
    compile_program = fusion._FusedProgram.compile

    def held_compile(self, plan):
        assert threading.current_thread() is not threading.main_thread()
        assert not fg.is_grad_enabled(), "the worker runs in the caller's context (grad mode off)"
        release.wait(60)
        return compile_program(self, plan)

    monkeypatch.setattr(fusion._FusedProgram, "compile", held_compile)
    before = fusion.stats()
    for _ in range(3):  # the second pass queues the compile; none of them waits for it
        _check(_grads(0.5), 0.5)
    during = fusion.stats()
    assert during["pending"] == 1
    assert during["hits"] == before["hits"]
    assert during["misses"] == before["misses"] + 3
    release.set()
    assert fusion.wait_for_compiles(timeout=120)
    _check(_grads(0.5), 0.5)
    after = fusion.stats()
    assert after["pending"] == 0 and after["hits"] == before["hits"] + 1


def test_a_hook_registered_while_the_worker_traces_never_sees_its_tracers(fresh_fusion, monkeypatch):
    """The worker traces a structure found without hooks, on the graph's own nodes; a leaf's hook registered
    meanwhile (the caller goes on) belongs to later passes, which run node by node and call it on values."""
    release = threading.Event()
    compile_program = fusion._FusedProgram.compile

    def held_compile(self, plan):
        release.wait(60)
        return compile_program(self, plan)

    monkeypatch.setattr(fusion._FusedProgram, "compile", held_compile)
    before_rent = fusion.stats()["compile_rent"]
    fusion.set_compile_rent(0)  # the second sighting compiles
    x = fg.tensor([0.3, -0.7, 1.1], dtype="float64", requires_grad=True)
    try:
        for _ in range(2):
            fg.grad((fg.tanh(x) * x).sum(), [x])
        assert fusion.stats()["pending"] == 1
        seen = []
        handle = x.register_hook(seen.append)
        release.set()
        assert fusion.wait_for_compiles(timeout=120)
        assert seen == [], "the worker's trace ran the hook"
        (g,) = fg.grad((fg.tanh(x) * x).sum(), [x])
        handle.remove()
    finally:
        fusion.set_compile_rent(before_rent)
    assert len(seen) == 1 and not isinstance(seen[0].array, jax.core.Tracer)
    v = np.array([0.3, -0.7, 1.1])
    np.testing.assert_allclose(g.numpy(), np.tanh(v) + v * (1 - np.tanh(v) ** 2), rtol=1e-12)
    np.testing.assert_allclose(seen[0].numpy(), g.numpy(), rtol=1e-12)


def test_a_failed_compile_falls_back_to_node_by_node_for_good(fresh_fusion, monkeypatch):
    def broken_body(program, *arrays):
        raise RuntimeError("XLA said no")

    monkeypatch.setattr(fusion, "_fused_body", broken_body)
    before = fusion.stats()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(5):
            _check(_grads(1.5), 1.5)
            fusion.wait_for_compiles()
    after = fusion.stats()
    assert after["compile_failures"] == before["compile_failures"] + 1, "a failed structure is not retried"
    assert after["hits"] == before["hits"]
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(messages) == 1 and "XLA said no" in messages[0] and "node by node" in messages[0]


def test_the_cache_is_bounded_and_least_recently_used_goes_first(fresh_fusion):
    fusion.set_cache_size(2)
    x = fg.tensor([0.1, 0.2], dtype="float64", requires_grad=True)
    chains = {1: fg.sin, 2: fg.cos, 3: fg.tanh}
    for n, op in chains.items():  # three structures, each seen twice: three compiles
        for _ in range(2):
            fg.grad(op(x).sum(), [x])
            fusion.wait_for_compiles()
    assert fusion.stats()["cached_programs"] == 2
    before = fusion.stats()
    fg.grad(fg.sin(x).sum(), [x])  # evicted: seen again, then compiled again
    assert fusion.stats()["hits"] == before["hits"]
    fg.grad(fg.tanh(x).sum(), [x])  # still cached
    assert fusion.stats()["hits"] == before["hits"] + 1
    with pytest.raises(ValueError, match="set_cache_size"):
        fusion.set_cache_size(-1)


def _grads_of(xa):
    x = fg.Tensor(xa, requires_grad=True)
    (g,) = fg.grad((fg.sin(x) * x).sum(), [x])
    return g.array


def test_no_background_compile_under_jax_tracing(fresh_fusion):
    xa = jnp.array([0.5, -1.0])
    before = fusion.stats()
    for k in range(3):  # fresh traces of the same structure: the compile happens inside the trace
        def fresh(xa):  # a new function each time, so jit traces again
            return _grads_of(xa)

        traced = jax.jit(fresh)
        np.testing.assert_allclose(traced(xa + k), jnp.cos(xa + k) * (xa + k) + jnp.sin(xa + k), rtol=1e-12)
        assert fusion.stats()["pending"] == 0
    assert fusion.stats()["compiles"] == before["compiles"] + 1



@pytest.mark.parametrize("rent", [0.0, None])
def test_a_structure_compiles_quickly_first_then_at_full_optimisation_once_it_recurs(fresh_fusion, monkeypatch, rent):
    """A small graph's first program is built for compile speed; once it has run OPTIMIZE_AFTER times and its runs
    have cost OPTIMIZE_RENT times its compile, the worker recompiles it at XLA's full optimisation and swaps it in
    (rent 0: at once; the default: never, for a graph this tiny); gradients agree throughout, eagerly and under a
    trace (where the quick program, a nested jit, may not carry compiler options: the plain one is inlined)."""
    if rent is not None:
        monkeypatch.setattr(fusion, "OPTIMIZE_RENT", rent)
    xa = jnp.array([0.5, -1.0])
    expected = jnp.cos(xa) * xa + jnp.sin(xa)
    start = fusion.stats()["compiles"]
    quick = fusion.quick_compile_options() is not None
    program = None
    for k in range(fusion.COMPILE_AFTER + fusion.OPTIMIZE_AFTER + 2):
        np.testing.assert_allclose(_grads_of(xa), expected, rtol=1e-12)
        fusion.wait_for_compiles()
        if k + 1 == fusion.COMPILE_AFTER:  # the second sighting compiled it
            (program,) = fusion._compiled.values()
            np.testing.assert_allclose(jax.jit(lambda x: _grads_of(x))(xa), expected, rtol=1e-12)
        if program is not None:
            fused_runs = k + 1 - fusion.COMPILE_AFTER
            upgraded = rent is not None and fused_runs >= fusion.OPTIMIZE_AFTER
            assert program.optimized == (not quick or upgraded)
    assert fusion.stats()["compiles"] - start == 1 + (quick and rent is not None)

# -- the node-by-node engine sums the gradients arriving at one input in batched kernels ------------
def _fan_in(x, n, sin, add_fn):
    total = None
    for i in range(n):  # x feeds n ops: n gradients arrive at its node (more than SUM_ARITY)
        term = sin(x * (0.1 * (i + 1)))
        total = term if total is None else add_fn(total, term)
    return total


@pytest.mark.parametrize("n", [3, 19])
def test_fan_in_sums_match_jax_first_and_second_order(node_by_node, n):
    from fgraph.autograd import _ready_heap

    assert n < _ready_heap.SUM_ARITY or n > 2 * _ready_heap.SUM_ARITY
    xa = jnp.array([0.3, -1.2, 0.7])
    seen = []
    x = fg.tensor(np.asarray(xa), dtype="float64", requires_grad=True)
    h = x * 1.0
    h.register_hook(seen.append)  # the hook sees the one summed gradient
    out = (_fan_in(h, n, fg.sin, fg.add) ** 2).sum()
    (g,) = fg.grad(out, [x], create_graph=True)
    (gg,) = fg.grad(g.sum(), [x])

    def f(xa):
        return (_fan_in(xa, n, jnp.sin, jnp.add) ** 2).sum()

    np.testing.assert_allclose(g.numpy(), jax.grad(f)(xa), rtol=1e-12)
    np.testing.assert_allclose(gg.numpy(), jax.grad(lambda v: jax.grad(f)(v).sum())(xa), rtol=1e-12)
    np.testing.assert_allclose(seen[0].numpy(), jax.grad(f)(xa), rtol=1e-12)
    (g_plain,) = fg.grad(out, [x])  # no create_graph: the one-kernel sums
    np.testing.assert_allclose(g_plain.numpy(), jax.grad(f)(xa), rtol=1e-12)
    grads = fg.backward(out)
    np.testing.assert_allclose(grads[x].numpy(), jax.grad(f)(xa), rtol=1e-12)


# -- graphs over MAX_NODES run in segments ---------------------------------------------------------
def _long(x, c, d, n, ops):
    sin, tanh, split = ops
    h = x
    for i in range(n):
        k = i % 5
        if k == 0:
            h = sin(h)
        elif k == 1:
            h = tanh(h) * c  # c feeds every segment: its partial sum is carried through all of them
        elif k == 2:
            a, b = split(h)  # a multi-output node
            h = h + (a * b).sum()
        else:
            h = h + d
    return (h * h).sum()


def _fg_split(h):
    return fg.split(h, 2)


def _jnp_split(h):
    return jnp.split(h, 2)


@pytest.mark.parametrize("background", [True, False])
def test_segments_match_jax_before_and_after_they_compile(fresh_fusion, monkeypatch, background):
    monkeypatch.setattr(fusion, "MAX_NODES", 24)
    fusion.set_background(background)
    arrays = [np.array([0.3, -0.2, 0.9, 0.1]), np.array([0.7, 0.8, 0.9, 1.1]), np.array([0.01, -0.02, 0.03, 0.0])]
    n = 37  # about 110 nodes: several segments, the middle ones sharing a program

    def f(x, c, d):
        return _long(x, c, d, n, (jnp.sin, jnp.tanh, _jnp_split))

    expected = jax.grad(f, argnums=(0, 1, 2))(*map(jnp.asarray, arrays))
    before = fusion.stats()
    for _ in range(3):
        leaves = [fg.tensor(a, dtype="float64", requires_grad=True) for a in arrays]
        out = _long(*leaves, n, (fg.sin, fg.tanh, _fg_split))
        for got, want in zip(fg.grad(out, leaves), expected):
            np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-12)
        grads = fg.backward(out)
        for leaf, want in zip(leaves, expected):
            np.testing.assert_allclose(grads[leaf].numpy(), np.asarray(want), rtol=1e-12)
        fusion.wait_for_compiles()
    after = fusion.stats()
    assert after["hits"] > before["hits"], "repeated segments should run fused"
    assert after["compile_failures"] == before["compile_failures"]


def test_a_long_graph_unpacks_each_packed_saved_tensor_once_per_backward(fresh_fusion, monkeypatch):
    """As in PyTorch, an unpack hook runs once per saved tensor and backward, also in a graph over
    MAX_NODES (whose plain passes run as segments), and the gradients match JAX."""
    monkeypatch.setattr(fusion, "MAX_NODES", 24)
    arrays = [np.array([0.3, -0.2, 0.9, 0.1]), np.array([0.7, 0.8, 0.9, 1.1]), np.array([0.01, -0.02, 0.03, 0.0])]
    n = 37

    def f(x, c, d):
        return _long(x, c, d, n, (jnp.sin, jnp.tanh, _jnp_split))

    expected = jax.grad(f, argnums=(0, 1, 2))(*map(jnp.asarray, arrays))
    for _ in range(3):
        unpacked = []
        leaves = [fg.tensor(a, dtype="float64", requires_grad=True) for a in arrays]
        with fg.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: unpacked.append(1) or t):
            out = _long(*leaves, n, (fg.sin, fg.tanh, _fg_split))
        packed = len(unpacked)
        assert packed == 0
        for got, want in zip(fg.grad(out, leaves), expected):
            np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-12)
        fusion.wait_for_compiles()
        saved = sum(map(_packed_count, _nodes(out)))
        assert len(unpacked) == saved > 0


def _packed_count(node):
    result = getattr(node, "saved_result", None)
    held = list(getattr(node, "saved_inputs", None) or ()) + list(result if isinstance(result, tuple) else [result])
    return sum(type(a) is fg.autograd.saved_tensors.Packed for a in held)


def _nodes(out):
    seen, stack = set(), [out.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(e[0] for e in node.next_edges if e is not None)
    return seen
