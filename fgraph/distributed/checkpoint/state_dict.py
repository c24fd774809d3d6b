"""``get_state_dict`` / ``set_state_dict``: a model's and its optimizers' state keyed by parameter names.

torch.distributed.checkpoint.state_dict's pair. The optimizer's state dict names each
parameter by its fully qualified name in the model (``"0.weight"``), not by its position,
so it survives a change in the order of parameters or groups; and every parameter's state
is *made* (fgraph's optimizers make it at the first step), placed like the parameter
(moments with its sharding, scalars such as ``step`` replicated on its mesh), so a
:func:`fgraph.distributed.checkpoint.load` into it restores every array with the sharding
it should have.

Example:
    >>> import fgraph as fg
    >>> from fgraph.distributed.checkpoint import get_state_dict, set_state_dict
    >>> model = fg.nn.Sequential(fg.nn.Linear(2, 2))
    >>> opt = fg.optim.Adam(model.parameters())
    >>> model_sd, optim_sd = get_state_dict(model, opt)
    >>> list(model_sd), list(optim_sd["state"]), optim_sd["param_groups"][0]["params"]
    (['0.weight', '0.bias'], ['0.weight', '0.bias'], ['0.weight', '0.bias'])
    >>> sorted(optim_sd["state"]["0.weight"])
    ['exp_avg', 'exp_avg_sq', 'step']
    >>> set_state_dict(model, opt, model_state_dict=model_sd, optim_state_dict=optim_sd)
    <All keys matched successfully>
"""
from __future__ import annotations

from typing import Any, Sequence, Union

import jax
from jax.sharding import NamedSharding, PartitionSpec

from fgraph.lazy._array import concrete
from fgraph.nn.parameter import current
from fgraph.tensor import Tensor, _wrap

__all__ = ["get_state_dict", "set_state_dict"]

Optimizers = Union[Any, Sequence[Any]]


def get_state_dict(model: Any, optimizers: Optimizers) -> tuple[dict, dict]:
    """``(model_state_dict, optim_state_dict)``: the optimizer's keyed by parameter names, its state made.

    ``optimizers`` is one optimizer or several over parts of ``model`` (their state dicts are
    merged: one ``state`` by name, their ``param_groups`` one after another). Parameters
    without state yet get the state their first step would make, placed like them; the
    optimizers themselves are not changed.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.distributed.checkpoint import get_state_dict
        >>> model = fg.nn.Linear(2, 1)
        >>> _, optim_sd = get_state_dict(model, fg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
        >>> optim_sd["state"]["bias"], optim_sd["param_groups"][0]["lr"]
        ({'momentum_buffer': None}, 0.1)
    """
    names = _parameter_names(model)
    state: dict = {}
    groups: list = []
    for opt in _as_list(optimizers):
        opt._refresh()
        for group in opt.param_groups:
            params = group["params"]
            fqns = [_name_of(p, names, opt) for p in params]
            fresh = [p for p in params if p not in opt.state]
            made = dict(zip(map(id, fresh), _initial_states(opt, group, fresh))) if fresh else {}
            for p, fqn in zip(params, fqns):
                state[fqn] = dict(opt.state[p]) if p in opt.state else made[id(p)]
            groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": fqns})
    return model.state_dict(), {"state": state, "param_groups": groups}


