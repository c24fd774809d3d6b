"""Contractions and row gathers on arrays sharded over Explicit mesh axes: the output sharding JAX leaves
to the caller.

With sharding in types (``jax.make_mesh`` gives Explicit axes), JAX refuses a contraction whose
contracted dimensions are sharded (``x.T @ g`` over a batch split on ``"data"``: the weight
gradient of every data-parallel step) or whose output would use one mesh axis twice, and a
gather with sharded indices (an embedding lookup of a sharded batch), and asks for
``out_sharding``. fgraph's kernels (matmul, einsum, linear, conv, embedding) call these helpers
instead of ``jnp`` directly; they supply the natural output sharding:

* each output dimension keeps the mesh axes of the operand dimension it comes from (the first
  operand that has it, in argument order), unless an earlier output dimension already uses them;
* mesh axes of contracted dimensions disappear: the partial products are summed across them
  (an all-reduce), so a replicated weight's gradient comes out replicated, like the weight.

Every other op's kernel is wrapped by :func:`resolving` (in ``OpDef.kernel``): when JAX refuses it on
Explicit axes (a reshape merging a sharded dimension, a scatter over a sharded batch, an add of two
operands split on one mesh axis along different dimensions), it runs again with the axes Auto
inside, and its output takes the sharding of an input of the same shape; else, for a reshape, each
sharded dimension's axes go to the output dimension that starts where it started (the major part
of a merge or split); else the output keeps the leading dimensions it shares with its first sharded
input (a batch stays split); the rest is replicated.

Anything else (no Explicit axes, Auto meshes, one device) runs the plain ``jnp``/``lax`` call
unchanged. The decision is made while the kernel is traced, so it costs nothing per call.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable, Optional, Sequence

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec

__all__ = ["resolving", "einsum", "matmul", "conv_general_dilated", "take_rows", "scatter_add_rows"]

_BROADCAST_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _explicit_spec(x: Any) -> Optional[tuple]:
    """Per-dimension mesh axes of ``x``'s type when its mesh has Explicit axes, else ``None``."""
    try:
        sharding = jax.typeof(x).sharding
    except (TypeError, AttributeError):  # a Python number or a NumPy constant: no sharding in its type
        return None
    mesh = getattr(sharding, "mesh", None)
    if mesh is None or mesh.empty or not mesh.explicit_axes:
        return None
    spec = tuple(sharding.spec) + (None,) * (jax.typeof(x).ndim - len(sharding.spec))
    return spec if any(entry is not None for entry in spec) else None


def _axes_of(entry: Any) -> tuple:
    if entry is None:
        return ()
    return (entry,) if isinstance(entry, str) else tuple(entry)


def _natural_spec(in_labels: Sequence[str], specs: Sequence[Optional[tuple]], out_labels: str,
                  always: bool = False) -> Optional[tuple]:
    """The output spec (see the module docstring); ``None`` when JAX's own rule decides (no sharded contracted
    dimension, no mesh axis twice in the output) unless ``always``."""
    source: dict = {}
    contracted_sharded = False
    for labels, spec in zip(in_labels, specs):
        if spec is None:
            continue
        for label, entry in zip(labels, spec):
            if entry is None:
                continue
            if label not in out_labels:
                contracted_sharded = True
            source.setdefault(label, entry)
    out, used, conflict = [], set(), False
    for label in out_labels:
        axes = _axes_of(source.get(label))
        if axes and used.isdisjoint(axes):
            used.update(axes)
            out.append(source[label])
        else:
            conflict = conflict or bool(axes)
            out.append(None)
    return tuple(out) if always or contracted_sharded or conflict else None


def _mesh_of(operands: Sequence[Any]) -> Any:
    for x in operands:
        if _explicit_spec(x) is not None:
            return jax.typeof(x).sharding.mesh
    return None


def _with_out_spec(fn: Callable[..., Any], operands: Sequence[Any], spec: tuple) -> Any:
    sharding = NamedSharding(_mesh_of(operands), PartitionSpec(*spec))
    return jax.sharding.auto_axes(fn, out_sharding=sharding)(*operands)


def _expand_ellipses(subscripts: str, operands: Sequence[Any]) -> tuple[list[str], str]:
    lhs, _, out = subscripts.replace(" ", "").partition("->")
    terms = lhs.split(",")
    widest = 0
    expanded = []
    for term, x in zip(terms, operands):
        if "..." in term:
            n = jnp.ndim(x) - (len(term) - 3)
            widest = max(widest, n)
            letters = _BROADCAST_LETTERS[len(_BROADCAST_LETTERS) - n:] if n else ""
            term = term.replace("...", letters)
        expanded.append(term)
    if "..." in out:
        out = out.replace("...", _BROADCAST_LETTERS[len(_BROADCAST_LETTERS) - widest:] if widest else "")
    return expanded, out


