"""Buffer donation for an optimizer's update kernel: PyTorch's in-place memory, without in-place semantics.

PyTorch's ``opt.step()`` overwrites parameters and moments in place, so a step allocates only the
gradients. fgraph's parameters and states are immutable records and its update kernel makes new
arrays, so without more a step's peak holds the old and the new parameters and moments at once
(for Adam, three times the parameters' size above PyTorch's). XLA can write a result into the buffer
of an input that is *donated* (``jax.jit(..., donate_argnums=...)``); the input array is deleted
then, and reading it raises "Array has been deleted". So an array is donated only when nothing but
the step can reach it any more, which CPython's reference counts prove:

* a state array (Adam's moments): its state Tensor is held by the optimizer's ``state[p]`` dict
  alone (not by a ``state_dict()`` the user kept, nor by a variable), that dict by ``opt.state``
  alone, and the array by that Tensor alone (no other record shares it). Its buffer takes the new
  state;
* a gradient: when ``step`` got the gradients as a temporary (``opt.step(loss.backward())``), its
  Tensor is held by that container's entry alone and its array by the Tensor alone. Its buffer takes
  the new *parameter*, which is how the new parameters cost no memory either.

Parameters themselves are never donated: the old parameter record stays readable for whoever holds
it (``old = model.weight``, an autograd graph that saved it, a background compile running that graph).
Gradients a user keeps (``grads = loss.backward(); opt.step(grads)``) are not donated.

What reference counts cannot see is left to JAX and PjRt, which refuse (and copy instead) to donate a
buffer exported elsewhere (a NumPy view from ``.numpy()``, DLPack). Arrays spread over several devices
are not donated (their per-shard arrays are separate objects a user may hold). The counts are
calibrated at import against probe objects held in known ways; donation is off where they cannot be
trusted (not CPython, or a free-threaded build) and gradients are not donated on Python 3.14+, whose
interpreter may pass a caller's variable to a call without a reference of its own.

Which arrays are donated is part of the kernel's argument structure, so each distinct choice compiles
once; in a training loop it is the same at every step. Inside the kernel (:func:`run_update`) the
donated arrays travel in their own argument and their results come first in the output, in the same
order, so XLA pairs each donated input with its own result (JAX pairs a donated input with the first
free output of the same shape and dtype; any other pairing makes XLA copy the input first, which
costs the memory donation was meant to save).
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Optional

import jax
from jax.sharding import SingleDeviceSharding

__all__ = ["seen", "TEMPORARY_ARGUMENT", "plan_donation", "run_update", "distinct_arrays"]


_refs = sys.getrefcount


def seen(obj: object) -> int:
    """``sys.getrefcount(obj)`` as counted from a caller's variable (the calibrated call shape of ``step``)."""
    return sys.getrefcount(obj)


class _Probe:
    def step(self, grads: object, closure: object = None) -> int:  # the call shape of Optimizer.step
        return seen(grads)


def _exact_refcounts() -> bool:
    gil = getattr(sys, "_is_gil_enabled", None)
    return sys.implementation.name == "cpython" and (gil is None or gil())


def _calibrate() -> tuple[Optional[int], Optional[int]]:
    """``(own, temporary)``: ``_refs(x)`` for an object ``x`` held by one variable of the calling frame and
    nothing else, and what ``Optimizer.step`` sees (:func:`seen`) for a ``grads`` passed as a temporary
    (``None``: a temporary cannot be told from a caller's variable on this interpreter)."""
    if not _exact_refcounts():
        return None, None
    obj = object()
    own = _refs(obj)
    probe = _Probe()
    temporary = probe.step(object())
    held = object()
    distinguishable = probe.step(held) == temporary + 1 and sys.version_info < (3, 14)
    return own, temporary if distinguishable else None


_OWN, TEMPORARY_ARGUMENT = _calibrate()
_TRACER = jax.core.Tracer


