"""Sharded checkpoints on orbax-checkpoint: every process writes its own shards, loads take the target's shardings.

The arrays go to orbax's ``PyTreeCheckpointHandler`` (TensorStore/OCDBT files, one set per
process, written to a temporary directory and renamed when every process is done, so a crash
never leaves half a checkpoint); the structure (containers, plain values, which arrays are
Parameters) is JSON in the checkpoint's metadata. orbax is imported on first use: ``import
fgraph`` does not pay for it.

Example:
    >>> import os, tempfile
    >>> import fgraph as fg
    >>> from fgraph.distributed.checkpoint import _storage
    >>> path = os.path.join(tempfile.mkdtemp(), "ckpt")
    >>> _storage.save({"w": fg.ones(2)}, path, "save").close()
    >>> sd = {"w": fg.zeros(2)}
    >>> _storage.load(sd, path)
    >>> sd["w"].tolist()
    [1.0, 1.0]
"""
from __future__ import annotations

import json
import os
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from fgraph.distributed.checkpoint._tree import Loader, flatten
from fgraph.serialization import CheckpointError

__all__ = ["orbax", "save", "load", "directory"]

#: The key of fgraph's structure in the checkpoint's custom metadata.
STRUCTURE_KEY = "fgraph.distributed.checkpoint"
_FORMAT = 1
#: orbax refuses an empty tree: a state_dict without arrays is stored with this one.
_PLACEHOLDER = "__fgraph_no_arrays__"
_MISSING_ORBAX = "fgraph.distributed.checkpoint needs orbax-checkpoint: pip install 'fgraph[distributed]'"


def orbax() -> Any:
    """``orbax.checkpoint``, or an ImportError saying how to install it."""
    try:
        import orbax.checkpoint as ocp
    except ImportError as exc:
        raise ImportError(_MISSING_ORBAX) from exc
    return ocp


def directory(checkpoint_id: Any, fn: str) -> str:
    """``checkpoint_id`` as an absolute path (URLs such as ``gs://...`` are kept as they are)."""
    if checkpoint_id is None:
        raise ValueError(f"{fn}: pass checkpoint_id=, the directory of the checkpoint (as in "
                         f"torch.distributed.checkpoint.{fn}(state_dict, checkpoint_id=path)).")
    try:
        path = os.fspath(checkpoint_id)
    except TypeError:
        raise TypeError(f"{fn}: checkpoint_id must be a path (str or os.PathLike), got "
                        f"{type(checkpoint_id).__name__}.") from None
    return path if "://" in path else os.path.abspath(path)


def save(state_dict: Any, checkpoint_id: Any, fn: str) -> Any:
    """Start writing ``state_dict``; returns orbax's checkpointer (``wait_until_finished``/``close`` end the write)."""
    ocp = orbax()
    path = directory(checkpoint_id, fn)
    if not isinstance(state_dict, dict):
        raise TypeError(f"{fn}: state_dict must be a dict (such as {{'model': model.state_dict(), 'optim': "
                        f"opt.state_dict()}}), got {type(state_dict).__name__}.")
    arrays, tree = flatten(state_dict)
    if not arrays:
        arrays = {_PLACEHOLDER: np.zeros((), np.uint8)}
    force = _replaceable(path, fn)
    structure = json.dumps({"format": _FORMAT, "tree": tree})
    checkpointer = ocp.AsyncCheckpointer(ocp.PyTreeCheckpointHandler())
    try:
        checkpointer.save(path, args=ocp.args.PyTreeSave(arrays), force=force,
                          custom_metadata={STRUCTURE_KEY: structure})
    except BaseException:
        checkpointer.close()
        raise
    return checkpointer


