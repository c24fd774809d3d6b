"""Deferred dispatch: eager ops are recorded and run when a value is needed, one program per recurring trace.

With deferred dispatch on (:func:`enable`), a thread's eager ops record their kernel calls on
the thread's :class:`DeferredRecorder` instead of dispatching each (``fg.lazy``'s recorder, kept
for the whole thread). The pending trace runs at the next point a value is needed -- a host read
(``.item()``, ``print``, ``.numpy()``), a ``jnp`` function on the data -- and at each backward pass.
Shape and dtype errors still raise at the op that caused them (the recorder evaluates each
kernel's output shape as it records).

What differs from ``with fg.lazy():`` is when a trace compiles. A block asks for one program, so
its first flush compiles. Here a trace of a structure not yet seen runs *one kernel at a time*
(each op's kernel is already compiled: the cost is eager's), and its structure compiles once those
runs have cost :data:`fgraph.autograd._compile_rent.RENT` times the expected compile (the rent
rule of fusion, ``_compile_rent.py``): a training loop's step settles into one program, a cell
edited every few runs never waits for a compile. Recording buys nothing until then, so a trace that
has recurred without its rent being due stops being recorded: the steps after it run as eager ones and
pay the rent (``_observe``), and recording resumes when it is due. The compile runs on fusion's background worker
(``_background.py``; in the foreground under ``fusion.set_background(False)``) while the trace keeps
running kernel by kernel.

A backward pass first runs the pending forward trace, then runs eagerly (fusion's programs serve
it as in eager mode), except once the structure of forward and backward together recurs and has
paid its rent: then the pass is recorded too (one call of ``fused_lazy``'s kernel) and the trace
flushes at the pass's end, so a training step (update, forward, backward) is one program.

A recorded step is then raced against itself run eagerly (:class:`_Race`): a few steps each way,
timed from one pass to the next, and the faster way is kept. Recording wins where Python is the
bottleneck (many small ops); where compute is (a few large matmuls), eager dispatch overlaps each
kernel with the Python of the next, which a recorded step, run only once its pass ends, cannot.

Example:
    >>> import fgraph as fg
    >>> from fgraph.lazy import _deferred
    >>> before = _deferred.is_enabled()    # on by default in the thread that imported fgraph
    >>> _deferred.enable()
    >>> x = fg.tensor([1.0, 2.0], requires_grad=True)
    >>> y = (x * x).sum()          # recorded, not run
    >>> fg.lazy.pending() > 0
    True
    >>> y.item()                   # a host read runs the trace
    5.0
    >>> _deferred.enable() if before else _deferred.disable()
"""
from __future__ import annotations

import collections
import time
from typing import Any, Optional

from fgraph._kernel_jit import traced
from fgraph._numbers import _at_top_level
from fgraph.lazy import _background, _xla_compiles
from fgraph.lazy._recorder import STATS, ProgramKey, Recorder, _jit_quick_replay, _jit_replay, _PROGRAMS, \
    array_type, cached_program, replay_one_by_one, run
from fgraph.lazy._state import LAZY

__all__ = ["DeferredRecorder", "enable", "disable", "is_enabled", "eager_section"]

#: Structures a trace or a step was seen with and has not compiled for: key -> [sightings, seconds paid].
_SEEN: "collections.OrderedDict[Any, list]" = collections.OrderedDict()
MAX_SEEN = 256
#: Steps (pending forward trace, backward structure) whose rent is paid, each with its race (recorded or eager).
_STEPS: "collections.OrderedDict[Any, _Race]" = collections.OrderedDict()
#: A trace compiles once seen this many times (and its rent is paid).
COMPILE_AFTER = 2

for _name in ("one_by_one", "steps_recorded", "observed", "races_recorded", "races_eager"):
    STATS.setdefault(_name, 0)


