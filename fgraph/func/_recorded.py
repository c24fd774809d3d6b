"""vmap's fast path: ``func`` records its per-sample program; one cached ``jax.jit(jax.vmap(...))`` runs it.

``func`` still runs in Python on every call (hooks fire, prints print), but its ops record
kernel calls on per-sample placeholders, as in lazy mode, instead of dispatching each kernel
batched through ``jax.vmap``'s Python batching. The records then run as one program,
vectorized and compiled once per structure (the lazy mode's cache): the speed of
``jax.jit(jax.vmap(f))`` with eager semantics.

A per-sample value cannot be read while recording (its batch does not exist yet). Code that
tries (a ``jnp`` function on ``.array``, an op that checks values on the host) makes the
recording give up (:class:`ValuesNeeded`); :func:`fgraph.func.vmap` then runs the call on
its general path (``jax.vmap`` with tracers) and keeps using that path for the function.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import jax

from fgraph._kernel_jit import kernel_jit, placed
from fgraph.lazy._array import LazyArray
from fgraph.lazy._recorder import Recorder, _kid, _replay, cached_program

__all__ = ["BatchRecorder", "ValuesNeeded"]


class ValuesNeeded(Exception):
    """Raised inside a recorded vmap when something needs a per-sample value (internal: vmap falls back)."""


def _same(x: Any) -> Any:
    return x


_SAME = jax.jit(_same)  # a record for an output that is an input or a constant


class BatchRecorder(Recorder):
    """The per-sample trace of one vmapped call: batched inputs in, one vectorized program out.

    The batched inputs are the first externals; a placeholder for input ``i`` has slot
    ``-1 - i``, so records that read it refer to external ``i`` (``Recorder.call`` writes the
    reference ``-1 - slot``).
    """

    abstract = True

    def __init__(self) -> None:
        super().__init__()
        self.axes: list = []
        self.inputs: list = []
        self.gave_up = False

    def add_input(self, array: jax.Array, axis: int) -> LazyArray:
        """A placeholder for one sample of ``array`` mapped over ``axis``."""
        axis %= array.ndim
        i = len(self.externals)
        shape = array.shape[:axis] + array.shape[axis + 1:]
        per_sample = jax.ShapeDtypeStruct(shape, array.dtype, weak_type=array.weak_type)
        aval = jax.core.ShapedArray(shape, array.dtype, weak_type=array.weak_type)
        kid = _kid((shape, array.dtype, array.weak_type), per_sample)
        self.externals.append(array)
        self.ext_kids.append(kid)
        self.axes.append(axis)
        placeholder = LazyArray(aval, kid, self, -1 - i)
        self.inputs.append(placeholder)
        return placeholder

    def flush(self) -> None:
        self.gave_up = True
        raise ValuesNeeded("a per-sample value was read while vmap recorded its function")

    def run(self, outputs: list, out_axes: list) -> list:
        """The batched ``outputs`` (their per-sample placeholders, or arrays), each mapped to its ``out_axes``."""
        if self.gave_up:  # something swallowed ValuesNeeded: still fall back
            raise ValuesNeeded("a per-sample value was read while vmap recorded its function")
        slots = []
        for o in outputs:
            if not (type(o) is LazyArray and o._rec is self and o._slot >= 0):
                o = self.call(_SAME, (o,))
                if not (type(o) is LazyArray and o._rec is self):
                    # A value this recording cannot hold (a tracer of an enclosing jax.vmap that func's
                    # closure captured): the general path maps it, broadcasting it as torch.func does.
                    self.discard()
                    raise ValuesNeeded("vmap's function returned a value traced by an enclosing transform")
            slots.append(o._slot)
        in_axes = tuple(self.axes) + (None,) * (len(self.externals) - len(self.axes))
        key = (tuple(self.records), tuple(self.ext_kids), tuple(slots), in_axes, tuple(out_axes))
        externals = self.externals
        self.discard()
        for placeholder in self.inputs:
            placeholder._rec = None
        return placed(cached_program(key, _jit_vmapped_replay))(*externals)


def _jit_vmapped_replay(key: tuple) -> Callable:
    records, _, live, in_axes, out_axes = key
    return kernel_jit(jax.vmap(functools.partial(_replay, records, live), in_axes=in_axes, out_axes=list(out_axes)))
