"""torch.func's derivative transforms on fgraph's engine: grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian.

Each takes a function of Tensors (or pytrees of Tensors: dicts of parameters,
tuples...) and returns a function computing derivatives with ``fg.grad``.
Inside, the differentiated inputs are fresh leaves that require grad, so inputs
need not require grad themselves. When some input is already part of a graph
(it requires grad and grad mode is on), the derivatives are computed with
``create_graph=True`` and stay connected to it: that is how the transforms
compose (``grad(grad(f))``, ``jacrev(jacrev(f))``, ``hessian``) and how a
gradient can be differentiated again by ``fg.grad``. Otherwise results are
graph-free and computed by the fast (fused) backward.

``jvp`` and ``jacfwd`` are forward mode (:mod:`fgraph.autograd.forward_ad`): ``jvp`` pushes
the tangents through one forward pass of dual tensors, ``jacfwd`` is ``vmap`` of ``jvp`` over
the input basis (one batched forward pass), ``hessian`` is ``jacfwd(jacrev(f))``
(forward-over-reverse) and ``linearize`` returns the output and the ``jvp`` function.
Results equal torch.func's.

Example:
    >>> import fgraph as fg
    >>> from fgraph.func import grad, hessian
    >>> x = fg.tensor([1.0, 2.0])
    >>> grad(lambda t: (t ** 3).sum())(x).tolist()
    [3.0, 12.0]
    >>> grad(grad(lambda t: t ** 3))(fg.tensor(2.0)).item()
    12.0
    >>> hessian(lambda t: (t ** 3).sum())(x).tolist()
    [[6.0, 0.0], [0.0, 12.0]]
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence, Union

import jax.numpy as jnp

from fgraph._dtypes import is_differentiable_dtype
from fgraph.autograd import functional as _functional
from fgraph.autograd import forward_ad
from fgraph.autograd.engine import grad as _engine_grad
from fgraph.autograd.forward_ad import carry
from fgraph.autograd.grad_mode import enable_grad, is_grad_enabled
from fgraph.errors import OpError, TransformTypeError, TransformValueError
from fgraph.func._tree import detach_tree, same_structure, tensor_leaves, unflatten
from fgraph.tensor import Tensor, _wrap

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize"]

Argnums = Union[int, tuple]


# -- shared plumbing ---------------------------------------------------------------------------------
def _normalize_argnums(argnums: Any, nargs: int, fname: str) -> tuple:
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        nums: tuple = (argnums,)
    elif isinstance(argnums, tuple) and argnums and all(isinstance(a, int) and not isinstance(a, bool)
                                                         for a in argnums):
        nums = argnums
    else:
        raise TransformTypeError(f"{fname}: argnums must be an int or a non-empty tuple of ints, got {argnums!r}.")
    out = []
    for a in nums:
        if not -nargs <= a < nargs:
            raise TransformValueError(
                f"{fname}: Got argnums={argnums!r}, but only {nargs} positional inputs were given; "
                f"argnums must index the positional arguments (0 to {nargs - 1}).")
        out.append(a % nargs)
    if len(set(out)) != len(out):
        raise TransformValueError(f"{fname}: argnums must be unique, got {argnums!r}.")
    return tuple(out)


def _connected(args: tuple, kwargs: dict) -> bool:
    """Whether results must stay on the caller's graph: grad mode is on and some input requires grad."""
    if not is_grad_enabled():
        return False
    if not kwargs and all(type(a) is Tensor for a in args):
        return any(a.requires_grad for a in args)
    leaves, _ = tensor_leaves((args, kwargs))
    return any(isinstance(t, Tensor) and t.requires_grad for t in leaves)


def _fresh_leaf(t: Tensor, connected: bool) -> Tensor:
    """A new differentiable record for ``t``: an identity view on its graph, or a fresh leaf."""
    if connected and t.requires_grad:
        return _functional._identity_view(t)
    return carry(t, t.detach().requires_grad_())  # a dual input stays dual: grad inside jvp (forward-over-reverse)


