"""Bridges between fgraph and other array libraries and AD systems.

* :mod:`interop.torch_bridge`: :func:`from_torch` / :func:`to_torch` move tensors
  between PyTorch and fgraph (DLPack, copying; torch is imported only when called).
* :mod:`interop.jax_bridge`: :func:`to_jax` (an fgraph function as a JAX function) and
  :func:`from_jax` (a JAX function as an fgraph op).
* :mod:`interop.check`: :func:`check_grads`, fgraph's derivatives against ``jax.grad`` of the
  same program; ``python -m interop.crosscheck`` runs it over every registered op.

Names are loaded on first use, so ``import interop`` stays cheap.

Example:
    >>> import interop
    >>> callable(interop.from_torch), callable(interop.to_torch)
    (True, True)
"""
from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "from_torch": "interop.torch_bridge",
    "to_torch": "interop.torch_bridge",
    "to_jax": "interop.jax_bridge",
    "from_jax": "interop.jax_bridge",
    "check_grads": "interop.check",
    "GradientMismatch": "interop.check",
}

__all__ = list(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'interop' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_HOMES))
