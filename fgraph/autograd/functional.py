"""Higher-level derivatives of whole functions: ``vjp``, ``jvp``, ``jacobian``, ``hessian``, ``hvp``, ``vhp``.

The API, return structures and ``strict`` semantics are those of
``torch.autograd.functional``:

* ``inputs`` is a Tensor or a tuple of Tensors; results mirror it (a single
  Tensor in, a single Tensor out).
* The Jacobian of output ``i`` with respect to input ``j`` has shape
  ``outputs[i].shape + inputs[j].shape``; tuple outputs and tuple inputs give a
  tuple of tuples indexed ``[i][j]``.
* Inputs are re-made as fresh leaves (``inp.detach().requires_grad_()``), so the
  function is differentiated at their values and nothing flows back to the
  caller's tensors — unless ``create_graph=True`` and the input already
  requires grad, in which case a differentiable identity view is used and the
  results can be differentiated again with respect to the caller's tensors.
* With ``strict=False`` an output independent of an input gives zeros; with
  ``strict=True`` it raises :class:`fgraph.GradError` (a ``RuntimeError``).

``jvp`` and ``hvp`` are forward mode (:mod:`fgraph.autograd.forward_ad`; PyTorch computes
them with the double-backward trick, with the same values): ``jvp`` is one pass on dual
tensors, ``hvp`` forward-over-reverse. ``jacobian(..., strategy="forward-mode",
vectorize=True)`` is :func:`fgraph.func.jacfwd`.

Example:
    >>> import fgraph as fg
    >>> from fgraph.autograd.functional import jacobian
    >>> x = fg.tensor([1.0, 2.0])
    >>> jacobian(lambda t: t * t, x).tolist()
    [[2.0, 0.0], [0.0, 4.0]]
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Union

import jax
import jax.numpy as jnp

from fgraph.autograd import _functional_forward as _forward
from fgraph.autograd.engine import grad as _engine_grad
from fgraph.autograd.forward_ad import carry, is_dual
from fgraph.autograd.grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from fgraph.errors import GradError
from fgraph.tensor import Tensor, _wrap

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]

Tensors = Union[Tensor, tuple]
_STRATEGIES = ("forward-mode", "reverse-mode")
#: Errors that mean "this backward cannot run under jax.vmap" (it reads concrete values).
_NOT_TRACEABLE = (jax.errors.JAXTypeError, jax.errors.NonConcreteBooleanIndexError)


# -- input / output plumbing ----------------------------------------------------------------------
def _as_tuple(value: Any, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    """``(was it a tuple, the tuple of Tensors)``; anything else than Tensors is a TypeError."""
    is_tuple = isinstance(value, tuple)
    items = value if is_tuple else (value,)
    for i, el in enumerate(items):
        if not isinstance(el, Tensor):
            where = f"the value at index {i} has type {type(el).__name__}" if is_tuple else \
                f"the given {arg_name} has type {type(el).__name__}"
            hint = " (pass a tuple, not a list)" if isinstance(value, list) else ""
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but {where}{hint}."
            )
    return is_tuple, items


def _tuple_postprocess(res: Any, to_unpack: Union[bool, tuple[bool, bool]]) -> Any:
    """Undo :func:`_as_tuple` on a result (``to_unpack`` = (outer was tuple, inner was tuple))."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _identity_view(t: Tensor) -> Tensor:
    """A new record equal to ``t`` whose gradient flows back to ``t`` (PyTorch's ``t.view_as(t)``)."""
    from fgraph.ops._declare import apply_unary
    from fgraph.ops.shape import RESHAPE

    return apply_unary(RESHAPE, t, RESHAPE.Params(t.shape))


