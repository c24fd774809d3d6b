"""``Optimizer``: PyTorch's optimizer interface over returned gradients and immutable parameters.

``opt.step(grads)`` takes the gradients ``backward`` returned (a :class:`fgraph.Gradients`,
a mapping ``{param: grad}``, or a sequence aligned with the optimizer's parameters),
computes every parameter group's update in **one jitted kernel** over all its
parameters (PyTorch's ``foreach``/fused idea), and *rebinds* the new parameters on
the modules that hold the old ones (tied parameters stay tied; the old records are
unchanged). Parameters rebound elsewhere after the optimizer was built
(``model.load_state_dict``, ``model.to``, ``nn.init``) are followed to the current ones. Parameters without a gradient are left alone and their state does not
advance, as PyTorch skips ``grad=None``.

A subclass declares its update as a pure function of arrays (the public interface for writing
an optimizer; ``docs/optim.md`` has a complete example):

* ``hyperparameters``: the option names passed to ``update`` as traced scalars (``lr``,
  ``betas``...), so a scheduler changing ``lr`` does not recompile anything;
* ``static_options(group)``: a hashable tuple of the options that change the update's
  *structure* (``nesterov``, ``amsgrad``, ``weight_decay != 0``...), static in the kernel:
  each distinct tuple compiles its own kernel;
* ``init_state(param, group)``: the new state of a parameter (arrays, or ``None``);
* ``update(static, hyper, params, grads, states)`` (a ``staticmethod``): new params and new states.

``param_groups`` are plain dicts (a scheduler writes ``group["lr"]``); ``state`` maps each
current parameter to a dict of Tensors; ``state_dict()`` / ``load_state_dict()`` use
PyTorch's layout (parameters by index), so ``fg.save(opt.state_dict(), path)`` works
and a PyTorch optimizer's state dict loads.

Example:
    >>> import fgraph as fg
    >>> model = fg.nn.Linear(2, 1)
    >>> opt = fg.optim.SGD(model.parameters(), lr=0.1)
    >>> old = model.weight
    >>> grads = model(fg.ones(4, 2)).sum().backward()
    >>> opt.step(grads)
    >>> model.weight is old, [round(v, 4) for v in (old - model.weight)[0].tolist()]  # old record unchanged
    (False, [0.4, 0.4])
"""
from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Callable, Iterable, Optional, Union

import jax
import jax.numpy as jnp

from fgraph._kernel_jit import kernel_jit, placed
from fgraph._numbers import on_device
from fgraph.autograd._leaf_sharding import like_input
from fgraph.autograd.grad_mode import enable_grad
from fgraph.autograd.gradients import Gradients
from fgraph.lazy._state import LAZY
from fgraph.nn.modules._state_dict import as_array
from fgraph.nn.parameter import Parameter, as_parameter, current, rebind, succeed
from fgraph.optim._donation import TEMPORARY_ARGUMENT, distinct_arrays, plan_donation, run_update, seen
from fgraph.optim._host_constants import host_values
from fgraph.optim._state_placement import place_like_param
from fgraph.tensor import Tensor, _wrap

__all__ = ["Optimizer", "required"]