def einsum(subscripts: str, *operands: Any) -> Any:
    """``jnp.einsum(subscripts, *operands)`` (with an explicit ``->``), the natural output sharding supplied
    on Explicit mesh axes.

    Example:
        >>> import jax.numpy as jnp
        >>> from fgraph.ops._natural_sharding import einsum
        >>> einsum("ij,jk->ik", jnp.ones((2, 3)), jnp.ones((3, 4))).shape
        (2, 4)
    """
    specs = [_explicit_spec(x) for x in operands]
    if all(s is None for s in specs) or "->" not in subscripts:
        return jnp.einsum(subscripts, *operands)
    in_labels, out_labels = _expand_ellipses(subscripts, operands)
    spec = _natural_spec(in_labels, specs, out_labels)
    if spec is None:
        return jnp.einsum(subscripts, *operands)
    return _with_out_spec(lambda *xs: jnp.einsum(subscripts, *xs), operands, spec)


def _matmul_labels(a_ndim: int, b_ndim: int) -> tuple[list[str], str]:
    batch = max(a_ndim, b_ndim, 2) - 2
    letters = _BROADCAST_LETTERS[len(_BROADCAST_LETTERS) - batch:] if batch else ""
    a = "k" if a_ndim == 1 else letters[batch - (a_ndim - 2):] + "ik"
    b = "k" if b_ndim == 1 else letters[batch - (b_ndim - 2):] + "kj"
    out = letters[batch - max(a_ndim - 2, b_ndim - 2, 0):] + ("i" if a_ndim > 1 else "") + ("j" if b_ndim > 1 else "")
    return [a, b], out


def matmul(a: Any, b: Any) -> Any:
    """``jnp.matmul(a, b)``, the natural output sharding supplied on Explicit mesh axes.

    Example:
        >>> import jax.numpy as jnp
        >>> from fgraph.ops._natural_sharding import matmul
        >>> matmul(jnp.ones((5, 2, 3)), jnp.ones((3, 4))).shape
        (5, 2, 4)
    """
    specs = [_explicit_spec(a), _explicit_spec(b)]
    if specs[0] is None and specs[1] is None:
        return jnp.matmul(a, b)
    in_labels, out_labels = _matmul_labels(jnp.ndim(a), jnp.ndim(b))
    spec = _natural_spec(in_labels, specs, out_labels)
    if spec is None:
        return jnp.matmul(a, b)
    return _with_out_spec(jnp.matmul, (a, b), spec)


def conv_general_dilated(conv: Callable[[Any, Any], Any], lhs: Any, rhs: Any,
                         dimension_numbers: tuple, batch_group_count: int = 1) -> Any:
    """``conv(lhs, rhs)`` (a ``lax.conv_general_dilated`` with its static arguments bound), the natural output
    sharding supplied on Explicit mesh axes where JAX asks for one (a sharded kernel, or a sharded input
    feature dimension: the weight gradient over a sharded batch). ``dimension_numbers`` are the index
    tuples ``(lhs_spec, rhs_spec, out_spec)``.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from fgraph.ops._natural_sharding import conv_general_dilated
        >>> dn = ((0, 1, 2), (0, 1, 2), (0, 1, 2))
        >>> conv = lambda x, w: jax.lax.conv_general_dilated(x, w, (1,), "VALID",
        ...                                                  dimension_numbers=jax.lax.ConvDimensionNumbers(*dn))
        >>> conv_general_dilated(conv, jnp.ones((1, 1, 3)), jnp.ones((1, 1, 2)), dn).shape
        (1, 1, 2)
    """
    lhs_spec, rhs_spec = _explicit_spec(lhs), _explicit_spec(rhs)
    if lhs_spec is None and rhs_spec is None:
        return conv(lhs, rhs)
    lhs_dims, rhs_dims, out_dims = dimension_numbers
    if rhs_spec is None and (lhs_spec is None or lhs_spec[lhs_dims[1]] is None):
        return conv(lhs, rhs)  # JAX's own rule: the output follows the input's batch dimension
    out = [None] * len(out_dims)
    batch = lhs_spec[lhs_dims[0]] if lhs_spec is not None and batch_group_count == 1 else None
    feature = rhs_spec[rhs_dims[0]] if rhs_spec is not None else None
    out[out_dims[0]] = batch
    if feature is not None and set(_axes_of(feature)).isdisjoint(_axes_of(batch)):
        out[out_dims[1]] = feature
    return _with_out_spec(conv, (lhs, rhs), tuple(out))


