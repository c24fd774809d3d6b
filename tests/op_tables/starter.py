"""The starter ops (the foundation's op set) against pure JAX, and PyTorch as an optional oracle.

Each entry names an op, its fgraph call, a pure-JAX reference, the number of tensor
inputs, a strategy of *cases* (input shapes from a small fixed pool -- broadcasting
pairs, size-1 and size-0 dimensions -- plus static parameters and non-differentiable
constants such as index arrays or ``where`` conditions), and a value *domain* that
keeps inputs away from points where the op is not differentiable or not defined.
No op here is first-order only.
"""
from __future__ import annotations

from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fgraph as fg
from op_harness import Case, GRID_A, GRID_B, NONZERO, OpEntry, POSITIVE, REAL, cases, shape_cases, torch

# -- shape pools ----------------------------------------------------------------------------------
UNARY = [(2, 3), (), (3, 0)]
UNARY_SHAPES = shape_cases([(s,) for s in UNARY])
BINARY_SHAPES = shape_cases(
    [
        ((2, 3), (2, 3)),
        ((2, 1), (1, 3)),
        ((2, 1, 3), (4, 1)),  # rank broadcasting on one side, size-1 stretching on both
        ((), (2, 3)),
        ((2, 3), ()),
        ((0, 3), (1, 3)),
    ]
)
#: For ops swept over a static parameter (exponent, bounds...): their shape handling is
#: the elementwise machinery covered by the other entries, so one shape per parameter.
PARAM_SHAPES = [((2, 3),)]


def _with(params_list: Sequence[dict], shapes: Sequence[tuple]) -> st.SearchStrategy[Case]:
    return cases(*(Case(s, p) for p in params_list for s in shapes))


# -- ops with a Python-scalar operand ------------------------------------------------------------
SCALAR_OPS = {
    "add": (fg.add, jnp.add),
    "sub": (fg.sub, jnp.subtract),
    "mul": (fg.mul, jnp.multiply),
    "div": (fg.div, jnp.true_divide),
    "pow": (fg.pow, jnp.power),
}


def _scalar_fg(x, *, op, scalar, left):
    f = SCALAR_OPS[op][0]
    return f(scalar, x) if left else f(x, scalar)


def _scalar_ref(x, *, op, scalar, left):
    f = SCALAR_OPS[op][1]
    return f(scalar, x) if left else f(x, scalar)


SCALAR_PARAMS = [
    dict(op="div", scalar=1.5, left=True),  # 1.5 / x
    dict(op="add", scalar=1.5, left=False),
    dict(op="sub", scalar=2.0, left=True),
    dict(op="mul", scalar=-1.5, left=True),
    dict(op="div", scalar=2.0, left=False),
    dict(op="pow", scalar=0.5, left=True),  # 0.5 ** x: tensor exponent, scalar base
]


# -- where -----------------------------------------------------------------------------------------
@st.composite
def where_cases(draw):
    cond_shape, x_shape, y_shape = draw(
        st.sampled_from(
            [
                ((2, 3), (2, 3), (2, 3)),
                ((2, 3), (3,), (2, 1)),
                ((2, 1), (1, 3), ()),
                ((0, 3), (0, 3), (3,)),
            ]
        )
    )
    cond = draw(hnp.arrays(np.bool_, cond_shape))
    return Case((x_shape, y_shape), {}, (cond,))


def _where_fg(x, y, cond):
    return fg.where(cond, x, y)


def _where_ref(x, y, cond):
    return jnp.where(cond, x, y)


# -- reductions ------------------------------------------------------------------------------------
REDUCE_LIST = [
    Case((shape,), dict(dim=dim, keepdim=keepdim))
    for shape, dim, keepdim in [
        ((2, 3, 4), None, False),
        ((2, 3, 4), 1, False),
        ((2, 3, 4), 1, True),
        ((2, 3, 4), (0, 2), True),
        ((2, 3, 4), (-1, 0), False),
        ((3,), -1, False),
        ((), None, True),
        ((2, 0, 3), 1, False),  # mean over an empty dimension: nan
        ((2, 0, 3), None, True),
        ((2, 0, 3), 0, False),
    ]
]
REDUCE_CASES = cases(*REDUCE_LIST)


