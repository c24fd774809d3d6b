"""``GradScaler``: loss scaling for float16 training, in fgraph's returned-gradients style.

float16 gradients underflow; scaling the loss by ``S`` scales every gradient by ``S`` and keeps
them representable. ``scaler.scale(loss).backward()`` returns the scaled gradients;
``scaler.step(opt, grads)`` unscales them, skips the step if any is inf or NaN (the scale was too
large), else steps; ``scaler.update()`` halves the scale after a skipped step and doubles it after
``growth_interval`` clean steps in a row (PyTorch's defaults and algorithm). The inf/NaN check and
the scale update are device programs; whether to step is read on the host, as in PyTorch.

Inside ``fg.compile`` the scale and growth tracker are slots of the compiled step's state
(``fgraph.compile._state``), ``step`` is a traced select (``where(found_inf, old, new)`` on every
parameter and optimizer state entry it stepped: :func:`_selected_step`) and ``update`` the traced
growth/backoff. Nothing is read on the host, except ``found_inf`` at a call whose step makes optimizer
state (an optimizer's first step), to drop that state if the step was skipped (see ``docs/amp.md``).

Example:
    >>> import fgraph as fg
    >>> model = fg.nn.Linear(2, 1)
    >>> opt = fg.optim.SGD(model.parameters(), lr=0.1)
    >>> scaler = fg.amp.GradScaler("cpu", init_scale=1024.0)
    >>> grads = scaler.scale(model(fg.ones(3, 2)).sum()).backward()
    >>> scaler.step(opt, grads)
    >>> scaler.update()
    >>> scaler.get_scale()
    1024.0
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, Optional

import jax
import jax.numpy as jnp

__all__ = ["GradScaler"]

_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"


class GradScaler:
    """Loss scaling with PyTorch's ``torch.amp.GradScaler`` options and state.

    ``device``: ``"cpu"`` or ``"cuda"`` (PyTorch's default is ``"cuda"``; it changes nothing here but the
    name in ``state_dict``). ``enabled=False`` makes every method a pass-through.
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        if growth_factor <= 1.0:
            raise ValueError(f"GradScaler: growth_factor must be > 1.0, got {growth_factor}.")
        if not 0.0 < backoff_factor < 1.0:
            raise ValueError(f"GradScaler: backoff_factor must be in (0, 1), got {backoff_factor}.")
        self._device = device
        self._enabled = bool(enabled)
        self._init_scale, self._growth_factor, self._backoff_factor = float(init_scale), growth_factor, backoff_factor
        self._growth_interval = int(growth_interval)
        self._scale: Any = None  # a float32 device scalar once first used (lazily, as PyTorch)
        self._growth_tracker: Any = None
        self._per_optimizer: dict = {}  # id(optimizer) -> {"stage": ..., "found_inf": array}
        # While fg.compile traces a step: (optimizer, parameter, state keys, found_inf) of optimizer state
        # made by a step that may be skipped (see _selected_step); fgraph.compile._state reads it.
        self._traced_first_states: list = []

    # -- scaling -------------------------------------------------------------------------------------
    def _lazy_init(self) -> None:
        if self._scale is None:
            self._scale = jnp.asarray(self._init_scale, jnp.float32)
            self._growth_tracker = jnp.asarray(0, jnp.int32)

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a Tensor, or lists/tuples of them) multiplied by the current scale."""
        from fgraph.tensor import Tensor, _wrap

        if not self._enabled:
            return outputs
        self._lazy_init()
        if isinstance(outputs, Tensor):
            return outputs * _wrap(self._scale.astype(outputs.dtype))
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise TypeError(f"GradScaler.scale: outputs must be a Tensor or a list/tuple of Tensors, got "
                        f"{type(outputs).__name__}.")

    def _entry(self, optimizer: Any) -> dict:
        return self._per_optimizer.setdefault(id(optimizer), {"stage": _READY, "found_inf": None})

    def unscale_(self, optimizer: Any, grads: Any) -> Any:
        """The gradients divided by the scale (same structure as ``grads``); notes whether any is inf/NaN."""
        if not self._enabled:
            return grads
        self._lazy_init()
        entry = self._entry(optimizer)
        if entry["stage"] is _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if entry["stage"] is _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        unscaled, found = _unscale(grads, self._scale)
        entry["stage"], entry["found_inf"], entry["grads"] = _UNSCALED, found, unscaled
        return unscaled

    def step(self, optimizer: Any, grads: Any = None, *args: Any, **kwargs: Any) -> Any:
        """Unscale ``grads`` (unless :meth:`unscale_` did) and step ``optimizer`` with them unless one is inf/NaN."""
        if not self._enabled:
            return optimizer.step(grads, *args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._lazy_init()
        entry = self._entry(optimizer)
        if entry["stage"] is _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        unscaled_here = entry["stage"] is _READY
        if unscaled_here:
            if grads is None:
                raise TypeError("GradScaler.step(optimizer, grads): pass the gradients backward returned "
                                "(fgraph returns them instead of storing .grad).")
            self.unscale_(optimizer, grads)
        found = entry["found_inf"]
        stored = entry.pop("grads")
        # after an explicit unscale_, the gradients passed here are the ones to use (clipped, say), as torch
        # steps with whatever .grad holds by then; the inf check stays unscale_'s
        unscaled = stored if unscaled_here or grads is None else grads
        entry["stage"] = _STEPPED
        if isinstance(found, jax.core.Tracer):  # inside fg.compile: step, then keep the old values if found
            self._check_threaded("step")
            return _selected_step(self, optimizer, unscaled, found, args, kwargs)
        if bool(found):
            return None
        return optimizer.step(unscaled, *args, **kwargs)

    def update(self, new_scale: Any = None) -> None:
        """Back off the scale if a step this round saw inf/NaN, else grow it every ``growth_interval`` steps."""
        if not self._enabled:
            return
        self._lazy_init()
        if new_scale is not None:
            from fgraph.tensor import Tensor

            value = new_scale._array if isinstance(new_scale, Tensor) else new_scale
            self._scale = jnp.asarray(value, jnp.float32).reshape(())
        else:
            founds = [e["found_inf"] for e in self._per_optimizer.values() if e["found_inf"] is not None]
            if not founds:
                raise AssertionError("No inf checks were recorded prior to update.")
            found = functools_or(founds)
            if isinstance(found, jax.core.Tracer):
                self._check_threaded("update")
            self._scale, self._growth_tracker = _updated(self._scale, self._growth_tracker, found,
                                                         self._growth_factor, self._backoff_factor,
                                                         self._growth_interval)
        self._per_optimizer = {}

    def _check_threaded(self, method: str) -> None:
        if not isinstance(self._scale, jax.core.Tracer):
            self._per_optimizer = {}  # no traced values left behind
            raise RuntimeError(
                f"GradScaler.{method} is being traced, but this scaler's scale is not part of the compiled step's "
                "state: fg.compile threads a GradScaler passed as an argument or reached through the function's "
                "closure or globals. Pass the scaler to the compiled function.")

    # -- state ---------------------------------------------------------------------------------------
    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale)

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = int(new_interval)

    def is_enabled(self) -> bool:
        return self._enabled

    def _get_growth_tracker(self) -> int:
        return 0 if self._growth_tracker is None else int(self._growth_tracker)

    def state_dict(self) -> dict:
        """PyTorch's keys: ``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval``, ``_growth_tracker``."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: Mapping) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        self._scale = jnp.asarray(self._init_scale, jnp.float32)
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = jnp.asarray(int(state_dict["_growth_tracker"]), jnp.int32)


