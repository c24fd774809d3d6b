"""``Parameter`` and ``Buffer``: the tensors a :class:`~fgraph.nn.Module` registers.

A :class:`Parameter` is an immutable leaf tensor that requires grad by default.
Because it is immutable, a module's parameter is never changed in place: an
optimizer step, ``load_state_dict``, ``requires_grad_``, ``to`` or an ``nn.init``
function makes a new Parameter and *rebinds* it on every module that holds the
old one (:func:`rebind`), so tied parameters stay tied.

Each Parameter remembers which ``(module, name)`` slots hold it (weakly); that is
how :func:`rebind` finds the modules from the parameter alone, the way
``opt = Adam(model.parameters())`` needs. The Parameters that replaced one another
share a *lineage* that knows (weakly) the newest of them (:func:`current`), so an
optimizer built before ``load_state_dict`` or ``to()`` follows the model to its new
Parameters, and holding an old Parameter keeps no later one alive.

Example:
    >>> import fgraph as fg
    >>> from fgraph.nn import Linear, Parameter
    >>> from fgraph.nn.parameter import rebind
    >>> layer = Linear(2, 1)
    >>> old = layer.bias
    >>> new = rebind({old: fg.zeros(1)})[old]
    >>> layer.bias is new, isinstance(new, Parameter), new.requires_grad
    (True, True, True)
"""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Optional

import jax

from fgraph.tensor import Tensor, _host_values, _init_leaf, _new_object, _to_array

if TYPE_CHECKING:
    from fgraph.nn.modules.module import Module

__all__ = ["Parameter", "Buffer", "rebind", "succeed", "owners", "current"]


class Parameter(Tensor):
    """A leaf tensor that a Module registers as a parameter (``requires_grad=True`` by default).

    ``Parameter(data)`` accepts what :func:`fgraph.tensor` accepts; a computed
    tensor is detached. Like every Tensor it is immutable.

    Example:
        >>> import fgraph as fg
        >>> p = fg.nn.Parameter(fg.ones(2))
        >>> p.requires_grad, p.is_leaf
        (True, True)
    """

    __slots__ = ("_owners", "_lineage")

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        if data is None:
            data = _to_array([], None, "Parameter")
        array = data._array if isinstance(data, Tensor) else _to_array(data, None, "Parameter")
        _init_leaf(self, placed(array), requires_grad)
        _set_owners(self, [])
        _set_lineage(self, None)

    def requires_grad_(self, requires_grad: bool = True) -> "Parameter":
        """A new Parameter with the same data and the given ``requires_grad`` (not rebound anywhere)."""
        return _make_parameter(self._array, requires_grad)

    def __reduce_ex__(self, protocol: Any) -> tuple:
        """Pickle as values and ``requires_grad``; the unpickled Parameter is a fresh leaf, and the modules
        unpickled with it (``Module.__setstate__``) record that they hold it."""
        return _rebuild_parameter, (_host_values(self, "pickle"), self._edge is not None)

    def __deepcopy__(self, memo: dict) -> "Parameter":
        out = _make_parameter(self._array, self._edge is not None)
        memo[id(self)] = out
        return out

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


def _rebuild_parameter(values: Any, requires_grad: bool) -> Parameter:
    """Unpickle a :class:`Parameter` (see ``Parameter.__reduce_ex__``)."""
    return _make_parameter(jax.numpy.asarray(values), requires_grad)


_set_owners = Parameter.__dict__["_owners"].__set__
_set_lineage = Parameter.__dict__["_lineage"].__set__


class _Lineage:
    """Shared by the Parameters that replaced one another through :func:`rebind`: a weak reference to
    the newest. (A pointer from each Parameter to its successor would make any old Parameter a user
    holds keep every later one alive: memory growing with each optimizer step.)"""

    __slots__ = ("newest",)

    def __init__(self) -> None:
        self.newest: Optional[weakref.ref] = None


def placed(array: Any) -> Any:
    """``array`` committed to the device it is on.

    Arrays made on the host are *uncommitted* and kernel outputs computed from committed
    arrays are committed; ``jax.jit`` compiles the two apart. Committing a module's arrays
    when they are made lets the first training step's kernels serve every later step.
    """
    if isinstance(array, jax.core.Tracer) or not isinstance(array, jax.Array) or array.committed:
        return array
    return jax.device_put(array, array.sharding)


def _make_parameter(data: Any, requires_grad: bool, place: bool = True) -> Parameter:
    p = _new_object(Parameter)
    _init_leaf(p, placed(data) if place else data, requires_grad)
    _set_owners(p, [])
    _set_lineage(p, None)
    return p


class Buffer(Tensor):
    """Marks a tensor to register as a buffer when assigned to a Module attribute (``torch.nn.Buffer``).

    ``module.stats = Buffer(fg.zeros(3), persistent=False)`` is
    ``module.register_buffer("stats", fg.zeros(3), persistent=False)``; the module
    stores a plain tensor.

    Example:
        >>> import fgraph as fg
        >>> m = fg.nn.Module()
        >>> m.count = fg.nn.Buffer(fg.zeros(()))
        >>> [name for name, _ in m.named_buffers()]
        ['count']
    """

    __slots__ = ("persistent",)

    def __init__(self, data: Any, *, persistent: bool = True) -> None:
        array = data._array if isinstance(data, Tensor) else _to_array(data, None, "Buffer")
        _init_leaf(self, array, False)
        Buffer.__dict__["persistent"].__set__(self, bool(persistent))

    def __reduce_ex__(self, protocol: Any) -> tuple:
        return _rebuild_buffer, (_host_values(self, "pickle"), self.persistent)