class _Race:
    """A recorded step timed against the same step run eagerly; ``verdict`` is the way it runs from then on.

    Each way is timed over :attr:`SAMPLES` consecutive steps, from the start of one backward pass to the
    start of the next (the whole loop: forward, pass, optimizer, the caller's reads), after
    :attr:`WARMUP` steps that settle it; a step during which fusion's worker compiled is not a sample (the
    compile shares the cores with whichever way runs then). Eager must be :attr:`MARGIN` faster to win:
    recording is the way with less Python, which counts for more on a faster device.

    A verdict holds for :attr:`RECHECK` steps, then the race runs again (and the next verdict holds twice as
    long, up to :attr:`RECHECK_MAX`): the samples are few, and a machine's load changes.
    """

    __slots__ = ("recorded", "eager", "verdict", "skip", "steps", "recheck")
    SAMPLES = 5
    WARMUP = 2
    MARGIN = 0.05
    RECHECK = 50
    RECHECK_MAX = 1600

    def __init__(self) -> None:
        self.recorded: list = []
        self.eager: list = []
        self.verdict: Optional[str] = None  # "recorded" or "eager" once decided
        self.skip = self.WARMUP  # steps left before the recorded samples count
        self.steps = 0  # steps run by the current verdict
        self.recheck = self.RECHECK

    def due_again(self) -> bool:
        """Count a step run by the verdict; at :attr:`recheck` of them the verdict is dropped: the race runs again."""
        self.steps += 1
        if self.steps < self.recheck:
            return False
        self.steps, self.recheck = 0, min(2 * self.recheck, self.RECHECK_MAX)
        self.verdict, self.skip = None, self.WARMUP
        return True

    def wants_eager_trial(self) -> bool:
        return self.verdict is None and len(self.recorded) >= self.SAMPLES

    def decide(self) -> str:
        """Called once both ways have their samples. Each way's fastest sample stands for it: what disturbs a
        step (another process, a burst of the machine's load) only adds time, so the minimum is the
        least disturbed estimate of a way's own cost (as ``timeit`` takes it); medians of five samples on a
        shared 2-core VM chose eager for ResNet-8 in one run of four (30 ms a step against 23 recorded)."""
        faster = min(self.eager) < (1 - self.MARGIN) * min(self.recorded)
        self.verdict = "eager" if faster else "recorded"
        STATS["races_eager" if faster else "races_recorded"] += 1
        self.recorded, self.eager = [], []
        return self.verdict


def _clock() -> float:
    return time.perf_counter()


def _compile_epoch() -> Optional[tuple]:
    """``(fusion's worker's epoch, XLA compiles so far)``, or ``None`` while the worker has work
    (``CompileWorker.epoch``): a step timed while any compile ran is not a sample. The count includes the
    caller's own compiles (an eager trial's first pass compiles its kernels: 150-200 ms for ResNet-8)."""
    from fgraph.autograd.fusion import _worker

    epoch = _worker.epoch()
    return None if epoch is None else (epoch, _xla_compiles.count())


