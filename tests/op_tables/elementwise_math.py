"""Elementwise math (fgraph/ops/elementwise_math.py, fgraph/ops/trigonometric.py) against pure JAX.

Rounded division (``div`` with ``rounding_mode``, ``floor_divide``) has a zero gradient,
which JAX's ``floor``/``trunc`` also give. Remainders use divisors that are powers of two,
so ``a / b`` is exact and ``floor(a / b)`` (fgraph's, PyTorch's) and JAX's own derivative
never disagree by rounding. No op here is first-order only.
"""
import jax.numpy as jnp
from hypothesis import strategies as st

import fgraph as fg
from op_harness import Case, NONZERO, OpEntry, POSITIVE, REAL, cases, grid, torch

#: Small fixed shape pools (every new shape compiles kernels). Elementwise kernels do not
#: care about rank, so unary ops use two shapes (one empty), a few also a 0-d tensor.
UNARY_LIST = [((2, 3),), ((3, 0),)]
UNARY_0D_LIST = [((),), ((2, 3),), ((3, 0),)]
#: Same shape; rank broadcasting with size-1 stretching on both sides; a 0-d operand; size 0.
BINARY_LIST = [
    ((2, 3), (2, 3)),
    ((2, 1, 3), (4, 1)),
    ((2, 3), ()),
    ((0, 3), (1, 3)),
]
ONE_SHAPE = [((2, 3),)]
TERNARY_LIST = [
    ((2, 3), (2, 3), (2, 3)),
    ((3,), (2, 3), (2, 1)),
    ((2, 1), (1, 3), ()),
    ((0, 3), (1, 3), (3,)),
]

#: Exact divisors: a / b is exact, so every floor/trunc of it agrees between implementations.
DIVISORS = st.sampled_from([-2.0, -1.0, -0.5, 0.5, 1.0, 2.0])
UNIT = st.floats(-0.9, 0.9)  # asin, acos, atanh
#: hypot: |a| < |b| and a != 0, where jnp.hypot's own derivatives are right (it splits ties
#: between max(|a|, |b|) and min(|a|, |b|), and goes through abs, whose derivative at 0 is 0).
HYPOT_SMALL = st.one_of(st.floats(0.3, 0.9), st.floats(-0.9, -0.3))
HYPOT_LARGE = st.one_of(st.floats(1.1, 2.0), st.floats(-2.0, -1.1))
PROBABILITY = st.floats(0.05, 0.95)  # logit without eps
#: logit with eps=0.1: inside (0.1, 0.9) and outside it, never at the clamping points.
PROBABILITY_EPS = st.one_of(st.floats(0.01, 0.08), st.floats(0.12, 0.88), st.floats(0.92, 0.99))


# -- fgraph calls and pure-JAX references that need a name --------------------------------------------
def div_mode(a, b, *, rounding_mode):
    return fg.div(a, b, rounding_mode=rounding_mode)


def div_mode_ref(a, b, *, rounding_mode):
    return jnp.trunc(a / b) if rounding_mode == "trunc" else jnp.floor_divide(a, b)


def floordiv_operator(a, b):
    return a // b


def mod_operator(a, b):
    return a % b


def remainder_scalar(x, *, other):
    return fg.remainder(x, other)


def remainder_scalar_ref(x, *, other):
    return jnp.remainder(x, other)


def rmod_operator(x, *, dividend):
    return dividend % x  # Tensor.__rmod__: the tensor is the divisor


def rmod_ref(x, *, dividend):
    return jnp.remainder(dividend, x)


def fmod_scalar(x, *, other):
    return fg.fmod(x, other)


def fmod_scalar_ref(x, *, other):
    return jnp.fmod(x, other)


def logit(x, *, eps):
    return fg.logit(x, eps)


def logit_ref(x, *, eps):
    if eps is not None:
        x = jnp.clip(x, eps, 1 - eps)
    return jnp.log(x / (1 - x))


def lerp_scalar(a, b, *, weight):
    return fg.lerp(a, b, weight)


def lerp_scalar_ref(a, b, *, weight):
    return a + weight * (b - a)