# -- shape ops ---------------------------------------------------------------------------------------
def _expand_ref(x, *, sizes):
    lead = len(sizes) - x.ndim
    target = tuple(x.shape[i - lead] if s == -1 else s for i, s in enumerate(sizes))
    return jnp.broadcast_to(x, target)


def _squeeze_ref(x, *, dim):
    wanted = range(x.ndim) if dim is None else ((dim,) if isinstance(dim, int) else dim)
    axes = tuple(sorted({d % x.ndim for d in wanted if x.shape[d] == 1}))
    return jnp.squeeze(x, axis=axes) if axes else x


def _permute_ref(x, *, dims):
    return jnp.transpose(x, tuple(d % x.ndim for d in dims))


# -- indexing ----------------------------------------------------------------------------------------
A = "array"  # placeholder for the next index array in an index template

BASIC_INDEX_CASES = cases(
    *(
        Case((shape,), dict(index=index))
        for shape, index in [
            ((3, 4), (1,)),
            ((3, 4), (slice(None, None, 2), 1)),
            ((2, 3, 4), (Ellipsis, 0)),
            ((3, 4), (-1, None, slice(None, None, -1))),
            ((3, 4), (slice(1, 1),)),  # empty
            ((2, 3, 4), (0, Ellipsis, slice(1, 3))),
            ((2, 3, 4), (slice(None), None, 2)),
            ((5,), (slice(-3, None),)),
        ]
    )
)


@st.composite
def array_index_cases(draw, kind: str):
    """Integer-array (``kind='int'``) or boolean-mask (``kind='bool'``) index templates."""
    if kind == "int":
        # (x shape, template, for each array: (its shape, the size of the dimension it indexes))
        templates = [
            ((5,), (A,), [((4,), 5)]),
            ((4, 3), (A,), [((2, 3), 4)]),
            ((4, 3), (slice(None), A), [((4,), 3)]),
            ((4, 3), (A, A), [((3,), 4), ((1,), 3)]),
            ((2, 4, 3), (A, slice(1, None), A), [((2,), 2), ((2,), 3)]),
            ((4, 3), (A, Ellipsis), [((0,), 4)]),
        ]
    else:
        # (x shape, template, for each mask: (its shape, how many elements it selects)); the
        # count is fixed per template so that the output shape, and the kernels, repeat.
        templates = [
            ((4, 3), (A,), [((4, 3), 5)]),
            ((4, 3), (slice(None), A), [((3,), 2)]),
            ((2, 3, 4), (1, A), [((3, 4), 7)]),
            ((4, 3), (A,), [((4,), 0)]),
        ]
    shape, template, array_specs = draw(st.sampled_from(templates))
    if kind == "int":
        consts = tuple(
            draw(hnp.arrays(np.int64, ishape, elements=st.integers(-size, size - 1))) for ishape, size in array_specs
        )
    else:
        consts = tuple(_mask(draw(st.permutations(range(int(np.prod(mshape))))), mshape, count)
                       for mshape, count in array_specs)
    return Case((shape,), dict(template=template), consts)


def _mask(order: Sequence[int], shape: tuple, count: int) -> np.ndarray:
    mask = np.zeros(int(np.prod(shape)), np.bool_)
    mask[list(order[:count])] = True
    return mask.reshape(shape)


def _fill(template: tuple, arrays: Sequence[Any]) -> tuple:
    it = iter(arrays)
    return tuple(next(it) if t is A else t for t in template)


def _index_fg(x, *arrays, template):
    return x[_fill(template, arrays)]


def _index_ref(x, *arrays, template):
    return x[_fill(template, arrays)]


# -- joining -----------------------------------------------------------------------------------------
CAT_CASES = cases(
    Case(((2, 3), (1, 3)), dict(dim=0)),
    Case(((2, 3), (2, 0), (2, 2)), dict(dim=-1)),
    Case(((3,), (2,)), dict(dim=0)),
    Case(((0, 3), (2, 3)), dict(dim=0)),
    Case(((2, 3), (2, 3), (1, 3)), dict(dim=0)),
)
STACK_CASES = cases(
    Case(((2, 3), (2, 3)), dict(dim=0)),
    Case(((2, 3), (2, 3)), dict(dim=2)),
    Case(((3,), (3,), (3,)), dict(dim=1)),
    Case(((), ()), dict(dim=0)),
    Case(((0, 2), (0, 2)), dict(dim=1)),
)