def _grad_preprocess(inputs: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """Fresh records for ``inputs``: leaves that require grad iff ``need_graph``.

    Always a new record, so inputs passed as arguments are told apart from the
    same tensors captured by the function's closure. With ``create_graph`` an
    input that already requires grad stays connected to its graph instead.
    """
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(_identity_view(inp))
        else:
            leaf = inp.detach()
            res.append(carry(inp, leaf.requires_grad_() if need_graph else leaf))  # tangents stay (forward AD)
    return tuple(res)


def _grad_postprocess(values: tuple, create_graph: bool) -> tuple:
    """Detach results (recursively through nested tuples) unless the caller asked for a graph."""
    if isinstance(values[0], Tensor):
        return values if create_graph else tuple(carry(v, v.detach()) for v in values)
    return tuple(_grad_postprocess(v, create_graph) for v in values)


def _validate_v(v: tuple, other: tuple, is_other_tuple: bool) -> None:
    if len(other) != len(v):
        if is_other_tuple:
            raise GradError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise GradError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.shape != el_other.shape:
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise GradError(f"{prepend}v has invalid size: should be {el_other.shape} but got {el_v.shape}.")


def _check_requires_grad(values: tuple, kind: str, strict: bool) -> None:
    """In strict mode, every output / gradient must depend on the inputs."""
    if not strict:
        return
    for i, t in enumerate(values):
        if t is None:
            raise GradError(
                f"The output of the user-provided function is independent of input {i}. "
                "This is not allowed in strict mode."
            )
        if t.requires_grad:
            continue
        if kind == "hessian":
            raise GradError(
                f"The hessian of the user-provided function with respect to input {i} is independent of the "
                "input. This is not allowed in strict mode. You should ensure that your function is thrice "
                "differentiable and that the hessian depends on the inputs."
            )
        if kind == "jacobian":
            raise GradError(
                f"While computing the hessian, found that the jacobian of the user-provided function with "
                f"respect to input {i} is independent of the input. This is not allowed in strict mode. You "
                "should ensure that your function is twice differentiable and that the jacobian depends on "
                "the inputs (this would be violated by a linear function for example)."
            )
        if kind == "grad_inputs":
            raise GradError(
                f"The gradient with respect to input {i} is independent of the inputs of the user-provided "
                "function. This is not allowed in strict mode."
            )
        raise GradError(
            f"Output {i} of the user-provided function does not require gradients. The outputs must be "
            "computed in a differentiable manner from the input when running in strict mode."
        )


def _autograd_grad(outputs: tuple, inputs: tuple, grad_outputs: Optional[tuple] = None,
                   create_graph: bool = False, is_grads_batched: bool = False) -> tuple:
    """``fg.grad`` that skips outputs which are ``None`` or need no grad, and allows unused inputs."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    kept = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not kept:
        return (None,) * len(inputs)
    outs = tuple(o for o, _ in kept)
    seeds = tuple(g for _, g in kept)
    return _engine_grad(outs, inputs, seeds, create_graph=create_graph, allow_unused=True,
                        is_grads_batched=is_grads_batched)


_STAGE_MESSAGES = {
    "back": "The output of the user-provided function is independent of input {i}. "
            "This is not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when "
                  "using the double backward trick to compute forward mode gradients. This is not allowed in "
                  "strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
                   "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the "
                         "grad_jacobian. This is not allowed in strict mode as it prevents from using the double "
                         "backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads: tuple, refs: tuple, strict: bool, create_graph: bool, stage: str) -> tuple:
    """Replace ``None`` gradients by zeros shaped like ``refs`` (or raise in strict mode)."""
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise GradError(_STAGE_MESSAGES[stage].format(i=i))
            g = _zeros(refs[i].shape, refs[i].dtype)
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise GradError(
                f"The {what} of the user-provided function is independent of input {i}. "
                "This is not allowed in strict mode when create_graph=True."
            )
        res.append(g)
    return tuple(res)


def _zeros(shape: tuple, dtype: Any) -> Tensor:
    return _wrap(jnp.zeros(shape, dtype))


# -- vector products --------------------------------------------------------------------------------
def vjp(func: Callable[..., Tensors], inputs: Tensors, v: Optional[Tensors] = None,
        create_graph: bool = False, strict: bool = False) -> tuple[Tensors, Tensors]:
    """Vector-Jacobian product ``v^T J`` of ``func`` at ``inputs``; returns ``(func(*inputs), vjp)``.

    ``v`` has the shape of the outputs (it may be omitted when the output is a
    single element). The product has the structure of ``inputs``.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.autograd.functional import vjp
        >>> x = fg.tensor([1.0, 2.0])
        >>> out, g = vjp(lambda t: (t * t).sum(), x)
        >>> out.item(), g.tolist()
        (5.0, [2.0, 4.0])
    """
    with enable_grad():
        is_inputs_tuple, inputs_t = _as_tuple(inputs, "inputs", "vjp")
        inputs_t = _grad_preprocess(inputs_t, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs_t)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        if v is not None:
            _, v_t = _as_tuple(v, "v", "vjp")
            v_t = _grad_preprocess(v_t, create_graph=create_graph, need_graph=False)
            _validate_v(v_t, outputs, is_outputs_tuple)
        else:
            v_t = None
            if len(outputs) != 1 or outputs[0].numel() != 1:
                raise GradError("The vector v can only be None if the user-provided function returns a single "
                                "Tensor with a single element.")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs_t, v_t, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs_t, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)


def jvp(func: Callable[..., Tensors], inputs: Tensors, v: Optional[Tensors] = None,
        create_graph: bool = False, strict: bool = False) -> tuple[Tensors, Tensors]:
    """Jacobian-vector product ``J v`` of ``func`` at ``inputs``; returns ``(func(*inputs), jvp)``.

    ``v`` has the shape and dtype of ``inputs`` (it may be omitted for a single-element
    input). Forward mode: one pass of ``func`` on dual tensors (PyTorch's version uses the
    double-backward trick; the values are the same). The product has the structure of the
    outputs.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.autograd.functional import jvp
        >>> x = fg.tensor([1.0, 2.0])
        >>> out, t = jvp(lambda a: a * a, x, fg.tensor([1.0, 1.0]))
        >>> t.tolist()
        [2.0, 4.0]
    """
    return _forward.jvp(func, inputs, v, create_graph, strict)


# -- jacobian -----------------------------------------------------------------------------------------
def first_complex(values: Sequence[Tensor]) -> Optional[int]:
    """The position of the first complex tensor in ``values``, or ``None``."""
    return next((i for i, t in enumerate(values) if t.dtype.kind == "c"), None)


def _check_real(values: tuple, fname: str, what: str) -> None:
    """Complex outputs of a Jacobian (inputs of a Hessian) need a convention PyTorch does not pick: refused."""
    i = first_complex(values)
    if i is not None:
        t = values[i]
        raise GradError(
            f"{fname}: {what} {i} is complex ({t.dtype}, shape {t.shape}); a {fname} of complex {what}s is not "
            "defined (PyTorch refuses it too). Take it of fg.view_as_real(...) (the real and imaginary parts as "
            "real numbers) instead.")


def _standard_basis(outputs: tuple) -> tuple[tuple, tuple[int, ...]]:
    """The identity of size ``N = sum(numels)`` split by columns into one seed per output.

    Seed ``i`` has shape ``(N,) + outputs[i].shape``; row ``r`` of all seeds together is
    the ``r``-th unit vector of the concatenated, flattened outputs.
    """
    numels = tuple(o.numel() for o in outputs)
    total = sum(numels)
    seeds = []
    start = 0
    for out, n in zip(outputs, numels):
        dtype = out.dtype if jnp.issubdtype(out.dtype, jnp.inexact) else jnp.float32
        eye = jnp.eye(total, n, k=-start, dtype=dtype)
        seeds.append(_wrap(eye.reshape((total,) + out.shape)))
        start += n
    return tuple(seeds), numels


def _jacobian_vectorized(outputs: tuple, inputs: tuple) -> Optional[tuple]:
    """All Jacobian rows in one backward pass under ``jax.vmap`` (``is_grads_batched=True``).

    ``None`` if the backward cannot run under ``jax.vmap`` (it reads concrete values).
    """
    seeds, numels = _standard_basis(outputs)
    total = sum(numels)
    if total == 0:
        batched: tuple = (None,) * len(inputs)
    else:
        try:
            batched = _autograd_grad(outputs, inputs, seeds, create_graph=False, is_grads_batched=True)
        except _NOT_TRACEABLE:
            return None  # a hook or custom backward needs concrete values: the caller goes row by row
    per_output = []
    for i, out in enumerate(outputs):
        start = sum(numels[:i])
        row = []
        for inp, g in zip(inputs, batched):
            shape = out.shape + inp.shape
            if g is None:
                row.append(_zeros(shape, inp.dtype))
            else:
                row.append(_wrap(g._array[start:start + numels[i]].reshape(shape)))
        per_output.append(tuple(row))
    return tuple(per_output)


def _stack_rows(rows: list, shape: tuple, dtype: Any, create_graph: bool) -> Tensor:
    if not rows:
        return _zeros(shape, dtype)
    if (create_graph and any(r.requires_grad for r in rows)) or any(map(is_dual, rows)):
        from fgraph.ops.shape import reshape, stack

        return reshape(stack(rows, 0), shape)
    return _wrap(jnp.stack([r._array for r in rows]).reshape(shape))


def _jacobian_rows(outputs: tuple, inputs: tuple, create_graph: bool, strict: bool) -> tuple:
    """One backward pass per output element, seeded with a unit vector."""
    jac = []
    for i, out in enumerate(outputs):
        n = out.numel()
        rows: list[list] = [[] for _ in inputs]
        if out.requires_grad:
            flat_eye = jnp.eye(n, dtype=out.dtype)
        for j in range(n):
            if out.requires_grad:
                seed = _wrap(flat_eye[j].reshape(out.shape))
                vj = _autograd_grad((out,), inputs, (seed,), create_graph=create_graph)
            else:
                vj = (None,) * len(inputs)
            for k, (g, inp) in enumerate(zip(vj, inputs)):
                if g is not None:
                    if strict and create_graph and not g.requires_grad:
                        raise GradError(
                            f"The jacobian of the user-provided function is independent of input {k}. "
                            "This is not allowed in strict mode when create_graph=True."
                        )
                    rows[k].append(g)
                else:
                    if strict:
                        raise GradError(
                            f"Output {i} of the user-provided function is independent of input {k}. "
                            "This is not allowed in strict mode."
                        )
                    rows[k].append(_zeros(inp.shape, inp.dtype))
        jac.append(tuple(_stack_rows(rows[k], out.shape + inp.shape, inp.dtype, create_graph)
                         for k, inp in enumerate(inputs)))
    return tuple(jac)


def jacobian(func: Callable[..., Tensors], inputs: Tensors, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """The Jacobian of ``func`` at ``inputs``.

    Entry ``[i][j]`` has shape ``outputs[i].shape + inputs[j].shape``; the tuple
    levels are dropped where ``func`` returned a single Tensor or ``inputs`` was
    one. With ``vectorize=True`` every row comes from a single backward pass
    run under ``jax.vmap`` (``fg.grad(..., is_grads_batched=True)``) instead of
    one pass per output element; with ``create_graph=True`` the rows are
    computed one by one even then (batched backward does not record a graph).
    Only ``strategy="reverse-mode"`` is implemented.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.autograd.functional import jacobian
        >>> x, y = fg.tensor([1.0, 2.0]), fg.tensor(3.0)
        >>> jx, jy = jacobian(lambda a, b: a * b, (x, y), vectorize=True)
        >>> jx.tolist(), jy.tolist()
        ([[3.0, 0.0], [0.0, 3.0]], [1.0, 2.0])
    """
    if strategy not in _STRATEGIES:
        raise ValueError(f"jacobian: strategy must be one of {_STRATEGIES}, got {strategy!r}.")
    if strategy == "forward-mode":
        return _forward.jacobian_forward(func, inputs, create_graph, strict, vectorize)
    with enable_grad():
        is_inputs_tuple, inputs_t = _as_tuple(inputs, "inputs", "jacobian")
        inputs_t = _grad_preprocess(inputs_t, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs_t)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jacobian")
        _check_real(outputs, "jacobian", "output")
        _check_requires_grad(outputs, "outputs", strict)
        if vectorize and strict:
            raise GradError("jacobian: `strict=True` and `vectorize=True` are not supported together. "
                            "Please either set `strict=False` or `vectorize=False`.")
        # Rows batched under jax.vmap come back as arrays: dual values (forward AD) go row by row.
        batch = vectorize and not create_graph and not any(map(is_dual, outputs))
        result = _jacobian_vectorized(outputs, inputs_t) if batch else None
        if result is None:
            result = _jacobian_rows(outputs, inputs_t, create_graph, strict)
        result = _grad_postprocess(result, create_graph)
        return _tuple_postprocess(result, (is_outputs_tuple, is_inputs_tuple))


def hessian(func: Callable[..., Tensor], inputs: Tensors, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of the scalar function ``func`` at ``inputs``.

    Entry ``[i][j]`` has shape ``inputs[i].shape + inputs[j].shape`` (a single
    Tensor for a single input). It is the Jacobian of the gradient; ``vectorize``
    applies to that outer Jacobian.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.autograd.functional import hessian
        >>> x = fg.tensor([1.0, 2.0])
        >>> hessian(lambda t: (t ** 3).sum(), x).tolist()
        [[6.0, 0.0], [0.0, 12.0]]
    """
    is_inputs_tuple, inputs_t = _as_tuple(inputs, "inputs", "hessian")
    _check_real(inputs_t, "hessian", "input")
    if outer_jacobian_strategy not in _STRATEGIES:
        raise ValueError(f"hessian: outer_jacobian_strategy must be one of {_STRATEGIES}, "
                         f"got {outer_jacobian_strategy!r}.")

    def ensure_single_output_function(*inp: Tensor) -> Tensor:
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict)
        if is_out_tuple:
            raise GradError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise GradError("The Tensor returned by the function given to hessian should contain a single "
                            f"element, got shape {out.shape}")
        from fgraph.ops.shape import reshape

        return reshape(out, ())

    def jac_func(*inp: Tensor) -> tuple:
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    res = jacobian(jac_func, inputs_t, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


# -- Hessian products -----------------------------------------------------------------------------
def _scalar_function_and_jacobian(func: Callable[..., Tensor], inputs: Tensors, v: Optional[Tensors],
                                  create_graph: bool, strict: bool, name: str) -> tuple:
    """Shared start of ``vhp`` and ``hvp``: preprocessed inputs and ``v``, the output and its gradient."""
    is_inputs_tuple, inputs_t = _as_tuple(inputs, "inputs", name)
    inputs_t = _grad_preprocess(inputs_t, create_graph=create_graph, need_graph=True)
    if v is not None:
        _, v_t = _as_tuple(v, "v", name)
        v_t = _grad_preprocess(v_t, create_graph=create_graph, need_graph=False)
        _validate_v(v_t, inputs_t, is_inputs_tuple)
    else:
        v_t = None
        if len(inputs_t) != 1 or inputs_t[0].numel() != 1:
            raise GradError("The vector v can only be None if the input to the user-provided function is a "
                            "single Tensor with a single element.")
    outputs = func(*inputs_t)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", name)
    _check_requires_grad(outputs, "outputs", strict)
    if is_outputs_tuple:
        raise GradError(f"The function given to {name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise GradError(f"The Tensor returned by the function given to {name} should contain a single element, "
                        f"got shape {outputs[0].shape}")
    jac = _autograd_grad(outputs, inputs_t, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict)
    return is_inputs_tuple, inputs_t, v_t, outputs, is_outputs_tuple, jac


def _second_backward(outputs_2: tuple, wrt: tuple, v_t: Optional[tuple], outputs: tuple, tuple_flags: tuple,
                     create_graph: bool, strict: bool, stage: str, like: Optional[tuple] = None) -> tuple:
    """Shared end of ``vhp`` and ``hvp``: differentiate ``outputs_2`` with respect to ``wrt`` against ``v``."""
    is_inputs_tuple, is_outputs_tuple = tuple_flags
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(outputs_2, wrt, v_t, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, wrt if like is None else like, strict, create_graph, stage)
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)


