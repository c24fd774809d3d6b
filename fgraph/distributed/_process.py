"""Multi-process runs: ``initialize`` (``jax.distributed.initialize``), ranks, world size and barriers.

JAX runs one Python process per host (or per GPU), each driving its own devices; after
:func:`initialize`, ``jax.devices()`` lists every process's devices, a mesh over them is global,
and a compiled step runs as one program over all of them (every process runs the same code).
fgraph uses PyTorch's names: a process's *rank* is ``jax.process_index()``, the *world size* is
``jax.process_count()``. Without :func:`initialize` a program is one process: rank 0 of 1.

Example:
    >>> import fgraph as fg
    >>> fg.distributed.get_rank(), fg.distributed.get_world_size(), fg.distributed.is_initialized()
    (0, 1, False)
    >>> fg.distributed.barrier()          # nothing to wait for in one process
"""
from __future__ import annotations

import os
from typing import Any, Optional, Sequence, Union
from urllib.parse import urlparse

import jax

__all__ = ["initialize", "init_process_group", "is_available", "is_initialized", "get_rank", "get_world_size",
           "barrier", "destroy_process_group"]


def _env_int(name: str) -> Optional[int]:
    value = os.environ.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"fg.distributed.initialize: environment variable {name}={value!r} is not an integer.")


def _env_address() -> Optional[str]:
    addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    if addr and port:
        return f"{addr}:{port}"
    if addr or port:
        raise ValueError("fg.distributed.initialize: MASTER_ADDR and MASTER_PORT must be set together (got "
                         f"MASTER_ADDR={addr!r}, MASTER_PORT={port!r}).")
    return None


def _backend_started() -> bool:
    from jax._src import xla_bridge

    return xla_bridge.backends_are_initialized()


def initialize(coordinator_address: Optional[str] = None, num_processes: Optional[int] = None,
               process_id: Optional[int] = None, local_device_ids: Optional[Union[int, Sequence[int]]] = None, *,
               num_cpu_devices: Optional[int] = None, cpu_collectives: Optional[str] = "gloo",
               **jax_kwargs: Any) -> None:
    """Join a multi-process run: ``jax.distributed.initialize`` with PyTorch's environment as defaults.

    Call it first, before anything touches a device (creating a tensor or a model, ``jax.devices()``).
    Missing arguments come from torch's launcher variables (``torchrun`` sets them): ``MASTER_ADDR`` and
    ``MASTER_PORT`` (the coordinator, process 0's address), ``WORLD_SIZE`` (``num_processes``) and ``RANK``
    (``process_id``); where those are unset too, JAX detects the cluster (Slurm, Open MPI, Cloud TPU).
    With one GPU per process (``torchrun --nproc-per-node``), pass
    ``local_device_ids=int(os.environ["LOCAL_RANK"])``.

    ``num_cpu_devices`` gives each process that many CPU devices (``jax_num_cpu_devices``: simulated
    devices for trying a multi-device program on one machine). ``cpu_collectives`` chooses how CPU devices
    of different processes exchange data (``"gloo"``, JAX's default, over TCP; or ``"mpi"``); other
    keywords (``initialization_timeout=``, ``heartbeat_timeout_seconds=``, ...) go to JAX as they are.

    Example:
        >>> import fgraph as fg
        >>> fg.distributed.initialize("localhost:1234", num_processes=2, process_id=0)  # doctest: +SKIP
        >>> fg.distributed.get_world_size()  # doctest: +SKIP
        2
    """
    if jax.distributed.is_initialized():
        raise RuntimeError("fg.distributed.initialize: this process has joined a multi-process run already; call "
                           "it once (fg.distributed.destroy_process_group() leaves the run).")
    coordinator_address = coordinator_address or _env_address()
    num_processes = _env_int("WORLD_SIZE") if num_processes is None else num_processes
    process_id = _env_int("RANK") if process_id is None else process_id
    if _backend_started():
        raise RuntimeError(
            "fg.distributed.initialize must run before anything touches a device: JAX has started its devices "
            "already (a tensor, a model or jax.devices() came first). Call it at the top of the program, right "
            "after the imports.")
    if num_cpu_devices is not None:
        jax.config.update("jax_num_cpu_devices", num_cpu_devices)
    if cpu_collectives is not None:
        jax.config.update("jax_cpu_collectives_implementation", cpu_collectives)
    try:
        jax.distributed.initialize(coordinator_address, num_processes, process_id, local_device_ids, **jax_kwargs)
    except ValueError as error:
        if coordinator_address is None and "coordinator_address" in str(error):
            raise ValueError(
                "fg.distributed.initialize: no coordinator to join. Pass coordinator_address='host:port' (process "
                "0's address), num_processes= and process_id=; or set MASTER_ADDR, MASTER_PORT, WORLD_SIZE and "
                "RANK (torchrun does); or run under Slurm, Open MPI or Cloud TPU, where JAX finds them.") from None
        raise


