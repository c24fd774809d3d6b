"""Tensor parallelism with PyTorch's plan API: ``parallelize_module(module, mesh, plan)``.

A plan maps module names to how their parameters split over the tensor-parallel mesh axis:

* :class:`ColwiseParallel`: a ``Linear``'s output features (weight dim 0, bias dim 0); an
  ``Embedding``'s embedding dimension (weight dim 1).
* :class:`RowwiseParallel`: a ``Linear``'s input features (weight dim 1, bias replicated); an
  ``Embedding``'s vocabulary (weight dim 0).
* :class:`SequenceParallel`: parameters replicated, the module's input and output split along the
  sequence dimension (for norms and dropout between a Rowwise and a Colwise layer).
* a ``PartitionSpec``: the module's ``weight`` takes exactly that spec; a dict
  ``{parameter name: PartitionSpec}`` gives each named parameter of the module its spec.

Only parameters are laid out (computation follows data): XLA inserts the all-gathers and
all-reduces a Colwise/Rowwise pair needs, so a parallelized module returns the same global values
as before, and a whole program compiled with :func:`fgraph.compile` stays one XLA program.

Example:
    >>> import jax, numpy as np
    >>> import fgraph as fg
    >>> from jax.sharding import Mesh
    >>> from fgraph.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    >>> mesh = Mesh(np.array(jax.devices()), ("tp",))
    >>> mlp = fg.nn.Sequential(fg.nn.Linear(4, 8), fg.nn.ReLU(), fg.nn.Linear(8, 4))
    >>> mlp = parallelize_module(mlp, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    >>> mlp[0].weight.array.sharding.spec, mlp[2].weight.array.sharding.spec, mlp[2].bias.array.sharding.spec
    (P('tp',), P(None, 'tp'), P())
"""
from __future__ import annotations

import fnmatch
import weakref
from typing import TYPE_CHECKING, Any, Mapping, Optional

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from fgraph.distributed._rules import (as_spec, check_mesh, check_module, check_spec, entries, entry_axes, make_spec,
                                       normalize, place_module, spec_on)

if TYPE_CHECKING:
    from fgraph.nn.modules.module import Module

__all__ = ["ParallelStyle", "ColwiseParallel", "RowwiseParallel", "SequenceParallel", "parallelize_module"]


