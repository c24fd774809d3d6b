"""Floors under the first calls of a fresh structure: what one program per op costs, and what one interpreter costs.

fgraph eager runs a structure it has not compiled as one JAX program per op forward and one per node
backward (``fresh_structure.py``). Two pure-JAX peers, no fgraph at all, run ``fresh_structure``'s 200-op chain
(forward, loss, and the gradients of ``x``, ``c`` and ``d``) and bound what a design can reach:

* **JAX, one program per op**: the forward op by op and the backward node by node, each step a jitted kernel
  chained by hand (the gradients of ``c`` and ``d`` summed 8 at a time, as fgraph's engine sums them). This is
  dispatch alone: the floor of every design that runs an uncompiled structure one program per op.
* **JAX, one interpreter program**: forward and backward encoded per call as an instruction tape (op code,
  register numbers) and run by one jitted program, a ``fori_loop`` over the tape with ``lax.switch`` over the
  op kinds on a register file. It compiles once for the shapes and op kinds and serves every structure after:
  the cost of a design that never compiles per structure and dispatches once per call.

Both peers' gradients are checked against fgraph's before anything is timed.

Run: ``python benchmarks/fresh_floors.py [--quick]``: the first 50 calls of fresh structures, the floors and
PyTorch eager in one run.
"""
from __future__ import annotations

import time
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from overhead import CHAIN_OPS, CHAIN_SIZE

OP_BY_OP = "JAX, one program per op"
INTERPRETER = "JAX, one interpreter program"
FLOORS = (OP_BY_OP, INTERPRETER)

SIN, TANH, MUL, ADD = range(4)  # fresh_structure's op kinds


# -- one program per op ----------------------------------------------------------------------
def _sum_of(*arrays: jax.Array) -> jax.Array:
    total = arrays[0]
    for a in arrays[1:]:
        total = total + a
    return total


def _seed(h: jax.Array) -> jax.Array:
    return jnp.ones_like(h)  # d sum(h) / dh


def _sin_backward(g: jax.Array, h: jax.Array) -> jax.Array:
    return g * jnp.cos(h)


def _tanh_backward(g: jax.Array, y: jax.Array) -> jax.Array:
    return g * (1 - y * y)


def _mul_backward(g: jax.Array, h: jax.Array, c: jax.Array) -> tuple:
    return g * c, g * h


_FORWARD = (jax.jit(jnp.sin), jax.jit(jnp.tanh), jax.jit(jnp.multiply), jax.jit(jnp.add))
_LOSS, _SEED, _SUM = jax.jit(jnp.sum), jax.jit(_seed), jax.jit(_sum_of)
_SIN_BACKWARD, _TANH_BACKWARD, _MUL_BACKWARD = jax.jit(_sin_backward), jax.jit(_tanh_backward), jax.jit(_mul_backward)


def _sum_batched(grads: list) -> jax.Array:
    """Left to right, 8, 4 or 2 at a time (fgraph's ``_sum_grads``)."""
    while len(grads) > 1:
        k = 8 if len(grads) >= 8 else 4 if len(grads) >= 4 else 2
        grads[:k] = [_SUM(*grads[:k])]
    return grads[0]


def op_by_op(x: jax.Array, c: jax.Array, d: jax.Array, kinds: list) -> tuple:
    """``(loss, dx, dc, dd)`` of the chain ``kinds``, one jitted program per forward op and per backward node."""
    h, tape = x, []
    for k in kinds:
        if k == SIN:
            tape.append((SIN, h))
            h = _FORWARD[SIN](h)
        elif k == TANH:
            h = _FORWARD[TANH](h)
            tape.append((TANH, h))
        elif k == MUL:
            tape.append((MUL, h))
            h = _FORWARD[MUL](h, c)
        else:
            tape.append((ADD, None))
            h = _FORWARD[ADD](h, d)
    loss, g = _LOSS(h), _SEED(h)
    dc, dd = [], []
    for k, saved in reversed(tape):
        if k == SIN:
            g = _SIN_BACKWARD(g, saved)
        elif k == TANH:
            g = _TANH_BACKWARD(g, saved)
        elif k == MUL:
            g, dci = _MUL_BACKWARD(g, saved, c)
            dc.append(dci)
        else:
            dd.append(g)
    zeros = jnp.zeros_like(x)
    return loss, g, _sum_batched(dc) if dc else zeros, _sum_batched(dd) if dd else zeros


