"""The recorder: kernel calls become records; a flush runs them as one cached ``jax.jit`` program.

A record is ``(kernel, refs, treedef)``: ``refs`` says where each argument comes from
(``i >= 0``: external input ``i``, a concrete array or Python scalar; ``-1 - s``: output
slot ``s`` of an earlier record; ``None``: the argument ``None``). The outputs of a
record are :class:`LazyArray` placeholders whose abstract values come from
``jax.eval_shape``, computed once per (kernel, input signature) and then a dict lookup.

A flush keys the pending trace by its structure -- the records, the external inputs'
signatures, which outputs are still alive -- and replays it with a ``jax.jit`` of
:func:`_replay` cached under that key (bounded LRU), so a loop body that records the
same structure every step compiles once and then replays one XLA program per step.
"""
from __future__ import annotations

import collections
import functools
import weakref
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp

from fgraph._kernel_jit import kernel_jit, placed
from fgraph._numbers import _at_top_level
from fgraph.lazy._array import LazyArray
from fgraph.lazy._recompute import Recompute
from fgraph.lazy._state import LAZY

__all__ = ["Recorder", "STATS", "cache_clear", "run", "replay_one_by_one", "MAX_RECORDS", "MAX_PROGRAMS"]

#: A pending trace longer than this is flushed as it is recorded (bounds compile time and memory).
MAX_RECORDS = 20_000
#: Compiled replay programs kept (least recently used dropped first).
MAX_PROGRAMS = 64

#: Counters: ``records`` (kernel calls recorded), ``flushes``, ``traces`` (programs compiled: a new
#: structure), ``hits`` (flushes that replayed a cached program), ``signatures`` (``eval_shape`` runs),
#: ``bypassed`` (calls run eagerly: tracer or unusual arguments), ``evicted``, ``left_out`` (values a step's program
#: did not write out, see :class:`Recompute`), ``recomputed`` (flushes that recomputed such values after all).
STATS: dict[str, int] = dict.fromkeys(("records", "flushes", "traces", "hits", "signatures", "bypassed", "evicted",
                                       "left_out", "recomputed"), 0)

_ArrayImpl: Any = None  # jax.Array's concrete class, found by array_type() (not at import: see there)


def array_type() -> type:
    """The concrete class of ``jax.Array`` values (for ``type(x) is ...`` tests on hot paths).

    Found on first use: making an array starts JAX's backend, and importing fgraph must not,
    so that settings a user makes after ``import fgraph`` (platform, CPU dispatch) still apply.
    """
    global _ArrayImpl
    if _ArrayImpl is None:
        with jax.ensure_compile_time_eval():  # first used inside a trace, jnp.zeros would give a tracer's class
            _ArrayImpl = type(jnp.zeros(()))
    return _ArrayImpl
_SCALARS = frozenset((bool, int, float, complex))
#: Python scalars met as kernel arguments, as weakly typed device arrays (what ``jax.jit`` makes of them), so a
#: replay takes them without a host-to-device copy per call; bounded (a changing value is a new entry).
_SCALAR_ARRAYS: dict = {}
MAX_SCALARS = 4096

# Signatures of values interned to small ints, so cache keys hash fast.
_KIDS: dict[Any, int] = {}
_KID_ABSTRACT: list = []  # kid -> what eval_shape gets for it (ShapeDtypeStruct, or a sample Python scalar)
_SIGS: dict[tuple, tuple] = {}  # (kernel, kids) -> (out kids, out avals, treedef or None, largest size)
_PROGRAMS: "collections.OrderedDict[tuple, Callable]" = collections.OrderedDict()
_FLAT: dict[tuple, "_Flat"] = {}
_LEAF = jax.tree_util.tree_structure(0)


def _kid(sig: Any, abstract: Any) -> int:
    kid = _KIDS.get(sig)
    if kid is None:
        kid = _KIDS[sig] = len(_KID_ABSTRACT)
        _KID_ABSTRACT.append(abstract)
    return kid


def _array_kid(a: Any) -> int:
    sig = (a.shape, a.dtype, a.weak_type)
    kid = _KIDS.get(sig)
    return kid if kid is not None else _kid(sig, jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type))


def _scalar_array(t: type, value: Any) -> Any:
    key = (t, value) if value else (t, repr(value))  # repr: -0.0 == 0.0 but differs in sign
    a = _SCALAR_ARRAYS.get(key)
    if a is None:
        if len(_SCALAR_ARRAYS) >= MAX_SCALARS:
            _SCALAR_ARRAYS.clear()
        token = LAZY.set(None)
        try:
            a = _SCALAR_ARRAYS[key] = jnp.asarray(value)
        finally:
            LAZY.reset(token)
    return a


