"""The structure key of a backward pass: found before dependencies and exec_info, and telling apart
every pass whose dependencies, exec_info or program would differ (checked against jax.grad)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg
from fgraph.autograd import _ready_heap, engine, fusion, structure

X = np.array([0.3, -0.7, 1.1])
W = np.array([0.5, -1.0, 2.0])


@pytest.fixture
def foreground_fusion():
    """Programs compile on the caller's thread at a structure's second pass, into an empty cache."""
    fusion.wait_for_compiles()
    fusion.clear_cache()
    fusion.reset_stats()
    fusion.set_enabled(True)
    fusion.set_background(False)
    try:
        yield
    finally:
        fusion.set_background(True)
        fusion.clear_cache()


def _graph(x, w, tanh, exp, shared):
    """A diamond with a node below the intermediate ``h``; ``shared``: ``h`` is used twice, else recomputed."""
    a = tanh(w * x)
    h = a * 2.0
    k = h if shared else a * 2.0
    return (h * k + exp(a)).sum(), h


def _fg_grads(which: str, shared: bool) -> list:
    x = fg.tensor(X, requires_grad=True)
    w = fg.tensor(W, requires_grad=True)
    out, h = _graph(x, w, fg.tanh, fg.exp, shared)
    inputs = {"x": [x], "w": [w], "xw": [x, w], "wx": [w, x], "h": [h], "hx": [h, x]}[which]
    return [g.numpy() for g in fg.grad(out, inputs)]


def _jax_grads(which: str, shared: bool) -> list:
    def loss(x, w):
        return _graph(x, w, jnp.tanh, jnp.exp, shared)[0]

    def loss_of_h(h, x, w):  # h as an input: the pass stops there (min topological_nr)
        a = jnp.tanh(w * x)
        k = h if shared else a * 2.0
        return (h * k + jnp.exp(a)).sum()

    x, w = jnp.asarray(X), jnp.asarray(W)
    gx, gw = jax.grad(loss, argnums=(0, 1))(x, w)
    h = jnp.tanh(w * x) * 2.0
    if which in ("h", "hx"):
        gh = jax.grad(loss_of_h)(h, x, w)
        return [gh] if which == "h" else [gh, gx]
    return {"x": [gx], "w": [gw], "xw": [gx, gw], "wx": [gw, gx]}[which]


CASES = [(which, shared) for shared in (True, False) for which in ("x", "w", "xw", "wx", "h", "hx")]


@pytest.mark.eager_dispatch
def test_passes_that_differ_in_inputs_pruning_or_sharing_each_get_their_own_program(foreground_fusion):
    """Interleaved, every case runs fused from its second pass; a key that confused two of them would
    run one's program on the other's values and give the wrong gradients (or the wrong count)."""
    for _ in range(3):
        for which, shared in CASES:
            for got, want in zip(_fg_grads(which, shared), _jax_grads(which, shared)):
                np.testing.assert_allclose(got, np.asarray(want), rtol=1e-12, atol=1e-14)
    assert fusion.stats()["cached_programs"] == len(CASES)
    assert fusion.stats()["fused_runs"] >= 2 * len(CASES)


@pytest.mark.eager_dispatch
def test_a_compiled_structure_runs_without_dependencies_or_exec_info(foreground_fusion, monkeypatch):
    """Once a structure is compiled its passes skip the engine's two walks; the traced body still gets
    them (from the plan), and the gradients match jax.grad."""
    calls = []

    def counting(real):
        def wrapper(*args):
            calls.append(real.__name__)
            return real(*args)
        return wrapper

    for module in (engine, structure):
        monkeypatch.setattr(module, "_compute_dependencies", counting(_ready_heap._compute_dependencies))
        monkeypatch.setattr(module, "_init_to_execute", counting(_ready_heap._init_to_execute))
    _fg_grads("xw", shared=True)  # first sighting: node by node
    assert calls == ["_compute_dependencies", "_init_to_execute"]
    calls.clear()
    _fg_grads("xw", shared=True)  # second: compiled here, so traced from the plan
    assert sorted(calls) == ["_compute_dependencies", "_init_to_execute"]
    calls.clear()
    for _ in range(3):
        for got, want in zip(_fg_grads("xw", shared=True), _jax_grads("xw", shared=True)):
            np.testing.assert_allclose(got, np.asarray(want), rtol=1e-12, atol=1e-14)
    assert calls == []
    assert fusion.stats()["fused_runs"] == 4


def test_structure_keys_are_equal_only_for_equal_structures():
    x = fg.tensor(X, requires_grad=True)
    w = fg.tensor(W, requires_grad=True)

    def key(shared, inputs=None):
        out, h = _graph(x, w, fg.tanh, fg.exp, shared)
        edges = [t._edge for t in (inputs(h) if inputs else (x, w))]
        root, nr = out._edge
        min_topo = min(e[0].topological_nr for e in edges)
        return structure.find(root, nr, [fg.ones_like(out)], edges, False, min_topo, 512, 64).key

    assert key(True) == key(True) and hash(key(True)) == hash(key(True))
    assert key(True) != key(False)
    assert key(True, lambda h: [h]) != key(True, lambda h: [h, x]) != key(True)
    assert structure.find(x._edge[0], 0, [fg.ones_like(x)], [], False, 0, 512, 64).key != key(True)


def _chain(x, c, d, sin, n):
    h = x
    for i in range(n):
        h = sin(h) if i % 3 == 0 else h * c if i % 3 == 1 else h + d
    return h.sum()


def test_segment_keys_tell_apart_what_each_node_captures(foreground_fusion, monkeypatch):
    """A graph over MAX_NODES runs in segments; asking for a leaf twice makes its node capture two values,
    so the segments' keys must differ from the plain request's (else a program would return too few)."""
    monkeypatch.setattr(fusion, "MAX_NODES", 16)
    values = {"x": np.array([0.3, -0.7, 1.1]), "c": np.array([0.9, 0.8, 1.1]), "d": np.array([0.1, -0.2, 0.05])}
    want = dict(zip("xcd", jax.grad(lambda x, c, d: _chain(x, c, d, jnp.sin, 40), argnums=(0, 1, 2))(
        *(jnp.asarray(values[k]) for k in "xcd"))))
    for _ in range(3):
        for names in ("xcd", "dxc", "xcdx"):
            leaves = {k: fg.tensor(v, requires_grad=True) for k, v in values.items()}
            got = fg.grad(_chain(leaves["x"], leaves["c"], leaves["d"], fg.sin, 40), [leaves[k] for k in names])
            for name, g in zip(names, got):
                np.testing.assert_allclose(g.numpy(), np.asarray(want[name]), rtol=1e-12, atol=1e-14)
    assert fusion.stats()["fused_runs"] > 0
