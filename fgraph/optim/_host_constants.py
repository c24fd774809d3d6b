"""An optimizer's first state computed on the host: zeros and fills without an XLA compile per shape.

``init_state`` builds its buffers with ``jnp.zeros_like`` / ``jnp.full_like``; run eagerly, each new
parameter shape compiles a small XLA program (tens of milliseconds each: a quarter of a second for an
MLP's Adam state). ``fgraph.compile`` makes the first state before it traces a step, so that cost would
land on the first call. The buffers depend only on shapes and numbers, never on the parameter's values,
so :func:`host_values` traces ``init_state`` to a jaxpr and, when it is made of constant broadcasts and
casts only, evaluates it with NumPy.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import jax
import numpy as np
from jax.extend.core import Literal

__all__ = ["host_values"]

_CONSTANT_PRIMITIVES = {"broadcast_in_dim", "convert_element_type"}


def host_values(make: Callable[[], dict]) -> Optional[dict]:
    """``make()``'s dict of arrays as NumPy arrays, when its jaxpr only broadcasts and casts constants; else
    ``None`` (the caller runs ``make`` as it is). ``None`` entries stay ``None``.

    Example:
        >>> import jax.numpy as jnp
        >>> from fgraph.optim._host_constants import host_values
        >>> values = host_values(lambda: {"step": jnp.zeros((), jnp.float32), "buf": jnp.full((2,), 0.5)})
        >>> type(values["buf"]).__name__, values["buf"].tolist(), values["step"].dtype
        ('ndarray', [0.5, 0.5], dtype('float32'))
    """
    closed, shape = jax.make_jaxpr(make, return_shape=True)()
    jaxpr = closed.jaxpr
    env: dict = {var: np.asarray(value) for var, value in zip(jaxpr.constvars, closed.consts)}

    def read(atom: Any) -> Any:
        return atom.val if isinstance(atom, Literal) else env[atom]

    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name not in _CONSTANT_PRIMITIVES or any(not _is_constant(a, env) for a in eqn.invars):
            return None
        operand = np.asarray(read(eqn.invars[0]))
        aval = eqn.outvars[0].aval
        if name == "broadcast_in_dim" and operand.ndim != 0:
            return None  # only scalars broadcast: a fill
        env[eqn.outvars[0]] = np.full(aval.shape, operand, dtype=aval.dtype)
    flat = [np.asarray(read(v), dtype=v.aval.dtype) for v in jaxpr.outvars]
    return jax.tree.unflatten(jax.tree.structure(shape), flat)


def _is_constant(atom: Any, env: dict) -> bool:
    return isinstance(atom, Literal) or atom in env
