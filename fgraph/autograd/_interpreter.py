"""One compiled program that runs any arrangement of known kernels: the interpreter behind fresh passes.

A structure's fused program (:mod:`fgraph.autograd.fusion`) is compiled for that structure alone: it
pays off only once the structure has recurred often enough. Here the program is compiled for a set of
instruction *kinds* instead -- a kernel with its input and output shapes and dtypes -- and reads an
instruction tape at run time, so every structure made of those kinds runs as one dispatch, including
one never seen before. A ``fori_loop`` walks the tape; each step ``lax.switch``-es to its kind's branch.

Values live in one register file per aval (shape, dtype): the call's inputs first, then the values the
tape computes, then one scratch register. Every branch takes the same operands (for each aval, the most
registers any kind reads) and returns the same results (the most any kind writes; a kind writing fewer
sends zeros to the scratch register), so the loop body reads and writes the files around the switch and
XLA updates them in place (a file passed through the branches is copied every step). Inputs, registers,
steps and outputs are counted in powers of two, so a program serves structures of many sizes.

The interpreter suits dispatch-bound work: small arrays (:data:`MAX_ELEMENTS`), on the CPU, where one
XLA step costs ~1 µs against ~5-10 µs per dispatched kernel.

Example:
    >>> import jax.numpy as jnp
    >>> from fgraph.autograd import _interpreter as interp
    >>> def sine(x): return (jnp.sin(x),)             # a kind's function returns a tuple
    >>> def product(x, y): return (x * y,)
    >>> vec = ((3,), jnp.dtype("float32"), False)
    >>> sin = interp.Kind(("sin", vec), sine, (vec,), (vec,))
    >>> mul = interp.Kind(("mul", vec), product, (vec, vec), (vec,))
    >>> tape = interp.Tape([(sin, [("in", vec, 0)], [("tmp", vec, 0)]),
    ...                     (mul, [("tmp", vec, 0), ("in", vec, 1)], [("tmp", vec, 1)])],
    ...                    inputs=[vec, vec], outputs=[("tmp", vec, 1)])
    >>> program = interp.Program(tape.need())
    >>> program.compile([jnp.zeros(3), jnp.zeros(3)], tape)
    >>> (out,) = program.run(tape, [jnp.array([0.0, 1.0, 2.0]), jnp.array([1.0, 2.0, 3.0])])
    >>> [round(float(v), 4) for v in out]       # sin(x) * y
    [0.0, 1.6829, 2.7279]
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import SingleDeviceSharding
from jax._src.lax.lax import _convert_element_type

__all__ = ["Kind", "Tape", "Need", "Program", "MAX_ELEMENTS", "bucket", "aval_of", "placement_of", "serving", "request",
           "clear", "stats"]

#: Registers hold arrays of at most this many elements: beyond it a step's copies (operands read, results and
#: spare results written) cost more than a dispatch. The steady HVP of a fresh 3-layer tanh/sin network on the
#: 2-core CPU, interpreted / node by node: 16 wide 348 / 428 µs, 32 wide (1,024 elements) 424 / 510 µs, 64 wide
#: (4,096) 559-594 / 497 µs.
MAX_ELEMENTS = 1024
#: Longest tape, and most inputs, taken (each input is one argument of the program's call, and a program is traced
#: for its padded count: a 10,000-node graph's tape would compile for a minute and dispatch 10,000 arguments).
MAX_STEPS = 2048
MAX_INPUTS = 512
#: Programs kept (the oldest dropped first).
MAX_PROGRAMS = 8
#: A program grows to cover the kinds of the last program of the same avals, up to this many kinds (a switch of
#: more branches costs more to compile than a program of fewer kinds compiled anew).
MAX_KINDS = 64

Aval = tuple  # (shape, numpy dtype, weak type): a weakly typed value (a Python number's) is read back as one
Register = tuple  # ("in" | "tmp", aval, number)


def aval_of(value: Any) -> Optional[Aval]:
    """``value``'s aval (an array or a ``ShapeDtypeStruct``), or ``None`` if it is too large for a register."""
    shape = tuple(value.shape)
    size = 1
    for d in shape:
        size *= d
    if size > MAX_ELEMENTS:
        return None
    return (shape, value.dtype, bool(getattr(value, "weak_type", False)))


