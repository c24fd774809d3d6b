"""Rounding ops (fgraph/ops/rounding.py) against pure JAX.

``floor ceil trunc fix round`` have zero gradients (JAX's too); ``frac``'s gradient is 1.
The classification, logical and bitwise ops are not differentiable and are tested in
tests/test_elementwise_math_semantics.py. No op here is first-order only.
"""
import jax.numpy as jnp

import fgraph as fg
from op_harness import OpEntry, REAL, grid, torch

UNARY_LIST = [((2, 3),), ((3, 0),)]  # small fixed pool: each new shape compiles kernels
UNARY_0D_LIST = [((),), ((2, 3),), ((3, 0),)]


def round_decimals(x, *, decimals):
    return fg.round(x, decimals=decimals)


def round_decimals_ref(x, *, decimals):
    return jnp.round(x, decimals)


def frac_ref(x):
    return x - jnp.trunc(x)


def round_method(x):
    return x.round()


TABLE = [
    OpEntry("floor", fg.floor, jnp.floor, 1, grid(UNARY_0D_LIST), REAL),
    OpEntry("ceil", fg.ceil, jnp.ceil, 1, grid(UNARY_LIST), REAL),
    OpEntry("trunc", fg.trunc, jnp.trunc, 1, grid(UNARY_LIST), REAL),
    OpEntry("fix", fg.fix, jnp.trunc, 1, grid(UNARY_LIST[:1]), REAL, max_examples=5),
    OpEntry("round", fg.round, jnp.round, 1, grid(UNARY_LIST), REAL),
    OpEntry("round_method", round_method, jnp.round, 1, grid(UNARY_LIST[:1]), REAL, max_examples=5),
    OpEntry("round_decimals", round_decimals, round_decimals_ref, 1,
            grid([((2, 3),)], [dict(decimals=d) for d in (1, 2, -1)]), REAL, max_examples=10),
    OpEntry("frac", fg.frac, frac_ref, 1, grid(UNARY_0D_LIST), REAL),
]

#: Entries whose op has no second derivative in PyTorch: none.
FIRST_ORDER_ONLY: dict = {}


#: The PyTorch oracle, with the entries' call signatures.
TORCH = {
    "floor": lambda x: torch.floor(x),
    "ceil": lambda x: torch.ceil(x),
    "trunc": lambda x: torch.trunc(x),
    "fix": lambda x: torch.fix(x),
    "round": lambda x: torch.round(x),
    "round_method": lambda x: x.round(),
    "round_decimals": lambda x, decimals: torch.round(x, decimals=decimals),
    "frac": lambda x: torch.frac(x),
}


#: Entries whose ops refuse complex inputs (an OpError); every other entry is also checked on complex ones.
REAL_ONLY = {
    "floor", "ceil", "trunc", "fix", "round", "round_method", "round_decimals", "frac"
}