#: ``(sharding, default device setting) -> whether it is the default device alone``: an optimizer's step records
#: a few hundred arrays, each checked once per trace (``a.devices()`` and the lookup cost ~0.8 µs, this ~0.35).
_ON_DEFAULT: dict = {}


def _on_default_device(a: Any) -> bool:
    """Whether committed array ``a`` lives on JAX's default device alone (where a replay's outputs go)."""
    key = (a.sharding, jax.config.jax_default_device)
    placed = _ON_DEFAULT.get(key)
    if placed is None:
        if len(_ON_DEFAULT) >= 64:
            _ON_DEFAULT.clear()
        devices = a.devices()
        default = key[1]
        if default is None or isinstance(default, str):
            default = jax.devices(default)[0]
        placed = _ON_DEFAULT[key] = len(devices) == 1 and next(iter(devices)) == default
    return placed


def cache_clear() -> None:
    """Drop every compiled replay program and cached signature."""
    _PROGRAMS.clear()
    _SIGS.clear()
    _FLAT.clear()
    _SCALAR_ARRAYS.clear()


class _Flat:
    """A kernel taking pytrees (the optimizer's lists and dicts), called on the flat leaves."""

    __slots__ = ("kernel", "treedef", "__weakref__")

    def __init__(self, kernel: Callable, treedef: Any) -> None:
        self.kernel = kernel
        self.treedef = treedef

    def __call__(self, *leaves: Any) -> Any:
        return placed(self.kernel)(*self.treedef.unflatten(leaves))


class ProgramKey(tuple):
    """A key holding a trace's records, hashed once: a trace's ``(records, external signatures, live slots, donated
    externals)``, or a deferred step's. A flush looks it up in several caches, and hashing a few hundred records
    costs ~10 µs each time."""

    def __new__(cls, parts: tuple) -> "ProgramKey":
        key = tuple.__new__(cls, parts)
        key._hash = tuple.__hash__(key)
        return key

    def __hash__(self) -> int:
        return self._hash


