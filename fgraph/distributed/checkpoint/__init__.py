"""``fgraph.distributed.checkpoint``: sharded checkpoints with ``torch.distributed.checkpoint``'s names.

``save(state_dict, checkpoint_id=path)`` writes a (nested) dict such as ``{"model":
model.state_dict(), "optim": opt.state_dict(), "step": 3}`` to the directory ``path``; in a
multi-process run every process calls it, and each writes only the shards of its own devices
(nothing is gathered on one host). ``load(state_dict, checkpoint_id=path)`` fills the given
dict **in place**: each array is restored with the shape, dtype and *sharding* of the array the
dict holds there, so a checkpoint saved fully sharded loads replicated (or on another mesh)
and the other way round; plain values (ints, strings, ``None``, an optimizer's
``param_groups``) come back too. Then, as in PyTorch, hand the values to their owners:
``model.load_state_dict(sd["model"])``, ``opt.load_state_dict(sd["optim"])``; or put the
objects themselves in the dict (``{"model": model, "optim": opt}``), which both functions
treat as torch DCP treats ``Stateful`` objects.

A fresh optimizer holds no state yet (``opt.state_dict()["state"]`` is empty): ``load`` fills
an empty dict with everything the checkpoint holds there, each array with the sharding it
was saved with when this run has those devices (replicated otherwise).
:func:`get_state_dict` gives the optimizer's state already made, placed like each parameter,
as torch's ``get_state_dict`` does, so every array is restored with its target's sharding.

``async_save`` returns once the arrays are copied off the devices and writes in the
background; its future's ``result()`` waits for the write. fgraph's tensors are immutable,
so training on while it writes cannot change what is saved.

The storage is `orbax-checkpoint <https://orbax.readthedocs.io>`_ (the optional extra:
``pip install 'fgraph[distributed]'``). ``fg.save`` remains the format for one host
(a safetensors file; it gathers every array on the host that calls it).

Example:
    >>> import os, tempfile
    >>> import fgraph as fg
    >>> import fgraph.distributed.checkpoint as dcp
    >>> model = fg.nn.Linear(3, 2)
    >>> opt = fg.optim.Adam(model.parameters(), lr=0.1)
    >>> opt.step(model(fg.ones(4, 3)).sum().backward())
    >>> path = os.path.join(tempfile.mkdtemp(), "step_1")
    >>> dcp.save({"model": model.state_dict(), "optim": opt.state_dict(), "step": 1}, checkpoint_id=path)
    >>> fresh = fg.nn.Linear(3, 2)
    >>> fresh_opt = fg.optim.Adam(fresh.parameters(), lr=0.1)
    >>> sd = {"model": fresh.state_dict(), "optim": fresh_opt.state_dict(), "step": 0}
    >>> dcp.load(sd, checkpoint_id=path)
    >>> fresh.load_state_dict(sd["model"]); fresh_opt.load_state_dict(sd["optim"])
    <All keys matched successfully>
    >>> sd["step"], fresh.weight.tolist() == model.weight.tolist()
    (1, True)
"""
from __future__ import annotations

import threading
from concurrent.futures import Future, wait
from typing import Any

from fgraph.distributed.checkpoint import _storage
from fgraph.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

__all__ = ["save", "load", "async_save", "get_state_dict", "set_state_dict"]

_writing: dict[str, Future] = {}  # directory -> the async_save still writing there


def _settle(checkpoint_id: Any, fn: str) -> None:
    """Wait for an ``async_save`` still writing to that directory (its error stays with its own future)."""
    pending = _writing.pop(_storage.directory(checkpoint_id, fn), None)
    if pending is not None:
        wait([pending])