# -- the table ------------------------------------------------------------------------------------------
def _e(name, fg_fn, ref_fn, arity, case_strategy, domain, max_examples=None, static_consts=False) -> OpEntry:
    return OpEntry(name, fg_fn, ref_fn, arity, case_strategy, domain, max_examples, static_consts)


TABLE: list[OpEntry] = [
    # elementwise arithmetic, with broadcasting
    _e("add", fg.add, jnp.add, 2, BINARY_SHAPES, REAL),
    _e("sub", fg.sub, jnp.subtract, 2, BINARY_SHAPES, REAL),
    _e("mul", fg.mul, jnp.multiply, 2, BINARY_SHAPES, REAL),
    _e("div", fg.div, jnp.true_divide, 2, BINARY_SHAPES, (REAL, NONZERO)),
    _e("neg", fg.neg, jnp.negative, 1, UNARY_SHAPES, REAL),
    _e("scalar_operand", _scalar_fg, _scalar_ref, 1, _with(SCALAR_PARAMS, PARAM_SHAPES), NONZERO),
    # powers
    _e("pow_int_exponent", lambda x, p: fg.pow(x, p), lambda x, p: jnp.power(x, p), 1,
       _with([dict(p=p) for p in (3, 2, -1, -2, 1, 0)], PARAM_SHAPES), NONZERO),
    _e("pow_float_exponent", lambda x, p: x ** p, lambda x, p: jnp.power(x, p), 1,
       _with([dict(p=p) for p in (0.5, 1.5, -0.5, 2.5)], PARAM_SHAPES), POSITIVE),
    _e("pow_tensor", fg.pow, jnp.power, 2, BINARY_SHAPES, (POSITIVE, REAL)),
    # unary functions
    _e("exp", fg.exp, jnp.exp, 1, UNARY_SHAPES, REAL),
    _e("log", fg.log, jnp.log, 1, UNARY_SHAPES, POSITIVE),
    _e("sin", fg.sin, jnp.sin, 1, UNARY_SHAPES, REAL),
    _e("cos", fg.cos, jnp.cos, 1, UNARY_SHAPES, REAL),
    _e("tanh", fg.tanh, jnp.tanh, 1, UNARY_SHAPES, REAL),
    _e("sigmoid", fg.sigmoid, jax.nn.sigmoid, 1, UNARY_SHAPES, REAL),
    _e("relu", fg.relu, jax.nn.relu, 1, UNARY_SHAPES, NONZERO),
    _e("sqrt", fg.sqrt, jnp.sqrt, 1, UNARY_SHAPES, POSITIVE),
    _e("abs", fg.abs, jnp.abs, 1, UNARY_SHAPES, NONZERO),
    # selections
    _e("maximum", fg.maximum, jnp.maximum, 2, BINARY_SHAPES, (GRID_A, GRID_B)),
    _e("minimum", fg.minimum, jnp.minimum, 2, BINARY_SHAPES, (GRID_B, GRID_A)),
    _e("where", _where_fg, _where_ref, 2, where_cases(), REAL),
    _e("clamp", lambda x, lo, hi: fg.clamp(x, lo, hi), lambda x, lo, hi: jnp.clip(x, lo, hi), 1,
       _with([dict(lo=-1.0, hi=1.0), dict(lo=-0.5, hi=None), dict(lo=None, hi=0.5), dict(lo=0.0, hi=0.5)],
             PARAM_SHAPES), GRID_B),
    # reductions
    _e("sum", lambda x, dim, keepdim: fg.sum(x, dim, keepdim),
       lambda x, dim, keepdim: jnp.sum(x, axis=dim, keepdims=keepdim), 1, REDUCE_CASES, REAL),
    _e("mean", lambda x, dim, keepdim: fg.mean(x, dim, keepdim),
       lambda x, dim, keepdim: jnp.mean(x, axis=dim, keepdims=keepdim), 1, REDUCE_CASES, REAL),
    _e("sum_method", lambda x, dim, keepdim: x.sum(dim, keepdim),
       lambda x, dim, keepdim: jnp.sum(x, axis=dim, keepdims=keepdim), 1,
       cases(*REDUCE_LIST[2:5]), REAL),
    # matrix products
    _e("matmul", fg.matmul, jnp.matmul, 2,
       shape_cases([
           ((2, 3), (3, 4)),
           ((3,), (3,)),
           ((2, 3), (2, 3, 4)),  # 2-D operand broadcast against a batch
           ((2, 1, 2, 3), (3, 3, 2)),  # batch dims broadcast on both sides
           ((3,), (2, 3, 4)),
           ((2, 4, 3), (3,)),
           ((2, 0), (0, 3)),  # empty contraction: zeros
       ]), REAL),
    # shape ops
    _e("reshape", lambda x, shape: fg.reshape(x, shape), lambda x, shape: jnp.reshape(x, shape), 1,
       cases(*(Case((s,), dict(shape=t)) for s, t in [
           ((2, 3), (3, 2)), ((2, 3), (-1,)), ((6,), (2, 1, 3)), ((), (1, 1)),
           ((2, 3, 2), (4, -1)), ((0, 3), (3, 0)),
       ])), REAL),
    _e("transpose", lambda x, d0, d1: fg.transpose(x, d0, d1), lambda x, d0, d1: jnp.swapaxes(x, d0, d1), 1,
       cases(*(Case((s,), dict(d0=a, d1=b)) for s, a, b in [
           ((2, 3), 0, 1), ((2, 3, 4), 0, 2), ((2, 3, 4), -1, 1), ((3,), 0, 0), ((2, 0, 3), 0, 1),
       ])), REAL),
    _e("permute", lambda x, dims: fg.permute(x, dims), _permute_ref, 1,
       cases(*(Case((s,), dict(dims=d)) for s, d in [
           ((2, 3, 4), (2, 0, 1)), ((2, 3), (1, 0)), ((2, 0, 3), (1, 2, 0)), ((2, 3, 4), (0, -1, 1)),
       ])), REAL),
    _e("expand", lambda x, sizes: fg.expand(x, sizes), _expand_ref, 1,
       cases(*(Case((s,), dict(sizes=t)) for s, t in [
           ((3, 1), (2, 3, 4)), ((1,), (3,)), ((), (2, 3)), ((3, 1), (-1, 4)), ((1, 3), (0, 3)),
       ])), REAL),
    _e("squeeze", lambda x, dim: fg.squeeze(x, dim), _squeeze_ref, 1,
       cases(*(Case((s,), dict(dim=d)) for s, d in [
           ((1, 3, 1), None), ((1, 3, 1), 0), ((1, 3, 1), (0, 2)), ((2, 3), 1), ((1,), None), ((1, 0), 0),
           ((2, 1, 3), -2),
       ])), REAL),
    _e("unsqueeze", lambda x, dim: fg.unsqueeze(x, dim), lambda x, dim: jnp.expand_dims(x, dim), 1,
       cases(*(Case((s,), dict(dim=d)) for s, d in [((2, 3), 0), ((2, 3), -1), ((2, 3), 1), ((), 0), ((0, 2), 2)])),
       REAL),
    # indexing
    _e("getitem_basic", lambda x, index: x[index], lambda x, index: x[index], 1, BASIC_INDEX_CASES, REAL),
    _e("getitem_int_array", _index_fg, _index_ref, 1, array_index_cases("int"), REAL),
    _e("getitem_bool_mask", _index_fg, _index_ref, 1, array_index_cases("bool"), REAL,
       max_examples=6, static_consts=True),
    # joining
    _e("cat", lambda *xs, dim: fg.cat(xs, dim), lambda *xs, dim: jnp.concatenate(xs, axis=dim), None,
       CAT_CASES, REAL),
    _e("stack", lambda *xs, dim: fg.stack(xs, dim), lambda *xs, dim: jnp.stack(xs, axis=dim), None,
       STACK_CASES, REAL),
]