class _Prepared:
    """Arguments with the leaves at ``argnums`` replaced by fresh differentiable records."""

    __slots__ = ("args", "leaves", "treedefs", "counts")

    def __init__(self, args: tuple, argnums: tuple, connected: bool, fname: str) -> None:
        new_args = list(args)
        self.leaves: list = []
        self.treedefs: list = []
        self.counts: list = []
        for a in argnums:
            leaves, treedef = tensor_leaves(args[a])
            fresh = []
            for leaf in leaves:
                _check_diff_leaf(leaf, a, fname)
                fresh.append(_fresh_leaf(leaf, connected))
            new_args[a] = unflatten(treedef, fresh)
            self.leaves.extend(fresh)
            self.treedefs.append(treedef)
            self.counts.append(len(fresh))
        self.args = tuple(new_args)

    def restructure(self, flat: list) -> list:
        """One pytree per argnum from a flat list aligned with ``self.leaves``."""
        out, start = [], 0
        for treedef, n in zip(self.treedefs, self.counts):
            out.append(unflatten(treedef, flat[start:start + n]))
            start += n
        return out


def _check_diff_leaf(leaf: Any, argnum: int, fname: str) -> None:
    if not isinstance(leaf, Tensor):
        raise OpError(f"{fname}: argument {argnum} must be a Tensor or a pytree (dict, tuple, list) of Tensors, "
                      f"but it holds a {type(leaf).__name__}. Move non-Tensor arguments out of argnums.")
    if not is_differentiable_dtype(leaf.dtype):
        raise TransformTypeError(
            f"{fname}: argument {argnum} holds a Tensor of dtype {leaf.dtype} (shape {leaf.shape}); only floating "
            "point and complex inputs can be differentiated. Convert it with .float() or leave it out of argnums.")


def _zeros_like(t: Tensor) -> Tensor:
    return _wrap(jnp.zeros(t.shape, t.dtype))


def _split_aux(out: Any, has_aux: bool, fname: str) -> tuple:
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise TransformTypeError(f"{fname}(f)(*args): output of function f should be a tuple: (output, aux) if "
                                 f"has_aux is True, got {type(out).__name__}.")
    bad = _non_tensor_leaf(out[1])
    if bad is not _NONE_FOUND:
        raise TransformTypeError(
            f"{fname}(f)(*args): with has_aux=True, aux must be a Tensor or a pytree (tuple, list, dict) of "
            f"Tensors, as in torch.func, but it holds a {type(bad).__name__} ({bad!r}). Return Python values "
            "from outside the transform, or wrap them with fg.tensor.")
    return out


_NONE_FOUND = object()


