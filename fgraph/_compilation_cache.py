"""JAX's persistent compilation cache, on by default: compiled programs are reused across processes.

fgraph runs every op's kernel as its own ``jax.jit`` program, and a new process compiles each again (a
small model's first eager step spends seconds in XLA). At ``import fgraph`` this module points JAX's
persistent compilation cache at a user cache directory, so a restarted process loads the executables
from disk instead (a load takes ~1-2 ms where the compile took 10-300 ms on a 2-core CPU):

* the directory: ``$FGRAPH_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/fgraph/jax``, else
  ``~/.cache/fgraph/jax``;
* off: ``FGRAPH_COMPILATION_CACHE=0`` in the environment (checked at import), or
  ``fg.backends.compilation_cache.disable()`` at any time;
* JAX's own settings win: when ``jax_compilation_cache_dir`` is already set (``JAX_COMPILATION_CACHE_DIR``
  or ``jax.config.update`` before ``import fgraph``), or JAX's cache is switched off
  (``JAX_ENABLE_COMPILATION_CACHE=false``), fgraph changes nothing;
* a directory that cannot be created or written (a read-only home) leaves the cache off, logged at
  debug level on the ``fgraph`` logger; importing never fails because of it.

JAX keeps only programs that took at least ``jax_persistent_cache_min_compile_time_secs`` to compile
(1 s by default, which none of fgraph's per-op kernels takes); fgraph lowers it to
:data:`MIN_COMPILE_TIME_SECS` when it is still at JAX's default. The cache is unbounded, as JAX's is
by default (bounding it makes JAX lock and scan the whole directory on every write); deleting the
directory at any time is safe.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Optional, Union

import jax
from jax.experimental.compilation_cache import compilation_cache as _jax_cache

__all__ = ["MIN_COMPILE_TIME_SECS", "default_dir", "enable", "disable", "cache_dir", "is_enabled"]

logger = logging.getLogger("fgraph")

#: Programs that compile faster than this are not written. On the 2-core CPU a cache hit costs ~1-2 ms
#: (read, decompress, deserialize; ~10 ms for a fused backward or a whole compiled step) and the
#: quickest per-op kernel compiles take ~8 ms: below ~5 ms a hit would save too little to be worth a file.
MIN_COMPILE_TIME_SECS = 0.005
_JAX_DEFAULT_MIN_COMPILE_TIME_SECS = 1.0
_OFF_VALUES = ("0", "false", "no", "off")


def default_dir() -> Path:
    """The directory fgraph uses: ``$FGRAPH_CACHE_DIR``, else ``$XDG_CACHE_HOME/fgraph/jax``, else
    ``~/.cache/fgraph/jax``."""
    explicit = os.environ.get("FGRAPH_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fgraph" / "jax"


def _writable(path: Path) -> bool:
    """Create ``path`` if needed; whether this process can write entries into it."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        logger.debug("fgraph: no persistent compilation cache: cannot create %s (%s)", path, exc)
        return False
    if not os.access(path, os.W_OK | os.X_OK):
        logger.debug("fgraph: no persistent compilation cache: %s is not writable", path)
        return False
    return True


def _point_jax_at(path: Path) -> None:
    jax.config.update("jax_enable_compilation_cache", True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    if jax.config.jax_persistent_cache_min_compile_time_secs == _JAX_DEFAULT_MIN_COMPILE_TIME_SECS:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_TIME_SECS)


def enable(path: Union[str, os.PathLike, None] = None) -> str:
    """Turn JAX's persistent compilation cache on, in ``path`` or :func:`default_dir`; return the directory.

    It takes effect for the next compile, also after programs were compiled. An explicit call replaces
    whatever directory JAX was using.

    Raises:
        OSError: the directory cannot be created or written.
    """
    target = Path(path).expanduser() if path is not None else default_dir()
    if not _writable(target):
        raise OSError(f"fg.backends.compilation_cache.enable: cannot write compiled programs into {target}")
    _point_jax_at(target)
    _jax_cache.reset_cache()  # JAX opens its cache once per process: make it open the new directory
    return str(target)


def disable() -> None:
    """Turn JAX's persistent compilation cache off for this process (compiled programs stay on disk)."""
    jax.config.update("jax_enable_compilation_cache", False)
    _jax_cache.reset_cache()


def is_enabled() -> bool:
    """Whether compiles read and write a persistent cache now."""
    return bool(jax.config.jax_enable_compilation_cache and jax.config.jax_compilation_cache_dir)


def cache_dir() -> Optional[str]:
    """The directory JAX's persistent compilation cache uses now, or ``None`` when it is off."""
    return jax.config.jax_compilation_cache_dir if is_enabled() else None


def _enable_at_import() -> None:
    """The default: the cache on in :func:`default_dir` unless opted out or configured in JAX already."""
    if os.environ.get("FGRAPH_COMPILATION_CACHE", "").strip().lower() in _OFF_VALUES:
        return
    if jax.config.jax_compilation_cache_dir is not None or not jax.config.jax_enable_compilation_cache:
        return  # the user's own JAX configuration
    target = default_dir()
    if _writable(target):
        _point_jax_at(target)


_enable_at_import()