class Recorder:
    """The pending trace of one ``with fg.lazy():`` block (see the module docstring)."""

    #: Whether its placeholders stand for values no one may read (vmap's per-sample recorder).
    abstract = False
    #: Whether it is a thread's deferred-dispatch recorder (``_deferred.py``) rather than a ``fg.lazy()`` block's.
    deferred = False
    #: Whether calls on arrays placed off the default device (another device, a sharding) run eagerly instead:
    #: a replay puts its outputs where ``jax.jit`` puts them, eager kernels keep their inputs' placement.
    default_device_only = False

    def __init__(self) -> None:
        array_type()  # the class call() compares against
        self._reset()

    def _reset(self) -> None:
        self.records: list = []
        self.outs: list = []  # weakref per output slot
        self.externals: list = []
        self.ext_kids: list = []
        self.ext_index: dict = {}  # id(array) -> external index (arrays only; they are held in externals)
        self.donated: list = []  # external indices the program may overwrite (an optimizer's buffers, see call_tree)
        self.largest = 0  # elements of the largest value recorded (inputs and outputs)

    def discard(self) -> None:
        """Drop the pending records (the block raised); their placeholders can no longer be read."""
        for ref in self.outs:
            o = ref()
            if o is not None:
                o._rec = None
        self._reset()

    def __len__(self) -> int:
        return len(self.records)

    # -- recording (hot path) ---------------------------------------------------------------------
    def call(self, kernel: Callable, args: Any) -> Any:
        """Record ``kernel(*args)``; return placeholders shaped like its result."""
        refs = []
        kids = []
        externals = self.externals
        for a in args:
            t = type(a)
            if t is LazyArray:
                if a._concrete is None:
                    if a._rec is self:
                        refs.append(-1 - a._slot)
                        kids.append(a._kid)
                        continue
                    a = a.value()  # pending in another recorder (another context): run that one
                else:
                    a = a._concrete
                t = type(a)
            if t is _ArrayImpl:
                i = self.ext_index.get(id(a))
                if i is None:
                    if self.default_device_only and a.committed and not _on_default_device(a):
                        return self._bypass(kernel, args)  # placed elsewhere: eager keeps it there
                    i = self.ext_index[id(a)] = len(externals)
                    externals.append(a)
                    self.ext_kids.append(_array_kid(a))
                refs.append(i)
                kids.append(self.ext_kids[i])
            elif a is None:
                refs.append(None)
                kids.append(None)
            elif t in _SCALARS:
                a = _scalar_array(t, a)
                i = self.ext_index.get(id(a))
                if i is None:
                    i = self.ext_index[id(a)] = len(externals)
                    externals.append(a)
                    self.ext_kids.append(_array_kid(a))
                refs.append(i)
                kids.append(self.ext_kids[i])
            else:
                return self._bypass(kernel, args)
        kids_t = tuple(kids)
        sig = _SIGS.get((kernel, kids_t))
        if sig is None:
            sig = _signature(kernel, kids_t)
        out_kids, out_avals, treedef, largest = sig
        if largest > self.largest:
            self.largest = largest
        slot = len(self.outs)
        self.records.append((kernel, tuple(refs), treedef))
        STATS["records"] += 1
        outs = []
        for kid, aval in zip(out_kids, out_avals):
            la = LazyArray(aval, kid, self, slot)
            self.outs.append(weakref.ref(la))
            outs.append(la)
            slot += 1
        if len(self.records) >= MAX_RECORDS:
            self.flush()
        return outs[0] if treedef is None else treedef.unflatten(outs)

    def call_tree(self, kernel: Callable, args: tuple, donated: Any = ()) -> Any:
        """:meth:`call` for a kernel whose arguments are pytrees (lists, dicts of arrays).

        ``donated``: arrays among ``args`` that nothing but this call can reach (the caller proved it, as an
        optimizer's step does): the trace's program takes them as donated inputs, so their buffers hold its
        results, as the kernel's own ``donate_argnums`` would when dispatched eagerly."""
        leaves, treedef = jax.tree_util.tree_flatten(args, is_leaf=_is_lazy)
        flat = _FLAT.get((kernel, treedef))
        if flat is None:
            flat = _FLAT[(kernel, treedef)] = _Flat(kernel, treedef)
        out = self.call(flat, leaves)
        for array in donated:
            i = self.ext_index.get(id(array))
            if i is not None and self.externals[i] is array:
                self.donated.append(i)
        return out

    def _bypass(self, kernel: Callable, args: Any) -> Any:
        STATS["bypassed"] += 1
        return placed(kernel)(*[a.value() if type(a) is LazyArray else a for a in args])

    # -- running the trace ------------------------------------------------------------------------
    def _outputs(self, leave_out: Optional[set]) -> tuple[list, list, dict]:
        """``(alive placeholders, their slots, {slot: weakref} of those left out)`` of the pending trace."""
        alive, live, left = [], [], {}
        for i, ref in enumerate(self.outs):
            o = ref()
            if o is not None:
                if leave_out and id(o) in leave_out:
                    left[i] = ref
                    continue
                alive.append(o)
                live.append(i)
        return alive, live, left

    def flush(self) -> None:
        """Run the pending records as one (cached) jitted program and fill the live placeholders."""
        taken = self.take()
        if taken is not None:
            key, alive, externals, quick = taken
            run(cached_program(key, _jit_quick_replay if quick else _jit_replay), alive, externals)

    def take(self, leave_out: Optional[set] = None) -> Optional[tuple]:
        """Empty the recorder: ``(key, live placeholders, externals, quick)`` of its pending trace, or ``None``.

        ``key`` is the trace's structure (records, external signatures, live output slots, donated externals); ``quick``
        whether its values are small enough to compile for compile speed. Placeholders whose ``id`` is in
        ``leave_out`` are not outputs: they are recomputed from the trace if read (:class:`Recompute`), unless
        that would need an input the program donates (then they stay outputs)."""
        records = self.records
        if not records:
            return None
        alive, live, left = self._outputs(leave_out)
        records, ext_kids, donated = tuple(records), tuple(self.ext_kids), tuple(self.donated)
        key = ProgramKey((records, ext_kids, tuple(live), donated))
        recompute = None
        if left:
            recompute = Recompute.plan(key, alive, left, self.externals)
            if recompute is None:  # rebuilding them would need a donated input: they stay outputs
                alive, live, left = self._outputs(None)
                key = ProgramKey((records, ext_kids, tuple(live), donated))
        externals = self.externals
        if recompute is not None:
            STATS["left_out"] += len(left)
            for ref in left.values():
                ref()._rec = recompute
        quick = self.largest <= _quick_max_elements()
        self._reset()  # before running: an error leaves a clean recorder
        STATS["flushes"] += 1
        return key, alive, externals, quick