def abstract(aval: Aval) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(aval[0], aval[1], weak_type=aval[2])


def bucket(n: int) -> int:
    """The power of two (at least 4) that ``n`` values are counted as, so nearby sizes share a program."""
    size = 4
    while size < n:
        size *= 2
    return size


class Kind:
    """An instruction kind: ``fn(*arrays) -> tuple`` with input avals ``ins`` and output avals ``outs``;
    ``key`` identifies it (two kinds with equal keys compute the same function)."""

    __slots__ = ("key", "fn", "ins", "outs", "hash")

    def __init__(self, key: Any, fn: Callable, ins: tuple, outs: tuple) -> None:
        self.key, self.fn, self.ins, self.outs = key, fn, ins, outs
        self.hash = hash(key)

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        return self is other or (type(other) is Kind and self.key == other.key)

    def __repr__(self) -> str:
        return f"Kind({self.key!r})"


class Need:
    """What a tape asks of a program: its kinds, and per aval its input, register and output counts."""

    __slots__ = ("kinds", "counts", "steps")

    def __init__(self, kinds: frozenset, counts: dict, steps: int) -> None:
        self.kinds, self.counts, self.steps = kinds, counts, steps  # counts: aval -> [inputs, temporaries, outputs]

    def served_by(self, program: "Program") -> bool:
        if self.steps > program.steps or not self.kinds <= program.kinds:
            return False
        sizes = program.sizes
        for aval, (n_in, n_tmp, n_out) in self.counts.items():
            size = sizes.get(aval)
            if size is None or n_in > size[0] or n_tmp > size[1] or n_out > size[2]:
                return False
        return True

    def merged(self, other: "Need") -> "Need":
        """This need grown to cover ``other``'s kinds and counts too (so one program serves both)."""
        counts = {a: list(c) for a, c in self.counts.items()}
        for aval, theirs in other.counts.items():
            mine = counts.setdefault(aval, [0, 0, 0])
            counts[aval] = [max(m, t) for m, t in zip(mine, theirs)]
        return Need(self.kinds | other.kinds, counts, max(self.steps, other.steps))


class Tape:
    """A program-independent list of instructions ``(kind, input registers, output registers)``.

    A register is ``("in", aval, i)`` (the call's ``i``-th input of that aval, counted per aval in the
    order of ``inputs``) or ``("tmp", aval, j)`` (a value the tape computes); ``outputs`` are the
    registers the run returns, in order. :meth:`encode` lays it out for one program (cached per program).
    """

    __slots__ = ("instructions", "inputs", "outputs", "encoded", "_need")

    def __init__(self, instructions: list, inputs: list, outputs: list) -> None:
        self.instructions, self.inputs, self.outputs = instructions, inputs, outputs
        self.encoded: dict = {}  # program -> (tape array, outputs array)
        self._need: Optional[Need] = None

    def fits(self) -> bool:
        """Whether a program may take this tape (:data:`MAX_STEPS`, :data:`MAX_INPUTS`)."""
        return len(self.instructions) <= MAX_STEPS and len(self.inputs) <= MAX_INPUTS

    def need(self) -> Need:
        if self._need is None:
            counts: dict = {}
            for aval in self.inputs:
                counts.setdefault(aval, [0, 0, 0])[0] += 1
            for _, _, outs in self.instructions:
                for _, aval, _ in outs:
                    counts.setdefault(aval, [0, 0, 0])[1] += 1
            for _, aval, _ in self.outputs:
                counts.setdefault(aval, [0, 0, 0])[2] += 1
            kinds = frozenset(kind for kind, _, _ in self.instructions)
            self._need = Need(kinds, counts, len(self.instructions))
        return self._need

    def encode(self, program: "Program") -> tuple:
        """``(tape, outputs)`` as device arrays laid out for ``program`` (which must serve :meth:`need`)."""
        done = self.encoded.get(program)
        if done is not None:
            return done
        blank = [0] * program.width
        for column, register in zip(program.scratch_columns, program.scratch_registers):
            blank[column] = register  # unused writes go to scratch
        number = program.register
        rows = []
        for kind, ins, outs in self.instructions:  # Python lists, one numpy copy: item by item costs ~3 µs a row
            branch, reads, writes = program.layout[kind]
            row = blank.copy()
            row[0] = branch
            for register, column in zip(ins, reads):
                row[column] = number(register)
            for register, column in zip(outs, writes):
                row[column] = number(register)
            rows.append(row)
        table = np.zeros((program.steps, program.width), np.int32)
        table[:len(rows)] = rows
        picks = np.zeros(program.n_outputs, np.int32)
        for register, at in zip(self.outputs, program.output_slots(self.outputs)):
            picks[at] = program.register(register)
        done = self.encoded[program] = (jnp.asarray(table), jnp.asarray(picks))
        return done


