"""Layer checks: an fgraph Module against PyTorch (where installed) and against a pure-JAX reference.

A :class:`LayerCase` describes one layer configuration. Two checks drive it, in
float64, in train and in eval mode:

* :func:`check_against_torch` builds the torch twin, loads *its* ``state_dict``
  into the fgraph module (so names, shapes and key order must be torch's),
  runs both on the same inputs and compares outputs, every gradient (inputs and
  parameters, for one random cotangent per output) and the buffers afterwards;
* :func:`check_against_reference` runs a pure-JAX function of the module's
  state and inputs: outputs compared, gradients from ``jax.vjp`` of it.

Family test files list cases and parametrize two tests over them.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

import fgraph as fg

MODES = ("train", "eval")


@dataclasses.dataclass
class LayerCase:
    """One layer configuration.

    ``make()`` builds the fgraph module (cast to float64 by the checks);
    ``inputs(rng)`` returns the positional inputs as NumPy arrays (float arrays get
    gradients) or Python values; ``torch_make(torch)`` builds the PyTorch twin;
    ``reference(state, *inputs, training=bool)`` is a pure-JAX function of the
    state dict (``{name: jax.Array}``, parameters and buffers) returning the outputs
    (a pytree), or ``(outputs, new_buffers)`` when ``updates_buffers``.
    """

    name: str
    make: Callable[[], Any]
    inputs: Callable[[np.random.Generator], tuple]
    torch_make: Optional[Callable[[Any], Any]] = None
    reference: Optional[Callable[..., Any]] = None
    kwargs: dict = dataclasses.field(default_factory=dict)
    modes: tuple = MODES
    updates_buffers: bool = False
    rtol: float = 1e-8
    atol: float = 1e-9

    def __repr__(self) -> str:
        return self.name


def case_ids(cases: list) -> list[str]:
    return [c.name for c in cases]


def case_modes(cases: list, torch_only: bool = False) -> list:
    """``pytest.param(case, mode)`` for every mode a case lists (only cases with a torch twin if asked)."""
    import pytest

    return [pytest.param(c, m, id=f"{c.name}-{m}") for c in cases for m in c.modes
            if not (torch_only and c.torch_make is None)]


# -- helpers -------------------------------------------------------------------------------------
def _leaves(out: Any) -> list:
    """The tensors/arrays of a (nested) output, in order; ``None`` kept as a placeholder."""
    if isinstance(out, (tuple, list)):
        return [leaf for o in out for leaf in _leaves(o)]
    if isinstance(out, dict):
        return [leaf for k in sorted(out) for leaf in _leaves(out[k])]
    return [out]


def _is_float(a: Any) -> bool:
    return isinstance(a, np.ndarray) and a.dtype.kind == "f"


def _cotangents(outputs: list, rng: np.random.Generator) -> list:
    return [None if o is None or np.asarray(o).dtype.kind != "f" else rng.standard_normal(np.shape(o))
            for o in outputs]


def _close(actual: Any, expected: Any, what: str, case: LayerCase) -> None:
    a = np.zeros(np.shape(expected)) if actual is None else np.asarray(actual, dtype=np.float64)
    e = np.zeros(np.shape(actual)) if expected is None else np.asarray(expected, dtype=np.float64)
    np.testing.assert_allclose(a, e, rtol=case.rtol, atol=case.atol, err_msg=f"{case.name}: {what}")


def _fg_run(module: Any, arrays: tuple, case: LayerCase, rng: np.random.Generator) -> tuple:
    """Forward and backward in fgraph: (outputs, cotangents, input grads, {param name: grad})."""
    inputs = [fg.tensor(a, requires_grad=True) if _is_float(a) else fg.tensor(a) if isinstance(a, np.ndarray)
              else a for a in arrays]
    out = module(*inputs, **case.kwargs)
    outputs = _leaves(out)
    cts = _cotangents([None if o is None else o.numpy() for o in outputs], rng)
    terms = [(o * fg.tensor(c)).sum() for o, c in zip(outputs, cts) if c is not None and o.requires_grad]
    params = dict(module.named_parameters())
    wrt = [x for x in inputs if isinstance(x, fg.Tensor) and x.requires_grad] + list(params.values())
    if terms and wrt:
        loss = terms[0]
        for t in terms[1:]:
            loss = loss + t
        grads = fg.grad(loss, wrt, allow_unused=True)
    else:
        grads = [None] * len(wrt)
    n_in = len(wrt) - len(params)
    return outputs, cts, grads[:n_in], dict(zip(params, grads[n_in:]))


# -- against PyTorch -------------------------------------------------------------------------------
def check_against_torch(case: LayerCase, mode: str, torch: Any) -> None:
    """Forward values, gradients and buffers of ``case`` equal PyTorch's, with torch's weights loaded."""
    torch_module = case.torch_make(torch).double().train(mode == "train")
    module = case.make().double().train(mode == "train")
    torch_state = torch_module.state_dict()
    assert list(module.state_dict()) == list(torch_state), f"{case.name}: state_dict keys differ from torch's"
    assert [(n, tuple(p.shape)) for n, p in module.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in torch_module.named_parameters()], f"{case.name}: parameters differ"
    module.load_state_dict(torch_state)

    rng = np.random.default_rng(0)
    arrays = case.inputs(rng)
    outputs, cts, in_grads, param_grads = _fg_run(module, arrays, case, np.random.default_rng(1))

    t_inputs = [torch.tensor(a, requires_grad=True) if _is_float(a) else torch.tensor(a)
                if isinstance(a, np.ndarray) else a for a in arrays]
    t_out = _leaves(torch_module(*t_inputs, **case.kwargs))
    assert len(t_out) == len(outputs), f"{case.name}: {len(outputs)} outputs, torch has {len(t_out)}"
    for i, (o, t) in enumerate(zip(outputs, t_out)):
        _close(None if o is None else o.numpy(), None if t is None else t.detach().numpy(), f"output {i}", case)
    terms = [(t * torch.tensor(c)).sum() for t, c in zip(t_out, cts) if c is not None and t.requires_grad]
    t_params = dict(torch_module.named_parameters())
    wrt = [x for x in t_inputs if isinstance(x, torch.Tensor) and x.requires_grad] + list(t_params.values())
    t_grads = torch.autograd.grad(sum(terms), wrt, allow_unused=True) if terms else [None] * len(wrt)
    t_grads = [None if g is None else g.numpy() for g in t_grads]
    for i, (g, t) in enumerate(zip(in_grads, t_grads)):
        _close(None if g is None else g.numpy(), t, f"gradient of input {i}", case)
    for (name, g), t in zip(param_grads.items(), t_grads[len(in_grads):]):
        _close(None if g is None else g.numpy(), t, f"gradient of {name}", case)
    t_buffers = dict(torch_module.named_buffers())
    for name, b in module.named_buffers():
        _close(b.numpy(), t_buffers[name].numpy(), f"buffer {name} after forward", case)


# -- against a pure-JAX reference -------------------------------------------------------------------
def check_against_reference(case: LayerCase, mode: str) -> None:
    """Forward values and gradients of ``case`` equal ``jax.vjp`` of its pure-JAX reference."""
    fg.manual_seed(0)
    module = case.make().double().train(mode == "train")
    training = mode == "train"
    state = {k: v.array for k, v in module.state_dict().items()}
    param_names = [n for n, _ in module.named_parameters()]
    rng = np.random.default_rng(0)
    arrays = case.inputs(rng)
    outputs, cts, in_grads, param_grads = _fg_run(module, arrays, case, np.random.default_rng(1))

    float_pos = [i for i, a in enumerate(arrays) if _is_float(a)]
    params = {n: state[n] for n in param_names}

    def ref(p: dict, *float_inputs: Any) -> Any:
        full = dict(state, **p)
        args = list(arrays)
        for i, x in zip(float_pos, float_inputs):
            args[i] = x
        args = [jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
        result = case.reference(full, *args, training=training)
        return result[0] if case.updates_buffers else result

    ref_out, vjp = jax.vjp(ref, params, *[jnp.asarray(arrays[i]) for i in float_pos])
    ref_leaves = _leaves(ref_out)
    assert len(ref_leaves) == len(outputs), f"{case.name}: {len(outputs)} outputs, reference has {len(ref_leaves)}"
    for i, (o, r) in enumerate(zip(outputs, ref_leaves)):
        _close(None if o is None else o.numpy(), r, f"output {i}", case)
    ref_cts = jax.tree_util.tree_unflatten(
        jax.tree_util.tree_structure(ref_out),
        [jnp.zeros(np.shape(r), np.asarray(r).dtype) if c is None else jnp.asarray(c, np.asarray(r).dtype)
         for r, c in zip(ref_leaves, cts)],
    )
    ref_param_grads, *ref_in_grads = vjp(ref_cts)
    for i, (g, r) in enumerate(zip(in_grads, ref_in_grads)):
        _close(None if g is None else g.numpy(), r, f"gradient of input {i}", case)
    for name, g in param_grads.items():
        _close(None if g is None else g.numpy(), ref_param_grads[name], f"gradient of {name}", case)
    if case.updates_buffers:
        _, new_buffers = case.reference(state, *[jnp.asarray(a) if isinstance(a, np.ndarray) else a
                                                 for a in arrays], training=training)
        for name, b in module.named_buffers():
            if name in new_buffers:
                _close(b.numpy(), new_buffers[name], f"buffer {name} after forward", case)