def lerp_ref(a, b, w):
    return a + w * (b - a)


def rsqrt_ref(x):
    return 1 / jnp.sqrt(x)


def atan2_method(a, b):
    return a.arctan2(b)


TABLE = [
    # rounded division: zero gradient
    OpEntry("div_rounding_mode", div_mode, div_mode_ref, 2,
            grid(BINARY_LIST[:2], [dict(rounding_mode="trunc"), dict(rounding_mode="floor")]), (REAL, NONZERO)),
    OpEntry("floor_divide", fg.floor_divide, jnp.floor_divide, 2, grid(BINARY_LIST), (REAL, NONZERO)),
    OpEntry("floordiv_operator", floordiv_operator, jnp.floor_divide, 2, grid(BINARY_LIST[:1]), (REAL, NONZERO),
            max_examples=5),
    # remainders
    OpEntry("remainder", fg.remainder, jnp.remainder, 2, grid(BINARY_LIST), (REAL, DIVISORS)),
    OpEntry("mod_operator", mod_operator, jnp.remainder, 2, grid(BINARY_LIST[:1]), (REAL, DIVISORS), max_examples=5),
    OpEntry("remainder_scalar", remainder_scalar, remainder_scalar_ref, 1,
            grid(ONE_SHAPE, [dict(other=1.5), dict(other=-0.75), dict(other=2)]), REAL, max_examples=10),
    OpEntry("rmod_operator", rmod_operator, rmod_ref, 1, grid(ONE_SHAPE, [dict(dividend=2.5)]), DIVISORS,
            max_examples=5),
    OpEntry("fmod", fg.fmod, jnp.fmod, 2, grid(BINARY_LIST), (REAL, DIVISORS)),
    OpEntry("fmod_scalar", fmod_scalar, fmod_scalar_ref, 1, grid(ONE_SHAPE, [dict(other=1.5), dict(other=-0.75)]),
            REAL, max_examples=10),
    # exponentials, logarithms, powers
    OpEntry("reciprocal", fg.reciprocal, jnp.reciprocal, 1, grid(UNARY_0D_LIST), NONZERO),
    OpEntry("exp2", fg.exp2, jnp.exp2, 1, grid(UNARY_0D_LIST), REAL),
    OpEntry("expm1", fg.expm1, jnp.expm1, 1, grid(UNARY_LIST), REAL),
    OpEntry("log2", fg.log2, jnp.log2, 1, grid(UNARY_LIST), POSITIVE),
    OpEntry("log10", fg.log10, jnp.log10, 1, grid(UNARY_LIST), POSITIVE),
    OpEntry("log1p", fg.log1p, jnp.log1p, 1, grid(UNARY_LIST), st.floats(-0.5, 2.0)),
    OpEntry("rsqrt", fg.rsqrt, rsqrt_ref, 1, grid(UNARY_LIST), POSITIVE),
    OpEntry("square", fg.square, jnp.square, 1, grid(UNARY_LIST), REAL),
    # logit, lerp, hypot
    OpEntry("logit", logit, logit_ref, 1, grid(UNARY_0D_LIST, [dict(eps=None)]), PROBABILITY),
    OpEntry("logit_eps", logit, logit_ref, 1, grid(ONE_SHAPE, [dict(eps=0.1)]), PROBABILITY_EPS, max_examples=10),
    OpEntry("lerp_scalar_weight", lerp_scalar, lerp_scalar_ref, 2,
            cases(*(Case(s, dict(weight=0.25)) for s in BINARY_LIST),
                  *(Case(BINARY_LIST[0], dict(weight=w)) for w in (0.75, -1.5))), REAL),
    OpEntry("lerp_tensor_weight", fg.lerp, lerp_ref, 3, grid(TERNARY_LIST), REAL),
    OpEntry("hypot", fg.hypot, jnp.hypot, 2, grid(BINARY_LIST), (HYPOT_SMALL, HYPOT_LARGE)),
    # trigonometric and hyperbolic
    OpEntry("tan", fg.tan, jnp.tan, 1, grid(UNARY_LIST), st.floats(-1.2, 1.2)),
    OpEntry("asin", fg.asin, jnp.arcsin, 1, grid(UNARY_LIST), UNIT),
    OpEntry("acos", fg.acos, jnp.arccos, 1, grid(UNARY_LIST), UNIT),
    OpEntry("atan", fg.atan, jnp.arctan, 1, grid(UNARY_0D_LIST), REAL),
    OpEntry("atan2", fg.atan2, jnp.arctan2, 2, grid(BINARY_LIST), NONZERO),
    OpEntry("arctan2_method", atan2_method, jnp.arctan2, 2, grid(BINARY_LIST[:1]), NONZERO, max_examples=5),
    OpEntry("sinh", fg.sinh, jnp.sinh, 1, grid(UNARY_0D_LIST), REAL),
    OpEntry("cosh", fg.cosh, jnp.cosh, 1, grid(UNARY_LIST), REAL),
    OpEntry("asinh", fg.asinh, jnp.arcsinh, 1, grid(UNARY_LIST), REAL),
    OpEntry("acosh", fg.acosh, jnp.arccosh, 1, grid(UNARY_LIST), st.floats(1.25, 3.0)),
    OpEntry("atanh", fg.atanh, jnp.arctanh, 1, grid(UNARY_LIST), UNIT),
]