def _selected_step(scaler: GradScaler, optimizer: Any, grads: Any, found: Any, args: tuple, kwargs: dict) -> None:
    """The traced skip: step ``optimizer``, then put ``where(found, old, new)`` into every parameter it stepped
    and every entry of their state (Adam's ``step`` included), so a step that saw inf/NaN changes nothing.

    State the step made for a parameter that had none (its first step: SGD's momentum buffer starts as
    ``None``, which no select can give back) is listed in ``scaler._traced_first_states``; the compiled
    call drops it after the program ran when ``found`` is true (see ``fgraph.compile._state``).
    """
    from fgraph.nn.parameter import Parameter, succeed
    from fgraph.tensor import Tensor, _wrap

    optimizer._refresh()
    before = [list(group["params"]) for group in optimizer.param_groups]
    old_states = {id(p): dict(optimizer.state[p]) for params in before for p in params if p in optimizer.state}
    optimizer.step(grads, *args, **kwargs)
    for group, old_params in zip(optimizer.param_groups, before):
        params = group["params"]
        for i, (old, new) in enumerate(zip(old_params, params)):
            if new is old:  # no gradient: not stepped
                continue
            data = jnp.where(found, old._array, new._array)
            kept = succeed(new, data) if isinstance(new, Parameter) else Tensor(data, requires_grad=new.requires_grad)
            params[i] = kept
            state = optimizer.state.pop(new, None)
            if state is None:
                continue
            prior = old_states.get(id(old), {})
            selected, unsure = {}, []
            for key, value in state.items():
                was = prior.get(key)
                if isinstance(value, Tensor) and isinstance(was, Tensor):
                    selected[key] = _wrap(jnp.where(found, was._array, value._array))
                else:
                    selected[key] = value
                    if value is not was:
                        unsure.append(key)
            optimizer.state[kept] = selected
            if unsure:
                scaler._traced_first_states.append((optimizer, kept, tuple(unsure), found))
    return None