def save(state_dict: dict, checkpoint_id: Any = None) -> None:
    """Write ``state_dict`` to the directory ``checkpoint_id``; every process calls it and writes its own shards.

    ``state_dict`` is a dict of Tensors, ``jax.Array``s, NumPy arrays, nested dicts, lists and
    tuples, ``int``/``float``/``bool``/``str``/``None`` values and objects with ``state_dict()``
    and ``load_state_dict()`` (a Module, an Optimizer; saved as their ``state_dict()``). An
    array held in several places (tied weights) is stored once. ``checkpoint_id`` is replaced
    if it already holds a checkpoint (or is an empty directory); any other existing directory
    is refused. The write is atomic: a crash leaves the previous checkpoint, never half of one.

    Example:
        >>> import os, tempfile
        >>> import fgraph as fg
        >>> import fgraph.distributed.checkpoint as dcp
        >>> path = os.path.join(tempfile.mkdtemp(), "ckpt")
        >>> dcp.save({"w": fg.ones(2), "note": "warm-up done"}, checkpoint_id=path)
        >>> sd = {"w": fg.zeros(2), "note": None}
        >>> dcp.load(sd, checkpoint_id=path)
        >>> sd
        {'w': tensor([1., 1.]), 'note': 'warm-up done'}
    """
    _settle(checkpoint_id, "save")
    checkpointer = _storage.save(state_dict, checkpoint_id, "save")
    checkpointer.close()  # waits for the write to finish


def async_save(state_dict: dict, checkpoint_id: Any = None) -> "Future[None]":
    """:func:`save` that returns once the arrays are off the devices; the write goes on in the background.

    Returns a :class:`concurrent.futures.Future`: ``result()`` waits for the write (and
    raises its error, if any). A later ``save``, ``async_save`` or ``load`` of the same
    directory in this process waits for it first.

    Example:
        >>> import os, tempfile
        >>> import fgraph as fg
        >>> import fgraph.distributed.checkpoint as dcp
        >>> path = os.path.join(tempfile.mkdtemp(), "ckpt")
        >>> future = dcp.async_save({"w": fg.ones(2)}, checkpoint_id=path)
        >>> future.result()
        >>> future.done()
        True
    """
    _settle(checkpoint_id, "async_save")
    checkpointer = _storage.save(state_dict, checkpoint_id, "async_save")
    future: Future = Future()
    future.set_running_or_notify_cancel()

    def finish() -> None:
        try:
            checkpointer.close()
        except BaseException as exc:  # handed to whoever calls result()
            future.set_exception(exc)
        else:
            future.set_result(None)

    threading.Thread(target=finish, name="fgraph-async-save").start()  # not a daemon: exit waits for the write
    path = _storage.directory(checkpoint_id, "async_save")
    _writing[path] = future
    future.add_done_callback(lambda done: _writing.pop(path) if _writing.get(path) is done else None)
    return future


def load(state_dict: dict, checkpoint_id: Any = None) -> None:
    """Fill ``state_dict`` in place from the checkpoint at ``checkpoint_id``, each array with the target's sharding.

    Every key of ``state_dict`` must be in the checkpoint (entries the checkpoint has beyond
    them are not read, except into an empty dict, which takes everything saved there). Each
    array is replaced by the saved one with the target's shape (a different shape is an
    error), dtype and sharding; a Parameter stays a Parameter. Plain values are replaced by
    the saved values; an object with ``load_state_dict`` (a Module, an Optimizer) gets its
    loaded state through it. Every process calls it and reads the shards it needs.

    Example:
        >>> import os, tempfile
        >>> import fgraph as fg
        >>> import fgraph.distributed.checkpoint as dcp
        >>> path = os.path.join(tempfile.mkdtemp(), "ckpt")
        >>> model = fg.nn.Linear(2, 2)
        >>> dcp.save({"model": model}, checkpoint_id=path)
        >>> fresh = fg.nn.Linear(2, 2)
        >>> dcp.load({"model": fresh}, checkpoint_id=path)     # calls fresh.load_state_dict
        >>> fresh.weight.tolist() == model.weight.tolist()
        True
    """
    _settle(checkpoint_id, "load")
    _storage.load(state_dict, checkpoint_id)