#: Entries whose op has no second derivative in PyTorch: none.
FIRST_ORDER_ONLY: dict = {}


#: The PyTorch oracle, with the entries' call signatures.
TORCH = {
    "div_rounding_mode": lambda a, b, rounding_mode: torch.div(a, b, rounding_mode=rounding_mode),
    "floor_divide": lambda a, b: torch.div(a, b, rounding_mode="floor"),  # torch.floor_divide has no gradient
    "floordiv_operator": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "remainder": lambda a, b: torch.remainder(a, b),
    "mod_operator": lambda a, b: a % b,
    "remainder_scalar": lambda x, other: torch.remainder(x, other),
    # torch.remainder(Scalar, Tensor) has no derivative: the dividend as a constant tensor instead.
    "rmod_operator": lambda x, dividend: torch.remainder(torch.full_like(x, dividend), x),
    "fmod": lambda a, b: torch.fmod(a, b),
    "fmod_scalar": lambda x, other: torch.fmod(x, other),
    "reciprocal": lambda x: torch.reciprocal(x),
    "exp2": lambda x: torch.exp2(x),
    "expm1": lambda x: torch.expm1(x),
    "log2": lambda x: torch.log2(x),
    "log10": lambda x: torch.log10(x),
    "log1p": lambda x: torch.log1p(x),
    "rsqrt": lambda x: torch.rsqrt(x),
    "square": lambda x: torch.square(x),
    "logit": lambda x, eps: torch.logit(x, eps),
    "logit_eps": lambda x, eps: torch.logit(x, eps),
    "lerp_scalar_weight": lambda a, b, weight: torch.lerp(a, b, weight),
    "lerp_tensor_weight": lambda a, b, w: torch.lerp(a, b, w),
    "hypot": lambda a, b: torch.hypot(a, b),
    "tan": lambda x: torch.tan(x),
    "asin": lambda x: torch.asin(x),
    "acos": lambda x: torch.acos(x),
    "atan": lambda x: torch.atan(x),
    "atan2": lambda a, b: torch.atan2(a, b),
    "arctan2_method": lambda a, b: a.arctan2(b),
    "sinh": lambda x: torch.sinh(x),
    "cosh": lambda x: torch.cosh(x),
    "asinh": lambda x: torch.asinh(x),
    "acosh": lambda x: torch.acosh(x),
    "atanh": lambda x: torch.atanh(x),
}


#: Entries whose ops refuse complex inputs (an OpError); every other entry is also checked on complex ones.
REAL_ONLY = {
    "div_rounding_mode", "floor_divide", "floordiv_operator", "remainder", "mod_operator", "remainder_scalar",
    "rmod_operator", "fmod", "fmod_scalar", "logit", "logit_eps", "hypot", "atan2", "arctan2_method"
}