def _donatable(array: Any) -> bool:
    """A concrete array (not a tracer, not NumPy) on one device, worth donating (a scalar saves nothing:
    ``step`` stays as it is)."""
    return isinstance(array, jax.Array) and not isinstance(array, _TRACER) and bool(array.shape) \
        and type(array.sharding) is SingleDeviceSharding and not array.is_deleted()


def plan_donation(active: list, states: list, state: dict, grad_holders: Optional[int]) -> dict:
    """``{(n, ""): gradient array, (n, key): state array}``: the arrays of ``active`` (the step's
    ``(index, param, grad)`` entries) that only the step can reach, safe to donate to the kernel.

    ``states[n]``: the state arrays passed to the kernel for ``active[n]`` (its own dict, made for this
    call; the arrays taken are set to ``None`` there); ``state``: the optimizer's ``state`` (param ->
    dict of Tensors); ``grad_holders``: how many references the gradients' container (a temporary of
    ``step``'s caller) holds to each gradient Tensor it holds, ``None`` when it is not a temporary.

    Every count is of a variable of this frame (``_OWN``) plus the holders named beside it; any other
    holder makes the count differ, and the array is kept. (Loops index dicts rather than iterate their
    items: an items iterator keeps the last pair alive, one more reference.)
    """
    own = _OWN
    if own is None:
        return {}
    donated: dict = {}
    for n in range(len(active)):
        arrays = states[n]
        held = state.get(active[n][1])
        if held is None:  # the first state, made for this step: its arrays are held by `arrays` alone
            for key in tuple(arrays):
                array = arrays[key]
                if type(key) is str and _donatable(array) and _refs(array) == own + 1:
                    donated[(n, key)] = array
                    arrays[key] = None
        elif _refs(held) == own + 1:  # opt.state's value alone: no one kept the dict
            for key in tuple(held):
                t = held[key]
                if type(key) is not str or t is None or _refs(t) != own + 1:  # the dict alone: no one kept t
                    continue
                array = t._array
                if arrays.get(key) is array and _donatable(array) and _refs(array) == own + 2:  # t and `arrays`
                    donated[(n, key)] = array
                    arrays[key] = None
        if grad_holders is not None:
            # Its entry in `active` and in the temporary container. (A gradient moved to a sharded
            # parameter's sharding by the step is a new record, but spans several devices: never donated.)
            g = active[n][2]
            if _refs(g) == own + 1 + grad_holders and g.dtype == active[n][1].dtype:
                array = g._array
                if _donatable(array) and _refs(array) == own + 1:  # g alone
                    donated[(n, "")] = array
    return donated


def distinct_arrays(state: dict) -> dict:
    """``state`` with an array that appears under several keys (Adam's two zero moments are one array)
    copied for each later key, so each can be donated alone (donating one buffer twice is an error)."""
    ids: set = set()
    out = {}
    for key, value in state.items():
        if isinstance(value, jax.Array) and not isinstance(value, jax.core.Tracer):
            if id(value) in ids:
                value = jax.device_put(value, value.sharding if value.committed else None, may_alias=False)
            ids.add(id(value))
        out[key] = value
    return out


def run_update(update: Callable, static: tuple, hyper: dict, params: list, grads: list, states: list,
               donated: dict) -> tuple[dict, list, list]:
    """The kernel's body: ``update`` on the arrays with the donated ones put back in their places;
    returns ``(donated results, other params, other states)``, the donated slots' results taken out of
    the lists (``None`` there) and returned first, keyed like ``donated`` (see the module docstring). A
    donated gradient (key ``""``) takes the new parameter."""
    grads = list(grads)
    states = [dict(s) for s in states]
    for (n, key), array in donated.items():
        if key:
            states[n][key] = array
        else:
            grads[n] = array
    new_params, new_states = update(static, hyper, params, grads, states)
    new_params = list(new_params)
    new_states = [dict(s) for s in new_states]
    out = {}
    for n, key in donated:
        if not key:
            out[(n, key)], new_params[n] = new_params[n], None
        elif new_states[n].get(key) is not None:
            out[(n, key)], new_states[n][key] = new_states[n][key], None
    return out, new_params, new_states
