"""Random programs over the whole op table: fgraph's first and second derivatives against JAX.

The op tables (``tests/op_tables/*``) check each op alone. Here
hypothesis composes them: a program is a few *steps*, each one table entry applied to
one of its cases. Every tensor input of a step is a fresh program input drawn from the
entry's own domain, and may also be *wired* to an earlier step's output::

    x = base + EPS * tanh(resize(earlier_output, shape))

``resize`` flattens the earlier output and gathers it cyclically into the input's
shape (repeated indices, so gradients accumulate in the gather's backward). With
``|EPS * tanh| < EPS``, a wired input stays within ``EPS`` of a point of the entry's
domain, which every table keeps much farther than that from the op's
non-differentiable points; yet the input depends on the earlier output, so the
derivatives cross ops (mixed second derivatives included). One output may feed
several later inputs (shared subexpressions). The program's result is every output
no step consumed, flattened and concatenated, checked by
:func:`jax_oracle.check_against_jax` (forward, ``fg.grad``, and the
``create_graph=True`` Hessian-vector product) against the same program run over
the entries' pure-JAX references; hypothesis' programs also check forward mode's tangent
(the sweep leaves it to them and to the op tables, for CI's time).

Two tests: ``test_table_sweep`` runs every entry of every table in some program on
each run (entries shuffled with a fixed seed and grouped); ``test_random_table_program``
lets hypothesis pick the entries too. Programs stay in float64: entries whose output
is not float64 for float64 inputs (casts to float32/float16) are left out, since
XLA may keep excess precision for narrow floats when it fuses the reference.
"""
from __future__ import annotations

import hashlib
import os
import random
from typing import Any, NamedTuple, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fgraph as fg
from jax_oracle import TOLERANCES, check_against_jax
from op_harness import family_tables

EPS = 0.02
MAX_STEPS = 4
SWEEP_GROUP = 4  # entries per program in the sweep


# -- the entries -----------------------------------------------------------------------------------------------
def _all_entries() -> list:
    """``(qualified name, entry)`` for every entry of every table."""
    entries = []
    for family, module in family_tables().items():
        entries.extend((f"{family}.{e.name}", e) for e in module.TABLE)
    return entries


ENTRIES = _all_entries()
BY_NAME = dict(ENTRIES)


# -- programs ---------------------------------------------------------------------------------------------
class Step(NamedTuple):
    entry: str  # qualified name in BY_NAME
    case: Any  # the entry's Case
    sources: tuple  # per tensor input: index of an earlier step's output wired into it, or None
    out_shape: tuple  # shape of the step's output

    def __repr__(self) -> str:
        wiring = ", ".join("fresh" if s is None else f"out{s}" for s in self.sources)
        return f"{self.entry}(shapes={self.case.shapes}, params={self.case.params}, inputs=[{wiring}])"


def _size(shape: tuple) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _reference_out(name: str, case) -> jax.ShapeDtypeStruct:
    """Shape and dtype of the entry's reference output for float64 inputs (traced, not run)."""
    entry = BY_NAME[name]
    specs = [jax.ShapeDtypeStruct(s, jnp.float64) for s in case.shapes]
    return jax.eval_shape(lambda *xs: entry.ref_fn(*xs, *_jax_consts(entry, case), **case.params), *specs)


def draw_step(data, name: str, earlier: Sequence[Step]) -> Optional[Step]:
    """One step applying ``name`` to a drawn case, its inputs wired to earlier outputs by draws.

    ``None`` if the drawn case leaves float64 (see the module docstring).
    """
    entry = BY_NAME[name]
    case = data.draw(entry.cases, label=f"{name} case")
    out = _reference_out(name, case)
    if out.dtype != jnp.float64:
        return None
    wirable = [i for i, step in enumerate(earlier) if _size(step.out_shape) > 0]
    sources = []
    for shape in case.shapes:
        choices = [None] + wirable if _size(shape) > 0 else [None]
        sources.append(data.draw(st.sampled_from(choices), label="source"))
    return Step(name, case, tuple(sources), tuple(out.shape))


def draw_inputs(data, steps: Sequence[Step]) -> list:
    """One base array per tensor input of every step, from that entry's domain."""
    arrays = []
    for step in steps:
        entry = BY_NAME[step.entry]
        domains = entry.domain if isinstance(entry.domain, tuple) else (entry.domain,) * len(step.case.shapes)
        for shape, domain in zip(step.case.shapes, domains):
            arrays.append(data.draw(hnp.arrays(np.float64, shape, elements=domain), label=f"x{len(arrays)}"))
    return arrays


# -- the interpreter, over either backend ----------------------------------------------------------------------
class Backend(NamedTuple):
    tanh: Any
    reshape: Any
    cat: Any
    index_array: Any
    consts: Any  # (entry, case) -> the consts as the backend's entry function takes them
    apply: Any  # (entry, xs, consts, params) -> output


def _jax_consts(entry, case) -> list:
    """Consts as JAX arrays, or as NumPy where the reference needs them concrete (boolean masks)."""
    return list(case.consts) if entry.static_consts else [jnp.asarray(c) for c in case.consts]