class ParallelStyle:
    """How :func:`parallelize_module` lays out one module over the tensor-parallel mesh axis.

    ``axis``: the mesh axis to split over; by default the one :func:`parallelize_module` picks.
    """

    def __init__(self, *, axis: Optional[str] = None) -> None:
        self.axis = axis

    def split_dims(self, module: "Module", name: str) -> dict[str, Optional[int]]:
        """``{parameter name: the dimension split over the axis, or None to replicate it over the axis}``."""
        raise NotImplementedError

    def attach(self, module: "Module", mesh: Mesh, axis: str) -> None:
        """What the style does besides laying out parameters (the default: nothing)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()" if self.axis is None else f"{type(self).__name__}(axis={self.axis!r})"


class ColwiseParallel(ParallelStyle):
    """Split a ``Linear`` along its output features (weight ``(out, in)`` on dim 0, bias on dim 0), or an
    ``Embedding`` along its embedding dimension (weight dim 1): each device computes a slice of the
    output features. Pair it with a following :class:`RowwiseParallel`.

    Example:
        >>> import jax, numpy as np
        >>> import fgraph as fg
        >>> from jax.sharding import Mesh
        >>> from fgraph.distributed.tensor.parallel import ColwiseParallel
        >>> mesh = Mesh(np.array(jax.devices()), ("tp",))
        >>> lin = fg.distributed.parallelize_module(fg.nn.Linear(2, 4), mesh, ColwiseParallel())
        >>> lin.bias.array.sharding.spec
        P('tp',)
    """

    def split_dims(self, module: "Module", name: str) -> dict[str, Optional[int]]:
        return _linear_or_embedding(self, module, name, linear={"weight": 0, "bias": 0}, embedding={"weight": 1})


class RowwiseParallel(ParallelStyle):
    """Split a ``Linear`` along its input features (weight ``(out, in)`` on dim 1; the bias is replicated,
    added once after the partial products are summed), or an ``Embedding`` along its vocabulary (weight
    dim 0).

    Example:
        >>> import jax, numpy as np
        >>> import fgraph as fg
        >>> from jax.sharding import Mesh
        >>> from fgraph.distributed.tensor.parallel import RowwiseParallel
        >>> mesh = Mesh(np.array(jax.devices()), ("tp",))
        >>> emb = fg.distributed.parallelize_module(fg.nn.Embedding(8, 3), mesh, RowwiseParallel())
        >>> emb.weight.array.sharding.spec
        P('tp',)
    """

    def split_dims(self, module: "Module", name: str) -> dict[str, Optional[int]]:
        return _linear_or_embedding(self, module, name, linear={"weight": 1, "bias": None}, embedding={"weight": 0})


class SequenceParallel(ParallelStyle):
    """Replicate the module's parameters over the axis and split its input and output activations along
    ``sequence_dim`` (PyTorch's ``SequenceParallel``, for ``LayerNorm``, ``RMSNorm`` and ``Dropout``
    between a :class:`RowwiseParallel` and a :class:`ColwiseParallel` layer). The activations are
    constrained by forward hooks (``jax.lax.with_sharding_constraint`` inside :func:`fgraph.compile`,
    a device transfer in eager mode); other dimensions keep their layout.

    Example:
        >>> import jax, numpy as np
        >>> import fgraph as fg
        >>> from jax.sharding import Mesh
        >>> from fgraph.distributed.tensor.parallel import SequenceParallel
        >>> mesh = Mesh(np.array(jax.devices()), ("tp",))
        >>> norm = fg.distributed.parallelize_module(fg.nn.LayerNorm(4), mesh, SequenceParallel())
        >>> norm(fg.ones(2, 3 * len(jax.devices()), 4)).array.sharding.spec
        P(None, 'tp')
    """

    def __init__(self, *, sequence_dim: int = 1, axis: Optional[str] = None) -> None:
        super().__init__(axis=axis)
        self.sequence_dim = sequence_dim

    def split_dims(self, module: "Module", name: str) -> dict[str, Optional[int]]:
        return {n: None for n, p in module.named_parameters(recurse=False) if p is not None}

    def attach(self, module: "Module", mesh: Mesh, axis: str) -> None:
        dim = self.sequence_dim

        def split(value: Any) -> Any:
            return _split_activation(value, mesh, axis, dim)

        for handle in _SEQUENCE_HOOKS.pop(module, ()):  # parallelized again: the new layout replaces the old
            handle.remove()
        _SEQUENCE_HOOKS[module] = (
            module.register_forward_pre_hook(lambda mod, args: (split(args[0]),) + tuple(args[1:]) if args else None),
            module.register_forward_hook(lambda mod, args, output: split(output)))


_SEQUENCE_HOOKS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # module -> its SequenceParallel hooks


def parallelize_module(module: "Module", mesh: Optional[Mesh] = None, plan: Any = None, *,
                       axis: Optional[str] = None) -> "Module":
    """Lay out ``module`` for tensor parallelism by ``plan`` (``torch.distributed.tensor.parallel``'s
    function); returns ``module``.

    ``plan``: a dict mapping module names to a :class:`ParallelStyle`, a ``PartitionSpec`` (for the
    module's ``weight``) or a dict ``{parameter name: PartitionSpec}``; or one of those, applied to
    ``module`` itself. Names are matched atom by atom as in PyTorch: ``"blocks.*.mlp.fc1"`` matches
    ``blocks.0.mlp.fc1`` and ``blocks.1.mlp.fc1`` (``*`` stays within one dotted part); a name that
    matches no submodule raises ``ValueError``.

    ``mesh``: a 1-D mesh, or a larger one whose tensor-parallel axis is ``axis`` (default: the only axis of
    a 1-D mesh, else ``"tp"`` or ``"model"``, whichever the mesh has; a style's own ``axis=`` wins). On a
    2-D mesh the other axes compose: call :func:`~fgraph.distributed.fully_shard` (or shard the batch
    over the data axis) afterwards, as in PyTorch. Parameters and buffers the plan does not name are
    replicated on the mesh (keeping axes they already have there), so every array of the model lives on
    the same devices. A tied parameter named by two modules must get the same spec from both.

    Example:
        >>> import jax, numpy as np
        >>> import fgraph as fg
        >>> from jax.sharding import Mesh, PartitionSpec as P
        >>> from fgraph.distributed.tensor.parallel import ColwiseParallel
        >>> mesh = Mesh(np.array(jax.devices()).reshape(1, -1), ("data", "model"))
        >>> net = fg.nn.Sequential(fg.nn.Linear(3, 4), fg.nn.Linear(4, 4))
        >>> net = fg.distributed.parallelize_module(net, mesh, {"0": ColwiseParallel(), "1": P(None, "model")})
        >>> net[0].weight.array.sharding.spec, net[1].weight.array.sharding.spec
        (P('model',), P(None, 'model'))
    """
    module = check_module(module, "parallelize_module")
    if mesh is None:
        mesh = Mesh(np.array(jax.devices()), ("tp",))
    check_mesh(mesh, "parallelize_module")
    if plan is None:
        raise TypeError("parallelize_module: give a plan, e.g. {'fc1': ColwiseParallel(), 'fc2': RowwiseParallel()}.")
    plan_items = plan.items() if isinstance(plan, Mapping) else [("", plan)]
    modules = dict(module.named_modules())
    chosen: dict[int, tuple[Any, PartitionSpec, str]] = {}
    attachments = []
    for key, value in plan_items:
        if not isinstance(key, str):
            raise TypeError(f"parallelize_module: plan keys are module names (str), got {key!r}.")
        matched = [name for name in modules if _matches(key, name)]
        if not matched:
            raise ValueError(_no_match_message(key, module, modules))
        for name in matched:
            for pname, p, spec, source in _specs_for(value, modules[name], name, mesh, axis):
                full = f"{name}.{pname}" if name else pname
                if id(p) in chosen and normalize(chosen[id(p)][1], p.ndim) != normalize(spec, p.ndim):
                    raise ValueError(
                        f"parallelize_module: parameter {full!r} (shape {tuple(p.shape)}, tied or named twice) gets "
                        f"{chosen[id(p)][1]} from {chosen[id(p)][2]} but {spec} from {source}; a parameter takes one "
                        "spec: change one of the plan entries.")
                chosen[id(p)] = (p, spec, source)
            if isinstance(value, ParallelStyle):
                attachments.append((value, modules[name]))
    params = {id(p): (p, make_spec(spec_on(p._array, mesh))) for p in module.parameters()}
    params.update({k: (p, spec) for k, (p, spec, _) in chosen.items()})
    buffers = {id(b): (b, make_spec(spec_on(b._array, mesh))) for b in module.buffers()}
    place_module(module, mesh, params, buffers)
    for style, sub in attachments:
        style.attach(sub, mesh, _tp_axis(mesh, style.axis or axis))
    return module


# -- helpers ------------------------------------------------------------------------------------------------
def _tp_axis(mesh: Mesh, axis: Optional[str]) -> str:
    names = tuple(mesh.axis_names)
    if axis is not None:
        if axis not in names:
            raise ValueError(f"parallelize_module: the mesh has axes {names}, not {axis!r}; pass axis= one of them.")
        return axis
    if len(names) == 1:
        return names[0]
    for name in ("tp", "model"):
        if name in names:
            return name
    raise ValueError(f"parallelize_module: which axis of the mesh {names} is the tensor-parallel one? Pass axis= "
                     "(or name it 'tp' or 'model').")


def _matches(pattern: str, name: str) -> bool:
    if pattern == "" or name == "":
        return pattern == name
    parts, atoms = pattern.split("."), name.split(".")
    return len(parts) == len(atoms) and all(fnmatch.fnmatchcase(a, p) for p, a in zip(parts, atoms))


def _no_match_message(key: str, module: "Module", modules: dict) -> str:
    head, _, last = key.rpartition(".")
    hint = ""
    if any(_matches(head, name) and last in dict(modules[name].named_parameters(recurse=False))
           for name in modules):
        hint = (f" {key!r} names a parameter; plan keys name modules: use {{{head!r}: PartitionSpec(...)}} for its "
                f"weight or {{{head!r}: {{{last!r}: PartitionSpec(...)}}}}.")
    names = [n for n in modules if n][:12]
    return (f"parallelize_module: the plan key {key!r} matches no submodule of {type(module).__name__}.{hint} "
            f"Its submodules include {names}; '*' matches within one dotted part ('blocks.*.fc1').")


def _specs_for(value: Any, sub: "Module", name: str, mesh: Mesh, axis: Optional[str]) -> list:
    """``[(parameter name, parameter, spec, description)]`` for one plan entry applied to module ``name``."""
    label = f"module {name!r}" if name else "the root module"
    if isinstance(value, ParallelStyle):
        tp = _tp_axis(mesh, value.axis or axis)
        source = f"{type(value).__name__} of {label} ({type(sub).__name__})"
        out = []
        for pname, dim in value.split_dims(sub, name).items():
            p = getattr(sub, pname, None)
            if p is None:
                continue
            out.append((pname, p, _style_spec(p, dim, tp, mesh, source, f"{name}.{pname}" if name else pname), source))
        return out
    if isinstance(value, Mapping):
        own = dict(sub.named_parameters())
        out = []
        for pname, spec in value.items():
            if pname not in own:
                raise ValueError(f"parallelize_module: {label} ({type(sub).__name__}) has no parameter {pname!r}; it "
                                 f"has {sorted(own)}.")
            p = own[pname]
            full = f"{name}.{pname}" if name else pname
            out.append((pname, p, check_spec("parallelize_module", f"parameter {full!r}", p.shape, spec, mesh),
                        f"the plan entry for {label}"))
        return out
    if isinstance(value, (PartitionSpec, tuple, list)) or value is None:
        p = getattr(sub, "weight", None)
        if p is None or not hasattr(p, "shape"):
            raise ValueError(f"parallelize_module: a PartitionSpec in the plan applies to a module's weight, and "
                             f"{label} ({type(sub).__name__}) has none; give a dict {{parameter name: spec}}.")
        full = f"{name}.weight" if name else "weight"
        spec = check_spec("parallelize_module", f"parameter {full!r}", p.shape,
                          as_spec(value, "parallelize_module", f"the plan entry for {label}"), mesh)
        return [("weight", p, spec, f"the plan entry for {label}")]
    raise TypeError(f"parallelize_module: the plan entry for {label} must be a ParallelStyle (ColwiseParallel(), "
                    f"RowwiseParallel(), SequenceParallel()), a PartitionSpec or a dict {{parameter: spec}}; got "
                    f"{type(value).__name__}.")


def _style_spec(p: Any, dim: Optional[int], tp: str, mesh: Mesh, source: str, full: str) -> PartitionSpec:
    """``p``'s spec on ``mesh`` with the tensor-parallel axis moved to ``dim`` (or removed when ``dim`` is None)."""
    spec = [tuple(a for a in entry_axes(e) if a != tp) or None for e in spec_on(p._array, mesh)]
    if dim is not None:
        if spec[dim] is not None:
            raise ValueError(
                f"parallelize_module: {source} splits parameter {full!r} (shape {tuple(p.shape)}) on dimension {dim} "
                f"over {tp!r}, but that dimension is already split over {spec[dim]}; call parallelize_module before "
                "fully_shard (as in PyTorch), so FSDP takes a dimension tensor parallelism leaves free.")
        spec[dim] = tp
    return check_spec("parallelize_module", f"parameter {full!r} ({source})", p.shape, make_spec(spec), mesh,
                      hint=f"use a mesh axis {tp!r} whose size divides it, or a PartitionSpec / another style for "
                           "this module")


def _linear_or_embedding(style: ParallelStyle, module: "Module", name: str, *, linear: dict, embedding: dict) -> dict:
    from fgraph.nn import Embedding, Linear

    if isinstance(module, Linear):
        return linear
    if isinstance(module, Embedding):
        return embedding
    label = f"module {name!r}" if name else "the root module"
    raise TypeError(f"parallelize_module: {type(style).__name__} applies to Linear and Embedding modules, but {label} "
                    f"is a {type(module).__name__}; give it a PartitionSpec or a dict {{parameter name: spec}} in the "
                    "plan instead.")


def _split_activation(value: Any, mesh: Mesh, axis: str, dim: int) -> Any:
    """``value`` (a Tensor) split along ``dim`` over ``axis``, other dimensions as they are."""
    from fgraph.tensor import Tensor, _rewrap

    if not isinstance(value, Tensor) or value.ndim == 0:
        return value
    d = dim % value.ndim
    if value.shape[d] % mesh.shape[axis]:
        raise ValueError(f"SequenceParallel: an activation of shape {tuple(value.shape)} cannot be split along "
                         f"dimension {d} (size {value.shape[d]}) over mesh axis {axis!r} ({mesh.shape[axis]} devices); "
                         "use a sequence length the axis size divides, or sequence_dim= the sequence dimension.")
    array = value._array
    explicit = any(t == jax.sharding.AxisType.Explicit for t in mesh.axis_types)
    if isinstance(array, jax.core.Tracer) and not explicit:  # inside fg.compile: XLA lays out the other dimensions
        spec = [PartitionSpec.UNCONSTRAINED] * value.ndim
        spec[d] = axis
        constrained = jax.lax.with_sharding_constraint(array, NamedSharding(mesh, PartitionSpec(*spec)))
        return _rewrap(constrained, value._edge)  # the graph record stays: as Tensor.to(sharding) does
    current = jax.typeof(array).sharding if isinstance(array, jax.core.Tracer) else array.sharding
    spec = [None] * value.ndim
    if isinstance(current, NamedSharding) and tuple(current.mesh.axis_names) == tuple(mesh.axis_names):
        spec = [tuple(a for a in entry_axes(e) if a != axis) or None for e in entries(current.spec, value.ndim)]
    spec[d] = axis
    target = NamedSharding(mesh, make_spec(spec))
    if isinstance(array, jax.core.Tracer):  # Explicit axes: the sharding is part of the type, changed by reshard
        return _rewrap(jax.sharding.reshard(array, target), value._edge)
    return value.to(target)
