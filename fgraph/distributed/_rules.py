"""Partition rules: ``shard(module, mesh, rules)`` lays a module out from glob patterns over its parameter names.

The rules form of sharding, as Flax NNX's partition rules or t5x's ``partition_rules``: a list of
``(pattern, PartitionSpec)`` pairs; each parameter (and buffer) takes the spec of the first pattern
that matches its dotted name, anything unmatched is replicated. Patterns are shell globs over the
whole name (:func:`fnmatch.fnmatchcase`), so ``*`` crosses dots: ``"*.weight"`` matches every weight
(a top-level ``weight`` too), ``"blocks.*.attn.*"`` every attention parameter of every block.

This file also holds what :func:`~fgraph.distributed.fully_shard` and
:func:`~fgraph.distributed.parallelize_module` share: reading a parameter's spec on a mesh, checking
that a spec fits a shape, and rebinding a module's tensors under new shardings (tied parameters are
placed once and stay tied).

Example:
    >>> import jax, numpy as np
    >>> import fgraph as fg
    >>> from jax.sharding import Mesh, PartitionSpec as P
    >>> mesh = Mesh(np.array(jax.devices()), ("model",))
    >>> model = fg.nn.Sequential(fg.nn.Linear(4, 8), fg.nn.ReLU(), fg.nn.Linear(8, 4))
    >>> model = fg.distributed.shard(model, mesh, {"0.*": P("model"), "2.weight": P(None, "model")})
    >>> model[0].weight.array.sharding.spec, model[2].weight.array.sharding.spec, model[2].bias.array.sharding.spec
    (P('model',), P(None, 'model'), P())
"""
from __future__ import annotations

import fnmatch
import math
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional, Sequence, Union

from jax.sharding import Mesh, NamedSharding, PartitionSpec

if TYPE_CHECKING:
    from fgraph.nn.modules.module import Module

__all__ = ["shard"]

SpecLike = Union[PartitionSpec, Sequence[Any], None]
Rules = Union[Mapping[str, SpecLike], Iterable[tuple[str, SpecLike]]]


def shard(module: "Module", mesh: Mesh, rules: Rules) -> "Module":
    """Shard ``module``'s parameters and buffers on ``mesh`` by partition rules; returns ``module``.

    ``rules`` maps glob patterns over dotted names (``"*.weight"``, ``"blocks.*.attn.*"``; ``*``
    crosses dots, and a leading ``*.`` also matches at the top level) to ``PartitionSpec``\\ s, as a
    dict or a list of ``(pattern, spec)`` pairs. A tensor takes the spec of the first pattern that
    matches its name; a tensor no pattern matches is replicated (so are specs given as ``None`` or
    ``PartitionSpec()``). A spec may be shorter than the tensor's rank (the remaining dimensions are
    not split). A tied parameter is placed once and stays tied; its names must not match rules that
    give it different specs. A spec naming an axis the mesh lacks, or splitting a dimension the axis
    size does not divide, raises ``ValueError`` naming the parameter. Optimizers made afterwards keep
    their state with each parameter's sharding.

    Example:
        >>> import jax, numpy as np
        >>> import fgraph as fg
        >>> from jax.sharding import Mesh, PartitionSpec as P
        >>> mesh = Mesh(np.array(jax.devices()).reshape(-1, 1), ("data", "model"))
        >>> lin = fg.distributed.shard(fg.nn.Linear(4, 6), mesh, [("*.weight", P("model", None)), ("*", None)])
        >>> lin.weight.array.sharding.spec, lin.bias.array.sharding.spec
        (P('model',), P())
    """
    module = check_module(module, "shard")
    check_mesh(mesh, "shard")
    pairs = _rule_pairs(rules)
    params: dict[int, tuple[Any, PartitionSpec, str]] = {}
    for name, p in module.named_parameters(remove_duplicate=False):
        spec, pattern = _first_match(pairs, name)
        if id(p) in params:
            seen_spec, seen_name = params[id(p)][1], params[id(p)][2]
            if normalize(seen_spec, p.ndim) != normalize(spec, p.ndim):
                raise ValueError(
                    f"shard: the tied parameter named {seen_name!r} and {name!r} (one Parameter, shape "
                    f"{tuple(p.shape)}) gets {seen_spec} under its first name but {spec} under its second "
                    f"(pattern {pattern!r}); put a rule for {name!r} or {seen_name!r} first so both names take "
                    "the same spec.")
            continue
        params[id(p)] = (p, check_spec("shard", f"parameter {name!r}", p.shape, spec, mesh), name)
    buffers: dict[int, tuple[Any, PartitionSpec]] = {}
    for name, b in module.named_buffers(remove_duplicate=False):
        if id(b) not in buffers:
            spec, _ = _first_match(pairs, name)
            buffers[id(b)] = (b, check_spec("shard", f"buffer {name!r}", b.shape, spec, mesh))
    return place_module(module, mesh, {k: v[:2] for k, v in params.items()}, buffers)


