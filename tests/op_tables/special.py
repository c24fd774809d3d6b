"""Special functions (fgraph/ops/special.py) against pure JAX (``jax.scipy.special``).

The reference's second derivatives go through JAX's own rules (``digamma' = polygamma(1)``,
``polygamma(n)' = polygamma(n + 1)``), fgraph's through its ``polygamma`` primitive.
No op here is first-order only.
"""
import jax.scipy.special as jsp
from hypothesis import strategies as st

import fgraph as fg
from op_harness import OpEntry, POSITIVE, REAL, grid, torch

UNARY_LIST = [((2, 3),), ((3, 0),)]  # small fixed pool: each new shape compiles kernels
UNARY_0D_LIST = [((),), ((2, 3),), ((3, 0),)]
#: Away from the poles of gamma at 0, -1, -2, ...
GAMMA_DOMAIN = st.one_of(st.floats(0.25, 3.0), st.floats(-0.8, -0.2), st.floats(-2.8, -2.2))


def polygamma(x, *, n):
    return fg.polygamma(n, x)


def polygamma_ref(x, *, n):
    return jsp.digamma(x) if n == 0 else jsp.polygamma(n, x)


def polygamma_method(x, *, n):
    return x.polygamma(n)


TABLE = [
    OpEntry("erf", fg.erf, jsp.erf, 1, grid(UNARY_0D_LIST), REAL),
    OpEntry("erfc", fg.erfc, jsp.erfc, 1, grid(UNARY_LIST), REAL),
    OpEntry("erfinv", fg.erfinv, jsp.erfinv, 1, grid(UNARY_LIST), st.floats(-0.9, 0.9)),
    OpEntry("lgamma", fg.lgamma, jsp.gammaln, 1, grid(UNARY_0D_LIST), GAMMA_DOMAIN),
    OpEntry("digamma", fg.digamma, jsp.digamma, 1, grid(UNARY_LIST), GAMMA_DOMAIN),
    OpEntry("polygamma", polygamma, polygamma_ref, 1, grid([((2, 3),)], [dict(n=n) for n in (0, 1, 2, 3)]),
            POSITIVE, max_examples=12),
    OpEntry("polygamma_method", polygamma_method, polygamma_ref, 1, grid([((3,),)], [dict(n=1)]), POSITIVE,
            max_examples=4),
]

#: Entries whose op has no second derivative in PyTorch: none.
FIRST_ORDER_ONLY: dict = {}


#: The PyTorch oracle, with the entries' call signatures.
TORCH = {
    "erf": lambda x: torch.erf(x),
    "erfc": lambda x: torch.erfc(x),
    "erfinv": lambda x: torch.erfinv(x),
    "lgamma": lambda x: torch.lgamma(x),
    "digamma": lambda x: torch.digamma(x),
    "polygamma": lambda x, n: torch.polygamma(n, x),
    "polygamma_method": lambda x, n: x.polygamma(n),
}


#: Entries whose ops refuse complex inputs (an OpError); every other entry is also checked on complex ones.
REAL_ONLY = {
    "erf", "erfc", "erfinv", "lgamma", "digamma", "polygamma", "polygamma_method"
}
