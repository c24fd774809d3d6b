"""Every starter op against a pure-JAX reference: forward, first and second derivatives.

One harness (:func:`test_op_against_jax`) drives one table (:data:`TABLE`). Each
entry names an op, its fgraph call, a pure-JAX reference, the number of tensor
inputs, a strategy of *cases* (input shapes from a small fixed pool -- broadcasting
pairs, size-1 and size-0 dimensions -- plus static parameters and non-differentiable
constants such as index arrays or ``where`` conditions), and a value *domain* that
keeps inputs away from points where the op is not differentiable or not defined.

Each case only draws shapes from fixed lists, so the JAX kernels compiled for one
example are reused by the next (every new shape compiles new kernels).
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fgraph as fg
from jax_oracle import TOLERANCES, check_against_jax


# -- value domains --------------------------------------------------------------------------
def _grid(offset: float) -> st.SearchStrategy[float]:
    """Values ``0.5 * k + offset`` jittered by at most 0.1: two grids with offsets 0 and 0.25
    never come closer than 0.05, and grid 0.25 stays 0.15 away from every multiple of 0.5."""
    return st.builds(lambda k, e: 0.5 * k + offset + e, st.integers(-4, 4), st.floats(-0.1, 0.1))


REAL = st.floats(-2.0, 2.0)
POSITIVE = st.floats(0.5, 2.0)
NONZERO = st.one_of(st.floats(0.25, 2.0), st.floats(-2.0, -0.25))  # abs, relu, divisors
GRID_A = _grid(0.0)  # maximum/minimum: first operand...
GRID_B = _grid(0.25)  # ...second operand (never ties); clamp input (bounds are multiples of 0.5)


class Case(NamedTuple):
    shapes: tuple  # one shape per differentiable tensor input
    params: dict = {}  # static keyword arguments for both implementations
    consts: tuple = ()  # non-differentiable array arguments (NumPy), passed after the inputs


class OpEntry(NamedTuple):
    name: str
    fg_fn: Callable[..., Any]  # fg_fn(*tensors, *consts, **params)
    ref_fn: Callable[..., Any]  # ref_fn(*arrays, *consts, **params), pure jax.numpy
    arity: Optional[int]  # number of differentiable tensor inputs (None: variadic)
    cases: st.SearchStrategy[Case]
    domain: Any  # elements strategy, or a tuple of them (one per input)
    max_examples: Optional[int] = None
    static_consts: bool = False  # consts must be concrete in the reference (boolean masks)


def cases(*items: Case) -> st.SearchStrategy[Case]:
    return st.sampled_from(items)


def shape_cases(shapes: Sequence[tuple], **params: Any) -> st.SearchStrategy[Case]:
    return cases(*(Case(s, params) for s in shapes))


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

DTYPES = [np.dtype("float64"), np.dtype("float32")]

#: Examples per listed case: the case fixes the shapes, hypothesis varies the values.
EXAMPLES_PER_CASE = {np.dtype("float64"): 3, np.dtype("float32"): 2}


def listed_cases(entry: OpEntry) -> list[Optional[Case]]:
    """The entry's cases when they are a fixed list (``cases(...)``), else ``[None]`` (drawn)."""
    elements = getattr(entry.cases, "elements", None)  # the items of a st.sampled_from
    return list(elements) if elements is not None else [None]


def _runs() -> list:
    """(entry, case, dtype) to run: float64 runs every listed case, so CI covers each shape
    and parameter deterministically; float32 re-checks the same rules at a loose tolerance
    (dtype propagation, rounding) on the first case only -- listed first on purpose, a
    typical non-degenerate one -- since every new shape and dtype compiles new kernels."""
    runs = []
    for entry in TABLE:
        listed = listed_cases(entry)
        for dtype in DTYPES:
            chosen = listed if dtype == np.float64 else listed[:1]
            for i, case in enumerate(chosen):
                tag = "drawn" if case is None else str(i)
                runs.append(pytest.param(entry, case, dtype, id=f"{entry.name}-{tag}-{dtype.name}"))
    return runs


def _max_examples(entry: OpEntry, case: Optional[Case], dtype: np.dtype) -> int:
    n = settings.default.max_examples
    if entry.max_examples is not None:
        n = min(n, entry.max_examples)
    if case is not None or dtype == np.float32:
        n = min(n, EXAMPLES_PER_CASE[dtype])
    return n


def _draw_inputs(data, entry: OpEntry, case: Case, dtype: np.dtype) -> list[np.ndarray]:
    if entry.arity is not None:
        assert len(case.shapes) == entry.arity, f"{entry.name}: case {case} does not have {entry.arity} inputs"
    domains = entry.domain if isinstance(entry.domain, tuple) else (entry.domain,) * len(case.shapes)
    return [
        data.draw(hnp.arrays(np.float64, shape, elements=dom), label=f"x{i}").astype(dtype)
        for i, (shape, dom) in enumerate(zip(case.shapes, domains))
    ]


def check_entry(data, entry: OpEntry, dtype: np.dtype, case: Optional[Case] = None) -> None:
    """Check ``case`` of ``entry`` (drawn when ``None``) on drawn values against the JAX reference."""
    if case is None:
        case = data.draw(entry.cases, label="case")
    arrays = _draw_inputs(data, entry, case, dtype)
    fg_consts = [fg.tensor(c, dtype=c.dtype) for c in case.consts]
    params = case.params
    key = (entry.name, repr(params))
    if entry.static_consts:  # e.g. boolean masks: the output shape depends on their values
        key += tuple((c.shape, c.tobytes()) for c in case.consts)
        ref_fn, extra = (lambda *xs: entry.ref_fn(*xs, *case.consts, **params)), ()
    else:
        ref_fn, extra = (lambda *xs_and_consts: entry.ref_fn(*xs_and_consts, **params)), case.consts
    check_against_jax(
        lambda *xs: entry.fg_fn(*xs, *fg_consts, **params),
        ref_fn,
        arrays,
        TOLERANCES[dtype],
        extra=extra,
        jit_key=key,
    )


@pytest.mark.parametrize("entry,case,dtype", _runs())
def test_op_against_jax(entry: OpEntry, case: Optional[Case], dtype: np.dtype) -> None:
    @settings(max_examples=_max_examples(entry, case, dtype))
    @given(data=st.data())
    def check(data):
        check_entry(data, entry, dtype, case)

    check()


def test_table_covers_every_starter_op() -> None:
    """The table names every starter op (so a new op cannot silently go untested)."""
    covered = {e.name for e in TABLE}
    starter = {
        "add", "sub", "mul", "div", "neg", "exp", "log", "sin", "cos", "tanh", "sigmoid", "relu", "sqrt",
        "abs", "maximum", "minimum", "where", "clamp", "sum", "mean", "matmul", "reshape", "transpose",
        "permute", "expand", "squeeze", "unsqueeze", "cat", "stack",
    }
    assert starter <= covered, f"untested ops: {sorted(starter - covered)}"
    assert {"pow_int_exponent", "pow_float_exponent", "pow_tensor", "getitem_basic", "getitem_int_array"} <= covered


pytestmark = pytest.mark.usefixtures("node_by_node")