# -- shared by fully_shard, parallelize_module and shard --------------------------------------------------
def check_module(module: Any, fn: str) -> "Module":
    from fgraph.nn.modules.module import Module

    if not isinstance(module, Module):
        raise TypeError(f"{fn}: expected an fg.nn.Module, got {type(module).__name__}.")
    return module


def check_mesh(mesh: Any, fn: str) -> Mesh:
    if not isinstance(mesh, Mesh):
        raise TypeError(
            f"{fn}: expected a jax.sharding.Mesh (fg.distributed.mesh(), jax.make_mesh(...)), got "
            f"{type(mesh).__name__}.")
    return mesh


def as_spec(value: SpecLike, fn: str, what: str) -> PartitionSpec:
    """``value`` as a PartitionSpec: ``None`` is replicated, a tuple or list lists the entries."""
    if value is None:
        return PartitionSpec()
    if isinstance(value, PartitionSpec):
        return value
    if isinstance(value, (tuple, list)):
        return PartitionSpec(*value)
    raise TypeError(f"{fn}: {what} must be a jax.sharding.PartitionSpec (or None to replicate), got "
                    f"{type(value).__name__} {value!r}.")


def entry_axes(entry: Any) -> tuple:
    """The mesh axes one PartitionSpec entry names: ``None`` -> (), ``"x"`` -> ("x",), ``("x", "y")`` as is."""
    if entry is None or entry is PartitionSpec.UNCONSTRAINED:
        return ()
    return tuple(entry) if isinstance(entry, (tuple, list)) else (entry,)


def entries(spec: PartitionSpec, ndim: int) -> list:
    """``spec``'s entries padded with ``None`` to ``ndim``."""
    out = list(spec)
    return out + [None] * (ndim - len(out))


def make_spec(spec_entries: Sequence[Any]) -> PartitionSpec:
    """A PartitionSpec from entries, trailing ``None``\\ s dropped (the form compiled programs return, so a
    step's outputs compare equal to its inputs and nothing retraces)."""
    out = [None if not entry_axes(e) else (e[0] if isinstance(e, tuple) and len(e) == 1 else e)
           for e in spec_entries]
    while out and out[-1] is None:
        out.pop()
    return PartitionSpec(*out)


def normalize(spec: PartitionSpec, ndim: int) -> PartitionSpec:
    return make_spec(entries(spec, max(ndim, len(spec))))


def spec_on(array: Any, mesh: Mesh) -> list:
    """The entries of ``array``'s PartitionSpec when it is laid out on ``mesh`` (so axes placed before, a
    tensor-parallel split say, are kept); all ``None`` (replicated) when it lives elsewhere."""
    sharding = getattr(array, "sharding", None)
    if isinstance(sharding, NamedSharding) and same_mesh(sharding.mesh, mesh):
        return [None if not entry_axes(e) else e for e in entries(sharding.spec, array.ndim)][:array.ndim]
    return [None] * array.ndim


def same_mesh(a: Any, b: Mesh) -> bool:
    return a is b or (tuple(a.axis_names) == tuple(b.axis_names) and a.devices.shape == b.devices.shape
                      and (a.devices == b.devices).all())


