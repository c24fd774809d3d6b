"""The forward-mode parts of :mod:`fgraph.autograd.functional`: ``jvp``, ``hvp`` and forward-mode ``jacobian``.

* ``jvp``: one forward pass of dual tensors (:mod:`fgraph.autograd.forward_ad`).
* ``hvp``: forward-over-reverse, the cheapest Hessian-vector product: the gradient of the
  function at dual inputs ``(x, v)`` is dual, and its tangent is ``H v``.
* ``jacobian(strategy="forward-mode", vectorize=True)``: :func:`fgraph.func.jacfwd`, a ``vmap`` of
  ``jvp`` over the basis of the inputs.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import jax.numpy as jnp

from fgraph.autograd import forward_ad
from fgraph.autograd.grad_mode import enable_grad
from fgraph.errors import GradError
from fgraph.tensor import Tensor, _wrap

__all__ = ["jvp", "hvp", "jacobian_forward"]


def _tangents(v: Any, inputs: tuple, is_inputs_tuple: bool, fname: str, create_graph: bool) -> tuple:
    from fgraph.autograd.functional import _as_tuple, _grad_preprocess, _validate_v

    if v is None:
        if len(inputs) != 1 or inputs[0].numel() != 1:
            raise GradError("The vector v can only be None if the input to the user-provided function is a single "
                            "Tensor with a single element.")
        return (_wrap(jnp.ones(inputs[0].shape, inputs[0].dtype)),)
    _, v_t = _as_tuple(v, "v", fname)
    v_t = _grad_preprocess(v_t, create_graph=create_graph, need_graph=False)
    _validate_v(v_t, inputs, is_inputs_tuple)
    for i, (t, x) in enumerate(zip(v_t, inputs)):
        if t.dtype != x.dtype:
            raise GradError(f"{fname}: entry {i} of v has dtype {t.dtype}, but its input has {x.dtype}; cast it "
                            "with v.to(x.dtype).")
    return v_t


def _unpacked(outputs: tuple, strict: bool, what: str) -> tuple[list, list]:
    primals, tangents = [], []
    for i, o in enumerate(outputs):
        primal, tangent = forward_ad.unpack_dual(o)
        if tangent is None:
            if strict:
                raise GradError(f"The {what} {i} of the user-provided function is independent of the inputs. This "
                                "is not allowed in strict mode.")
            tangent = _wrap(jnp.zeros(o.shape, o.dtype))
        primals.append(primal)
        tangents.append(tangent)
    return primals, tangents


def _check_every_input_used(outputs: tuple, inputs: tuple) -> None:
    """strict=True: every input must reach an output (PyTorch's strict jvp checks it with its backward pass)."""
    from fgraph.autograd.functional import _autograd_grad

    wanted = tuple(o for o in outputs if o.requires_grad)
    seeds = tuple(_wrap(jnp.ones(o.shape, o.dtype)) for o in wanted)
    used = _autograd_grad(wanted, inputs, seeds, create_graph=False) if wanted else (None,) * len(inputs)
    for i, g in enumerate(used):
        if g is None:
            raise GradError(f"The output of the user-provided function is independent of input {i}. This is not "
                            "allowed in strict mode.")


def jvp(func: Callable[..., Any], inputs: Any, v: Optional[Any] = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """See :func:`fgraph.autograd.functional.jvp`."""
    from fgraph.autograd.functional import _as_tuple, _grad_postprocess, _grad_preprocess, _tuple_postprocess

    with enable_grad():
        is_inputs_tuple, inputs_t = _as_tuple(inputs, "inputs", "jvp")
        inputs_t = _grad_preprocess(inputs_t, create_graph=create_graph, need_graph=create_graph or strict)
        v_t = _tangents(v, inputs_t, is_inputs_tuple, "jvp", create_graph)
        with forward_ad.dual_level():
            outputs = func(*[forward_ad.make_dual(x, t) for x, t in zip(inputs_t, v_t)])
            is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
            primals, tangents = _unpacked(outputs, strict, "output")
        if strict:
            _check_every_input_used(outputs, inputs_t)
    primals = _grad_postprocess(tuple(primals), create_graph)
    tangents = _grad_postprocess(tuple(tangents), create_graph)
    return _tuple_postprocess(primals, is_outputs_tuple), _tuple_postprocess(tangents, is_outputs_tuple)


def hvp(func: Callable[..., Tensor], inputs: Any, v: Optional[Any] = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """See :func:`fgraph.autograd.functional.hvp`."""
    from fgraph.autograd.functional import (_as_tuple, _autograd_grad, _grad_postprocess, _grad_preprocess,
                                            _tuple_postprocess)

    with enable_grad():
        is_inputs_tuple, inputs_t = _as_tuple(inputs, "inputs", "hvp")
        inputs_t = _grad_preprocess(inputs_t, create_graph=create_graph, need_graph=True)
        v_t = _tangents(v, inputs_t, is_inputs_tuple, "hvp", create_graph)
        with forward_ad.dual_level():
            duals = tuple(forward_ad.make_dual(x, t) for x, t in zip(inputs_t, v_t))
            out = func(*duals)
            is_out_tuple, outputs = _as_tuple(out, "outputs of the user-provided function", "hvp")
            if is_out_tuple or outputs[0].numel() != 1:
                raise GradError("The function given to hvp should return a single Tensor with a single element, got "
                                + ("a tuple" if is_out_tuple else f"shape {outputs[0].shape}") + ".")
            if not outputs[0].requires_grad:
                if strict:
                    raise GradError("The output of the user-provided function does not require gradients. This is "
                                    "not allowed in strict mode.")
                grads: tuple = (None,) * len(duals)
            else:
                grads = _autograd_grad(outputs, duals, create_graph=create_graph)
            grads = tuple(_wrap(jnp.zeros(x.shape, x.dtype)) if g is None else g for g, x in zip(grads, inputs_t))
            value = forward_ad.unpack_dual(outputs[0]).primal
            _, products = _unpacked(grads, strict, "Hessian-vector product")
    value = _grad_postprocess((value,), create_graph)[0]
    return value, _tuple_postprocess(_grad_postprocess(tuple(products), create_graph), is_inputs_tuple)


def jacobian_forward(func: Callable[..., Any], inputs: Any, create_graph: bool, strict: bool,
                     vectorize: bool) -> Any:
    """``jacobian(..., strategy="forward-mode")``: :func:`fgraph.func.jacfwd` of ``func`` in all its inputs."""
    from fgraph.autograd.functional import _as_tuple, _grad_postprocess, _grad_preprocess, _tuple_postprocess
    from fgraph.func.transforms import jacfwd

    if not vectorize:
        raise GradError('jacobian: strategy="forward-mode" requires vectorize=True (it is a vmap of jvp, as in '
                        "PyTorch).")
    if strict:
        raise GradError('jacobian: strict=True is not supported with strategy="forward-mode"; pass strict=False '
                        "(as in PyTorch).")
    with enable_grad():
        is_inputs_tuple, inputs_t = _as_tuple(inputs, "inputs", "jacobian")
        inputs_t = _grad_preprocess(inputs_t, create_graph=create_graph, need_graph=create_graph)
        flags: dict = {}
        jac = jacfwd(_TupleOutputs(func, flags), argnums=tuple(range(len(inputs_t))))(*inputs_t)
    result = _grad_postprocess(tuple(jac), create_graph)
    return _tuple_postprocess(result, (flags["is_tuple"], is_inputs_tuple))


class _TupleOutputs:
    """``func`` returning a tuple of Tensors always; notes whether it returned one (for the result's shape)."""

    __slots__ = ("func", "flags")

    def __init__(self, func: Callable[..., Any], flags: dict) -> None:
        self.func, self.flags = func, flags

    def __call__(self, *args: Tensor) -> tuple:
        from fgraph.autograd.functional import _as_tuple

        is_tuple, outputs = _as_tuple(self.func(*args), "outputs of the user-provided function", "jacobian")
        self.flags["is_tuple"] = is_tuple
        return tuple(outputs)