def run(program: Callable, alive: list, externals: list) -> None:
    """Run ``program`` (a replay of a taken trace) on ``externals``; fill the ``alive`` placeholders."""
    token = LAZY.set(None)
    try:
        # A flush can be reached while a JAX trace is active (a user's jax.jit over code that reads an earlier
        # eager value): its kernels would be staged into that trace and fill the placeholders with its tracers.
        # The trace's inputs are concrete, so it runs now, outside the user's program.
        if _at_top_level():
            values = program(*externals)
        else:
            with jax.ensure_compile_time_eval():
                values = program(*externals)
    except BaseException:
        for o in alive:
            o._rec = None
        raise
    finally:
        LAZY.reset(token)
    for o, v in zip(alive, values):
        o.resolve(v)


def replay_one_by_one(key: tuple) -> Callable:
    """The trace under ``key`` as a plain function: its records dispatched one kernel at a time (no compile;
    a kernel that donates its arguments, an optimizer's update, donates them as when dispatched eagerly)."""
    records, _, live, _ = key
    return functools.partial(_replay, records, live)


def cached_program(key: tuple, make: Callable[[tuple], Callable]) -> Callable:
    """The compiled program cached under ``key``, made by ``make(key)`` on a miss (bounded LRU, counted)."""
    program = _PROGRAMS.get(key)
    if program is None:
        program = make(key)
        install(key, program)
    else:
        STATS["hits"] += 1
        _PROGRAMS.move_to_end(key)
    return program


def install(key: tuple, program: Callable) -> None:
    """Cache ``program`` (a jitted replay) under ``key`` (counted as a trace; the LRU's oldest goes past the bound)."""
    STATS["traces"] += 1
    _PROGRAMS[key] = program
    if len(_PROGRAMS) > MAX_PROGRAMS:
        _PROGRAMS.popitem(last=False)
        STATS["evicted"] += 1


def _jit_replay(key: tuple) -> Callable:
    records, _, live, donated = key
    return kernel_jit(functools.partial(_replay, records, live), donate_argnums=donated)


def _jit_quick_replay(key: tuple) -> Callable:
    """:func:`_jit_replay` built for compile speed: a trace of small values is dispatch-bound (the same options
    and threshold as fusion's first programs, :func:`fgraph.autograd.fusion.quick_compile_options`)."""
    from fgraph.autograd.fusion import quick_compile_options

    records, _, live, donated = key
    return kernel_jit(functools.partial(_replay, records, live), donate_argnums=donated,
                      compiler_options=quick_compile_options())


def _quick_max_elements() -> int:
    from fgraph.autograd.fusion import QUICK_MAX_ELEMENTS

    return QUICK_MAX_ELEMENTS


def _size(abstract: Any) -> int:
    shape = getattr(abstract, "shape", ())
    n = 1
    for d in shape:
        n *= d
    return n


def _is_lazy(x: Any) -> bool:
    return type(x) is LazyArray


def _signature(kernel: Callable, kids: tuple) -> tuple:
    """Abstract-evaluate ``kernel`` on inputs with these signatures (once per signature)."""
    STATS["signatures"] += 1
    abstract = [None if k is None else _KID_ABSTRACT[k] for k in kids]
    token = LAZY.set(None)
    try:
        out = jax.eval_shape(kernel, *abstract)
    finally:
        LAZY.reset(token)
    leaves, treedef = jax.tree_util.tree_flatten(out)
    avals = tuple(jax.core.ShapedArray(x.shape, x.dtype, weak_type=bool(getattr(x, "weak_type", False)))
                  for x in leaves)
    out_kids = tuple(_kid((a.shape, a.dtype, a.weak_type), jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type))
                     for a in avals)
    # The elements of its largest input or output: a trace of small values compiles for speed (see flush).
    largest = max([_size(_KID_ABSTRACT[k]) for k in (*out_kids, *kids) if k is not None], default=0)
    sig = _SIGS[(kernel, kids)] = (out_kids, avals, None if treedef == _LEAF else treedef, largest)
    return sig


def _replay(records: tuple, live: tuple, *externals: Any) -> list:
    """The program a flush compiles: every record in order, on the external inputs; the live outputs."""
    slots: list = []
    for kernel, refs, treedef in records:  # placed: one by one at the top level, or inside the program's trace
        out = placed(kernel)(*[None if r is None else externals[r] if r >= 0 else slots[-1 - r] for r in refs])
        if treedef is None:
            slots.append(out)
        else:
            slots.extend(jax.tree_util.tree_leaves(out))
    return [slots[i] for i in live]


def current() -> Optional[Recorder]:
    """The active recorder, or ``None``."""
    return LAZY.get()