# -- one interpreter program -----------------------------------------------------------------
# Registers: x, c, d, ones (the loss's gradient), then every value the tape makes. The gradients of c and d
# accumulate in two values of their own, carried by the loop beside the registers.
X, C, D, ONES, FIRST = range(5)
MAX_STEPS = 2 * CHAIN_OPS  # one tape length for every structure (padded; the loop stops at the call's length)
REGISTERS = FIRST + MAX_STEPS
SIN_B, TANH_B, MUL_B, ADD_B = range(4, 8)


def _step(op: int) -> Callable:
    """Branch ``op`` of the interpreter: ``(a, b, c) -> (value, c's gradient increment, d's increment)``.

    Branches take and return values, never the register file: the loop body reads and writes the registers
    around the ``lax.switch``, so XLA updates them in place (a file passed through the branches is copied on
    every step: 16 µs a step for 4,096 registers on the 2-core VM, against 1.6 µs this way)."""
    def step(ra: jax.Array, rb: jax.Array, c: jax.Array) -> tuple:
        zero = jnp.zeros_like(ra)
        if op == SIN:
            return jnp.sin(ra), zero, zero
        if op == TANH:
            return jnp.tanh(ra), zero, zero
        if op == MUL:
            return ra * rb, zero, zero
        if op == ADD:
            return ra + rb, zero, zero
        if op == SIN_B:  # a: the gradient, b: the op's input
            return ra * jnp.cos(rb), zero, zero
        if op == TANH_B:  # b: the op's output
            return ra * (1 - rb * rb), zero, zero
        if op == MUL_B:  # b: the op's input
            return ra * c, ra * rb, zero
        return ra, zero, ra  # ADD_B: the gradient passes unchanged

    step.__name__ = f"step_{op}"
    return step


_BRANCHES = [_step(op) for op in range(8)]


@jax.jit
def _interpret(x: jax.Array, c: jax.Array, d: jax.Array, tape: jax.Array, n: jax.Array, result: jax.Array,
               grad: jax.Array) -> tuple:
    def body(i: jax.Array, carry: tuple) -> tuple:
        regs, dc, dd = carry
        value, more_dc, more_dd = lax.switch(tape[i, 0], _BRANCHES, regs[tape[i, 1]], regs[tape[i, 2]], c)
        return regs.at[tape[i, 3]].set(value), dc + more_dc, dd + more_dd

    regs = jnp.zeros((REGISTERS, x.shape[0]), x.dtype).at[X].set(x).at[C].set(c).at[D].set(d).at[ONES].set(1)
    regs, dc, dd = lax.fori_loop(0, n, body, (regs, jnp.zeros_like(c), jnp.zeros_like(d)))
    return regs[result].sum(), regs[grad], dc, dd


def tape_of(kinds: list) -> tuple[np.ndarray, int, int, int]:
    """``(tape, steps, result register, gradient register)``: the chain's forward, then its backward from the
    loss's gradient (ones: the loss is the result's sum). A row is ``(op, a, b, out)``."""
    rows, forward = [], []
    h = X
    for k in kinds:
        out = FIRST + len(rows)
        rows.append((k, h, C if k == MUL else D, out))
        forward.append((k, h, out))
        h = out
    g = ONES
    for k, src, dst in reversed(forward):
        out = FIRST + len(rows)
        rows.append(({SIN: SIN_B, TANH: TANH_B, MUL: MUL_B, ADD: ADD_B}[k], g, dst if k == TANH else src, out))
        g = out
    tape = np.zeros((MAX_STEPS, 4), np.int32)
    tape[:len(rows)] = rows
    return tape, len(rows), h, g