def functools_or(founds: list) -> Any:
    out = founds[0]
    for f in founds[1:]:
        out = jnp.logical_or(out, f)
    return out


@jax.jit
def _unscale_arrays(arrays: list, scale: Any) -> tuple:
    inv = 1.0 / scale
    out = [(a * inv.astype(a.dtype)) for a in arrays]
    found = jnp.zeros((), bool)
    for a in out:
        found = jnp.logical_or(found, ~jnp.all(jnp.isfinite(a)))
    return out, found


def _unscale(grads: Any, scale: Any) -> tuple:
    """``(grads / scale with the same structure, whether any is inf/NaN)`` in one program."""
    from fgraph.tensor import Tensor, _wrap

    if isinstance(grads, Mapping):
        keys = [k for k, g in grads.items() if g is not None]
        arrays, found = _unscale_arrays([grads[k]._array for k in keys], scale)
        return {**{k: None for k in grads}, **dict(zip(keys, map(_wrap, arrays)))}, found
    if isinstance(grads, (list, tuple)):
        present = [i for i, g in enumerate(grads) if g is not None]
        arrays, found = _unscale_arrays([grads[i]._array for i in present], scale)
        out = list(grads)
        for i, a in zip(present, arrays):
            out[i] = _wrap(a)
        return type(grads)(out) if isinstance(grads, tuple) else out, found
    if isinstance(grads, Tensor):
        arrays, found = _unscale_arrays([grads._array], scale)
        return _wrap(arrays[0]), found
    raise TypeError(f"GradScaler: grads must be what backward returned (a mapping), a list of gradients or a "
                    f"Tensor, got {type(grads).__name__}.")


@jax.jit
def _updated_arrays(scale: Any, tracker: Any, found: Any, growth: Any, backoff: Any, interval: Any) -> tuple:
    grown = tracker + 1
    should_grow = grown >= interval
    new_scale = jnp.where(found, scale * backoff, jnp.where(should_grow, scale * growth, scale))
    new_tracker = jnp.where(found | should_grow, 0, grown)
    return new_scale.astype(jnp.float32), new_tracker.astype(jnp.int32)


def _updated(scale: Any, tracker: Any, found: Any, growth: float, backoff: float, interval: int) -> tuple:
    return _updated_arrays(scale, tracker, found, jnp.float32(growth), jnp.float32(backoff), jnp.int32(interval))
