"""The mutable state a compiled step reads and writes, as a table of *slots*.

A slot is one place that holds an array-valued thing: a module's parameter or buffer
(``module._parameters[name]``), an optimizer's parameter (``param_groups[g]["params"][i]``),
one entry of that parameter's optimizer state, a numeric option of a group (``lr``,
``betas``...: traced, so a scheduler changing it does not retrace), a generator's key, or a
``GradScaler``'s scale and growth tracker.

:func:`capture` lists the slots of the objects a step touches and their current values.
While tracing, :meth:`StateTable.install` puts *stand-ins* holding the traced arrays into
every slot (the step then runs on the real objects), :meth:`StateTable.read` reads what the
step left there, and :meth:`StateTable.restore` puts the original values back. After the
compiled program ran, :meth:`StateTable.write_back` puts its results into the slots the
way the eager step would have: parameters are *rebound* (``fgraph.nn.parameter.rebind``),
so tied parameters stay tied and every holder sees the new ones.
"""
from __future__ import annotations

import operator
from typing import Any, Iterable, NamedTuple, Optional

import jax

from fgraph._numbers import NUMBER_TYPES, on_device

from fgraph.amp.grad_scaler import GradScaler
from fgraph.compile._write_plan import _DROPPED, _KEEP, _NEW, WritePlan
from fgraph.nn.modules.module import Module
from fgraph.nn.parameter import Parameter, _make_parameter, owners, rebind, track
from fgraph.optim.optimizer import Optimizer
from fgraph.random import Generator, default_generator
from fgraph.tensor import Tensor, _init_leaf, _new_object, _wrap

__all__ = ["StateTable", "WritePlan", "capture", "distinct", "is_stateful", "value_kinds"]

_HOOK_TABLES = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")


def is_stateful(value: Any) -> bool:
    """Whether ``value`` is an object whose state a compiled step threads (Module, Optimizer, Generator,
    GradScaler)."""
    return isinstance(value, (Module, Optimizer, Generator, GradScaler))


class Slot(NamedTuple):
    kind: str          # "module", "param", "state", "hyper", "rng" or "scaler"
    owner: int         # index of the object in the table's ``objects``
    where: tuple       # ("_parameters", name) / (group, index) / (group, index, key) / (group, name) / () /
                       # (attribute,) of a GradScaler: "_scale" or "_growth_tracker"