class DeferredRecorder(Recorder):
    """A thread's recorder under deferred dispatch: flushes compile by the rent rule (module docstring)."""

    deferred = True
    default_device_only = True
    #: Pending records past this many flush at once (keeps a trace that no one reads bounded).
    max_records = 4096

    def __init__(self) -> None:  # no array is made here: turning it on at import must not start JAX's backend
        self._reset()
        self.compile_next = False  # the step's rent is paid: compile the trace this flush takes
        self._charging: Optional[list] = None
        self._pass_key: Any = None  # while an eager pass flushes its trace: the pass's structure
        self._observing: Optional[list] = None  # [entry, pass structure, records, segment start, key]: _observe
        self._last_pass: tuple = (None, None, 0.0, None)  # (race, way, start, compile epoch) of the last raced pass
        self._program_ran = False  # whether the last flush ran a compiled program
        self._trial: Optional[list] = None  # a race's eager trial, to start once the current pass has ended

    def call(self, kernel: Any, args: Any) -> Any:
        if self._observing is not None:  # a recurring step pays its rent eagerly: nothing to record yet
            STATS["observed"] += 1
            # nothing is pending; a placeholder left in a tensor is resolved (__jax_array__)
            return (kernel if _at_top_level() else traced(kernel))(*args)
        if not _at_top_level():  # inside jax.jit / vmap of user code: the op is part of that trace
            return self._bypass(kernel, args)
        array_type()
        out = super().call(kernel, args)
        if len(self.records) >= self.max_records:
            self.flush()
        return out

    def flush(self, leave_out: Optional[set] = None) -> None:
        taken = self.take(leave_out)
        if taken is None:
            return
        key, alive, externals, quick = taken
        self._program_ran = False
        compile_now, self.compile_next = self.compile_next, False
        if _background.ready:
            _background.install_ready()
        if key not in _PROGRAMS:
            if key in _background.compiling:  # its program is compiling on fusion's worker: one kernel at a time
                STATS["one_by_one"] += 1
                run(replay_one_by_one(key), alive, externals)
                if self._pass_key is not None:  # and the steps until it is ready run eagerly
                    self._observing = [None, self._pass_key, len(key[0]), None, key]
                return
            if not compile_now:
                entry = _sighting(key)
                if not _due(entry, len(key[0])):
                    STATS["one_by_one"] += 1
                    start = time.perf_counter()
                    run(replay_one_by_one(key), alive, externals)
                    entry[1] += time.perf_counter() - start
                    if entry[0] >= COMPILE_AFTER and self._pass_key is not None:
                        self._observing = [entry, self._pass_key, len(key[0]), None, key]
                    return
                _SEEN.pop(key, None)
            if _background.submit(key, quick, externals):
                STATS["one_by_one"] += 1
                run(replay_one_by_one(key), alive, externals)
                return
        run(cached_program(key, _jit_quick_replay if quick else _jit_replay), alive, externals)
        self._program_ran = True

    # -- backward passes (the engine calls these) -------------------------------------------------
    def records_pass(self, found: Any) -> bool:
        """Whether the backward pass of structure ``found`` is recorded onto the pending trace (its step has
        paid its rent and fusion has compiled the pass); if not, the rent of running it eagerly is charged."""
        if self._observing is not None:
            return self._observe(found)
        step = ProgramKey((tuple(self.records), tuple(self.ext_kids), found.key))  # hashed once: looked up twice
        race = _STEPS.get(step)
        if race is not None:
            _STEPS.move_to_end(step)
            return self._run_raced(race, found)
        entry = _sighting(step)
        if _due(entry, len(self.records) + len(found.order)) and _fusion_ready(found.key):
            _SEEN.pop(step, None)
            race = _STEPS[step] = _Race()
            if len(_STEPS) > MAX_SEEN:
                _STEPS.popitem(last=False)
            return self._run_raced(race, found)
        self._charging = entry
        self._pass_key = found.key
        return False

    def _run_raced(self, race: _Race, found: Any) -> bool:
        """Whether this pass of a step whose rent is paid is recorded (see :class:`_Race`)."""
        if race.verdict == "eager":
            self._observing = [race, found.key, 0, None, None]
            return False
        if race.verdict == "recorded":
            race.due_again()  # when due, this step starts the race again
        now, epoch = _clock(), _compile_epoch()
        last_race, way, start, start_epoch = self._last_pass
        self._last_pass = (race, "recorded", now, epoch)
        if race.verdict is None and last_race is race and way == "recorded":
            if not self._program_ran:  # the step ran kernel by kernel (its program is compiling): not timed yet
                race.skip = race.WARMUP
            elif epoch is None or epoch != start_epoch:  # a compile shared the cores with this step: no sample
                pass
            elif race.skip:
                race.skip -= 1
            else:
                race.recorded.append(now - start)
            if race.wants_eager_trial():  # this step is recorded already: the trial starts after its pass
                self._trial = [race, found.key, 0, None, None]
        return True

    def _race_eagerly(self, race: _Race) -> None:
        """A pass of a raced step that runs eagerly (its trial, or its verdict)."""
        if race.verdict is not None:
            if race.due_again():
                self._observing = None  # the next step is recorded: the race runs again
            return
        now, epoch = _clock(), _compile_epoch()
        last_race, way, start, start_epoch = self._last_pass
        self._last_pass = (race, "eager", now, epoch)
        if last_race is race and way == "eager" and epoch is not None and epoch == start_epoch:
            race.eager.append(now - start)
            if len(race.eager) >= race.SAMPLES and race.decide() == "recorded":
                self._observing = None  # the next step is recorded again

    def _observe(self, found: Any) -> bool:
        """A pass while observing. The forward before it ran eagerly: its time (and the pass's) is rent paid by
        the trace that recurred before it. Recording resumes once that rent is due (the trace then compiles at its
        next sighting), once the trace's program, compiling in the background (``entry`` ``None``), is ready, or
        when the pass has another structure (another step: its trace is recorded to learn it).

        Recording a trace that runs kernel by kernel costs about what its ops' own Python costs, and buys
        nothing until its program compiles; so once a trace has recurred without its rent being due, the
        steps that pay that rent run as eager ones do."""
        entry, pass_key, n_records, start, key = self._observing
        if found.key != pass_key:
            self._observing = None
            return False
        if type(entry) is _Race:
            self._race_eagerly(entry)
            return False
        if entry is None:
            if _background.ready:
                _background.install_ready()
            if key in _PROGRAMS or key not in _background.compiling:
                self._observing = None
            return False
        if start is not None:
            entry[1] += time.perf_counter() - start
        self._charging = entry
        if _due(entry, n_records):
            self._observing = None
        return False

    def pass_recorded(self, released: Any = None) -> None:
        """A recorded backward pass ended: run its step (compiled, as its rent is paid). ``released``: the
        pass's structure when it did not retain its graph: values only its saved slots hold are not written
        out (``fgraph/autograd/_saved_only.py``)."""
        STATS["steps_recorded"] += 1
        self.compile_next = True
        leave_out = None
        if released is not None:
            from fgraph.autograd._saved_only import saved_only

            leave_out = saved_only(released.order, self, released.arrays)
        self.flush(leave_out)
        self._start_trial()

    def _start_trial(self) -> None:
        if self._trial is not None:
            self._observing, self._trial = self._trial, None

    def go_eager(self) -> tuple:
        """Before an eager backward pass: flush, switch recording off; returns what :meth:`back` needs."""
        start = time.perf_counter()
        self.flush()
        self._pass_key = None
        charging, self._charging = self._charging, None
        return LAZY.set(None), charging, start

    def back(self, state: tuple) -> None:
        """After the eager pass: recording on again; its time is rent paid by its step."""
        token, charging, start = state
        LAZY.reset(token)
        now = time.perf_counter()
        if charging is not None:
            charging[1] += now - start
        self._start_trial()
        if self._observing is not None:
            self._observing[3] = now  # the next forward's eager time starts here


