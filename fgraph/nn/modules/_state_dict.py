"""``Module.state_dict`` and ``Module.load_state_dict``, in PyTorch's key order and error wording.

Loading rebinds: each loaded value becomes a new Parameter (or buffer) on every
module slot that held the old one, so tied parameters stay tied (the last key
loaded wins, as with PyTorch's in-place copies).
"""
from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Mapping, Optional

import jax
import jax.numpy as jnp
import numpy as np

from fgraph.nn.parameter import Parameter, _make_parameter, rebind
from fgraph.tensor import Tensor, _wrap

if TYPE_CHECKING:
    from fgraph.nn.modules.module import Module

__all__ = ["state_dict", "load_state_dict", "as_array"]


def state_dict(module: "Module", destination: Optional[dict], prefix: str, keep_vars: bool) -> "OrderedDict":
    if destination is None:
        destination = OrderedDict()
    for hook in module._state_dict_pre_hooks.values():
        hook(module, prefix, keep_vars)
    for name, p in module._parameters.items():
        if p is not None:
            destination[prefix + name] = p if keep_vars else p.detach()
    for name, b in module._buffers.items():
        if b is not None and name not in module._non_persistent_buffers_set:
            destination[prefix + name] = b if keep_vars else b.detach()
    for name, child in module._modules.items():
        if child is not None:
            child.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
    for hook in module._state_dict_hooks.values():
        result = hook(module, destination, prefix, {})
        if result is not None:
            destination = result
    return destination


def load_state_dict(module: "Module", state: Mapping[str, Any], strict: bool, assign: bool) -> Any:
    from fgraph.nn.modules.module import _IncompatibleKeys

    if not isinstance(state, Mapping):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(state).__name__}.")
    missing: list = []
    unexpected: list = []
    errors: list = []
    _load(module, dict(state), "", assign, missing, unexpected, errors)
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


def _load(module: "Module", state: dict, prefix: str, assign: bool, missing: list, unexpected: list,
          errors: list) -> None:
    from fgraph.nn.modules.module import _IncompatibleKeys

    for hook in module._load_state_dict_pre_hooks.values():
        hook(module, state, prefix, {}, True, missing, unexpected, errors)
    local = {n: p for n, p in module._parameters.items() if p is not None}
    local.update((n, b) for n, b in module._buffers.items()
                 if b is not None and n not in module._non_persistent_buffers_set)
    for name, old in local.items():
        key = prefix + name
        if key not in state:
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
        array = _on_device_of(array, old.array)
        if name in module._parameters:
            new = _make_parameter(array, old.requires_grad)
            if isinstance(old, Parameter):
                rebind({old: new})
            else:
                module._parameters[name] = new
        else:
            module._buffers[name] = _wrap(array)
    for key in state:
        if key.startswith(prefix):
            head, dot, _ = key[len(prefix):].partition(".")
            if (dot and head not in module._modules) or (not dot and head not in local):
                unexpected.append(key)
    for name, child in module._modules.items():
        if child is not None:
            child_prefix = prefix + name + "."
            child_state = {k: v for k, v in state.items() if k.startswith(child_prefix)}
            _load(child, child_state, child_prefix, assign, missing, unexpected, errors)
    if module._load_state_dict_post_hooks:
        keys = _IncompatibleKeys(missing, unexpected)
        for hook in module._load_state_dict_post_hooks.values():
            if hook(module, keys) is not None:
                raise RuntimeError("load_state_dict post-hooks should modify incompatible_keys in place and return None.")


def as_array(value: Any, dtype: Any, key: str) -> jax.Array:
    """A checkpoint entry (fgraph Tensor, jax.Array, NumPy array, PyTorch tensor) as a ``jax.Array``."""
    if isinstance(value, Tensor):
        array = value.array
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
    return array if array.sharding == target else jax.device_put(array, target)
