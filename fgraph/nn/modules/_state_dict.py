"""``Module.state_dict`` and ``Module.load_state_dict``, in PyTorch's key order and error wording.

Loading rebinds: each loaded value becomes a new Parameter (or buffer) on every
module slot that held the old one, so tied parameters stay tied (the last key
loaded wins, as with PyTorch's in-place copies).
"""
from __future__ import annotations

from collections import OrderedDict, namedtuple
from typing import TYPE_CHECKING, Any, Mapping, Optional

import jax
import jax.numpy as jnp
import numpy as np

from fgraph.nn.parameter import Parameter, _make_parameter, rebind
from fgraph.tensor import Tensor, _wrap

if TYPE_CHECKING:
    from fgraph.nn.modules.module import Module

__all__ = ["state_dict", "load_state_dict", "save_to_state_dict", "load_from_state_dict", "as_array"]


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the keys it missed and the keys it did not expect."""

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class StateDictMixin:
    """The state-dict half of :class:`~fgraph.nn.Module` (torch's methods, each overridable)."""

    # -- state dict ---------------------------------------------------------------------------------
    def state_dict(self, *, destination: Optional[dict] = None, prefix: str = "",
                   keep_vars: bool = False) -> "OrderedDict[str, Tensor]":
        """Parameters and persistent buffers by dotted name, in PyTorch's order (tied entries under each name).

        Values are detached tensors sharing the arrays (``keep_vars=True``: the
        Parameters themselves). Save it with ``fg.save``.

        Example:
            >>> import fgraph as fg
            >>> list(fg.nn.Linear(2, 3).state_dict())
            ['weight', 'bias']
        """
        return state_dict(self, destination, prefix, keep_vars)

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        """Put this module's own entries (not its children's) in ``destination``; ``state_dict`` calls it
        for each module, so a subclass may override it (rename or transform keys) as in torch."""
        save_to_state_dict(self, destination, prefix, keep_vars)

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        """Load this module's own entries (keys ``prefix + name``) from ``state_dict``, recording problems in
        the three lists; ``load_state_dict`` calls it for each module (overridable, as in torch)."""
        load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                             error_msgs)

    def get_extra_state(self) -> Any:
        """Override (with :meth:`set_extra_state`) to save non-tensor state under ``prefix + "_extra_state"``.

        Example:
            >>> import fgraph as fg
            >>> class Counter(fg.nn.Module):
            ...     def __init__(self):
            ...         super().__init__(); self.steps = 0
            ...     def get_extra_state(self):
            ...         return {"steps": self.steps}
            ...     def set_extra_state(self, state):
            ...         self.steps = state["steps"]
            >>> a, b = Counter(), Counter(); a.steps = 7
            >>> list(a.state_dict()), b.load_state_dict(a.state_dict()), b.steps
            (['_extra_state'], <All keys matched successfully>, 7)
        """
        raise RuntimeError(
            "Module.get_extra_state() was called but not overridden: define get_extra_state and "
            "set_extra_state together in your Module subclass."
        )

    def set_extra_state(self, state: Any) -> None:
        """Override (with :meth:`get_extra_state`) to restore the ``_extra_state`` entry on ``load_state_dict``."""
        raise RuntimeError(
            "Module.set_extra_state() was called but not overridden: define get_extra_state and "
            "set_extra_state together in your Module subclass."
        )

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Rebind parameters and buffers to the values in ``state_dict``; return ``(missing_keys, unexpected_keys)``.

        Values may be fgraph Tensors, ``jax.Array``s, NumPy arrays or PyTorch tensors;
        they are cast to each parameter's dtype (``assign=True`` keeps theirs). A shape
        mismatch always raises; with ``strict=True`` (default) missing or unexpected
        keys raise too, each named in the message.

        Example:
            >>> import fgraph as fg
            >>> a, b = fg.nn.Linear(2, 2), fg.nn.Linear(2, 2)
            >>> b.load_state_dict(a.state_dict())
            <All keys matched successfully>
            >>> b.weight.tolist() == a.weight.tolist()
            True
        """
        return load_state_dict(self, state_dict, strict, assign)


_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


def state_dict(module: "Module", destination: Optional[dict], prefix: str, keep_vars: bool) -> "OrderedDict":
    """torch's ``Module.state_dict``: pre-hooks, ``module._save_to_state_dict``, the children, post-hooks."""
    if destination is None:
        destination = OrderedDict()
        destination._metadata = OrderedDict()  # type: ignore[attr-defined]
    local_metadata = dict(version=getattr(module, "_version", 1))
    if hasattr(destination, "_metadata"):
        destination._metadata[prefix[:-1]] = local_metadata
    for hook in module._state_dict_pre_hooks.values():
        hook(module, prefix, keep_vars)
    module._save_to_state_dict(destination, prefix, keep_vars)
    for name, child in module._modules.items():
        if child is not None:
            child.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
    for hook in module._state_dict_hooks.values():
        result = hook(module, destination, prefix, local_metadata)
        if getattr(hook, "_from_public_api", False):
            if result is not None:
                raise RuntimeError(
                    "state_dict post-hook must return None (a hook registered with register_state_dict_post_hook "
                    "edits state_dict in place; to return a new dict use the private _register_state_dict_hook)"
                )
        elif result is not None:
            destination = result
    return destination


def _overrides(module: "Module", name: str) -> bool:
    return getattr(type(module), name, None) is not getattr(StateDictMixin, name)