FG = Backend(
    tanh=fg.tanh,
    reshape=fg.reshape,
    cat=lambda xs: fg.cat(xs, 0),
    index_array=lambda a: fg.tensor(a),
    consts=lambda entry, case: [fg.tensor(c, dtype=c.dtype) for c in case.consts],
    apply=lambda entry, xs, consts, params: entry.fg_fn(*xs, *consts, **params),
)

JAX = Backend(
    tanh=jnp.tanh,
    reshape=jnp.reshape,
    cat=lambda xs: jnp.concatenate(xs, 0),
    index_array=jnp.asarray,
    consts=lambda entry, case: _jax_consts(entry, case),
    apply=lambda entry, xs, consts, params: entry.ref_fn(*xs, *consts, **params),
)


def _resize(B: Backend, value: Any, shape: tuple) -> Any:
    """``value`` flattened and read cyclically into ``shape``."""
    flat = B.reshape(value, (-1,))
    n, size = _size(shape), _size(value.shape)
    if n != size:
        flat = flat[B.index_array(np.arange(n, dtype=np.int64) % size)]
    return B.reshape(flat, shape)


def interpret(B: Backend, steps: Sequence[Step], bases: Sequence[Any]) -> Any:
    outputs: list = []
    consumed = set()
    inputs = iter(bases)
    for step in steps:
        entry = BY_NAME[step.entry]
        xs = []
        for shape, source in zip(step.case.shapes, step.sources):
            x = next(inputs)
            if source is not None:
                x = x + EPS * B.tanh(_resize(B, outputs[source], shape))
                consumed.add(source)
            xs.append(x)
        outputs.append(B.apply(entry, xs, B.consts(entry, step.case), step.case.params))
    sinks = [out for i, out in enumerate(outputs) if i not in consumed]
    return B.cat([B.reshape(out, (-1,)) for out in sinks])


def _program_key(steps: Sequence[Step]) -> str:
    """A key naming the program exactly (consts included), for the compiled reference."""
    digest = hashlib.sha1()
    for step in steps:
        digest.update(repr((step.entry, step.case.shapes, step.case.params, step.sources)).encode())
        for c in step.case.consts:
            digest.update(repr((c.shape, c.dtype.str)).encode() + np.ascontiguousarray(c).tobytes())
    return digest.hexdigest()


def check_program(data, steps: Sequence[Step], forward: bool = True) -> None:
    arrays = draw_inputs(data, steps)
    check_against_jax(
        lambda *xs: interpret(FG, steps, xs),
        lambda *xs: interpret(JAX, steps, xs),
        arrays,
        TOLERANCES[np.dtype("float64")],
        jit_key=("table-program", _program_key(steps)),
        forward=forward,
    )


# -- the tests ----------------------------------------------------------------------------------------------
def _sweep_groups() -> list:
    names = [name for name, _ in ENTRIES]
    random.Random(20261122).shuffle(names)
    return [tuple(names[i:i + SWEEP_GROUP]) for i in range(0, len(names), SWEEP_GROUP)]


ALL_GROUPS = _sweep_groups()
# CI (35-minute budget on 2 cores) sweeps every sixth group; every entry is still checked alone by
# the op tables, and hypothesis' random programs draw from all of them. Locally the sweep is whole.
SWEEP_STRIDE = 6 if os.environ.get("CI") else 1
SWEEP = ALL_GROUPS[::SWEEP_STRIDE]


@pytest.mark.parametrize("names", SWEEP, ids=[f"group{i}" for i in range(len(SWEEP))])
def test_table_sweep(names: tuple) -> None:
    """Every table entry, in a program with a few others (wiring and values drawn)."""

    @settings(max_examples=1)
    @given(data=st.data())
    def check(data):
        steps: list = []
        for name in names:
            step = draw_step(data, name, steps)
            if step is not None:
                steps.append(step)
        if steps:
            check_program(data, steps, forward=False)  # forward mode: the op tables and the random programs

    check()


def test_sweep_covers_every_entry() -> None:
    swept = {name for group in ALL_GROUPS for name in group}
    assert swept == set(BY_NAME), sorted(set(BY_NAME) ^ swept)
    assert len(BY_NAME) == len(ENTRIES), "two table entries share a qualified name"


@given(data=st.data())
def test_random_table_program(data) -> None:
    """Hypothesis picks the entries, their cases, the wiring and the values."""
    names = [name for name, _ in ENTRIES]
    steps: list = []
    for _ in range(data.draw(st.integers(1, MAX_STEPS), label="steps")):
        step = draw_step(data, data.draw(st.sampled_from(names), label="entry"), steps)
        if step is not None:
            steps.append(step)
    if steps:
        # An entry with its own tangent reference (jvp_ref: PyTorch's forward-mode convention differs from
        # jax.jvp of its pure-JAX reference, e.g. embedding's padding row) has its tangent checked by the op
        # tables; a program holding one checks values and reverse mode only.
        check_program(data, steps, forward=not any(BY_NAME[step.entry].jvp_ref for step in steps))
