"""``fully_shard``: PyTorch's FSDP2 (ZeRO-3) as JAX shardings: every parameter split over one mesh axis.

Each device keeps a slice of every parameter and of its optimizer state; XLA gathers a parameter
where an op needs it whole and reduce-scatters its gradient (computation follows data, so no
wrapper module and no hooks are needed). Unlike PyTorch, JAX splits a dimension only into equal
parts, so a parameter is split on a dimension the axis size divides, and replicated when none does.

Example:
    >>> import jax, numpy as np
    >>> import fgraph as fg
    >>> from jax.sharding import Mesh
    >>> mesh = Mesh(np.array(jax.devices()), ("fsdp",))
    >>> model = fg.distributed.fully_shard(fg.nn.Sequential(fg.nn.Linear(4, 8), fg.nn.Linear(8, 3)), mesh)
    >>> model[0].weight.array.sharding.spec
    P('fsdp',)
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterable, Optional, Sequence, Union

import jax
import numpy as np
from jax.sharding import Mesh

from fgraph.distributed._rules import check_mesh, check_module, entry_axes, make_spec, place_module, spec_on

if TYPE_CHECKING:
    from fgraph.nn.modules.module import Module

__all__ = ["fully_shard"]


def fully_shard(module: "Module", mesh: Optional[Mesh] = None, axis: Union[str, Sequence[str], None] = None, *,
                ignored_params: Optional[Iterable[Any]] = None) -> "Module":
    """Shard every parameter of ``module`` over the mesh axis ``axis`` (FSDP / ZeRO-3); returns ``module``.

    ``mesh``: a ``jax.sharding.Mesh`` (default: every device on one axis named ``"fsdp"``). ``axis``:
    the mesh axis to shard over (or a tuple of axes, sharded over together); by default ``"fsdp"`` when
    the mesh has that axis, else the mesh's first axis.

    Which dimension: dimension 0, as PyTorch's FSDP2, when the axis size divides it; otherwise the
    largest dimension the axis size divides; a parameter with no such dimension (a bias of 3 on 4
    devices, a scalar) is replicated over the axis. Axes a parameter already has on this mesh are
    kept: after :func:`~fgraph.distributed.parallelize_module` on a 2-D mesh, the FSDP axis goes on a
    dimension the tensor-parallel split left free (or joins the split dimension when no free one
    divides), so FSDP x TP composes. A parameter already sharded over ``axis`` is left alone, so
    calling ``fully_shard`` on each block and then on the whole model works as in PyTorch.
    ``ignored_params`` are not split (only replicated on the mesh). Buffers are replicated on the
    mesh (axes they already have there are kept).

    Tied parameters are placed once and stay tied. Parameters are rebound in place (an optimizer
    made before or after follows them); its state takes each parameter's sharding, so call
    ``fully_shard`` before the first optimizer step.

    Example:
        >>> import jax, numpy as np
        >>> import fgraph as fg
        >>> from jax.sharding import Mesh
        >>> mesh = Mesh(np.array(jax.devices()).reshape(1, -1), ("fsdp", "tp"))
        >>> lin = fg.distributed.fully_shard(fg.nn.Linear(6, 4), mesh)
        >>> lin.weight.array.sharding.spec, lin.bias.array.sharding.spec
        (P('fsdp',), P('fsdp',))
        >>> opt = fg.optim.Adam(lin.parameters())     # made after: its state will be sharded the same way
    """
    module = check_module(module, "fully_shard")
    mesh = Mesh(np.array(jax.devices()), ("fsdp",)) if mesh is None else check_mesh(mesh, "fully_shard")
    axes = _fsdp_axes(mesh, axis)
    size = math.prod(mesh.shape[a] for a in axes)
    ignored = {id(p) for p in (ignored_params or ())}
    params = {}
    for p in module.parameters():
        spec = spec_on(p._array, mesh)
        if id(p) not in ignored:
            spec = _add_axes(spec, tuple(p.shape), axes, size, mesh)
        params[id(p)] = (p, make_spec(spec))
    buffers = {id(b): (b, make_spec(spec_on(b._array, mesh))) for b in module.buffers()}
    return place_module(module, mesh, params, buffers)


def _fsdp_axes(mesh: Mesh, axis: Union[str, Sequence[str], None]) -> tuple:
    if axis is None:
        return ("fsdp",) if "fsdp" in mesh.axis_names else (mesh.axis_names[0],)
    axes = (axis,) if isinstance(axis, str) else tuple(axis)
    missing = [a for a in axes if a not in mesh.axis_names]
    if missing or not axes:
        raise ValueError(f"fully_shard: the mesh has axes {tuple(mesh.axis_names)}, not {missing or axis!r}; pass "
                         "axis= one of them (the axis to shard parameters over).")
    return axes


def _add_axes(spec: list, shape: tuple, axes: tuple, size: int, mesh: Mesh) -> list:
    """``spec`` with ``axes`` (``size`` devices together) put on the dimension chosen as the docstring says."""
    used = {a for entry in spec for a in entry_axes(entry)}
    if used & set(axes):
        return spec
    free = [d for d in range(len(shape)) if spec[d] is None and shape[d] and shape[d] % size == 0]
    if free:
        dim = 0 if 0 in free else max(free, key=lambda d: (shape[d], -d))
        out = list(spec)
        out[dim] = axes[0] if len(axes) == 1 else axes
        return out
    # No free dimension divides: join an already split one (PyTorch shards dim 0 over both mesh dims).
    for d in range(len(shape)):
        have = entry_axes(spec[d])
        if have and shape[d] % (math.prod(mesh.shape[a] for a in have) * size) == 0:
            out = list(spec)
            out[d] = have + axes
            return out
    return spec