def set_state_dict(model: Any, optimizers: Optimizers, *, model_state_dict: dict, optim_state_dict: dict) -> Any:
    """Load what :func:`get_state_dict` gave (after a ``load``) into ``model`` and ``optimizers``.

    Returns ``model.load_state_dict``'s ``(missing_keys, unexpected_keys)``. The optimizers'
    groups are matched in order, each parameter by name.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.distributed.checkpoint import get_state_dict, set_state_dict
        >>> a, b = fg.nn.Linear(2, 1), fg.nn.Linear(2, 1)
        >>> sd, osd = get_state_dict(a, fg.optim.SGD(a.parameters(), lr=0.5))
        >>> opt_b = fg.optim.SGD(b.parameters(), lr=0.1)
        >>> _ = set_state_dict(b, opt_b, model_state_dict=sd, optim_state_dict=osd)
        >>> b.weight.tolist() == a.weight.tolist(), opt_b.param_groups[0]["lr"]
        (True, 0.5)
    """
    result = model.load_state_dict(model_state_dict)
    saved_groups = list(optim_state_dict["param_groups"])
    saved_state = optim_state_dict["state"]
    names = _parameter_names(model)
    start = 0
    for opt in _as_list(optimizers):
        opt._refresh()
        count = len(opt.param_groups)
        mine = saved_groups[start:start + count]
        start += count
        if len(mine) != count:
            raise ValueError(f"set_state_dict: optim_state_dict has {len(saved_groups)} parameter groups, fewer than "
                             "the optimizers have; pass the optimizers get_state_dict was given.")
        index: dict = {}  # name -> its number in this optimizer's state dict, in the optimizer's own order
        state: dict = {}
        groups = []
        for saved, group in zip(mine, opt.param_groups):
            own = [_name_of(p, names, opt) for p in group["params"]]
            if sorted(own) != sorted(saved["params"]):
                raise ValueError(f"set_state_dict: a parameter group of {type(opt).__name__} holds {own}, the saved "
                                 f"one {list(saved['params'])}; build the optimizer over the same parameters.")
            for fqn in own:
                index[fqn] = len(index)
                if saved_state.get(fqn):
                    state[index[fqn]] = saved_state[fqn]
            groups.append({**saved, "params": [index[fqn] for fqn in own]})
        opt.load_state_dict({"state": state, "param_groups": groups})
    if start != len(saved_groups):
        raise ValueError(f"set_state_dict: optim_state_dict has {len(saved_groups)} parameter groups, the optimizers "
                         f"{start}.")
    return result


def _as_list(optimizers: Optimizers) -> list:
    return list(optimizers) if isinstance(optimizers, (list, tuple)) else [optimizers]


def _parameter_names(model: Any) -> dict:
    """``{id(parameter): its first fully qualified name}`` (a tied parameter keeps the first, as torch's)."""
    return {id(p): name for name, p in model.named_parameters()}


def _name_of(param: Tensor, names: dict, opt: Any) -> str:
    name = names.get(id(current(param)))
    if name is None:
        raise ValueError(f"{type(opt).__name__} optimizes a tensor of shape {tuple(param.shape)} that is not a "
                         "parameter of the model; get_state_dict/set_state_dict name parameters by their place in "
                         "the model.")
    return name


def _initial_states(opt: Any, group: dict, params: list) -> list[dict]:
    """The state each parameter's first step would make, placed like it (one compiled program for the group)."""
    layouts: list = []  # per parameter: init_state's keys in order, and which are None

    def make(arrays: list) -> list:
        layouts.clear()
        out = []
        for a in arrays:
            state = opt.init_state(_wrap(a), group)
            layouts.append([(k, v is None) for k, v in state.items()])
            out.append({k: v for k, v in state.items() if v is not None})
        return out

    arrays = [concrete(p._array) for p in params]
    shapes = jax.eval_shape(make, arrays)
    shardings = [a.sharding for a in arrays]
    if all(isinstance(s, NamedSharding) for s in shardings):  # moments like the parameter, scalars replicated
        placed = [{k: s if v.shape == a.shape else NamedSharding(s.mesh, PartitionSpec()) for k, v in state.items()}
                  for a, s, state in zip(arrays, shardings, shapes)]
        made = jax.jit(make, out_shardings=placed)(arrays)
    else:  # single-device parameters: the state is made where they are
        made = jax.jit(make)(arrays)
    return [{k: None if empty else _wrap(state[k]) for k, empty in layout} for state, layout in zip(made, layouts)]