# -- the PyTorch oracle ----------------------------------------------------------------------------------

_SCALAR_OPS = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "pow": "pow"}


def _scalar_operand(x, *, op, scalar, left):
    f = getattr(torch, _SCALAR_OPS[op])
    if left:  # torch.add(1.5, x) is not a signature; the operators are
        return {"add": lambda: scalar + x, "sub": lambda: scalar - x, "mul": lambda: scalar * x,
                "div": lambda: scalar / x, "pow": lambda: scalar ** x}[op]()
    return f(x, scalar)


def _getitem_basic(x, *, index):
    """``x[index]``; torch has no negative slice steps, so those dimensions are flipped first."""
    consumed = sum(1 for i in index if i is not None and i is not Ellipsis)
    dim, flips, fixed = 0, [], []
    for i in index:
        if i is Ellipsis:
            fixed.append(i)
            dim += x.ndim - consumed
            continue
        if i is None:
            fixed.append(i)
            continue
        if isinstance(i, slice) and i.step is not None and i.step < 0:
            n = x.shape[dim]
            picked = range(*i.indices(n))
            flips.append(dim)
            fixed.append(slice(n - 1 - picked[0], n - picked[-1], -i.step) if len(picked) else slice(0, 0))
        else:
            fixed.append(i)
        dim += 1
    if flips:
        x = torch.flip(x, flips)
    return x[tuple(fixed)]