class StateTable:
    """The objects of one call, their slots and the values the slots held when captured."""

    def __init__(self, objects: list) -> None:
        self.objects = objects
        self.slots: list[Slot] = []
        self.values: list = []          # the slot's value: a Tensor, a key array, or a number / tuple of numbers
        self._saved_state: dict = {}    # optimizer index -> its ``state`` dict (restored after tracing)
        self._next_inputs = None        # see settle
        self._numbers: dict = {}        # id -> (number or tuple of numbers, its device array(s)); see settle
        self._layout: Optional[tuple] = None  # see _input_layout
        for index, obj in enumerate(objects):
            if isinstance(obj, Module):
                self._capture_module(index, obj)
            elif isinstance(obj, Optimizer):
                self._capture_optimizer(index, obj)
            elif isinstance(obj, GradScaler):
                if obj._enabled:
                    obj._lazy_init()  # as its first scale() would: the slots exist from the first call
                self._capture_scaler(index, obj)
            else:
                self.slots.append(Slot("rng", index, ()))
                self.values.append(obj.get_state())

    # -- capture --------------------------------------------------------------------------------------
    def _capture_module(self, index: int, module: Module) -> None:
        for table in ("_parameters", "_buffers"):
            for name, value in module.__dict__[table].items():
                if value is not None:
                    self.slots.append(Slot("module", index, (table, name)))
                    self.values.append(value)

    def _capture_scaler(self, index: int, scaler: GradScaler) -> None:
        if scaler._enabled:
            for name in _SCALER_SLOTS:
                self.slots.append(Slot("scaler", index, (name,)))
                self.values.append(getattr(scaler, name))

    def _capture_optimizer(self, index: int, opt: Optimizer, refresh: bool = True) -> None:
        if refresh:
            opt._refresh()
        for g, group in enumerate(opt.param_groups):
            for name in opt.hyperparameters:
                self.slots.append(Slot("hyper", index, (g, name)))
                self.values.append(group[name])
            for i, p in enumerate(group["params"]):
                self.slots.append(Slot("param", index, (g, i)))
                self.values.append(p)
                for key, value in opt.state.get(p, {}).items():
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(
                            f"fgraph.compile: {type(opt).__name__}.state entry {key!r} is a {type(value).__name__}; "
                            "a compiled step threads only Tensor state (load the state dict with Tensors)."
                        )
                    self.slots.append(Slot("state", index, (g, i, key)))
                    self.values.append(value)

    # -- what the compiled program takes and gives ------------------------------------------------------
    def leaves(self) -> tuple[list, tuple]:
        """The distinct values as program inputs, and per slot the index of its input (static)."""
        inputs, self._which = distinct(self.values)
        return inputs, self._which

    def structure(self) -> tuple:
        """What about these objects changes the traced program (besides the inputs' shapes and dtypes)."""
        parts = []
        for obj in self.objects:
            if isinstance(obj, Module):
                hooks = tuple(tuple(obj.__dict__.get(t, {})) for t in _HOOK_TABLES)
                parts.append(("module", _token(obj), obj.training, hooks))
            elif isinstance(obj, Optimizer):
                parts.append(("optimizer", _token(obj), tuple(obj.static_options(g) for g in obj.param_groups)))
            elif isinstance(obj, GradScaler):
                parts.append(("scaler", _token(obj), _scaler_options(obj)))
            else:
                parts.append(("generator", _token(obj)))
        return tuple(parts), (tuple(self.slots), tuple([_kind_of(value) for value in self.values]))

    def snapshot(self) -> tuple[tuple, list]:
        """``(fingerprint, values)``: what decides these objects' slots and traced program, besides the
        kinds of the values (:func:`value_kinds`), and the slots' values now, read in one cheap walk (no
        submodule or owner search).

        A compiled step calls it on the table of its previous call: an equal fingerprint, with values of
        the same kinds, means the same slots, structure and program, so the table is reused with the
        fresh values. (Tensors are immutable records: values identical to the last call's have the same
        kinds, and need no second look.)
        """
        parts: list = []
        values: list = []
        for obj in self.objects:
            if isinstance(obj, Module):
                d = obj.__dict__
                names = []
                for table in ("_parameters", "_buffers"):
                    for name, value in d[table].items():
                        if value is not None:
                            names.append(name)
                            values.append(value)
                hooks = (tuple([tuple(d.get(t, ())) for t in _HOOK_TABLES])
                         if d.get("_forward_pre_hooks") or d.get("_forward_hooks") or d.get("_backward_pre_hooks")
                         or d.get("_backward_hooks") else None)
                parts.append((obj.training, tuple(d["_modules"].items()), tuple(names), hooks))
            elif isinstance(obj, Optimizer):
                obj._refresh()
                hyper = obj.hyperparameters
                for group in obj.param_groups:
                    entries = []
                    values.extend([group[name] for name in hyper])
                    for p in group["params"]:
                        values.append(p)
                        state = obj.state.get(p)
                        if state:
                            entries.append(tuple(state))
                            values.extend(state.values())
                        else:
                            entries.append(())
                    parts.append((obj.static_options(group), tuple(entries)))
                parts.append(len(obj.param_groups))
            elif isinstance(obj, GradScaler):
                parts.append(_scaler_options(obj))
                if obj._enabled:
                    values.extend([obj._scale, obj._growth_tracker])
            else:
                values.append(obj.get_state())
        return tuple(parts), values

    def reuse(self, values: list, which: tuple) -> None:
        """Take ``values`` (from :meth:`snapshot`, with the same ``which``) as the captured values."""
        self.values = values
        self._which = which

    def known_inputs(self, values: list) -> Optional[list]:
        """The program inputs of ``values`` (from :meth:`snapshot`) without working them out, when the
        slots still hold exactly what the last :meth:`settle` left there (the usual next step)."""
        known = self._next_inputs
        if known is None or len(values) != len(self.values) or not all(map(operator.is_, values, self.values)):
            return None
        return known

    def settle(self, plan: "WritePlan", final: list) -> None:
        """After :meth:`write_back`: remember that the slots hold ``final`` and work out the next call's
        inputs now, while the program runs. The call's own inputs are let go here too, so they are freed
        while the program runs rather than at the next call, before it can start."""
        self._next_inputs = None
        if not plan.same_slots:  # an optimizer's first step: the slots changed
            return
        self.values = final
        layout = self._layout
        if layout is None or layout[0] is not plan or layout[1] is not self._which:
            layout = self._layout = self._input_layout(plan, final)
            if layout is None:
                return
        inputs = [final[i] for i in layout[2]]
        self._next_inputs = self._numbers_on_device(
            [value._array if isinstance(value, Tensor) else value for value in inputs], layout[3])

    def _input_layout(self, plan: "WritePlan", final: list) -> Optional[tuple]:
        """``(plan, which, firsts, kept)`` when ``final`` gives the same program inputs as the call did:
        ``firsts``, per input, the first slot holding it; ``kept``, the inputs the step left as they were (only
        those can be Python numbers). The same for every later call of this plan: its new values are fresh
        objects, one per program output, and the kept ones are shared as the call's inputs were (``which``)."""
        _, which = distinct(final)
        if which != self._which:
            return None
        firsts: list = []
        for i, index in enumerate(which):
            if index == len(firsts):
                firsts.append(i)
        kept = tuple(j for j, i in enumerate(firsts) if plan.sources[i][0] is _KEEP)
        return plan, self._which, tuple(firsts), kept

    def _numbers_on_device(self, inputs: list, positions: Iterable[int]) -> list:
        """``inputs`` with each Python number (a learning rate, Adam's betas) among ``positions`` as a device
        array, the same array for as long as the slot holds the same number object: jit copies a number from
        the host on every call, a synchronous transfer per number and call on a GPU."""
        before, after = self._numbers, {}
        for j in positions:
            value = inputs[j]
            if type(value) in NUMBER_TYPES or type(value) is tuple:
                arrays, entry = on_device(value, before.get(id(value)))
                if entry is not None:
                    after[id(value)] = entry
                inputs[j] = arrays
        self._numbers = after
        return inputs

    # -- while tracing ----------------------------------------------------------------------------------
    def install(self, inputs: list, which: tuple) -> None:
        """Put stand-ins holding ``inputs`` (traced) into every slot."""
        self._given: dict = {}
        made: dict = {}
        for obj in self.objects:
            if isinstance(obj, GradScaler):
                _check_scaler_idle(obj, "before")
        for slot, value, index in zip(self.slots, self.values, which):
            if index not in made:
                made[index] = _standin(value, inputs[index])
                self._given[id(made[index])] = index
            if slot.kind == "param" and slot.owner not in self._saved_state:
                opt = self.objects[slot.owner]
                self._saved_state[slot.owner] = opt.state
                opt.state = {}  # rekeyed by the stand-ins
            self._put(slot, made[index], fresh=True)
        self._standins = made

    def read(self) -> tuple["WritePlan", list]:
        """What the step left in the objects: how to write each slot back after a call (a
        :class:`WritePlan`, the same for every call of this structure) and the new values."""
        probe = StateTable.__new__(StateTable)
        probe.objects, probe.slots, probe.values, probe._saved_state = self.objects, [], [], {}
        for index, obj in enumerate(self.objects):
            if isinstance(obj, Module):
                probe._capture_module(index, obj)
            elif isinstance(obj, Optimizer):
                probe._capture_optimizer(index, obj, refresh=False)
            elif isinstance(obj, GradScaler):
                _check_scaler_idle(obj, "after")
                probe._capture_scaler(index, obj)
            else:
                probe.slots.append(Slot("rng", index, ()))
                probe.values.append(obj._key)
        unsure = self._unsure_state()
        conditional: list = []  # (position, output index of found_inf, captured slot index or None)
        slot_index = {slot: i for i, slot in enumerate(self.slots)}
        first_holder: dict = {}  # input index -> the first captured slot holding it
        for i, index in enumerate(self._which):
            first_holder.setdefault(index, i)
        outputs: list = []
        position: dict = {}
        sources = []
        for slot, value in zip(probe.slots, probe.values):
            captured = slot_index.get(slot)
            if slot.kind == "hyper" and captured is not None and self.values[captured] is value:
                sources.append((_KEEP, captured))
                continue
            given = self._given.get(id(value))
            if slot.kind == "hyper":
                opt = self.objects[slot.owner]
                raise RuntimeError(
                    f"fgraph.compile: the step changed {type(opt).__name__}.param_groups[{slot.where[0]}]"
                    f"[{slot.where[1]!r}] while tracing; that runs once, not at every call. Call scheduler.step() "
                    "(or set the option) outside the compiled function: options are inputs of the program."
                )
            if given is not None:
                unchanged = captured is not None and self._which[captured] == given
                sources.append((_KEEP, captured if unchanged else first_holder[given]))
                continue
            if id(value) not in position:
                position[id(value)] = len(outputs)
                outputs.append(_array_of(value))
            if slot.kind == "state" and unsure:
                found = unsure.get(self._state_key(slot))
                if found is not None:
                    if id(found) not in position:
                        position[id(found)] = len(outputs)
                        outputs.append(found)
                    conditional.append((len(sources), position[id(found)], captured))
            sources.append((_NEW, position[id(value)], _kind_of(value)))
        plan = WritePlan.of(tuple(probe.slots), tuple(sources), slot_index, tuple(self.slots), tuple(conditional))
        return plan, outputs

    def _unsure_state(self) -> dict:
        """``(optimizer index, id(parameter), key) -> found_inf`` of the optimizer state a GradScaler's traced
        step made without an old value to select when ``found_inf`` (see ``grad_scaler._selected_step``)."""
        index_of = {id(obj): i for i, obj in enumerate(self.objects)}
        unsure = {}
        for obj in self.objects:
            if isinstance(obj, GradScaler):
                for opt, param, keys, found in obj._traced_first_states:
                    for key in keys:
                        unsure[(index_of.get(id(opt)), id(param), key)] = found
        return unsure

    def _state_key(self, slot: Slot) -> tuple:
        g, i, key = slot.where
        return (slot.owner, id(self.objects[slot.owner].param_groups[g]["params"][i]), key)

    def restore(self) -> None:
        """Put every captured value back (after tracing, also after a failed trace)."""
        for index, state in self._saved_state.items():
            self.objects[index].state = state
        for obj in self.objects:
            if isinstance(obj, Optimizer):
                obj.__dict__.pop("_traced_hyper", None)
            elif isinstance(obj, GradScaler):
                obj._per_optimizer, obj._traced_first_states = {}, []
        for slot, value in zip(self.slots, self.values):
            if slot.kind != "state":
                self._put(slot, value, fresh=False)
        self._saved_state = {}

    # -- after the program ran -------------------------------------------------------------------------
    def write_back(self, plan: "WritePlan", new: list) -> list:
        """Put the program's results into the objects as the eager step would have (parameters rebound,
        optimizer state keyed by the new parameters); returns each of ``plan.slots``' new value."""
        values = self.values
        made = [_wrap(new[output]) if kind is None else _rebuild(new[output], kind) for output, kind in plan.outputs]
        final = [made[index] if is_new else values[index] for is_new, index in plan.gather]
        skipped: dict = {}
        for position, found, captured in plan.conditional:
            # State made by a step the GradScaler may have skipped: read found_inf on the host (only at the
            # calls that make optimizer state) and, if the step was skipped, leave the state as it was.
            if found not in skipped:
                skipped[found] = bool(new[found])
            if skipped[found]:
                final[position] = values[captured] if captured is not None else _DROPPED
        renamed = {}
        for position, captured in plan.renamable:
            old, value = values[captured], final[position]
            if value is not old and isinstance(old, Parameter) and isinstance(value, Parameter):
                renamed[old] = value
        if renamed:
            rebind(renamed)  # every module holding an old parameter, captured or not, gets the new one
        objects = self.objects
        for position, owner, table, name in plan.module_puts:
            objects[owner].__dict__[table][name] = final[position]
        for position, owner, g, i in plan.param_puts:
            objects[owner].param_groups[g]["params"][i] = final[position]
        for position in plan.other_puts:
            self._put(plan.slots[position], final[position], fresh=False)
        for owner in plan.optimizers:
            opt = objects[owner]
            groups = opt.param_groups
            state: dict = {}
            for g, i, entries in plan.states[owner]:
                entry = {key: final[position] for position, key in entries if final[position] is not _DROPPED}
                if entry:
                    state[groups[g]["params"][i]] = entry
            opt.state = state
        return final

    # -- slot access ----------------------------------------------------------------------------------------
    def _put(self, slot: Slot, value: Any, *, fresh: bool) -> None:
        obj = self.objects[slot.owner]
        if slot.kind == "module":
            table, name = slot.where
            obj.__dict__[table][name] = value
            if fresh and isinstance(value, Parameter):
                track(value, obj, name)
        elif slot.kind == "param":
            g, i = slot.where
            obj.param_groups[g]["params"][i] = value
        elif slot.kind == "state":
            g, i, key = slot.where
            obj.state.setdefault(obj.param_groups[g]["params"][i], {})[key] = value
        elif slot.kind == "hyper":
            g, name = slot.where
            if fresh:  # the group keeps its Python value (it shapes the update); the kernel gets the traced one
                traced = obj.__dict__.setdefault("_traced_hyper", {})
                traced.setdefault(id(obj.param_groups[g]), {})[name] = value
        elif slot.kind == "scaler":
            setattr(obj, slot.where[0], value)
        else:
            obj._key = value if fresh else _uncommitted_like(value, obj._key)


