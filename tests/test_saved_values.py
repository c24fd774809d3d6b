"""Nodes keep what their rule needs and nothing else (DESIGN.md, invariant 2).

Indexing-style ops read only the *shape* of the indexed tensor in backward, so their
node must not keep it alive: once the user drops ``h``, ``y = op(h)`` holding on to
the graph must not hold ``h`` (PyTorch's ``SliceBackward0`` likewise saves sizes only).
Backward must still run without it (its values are checked against JAX by the op
tables, ``tests/op_tables/``).
"""
import gc
import weakref

import numpy as np
import pytest

import fgraph as fg
import fgraph.nn.functional as F

IDX = fg.tensor(np.array([2, 0, 2]))


def _cases():
    return {
        "getitem_slice": lambda h: h[1:3],
        "getitem_int_array": lambda h: h[IDX],
        "getitem_mask": lambda h: h[fg.tensor(np.array([True, False, True, False]))],
        "index_select": lambda h: fg.index_select(h, 0, IDX),
        "gather": lambda h: fg.gather(h, 0, fg.tensor(np.array([[3, 1, 0], [0, 0, 2]]))),
        "take": lambda h: fg.take(h, fg.tensor(np.array([5, 0, 11]))),
        "masked_fill": lambda h: fg.masked_fill(h, fg.tensor(np.array([[True], [False], [True], [False]])), 0.5),
        "embedding": lambda h: F.embedding(IDX, h),
        "max_pool1d": lambda h: F.max_pool1d(h.reshape(1, 4, 3), 2, ceil_mode=True),
    }


CASES = _cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_node_does_not_keep_the_indexed_tensor(name):
    op = CASES[name]
    x = fg.tensor(np.arange(12.0).reshape(4, 3) / 7.0, requires_grad=True)
    h = x * 2.0  # a non-leaf: only the graph could keep it alive
    alive = weakref.ref(h)
    y = op(h)
    del h
    gc.collect()
    assert alive() is None, f"{name}: the backward node keeps its input alive"

    (gx,) = fg.grad((y * y).sum(), [x])
    assert gx.shape == x.shape and np.abs(gx.numpy()).sum() > 0
    (gx2,) = fg.grad((y * y).sum(), [x], create_graph=True)  # the rule runs recorded, too
    assert gx2.requires_grad


def test_two_input_ops_save_what_their_positions_say_for_every_edge_pattern():
    """apply_binary reads the saved inputs from a per-op table; it must agree with the general rule."""
    from fgraph.ops._declare import _kept, registry

    tables = {name: op for name, op in registry.items() if op.pair_keep is not None}
    assert "mul" in tables and "div" in tables
    a, b = object(), object()
    for name, op in tables.items():
        for a_edge in (("node", 0), None):
            for b_edge in (("node", 1), None):
                keep_a, keep_b = op.pair_keep[a_edge is None][b_edge is None]
                expected = _kept(op, (a, b), (a_edge, b_edge))
                assert (a if keep_a else None, b if keep_b else None) == expected, (name, a_edge, b_edge)
    x, c = fg.tensor([1.0, 2.0], requires_grad=True), fg.tensor([3.0, 4.0])
    assert (x * c).grad_fn.saved_inputs == (None, c)  # x * constant: only the constant, as in PyTorch
    assert (c * x).grad_fn.saved_inputs == (c, None)