def init_process_group(backend: Optional[str] = None, init_method: Optional[str] = None, timeout: Any = None,
                       world_size: int = -1, rank: int = -1, **kwargs: Any) -> None:
    """``torch.distributed.init_process_group``'s arguments, for ported code: calls :func:`initialize`.

    ``init_method`` is ``"env://"`` (the default: ``MASTER_ADDR``/``MASTER_PORT``/``WORLD_SIZE``/``RANK``) or
    ``"tcp://host:port"``; ``backend`` ``"gloo"`` or ``"mpi"`` chooses the CPU collectives, ``"nccl"`` is
    accepted (XLA brings its own GPU collectives); ``timeout`` (a ``datetime.timedelta`` or seconds) bounds
    the wait for the other processes.

    Example:
        >>> import fgraph as fg
        >>> fg.distributed.init_process_group("gloo", "tcp://localhost:1234", world_size=2, rank=0)  # doctest: +SKIP
    """
    address = None
    if init_method is not None and not init_method.startswith("env://"):
        parsed = urlparse(init_method)
        if parsed.scheme != "tcp" or not parsed.hostname or not parsed.port:
            raise ValueError(f"fg.distributed.init_process_group: init_method {init_method!r} is not supported; "
                             "use 'env://' or 'tcp://host:port'.")
        address = f"{parsed.hostname}:{parsed.port}"
    if backend not in (None, "gloo", "mpi", "nccl", "cpu:gloo,cuda:nccl"):
        raise ValueError(f"fg.distributed.init_process_group: backend {backend!r} is not supported; use 'gloo', "
                         "'mpi' or 'nccl' (GPU collectives come from XLA).")
    collectives = "mpi" if backend == "mpi" else "gloo"
    if timeout is not None:
        kwargs.setdefault("initialization_timeout", int(getattr(timeout, "total_seconds", lambda: timeout)()))
    initialize(address, None if world_size < 0 else world_size, None if rank < 0 else rank,
               cpu_collectives=collectives, **kwargs)


def is_available() -> bool:
    """Whether multi-process runs are supported (always: JAX's distributed runtime is built in)."""
    return True


def is_initialized() -> bool:
    """Whether this process has joined a multi-process run (:func:`initialize`)."""
    return jax.distributed.is_initialized()


def get_rank(group: Any = None) -> int:
    """This process's index among the run's processes (``jax.process_index()``); 0 in a single process.

    Before :func:`initialize` this does not start JAX's devices, so it may be called first.
    ``group`` is accepted for PyTorch's signature; fgraph has one group, every process.
    """
    if not jax.distributed.is_initialized() and not _backend_started():
        return 0
    return jax.process_index()


def get_world_size(group: Any = None) -> int:
    """The number of processes in the run (``jax.process_count()``); 1 in a single process.

    Before :func:`initialize` this does not start JAX's devices, so it may be called first.
    """
    if not jax.distributed.is_initialized() and not _backend_started():
        return 1
    return jax.process_count()


def barrier(group: Any = None, *, name: str = "fgraph.distributed.barrier") -> None:
    """Wait until every process reaches a barrier of the same ``name`` (and its devices have finished their
    queued work): ``jax.experimental.multihost_utils.sync_global_devices``. Returns at once in one process."""
    if get_world_size() == 1:
        return
    from jax.experimental import multihost_utils

    multihost_utils.sync_global_devices(name)


def destroy_process_group(group: Any = None) -> None:
    """Leave the multi-process run (``jax.distributed.shutdown``); does nothing when not in one."""
    jax.distributed.shutdown()