def _uncommitted_like(value: Any, old: Any) -> Any:
    """``value`` uncommitted when ``old`` (the slot's previous array) was, on the same one device.

    A program's outputs are committed whenever one of its inputs is (a module's parameters are), so
    a generator's key written back from a step would commit every later draw of the default stream
    and with it every ``fg.rand(...)``, which then refuses to mix with arrays on another device.
    The eager stream stays uncommitted; so does the compiled one. The array is rewrapped, not copied
    (JAX has no public way to drop the commitment; where its private constructor moved, the key
    simply stays committed)."""
    if (not isinstance(value, jax.Array) or isinstance(value, jax.core.Tracer) or not value.committed
            or not isinstance(old, jax.Array) or isinstance(old, jax.core.Tracer) or old.committed
            or len(value.devices()) != 1 or value.devices() != old.devices()):
        return value
    try:
        from jax._src.array import ArrayImpl
        return ArrayImpl(value.aval, value.sharding, value._arrays, committed=False)
    except Exception:  # a JAX whose internals differ: committed, as before
        return value


_SCALER_SLOTS = ("_scale", "_growth_tracker")


def _scaler_options(scaler: GradScaler) -> tuple:
    """What about a GradScaler shapes the traced program (its factors are constants of the program)."""
    return (scaler._enabled, scaler._growth_factor, scaler._backoff_factor, scaler._growth_interval)