def save_to_state_dict(module: "Module", destination: dict, prefix: str, keep_vars: bool) -> None:
    """torch's ``Module._save_to_state_dict``: this module's parameters, persistent buffers and extra state."""
    for name, p in module._parameters.items():
        if p is not None:
            destination[prefix + name] = p if keep_vars else p.detach()
    for name, b in module._buffers.items():
        if b is not None and name not in module._non_persistent_buffers_set:
            destination[prefix + name] = b if keep_vars else b.detach()
    if _overrides(module, "get_extra_state"):
        destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = module.get_extra_state()


def load_state_dict(module: "Module", state: Mapping[str, Any], strict: bool, assign: bool) -> Any:
    if not isinstance(state, Mapping):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(state).__name__}.")
    missing: list = []
    unexpected: list = []
    errors: list = []
    metadata = getattr(state, "_metadata", None)
    state = OrderedDict(state)
    if metadata is not None:
        state._metadata = metadata  # type: ignore[attr-defined]

    def load(mod: "Module", local_state: dict, prefix: str = "") -> None:
        local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
        if assign:
            local_metadata["assign_to_params_buffers"] = assign
        mod._load_from_state_dict(local_state, prefix, local_metadata, True, missing, unexpected, errors)
        for name, child in mod._modules.items():
            if child is not None:
                child_prefix = prefix + name + "."
                load(child, {k: v for k, v in local_state.items() if k.startswith(child_prefix)}, child_prefix)
        if mod._load_state_dict_post_hooks:
            keys = _IncompatibleKeys(missing, unexpected)
            for hook in mod._load_state_dict_post_hooks.values():
                if hook(mod, keys) is not None:
                    raise RuntimeError(
                        "load_state_dict post-hooks should modify incompatible_keys in place and return None.")

    load(module, state)
    if strict:
        if unexpected:
            errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected)))
        if missing:
            errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
    if errors:
        raise RuntimeError(
            "Error(s) in loading state_dict for {}:\n\t{}".format(type(module).__name__, "\n\t".join(errors))
            + "\n(strict=False ignores missing and unexpected keys; shapes must always match.)"
        )
    return _IncompatibleKeys(missing, unexpected)


def load_from_state_dict(module: "Module", state: Mapping[str, Any], prefix: str, local_metadata: dict,
                         strict: bool, missing: list, unexpected: list, errors: list) -> None:
    """torch's ``Module._load_from_state_dict``: pre-hooks, then this module's own entries (rebound)."""
    from fgraph.nn.modules._hooks import _WrappedHook

    for hook in module._load_state_dict_pre_hooks.values():
        args = (state, prefix, local_metadata, strict, missing, unexpected, errors)
        if isinstance(hook, _WrappedHook):
            hook.call_for(module, *args)
        else:
            hook(*args)
    assign = bool(local_metadata.get("assign_to_params_buffers", False))
    local = {n: p for n, p in module._parameters.items() if p is not None}
    local.update((n, b) for n, b in module._buffers.items()
                 if b is not None and n not in module._non_persistent_buffers_set)
    for name, old in local.items():
        key = prefix + name
        if key not in state:
            if strict:
                missing.append(key)
            continue
        try:
            array = as_array(state[key], None if assign else old.dtype, key)
        except TypeError as exc:
            errors.append(str(exc))
            continue
        if array.shape != old.shape:
            errors.append(
                f"size mismatch for {key}: copying a param with shape {tuple(array.shape)} from checkpoint, "
                f"the shape in current model is {tuple(old.shape)}."
            )
            continue
        array = _on_device_of(array, old._array)
        if name in module._parameters:
            new = _make_parameter(array, old.requires_grad)
            if isinstance(old, Parameter):
                rebind({old: new})
            else:
                module._parameters[name] = new
        else:
            module._buffers[name] = _wrap(array)
    extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
    if _overrides(module, "set_extra_state"):
        if extra_key in state:
            module.set_extra_state(state[extra_key])
        elif strict:
            missing.append(extra_key)
    elif strict and extra_key in state:
        unexpected.append(extra_key)
    if strict:
        for key in state:
            if key.startswith(prefix) and key != extra_key:
                head, dot, _ = key[len(prefix):].partition(".")
                if (dot and head not in module._modules) or (not dot and head not in local):
                    unexpected.append(key)


def as_array(value: Any, dtype: Any, key: str) -> jax.Array:
    """A checkpoint entry (fgraph Tensor, jax.Array, NumPy array, PyTorch tensor) as a ``jax.Array``."""
    if isinstance(value, Tensor):
        array = value._array
    elif isinstance(value, (jax.Array, np.ndarray, np.generic)):
        array = value
    elif type(value).__module__.split(".")[0] == "torch" and hasattr(value, "detach"):
        host = value.detach().cpu()
        if str(host.dtype) == "torch.bfloat16":  # NumPy has no bfloat16: go through float32 (exact)
            array = host.float().numpy().astype(jnp.bfloat16)
        else:
            array = host.numpy()
    else:
        raise TypeError(
            f'While copying the parameter named "{key}", expected an fgraph Tensor, jax.Array, NumPy array or '
            f"torch.Tensor from the checkpoint but received {type(value).__name__}."
        )
    if dtype is None:
        return jnp.array(array)  # a copy: later changes to a NumPy/torch source cannot reach the model
    return jnp.array(array, dtype=dtype)


def _on_device_of(array: jax.Array, like: Any) -> jax.Array:
    devices = getattr(like, "devices", None)
    if devices is None or isinstance(like, jax.core.Tracer):
        return array
    target = like.sharding
    if array.sharding == target and (array.committed or not like.committed):
        return array
    # Placed as the tensor it replaces, committed included: a buffer loaded uncommitted became committed at its
    # first update, and every jax.jit it fed (a deferred step's program) compiled a second time.
    return jax.device_put(array, target)