def _getitem_arrays(x, *arrays, template):
    return x[_fill(template, arrays)]


def _squeeze(x, *, dim):
    return torch.squeeze(x) if dim is None else torch.squeeze(x, dim)


#: Entry name -> PyTorch call with the entry's ``fg_fn`` signature (tests/test_ops_against_torch.py).
TORCH = {
    "add": lambda a, b: torch.add(a, b),
    "sub": lambda a, b: torch.sub(a, b),
    "mul": lambda a, b: torch.mul(a, b),
    "div": lambda a, b: torch.div(a, b),
    "neg": lambda x: torch.neg(x),
    "scalar_operand": _scalar_operand,
    "pow_int_exponent": lambda x, p: torch.pow(x, p),
    "pow_float_exponent": lambda x, p: x ** p,
    "pow_tensor": lambda a, b: torch.pow(a, b),
    "exp": lambda x: torch.exp(x),
    "log": lambda x: torch.log(x),
    "sin": lambda x: torch.sin(x),
    "cos": lambda x: torch.cos(x),
    "tanh": lambda x: torch.tanh(x),
    "sigmoid": lambda x: torch.sigmoid(x),
    "relu": lambda x: torch.relu(x),
    "sqrt": lambda x: torch.sqrt(x),
    "abs": lambda x: torch.abs(x),
    "maximum": lambda a, b: torch.maximum(a, b),
    "minimum": lambda a, b: torch.minimum(a, b),
    "where": lambda x, y, cond: torch.where(cond, x, y),
    "clamp": lambda x, lo, hi: torch.clamp(x, lo, hi),
    "sum": lambda x, dim, keepdim: torch.sum(x, dim, keepdim),
    "mean": lambda x, dim, keepdim: torch.mean(x, dim, keepdim),
    "sum_method": lambda x, dim, keepdim: x.sum(dim, keepdim),
    "matmul": lambda a, b: torch.matmul(a, b),
    "reshape": lambda x, shape: torch.reshape(x, shape),
    "transpose": lambda x, d0, d1: torch.transpose(x, d0, d1),
    "permute": lambda x, dims: torch.permute(x, dims),
    "expand": lambda x, sizes: x.expand(sizes),
    "squeeze": _squeeze,
    "unsqueeze": lambda x, dim: torch.unsqueeze(x, dim),
    "getitem_basic": _getitem_basic,
    "getitem_int_array": _getitem_arrays,
    "getitem_bool_mask": _getitem_arrays,
    "cat": lambda *xs, dim: torch.cat(xs, dim),
    "stack": lambda *xs, dim: torch.stack(xs, dim),
}


#: Entries whose ops refuse complex inputs (an OpError); every other entry is also checked on complex ones.
REAL_ONLY = {
    "relu", "maximum", "minimum", "clamp"
}