class Program:
    """The interpreter compiled for one :class:`Need` (its kinds, and sizes counted in :func:`bucket`)."""

    def __init__(self, need: Need, placement: Optional[SingleDeviceSharding] = None) -> None:
        self.need = need
        self.placement = placement  # the device it runs on (that of its first compile's inputs if None)
        self.kinds = need.kinds
        # Steps and computed registers cost little to spare (a longer tape array, a larger register file): twice
        # what is needed, so a somewhat larger structure of the same kinds needs no new program. Inputs and
        # outputs are arguments and results of every call: counted as they are.
        self.steps = bucket(2 * need.steps)
        self.avals = sorted(need.counts, key=repr)  # a fixed order
        self.sizes = {a: (bucket(n_in), bucket(2 * n_tmp), bucket(n_out)) for a, (n_in, n_tmp, n_out)
                      in ((a, need.counts[a]) for a in self.avals)}
        order = sorted(self.kinds, key=lambda kind: repr(kind.key))
        reads = {a: max([kind.ins.count(a) for kind in order] + [0]) for a in self.avals}
        writes = {a: max([kind.outs.count(a) for kind in order] + [0]) for a in self.avals}
        # Columns of a tape row: the branch, then per aval its read registers, then its write registers.
        self.columns: dict = {}
        column = 1
        for a in self.avals:
            self.columns[a] = (list(range(column, column + reads[a])),
                               list(range(column + reads[a], column + reads[a] + writes[a])))
            column += reads[a] + writes[a]
        self.width = column
        self.scratch_columns = [c for a in self.avals for c in self.columns[a][1]]
        self.scratch_registers = [self.scratch(a) for a in self.avals for _ in self.columns[a][1]]
        self.layout: dict = {}  # kind -> (branch, its read columns, its write columns)
        for branch, kind in enumerate(order):
            self.layout[kind] = (branch, _columns_of(kind.ins, self.columns, 0), _columns_of(kind.outs, self.columns, 1))
        self.order = order
        self.n_outputs = sum(self.sizes[a][2] for a in self.avals)
        self.state = "pending"
        self.error: Optional[BaseException] = None
        self._lock = threading.Lock()
        self.jitted: Any = None  # made by compile(), for the device of its inputs

    # -- registers ------------------------------------------------------------------------------------------
    def register(self, register: Register) -> int:
        where, aval, number = register
        return number if where == "in" else self.sizes[aval][0] + number

    def scratch(self, aval: Aval) -> int:
        n_in, n_tmp, _ = self.sizes[aval]
        return n_in + n_tmp

    def output_slots(self, outputs: Sequence[Register]) -> list:
        """Where each output lands among the program's results (per aval, in order of appearance)."""
        base, at = {}, 0
        for a in self.avals:
            base[a] = at
            at += self.sizes[a][2]
        slots = []
        for _, aval, _ in outputs:
            slots.append(base[aval])
            base[aval] += 1
        return slots

    # -- running ----------------------------------------------------------------------------------------------
    def arguments(self, tape: Tape, inputs: Sequence[Any]) -> list:
        """The per-aval input lists, padded to the program's counts (with the aval's zeros)."""
        per_aval: dict = {a: [] for a in self.avals}
        placement = self.placement
        for aval, array in zip(tape.inputs, inputs):
            per_aval[aval].append(array if array.committed else _committed(array, placement))
        padded = []
        for a in self.avals:
            arrays = per_aval[a]
            missing = self.sizes[a][0] - len(arrays)
            if missing:
                arrays.extend([_committed(_zeros(a), placement)] * missing)
            padded.append(arrays)
        return padded

    def run(self, tape: Tape, inputs: Sequence[Any]) -> list:
        """The tape's outputs (one array per output register) for these inputs."""
        table, picks = tape.encode(self)
        results = self.jitted(table, len(tape.instructions), picks, self.arguments(tape, inputs))
        return [results[at] for at in self.output_slots(tape.outputs)]

    def compile(self, inputs: Sequence[Any], tape: Tape) -> None:
        """Trace and compile for arrays like ``inputs`` (ahead of time); sets ``state`` (``ready`` or ``failed``)."""
        try:
            # Placed explicitly: jit's cache keys each argument's committed-ness, and saved arrays come committed
            # or not by how they were made. Left to jit, each new pattern compiled again (80-400 ms); placed, a new
            # pattern is a lowering already cached (~0.5 ms), and an array elsewhere an error (node by node).
            # (Calling the ahead-of-time compiled program instead took jit's slow path on every call.)
            if self.placement is None:
                self.placement = placement_of(inputs[0])
            jitted = jax.jit(self._body, in_shardings=self.placement, out_shardings=self.placement)
            table, picks = tape.encode(self)
            jax.block_until_ready(jitted(table, 0, picks, self.arguments(tape, inputs)))
            self.jitted = jitted
            self.state = "ready"
        except Exception as exc:  # a kind XLA cannot compile here: its structures run node by node
            self.error = exc
            self.state = "failed"

    def _body(self, table: jax.Array, n: jax.Array, picks: jax.Array, inputs: list) -> tuple:
        files = []
        for a, arrays in zip(self.avals, inputs):
            shape, dtype, _ = a
            n_in, n_tmp, _ = self.sizes[a]
            rest = jnp.zeros((n_tmp + 1, *shape), dtype)
            files.append(jnp.concatenate([jnp.stack(arrays), rest]) if arrays else rest)
        branches = [self._branch(kind) for kind in self.order]

        def step(i: jax.Array, files: tuple) -> tuple:
            row = table[i]
            operands = tuple(tuple(f[row[c]] for c in self.columns[a][0]) for a, f in zip(self.avals, files))
            results = lax.switch(row[0], branches, operands)
            new = []
            for a, f, values in zip(self.avals, files, results):
                for c, v in zip(self.columns[a][1], values):
                    f = f.at[row[c]].set(v)
                new.append(f)
            return tuple(new)

        files = lax.fori_loop(0, n, step, tuple(files))
        out = []
        at = 0
        for a, f in zip(self.avals, files):
            for _ in range(self.sizes[a][2]):
                out.append(_as_aval(f[picks[at]], a))
                at += 1
        return tuple(out)

    def _branch(self, kind: Kind) -> Callable:
        _, reads, writes = self.layout[kind]
        places = {}  # column -> (aval index, operand number)
        for i, a in enumerate(self.avals):
            for j, c in enumerate(self.columns[a][0]):
                places[c] = (i, j)
        write_places = {}
        for i, a in enumerate(self.avals):
            for j, c in enumerate(self.columns[a][1]):
                write_places[c] = (i, j)

        def branch(operands: tuple) -> tuple:
            args = [_as_aval(operands[places[c][0]][places[c][1]], a) for c, a in zip(reads, kind.ins)]
            values = kind.fn(*args)
            results = [[jnp.zeros(a[0], a[1]) for _ in self.columns[a][1]] for a in self.avals]
            for c, v in zip(writes, values):
                i, j = write_places[c]
                results[i][j] = v
            return tuple(tuple(r) for r in results)

        branch.__name__ = f"interpret_{_safe_name(kind)}"
        return branch


