"""torch.special's functions (fgraph/ops/special_more.py, fgraph.special) against ``jax.scipy.special``.

The reference's second derivatives go through JAX's own rules; fgraph's through the rules
written in fgraph ops (``i0' = i1``, ``i1' = i0 - i1/x``...). Domains keep ``i0e``/``i1e``
(``|x|``), ``sinc`` and ``entr`` away from 0.
"""
import jax.numpy as jnp
import jax.scipy.special as jsp
from hypothesis import strategies as st

import fgraph as fg
from op_harness import NONZERO, POSITIVE, REAL, OpEntry, grid, torch

FIRST_ORDER_ONLY: dict = {}

UNARY = [((2, 3),), ((3, 0),)]
UNARY_0D = [((),), ((2, 3),)]
BINARY = [((2, 3), (2, 3)), ((3,), (2, 3))]
S = fg.special


def multigammaln(x, *, p):
    return S.multigammaln(x, p)


def multigammaln_ref(x, *, p):
    return jsp.multigammaln(x, p)


def zeta(q, *, x):
    return S.zeta(x, q)


def zeta_ref(q, *, x):
    return jsp.zeta(x, q)


def special_softmax(x, *, dim):
    return S.softmax(x, dim)


def special_log_softmax(x, *, dim):
    return S.log_softmax(x, dim)


def special_logsumexp(x, *, dim):
    return S.logsumexp(x, dim)


TABLE = [
    OpEntry("xlog1py", S.xlog1py, jsp.xlog1py, 2, grid(BINARY), (REAL, POSITIVE)),
    OpEntry("entr", S.entr, jsp.entr, 1, grid(UNARY), POSITIVE),
    OpEntry("expit", S.expit, jsp.expit, 1, grid(UNARY_0D), REAL),
    OpEntry("ndtr", S.ndtr, jsp.ndtr, 1, grid(UNARY_0D), REAL),
    OpEntry("ndtri", S.ndtri, jsp.ndtri, 1, grid(UNARY), st.floats(0.05, 0.95)),
    OpEntry("log_ndtr", S.log_ndtr, jsp.log_ndtr, 1, grid(UNARY), st.floats(-4.0, 3.0)),
    OpEntry("i0", fg.i0, jsp.i0, 1, grid(UNARY_0D), NONZERO),  # JAX: i0'(0) = 1 (abs), true 0: see test_numerics
    OpEntry("i0e", S.i0e, jsp.i0e, 1, grid(UNARY), NONZERO),
    OpEntry("i1", S.i1, jsp.i1, 1, grid(UNARY), NONZERO),
    OpEntry("i1e", S.i1e, jsp.i1e, 1, grid(UNARY), NONZERO),
    OpEntry("sinc", fg.sinc, jnp.sinc, 1, grid(UNARY_0D), NONZERO),
    OpEntry("sinc_method", lambda x: x.sinc(), jnp.sinc, 1, grid(UNARY[:1]), NONZERO, max_examples=4),
    OpEntry("multigammaln", multigammaln, multigammaln_ref, 1, grid(UNARY[:1], [dict(p=1), dict(p=3)]),
            st.floats(1.2, 3.0), max_examples=8),
    OpEntry("zeta_q", zeta, zeta_ref, 1, grid(UNARY[:1], [dict(x=2.5)]), POSITIVE, max_examples=6),
    OpEntry("special_gammaln", S.gammaln, jsp.gammaln, 1, grid(UNARY[:1]), POSITIVE, max_examples=4),
    OpEntry("special_psi", S.psi, jsp.digamma, 1, grid(UNARY[:1]), POSITIVE, max_examples=4),
    OpEntry("special_softmax", special_softmax, lambda x, dim: jnp.exp(x) / jnp.exp(x).sum(dim, keepdims=True),
            1, grid(UNARY[:1], [dict(dim=1)]), REAL, max_examples=4),
    OpEntry("special_log_softmax", special_log_softmax,
            lambda x, dim: x - jsp.logsumexp(x, axis=dim, keepdims=True), 1, grid(UNARY[:1], [dict(dim=0)]), REAL,
            max_examples=4),
    OpEntry("special_logsumexp", special_logsumexp, lambda x, dim: jsp.logsumexp(x, axis=dim), 1,
            grid(UNARY[:1], [dict(dim=1)]), REAL, max_examples=4),
]

#: The PyTorch oracle, with the entries' call signatures.
TORCH = {
    "xlog1py": lambda a, b: torch.special.xlog1py(a, b),
    "entr": lambda x: torch.special.entr(x),
    "expit": lambda x: torch.special.expit(x),
    "ndtr": lambda x: torch.special.ndtr(x),
    "ndtri": lambda x: torch.special.ndtri(x),
    "log_ndtr": lambda x: torch.special.log_ndtr(x),
    "i0": lambda x: torch.i0(x),
    "i0e": lambda x: torch.special.i0e(x),
    "i1": lambda x: torch.special.i1(x),
    "i1e": lambda x: torch.special.i1e(x),
    "sinc": lambda x: torch.sinc(x),
    "sinc_method": lambda x: x.sinc(),
    "multigammaln": lambda x, p: torch.special.multigammaln(x, p),
    "zeta_q": lambda q, x: torch.special.zeta(x, q),
    "special_gammaln": lambda x: torch.special.gammaln(x),
    "special_psi": lambda x: torch.special.psi(x),
    "special_softmax": lambda x, dim: torch.special.softmax(x, dim),
    "special_log_softmax": lambda x, dim: torch.special.log_softmax(x, dim),
    "special_logsumexp": lambda x, dim: torch.special.logsumexp(x, dim),
}


#: Entries whose ops refuse complex inputs (an OpError); every other entry is also checked on complex ones.
REAL_ONLY = {
    "xlog1py", "entr", "ndtr", "ndtri", "log_ndtr", "i0", "i0e", "i1", "i1e", "multigammaln", "zeta_q",
    "special_gammaln", "special_psi", "special_softmax", "special_log_softmax"
}