def check_spec(fn: str, what: str, shape: Sequence[int], spec: SpecLike, mesh: Mesh, hint: str = "") -> PartitionSpec:
    """``spec`` (normalized) when it can lay out an array of ``shape`` on ``mesh``; else a ``ValueError``
    naming ``what``, the shape, the spec, the mesh's axes and what to do."""
    spec = as_spec(spec, fn, f"the spec of {what}")
    shape = tuple(shape)
    sizes = dict(mesh.shape)
    where = f"{what} of shape {shape} cannot take {spec} on a mesh with axes {sizes}"
    fix = hint or "give it a spec whose mesh axes divide its dimensions, or None to replicate it"
    if len(spec) > len(shape):
        raise ValueError(f"{fn}: {where}: the spec has {len(spec)} entries but the tensor only {len(shape)} "
                         f"dimensions; {fix}.")
    used: set = set()
    for dim, entry in enumerate(entries(spec, len(shape))):
        axes = entry_axes(entry)
        for axis in axes:
            if axis not in sizes:
                raise ValueError(f"{fn}: {where}: the mesh has no axis {axis!r}; {fix}.")
            if axis in used:
                raise ValueError(f"{fn}: {where}: mesh axis {axis!r} is used twice; {fix}.")
            used.add(axis)
        parts = math.prod(sizes[a] for a in axes)
        if shape[dim] % parts:
            over = f"mesh axis {axes[0]!r}" if len(axes) == 1 else f"mesh axes {axes} together"
            raise ValueError(f"{fn}: {where}: dimension {dim} (size {shape[dim]}) does not split into {parts} equal "
                             f"parts over {over}; {fix}.")
    return make_spec(entries(spec, len(shape)))


def place_module(module: "Module", mesh: Mesh, params: Mapping[int, tuple[Any, PartitionSpec]],
                 buffers: Mapping[int, tuple[Any, PartitionSpec]]) -> "Module":
    """Rebind each parameter ``p`` of ``params`` (``{id(p): (p, spec)}``) and each buffer of ``buffers`` as the
    same values laid out with ``NamedSharding(mesh, spec)``; tied parameters stay tied. Returns ``module``."""
    from fgraph.distributed._placement import put_array
    from fgraph.nn.parameter import _make_parameter, rebind
    from fgraph.tensor import _wrap

    new_params = {}
    for p, spec in params.values():
        target = NamedSharding(mesh, spec)
        if p._array.sharding != target:
            new_params[p] = _make_parameter(put_array(p._array, target), p.requires_grad)
    rebind(new_params)
    done: dict = {}
    for sub in module.modules():
        for name, b in sub._buffers.items():
            if b is None or id(b) not in buffers:
                continue
            if id(b) not in done:
                target = NamedSharding(mesh, buffers[id(b)][1])
                done[id(b)] = b if b._array.sharding == target else _wrap(put_array(b._array, target))
            sub._buffers[name] = done[id(b)]
    return module


def _rule_pairs(rules: Rules) -> list[tuple[str, PartitionSpec]]:
    items = rules.items() if isinstance(rules, Mapping) else rules
    try:
        pairs = list(items)
    except TypeError:
        raise TypeError(f"shard: rules must be a dict {{pattern: PartitionSpec}} or a list of (pattern, spec) "
                        f"pairs, got {type(rules).__name__}.") from None
    out = []
    for pair in pairs:
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and isinstance(pair[0], str)):
            raise TypeError(f"shard: each rule must be a (pattern, PartitionSpec) pair with a str pattern, got "
                            f"{pair!r}.")
        out.append((pair[0], as_spec(pair[1], "shard", f"the spec of pattern {pair[0]!r}")))
    return out


def _first_match(pairs: list, name: str) -> tuple[PartitionSpec, Optional[str]]:
    for pattern, spec in pairs:
        if fnmatch.fnmatchcase(name, pattern) or pattern.startswith("*.") and fnmatch.fnmatchcase(name, pattern[2:]):
            return spec, pattern
    return PartitionSpec(), None

