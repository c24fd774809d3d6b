"""Casts between floating and complex dtypes (``Tensor.to``, ``double``, ``float``, ``half``...) against pure JAX.

A cast's gradient is the output gradient cast back to the input's dtype
(``ToCopyBackward0``); a complex input cast to a real dtype keeps its real part, as in
PyTorch. Casts to integer or bool dtypes leave the graph and are
covered in tests/test_dtypes.py. ``cast_round_trip_product`` multiplies a cast
copy with the input, so its Hessian-vector product runs through a recorded cast.
"""
import jax.numpy as jnp
import numpy as np

import fgraph as fg
from op_harness import Case, OpEntry, REAL, cases, shape_cases, torch

SHAPES = shape_cases([((2, 3),), ((),), ((3, 0),)])


def _to(x, *, dtype):
    return x.to(getattr(fg, dtype))


def _cast_ref(x, dtype):
    if jnp.iscomplexobj(x) and not jnp.issubdtype(dtype, jnp.complexfloating):
        x = jnp.real(x)  # what PyTorch keeps (JAX's astype will refuse complex -> real)
    return x.astype(dtype)


def _to_ref(x, *, dtype):
    return _cast_ref(x, getattr(fg, dtype))


def _round_trip_product(x):
    return x.float().double() * x


def _round_trip_product_ref(x):
    return _cast_ref(_cast_ref(x, jnp.float32), jnp.float64) * x


TABLE = [
    OpEntry("to_dtype", _to, _to_ref, 1,
            cases(*(Case(((2, 3),), dict(dtype=d))
                    for d in ("float64", "float32", "float16", "bfloat16", "complex128", "complex64"))), REAL),
    OpEntry("fg_to_dtype", lambda x: fg.to_dtype(x, "float16"), lambda x: _cast_ref(x, jnp.float16), 1, SHAPES, REAL),
    OpEntry("double", lambda x: x.double(), lambda x: _cast_ref(x, jnp.float64), 1, SHAPES, REAL),
    OpEntry("float", lambda x: x.float(), lambda x: _cast_ref(x, jnp.float32), 1, SHAPES, REAL),
    OpEntry("half", lambda x: x.half(), lambda x: _cast_ref(x, jnp.float16), 1, SHAPES, REAL),
    # Its values pass through float32, and XLA may fold the round trip in one program and not in another
    # (XLA:GPU allows excess precision): in float64 the two agree to float32's precision.
    OpEntry("cast_round_trip_product", _round_trip_product, _round_trip_product_ref, 1, SHAPES, REAL,
            tolerances={np.dtype("float64"): (1e-7, 1e-10)}),
]

#: The PyTorch oracle, with the entries' call signatures.
TORCH = {
    "to_dtype": lambda x, dtype: x.to(getattr(torch, dtype)),
    "fg_to_dtype": lambda x: x.to(torch.float16),
    "double": lambda x: x.double(),
    "float": lambda x: x.float(),
    "half": lambda x: x.half(),
    "cast_round_trip_product": lambda x: x.float().double() * x,
}