def _replaceable(path: str, fn: str) -> bool:
    """Whether ``path`` exists and may be replaced: a checkpoint (written again, as torch DCP does) or an empty
    directory. Anything else is refused rather than deleted."""
    from etils import epath

    where = epath.Path(path)
    if not where.exists():
        return False
    if not where.is_dir():
        raise FileExistsError(f"{fn}: checkpoint_id {path!r} is a file; a checkpoint is a directory. Choose "
                              "another path.")
    names = {p.name for p in where.iterdir()}
    if not names or "_CHECKPOINT_METADATA" in names or "commit_success.txt" in names:
        return True
    raise FileExistsError(
        f"{fn}: {path!r} exists and is not a checkpoint (it holds {', '.join(sorted(names)[:5])}"
        f"{', ...' if len(names) > 5 else ''}); fgraph replaces an old checkpoint there but never deletes other "
        "files. Choose a new directory."
    )


def load(state_dict: Any, checkpoint_id: Any) -> None:
    """Restore ``state_dict``'s values in place from the checkpoint, each array with the target's sharding."""
    ocp = orbax()
    path = directory(checkpoint_id, "load")
    if not isinstance(state_dict, dict):
        raise TypeError("load: state_dict must be the dict to fill in place (such as {'model': "
                        f"model.state_dict()}}), got {type(state_dict).__name__}.")
    from etils import epath

    if not epath.Path(path).exists():
        raise FileNotFoundError(f"load: there is no checkpoint at {path!r}.")
    checkpointer = ocp.Checkpointer(ocp.PyTreeCheckpointHandler())
    try:
        metadata = checkpointer.metadata(path)
        tree = _structure(metadata, path)
        arrays_metadata = getattr(metadata.item_metadata, "tree", None) or {}
        loader = Loader(lambda name: _saved_sharding(arrays_metadata.get(name)), path)
        build = loader.plan(state_dict, tree)
        if loader.missing:
            raise CheckpointError(
                f"load: {path!r} has no entry for {', '.join(repr(m) for m in loader.missing)}, which the state_dict "
                "asks for. Load a state_dict with the keys that were saved (or drop those entries from it)."
            )
        restored = _restore(ocp, checkpointer, path, loader.requests) if loader.requests else {}
    finally:
        checkpointer.close()
    build(restored)


def _structure(metadata: Any, path: str) -> Any:
    custom = getattr(metadata, "custom_metadata", None) or {}
    text = custom.get(STRUCTURE_KEY) if isinstance(custom, dict) else None
    if text is None:
        raise CheckpointError(
            f"load: {path!r} was not written by fgraph.distributed.checkpoint.save (it has no fgraph structure in "
            "its metadata). Read another orbax checkpoint with orbax.checkpoint directly."
        )
    stored = json.loads(text)
    if stored.get("format", 0) > _FORMAT:
        raise CheckpointError(f"load: {path!r} was written by a newer fgraph (format {stored['format']}); upgrade "
                              "fgraph to read it.")
    return stored["tree"]


def _saved_sharding(array_metadata: Any) -> Any:
    """The sharding an array was saved with when this run has its devices, else replicated over every device."""
    every = jax.devices()
    try:
        saved = array_metadata.sharding.to_jax_sharding()
        if isinstance(saved, NamedSharding) and set(saved.mesh.devices.flat) <= set(every):
            return saved
    except Exception:  # no sharding metadata, or devices this run does not have
        pass
    return NamedSharding(Mesh(np.array(every), ("devices",)), PartitionSpec())


def _restore(ocp: Any, checkpointer: Any, path: str, requests: dict) -> dict:
    item, restore_args = {}, {}
    for name, r in requests.items():
        item[name] = 0
        if r.sharding is None:
            restore_args[name] = ocp.RestoreArgs(restore_type=np.ndarray, dtype=r.dtype)
        else:
            restore_args[name] = ocp.ArrayRestoreArgs(sharding=r.sharding, global_shape=r.shape, dtype=r.dtype)
    return checkpointer.restore(path, args=ocp.args.PyTreeRestore(item=item, restore_args=restore_args,
                                                                  partial_restore=True))
