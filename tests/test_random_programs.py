"""Random programs of starter ops: fgraph's first and second derivatives against JAX.

Hypothesis builds a *program*: a few inputs of broadcast-compatible shapes, then a
list of instructions, each applying one op to values already in the pool (inputs or
earlier results, drawn uniformly, so values are shared by several consumers). The
program's output is every value no instruction consumed, flattened and
concatenated. The same instruction list is interpreted twice -- once over fgraph,
once over ``jax.numpy`` -- and :func:`jax_oracle.check_against_jax` compares the
forward values, ``fg.grad`` against ``jax.grad``, and the gradient of a random
projection of the ``create_graph=True`` gradients against JAX's Hessian-vector
product.

Values stay finite and the ops differentiable: every value carries a bound on its
magnitude, instructions that would exceed :data:`MAX_BOUND` are not offered, and
``log``/``sqrt``/division only ever see ``x * conj(x) + 1``-style positive values.

Mixed programs (:func:`test_random_mixed_program_against_jax`) also make complex values
from the real inputs (``complex``, a polar-style rotation) and read real ones back
(``real``, ``imag``, ``abs``): real parameters, complex intermediates, a real loss, as in a
model with a complex rotation. Every op marked ``"any"`` takes complex values too;
complex sinks enter the output as their real and imaginary parts.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fgraph as fg
from jax_oracle import TOLERANCES, check_against_jax

INPUT_SHAPES = [(2, 3), (3,), (2, 1), ()]
INPUT_BOUND = 1.5
MAX_BOUND = 8.0
MAX_STEPS = 8


# -- the two backends: the same vocabulary over fgraph and over jax.numpy ------------------------
# Values can hit non-differentiable points exactly (``x - x``, a clamp of a clamp), so
# the reference follows PyTorch's (and fgraph's) conventions there, where JAX's differ.
def _ref_clamp(x, lo, hi):
    # The gradient passes where lo <= x <= hi, bounds included (JAX's clip gives 0.5 there).
    return jnp.where((x >= lo) & (x <= hi), x, jnp.clip(x, lo, hi))


def _ref_abs(x):
    # d|x|/dx = sign(x), so 0 at x == 0 (JAX's abs gives 1 there).
    return x * jnp.sign(x)


def _ref_cabs(z):
    # PyTorch's |z| at z == 0: first and second derivatives 0 (JAX's abs gives a nonzero Hessian there).
    zero = z == 0
    return jnp.where(zero, 0.0, jnp.abs(jnp.where(zero, 1.0, z)))


def _ref_complex(re, im):
    return jax.lax.complex(*jnp.broadcast_arrays(re, im))


class Backend(NamedTuple):
    add: Callable
    sub: Callable
    mul: Callable
    div: Callable
    neg: Callable
    pow: Callable
    exp: Callable
    log: Callable
    sin: Callable
    cos: Callable
    tanh: Callable
    sigmoid: Callable
    relu: Callable
    sqrt: Callable
    abs: Callable
    maximum: Callable
    minimum: Callable
    where: Callable
    gt: Callable
    clamp: Callable
    sum: Callable
    mean: Callable
    matmul: Callable
    reshape: Callable
    transpose: Callable
    permute: Callable
    expand: Callable
    squeeze: Callable
    unsqueeze: Callable
    cat: Callable
    stack: Callable
    index_array: Callable  # int tuple -> something usable inside an index
    complex: Callable  # (re, im) -> re + i im, broadcasting
    real: Callable
    imag: Callable
    conj: Callable  # the identity on real values
    cabs: Callable  # |z| of a complex value


FG = Backend(
    add=fg.add, sub=fg.sub, mul=fg.mul, div=fg.div, neg=fg.neg, pow=fg.pow, exp=fg.exp, log=fg.log,
    sin=fg.sin, cos=fg.cos, tanh=fg.tanh, sigmoid=fg.sigmoid, relu=fg.relu, sqrt=fg.sqrt, abs=fg.abs,
    maximum=fg.maximum, minimum=fg.minimum, where=fg.where, gt=fg.gt, clamp=fg.clamp,
    sum=lambda x, dim, keepdim: x.sum(dim, keepdim),
    mean=lambda x, dim, keepdim: fg.mean(x, dim, keepdim),
    matmul=lambda a, b: a @ b,
    reshape=fg.reshape, transpose=fg.transpose, permute=fg.permute, expand=fg.expand,
    squeeze=fg.squeeze, unsqueeze=fg.unsqueeze, cat=fg.cat, stack=fg.stack,
    index_array=lambda ints: fg.tensor(np.asarray(ints, np.int64)),
    complex=fg.complex, real=fg.real, imag=fg.imag, conj=fg.conj, cabs=fg.abs,
)

JAX = Backend(
    add=jnp.add, sub=jnp.subtract, mul=jnp.multiply, div=jnp.true_divide, neg=jnp.negative, pow=jnp.power,
    exp=jnp.exp, log=jnp.log, sin=jnp.sin, cos=jnp.cos, tanh=jnp.tanh, sigmoid=jax.nn.sigmoid,
    relu=jax.nn.relu, sqrt=jnp.sqrt, abs=_ref_abs, maximum=jnp.maximum, minimum=jnp.minimum,
    where=jnp.where, gt=jnp.greater, clamp=_ref_clamp,
    sum=lambda x, dim, keepdim: jnp.sum(x, axis=dim, keepdims=keepdim),
    mean=lambda x, dim, keepdim: jnp.mean(x, axis=dim, keepdims=keepdim),
    matmul=jnp.matmul, reshape=jnp.reshape, transpose=jnp.swapaxes, permute=jnp.transpose,
    expand=jnp.broadcast_to, squeeze=jnp.squeeze, unsqueeze=jnp.expand_dims,
    cat=lambda xs, dim: jnp.concatenate(xs, axis=dim),
    stack=lambda xs, dim: jnp.stack(xs, axis=dim),
    index_array=lambda ints: jnp.asarray(ints, jnp.int64),
    complex=_ref_complex, real=jnp.real, imag=jnp.imag, conj=jnp.conj, cabs=_ref_cabs,
)


# -- instructions --------------------------------------------------------------------------------------
# Each op: arity, whether it applies to given shapes, the output shape and bound, and how
# to run it on a backend. Static parameters are drawn by ``draw_params``.
class Op(NamedTuple):
    arity: int
    applies: Callable[[Sequence[tuple]], bool]
    out: Callable[[Sequence[tuple], Sequence[float], dict], tuple]  # -> (shape, bound)
    run: Callable[..., Any]  # run(B, *values, **params)
    draw_params: Callable[..., dict] = lambda draw, shapes: {}
    #: "real": real arguments only; "any": complex ones too (complex out if one is); "complex": complex
    #: arguments only; "to_complex": real arguments, a complex result; "from_complex": complex arguments,
    #: a real result.
    kinds: str = "real"


def _complex_ok(op: Op) -> Op:
    """``op`` for complex values too: the same math, holomorphic or linear."""
    return op._replace(kinds="any")


def _any(shapes):
    return True


def _broadcasts(shapes):
    try:
        np.broadcast_shapes(*shapes)
        return True
    except ValueError:
        return False


def _bshape(shapes):
    return tuple(np.broadcast_shapes(*shapes))


def _unary(run, bound):
    return Op(1, _any, lambda s, b, p: (s[0], bound(b[0])), run)


def _binary(run, bound):
    return Op(2, _broadcasts, lambda s, b, p: (_bshape(s), bound(*b)), run)


def _matmul_ok(shapes):
    a, b = shapes
    if not a or not b:
        return False
    try:
        np.matmul(np.zeros(a), np.zeros(b))
        return True
    except ValueError:
        return False


def _matmul_out(shapes, bounds, params):
    a, b = shapes
    return np.matmul(np.zeros(a), np.zeros(b)).shape, bounds[0] * bounds[1] * a[-1]


def _reduce_params(draw, shapes):
    nd = len(shapes[0])
    dims = [None] + list(range(nd)) + ([(0, nd - 1)] if nd >= 2 else [])
    return dict(dim=draw(st.sampled_from(dims)), keepdim=draw(st.booleans()))


def _reduced(shapes, bounds, params, scale):
    shape, dim, keepdim = shapes[0], params["dim"], params["keepdim"]
    dims = set(range(len(shape))) if dim is None else ({dim} if isinstance(dim, int) else set(dim))
    out = tuple(1 if i in dims else s for i, s in enumerate(shape) if keepdim or i not in dims)
    count = int(np.prod([shape[i] for i in dims])) if scale else 1
    return out, bounds[0] * max(count, 1)


def _index_templates(shape):
    """Index tuples valid for ``shape`` (int arrays as tuples of ints, wrapped at run time)."""
    out = []
    if shape and shape[0] > 0:
        n = shape[0]
        out += [(0,), (slice(None, None, -1),), (("ints", (n - 1, 0, -1, 0)),)]
    if len(shape) >= 2 and shape[-1] > 1:
        out += [(Ellipsis, slice(1, None))]
    if len(shape) >= 2 and shape[1] > 1:
        out += [(slice(None), None, ("ints", (1, 1)))]
    return out


def _run_index(B, x, index):
    return x[tuple(B.index_array(i[1]) if isinstance(i, tuple) else i for i in index)]


def _index_out(shapes, bounds, params):
    x = np.zeros(shapes[0])
    index = tuple(np.asarray(i[1]) if isinstance(i, tuple) else i for i in params["index"])
    return x[index].shape, bounds[0]


def _cat_ok(shapes):
    a, b = shapes
    return len(a) >= 1 and len(a) == len(b) and a[1:] == b[1:]


def _positive(B, a, shift):
    """``a * conj(a) + shift``: positive, for complex ``a`` too (a complex dtype with a zero imaginary part)."""
    return B.add(B.mul(a, B.conj(a)), shift)


OPS: dict[str, Op] = {
    # elementwise, with broadcasting
    "add": _complex_ok(_binary(lambda B, a, b: B.add(a, b), lambda x, y: x + y)),
    "sub": _complex_ok(_binary(lambda B, a, b: B.sub(a, b), lambda x, y: x + y)),
    "mul": _complex_ok(_binary(lambda B, a, b: B.mul(a, b), lambda x, y: x * y)),
    "div": _complex_ok(_binary(lambda B, a, b: B.div(a, _positive(B, b, 1.0)), lambda x, y: x)),
    "maximum": _binary(lambda B, a, b: B.maximum(a, b), max),
    "minimum": _binary(lambda B, a, b: B.minimum(a, b), max),
    "where": _binary(lambda B, a, b: B.where(B.gt(a, b), B.sin(a), b), max),
    "pow_tensor": _binary(lambda B, a, b: B.pow(_positive(B, a, 1.0), B.sin(b)), lambda x, y: x * x + 1),
    "neg": _complex_ok(_unary(lambda B, a: B.neg(a), lambda x: x)),
    "exp": Op(1, _any, lambda s, b, p: (s[0], float(np.exp(b[0]))), lambda B, a: B.exp(a), kinds="any"),
    "log": _complex_ok(_unary(lambda B, a: B.log(_positive(B, a, 1.0)), lambda x: np.log1p(x * x))),
    "sqrt": _complex_ok(_unary(lambda B, a: B.sqrt(_positive(B, a, 0.5)), lambda x: np.sqrt(x * x + 0.5))),
    "sin": _unary(lambda B, a: B.sin(a), lambda x: 1.0),
    "cos": _unary(lambda B, a: B.cos(a), lambda x: 1.0),
    # |sin z|, |cos z| <= cosh |z| for complex z
    "sin_complex": _unary(lambda B, a: B.sin(a), lambda x: float(np.cosh(x)))._replace(kinds="complex"),
    "cos_complex": _unary(lambda B, a: B.cos(a), lambda x: float(np.cosh(x)))._replace(kinds="complex"),
    "tanh": _unary(lambda B, a: B.tanh(a), lambda x: 1.0),
    "sigmoid": _unary(lambda B, a: B.sigmoid(a), lambda x: 1.0),
    "relu": _unary(lambda B, a: B.relu(a), lambda x: x),
    "abs": _unary(lambda B, a: B.abs(a), lambda x: x),
    "square": _complex_ok(_unary(lambda B, a: B.pow(a, 2), lambda x: x * x)),
    "cube": _complex_ok(_unary(lambda B, a: a ** 3, lambda x: x ** 3)),
    "rdiv": _complex_ok(_unary(lambda B, a: 1.5 / _positive(B, a, 1.0), lambda x: 1.5)),
    "affine": _complex_ok(_unary(lambda B, a: B.sub(B.mul(a, 0.5), 0.25), lambda x: 0.5 * x + 0.25)),
    "clamp": Op(1, _any, lambda s, b, p: (s[0], min(b[0], max(-p["lo"], p["hi"]))),
                lambda B, a, lo, hi: B.clamp(a, lo, hi),
                lambda draw, shapes: dict(zip(("lo", "hi"), draw(st.sampled_from([(-0.5, 0.5), (-1.0, 0.25)]))))),
    # reductions
    "sum": Op(1, _any, lambda s, b, p: _reduced(s, b, p, True), lambda B, a, dim, keepdim: B.sum(a, dim, keepdim),
              _reduce_params),
    "mean": Op(1, _any, lambda s, b, p: _reduced(s, b, p, False),
               lambda B, a, dim, keepdim: B.mean(a, dim, keepdim), _reduce_params),
    # products
    "matmul": Op(2, _matmul_ok, _matmul_out, lambda B, a, b: B.matmul(a, b)),
    "matmul_t": Op(2, lambda s: len(s[0]) >= 1 and len(s[1]) >= 2 and s[0][-1] == s[1][-1],
                   lambda s, b, p: _matmul_out((s[0], s[1][:-2] + s[1][-1:] + s[1][-2:-1]), b, p),
                   lambda B, a, b: B.matmul(a, B.transpose(b, -1, -2))),
    # shape ops
    "flatten": Op(1, _any, lambda s, b, p: ((int(np.prod(s[0])),), b[0]), lambda B, a: B.reshape(a, (-1,))),
    "transpose": Op(1, lambda s: len(s[0]) >= 2, lambda s, b, p: (s[0][::-1][:1] + s[0][1:-1] + s[0][:1], b[0]),
                    lambda B, a: B.transpose(a, 0, -1)),
    "permute": Op(1, lambda s: len(s[0]) >= 2, lambda s, b, p: (s[0][1:] + s[0][:1], b[0]),
                  lambda B, a: B.permute(a, tuple(range(1, a.ndim)) + (0,))),
    "unsqueeze": Op(1, lambda s: len(s[0]) <= 2, lambda s, b, p: ((1,) + s[0], b[0]), lambda B, a: B.unsqueeze(a, 0)),
    "squeeze": Op(1, lambda s: 1 in s[0], lambda s, b, p: (tuple(d for d in s[0] if d != 1), b[0]),
                  lambda B, a: B.squeeze(a)),
    "expand": Op(2, lambda s: _broadcasts(s) and _bshape(s) != s[0], lambda s, b, p: (_bshape(s), b[0]),
                 lambda B, a, b: B.expand(a, _bshape((a.shape, b.shape)))),
    "index": Op(1, lambda s: bool(_index_templates(s[0])), _index_out, _run_index,
                lambda draw, shapes: dict(index=draw(st.sampled_from(_index_templates(shapes[0]))))),
    "cat": Op(2, _cat_ok, lambda s, b, p: ((s[0][0] + s[1][0],) + s[0][1:], max(b)),
              lambda B, a, b: B.cat([a, b], 0)),
    "stack": Op(2, lambda s: s[0] == s[1], lambda s, b, p: ((2,) + s[0], max(b)),
                lambda B, a, b: B.stack([a, b], 0)),
    # between real and complex values
    "complex": Op(2, _broadcasts, lambda s, b, p: (_bshape(s), float(np.hypot(*b))), lambda B, a, b: B.complex(a, b),
                  kinds="to_complex"),
    "rotate": Op(1, _any, lambda s, b, p: (s[0], b[0]),  # a * e^(i a), polar-style
                 lambda B, a: B.complex(B.mul(a, B.cos(a)), B.mul(a, B.sin(a))), kinds="to_complex"),
    "real": _unary(lambda B, a: B.real(a), lambda x: x)._replace(kinds="from_complex"),
    "imag": _unary(lambda B, a: B.imag(a), lambda x: x)._replace(kinds="from_complex"),
    "abs_complex": _unary(lambda B, a: B.cabs(a), lambda x: x)._replace(kinds="from_complex"),
    "conj": _unary(lambda B, a: B.conj(a), lambda x: x)._replace(kinds="complex"),
}
#: Reductions, products and shape ops are linear (or bilinear) in each argument: complex values too.
for _name in ("sum", "mean", "matmul", "matmul_t", "flatten", "transpose", "permute", "unsqueeze", "squeeze", "expand",
              "index", "cat", "stack"):
    OPS[_name] = _complex_ok(OPS[_name])


class Instr(NamedTuple):
    op: str
    args: tuple[int, ...]
    params: dict

    def __repr__(self) -> str:
        return f"{self.op}{self.args}{self.params or ''}"


class Program(NamedTuple):
    input_shapes: tuple
    instrs: tuple


#: Which argument kinds ("r" real, "c" complex) each kind of op takes, and the kind of its result.
_TAKES = {"real": {"r"}, "any": {"r", "c"}, "complex": {"c"}, "to_complex": {"r"}, "from_complex": {"c"}}


def _result_kind(op: Op, kinds: Sequence[str]) -> str:
    if op.kinds in ("complex", "to_complex") or (op.kinds == "any" and "c" in kinds):
        return "c"
    return "r"


@st.composite
def programs(draw, mixed: bool = False) -> Program:
    """A random program over real inputs; ``mixed``: its first instruction makes a complex value."""
    n_inputs = draw(st.integers(1, 3))
    input_shapes = ((2, 3),) + tuple(draw(st.sampled_from(INPUT_SHAPES)) for _ in range(n_inputs - 1))
    shapes = list(input_shapes)
    bounds = [INPUT_BOUND] * n_inputs
    kinds = ["r"] * n_inputs
    instrs = []
    for step in range(draw(st.integers(1, MAX_STEPS))):
        options = []
        for name, op in OPS.items():
            if mixed and step == 0 and op.kinds != "to_complex":
                continue
            if op.arity == 1:
                combos = [(i,) for i in range(len(shapes))]
            else:
                combos = [(i, j) for i in range(len(shapes)) for j in range(len(shapes))]
            combos = [c for c in combos
                      if op.applies([shapes[i] for i in c]) and all(kinds[i] in _TAKES[op.kinds] for i in c)]
            if combos:
                options.append((name, combos))
        name, combos = draw(st.sampled_from(options))
        op = OPS[name]
        args = draw(st.sampled_from(combos))
        arg_shapes = [shapes[i] for i in args]
        params = op.draw_params(draw, arg_shapes)
        shape, bound = op.out(arg_shapes, [bounds[i] for i in args], params)
        if bound > MAX_BOUND:
            continue  # would risk overflow or ill-conditioned derivatives: skip this draw
        instrs.append(Instr(name, args, params))
        shapes.append(tuple(shape))
        bounds.append(float(bound))
        kinds.append(_result_kind(op, [kinds[i] for i in args]))
    return Program(input_shapes, tuple(instrs))


def interpret(B: Backend, program: Program, inputs: Sequence[Any]) -> Any:
    """Run ``program`` over backend ``B``; the output is every unconsumed value, flattened and joined."""
    pool = list(inputs)
    used = set()
    for instr in program.instrs:
        pool.append(OPS[instr.op].run(B, *(pool[i] for i in instr.args), **instr.params))
        used.update(instr.args)
    sinks = [v for i, v in enumerate(pool) if i not in used]
    parts = []
    for v in sinks:  # a complex sink: its real and imaginary parts (the loss stays real)
        parts += [B.real(v), B.imag(v)] if np.dtype(v.dtype).kind == "c" else [v]
    return B.cat([B.reshape(v, (-1,)) for v in parts], 0)


@settings(max_examples=max(settings.default.max_examples, 20))
@given(program=programs(), data=st.data())
def test_random_program_against_jax(program: Program, data) -> None:
    _check_program(program, data)


@settings(max_examples=max(settings.default.max_examples, 20))
@given(program=programs(mixed=True), data=st.data())
def test_random_mixed_program_against_jax(program: Program, data) -> None:
    """Real inputs, complex intermediates, a real output: fgraph's derivatives (PyTorch's complex convention
    inside) against ``jax.grad`` of the same program, to second order."""
    _check_program(program, data)


def _not_tiny(v: float) -> bool:
    return v == 0 or abs(v) >= 1e-3


#: Input values: 0 itself or away from it. At |z| ~ 1e-8 the second derivatives of |z| are sums of O(1/|z|)
#: terms that cancel to rounding (float64 eps / |z| ~ 1e-9 apart between fgraph and JAX), above the oracle's atol.
_ELEMENTS = st.floats(-INPUT_BOUND, INPUT_BOUND).filter(_not_tiny)


def _check_program(program: Program, data) -> None:
    arrays = [
        data.draw(hnp.arrays(np.float64, shape, elements=_ELEMENTS), label=f"x{i}")
        for i, shape in enumerate(program.input_shapes)
    ]
    check_against_jax(
        lambda *xs: interpret(FG, program, xs),
        lambda *xs: interpret(JAX, program, xs),
        arrays,
        TOLERANCES[np.dtype("float64")],
        jit_key=("program", repr(program)),
    )
