"""``fgraph.nn.utils.parametrize``: tensors of a module computed from other tensors (``torch.nn.utils.parametrize``).

``register_parametrization(module, "weight", P())`` moves the parameter (or buffer)
``module.weight`` to ``module.parametrizations.weight.original`` and makes
``module.weight`` a property that returns ``P()(original)``, recomputed on every access
(or once per :func:`cached` block). As in PyTorch:

* the module's class is swapped for a subclass (``ParametrizedLinear``) holding the
  property; :func:`type_before_parametrizations` gives the class it had;
* ``state_dict`` keys are PyTorch's (``parametrizations.weight.original``, or
  ``original0``, ``original1``... when ``P.right_inverse`` returns a tuple), so a PyTorch
  ``state_dict`` of a parametrized module loads into the fgraph one and back;
* ``parameters()`` lists the originals and ``backward`` returns gradients for them;
* assigning ``module.weight = value`` calls the ``right_inverse`` methods (last registered
  first) and stores the result in the originals;
* several parametrizations on one tensor are chained (a :class:`ParametrizationList`).

Tensors are immutable, so where PyTorch writes into the original in place (registration with
a ``right_inverse``, assignment, :func:`remove_parametrizations`) fgraph *rebinds* it: a new
Parameter replaces the old one in every slot that held it (tied parameters stay tied) and
continues its lineage, so an optimizer built before follows it (see ``fgraph.nn.parameter``).

Example:
    >>> import fgraph as fg
    >>> from fgraph import nn
    >>> import fgraph.nn.utils.parametrize as P
    >>> class Symmetric(nn.Module):
    ...     def forward(self, X):
    ...         return X.triu() + X.triu(1).mT
    >>> layer = P.register_parametrization(nn.Linear(3, 3), "weight", Symmetric())
    >>> type(layer).__name__, P.is_parametrized(layer, "weight")
    ('ParametrizedLinear', True)
    >>> bool((layer.weight == layer.weight.mT).all())
    True
    >>> [name for name, _ in layer.named_parameters()]
    ['bias', 'parametrizations.weight.original']
    >>> grads = layer(fg.ones(2, 3)).sum().backward()
    >>> grads[layer.parametrizations.weight.original].shape
    (3, 3)
    >>> type(P.remove_parametrizations(layer, "weight")).__name__
    'Linear'
"""
from __future__ import annotations

import collections.abc
import copy
from contextlib import contextmanager
from typing import Any, Iterator, Optional, Sequence

from fgraph.autograd.grad_mode import no_grad
from fgraph.nn.modules.container import ModuleDict, ModuleList
from fgraph.nn.modules.module import Module
from fgraph.nn.parameter import Parameter, _make_parameter, rebind, untrack
from fgraph.tensor import Tensor, _wrap

__all__ = [
    "cached",
    "ParametrizationList",
    "register_parametrization",
    "is_parametrized",
    "remove_parametrizations",
    "type_before_parametrizations",
    "transfer_parametrizations_and_params",
]

# -- the cache ------------------------------------------------------------------------------------------------
_cache_enabled = 0
_cache: dict = {}  # (id(module), tensor name) -> (module, tensor); holding the module keeps its id unique


@contextmanager
def cached() -> Iterator[None]:
    """Compute each parametrized tensor once inside the block (``torch.nn.utils.parametrize.cached``).

    Without it, ``module.weight`` runs the parametrization on every access; inside it, the
    first access computes it and later ones (of the same module and tensor) reuse that
    tensor, so a weight used at every step of a recurrent loop, or tied in two places, costs
    one evaluation and its gradient flows through one graph. The values are dropped when the
    outermost ``cached()`` block ends. (Unlike PyTorch, assigning ``module.weight = value``
    inside the block drops that tensor's cached value.)

    Example:
        >>> import fgraph as fg
        >>> from fgraph import nn
        >>> import fgraph.nn.utils.parametrize as P
        >>> class Double(nn.Module):
        ...     def forward(self, X):
        ...         return 2 * X
        >>> layer = P.register_parametrization(nn.Linear(2, 2), "weight", Double())
        >>> with P.cached():
        ...     layer.weight is layer.weight
        True
        >>> layer.weight is layer.weight
        False
    """
    global _cache_enabled, _cache
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