def vhp(func: Callable[..., Tensor], inputs: Tensors, v: Optional[Tensors] = None,
        create_graph: bool = False, strict: bool = False) -> tuple[Tensor, Tensors]:
    """Vector-Hessian product ``v^T H`` of the scalar ``func`` at ``inputs``; returns ``(func(*inputs), vhp)``.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.autograd.functional import vhp
        >>> x = fg.tensor([1.0, 2.0])
        >>> out, p = vhp(lambda t: (t ** 3).sum(), x, fg.tensor([1.0, 1.0]))
        >>> p.tolist()
        [6.0, 12.0]
    """
    with enable_grad():
        is_inputs_tuple, inputs_t, v_t, outputs, is_outputs_tuple, jac = _scalar_function_and_jacobian(
            func, inputs, v, create_graph, strict, "vhp")
    return _second_backward(jac, inputs_t, v_t, outputs, (is_inputs_tuple, is_outputs_tuple), create_graph,
                            strict, "double_back")


def hvp(func: Callable[..., Tensor], inputs: Tensors, v: Optional[Tensors] = None,
        create_graph: bool = False, strict: bool = False) -> tuple[Tensor, Tensors]:
    """Hessian-vector product ``H v`` of the scalar ``func`` at ``inputs``; returns ``(func(*inputs), hvp)``.

    Forward-over-reverse: the gradient of ``func`` at dual inputs ``(inputs, v)`` is dual, and its
    tangent is ``H v`` (PyTorch's version uses the double-backward trick; for twice
    differentiable functions ``H`` is symmetric and this equals :func:`vhp`).

    Example:
        >>> import fgraph as fg
        >>> from fgraph.autograd.functional import hvp
        >>> x = fg.tensor([1.0, 2.0])
        >>> out, p = hvp(lambda t: (t ** 3).sum(), x, fg.tensor([1.0, 0.0]))
        >>> p.tolist()
        [6.0, 0.0]
    """
    return _forward.hvp(func, inputs, v, create_graph, strict)