def _sighting(key: Any) -> list:
    entry = _SEEN.pop(key, None) or [0, 0.0]
    entry[0] += 1
    _SEEN[key] = entry
    if len(_SEEN) > MAX_SEEN:
        _SEEN.popitem(last=False)
    return entry


def _due(entry: list, n_records: int) -> bool:
    from fgraph.autograd import _compile_rent

    return _compile_rent.due(entry[0], entry[1], n_records, COMPILE_AFTER, _state["rent"])


_state: dict = {"rent": None}


def set_rent(rent: Optional[float]) -> None:
    """Deferred traces compile once their kernel-by-kernel runs cost ``rent`` times the expected compile;
    ``None`` (the default): fusion's factor (``fg.autograd.fusion.set_compile_rent``)."""
    if rent is not None and (isinstance(rent, bool) or not isinstance(rent, (int, float)) or not rent >= 0):
        raise ValueError(f"deferred dispatch: rent must be None or a number >= 0, got {rent!r}.")
    _state["rent"] = None if rent is None else float(rent)


def _fusion_ready(structure_key: Any) -> bool:
    from fgraph.autograd import fusion

    return fusion.is_compiled(structure_key)


# -- the switch -------------------------------------------------------------------------------------------------------
def enable() -> None:
    """Turn deferred dispatch on in this thread (other threads keep dispatching op by op)."""
    current = LAZY.get()
    if current is not None and current.deferred:
        return
    if current is not None:
        raise RuntimeError("deferred dispatch: cannot be turned on inside `with fg.lazy():` or fgraph.func.vmap; "
                           "turn it on outside the block.")
    LAZY.set(DeferredRecorder())


def disable() -> None:
    """Run what is pending and turn deferred dispatch off in this thread."""
    current = LAZY.get()
    if current is not None and current.deferred:
        current.flush()
        LAZY.set(None)


def is_enabled() -> bool:
    """Whether this thread's eager ops are deferred."""
    current = LAZY.get()
    return current is not None and current.deferred


class eager_section:
    """Context manager: run what is pending, then dispatch op by op inside (a no-op without deferred dispatch).

    For code that needs concrete values op by op: forward-mode AD's dual numbers, tracing by ``fg.compile``.
    """

    __slots__ = ("_token",)

    def __enter__(self) -> "eager_section":
        current = LAZY.get()
        self._token = None
        if current is not None and current.deferred:
            current.flush()
            self._token = LAZY.set(None)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._token is not None:
            LAZY.reset(self._token)