def _rebuild_buffer(values: Any, persistent: bool) -> Buffer:
    """Unpickle a :class:`Buffer` (see ``Buffer.__reduce_ex__``)."""
    return Buffer(jax.numpy.asarray(values), persistent=persistent)


# -- who holds a parameter ------------------------------------------------------------------------
def track(param: Parameter, module: "Module", name: str) -> None:
    """Record that ``module._parameters[name]`` holds ``param``."""
    param._owners.append((weakref.ref(module), name))


def untrack(param: Parameter, module: "Module", name: str) -> None:
    """Forget that ``module._parameters[name]`` holds ``param`` (and drop dead owners)."""
    param._owners[:] = [(ref, n) for ref, n in param._owners if ref() is not None and not (ref() is module and n == name)]


def owners(param: Parameter) -> list[tuple["Module", str]]:
    """The ``(module, name)`` slots that hold ``param`` now.

    Example:
        >>> import fgraph as fg
        >>> lin = fg.nn.Linear(2, 2)
        >>> [(type(m).__name__, n) for m, n in fg.nn.parameter.owners(lin.weight)]
        [('Linear', 'weight')]
    """
    return list(_live_owners(param))


def _live_owners(param: Parameter) -> Iterator[tuple["Module", str]]:
    for ref, name in tuple(param._owners):
        module = ref()
        if module is not None and module._parameters.get(name) is param:
            yield module, name


def rebind(mapping: Mapping[Tensor, Any]) -> dict[Tensor, Parameter]:
    """Replace parameters by new values on every module that holds them.

    ``mapping`` maps an old :class:`Parameter` to its new value: a Parameter, a
    Tensor or an array (made into a Parameter with the old one's
    ``requires_grad``). Every module slot holding the old parameter gets the same
    new Parameter, so tied parameters stay tied. Returns ``{old: new Parameter}``.
    This is what optimizers, ``load_state_dict`` and ``nn.init`` use.

    Example:
        >>> import fgraph as fg
        >>> a = fg.nn.Linear(2, 2); b = fg.nn.Linear(2, 2)
        >>> b.weight = a.weight                    # tied
        >>> new = fg.nn.parameter.rebind({a.weight: fg.zeros(2, 2)})
        >>> a.weight is b.weight, a.weight.tolist()
        (True, [[0.0, 0.0], [0.0, 0.0]])
    """
    result: dict = {}
    for old, value in mapping.items():
        new = as_parameter(value, old)
        result[old] = new
        if isinstance(old, Parameter) and new is not old:
            _continue_lineage(old, new)
            _move_owners(old, new)
    return result


def succeed(old: Parameter, data: Any) -> Parameter:
    """A new Parameter holding ``data`` (``old``'s dtype and shape) in every module slot that holds ``old``.

    What :func:`rebind` does for one parameter, for the optimizers' step: ``data`` is their
    kernel's output, committed like ``old``'s (so it needs no placing).

    Example:
        >>> import fgraph as fg
        >>> layer = fg.nn.Linear(2, 1)
        >>> new = succeed(layer.bias, fg.zeros(1).array)
        >>> layer.bias is new, current(new) is new
        (True, True)
    """
    new = _make_parameter(data, old._edge is not None, place=False)
    _continue_lineage(old, new)
    _move_owners(old, new)
    return new


def _move_owners(old: Parameter, new: Parameter) -> None:
    """Put ``new`` in every module slot that holds ``old`` now; ``new`` takes over those slots'
    entries (their weak references reused), ``old`` keeps only entries of slots holding something else."""
    moved = []
    kept = []
    for entry in old._owners:
        module = entry[0]()
        if module is None:
            continue
        slots = module._parameters
        if slots.get(entry[1]) is old:
            slots[entry[1]] = new
            moved.append(entry)
        else:
            kept.append(entry)
    old._owners[:] = kept
    new._owners.extend(moved)


def current(param: Tensor) -> Tensor:
    """The Parameter that replaced ``param`` through :func:`rebind`, following every later rebind.

    An optimizer built before ``model.load_state_dict(...)``, ``model.to(...)`` or an
    ``nn.init`` call holds the old Parameters; it follows them here to the ones the model
    holds now. A tensor that was never rebound is returned as is.

    Example:
        >>> import fgraph as fg
        >>> lin = fg.nn.Linear(2, 2)
        >>> old = lin.weight
        >>> _ = lin.load_state_dict(fg.nn.Linear(2, 2).state_dict())
        >>> fg.nn.parameter.current(old) is lin.weight
        True
    """
    seen: Optional[set] = None  # ids: rebinding back and forth between two tied lineages could make a loop
    while isinstance(param, Parameter) and param._lineage is not None:
        newest = param._lineage.newest()
        if newest is None or newest is param:
            break
        if seen is None:
            seen = set()
        elif id(param) in seen:
            break
        seen.add(id(param))
        param = newest  # which may have joined a lineage of its own (a tie to an existing Parameter)
    return param


def _continue_lineage(old: Parameter, new: Parameter) -> None:
    lineage = old._lineage
    if lineage is None:
        lineage = _Lineage()
        _set_lineage(old, lineage)
    lineage.newest = weakref.ref(new)
    if new._lineage is None:
        _set_lineage(new, lineage)


def as_parameter(value: Any, like: Optional[Tensor] = None) -> Parameter:
    """``value`` as a Parameter; a non-Parameter takes ``like``'s ``requires_grad`` (default True)."""
    if isinstance(value, Parameter):
        return value
    requires_grad = True if like is None else like.requires_grad
    array = value._array if isinstance(value, Tensor) else _to_array(value, None, "Parameter")
    return _make_parameter(array, requires_grad)
