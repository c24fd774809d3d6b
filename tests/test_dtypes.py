"""Dtypes: names, casts (forward and gradient dtypes), promotion, half precision, x64.

The cast gradients against JAX are in ``op_tables/dtypes.py``; here: which dtype
each gradient has, the promotion table against ``jnp.promote_types``, ops that
really produce ``fg.result_type``, float16/bfloat16 programs, and the error when
float64 is asked for without JAX's x64 mode (in a subprocess: the tests enable
x64 in conftest).
"""
import json
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fgraph as fg

DTYPE_NAMES = ["float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"]
ALIASES = {"half": "float16", "float": "float32", "double": "float64", "short": "int16", "int": "int32",
           "long": "int64", "bool_": "bool", "cfloat": "complex64", "cdouble": "complex128"}


def _np(t):
    return np.asarray(t.array)


def test_dtype_names_and_aliases():
    for name in DTYPE_NAMES:
        dt = getattr(fg, name)
        assert isinstance(dt, np.dtype) and dt == jnp.dtype(name)
        assert fg.zeros(2, dtype=dt).dtype == dt
    for alias, name in ALIASES.items():
        assert getattr(fg, alias) == getattr(fg, name if name != "bool" else "bool_") == np.dtype(name)
    assert fg.bool == np.bool_ and fg.int == np.int32
    assert isinstance(True, bool) and float("1.5") == 1.5  # builtins untouched outside fgraph's namespace


@pytest.mark.parametrize("method,dtype", [("double", "float64"), ("float", "float32"), ("half", "float16")])
def test_cast_methods_forward_and_gradient_dtypes(method, dtype):
    x = fg.tensor([0.5, -1.25, 2.0], dtype=fg.float32, requires_grad=True)
    y = getattr(x, method)()
    assert y.dtype == np.dtype(dtype)
    w = fg.tensor([1.0, 2.0, 3.0], dtype=dtype)
    (g,) = fg.grad((y * w).sum(), [x])
    assert g.dtype == fg.float32  # the gradient flows back in the input's dtype
    np.testing.assert_array_equal(_np(g), [1.0, 2.0, 3.0])


def test_float32_to_float64_cast_gradient_is_float32():
    x = fg.tensor([1.5, 2.5], requires_grad=True)
    y = x.to(fg.float64)
    assert y.grad_fn.name() == "ToCopyBackward0"
    (g,) = fg.grad((y * y).sum(), [x], create_graph=True)
    assert g.dtype == fg.float32 and g.tolist() == [3.0, 5.0]
    (h,) = fg.grad(g.sum(), [x])  # second derivative through the cast
    assert h.dtype == fg.float32 and h.tolist() == [2.0, 2.0]
    b = fg.tensor([1.0], dtype=fg.bfloat16, requires_grad=True)
    (gb,) = fg.grad((b.to(fg.float32) * 3).sum(), [b])
    assert gb.dtype == fg.bfloat16 and gb.tolist() == [3.0]


def test_casts_to_integer_and_bool_leave_the_graph():
    x = fg.tensor([1.7, -0.2, 0.0], requires_grad=True)
    for y, dt in ((x.int(), fg.int32), (x.long(), fg.int64), (x.bool(), fg.bool), (x.to(fg.uint8), fg.uint8)):
        assert y.dtype == dt and not y.requires_grad
    assert x.int().tolist() == [1, 0, 0] and x.bool().tolist() == [True, True, False]
    assert x.to(dtype=fg.int8).dtype == fg.int8


def test_bfloat16_method():
    assert fg.ones(2).bfloat16().dtype == fg.bfloat16


def test_promote_types_matches_jax_lattice():
    names = DTYPE_NAMES + ["complex64"]
    for a in names:
        for b in names:
            got = fg.promote_types(getattr(fg, a if a != "bool" else "bool_"), b)
            assert got == jnp.promote_types(a, b), (a, b)
    assert fg.promote_types("int32", fg.float16) == fg.float16
    assert fg.promote_types(fg.uint8, fg.int8) == fg.int16  # as in torch