def _columns_of(avals: tuple, columns: dict, side: int) -> list:
    """The tape columns a kind's registers go in: its ``i``-th value of aval ``a`` in that aval's ``i``-th column."""
    used: dict = {}
    out = []
    for a in avals:
        j = used.get(a, 0)
        used[a] = j + 1
        out.append(columns[a][side][j])
    return out


def _as_aval(value: Any, aval: Aval) -> Any:
    """A register's value (the file's dtype, never weak) as the value of ``aval`` it holds."""
    return _convert_element_type(value, aval[1], weak_type=True) if aval[2] else value


_ZEROS: dict = {}


def _committed(array: Any, placement: Any) -> Any:
    """``array`` committed to ``placement`` (its own device: no copy), remembered while it lives in the cache.

    jit's dispatch cache keys each argument's committed-ness: op results are committed (fgraph/_kernel_jit.py),
    leaves and constants are not, and which saved arrays are which differs by structure, so an unplaced
    argument made every new structure's first call take jit's slow path (~4 ms for ~260 arguments)."""
    key = (id(array), placement)
    entry = _COMMITTED.get(key)
    if entry is None or entry[0] is not array:
        entry = _COMMITTED[key] = (array, jax.device_put(array, placement))
        if len(_COMMITTED) > MAX_COMMITTED:
            _COMMITTED.pop(next(iter(_COMMITTED)))
    return entry[1]