def _check_scaler_idle(scaler: GradScaler, when: str) -> None:
    """A compiled step threads a GradScaler's scale and growth tracker; an ``unscale_``/``step`` round must
    begin and end (``update()``) inside it."""
    if scaler._per_optimizer:
        if when == "before":
            raise RuntimeError(
                "fgraph.compile: the GradScaler has an unscale_()/step() round open from outside the compiled step; "
                "call scaler.update() first, or do unscale_, step and update all inside the compiled step.")
        raise RuntimeError(
            "fgraph.compile: the compiled step called scaler.unscale_() or scaler.step() but not scaler.update(); "
            "call update() inside the compiled step too (whether the step was skipped is a traced value that "
            "exists only inside the program).")


def capture(objects: Iterable[Any]) -> StateTable:
    """The state table of ``objects`` plus what they imply: every submodule of a module, the modules
    holding an optimizer's parameters, and the default generator."""
    ordered: list = []
    names: dict = {}

    def add(obj: Any, name: str) -> None:
        if id(obj) not in names:
            names[id(obj)] = name
            ordered.append(obj)

    def add_module(module: Module) -> None:
        if id(module) in names:  # and with it, its submodules
            return
        root = type(module).__name__
        for path, sub in module.named_modules():
            add(sub, f"{root}.{path}" if path else root)

    for obj in objects:
        if isinstance(obj, Module):
            add_module(obj)
        else:
            add(obj, type(obj).__name__)
    for obj in list(ordered):
        if isinstance(obj, Optimizer):
            for p in obj.parameters():
                if isinstance(p, Parameter):
                    for module, _ in owners(p):
                        add_module(module)
    add(default_generator, "default_generator")
    table = StateTable(ordered)
    table.names = [names[id(obj)] for obj in ordered]
    return table