class _Required:
    """Marks a constructor argument that has no default (``torch.optim.optimizer.required``)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()

ParamsT = Union[Iterable[Tensor], Iterable[dict]]


class Optimizer:
    """Base class of fgraph's optimizers (see the module docstring)."""

    #: Group options passed to :meth:`update` as traced scalars (``hyper``): changing one never recompiles.
    hyperparameters: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _check_subclass_interface(cls)

    def __init__(self, params: ParamsT, defaults: dict) -> None:
        self.defaults = dict(defaults)
        self.state: dict = {}
        self.param_groups: list[dict] = []
        if isinstance(params, Tensor):
            raise TypeError(
                f"{type(self).__name__}: params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got a Tensor; pass [tensor] or model.parameters()."
            )
        groups = list(params)
        if not groups:
            raise ValueError(f"{type(self).__name__} got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)
        self._kernels: dict = {}

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {key}: {group[key]}" for key in sorted(group) if key != "params")
        lines.append(")")
        return "\n".join(lines)

    # -- groups ------------------------------------------------------------------------------------
    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters with its own options (the defaults fill the rest)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs; use a list instead.")
        params = list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor (use a Parameter, or .detach().requires_grad_())")
        group = dict(param_group, params=params)
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            group.setdefault(name, default)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if len({id(p) for p in params}) != len(params) or seen & {id(p) for p in params}:
            raise ValueError("some parameters appear in more than one parameter group (or twice in one)")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Not needed in fgraph: gradients are returned by ``backward``, never stored on parameters."""
        raise RuntimeError(
            f"{type(self).__name__}.zero_grad: fgraph has no .grad to zero. Gradients are returned, not "
            "accumulated: grads = loss.backward() gives fresh gradients every step; pass them on with "
            "opt.step(grads), and add the passes you want summed (grads = g1 + g2, as micro-batches need). "
            "Delete the zero_grad() call."
        )

    # -- the step ----------------------------------------------------------------------------------
    def step(self, grads: Any = None, closure: Optional[Callable[[], Any]] = None) -> Any:
        """Update every parameter that has a gradient in ``grads``; return the closure's loss, if any.

        ``grads``: what ``loss.backward()`` returns (a ``Gradients``), any mapping
        ``{param: grad}``, or a sequence with one gradient (or ``None``) per parameter
        in the optimizer's order (what ``fg.grad(loss, list(opt.parameters()))`` gives).
        ``closure``: a function that recomputes the loss and returns it (the optimizer
        differentiates it) or returns ``(loss, grads)``.

        The update writes into the buffers of the states and gradients that nothing else can reach any
        more (gradients passed as a temporary, as in ``opt.step(loss.backward())``), as PyTorch updates
        in place; a record someone still holds stays readable (see ``fgraph.optim._donation``).
        """
        # Counted first, before this frame refers to grads again: a temporary dies with the call.
        temporary = TEMPORARY_ARGUMENT is not None and seen(grads) == TEMPORARY_ARGUMENT
        self._refresh()
        loss = None
        if closure is not None:
            loss, closure_grads = self._evaluate(closure)
            grads = closure_grads if grads is None else grads
        if grads is None:
            raise TypeError(
                f"{type(self).__name__}.step() needs the gradients: fgraph returns them instead of storing "
                ".grad, so write grads = loss.backward(); opt.step(grads) (or opt.step(closure=fn))."
            )
        lookup = self._gradient_lookup(grads)
        # References a temporary container holds to each of its gradients: a value of a dict or Gradients;
        # an item of a list or tuple, and of the lookup's table.
        holders = _CONTAINER_HOLDERS.get(type(grads)) if temporary else None
        for group in self.param_groups:
            self._step_group(group, lookup, holders)
        return loss

    def parameters(self) -> list[Tensor]:
        """The current parameters of every group, in order (they change object at every step)."""
        self._refresh()
        return [p for group in self.param_groups for p in group["params"]]

    def _refresh(self) -> None:
        """Follow parameters rebound elsewhere since the last step (``model.load_state_dict``, ``to()``,
        ``nn.init``...) to the Parameters the modules hold now; their state goes with them."""
        for group in self.param_groups:
            params = group["params"]
            for i, p in enumerate(params):
                now = current(p)
                if now is not p:
                    params[i] = now
                    if p in self.state:
                        self.state[now] = self.state.pop(p)

    def _evaluate(self, closure: Callable[[], Any]) -> tuple[Any, Any]:
        with enable_grad():
            result = closure()
        if isinstance(result, tuple) and len(result) == 2:
            return result
        if not isinstance(result, Tensor):
            raise TypeError(f"{type(self).__name__}: the closure must return the loss Tensor (or (loss, grads)), "
                            f"got {type(result).__name__}.")
        from fgraph.autograd.engine import grad

        params = [p for p in self.parameters() if p.requires_grad]
        return result, dict(zip(params, grad(result, params, allow_unused=True)))

    def _gradient_lookup(self, grads: Any) -> Callable[[Tensor], Optional[Tensor]]:
        if isinstance(grads, Mapping):
            def lookup(p: Tensor) -> Optional[Tensor]:
                return grads[p] if p in grads else None
            return lookup
        if isinstance(grads, (list, tuple)):
            params = self.parameters()
            if len(grads) != len(params):
                raise ValueError(
                    f"{type(self).__name__}.step: got {len(grads)} gradients for {len(params)} parameters; pass a "
                    "sequence aligned with the optimizer's parameters, or the Gradients that backward returned."
                )
            by_id = {id(p): g for p, g in zip(params, grads)}
            return lambda p: by_id.get(id(p))
        raise TypeError(
            f"{type(self).__name__}.step: grads must be the Gradients returned by backward, a mapping "
            f"{{param: grad}} or a sequence of gradients, got {type(grads).__name__}."
        )

    def _step_group(self, group: dict, lookup: Callable[[Tensor], Optional[Tensor]],
                    grad_holders: Optional[int] = None) -> None:
        """One group's update; ``grad_holders``: see ``plan_donation`` (``None``: donate no gradient)."""
        active = self._active(group, lookup)
        if not active:
            return
        static = self.static_options(group)
        kernel = self._kernels.get(static)
        if kernel is None:  # argument 4: the arrays donated to the update (their buffers take its results)
            kernel = self._kernels[static] = kernel_jit(functools.partial(run_update, type(self).update, static),
                                                        donate_argnums=(4,))
        lazy = LAZY.get()
        # Device arrays kept per number, recorded or not: a deferred step that runs eagerly (paying its rent) then
        # calls the kernel as its recorded replay does, and jit compiles it once.
        hyper = self._hyper_on_device(group, self._hyper_values(group))
        states = [_arrays(self.state[p]) if p in self.state else self._first_state(p, group) for _, p, _ in active]
        donated = plan_donation(active, states, self.state, grad_holders) if lazy is None or not lazy.abstract else {}
        grad_arrays = [None if (n, "") in donated else g._array if g.dtype == p.dtype else g._array.astype(p.dtype)
                       for n, (_, p, g) in enumerate(active)]
        args = (hyper, [p._array for _, p, _ in active], grad_arrays, states, donated)
        del donated  # the arguments hold it: its buffers are gone once the kernel runs
        if lazy is None:
            results, new_params, new_states = placed(kernel)(*args)
        else:  # recorded: the trace's program takes the donated arrays as donated inputs
            results, new_params, new_states = lazy.call_tree(kernel, args, tuple(args[4].values()))
        for (n, key), array in results.items():
            if key:
                new_states[n][key] = array
            else:
                new_params[n] = array
        replaced = self._rebind_group(group, {i: data for (i, _, _), data in zip(active, new_params)})
        for (_, p, _), state, old_state in zip(active, new_states, states):
            self.state.pop(p, None)
            if state:  # keys in the state's own order (jit returns dicts sorted)
                order = old_state if state.keys() == old_state.keys() else (
                    list(old_state) + [k for k in state if k not in old_state])
                self.state[replaced[p]] = {k: None if state[k] is None else _wrap(state[k]) for k in order}

    def _active(self, group: dict, lookup: Callable[[Tensor], Optional[Tensor]]) -> list:
        """``(index, param, grad)`` of the group's parameters that have a gradient (a method of its own: no
        variable of the step's frame keeps a gradient, which would count as a holder in ``plan_donation``)."""
        active = []
        for i, p in enumerate(group["params"]):
            g = lookup(p)
            if g is None:
                continue
            g = like_input(g, p)  # gradients computed elsewhere (fg.func, a sum of passes): the parameter's sharding
            if g.shape != p.shape:
                raise ValueError(
                    f"{type(self).__name__}.step: the gradient of parameter {i} of its group has shape {g.shape}, "
                    f"the parameter {p.shape}; pass the gradients backward returned for these parameters."
                )
            active.append((i, p, g))
        return active

    def _hyper_values(self, group: dict) -> dict:
        """The group's traced options; ``fgraph.compile`` substitutes traced values while it traces a step."""
        traced = self.__dict__.get("_traced_hyper")
        if traced is not None and id(group) in traced:
            return traced[id(group)]
        return {name: group[name] for name in self.hyperparameters}

    def _hyper_on_device(self, group: dict, hyper: dict) -> dict:
        """The group's numbers as device arrays kept while the group holds the same number objects: the
        step's kernel would otherwise copy each from the host on every step (see ``fgraph._numbers``)."""
        arrays = self.__dict__.setdefault("_hyper_arrays", {})  # (id(group), name) -> on_device's entry
        out = {}
        for name, value in hyper.items():
            key = (id(group), name)
            out[name], entry = on_device(value, arrays.get(key))
            if entry is not None:
                arrays[key] = entry
        return out

    @staticmethod
    def _rebind_group(group: dict, new_data: Mapping[int, Any]) -> dict:
        """Put a new parameter holding ``new_data[i]`` at ``group["params"][i]`` and rebind it on every module
        that holds the old one; returns ``{old: new}``."""
        params = group["params"]
        replaced = {}
        for i, data in new_data.items():
            p = params[i]
            if isinstance(p, Parameter) and isinstance(data, jax.Array):  # the step's own kernel output
                new = succeed(p, data)
            elif isinstance(p, Parameter):
                new = rebind({p: as_parameter(data, p)})[p]
            else:
                new = Tensor(data, requires_grad=p.requires_grad)
            replaced[p] = params[i] = new
        return replaced

    def _prime_state(self) -> list:
        """Give every trainable parameter without state its first state now; returns the parameters primed.

        ``fgraph.compile`` calls it before it traces a step, so the first call is traced with the state
        every later call has (one trace, not two). Parameters that then get no gradient lose it again
        (:meth:`_unprime`): torch keeps no state for them. Not for an optimizer with its own ``step``
        (LBFGS) or whose first state has a buffer made at the first step (``None``: SGD's momentum).
        """
        if type(self).step is not Optimizer.step:
            return []
        self._refresh()  # the parameters as they are now (placement and earlier steps rebind them)
        primed = []
        for group in self.param_groups:
            for p in group["params"]:
                if not p.requires_grad or p in self.state or isinstance(p._array, jax.core.Tracer):
                    continue
                state = host_values(functools.partial(self.init_state, p, group))  # no compile per shape
                if state is None:
                    state = self.init_state(p, group)
                if not state or any(v is None for v in state.values()):
                    continue
                self.state[p] = {k: _wrap(place_like_param(v, p._array)) for k, v in state.items()}
                primed.append(p)
        return primed

    def _unprime(self, primed: list) -> None:
        """Drop the primed state of parameters the step did not update (a stepped one has moved on to its
        successor's key)."""
        for p in primed:
            self.state.pop(p, None)

    def _first_state(self, param: Tensor, group: dict) -> dict:
        # Placed like the parameter (committed, as later steps' states are), so the first step's kernel is reused:
        # buffers shaped like it take its sharding, scalars (``step``) are replicated on its devices.
        state = self.init_state(param, group)
        data = param._array
        if isinstance(data, jax.core.Tracer) or not data.committed:  # nothing to match
            return distinct_arrays(state)
        return distinct_arrays({k: None if v is None else place_like_param(v, data) for k, v in state.items()})

    # -- what subclasses define -----------------------------------------------------------------------
    def static_options(self, group: dict) -> tuple:
        """The group options that change the structure of the update, as a hashable tuple: ``update``
        gets it as ``static`` (plain Python values, so ``if static[0]:`` works) and each distinct tuple
        compiles its own kernel. Numbers that only scale the update belong in :attr:`hyperparameters`.

        Example:
            >>> import fgraph as fg
            >>> opt = fg.optim.SGD(fg.nn.Linear(2, 1).parameters(), lr=0.1, momentum=0.9)
            >>> opt.static_options(opt.param_groups[0])  # momentum, weight decay, nesterov, maximize
            (True, False, False, False)
        """
        return ()

    def init_state(self, param: Tensor, group: dict) -> dict:
        """A parameter's state before its first update: ``{name: jax.Array}`` (``None`` for a buffer made
        at the first step; ``{}``: no state kept). The names are the state dict's keys.

        Example:
            >>> import fgraph as fg
            >>> opt = fg.optim.Adam(fg.nn.Linear(2, 1).parameters())
            >>> sorted(opt.init_state(opt.param_groups[0]["params"][0], opt.param_groups[0]))
            ['exp_avg', 'exp_avg_sq', 'step']
        """
        return {}

    @staticmethod
    def update(static: tuple, hyper: dict, params: list, grads: list, states: list) -> tuple[list, list]:
        """The update of one parameter group, a pure function of arrays traced into one jitted kernel.

        ``static``: what :meth:`static_options` returned; ``hyper``: ``{name: traced scalar}`` for each
        name in :attr:`hyperparameters` (a tuple option, like ``betas``, comes as a tuple); ``params``,
        ``grads`` (cast to each parameter's dtype), ``states``: aligned lists of the parameters that have
        a gradient. Returns ``(new_params, new_states)``, lists aligned with ``params``. No host round
        trips inside (``float()``, ``.item()``, Python ``if`` on values): use ``jnp.where``.
        """
        raise NotImplementedError(
            "an Optimizer subclass must define update(static, hyper, params, grads, states) as a staticmethod "
            "(see docs/optim.md, 'Writing an optimizer')"
        )

    # -- state dict ---------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """``{"state": {index: {name: Tensor}}, "param_groups": [{options..., "params": [index...]}]}``.

        PyTorch's layout: parameters are numbered across groups in order.

        Example:
            >>> import fgraph as fg
            >>> opt = fg.optim.Adam(fg.nn.Linear(2, 1).parameters())
            >>> sd = opt.state_dict()
            >>> sd["param_groups"][0]["params"], sd["state"]
            ([0, 1], {})
        """
        self._refresh()
        index: dict = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                packed["params"].append(index[id(p)])
            groups.append(packed)
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in index}
        return {"state": dict(sorted(state.items())), "param_groups": groups}

    def load_state_dict(self, state_dict: Mapping) -> None:
        """Load a state from :meth:`state_dict` (fgraph's, or PyTorch's: values may be torch tensors).

        Groups must match in number and sizes; options come from the saved groups. Floating state
        takes the dtype :meth:`init_state` makes it in (``step`` and scalars such as NAdam's
        ``mu_product`` float32, buffers the parameter's dtype), so a resumed run continues the
        uninterrupted one exactly and reuses its kernel; an entry ``init_state`` does not make is
        cast to the parameter's dtype (``step`` keeps its own), as PyTorch does. State goes where its
        parameter is, as PyTorch moves it to the parameter's device: a buffer shaped like a sharded
        parameter takes its sharding, a scalar is replicated on its devices.
        """
        self._refresh()
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"loaded state dict has {len(saved_groups)} parameter groups, the optimizer has "
                             f"{len(self.param_groups)}")
        for saved, group in zip(saved_groups, self.param_groups):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                                 f"optimizer's group ({len(saved['params'])} against {len(group['params'])})")
        saved_state = state_dict["state"]
        self.state = {}
        for saved, group in zip(saved_groups, self.param_groups):
            group.update({k: _group_value(v) for k, v in saved.items() if k != "params"})
            dtypes: dict = {}  # (shape, dtype) of a parameter -> its state's dtypes
            for index, p in zip(saved["params"], group["params"]):
                entry = saved_state.get(index, saved_state.get(str(index)))
                if entry is not None:
                    kind = (tuple(p.shape), p.dtype)
                    made = dtypes[kind] if kind in dtypes else dtypes.setdefault(kind, self._state_dtypes(p, group))
                    self.state[p] = {k: _state_value(k, v, p, made.get(k)) for k, v in entry.items()}

    def _state_dtypes(self, param: Tensor, group: dict) -> dict:
        """``{name: dtype}`` of the state :meth:`init_state` makes for ``param`` (traced, nothing allocated)."""
        shapes = jax.eval_shape(functools.partial(self.init_state, param, group))
        return {k: v.dtype for k, v in shapes.items() if v is not None}


_RENAMED = {"_hyper": "hyperparameters", "_flags": "static_options", "_init_state": "init_state",
            "_update": "update"}


def _check_subclass_interface(cls: type) -> None:
    """An optimizer written against the old private names, or with ``update`` as a plain method, fails
    when it is defined, with the fix, not at its first step."""
    old = [name for name in _RENAMED if name in cls.__dict__]
    if old:
        fixes = ", ".join(f"{name} -> {_RENAMED[name]}" for name in old)
        raise TypeError(f"{cls.__name__}: Optimizer subclasses now define public names; rename {fixes} "
                        "(see docs/optim.md, 'Writing an optimizer').")
    update = cls.__dict__.get("update")
    if update is not None and not isinstance(update, staticmethod):
        raise TypeError(f"{cls.__name__}.update must be a @staticmethod update(static, hyper, params, grads, "
                        "states): it is traced into one jitted kernel per group and sees no self; read "
                        "options through hyperparameters (traced) or static_options(group) (static).")
    if isinstance(cls.__dict__.get("hyperparameters"), str):
        raise TypeError(f"{cls.__name__}.hyperparameters must be a tuple of option names, got the string "
                        f"{cls.__dict__['hyperparameters']!r}; write ({cls.__dict__['hyperparameters']!r},).")


_CONTAINER_HOLDERS = {Gradients: 1, dict: 1, list: 2, tuple: 2}


def _arrays(state: dict) -> dict:
    return {k: None if v is None else v._array for k, v in state.items()}


def _state_value(name: str, value: Any, param: Tensor, made: Any = None) -> Any:
    if value is None or isinstance(value, (int, float, bool, str)):
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(_state_value(name, v, param) for v in value)
    array = as_array(value, None, name)
    if jnp.issubdtype(array.dtype, jnp.floating):
        if made is not None and jnp.issubdtype(made, jnp.floating):
            array = array.astype(made)
        elif name != "step":
            array = array.astype(param.dtype)
    return _wrap(place_like_param(array, param._array))  # as torch moves state to its parameter's device


def _group_value(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def apply_weight_decay(p: Any, g: Any, lr: Any, weight_decay: Any, decoupled: bool) -> tuple[Any, Any]:
    """``(p, g)`` after weight decay, inside an :meth:`Optimizer.update`: decoupled (AdamW's) scales the
    parameter by ``1 - lr * weight_decay``; otherwise (L2) ``weight_decay * p`` joins the gradient.

    Example:
        >>> from fgraph.optim.optimizer import apply_weight_decay
        >>> apply_weight_decay(2.0, 1.0, 0.1, 0.5, decoupled=True), apply_weight_decay(2.0, 1.0, 0.1, 0.5, False)
        ((1.9, 1.0), (2.0, 2.0))
    """
    if decoupled:
        return p * (1 - lr * weight_decay), g
    return p, g + weight_decay * p


def check_hyper(value: Any, name: str, cls: str, *, allow_zero: bool = True, below_one: bool = False,
                at_most_one: bool = False) -> None:
    """``value`` must be a number >= 0 (> 0 without ``allow_zero``; < 1 with ``below_one``; <= 1 with
    ``at_most_one``), not NaN."""
    if isinstance(value, Tensor):
        raise TypeError(f"{cls}: {name} as a Tensor is not supported; pass a Python float.")
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
    ok = ok and (value >= 0 if allow_zero else value > 0) and (not below_one or value < 1)
    ok = ok and (not at_most_one or value <= 1)
    if not ok:
        bound = "in [0, 1)" if below_one else "in [0, 1]" if at_most_one else ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{cls}: invalid {name} value: {value!r} (expected a number {bound}).")