_COMMITTED: dict = {}  # (id, placement) -> (the unplaced array, kept so its id stays its own; the placed alias)
MAX_COMMITTED = 512


def _zeros(aval: Aval) -> Any:
    z = _ZEROS.get(aval)
    if z is None:
        z = _ZEROS[aval] = _as_aval(jnp.zeros(aval[0], aval[1]), aval)
    return z


def _safe_name(kind: Kind) -> str:
    head = kind.key[0] if isinstance(kind.key, tuple) and kind.key else kind.key
    name = getattr(head, "name", None) or str(head)
    return "".join(ch if ch.isalnum() else "_" for ch in name)[:40]


# -- the programs of a process ---------------------------------------------------------------------------------------
_PROGRAMS: list = []
_STATS = {"compiles": 0, "compile_failures": 0, "compile_seconds": 0.0}
_lock = threading.Lock()


def placement_of(array: Any) -> Optional[SingleDeviceSharding]:
    """The one device ``array`` lives on, as a sharding; ``None`` for an array sharded over several."""
    sharding = array.sharding
    return sharding if type(sharding) is SingleDeviceSharding else None


def serving(need: Need, placement: SingleDeviceSharding) -> Optional[Program]:
    """A compiled program that serves ``need`` on the device of ``placement``, or ``None``."""
    with _lock:
        for program in _PROGRAMS:
            if program.state == "ready" and program.placement == placement and need.served_by(program):
                return program
    return None


def request(tape: Tape, arrays: list) -> bool:
    """Compile a program serving ``tape`` (grown to cover the programs of the same avals), on fusion's
    background worker (or here, under ``fusion.set_background(False)``). One compile at a time: ``False`` (nothing
    queued) while another is under way, so the next request, made once it is ready, covers its kinds too."""
    from fgraph.autograd import fusion

    need, placement = tape.need(), placement_of(arrays[0])
    with _lock:
        if placement is None or any(p.state == "pending" for p in _PROGRAMS):
            return False
        for p in _PROGRAMS:  # grown to cover the programs of the same avals: their structures' kinds recur
            if p.state == "ready" and p.placement == placement and set(p.avals) == set(need.counts) \
                    and len(p.kinds | need.kinds) <= MAX_KINDS:
                need = need.merged(p.need)
        program = Program(need, placement)
        _PROGRAMS.append(program)
        if len(_PROGRAMS) > MAX_PROGRAMS:
            _PROGRAMS.pop(0)
    if fusion._state["background"]:
        fusion._worker.submit(_compile, program, tape, arrays)
    else:
        _compile(program, tape, arrays)
    return True


def _compile(program: Program, tape: Tape, arrays: list) -> None:
    from fgraph.autograd import fusion

    fusion._yield_to_passes()
    start = time.perf_counter()
    program.compile(arrays, tape)
    with _lock:
        _STATS["compile_seconds"] += time.perf_counter() - start
        _STATS["compiles" if program.state == "ready" else "compile_failures"] += 1
        if program.state != "ready" and program in _PROGRAMS:
            _PROGRAMS.remove(program)


def stats() -> dict:
    """``compiles``, ``compile_failures``, ``compile_seconds``: programs compiled; ``programs``: those kept."""
    with _lock:
        return dict(_STATS, programs=len(_PROGRAMS))


def clear() -> None:
    """Forget every program."""
    with _lock:
        _PROGRAMS.clear()