def slot_name(table: StateTable, slot: Slot) -> str:
    """A readable name of a slot, for retrace explanations (``Sequential.0.weight``, ``Adam.state[0]['exp_avg']``)."""
    owner = table.names[slot.owner]
    if slot.kind == "module":
        return f"{owner}.{slot.where[1]}"
    if slot.kind == "param":
        return f"{owner}.param_groups[{slot.where[0]}]['params'][{slot.where[1]}]"
    if slot.kind == "state":
        return f"{owner}.state[group {slot.where[0]}, param {slot.where[1]}][{slot.where[2]!r}]"
    if slot.kind == "hyper":
        return f"{owner}.param_groups[{slot.where[0]}][{slot.where[1]!r}]"
    if slot.kind == "scaler":
        return f"{owner}.{slot.where[0]}"
    return f"{owner} state"


# -- values ---------------------------------------------------------------------------------------------
def value_kinds(values: list) -> tuple:
    """What about each slot's value, besides its shape and dtype, shapes the traced program."""
    return tuple([_kind_of(value) for value in values])


def distinct(values: list) -> tuple[list, tuple]:
    """The distinct values (by identity) as program inputs, and per value the index of its input."""
    inputs: list = []
    position: dict = {}
    which = []
    for value in values:
        index = position.get(id(value))
        if index is None:
            index = position[id(value)] = len(inputs)
            inputs.append(value._array if isinstance(value, Tensor) else value)
        which.append(index)
    return inputs, tuple(which)