def _non_tensor_leaf(tree: Any) -> Any:
    """The first leaf of ``tree`` (tuples, lists, dicts) that is not a Tensor (``None`` counts), or ``_NONE_FOUND``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, Tensor):
            continue
        if isinstance(node, (tuple, list)):
            stack.extend(reversed(node))
        elif isinstance(node, dict):
            stack.extend(reversed(list(node.values())))
        else:
            return node
    return _NONE_FOUND


def _grad_of_leaves(outputs: tuple, inputs: list, seeds: Any, create_graph: bool) -> list:
    """Gradients of ``outputs`` for each input (zeros where an input is unused)."""
    kept = [i for i, o in enumerate(outputs) if o.requires_grad]
    if not kept or not inputs:
        return [_zeros_like(t) for t in inputs]
    seeds_kept = None if seeds is None else tuple(seeds[i] for i in kept)
    grads = _engine_grad(tuple(outputs[i] for i in kept), tuple(inputs), seeds_kept,
                         create_graph=create_graph, allow_unused=True)
    return [_zeros_like(t) if g is None else g for g, t in zip(grads, inputs)]


def _maybe_detach(tree: Any, connected: bool) -> Any:
    return tree if connected else detach_tree(tree)


# -- grad / grad_and_value -----------------------------------------------------------------------------
def _grad_and_value_impl(func: Callable, argnums: Argnums, has_aux: bool, fname: str,
                         args: tuple, kwargs: dict, want_value: bool = True) -> tuple:
    nums = _normalize_argnums(argnums, len(args), f"{fname}(f)(*args)")
    connected = _connected(args, kwargs)
    with enable_grad():
        prep = _Prepared(args, nums, connected, fname)
        out, aux = _split_aux(func(*prep.args, **kwargs), has_aux, fname)
        if not isinstance(out, Tensor):
            raise TransformTypeError(
                f"{fname}(f)(*args): Expected f(*args) to return a Tensor, got {type(out).__name__}.")
        if out.ndim != 0:
            raise TransformValueError(
                f"{fname}(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor with {out.ndim} dims "
                f"(shape {out.shape}). Maybe you wanted to use the vjp or jacrev APIs instead, or to .sum() it?")
        flat = _grad_of_leaves((out,), prep.leaves, None, connected)
    grads = prep.restructure(flat)
    result = grads[0] if isinstance(argnums, int) else tuple(grads)
    value = _maybe_detach(out, connected) if want_value else None
    if has_aux:
        return result, (value, _maybe_detach(aux, connected))
    return result, value


def grad_and_value(func: Callable, argnums: Argnums = 0, has_aux: bool = False) -> Callable:
    """Like :func:`grad`, but the function returns ``(gradient, value)`` (``(gradient, (value, aux))`` with aux).

    Example:
        >>> import fgraph as fg
        >>> from fgraph.func import grad_and_value
        >>> g, v = grad_and_value(lambda t: (t * t).sum())(fg.tensor([1.0, 2.0]))
        >>> g.tolist(), v.item()
        ([2.0, 4.0], 5.0)
    """
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> tuple:
        return _grad_and_value_impl(func, argnums, has_aux, "grad_and_value", args, kwargs)

    return wrapper


def grad(func: Callable, argnums: Argnums = 0, has_aux: bool = False) -> Callable:
    """The gradient of a scalar function, as a function (``torch.func.grad``).

    ``argnums`` picks the positional arguments to differentiate (an int, or a tuple
    giving a tuple of gradients); each may be a Tensor or a pytree of Tensors (a
    dict of parameters) and its gradient has the same structure. Unused inputs get
    zeros. With ``has_aux=True``, ``func`` returns ``(output, aux)`` and the result
    is ``(gradient, aux)``.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.func import grad
        >>> params = {"w": fg.tensor([1.0, 2.0]), "b": fg.tensor(0.5)}
        >>> g = grad(lambda p, x: (p["w"] * x).sum() + p["b"])(params, fg.tensor([3.0, 4.0]))
        >>> g["w"].tolist(), g["b"].item()
        ([3.0, 4.0], 1.0)
    """
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result, value = _grad_and_value_impl(func, argnums, has_aux, "grad", args, kwargs, want_value=False)
        return (result, value[1]) if has_aux else result

    return wrapper


# -- vjp / jvp ------------------------------------------------------------------------------------------
def _check_outputs(out: Any, fname: str, what: str = "f(*primals)") -> tuple:
    """``(leaves, treedef)`` of the output ``out``: only Tensors (``None`` is no Tensor), at least one."""
    bad = _NONE_FOUND if out is None else _non_tensor_leaf(out)  # None: no output at all (torch's "empty")
    if bad is not _NONE_FOUND:
        raise TransformTypeError(f"{fname}: Expected {what} to return only Tensors (or pytrees of Tensors), "
                                 f"got a {type(bad).__name__}.")
    leaves, treedef = tensor_leaves(out)
    if out is None or not leaves:
        raise TransformValueError(f"{fname}: Expected f to be a function that has non-empty output, but {what} "
                                  f"returned {out!r}; there is nothing to differentiate.")
    return leaves, treedef


class _VjpFn:
    """The ``vjp_fn`` returned by :func:`vjp`: cotangents shaped like the output -> one gradient per primal."""

    __slots__ = ("_outputs", "_out_def", "_prep", "_connected")

    def __init__(self, outputs: list, out_def: Any, prep: _Prepared, connected: bool) -> None:
        self._outputs = outputs
        self._out_def = out_def
        self._prep = prep
        self._connected = connected

    def __call__(self, cotangents: Any) -> tuple:
        ct_leaves, ct_def = tensor_leaves(cotangents)
        if not same_structure(ct_def, self._out_def):
            raise TransformValueError(
                f"vjp_fn: Expected cotangents with the structure of the output ({self._out_def}), "
                f"got {ct_def}.")
        for i, (c, o) in enumerate(zip(ct_leaves, self._outputs)):
            if not isinstance(c, Tensor) or c.shape != o.shape:
                got = c.shape if isinstance(c, Tensor) else type(c).__name__
                error = TransformValueError if isinstance(c, Tensor) else OpError  # torch: RuntimeError, TypeError
                raise error(f"vjp_fn: cotangent {i} must be a Tensor of shape {o.shape} (the output's), got {got}.")
        # Under fg.no_grad() the results are graph-free, as torch.func's (whatever the primals were).
        create = is_grad_enabled() and (self._connected or any(c.requires_grad for c in ct_leaves))
        with enable_grad():
            flat = _grad_of_leaves(tuple(self._outputs), self._prep.leaves, tuple(ct_leaves), create)
        if not create:
            flat = [g.detach() for g in flat]
        return tuple(self._prep.restructure(flat))


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """``(func(*primals), vjp_fn)``; ``vjp_fn(cotangents)`` returns one gradient per primal (``torch.func.vjp``).

    ``cotangents`` has the structure and shapes of the output; ``vjp_fn`` can be
    called any number of times. With ``has_aux=True``: ``(output, vjp_fn, aux)``.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.func import vjp
        >>> out, vjp_fn = vjp(fg.sin, fg.tensor([0.0, 1.0]))
        >>> [round(v, 4) for v in vjp_fn(fg.ones(2))[0].tolist()]
        [1.0, 0.5403]
    """
    if not primals:
        raise ValueError("vjp(f, *primals): at least one primal is needed.")
    connected = _connected(primals, {})
    with enable_grad():
        prep = _Prepared(primals, tuple(range(len(primals))), connected, "vjp")
        out, aux = _split_aux(func(*prep.args), has_aux, "vjp")
    out_leaves, out_def = _check_outputs(out, "vjp")
    fn = _VjpFn(out_leaves, out_def, prep, connected)
    value = _maybe_detach(out, connected)
    if has_aux:
        return value, fn, _maybe_detach(aux, connected)
    return value, fn


class _FlatFunction:
    """``func`` as a function of a flat tuple of differentiable leaves, returning a flat tuple of outputs.

    Records the output structure and the aux value of the last call.
    """

    __slots__ = ("func", "args", "kwargs", "prep_template", "argnums", "has_aux", "fname", "out_def", "aux")

    def __init__(self, func: Callable, args: tuple, kwargs: dict, prep: _Prepared, argnums: tuple,
                 has_aux: bool, fname: str) -> None:
        self.func, self.args, self.kwargs = func, args, kwargs
        self.prep_template, self.argnums = prep, argnums
        self.has_aux, self.fname = has_aux, fname
        self.out_def = None
        self.aux = None

    def __call__(self, *leaves: Tensor) -> tuple:
        new_args = list(self.args)
        for a, tree in zip(self.argnums, self.prep_template.restructure(list(leaves))):
            new_args[a] = tree
        out, self.aux = _split_aux(self.func(*new_args, **self.kwargs), self.has_aux, self.fname)
        out_leaves, self.out_def = _check_outputs(out, self.fname, "f(*args)")
        if self.fname in _REAL_JACOBIANS:
            _check_real(out_leaves, self.fname, "outputs")
        return tuple(out_leaves)


def jvp(func: Callable, primals: Any, tangents: Any, *, strict: bool = False, has_aux: bool = False) -> tuple:
    """``(func(*primals), J @ tangents)``: the Jacobian-vector product (``torch.func.jvp``).

    ``primals`` and ``tangents`` are tuples with the same structure (each tangent with its
    primal's shape and dtype); the result has the structure of the output. Forward mode:
    one pass of ``func`` on dual tensors. Calls nest (``jvp`` of ``jvp``, ``jvp`` of
    ``grad``), and ``vmap`` over it is ``jacfwd``.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.func import jvp
        >>> out, t = jvp(lambda x: x * x, (fg.tensor([1.0, 2.0]),), (fg.tensor([1.0, 1.0]),))
        >>> t.tolist()
        [2.0, 4.0]
    """
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise TransformTypeError("jvp(f, primals, tangents): Expected primals and tangents to be tuples, got "
                                 f"{type(primals).__name__} and {type(tangents).__name__}. E.g. jvp(f, (x,), (t,)).")
    p_leaves, p_def = tensor_leaves(primals)
    t_leaves, t_def = tensor_leaves(tangents)
    if not same_structure(p_def, t_def):
        raise TransformValueError(
            f"jvp(f, primals, tangents): Expected primals and tangents to have the same structure, "
            f"got {p_def} and {t_def}.")
    for i, (p, t) in enumerate(zip(p_leaves, t_leaves)):
        _check_diff_leaf(p, i, "jvp")
        if not isinstance(t, Tensor) or t.shape != p.shape or t.dtype != p.dtype:
            got = f"{t.shape} {t.dtype}" if isinstance(t, Tensor) else type(t).__name__
            raise TransformValueError(
                f"jvp(f, primals, tangents): tangent {i} must be a Tensor of shape {p.shape} and dtype "
                f"{p.dtype} (its primal's), got {got}.")
    connected = _connected(primals, {})
    with forward_ad.dual_level():
        # Not connected: no primal records a node here anyway; detaching would also stop JAX's own
        # derivatives when traced (interop.to_jax of a function computing a jvp).
        duals = [forward_ad.make_dual(p, t) for p, t in zip(p_leaves, t_leaves)]
        out, aux = _split_aux(func(*unflatten(p_def, duals)), has_aux, "jvp")
        out_leaves, out_def = _check_outputs(out, "jvp(f, primals, tangents)")
        values, tangents_out = [], []
        for o in out_leaves:
            primal, tangent = forward_ad.unpack_dual(o)
            values.append(primal)
            tangents_out.append(_zeros_like(o) if tangent is None else tangent)
    value = _maybe_detach(unflatten(out_def, values), connected)
    result = _maybe_detach(unflatten(out_def, tangents_out), connected)
    if has_aux:
        return value, result, _maybe_detach(aux, connected)
    return value, result


def linearize(func: Callable, *primals: Any) -> tuple:
    """``(func(*primals), jvp_fn)`` with ``jvp_fn(*tangents) = J @ tangents`` at ``primals`` (``torch.func.linearize``).

    Each call of ``jvp_fn`` is one forward-mode pass (:func:`jvp`); wrap it in ``fg.compile`` or
    ``fg.lazy()`` to replay it as one compiled program.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.func import linearize
        >>> out, jvp_fn = linearize(fg.sin, fg.tensor([0.0, 1.0]))
        >>> [round(v, 4) for v in jvp_fn(fg.tensor([1.0, 1.0])).tolist()]
        [1.0, 0.5403]
    """
    if not primals:
        raise ValueError("linearize(f, *primals): at least one primal is needed.")
    value = jvp(func, primals, tuple(_tree_zeros(p) for p in primals))[0]
    return value, _Linearized(func, primals)


class _Linearized:
    """The ``jvp_fn`` of :func:`linearize`: tangents shaped like the primals -> the output's tangent."""

    __slots__ = ("func", "primals")

    def __init__(self, func: Callable, primals: tuple) -> None:
        self.func, self.primals = func, primals

    def __call__(self, *tangents: Any) -> Any:
        if len(tangents) != len(self.primals):
            raise TransformValueError(
                f"linearize's jvp_fn: expected {len(self.primals)} tangents (one per primal), got "
                f"{len(tangents)}.")
        return jvp(self.func, self.primals, tangents)[1]


def _tree_zeros(tree: Any) -> Any:
    leaves, treedef = tensor_leaves(tree)
    return unflatten(treedef, [_zeros_like(t) if isinstance(t, Tensor) else t for t in leaves])


# -- Jacobians and Hessians -----------------------------------------------------------------------------
#: The transforms that, as torch.func's, take real inputs and outputs only: a Jacobian of complex numbers needs a
#: convention (holomorphic or not) that PyTorch does not pick, so it refuses them rather than drop a part.
_REAL_JACOBIANS = ("jacrev", "jacfwd")


def _check_real(leaves: Sequence[Tensor], fname: str, what: str) -> None:
    i = _functional.first_complex(leaves)
    if i is not None:
        raise RuntimeError(
            f"{fname}: Expected all {what} to be real but received complex tensor at flattened {what[:-1]} idx: {i}. "
            "Work with fg.view_as_real(...) of it (its real and imaginary parts) instead; fg.func.grad and vjp take "
            "complex inputs (PyTorch's convention: dL/dx + i dL/dy).")


def _jacobian_impl(func: Callable, argnums: Argnums, has_aux: bool, fname: str, args: tuple, kwargs: dict) -> Any:
    nums = _normalize_argnums(argnums, len(args), f"{fname}(f)(*args)")
    connected = _connected(args, kwargs)
    prep = _Prepared(args, nums, False, fname)
    _check_real(prep.leaves, fname, "inputs")
    flat_fn = _FlatFunction(func, args, kwargs, prep, nums, has_aux, fname)
    originals = []
    for a in nums:
        originals.extend(tensor_leaves(args[a])[0])
    jac = _functional.jacobian(flat_fn, tuple(originals), create_graph=connected, vectorize=not connected)
    per_output = []
    for row in jac:
        trees = prep.restructure(list(row))
        per_output.append(trees[0] if isinstance(argnums, int) else tuple(trees))
    result = unflatten(flat_fn.out_def, per_output)
    if has_aux:
        return result, _maybe_detach(flat_fn.aux, connected)
    return result


def jacrev(func: Callable, argnums: Argnums = 0, *, has_aux: bool = False, chunk_size: Any = None) -> Callable:
    """The Jacobian of ``func`` by reverse mode (``torch.func.jacrev``).

    For output leaf ``o`` and input leaf ``x`` the block has shape
    ``o.shape + x.shape``; the result has the output's structure, each leaf
    holding the argnums' structure (a tuple for tuple ``argnums``). All rows come
    from one batched backward pass (``fg.grad(..., is_grads_batched=True)``) when
    no input is on an enclosing graph. ``chunk_size`` is accepted for torch's
    signature and ignored.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.func import jacrev
        >>> jacrev(lambda x: x ** 2)(fg.tensor([1.0, 3.0])).tolist()
        [[2.0, 0.0], [0.0, 6.0]]
    """
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return _jacobian_impl(func, argnums, has_aux, "jacrev", args, kwargs)

    return wrapper


def jacfwd(func: Callable, argnums: Argnums = 0, has_aux: bool = False, *, randomness: str = "error") -> Callable:
    """The Jacobian of ``func`` by forward mode (``torch.func.jacfwd``): ``vmap`` of :func:`jvp` over the
    basis of the inputs, one batched forward pass (the cheap direction for few inputs and many outputs).

    The result has :func:`jacrev`'s structure (block ``o.shape + x.shape`` per output leaf ``o`` and input
    leaf ``x``). ``randomness`` is ``vmap``'s, for random ops inside ``func``.

    Example:
        >>> import fgraph as fg
        >>> from fgraph.func import jacfwd
        >>> jacfwd(lambda x, y: x * y, argnums=1)(fg.tensor([1.0, 2.0]), fg.tensor([3.0, 4.0])).tolist()
        [[1.0, 0.0], [0.0, 2.0]]
    """
    if randomness not in ("error", "different", "same"):
        raise TransformValueError(f'jacfwd: randomness must be "error", "different" or "same", got {randomness!r}.')

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return _jacfwd_impl(func, argnums, has_aux, randomness, args, kwargs)

    return wrapper


def _jacfwd_impl(func: Callable, argnums: Argnums, has_aux: bool, randomness: str, args: tuple,
                 kwargs: dict) -> Any:
    from fgraph.func.vmap import vmap
    from fgraph.ops.movement import movedim
    from fgraph.ops.shape import reshape

    nums = _normalize_argnums(argnums, len(args), "jacfwd(f)(*args)")
    prep = _Prepared(args, nums, False, "jacfwd")
    _check_real(prep.leaves, "jacfwd", "inputs")
    originals = [leaf for a in nums for leaf in tensor_leaves(args[a])[0]]
    sizes = [t.numel() for t in originals]
    flat_fn = _FlatFunction(func, args, kwargs, prep, nums, has_aux, "jacfwd")
    push = _Pushforward(flat_fn, len(originals))
    in_dims = (0,) * len(originals) + (None,) * len(originals)
    tangents, aux = vmap(push, in_dims=in_dims, out_dims=(0, None), randomness=randomness)(
        *_basis(originals, sum(sizes)), *originals)
    per_output = []
    for t in tangents:  # (n, *out.shape) -> one block out.shape + x.shape per input leaf
        t = movedim(t, 0, -1)
        blocks, start = [], 0
        for x, size in zip(originals, sizes):
            blocks.append(reshape(t[..., start:start + size], t.shape[:-1] + x.shape))
            start += size
        trees = prep.restructure(blocks)
        per_output.append(trees[0] if isinstance(argnums, int) else tuple(trees))
    result = unflatten(flat_fn.out_def, per_output)
    return (result, aux) if has_aux else result


def _basis(leaves: list, n: int) -> list:
    """Per leaf, its slice of the identity's rows: tangents ``(n, *leaf.shape)`` (the basis of all inputs)."""
    tangents, start = [], 0
    for x in leaves:
        size = x.numel()
        eye = jnp.eye(n, size, k=-start, dtype=x.dtype)
        tangents.append(_wrap(eye.reshape((n,) + x.shape)))
        start += size
    return tangents


class _Pushforward:
    """One sample of ``jacfwd``'s ``vmap``: ``(*tangents, *primals) -> (tangents of the outputs, aux)``."""

    __slots__ = ("flat_fn", "n")

    def __init__(self, flat_fn: "_FlatFunction", n: int) -> None:
        self.flat_fn, self.n = flat_fn, n

    def __call__(self, *args: Tensor) -> tuple:
        tangents, primals = args[: self.n], args[self.n:]
        _, out = jvp(self.flat_fn, primals, tangents)
        return out, self.flat_fn.aux


def hessian(func: Callable, argnums: Argnums = 0) -> Callable:
    """The Hessian of a scalar function: ``jacfwd(jacrev(func, argnums), argnums)`` (``torch.func.hessian``).

    Example:
        >>> import fgraph as fg
        >>> from fgraph.func import hessian
        >>> hessian(lambda x: (x[0] * x[1]) ** 2)(fg.tensor([1.0, 2.0])).tolist()
        [[8.0, 8.0], [8.0, 2.0]]
    """
    return jacfwd(jacrev(func, argnums), argnums)