def take_rows(table: Any, indices: Any) -> Any:
    """``jnp.take(table, indices, axis=0)`` (an embedding lookup): the output is sharded like ``indices``, then
    like the table's other dimensions.

    Example:
        >>> import jax.numpy as jnp
        >>> from fgraph.ops._natural_sharding import take_rows
        >>> take_rows(jnp.ones((5, 3)), jnp.array([[0, 4]])).shape
        (1, 2, 3)
    """
    table_spec, index_spec = _explicit_spec(table), _explicit_spec(indices)
    if table_spec is None and index_spec is None:
        return jnp.take(table, indices, axis=0)
    index_labels = _BROADCAST_LETTERS[:jnp.ndim(indices)]
    row_labels = "abcdefghijklmnopqrstuvwxyz"[:jnp.ndim(table) - 1]
    spec = _natural_spec([index_labels, "#" + row_labels], [index_spec, table_spec], index_labels + row_labels,
                         always=True)  # "#": the looked-up axis, gathered (JAX refuses even a replicated table)
    return _with_out_spec(lambda t, i: jnp.take(t, i, axis=0), (table, indices), spec)


def scatter_add_rows(num_rows: int, updates: Any, indices: Any) -> Any:
    """``zeros((num_rows, ...)).at[indices].add(updates)`` (an embedding's weight gradient): rows summed over the
    sharded batch (an all-reduce), the trailing dimensions sharded like ``updates``'.

    Example:
        >>> import jax.numpy as jnp
        >>> from fgraph.ops._natural_sharding import scatter_add_rows
        >>> scatter_add_rows(3, jnp.ones((2, 2)), jnp.array([0, 0])).tolist()
        [[2.0, 2.0], [0.0, 0.0], [0.0, 0.0]]
    """
    def scatter(u: Any, i: Any) -> Any:
        return jnp.zeros((num_rows,) + u.shape[i.ndim:], u.dtype).at[i].add(u)

    update_spec, index_spec = _explicit_spec(updates), _explicit_spec(indices)
    if update_spec is None and index_spec is None:
        return scatter(updates, indices)
    trailing = (update_spec or (None,) * jnp.ndim(updates))[jnp.ndim(indices):]
    return _with_out_spec(scatter, (updates, indices), (None,) + tuple(trailing))


def resolving(forward: Callable[..., Any]) -> Callable[..., Any]:
    """``forward`` (a kernel's JAX function), retried with Auto axes inside when JAX refuses it on Explicit axes.

    The first attempt is the plain call; only a call that fails with Explicit-sharded operands is
    retried (a failure that is not about sharding fails again, and the first error is raised).

    Example:
        >>> import jax.numpy as jnp
        >>> from fgraph.ops._natural_sharding import resolving
        >>> resolving(jnp.add)(jnp.ones(2), 1.0).tolist()
        [2.0, 2.0]
    """
    @functools.wraps(forward)
    def kernel(*args: Any, **kwargs: Any) -> Any:
        try:
            return forward(*args, **kwargs)
        except Exception as first:
            arrays = jax.tree.leaves(args)
            if all(_explicit_spec(a) is None for a in arrays):
                raise
            try:
                return _auto_inside(functools.partial(forward, **kwargs), args, arrays)
            except Exception:
                raise first from None

    return kernel


def _auto_inside(fn: Callable[..., Any], args: tuple, arrays: list) -> Any:
    mesh = _mesh_of(arrays)
    shapes = jax.eval_shape(jax.sharding.auto_axes(fn, out_sharding=NamedSharding(mesh, PartitionSpec())), *args)
    sharded = [(tuple(jnp.shape(a)), _explicit_spec(a)) for a in arrays if _explicit_spec(a) is not None]
    out = jax.tree.map(lambda s: NamedSharding(mesh, PartitionSpec(*_guess_spec(tuple(s.shape), sharded, mesh))),
                       shapes)
    return jax.sharding.auto_axes(fn, out_sharding=out)(*args)


def _guess_spec(shape: tuple, sharded: list, mesh: Any) -> tuple:
    """An output's spec from the sharded inputs ``[(shape, spec)]`` (see the module docstring)."""
    for in_shape, spec in sharded:
        if in_shape == shape:
            return spec
    in_shape, spec = sharded[0]
    out: list = [None] * len(shape)
    if math.prod(shape) == math.prod(in_shape):  # a reshape: each sharded dimension's major part, where it starts
        for i, entry in enumerate(spec):
            if entry is None:
                continue
            parts = math.prod(mesh.shape[a] for a in _axes_of(entry))
            start = math.prod(in_shape[:i])
            j = next((j for j in range(len(shape)) if math.prod(shape[:j]) == start and shape[j] % parts == 0), None)
            if j is not None and out[j] is None:
                out[j] = entry
        return tuple(out)
    lead = 0
    while lead < min(len(shape), len(in_shape)) and shape[lead] == in_shape[lead]:
        out[lead] = spec[lead]
        lead += 1
    return tuple(out)
