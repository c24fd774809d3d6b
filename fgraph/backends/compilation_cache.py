"""``fg.backends.compilation_cache``: JAX's persistent compilation cache, which fgraph turns on at import.

Compiled programs (every op's kernel, fused backward passes, ``fg.compile`` steps) are written to a
user cache directory and loaded from there by later processes, so a restarted script skips most of
its compiles. The directory is ``$FGRAPH_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/fgraph/jax``, else
``~/.cache/fgraph/jax``. ``FGRAPH_COMPILATION_CACHE=0`` in the environment keeps it off from the
start; a cache directory set in JAX itself (``JAX_COMPILATION_CACHE_DIR``) is left as it is. Deleting
the directory is always safe. ``disable()`` turns it off for the rest of the process; ``enable(path)``
turns it on again, in ``path`` or the default directory.

Example:
    >>> import fgraph as fg
    >>> cc = fg.backends.compilation_cache
    >>> cc.is_enabled() == (cc.cache_dir() is not None)
    True
"""
from __future__ import annotations

from fgraph._compilation_cache import cache_dir, default_dir, disable, enable, is_enabled

__all__ = ["enable", "disable", "is_enabled", "cache_dir", "default_dir"]