def interpreter(x: jax.Array, c: jax.Array, d: jax.Array, kinds: list) -> tuple:
    """``(loss, dx, dc, dd)`` of the chain ``kinds``: one call of the interpreter program, on this call's tape."""
    tape, n, result, grad = tape_of(kinds)
    return _interpret(x, c, d, tape, n, result, grad)


# -- as peers of fresh_structure's first calls -----------------------------------------------
def peer_call(peer: str, data: dict, kinds: list) -> Callable[[], tuple]:
    """Floor ``peer``'s forward + backward of the structure ``kinds`` on ``fresh_structure``'s data."""
    run = {OP_BY_OP: op_by_op, INTERPRETER: interpreter}[peer]
    x, c, d = (jnp.asarray(data[k]) for k in ("x", "c", "d"))

    def call() -> tuple:
        out = run(x, c, d, kinds)
        jax.block_until_ready(out)
        return out

    return call


def check_and_warm(data: dict, kinds: list) -> None:
    """Compile each floor (kernels, the interpreter) on ``kinds``, and refuse to time one whose loss and
    gradients disagree with fgraph eager's on the same structure."""
    import fgraph as fg
    from overhead import chain_forward

    leaves = [fg.tensor(data[k], requires_grad=True) for k in ("x", "c", "d")]
    loss = chain_forward(*leaves, fg.sin, fg.tanh, kinds=kinds)
    expected = [np.asarray(t.array) for t in (loss, *fg.grad(loss, leaves))]
    for peer in FLOORS:
        call = peer_call(peer, data, kinds)
        for _ in range(3):
            got = call()
        for i, (a, b) in enumerate(zip(got, expected)):
            if not np.allclose(np.asarray(a), b, rtol=1e-4, atol=1e-5):
                raise SystemExit(f"{peer}: output {i} disagrees with fgraph eager (max abs diff "
                                 f"{np.max(np.abs(np.asarray(a) - b)):.3g}); refusing to time it.")


def summary_line(first_calls: dict) -> list[str]:
    """The floors of the first-calls budget, as ratios to PyTorch eager (``[]`` when a peer is missing)."""
    torch_s, fgraph_s = first_calls.get("PyTorch eager"), first_calls.get("fgraph eager")
    if torch_s is None or fgraph_s is None or any(p not in first_calls for p in FLOORS):
        return []
    per_op, tape = first_calls[OP_BY_OP], first_calls[INTERPRETER]
    return [f"Floors of the first 50 calls of a fresh 200-node structure, pure JAX (no fgraph): one jitted program "
            f"per forward op and per backward node {per_op * 1e3:.0f} ms ({per_op / torch_s:.2f}× PyTorch eager: "
            f"the floor of any design that runs an uncompiled structure one program per op; fgraph eager is "
            f"{fgraph_s / per_op:.2f}× it); one interpreter program per call (forward and backward as an "
            f"instruction tape, compiled once for every structure) {tape * 1e3:.0f} ms ({tape / torch_s:.2f}× "
            f"PyTorch eager) (see `benchmarks/fresh_floors.py`)."]


def main(quick: bool = False) -> int:
    from fresh_structure import first_calls
    from overhead import chain_data

    data = chain_data(np.random.default_rng(0))
    t0 = time.perf_counter()
    calls = first_calls(data, rounds=1 if quick else 3, seed=3000, calls=5 if quick else 50)
    print(f"first calls of fresh structures ({time.perf_counter() - t0:.1f} s): "
          + ", ".join(f"{p} {t * 1e3:.0f} ms" for p, t in calls.items()))
    for line in summary_line(calls):
        print(line)
    return 0


if __name__ == "__main__":
    import sys

    raise SystemExit(main("--quick" in sys.argv[1:]))