def test_result_type_weak_scalars_and_what_ops_produce():
    f16 = fg.ones(2, dtype=fg.float16)
    i8 = fg.ones(2, dtype=fg.int8)
    assert fg.result_type(f16, 2.0) == fg.float16  # Python scalars are weak
    assert fg.result_type(i8, 3) == fg.int8
    assert fg.result_type(i8, 2.5) == jnp.result_type(jnp.int8, 2.5)  # JAX's default float
    assert fg.result_type(f16, fg.ones(2)) == fg.float32
    assert fg.result_type(fg.ones(2, dtype=fg.bool), True) == fg.bool
    assert fg.result_type(fg.float16, fg.bfloat16) == fg.float32
    pool = ["float16", "bfloat16", "float32", "float64", "int8", "int32", "uint8"]
    for a in pool:
        for b in pool:
            x, y = fg.ones(2, dtype=a), fg.ones(2, dtype=b)
            assert (x * y).dtype == fg.result_type(x, y) == jnp.result_type(jnp.ones(2, a), jnp.ones(2, b)), (a, b)
    for scalar in (2, 2.5, True):
        for a in pool:
            x = fg.ones(2, dtype=a)
            assert (x * scalar).dtype == fg.result_type(x, scalar), (a, scalar)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_programs_run_forward_and_backward(dtype):
    dt = getattr(fg, dtype)
    x0 = np.array([[0.5, -1.0, 0.25], [1.5, 0.75, -0.5]])
    x = fg.tensor(x0, dtype=dt, requires_grad=True)
    w = fg.tensor(np.eye(3)[:, :2] + 0.5, dtype=dt, requires_grad=True)
    y = fg.tanh(x @ w) * fg.exp(-x.sum(1, keepdim=True)) + fg.sigmoid(x).mean()
    assert y.dtype == dt
    gx, gw = fg.grad((y * y).sum(), [x, w])
    assert gx.dtype == dt and gw.dtype == dt

    def ref(a, b):
        y = jnp.tanh(a @ b) * jnp.exp(-a.sum(1, keepdims=True)) + jax.nn.sigmoid(a).mean()
        return jnp.sum(y * y)

    rgx, rgw = jax.grad(ref, argnums=(0, 1))(x0.astype(np.float32), (np.eye(3)[:, :2] + 0.5).astype(np.float32))
    tol = 5e-2 if dtype == "bfloat16" else 1e-2
    np.testing.assert_allclose(_np(gx).astype(np.float32), np.asarray(rgx), rtol=tol, atol=tol)
    np.testing.assert_allclose(_np(gw).astype(np.float32), np.asarray(rgw), rtol=tol, atol=tol)
    r = fg.randn(4, dtype=dt, key=jax.random.PRNGKey(0), requires_grad=True)
    (gr,) = fg.grad((r * r).sum(), [r])
    assert gr.dtype == dt


def test_requires_grad_on_integer_or_bool_raises():
    for make in (lambda: fg.tensor([1, 2], requires_grad=True),
                 lambda: fg.zeros(2, dtype=fg.int32, requires_grad=True),
                 lambda: fg.ones(2, dtype=fg.bool, requires_grad=True),
                 lambda: fg.arange(3, requires_grad=True),
                 lambda: fg.randint(0, 5, (2,), key=jax.random.PRNGKey(0), requires_grad=True),
                 lambda: fg.eye(2, dtype=fg.int64, requires_grad=True)):
        with pytest.raises(TypeError, match="floating point"):
            make()


def test_default_dtype_round_trip_and_queries():
    assert fg.get_default_dtype() == fg.float32
    fg.set_default_dtype(fg.float64)
    try:
        assert fg.tensor(2.5).dtype == fg.float64 and fg.finfo().bits == 64
    finally:
        fg.set_default_dtype("float32")
    assert fg.tensor(2.5).dtype == fg.float32
    assert fg.finfo(fg.bfloat16).bits == 16 and fg.finfo(fg.float16).eps == np.finfo(np.float16).eps
    assert fg.iinfo(fg.int8).min == -128 and fg.iinfo(fg.uint8).max == 255
    assert fg.is_floating_point(fg.ones(1, dtype=fg.bfloat16)) and not fg.is_floating_point(fg.arange(2))
    assert fg.is_complex(fg.ones(1, dtype=fg.complex64)) and not fg.is_complex(fg.ones(1))
    assert fg.can_cast(fg.int64, fg.int8) and fg.can_cast(fg.bool, fg.float16)
    assert not fg.can_cast(fg.float16, fg.int64) and not fg.can_cast(fg.int8, fg.bool)


NO_X64_SCRIPT = textwrap.dedent("""
    import json
    import fgraph as fg

    def error(fn):
        try:
            fn()
        except TypeError as exc:
            return str(exc)
        return None

    x = fg.ones(2)
    print(json.dumps({
        "zeros": error(lambda: fg.zeros(2, dtype=fg.float64)),
        "tensor": error(lambda: fg.tensor([1.0], dtype="float64")),
        "double": error(lambda: x.double()),
        "randn": error(lambda: fg.randn(2, dtype=fg.float64)),
        "set_default": error(lambda: fg.set_default_dtype(fg.float64)),
        "int_default": str(fg.randint(0, 3, (2,)).dtype),
        "python_float": str(fg.tensor([1.5]).dtype),
        "long": str(x.long().dtype),
    }))
""")


def test_float64_without_x64_mode_raises_a_clear_error():
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    env["JAX_PLATFORMS"] = "cpu"
    proc = subprocess.run([sys.executable, "-c", NO_X64_SCRIPT], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    for op in ("zeros", "tensor", "double", "randn", "set_default"):
        msg = out[op]
        assert msg is not None, f"{op}: float64 without x64 did not raise"
        assert "64-bit mode" in msg and "jax_enable_x64" in msg and "float32" in msg, (op, msg)
    assert out["set_default"].startswith("set_default_dtype:")
    assert out["int_default"] == "int32" and out["python_float"] == "float32" and out["long"] == "int32"