def _array_of(value: Any) -> Any:
    if isinstance(value, Tensor):
        return value._array
    return value  # a key array, a number, a tuple of numbers (jit traces numbers as weak-typed scalars)


def _kind_of(value: Any) -> tuple:
    if isinstance(value, Parameter):
        return ("parameter", value.requires_grad)
    if isinstance(value, Tensor):
        return ("tensor", value.requires_grad)
    if value is None:
        return ("none",)
    return ("value",)


def _standin(value: Any, traced: Any) -> Any:
    if isinstance(value, Parameter):
        return _make_parameter(traced, value.requires_grad)
    if isinstance(value, Tensor):
        out = _new_object(Tensor)
        _init_leaf(out, traced, value.requires_grad)
        return out
    return traced


def _rebuild(array: Any, kind: tuple) -> Any:
    """A program output back in its slot's type (the program's outputs are committed: no placing)."""
    if kind[0] == "parameter":
        return _make_parameter(array, kind[1], place=False)
    if kind[0] == "tensor":
        if not kind[1]:
            return _wrap(array)
        out = _new_object(Tensor)
        _init_leaf(out, array, kind[1])
        return out
    return array


_TOKENS: dict = {}


def _token(obj: Any) -> Any:
    """A hashable stand-in for an object's identity that does not keep it alive (modules: their lineage)."""
    if isinstance(obj, Module):
        from fgraph.nn.modules._pytree import _lineage

        return _lineage(obj)
    return ("object", id(obj), type(obj).__name__)