# -- ParametrizationList --------------------------------------------------------------------------------------
class ParametrizationList(ModuleList):
    """The parametrizations of one tensor and its original(s): ``module.parametrizations[tensor_name]``.

    Calling it computes the parametrized tensor: ``self[0](original)`` (or
    ``self[0](original0, original1, ...)``), then ``self[1]``, ``self[2]``... on the result.
    The originals are ``original`` when the first parametrization has no ``right_inverse``
    (it is then the identity) or its ``right_inverse`` returns one tensor, and
    ``original0``, ``original1``... when it returns a sequence. Parameters stay Parameters
    (with the ``requires_grad`` of the tensor they replace), buffers stay buffers.

    Made by :func:`register_parametrization`; not meant to be built directly.
    """

    unsafe: bool
    is_tensor: bool
    ntensors: int

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        modules = list(modules)
        if not modules:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype

        with no_grad():
            new: Any = original
            for module in reversed(modules):
                inverse = getattr(module, "right_inverse", None)
                if inverse is not None:
                    try:
                        new = inverse(new)
                    except NotImplementedError:
                        pass  # then right_inverse is the identity, as without one
        is_tensor = isinstance(new, Tensor)
        if not is_tensor and not isinstance(new, collections.abc.Sequence):
            raise ValueError(
                "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                f"Got {type(new).__name__}"
            )
        self.is_tensor = is_tensor
        self.ntensors = 1 if is_tensor else len(new)
        is_parameter = isinstance(original, Parameter)

        if is_tensor:
            if new.dtype != original_dtype:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                    f"original.dtype: {original_dtype}\n"
                    f"right_inverse(original).dtype: {new.dtype}"
                )
            if is_parameter:
                # The original keeps its place for optimizers: it is registered here, and a new value
                # from right_inverse rebinds it (every slot holding it, its lineage continued).
                self.register_parameter("original", original)
                if new is not original:
                    rebind({original: new._array})
            else:
                self.register_buffer("original", _wrap(new._array))
        else:
            for i, item in enumerate(new):
                if not isinstance(item, Tensor):
                    raise ValueError(
                        "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                        f"Got element {i} of the sequence with type {type(item).__name__}."
                    )
                if is_parameter:
                    self.register_parameter(f"original{i}", _make_parameter(item._array, original.requires_grad))
                else:
                    self.register_buffer(f"original{i}", _wrap(item._array))

        if not self.unsafe:
            Z = self()
            if not isinstance(Z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(Z).__name__}.")
            if Z.dtype != original_dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, unless `unsafe` flag is "
                    f"enabled.\nunparametrized dtype: {original_dtype}\nparametrized dtype: {Z.dtype}"
                )
            if Z.shape != original_shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, unless `unsafe` flag is "
                    f"enabled.\nunparametrized shape: {original_shape}\nparametrized shape: {Z.shape}"
                )

    def right_inverse(self, value: Tensor) -> None:
        """Store ``value`` in the original(s): each parametrization's ``right_inverse``, last registered first.

        What ``module.weight = value`` calls. The originals are rebound (Parameters: in every
        slot that holds them, lineage continued), not written in place.
        """
        with no_grad():
            for module in reversed(list(self)):
                inverse = getattr(module, "right_inverse", None)
                if inverse is None:
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
                value = inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(
                        f"The tensor returned by `right_inverse` has dtype {value.dtype} "
                        f"while `original` has dtype {self.original.dtype}"
                    )
                self._set_original("original", value)
            else:
                if isinstance(value, Tensor) or not isinstance(value, collections.abc.Sequence):
                    raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {type(value).__name__}.")
                if len(value) != self.ntensors:
                    raise ValueError(
                        f"'right_inverse' must return a sequence of tensors of length {self.ntensors}. "
                        f"Got a sequence of length {len(value)}."
                    )
                for i, tensor in enumerate(value):
                    original_i = getattr(self, f"original{i}")
                    if not isinstance(tensor, Tensor):
                        raise ValueError(
                            "'right_inverse' must return a sequence of tensors. "
                            f"Got element {i} of type {type(tensor).__name__}."
                        )
                    if original_i.dtype != tensor.dtype:
                        raise ValueError(
                            f"Tensor {i} returned by `right_inverse` has dtype {tensor.dtype} "
                            f"while `original{i}` has dtype {original_i.dtype}"
                        )
                    self._set_original(f"original{i}", tensor)

    def _set_original(self, name: str, value: Tensor) -> None:
        old = self._parameters.get(name)
        if isinstance(old, Parameter):
            rebind({old: value._array})
        else:
            self.register_buffer(name, _wrap(value._array), name not in self._non_persistent_buffers_set)

    def forward(self) -> Tensor:
        modules = list(self._modules.values())
        if self.is_tensor:
            x = modules[0](self.original)
        else:
            x = modules[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in modules[1:]:
            x = module(x)
        return x


# -- the parametrized class -----------------------------------------------------------------------------------
def _refuse_pickle(self: Module) -> Any:
    raise RuntimeError(
        "Serialization of parametrized modules is only supported through state_dict(): "
        "fg.save(model.state_dict(), 'model.safetensors'), then model.load_state_dict(fg.load(...)) into a model "
        "built and parametrized the same way."
    )


def _deepcopy(self: Module, memo: dict) -> Module:
    found = memo.get(id(self))
    if found is not None:
        return found
    replica = object.__new__(type(self))
    memo[id(self)] = replica
    replica.__setstate__(copy.deepcopy(self.__dict__, memo))  # Module.__setstate__: the copies learn their owner
    return replica


def _parametrized_property(tensor_name: str) -> property:
    def get_parametrized(self: Module) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if _cache_enabled:
            key = (id(self), tensor_name)
            hit = _cache.get(key)
            if hit is not None and hit[0] is self:
                return hit[1]
            tensor = parametrization()
            _cache[key] = (self, tensor)
            return tensor
        return parametrization()

    def set_original(self: Module, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)
        _cache.pop((id(self), tensor_name), None)

    doc = f"``{tensor_name}`` computed by ``parametrizations.{tensor_name}`` (assigning calls right_inverse)"
    return property(get_parametrized, set_original, doc=doc)


def _guarded_setattr(base: type, names: frozenset) -> Any:
    def __setattr__(self: Module, name: str, value: Any) -> None:
        if name in names and isinstance(value, Parameter):
            raise KeyError(
                f"cannot assign a Parameter to '{name}': it is parametrized (module.parametrizations.{name}). "
                f"Assign a Tensor to set it through the parametrizations' right_inverse (module.{name} = tensor), or "
                f"call remove_parametrizations(module, '{name}') first."
            )
        base.__setattr__(self, name, value)

    return __setattr__


def _set_class(module: Module, names: Sequence[str]) -> None:
    """Give ``module`` a fresh ``Parametrized<Class>`` with one property per parametrized tensor (or its
    class back when there are none).

    A new class each time (never an edited one): copies made by unflattening (``jax.tree.map``,
    ``jax.grad``) and ``copy.deepcopy`` share the class, and must not lose a property when the
    original module drops a parametrization.
    """
    base = type_before_parametrizations(module)
    if not names:
        object.__setattr__(module, "__class__", base)
        return
    namespace: dict = {name: _parametrized_property(name) for name in names}
    namespace["__getstate__"] = _refuse_pickle
    namespace["__setattr__"] = _guarded_setattr(base, frozenset(names))
    namespace["_parametrized_base"] = base
    namespace["__module__"] = base.__module__
    if not hasattr(base, "__deepcopy__"):
        namespace["__deepcopy__"] = _deepcopy
    cls = type(f"Parametrized{base.__name__}", (base,), namespace)
    object.__setattr__(module, "__class__", cls)


# -- the public functions -------------------------------------------------------------------------------------
def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` the output of ``parametrization`` (``torch.nn.utils.parametrize``'s).

    The parameter or buffer moves to ``module.parametrizations[tensor_name].original``
    (state_dict key ``parametrizations.<tensor_name>.original``); ``module.<tensor_name>``
    becomes ``parametrization(original)``, recomputed on each access (see :func:`cached`).

    ``parametrization`` is an :class:`~fgraph.nn.Module` (it is put in training or eval mode
    with ``module``). It may define ``right_inverse(X)``, which maps a value of the tensor
    to original(s): it is called once here on the current value (so the parametrized tensor
    starts at, or near, the unparametrized one) and on every ``module.<tensor_name> = X``. It
    may return one tensor (stored as ``original``, same dtype) or a sequence
    (``original0``, ``original1``..., each passed to ``forward`` in order). Without it, or if
    it raises ``NotImplementedError`` here, the original keeps its value.

    Registering on an already parametrized tensor appends to its
    :class:`ParametrizationList`: the new parametrization is applied to the previous output.

    Unless ``unsafe=True``, the parametrized tensor must keep the original's dtype and
    shape (checked now, with ``ValueError``).

    Example:
        >>> import fgraph as fg
        >>> from fgraph import nn
        >>> import fgraph.nn.utils.parametrize as P
        >>> class RankOne(nn.Module):
        ...     def forward(self, x, y):
        ...         return x.unsqueeze(-1) @ y.unsqueeze(-2)
        ...     def right_inverse(self, Z):
        ...         return Z[:, 0], Z[0] / Z[0, 0]
        >>> layer = P.register_parametrization(nn.Linear(3, 3), "weight", RankOne())
        >>> sorted(layer.state_dict())
        ['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
        >>> int(fg.linalg.matrix_rank(layer.weight))
        1
    """
    if not isinstance(module, Module):
        raise TypeError(f"register_parametrization: module must be an fgraph.nn.Module, got {type(module).__name__}")
    if not isinstance(tensor_name, str):
        raise TypeError(f"register_parametrization: tensor_name must be a str, got {type(tensor_name).__name__}")
    if not isinstance(parametrization, Module):
        raise TypeError(
            f"register_parametrization: the parametrization must be an fgraph.nn.Module (got "
            f"{type(parametrization).__name__}); wrap a function in a Module whose forward calls it."
        )
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            Y = getattr(module, tensor_name)
            X = parametrization(Y)
            if not isinstance(X, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(X).__name__}.")
            if X.dtype != Y.dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, unless the `unsafe` flag "
                    f"is enabled.\nmodule.{tensor_name}.dtype: {Y.dtype}\n"
                    f"parametrization(module.{tensor_name}).dtype: {X.dtype}"
                )
            if X.shape != Y.shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, unless the `unsafe` flag "
                    f"is enabled.\nmodule.{tensor_name}.shape: {Y.shape}\n"
                    f"parametrization(module.{tensor_name}).shape: {X.shape}"
                )
            inverse = getattr(parametrization, "right_inverse", None)
            if inverse is not None:
                try:
                    with no_grad():
                        Z = inverse(X)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(Z, Tensor):
                        raise ValueError(f"parametrization.right_inverse must return a tensor. Got: {type(Z).__name__}")
                    if Z.dtype != Y.dtype:
                        raise ValueError(
                            "The tensor returned by parametrization.right_inverse must have the same dtype as "
                            f"module.{tensor_name}, unless the `unsafe` flag is enabled.\n"
                            f"module.{tensor_name}.dtype: {Y.dtype}\nreturned dtype: {Z.dtype}"
                        )
                    if Z.shape != Y.shape:
                        raise ValueError(
                            "The tensor returned by parametrization.right_inverse must have the same shape as "
                            f"module.{tensor_name}, unless the `unsafe` flag is enabled.\n"
                            f"module.{tensor_name}.shape: {Y.shape}\nreturned shape: {Z.shape}"
                        )
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe = plist.unsafe or unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        if original is None:
            raise ValueError(
                f"register_parametrization: module.{tensor_name} is None (a declared but absent parameter or buffer, "
                "like bias=False); there is no tensor to parametrize."
            )
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            module.parametrizations = ModuleDict()
        _set_class(module, [*module.parametrizations.keys(), tensor_name])
        module.parametrizations[tensor_name] = plist
    else:
        raise ValueError(
            f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with name "
            f"'{tensor_name}'"
        )
    return module


def is_parametrized(module: Module, tensor_name: Optional[str] = None) -> bool:
    """Whether ``module`` has a parametrization on ``tensor_name`` (``None``: on any tensor).

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.utils import parametrize, parametrizations
        >>> layer = parametrizations.weight_norm(fg.nn.Linear(2, 2))
        >>> parametrize.is_parametrized(layer), parametrize.is_parametrized(layer, "bias")
        (True, False)
    """
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Undo :func:`register_parametrization` on ``tensor_name`` (all its parametrizations); returns ``module``.

    ``leave_parametrized=True``: ``module.<tensor_name>`` becomes a plain parameter (or
    buffer) holding the current parametrized value. With one original, that Parameter
    *continues* the original (rebound with the new value: an optimizer built before follows
    it); with several (``original0``...), it is a new Parameter (when the value requires grad;
    add it to your optimizer, as in PyTorch). ``leave_parametrized=False``: the original itself
    is put back (only possible with a single original). The module gets its class back when
    no parametrization is left.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.utils import parametrize, parametrizations
        >>> layer = parametrizations.weight_norm(fg.nn.Linear(2, 2))
        >>> w = layer.weight
        >>> layer = parametrize.remove_parametrizations(layer, "weight")
        >>> type(layer).__name__, list(layer.state_dict()), bool(fg.allclose(layer.weight, w))
        ('Linear', ['bias', 'weight'], True)
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
            if isinstance(original, Parameter):
                original = rebind({original: value._array})[original]
            else:
                original = _wrap(value._array)
    else:
        if not leave_parametrized:
            raise ValueError(
                "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized in terms of a "
                "sequence of tensors."
            )
        value = getattr(module, tensor_name)
        original = _make_parameter(value._array, True) if value.requires_grad else _wrap(value._array)
    if isinstance(original, Parameter):
        untrack(original, plist, "original")
    remaining = [name for name in module.parametrizations.keys() if name != tensor_name]
    _set_class(module, remaining)  # the property goes first: a parameter cannot be registered under it
    del module.parametrizations[tensor_name]
    if not remaining:
        delattr(module, "parametrizations")
    if isinstance(original, Parameter):
        module.register_parameter(tensor_name, original)
    else:
        module.register_buffer(tensor_name, original)
    return module


def type_before_parametrizations(module: Module) -> type:
    """The class ``module`` had before it was parametrized (its class when it is not).

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.utils import parametrize, parametrizations
        >>> parametrize.type_before_parametrizations(parametrizations.weight_norm(fg.nn.Linear(2, 2))).__name__
        'Linear'
    """
    return type(module).__dict__.get("_parametrized_base", type(module))


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: Optional[str] = None) -> Module:
    """Register ``from_module``'s parametrizations (the same parametrization modules) on ``to_module``, and
    give it the same originals (tied: the same Parameters); ``tensor_name`` limits it to one tensor.
    A tensor ``to_module`` lacks is created first. Returns ``to_module``.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.nn.utils import parametrize, parametrizations
        >>> a = parametrizations.weight_norm(fg.nn.Linear(2, 2))
        >>> b = parametrize.transfer_parametrizations_and_params(a, fg.nn.Linear(2, 2))
        >>> b.parametrizations.weight.original0 is a.parametrizations.weight.original0
        True
    """
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations.keys()) if tensor_name is None else [tensor_name]
    for name in names:
        source = from_module.parametrizations[name]
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        if "original" in source._parameters or "original" in source._buffers:
            setattr(target, "original", source.original)
        else:
            i = 0
            while f"original{i}" in source._parameters or f"original{i}" in source._buffers:
                setattr(target, f"original{i}", getattr(source, f"original{i}"))
                i += 1
    return to_module

